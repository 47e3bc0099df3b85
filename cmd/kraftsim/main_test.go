package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// runArgs runs the command and returns its exit status, stdout and stderr.
func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// withoutWall drops the wall-clock rows of the summary.
func withoutWall(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "  wall time") || strings.HasPrefix(l, "  events per second") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

func TestDefaultRunPassesAndPrintsSummary(t *testing.T) {
	code, out, errOut := runArgs(t)
	require.Equal(t, exitOK, code, out)
	require.Empty(t, errOut, "no progress line when stderr is not a terminal")
	for _, want := range []string{
		"scenario story, 5 voters (r0-r4), 2 observers (r5-r6), seed 1",
		"crash     r", "restart   r", "partition {r", "heal      every partition is removed", "resign    r",
		"leader    r", "commit    high watermark", "role      r",
		"\nsummary\n", "elections ", "time to elect (first) ", "time to elect (again) ", "leaderless time ",
		"records committed ", "invariant checks ", "liveness checks ", "wall time ", "events per second ",
		"PASS: every invariant held",
	} {
		require.Contains(t, out, want)
	}
	// The story ends with a graceful resignation and the leader it gives.
	tail := out[strings.LastIndex(out, "resign    r"):]
	require.Contains(t, tail, "-> Resigned")
	require.Regexp(t, `invariant checks\s+([0-9,]+) run, ([0-9,]+) passed`, out)
	require.NotContains(t, out, "FAIL")
}

func TestSameSeedSameOutput(t *testing.T) {
	_, a, _ := runArgs(t, "-seed", "7", "-wall=false")
	_, b, _ := runArgs(t, "-seed", "7", "-wall=false")
	require.Equal(t, a, b, "same seed, different output")
	require.NotContains(t, a, "wall time")
	require.NotContains(t, a, "events per second")

	_, c, _ := runArgs(t, "-seed", "7")
	require.Equal(t, a, withoutWall(c), "the wall-clock rows are the only difference")

	_, d, _ := runArgs(t, "-seed", "8", "-wall=false")
	require.NotEqual(t, a, d, "different seeds, same output")
}

func TestTraceThenReplayReproduces(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "run.jsonl")
	code, out, _ := runArgs(t, "-scenario", "leader-crash", "-seed", "3", "-trace", trace, "-q")
	require.Equal(t, exitOK, code, out)
	require.Contains(t, out, "trace written to "+trace)

	code, out, errOut := runArgs(t, "-replay", trace)
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "replay: "+trace+" reproduces exactly: ")
	require.Contains(t, out, "every action and state matches the trace (seed 3, 5 voters, 2 observers)")

	// Turn the first granted vote into a rejection: the replay must see it.
	data, err := os.ReadFile(trace)
	require.NoError(t, err)
	require.Contains(t, string(data), `"VoteGranted":true`)
	tampered := filepath.Join(dir, "tampered.jsonl")
	require.NoError(t, os.WriteFile(tampered, []byte(strings.Replace(string(data), `"VoteGranted":true`, `"VoteGranted":false`, 1)), 0o600))
	code, out, _ = runArgs(t, "-replay", tampered)
	require.Equal(t, exitFail, code, out)
	require.Contains(t, out, "does NOT reproduce")
	require.NotContains(t, out, "reproduces exactly")

	// So must a changed state summary.
	tampered2 := filepath.Join(dir, "tampered2.jsonl")
	require.NoError(t, os.WriteFile(tampered2, []byte(strings.Replace(string(data), `"role":"Leader"`, `"role":"Follower"`, 1)), 0o600))
	code, out, _ = runArgs(t, "-replay", tampered2)
	require.Equal(t, exitFail, code, out)
	require.Contains(t, out, "does NOT reproduce")

	// A trace cut at a line boundary lacks its end record.
	lines := strings.SplitAfter(string(data), "\n")
	cut := filepath.Join(dir, "cut.jsonl")
	require.NoError(t, os.WriteFile(cut, []byte(strings.Join(lines[:len(lines)/2], "")), 0o600))
	code, out, _ = runArgs(t, "-replay", cut, "-q")
	require.Equal(t, exitFail, code, out)
	require.Contains(t, out, "no end record")

	// -q goes with -replay.
	code, out, errOut = runArgs(t, "-replay", trace, "-q")
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "reproduces exactly")
}

func TestEveryScenarioPasses(t *testing.T) {
	for _, sc := range scenarios {
		code, out, errOut := runArgs(t, "-scenario", sc.name, "-q", "-wall=false")
		require.Equal(t, exitOK, code, "scenario %s:\n%s%s", sc.name, out, errOut)
		require.Regexp(t, `\n  scenario +`+sc.name+` \(`, out, sc.name)
		require.Contains(t, out, "PASS: every invariant held", sc.name)
	}
	// The seven Kafka scenarios are there by name.
	_, list, _ := runArgs(t, "-scenario", "list")
	for _, name := range []string{
		"elect-initial-leader", "leader-crash", "leader-resign", "all-replicas-killed",
		"leader-partitioned", "majority-reachable", "back-to-back-failures", "committed-data-loss",
	} {
		require.Contains(t, list, name)
	}
}

func TestScenariosWithOtherSizesAndFaults(t *testing.T) {
	for _, args := range [][]string{
		{"-scenario", "majority-reachable", "-voters", "3", "-observers", "0", "-seed", "5"},
		{"-scenario", "elect-initial-leader", "-voters", "1", "-observers", "1"},
		{"-scenario", "back-to-back-failures", "-voters", "4", "-seed", "9"},
		{"-duration", "30s", "-loss", "0.1", "-dup", "0.1", "-crash-rate", "0.1", "-partition-rate", "0.05", "-seed", "4"},
	} {
		code, out, errOut := runArgs(t, append(args, "-q")...)
		require.Equal(t, exitOK, code, "%v:\n%s%s", args, out, errOut)
	}
}

func TestFailedExpectationExitsNonZero(t *testing.T) {
	// A scenario that crashes a majority of the voters and then expects a
	// leader: the liveness check must fail the run.
	old := scenarios
	t.Cleanup(func() { scenarios = old })
	scenarios = append(append([]scenario(nil), old...), scenario{
		name: "no-majority", minVoters: 3,
		about: "test: crash a majority, expect a leader",
		script: func(d *driver, _ time.Duration) error {
			if _, err := d.leader(); err != nil {
				return err
			}
			for _, id := range d.c.VoterIDs()[:3] {
				d.c.Crash(id)
			}
			_, err := d.newLeader(kraft.NoNode, 99)
			return err
		},
	})
	code, out, _ := runArgs(t, "-scenario", "no-majority", "-wall=false")
	require.Equal(t, exitFail, code, out)
	require.Contains(t, out, "FAIL: scenario no-majority: no new leader after epoch 99 within 20s")
	require.Regexp(t, `liveness checks +2 run, 1 passed`, out)
}

func TestBadInputExitsTwoWithOneLine(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.jsonl")
	require.NoError(t, os.WriteFile(garbage, []byte("this is not a trace\n"), 0o600))
	empty := filepath.Join(dir, "empty.jsonl")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	noHeader := filepath.Join(dir, "noheader.jsonl")
	require.NoError(t, os.WriteFile(noHeader, []byte(`{"kind":"step","t":0,"node":0}`+"\n"), 0o600))
	badEvent := filepath.Join(dir, "badevent.jsonl")
	require.NoError(t, os.WriteFile(badEvent, []byte(`{"kind":"header","t":0,"node":0,"options":{"voters":1}}`+"\n"+
		`{"kind":"step","t":0,"node":0,"event":{"type":"Nonsense","value":{}},"state":{"role":"Leader"}}`+"\n"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"-voters", "x"}, `invalid value "x" for flag -voters`},
		{[]string{"-voters", "0"}, "-voters 0"},
		{[]string{"-observers", "-1"}, "-observers -1"},
		{[]string{"-voters", "2"}, "scenario story needs at least 3 voters"},
		{[]string{"-loss", "1.5"}, "-loss and -dup"},
		{[]string{"-crash-rate", "-1"}, "-crash-rate"},
		{[]string{"-duration", "-5s"}, "-duration"},
		{[]string{"-scenario", "nope"}, `unknown scenario "nope"`},
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"-replay", filepath.Join(dir, "missing.jsonl")}, "no such file"},
		{[]string{"-replay", garbage}, "not a trace written by kraftsim -trace or package sim: line 1"},
		{[]string{"-replay", empty}, "empty file"},
		{[]string{"-replay", noHeader}, "want a header"},
		{[]string{"-replay", badEvent}, `unknown type "Nonsense"`},
		{[]string{"-replay", garbage, "-seed", "2"}, "-replay cannot be combined with -seed"},
		{[]string{"-trace", filepath.Join(dir, "no", "such", "dir.jsonl")}, "-trace: open"},
		{[]string{"-svg", filepath.Join(dir, "no", "such", "dir.svg")}, "-svg: open"},
	} {
		code, out, errOut := runArgs(t, tc.args...)
		require.Equal(t, exitBad, code, "%v", tc.args)
		require.Empty(t, out, "%v", tc.args)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
		require.True(t, strings.HasPrefix(errOut, "kraftsim: "), "%v: %q", tc.args, errOut)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "%v: one line: %q", tc.args, errOut)
	}
}

func TestHelpPrintsUsage(t *testing.T) {
	code, out, errOut := runArgs(t, "-h")
	require.Equal(t, exitOK, code)
	require.Empty(t, errOut)
	for _, want := range []string{
		"Usage: kraftsim", "-voters", "-observers", "-seed", "-duration", "-crash-rate",
		"-partition-rate", "-loss", "-dup", "-scenario", "-trace", "-replay", "-svg", "story", "committed-data-loss", "Exit status",
	} {
		require.Contains(t, out, want)
	}
}

// svgLanes parses an SVG document and returns the ids of its lanes.
func svgLanes(t *testing.T, data []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var lanes []string
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the SVG is well-formed XML")
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
		}
		var class, id string
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "class":
				class = a.Value
			case "id":
				id = a.Value
			}
		}
		if se.Name.Local == "g" && class == "lane" {
			lanes = append(lanes, id)
		}
	}
	require.Equal(t, "svg", root)
	return lanes
}

func TestSVGHasOneLanePerReplica(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args  []string
		lanes []string
	}{
		{nil, []string{"lane-r0", "lane-r1", "lane-r2", "lane-r3", "lane-r4", "lane-r5", "lane-r6"}},
		{[]string{"-scenario", "leader-partitioned", "-voters", "3", "-observers", "1"}, []string{"lane-r0", "lane-r1", "lane-r2", "lane-r3"}},
	} {
		path := filepath.Join(dir, "run.svg")
		code, out, _ := runArgs(t, append(tc.args, "-svg", path, "-q")...)
		require.Equal(t, exitOK, code, out)
		require.Contains(t, out, "picture written to "+path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, tc.lanes, svgLanes(t, data))
		s := string(data)
		for _, want := range []string{`class="legend"`, ">Leader<", ">Follower<", ">down<", "virtual time", `class="mark"`, `class="partition"`, ">e1<"} {
			require.Contains(t, s, want)
		}
	}
}

// TestFailoversReportsSplitVotes: -failovers measures leader crashes;
// with Kafka's rules a good share split the vote, with kraft's few do.
func TestFailoversReportsSplitVotes(t *testing.T) {
	code, out, errOut := runArgs(t, "-failovers", "100", "-voters", "3", "-observers", "0")
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "100 leader crashes, 3 voters, 0 observers, seeds 1-100, kraft's (D59) failover rules")
	require.Contains(t, out, "split votes: 0 (0.0%)")
	code, out, errOut = runArgs(t, "-failovers", "100", "-voters", "3", "-observers", "0", "-kafka-failover")
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "Kafka's failover rules")
	require.NotContains(t, out, "split votes: 0 ")
	code, _, errOut = runArgs(t, "-failovers", "0")
	require.Equal(t, exitBad, code)
	require.Contains(t, errOut, "-failovers 0")

	// -handovers resigns instead of crashing; -loss loses messages.
	code, out, errOut = runArgs(t, "-failovers", "50", "-voters", "3", "-observers", "0", "-handovers", "-loss", "0.01")
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "50 graceful resignations, 3 voters")
	require.Contains(t, out, "1% message loss")
	require.Contains(t, out, "resignation to a new leader that commits")

	// -kills: the peers notice the leader's process is gone (D101), and
	// the failover takes a fraction of an election timeout, not T_f.
	code, out, errOut = runArgs(t, "-failovers", "20", "-voters", "3", "-kills")
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "20 leader process kills (noticed by the peers), 3 voters")
	require.Regexp(t, `kill to a new leader that commits\): p50 \d+ms`, out)
	code, _, errOut = runArgs(t, "-failovers", "20", "-kills", "-handovers")
	require.Equal(t, exitBad, code)
	require.Contains(t, errOut, "pick one")
}

// TestSnapshotScenario: the snapshot scenario shows a restarted voter and
// a replica that lost its disk each installing the leader's snapshot; the
// summary counts snapshots taken and installed; the picture marks the
// installs on their lanes, with a legend entry. With -snapshot-every 0 the
// scenario is refused and other runs take no snapshot.
func TestSnapshotScenario(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "snap.svg")
	code, out, errOut := runArgs(t, "-scenario", "snapshot", "-wall=false", "-svg", path)
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "snapshots every 32 committed records on each replica, 2 kept")
	require.Regexp(t, `snapshot  r0 installs r\d's snapshot \(end offset \d+, epoch \d+\), downloaded with FetchSnapshot`, out)
	require.Regexp(t, `snapshot  r6 installs r\d's snapshot`, out, "the replica that lost its disk")
	require.Regexp(t, `\n  snapshots +[0-9,]+ taken \(every 32 committed records on each replica, the log cleaned behind them\), 2 installed`, out)
	require.Contains(t, out, "PASS: every invariant held")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(data, new(interface{})))
	s := string(data)
	require.Equal(t, 2, strings.Count(s, `class="install"`))
	require.Contains(t, s, ">snapshot installed<")
	require.Contains(t, s, "r0 installs r")

	code, _, errOut = runArgs(t, "-scenario", "snapshot", "-snapshot-every", "0")
	require.Equal(t, exitBad, code)
	require.Contains(t, errOut, "needs snapshots")
	code, out, _ = runArgs(t, "-scenario", "leader-crash", "-snapshot-every", "0", "-q")
	require.Equal(t, exitOK, code, out)
	require.Contains(t, out, "snapshots              none (-snapshot-every 0)")

	// The default story takes snapshots too.
	_, out, _ = runArgs(t, "-q", "-wall=false")
	require.Regexp(t, `\n  snapshots +[1-9][0-9,]* taken`, out)
}

// TestReconfigScenario: the reconfig scenario grows the voter set from r0
// alone to r0-r2 and replaces a voter that lost its disk by its new
// directory id; the summary shows the committed voter set over time, the
// changes and no invariant violation; its trace replays exactly.
func TestReconfigScenario(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "reconfig.jsonl")
	code, out, errOut := runArgs(t, "-scenario", "reconfig", "-wall=false", "-trace", trace)
	require.Equal(t, exitOK, code, out+errOut)
	for _, want := range []string{
		"scenario reconfig, 3 voters (r0-r2), 2 observers (r3-r4), seed 1",
		"voters    bootstrap voter set {r0/d1000000}",
		"the operator asks r0 for AddRaftVoter r1/d1000100",
		"committed voter set {r0/d1000000, r1/d1000100, r2/d1000200}",
		"the operator asks r0 for RemoveRaftVoter r2/d1000200",
		"committed voter set {r0/d1000000, r1/d1000100, r2/d1000201}",
		"\n  voter set over time    {r0/d1000000} bootstrap checkpoint\n",
		"4 requested: 4 committed (answered NONE)",
		"\n  invariant violations   0\n",
		"PASS: every invariant held",
	} {
		require.Contains(t, out, want)
	}
	code, out, errOut = runArgs(t, "-replay", trace)
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "reproduces exactly")

	code, out, _ = runArgs(t, "-scenario", "reconfig", "-voters", "5", "-seed", "2", "-q")
	require.Equal(t, exitOK, code, out)
	require.Contains(t, out, "PASS: every invariant held")
}
