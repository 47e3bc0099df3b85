//go:build unix

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// The identity of a replica at real processes (docs/design.md D108, D109):
// a wiped voter does not come back by itself, and a static voter does not
// run under another voter set.

// docCommands returns the kraftd commands of the section heading of the
// markdown file doc (a path from the repository's root), block by block (a
// command continued with "\" on the next line is one), with the document's
// ports, data directories and binary replaced by the test's.
func docCommands(t *testing.T, doc, heading string, subst map[string]string) [][][]string {
	var blocks [][][]string
	for _, block := range docBlocks(t, doc, heading, subst) {
		var cmds [][]string
		for _, line := range strings.Split(block, "\n") {
			f := strings.Fields(line)
			if len(f) > 0 && f[0] == subst["/tmp/kraftd"] {
				cmds = append(cmds, f[1:])
			}
		}
		if cmds != nil {
			blocks = append(blocks, cmds)
		}
	}
	return blocks
}

// docBlocks returns the sh blocks of the section heading of the markdown
// file doc (a path from the repository's root), after subst, with each
// command continued with "\" on the next line joined into one line.
func docBlocks(t *testing.T, doc, heading string, subst map[string]string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", doc))
	require.NoError(t, err)
	text := string(b)
	i := strings.Index(text, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "%s has no %q", doc, heading)
	text = text[i+len(heading)+2:]
	if j := strings.Index(text, "\n#"); j >= 0 {
		text = text[:j]
	}
	for from, to := range subst {
		text = strings.ReplaceAll(text, from, to)
	}
	var blocks []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, strings.ReplaceAll(block[1], "\\\n", " "))
	}
	return blocks
}

func flagOf(args []string, name string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}

// refusedStart runs kraftd with args and requires it to exit with status
// 1 within 10s; it returns what it logged.
func refusedStart(t *testing.T, bin string, args []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	require.True(t, ok, "kraftd %v did not exit with an error: %v\n%s", args, err, out)
	require.Equal(t, exitFail, ee.ExitCode(), "%s", out)
	return logText(string(out))
}

// TestProcessDynamicQuorumWipeAsDocumented runs docs/kraftd.md's "Growing a dynamic
// quorum from one voter to three" as written (with the test's ports and
// directories), appending all along; then replica 1's disk is wiped and it
// is started again with the same flags: it is refused, and replicas 2 and
// 3 elect a leader and go on acknowledging; then the section's recovery
// (format as a new disk, start with -auto-join) makes it a voter again
// under a new key. Nothing acknowledged is lost: every acknowledged append
// is at its offset in every replica's log, and neither healthy replica
// stopped.
func TestProcessDynamicQuorumWipeAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	bin := buildKraftd(t)
	base := t.TempDir()
	ports := freePorts(t, 6)
	subst := map[string]string{"/tmp/kraftd": bin, "/tmp/kraft-dynamic": base}
	for i := 0; i < 3; i++ {
		subst[fmt.Sprintf("127.0.0.1:909%d", i+1)] = ports[i]
		subst[fmt.Sprintf("127.0.0.1:808%d", i+1)] = ports[3+i]
	}
	blocks := docCommands(t, "docs/kraftd.md", "## Growing a dynamic quorum from one voter to three", subst)
	require.Len(t, blocks, 2, "the section's commands: the formats and starts, then the recovery")
	require.Len(t, blocks[0], 6)
	require.Len(t, blocks[1], 2)

	c := &cluster{t: t, procs: map[int]*proc{}, status: &http.Client{Timeout: 500 * time.Millisecond}}
	for _, args := range blocks[0] {
		if args[0] == "format" {
			out, err := exec.Command(bin, args...).CombinedOutput()
			require.NoError(t, err, "kraftd %v: %s", args, out)
			continue
		}
		id, err := strconv.Atoi(flagOf(args, "-id"))
		require.NoError(t, err)
		p := &proc{t: t, id: id, bin: bin, args: args, noFormat: true, dir: flagOf(args, "-dir"), http: flagOf(args, "-http"),
			raft: ports[id-1], stderr: filepath.Join(base, fmt.Sprintf("node%d.stderr", id))}
		c.procs[id] = p
		c.ids = append(c.ids, id)
	}
	require.Equal(t, []int{1, 2, 3}, c.ids)
	t.Cleanup(func() {
		for _, id := range c.ids {
			c.procs[id].kill()
		}
		if t.Failed() {
			for _, id := range c.ids {
				c.procs[id].dump()
			}
		}
	})
	oldKey := strings.SplitN(strings.SplitN(flagOf(blocks[0][3], "-initial-voters"), "@", 2)[0], ":", 2)[1]

	c.procs[1].start()
	leader, _ := c.waitLeader(10 * time.Second)
	require.Equal(t, 1, leader)
	cl := startClient(c, 2)
	c.procs[2].start()
	c.procs[3].start()
	var local votersBody
	require.Eventually(t, func() bool { return getJSON(c.procs[2].http+"/voters", &local) == nil }, 10*time.Second, 10*time.Millisecond)
	body := fmt.Sprintf(`{"id": 2, "directory_id": %q, "endpoint": %q}`, local.Local.DirectoryID, c.procs[2].raft)
	require.Eventually(t, func() bool {
		code, _ := httpPost(t, "http://"+c.procs[1].http+"/voters/add", body)
		return code == 200
	}, 20*time.Second, 50*time.Millisecond, "POST /voters/add of replica 2")
	for _, id := range c.ids {
		waitVoterIDs(t, c, id, 1, 2, 3)
	}
	_, ok := cl.waitAck(time.Now(), 0, 10*time.Second)
	require.True(t, ok)

	// Replica 1's disk is wiped (a new, empty disk at the same path); it
	// is started again with the same flags.
	c.procs[1].kill()
	require.NoError(t, os.RemoveAll(c.procs[1].dir))
	require.NoError(t, os.Mkdir(c.procs[1].dir, 0o755))
	wiped := time.Now()
	out := refusedStart(t, bin, c.procs[1].args)
	require.Contains(t, out, "the data directory "+c.procs[1].dir+" is not formatted (it has no meta.properties)")
	require.Contains(t, out, "must not be formatted with -initial-voters or -standalone again")
	_, err := os.Stat(storage.BootstrapPath(c.procs[1].dir))
	require.ErrorIs(t, err, os.ErrNotExist, "no bootstrap checkpoint was written")
	newLeader, st := c.waitLeader(15 * time.Second)
	require.NotEqual(t, 1, newLeader)
	a, ok := cl.waitAck(wiped, 1, 15*time.Second)
	require.True(t, ok, "replicas 2 and 3 acknowledge appends without replica 1")
	t.Logf("replica 1 wiped and refused; %d leads in epoch %d, first append acknowledged %v after the wipe",
		newLeader, st.Epoch, a.at.Sub(wiped).Round(time.Millisecond))

	// The section's recovery: formatted as a new disk, it joins again.
	out2, err := exec.Command(bin, blocks[1][0]...).CombinedOutput()
	require.NoError(t, err, "%s", out2)
	c.procs[1].args = blocks[1][1]
	c.procs[1].start()
	deadline := time.Now().Add(30 * time.Second)
	var vb votersBody
	for {
		c.checkExits()
		l, _ := c.waitLeader(10 * time.Second)
		if getJSON(c.procs[l].http+"/voters", &vb) == nil && len(vb.Voters) == 3 {
			keyOf1 := ""
			for _, v := range vb.Voters {
				if v.ID == 1 {
					keyOf1 = uuid.UUID(v.DirectoryID).String()
				}
			}
			if keyOf1 != "" && keyOf1 != oldKey {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "replica 1 did not rejoin under a new key within 30s: %+v", vb)
		time.Sleep(20 * time.Millisecond)
	}
	rejoined := time.Now()
	_, ok = cl.waitAck(rejoined, 0, 10*time.Second)
	require.True(t, ok)
	cl.stop()
	c.waitAllCaughtUp(15 * time.Second)
	final := c.waitConverged(15 * time.Second)
	c.checkExits() // replicas 2 and 3 never stopped
	c.stopAll()
	acks := cl.acknowledged()
	t.Logf("replica 1 rejoined %v after the wipe with key %v; %d appends acknowledged", rejoined.Sub(wiped).Round(time.Millisecond), vb.Voters, len(acks))
	var hwm int64
	for _, s := range final {
		hwm = s.HighWatermark
	}
	checkLogs(t, c, acks, hwm)
}

// TestProcessStaticVoterRestartedAloneIsRefused: a follower of a static
// quorum restarted with -voters naming itself alone is refused, naming
// both voter sets and how to change them; restarted as it was it catches
// up, and nothing acknowledged is lost.
func TestProcessStaticVoterRestartedAloneIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	bin := buildKraftd(t)
	c := newCluster(t, bin, 3)
	c.startAll()
	leader, _ := c.waitLeader(10 * time.Second)
	cl := startClient(c, 2)
	_, ok := cl.waitAck(time.Now(), 0, 10*time.Second)
	require.True(t, ok)
	f := c.procs[c.follower(leader, nil)]
	f.stop()
	alone := append([]string(nil), f.args...)
	for i := range alone {
		if alone[i] == "-voters" {
			alone[i+1] = fmt.Sprintf("%d@%s", f.id, f.raft)
		}
	}
	out := refusedStart(t, bin, alone)
	require.Contains(t, out, fmt.Sprintf("was formatted for the static voter set 1,2,3, not %d (-voters %d@%s)", f.id, f.id, f.raft))
	require.Contains(t, out, "kraftd format -update-voters")
	stopped := time.Now()
	_, ok = cl.waitAck(stopped, 0, 10*time.Second)
	require.True(t, ok, "the other two go on")
	f.start()
	_, ok = c.waitRejoined(f, stopped, 15*time.Second)
	require.True(t, ok)
	cl.stop()
	final := c.waitConverged(15 * time.Second)
	c.stopAll()
	var hwm int64
	for _, s := range final {
		hwm = s.HighWatermark
	}
	checkLogs(t, c, cl.acknowledged(), hwm)
}
