package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/sim"
)

// fmtTime prints a virtual time in seconds with millisecond precision.
func fmtTime(t time.Duration) string {
	return fmt.Sprintf("%.3fs", t.Seconds())
}

// fmtDur prints a duration rounded to the millisecond.
func fmtDur(d time.Duration) string {
	return d.Round(time.Millisecond).String()
}

func trimFloat(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// thousands prints n with thousands separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// afterEventRules are the rules the checker checks in its per-event pass,
// after counting the event in Checker.Checks; the others are checked
// during a step, before the event is counted.
var afterEventRules = map[string]bool{"committed-lost": true, "log-matching": true, "host-log": true}

// printSummary prints the summary table and the verdict.
func printSummary(w *printer, cfg config, sc scenario, d *driver, o *observer, res result) {
	c := d.c
	var rs summaryRows
	rs.add("scenario", "%s (%d voters, %d observers, seed %d)", sc.name, cfg.voters, cfg.observers, cfg.seed)
	rs.add("virtual time", "%s", fmtTime(c.Now()))
	rs.elections(c, o)
	rs.records(c)
	if c.Options().Dynamic {
		rs.voterChanges(c)
	}
	rs.add("Step calls", "%s (Step and NewState)", thousands(c.Stats().Events))
	rs.checks(c, res)
	rs.add("liveness checks", "%d run, %d passed (bounded waits for a leader or progress, %s each)", d.livenessRun, d.livenessPassed, fmtDur(d.bound))
	if cfg.wall {
		secs := res.wall.Seconds()
		rs.add("wall time", "%s", res.wall.Round(time.Millisecond))
		if secs > 0 {
			rs.add("events per second", "%s (simulated events, wall clock)", thousands(int(float64(c.Checker().Checks)/secs)))
		}
	}
	w.printf("\nsummary\n")
	rs.print(w)
	w.printf("\n")
	printVerdict(w, cfg, sc, res)
}

// summaryRows are the summary's rows: a key (empty: the previous key's
// continuation) and its text.
type summaryRows [][2]string

func (rs *summaryRows) add(k, format string, args ...interface{}) {
	*rs = append(*rs, [2]string{k, fmt.Sprintf(format, args...)})
}

// print prints the rows with the keys in one column.
func (rs summaryRows) print(w *printer) {
	width := 0
	for _, r := range rs {
		width = max(width, len(r[0]))
	}
	for _, r := range rs {
		w.printf("  %-*s  %s\n", width, r[0], r[1])
	}
}

// elections: how many, how long the first and the later ones took, and
// the time without a leader.
func (rs *summaryRows) elections(c *sim.Cluster, o *observer) {
	rs.add("elections", "%d (leaders elected; last epoch %d)", o.elections, o.lastEpoch)
	if o.firstLeader >= 0 {
		rs.add("time to elect (first)", "%s", fmtDur(o.firstLeader))
	} else {
		rs.add("time to elect (first)", "no leader was ever followed by a majority")
	}
	if n := len(o.recoveries); n > 0 {
		var sum, worst time.Duration
		for _, r := range o.recoveries {
			sum += r
			worst = max(worst, r)
		}
		times := "once"
		if n > 1 {
			times = fmt.Sprintf("%d times", n)
		}
		rs.add("time to elect (again)", "mean %s, max %s (the cluster lost its leader %s)", fmtDur(sum/time.Duration(n)), fmtDur(worst), times)
	} else {
		rs.add("time to elect (again)", "the cluster never lost its leader")
	}
	share := 0.0
	if c.Now() > 0 {
		share = float64(o.leaderless) / float64(c.Now()) * 100
	}
	rs.add("leaderless time", "%s (%.1f%% of the run)", fmtDur(o.leaderless), share)
}

// records: what was committed and appended, the messages and the
// snapshots.
func (rs *summaryRows) records(c *sim.Cluster) {
	st := c.Stats()
	committed := c.Checker().Committed()
	client, voters := 0, 0
	for _, r := range committed {
		switch {
		case strings.HasPrefix(r.Payload, "c"):
			client++
		case strings.HasPrefix(r.Payload, "Voters("):
			voters++
		}
	}
	if voters > 0 {
		rs.add("records committed", "%s (%s client records, %s LeaderChange records, %s VotersRecords)", thousands(len(committed)), thousands(client), thousands(len(committed)-client-voters), thousands(voters))
	} else {
		rs.add("records committed", "%s (%s client records, %s LeaderChange records)", thousands(len(committed)), thousands(client), thousands(len(committed)-client))
	}
	notCommitted := max(st.Appends-client, 0)
	rs.add("client records", "%s appended at a leader, %s never committed (lost with their leader's epoch, or in flight at the end)",
		thousands(st.Appends), thousands(notCommitted))
	rs.add("messages", "%s sent, %s lost by the network, %s dropped on the way (partitioned, or to a crashed or restarted replica)",
		thousands(st.Messages), thousands(st.Lost), thousands(st.Dropped))
	if o := c.Options(); o.SnapshotEvery > 0 {
		rs.add("snapshots", "%s taken (every %d committed records on each replica, the log cleaned behind them), %s installed (downloaded with FetchSnapshot)",
			thousands(st.SnapshotsTaken), o.SnapshotEvery, thousands(st.SnapshotsInstalled))
	} else {
		rs.add("snapshots", "none (-snapshot-every 0)")
	}
}

// voterChanges: the voter set over time and the voter changes' outcomes
// (dynamic quorums).
func (rs *summaryRows) voterChanges(c *sim.Cluster) {
	for i, h := range c.VoterHistory() {
		what := fmt.Sprintf("from %s (VotersRecord at offset %d)", fmtTime(h.At), h.Offset)
		if h.Offset < 0 {
			what = "bootstrap checkpoint"
		}
		key := ""
		if i == 0 {
			key = "voter set over time"
		}
		rs.add(key, "%s %s", keysName(h.Voters), what)
	}
	var ok, failed, open int
	for _, v := range c.VoterChanges() {
		switch {
		case !v.Answered:
			open++
		case v.Error == kraft.ErrNone:
			ok++
		default:
			failed++
		}
	}
	rs.add("voter changes", "%d requested: %d committed (answered NONE), %d refused or timed out, %d unanswered; %d VotersRecords committed",
		len(c.VoterChanges()), ok, failed, open, c.Stats().VoterChangesCommitted)
}

// checks: the invariant checks run and the violation, if any.
func (rs *summaryRows) checks(c *sim.Cluster, res result) {
	checks := c.Checker().Checks
	if res.violation == nil {
		rs.add("invariant checks", "%s run, %s passed (every safety rule after every event)", thousands(checks), thousands(checks))
	} else {
		run, passed := checks+1, checks
		if afterEventRules[res.violation.Rule] {
			run, passed = checks, checks-1
		}
		rs.add("invariant checks", "%s run, %s passed, 1 failed (%s)", thousands(run), thousands(passed), res.violation.Rule)
	}
	// The static runs' summary stays as it was.
	switch {
	case !c.Options().Dynamic:
	case res.violation == nil:
		rs.add("invariant violations", "0")
	default:
		rs.add("invariant violations", "1 (%s; the run stopped at it)", res.violation.Rule)
	}
}

// printVerdict prints the run's last line: PASS, or FAIL with the reason.
func printVerdict(w *printer, cfg config, sc scenario, res result) {
	switch {
	case res.violation != nil:
		w.printf("FAIL: %v (seed %d)\n", *res.violation, cfg.seed)
	case res.expect != nil:
		w.printf("FAIL: scenario %s: %v (seed %d)\n", sc.name, res.expect, cfg.seed)
	case res.settle != nil:
		w.printf("FAIL: liveness after the faults stopped: %v (seed %d)\n", res.settle, cfg.seed)
	default:
		extra := ""
		if res.abandoned != nil {
			extra = " (the script was abandoned under random faults: " + res.abandoned.Error() + ")"
		}
		w.printf("PASS: every invariant held and the cluster settled on one leader%s\n", extra)
	}
}
