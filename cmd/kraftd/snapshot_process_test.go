//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProcessSnapshotCatchUp runs three kraftd processes with
// -snapshot-every 20, kills a follower, appends 100 records (the others
// snapshot their state machines and delete their logs behind the
// snapshots), and restarts the follower: it installs the leader's
// snapshot over TCP and its state machine ends with the others' digest.
// Then it is killed and restarted once more: it comes back from its own
// snapshot and log.
func TestProcessSnapshotCatchUp(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	bin := buildKraftd(t)
	c := newCluster(t, bin, 3)
	for _, id := range c.ids {
		c.procs[id].args = append(c.procs[id].args, "-snapshot-every", "20")
	}
	c.startAll()
	leader, _ := c.waitLeader(15 * time.Second)
	follower := c.follower(leader, nil)
	c.procs[follower].kill()

	unsure := 0
	for i := 0; i < 100; i++ {
		unsure += appendAnywhere(t, c, fmt.Sprintf("record %d", i))
	}
	// The applier takes the snapshots after the records commit, on its own
	// goroutine, so the last ones may still be under way when the appends
	// return: wait for the leader to delete its log behind them.
	leader, _ = c.waitLeader(15 * time.Second)
	waitFullStatus(t, c, leader, "the leader deleted its log behind its snapshots", func(s status) bool {
		return s.LogStart > 40 && s.LatestSnapshot != nil
	})

	c.procs[follower].start()
	st := waitFullStatus(t, c, follower, "installed a snapshot", func(s status) bool {
		return s.SnapshotsInstalled >= 1 && s.State != nil && s.State.Restored != nil
	})
	require.Greater(t, st.LogStart, int64(40))
	want := waitSameState(t, c)
	requireRecords(t, want.Records, 0, 100, unsure)

	// A restart from its own snapshot and log.
	c.procs[follower].kill()
	c.procs[follower].start()
	st = waitFullStatus(t, c, follower, "restored its snapshot at start", func(s status) bool {
		return s.State != nil && s.State.Restored != nil && s.State.Records == want.Records
	})
	require.Zero(t, st.SnapshotsInstalled, "no download needed after a restart")
	unsure = appendAnywhere(t, c, "after")
	requireRecords(t, waitSameState(t, c).Records, want.Records, 1, unsure)
	c.stopAll()
}

// appendAnywhere appends one record at whichever process accepts it. It
// returns how many of its attempts failed without saying whether the
// record committed (a 503 after leadership was lost or the commit timed
// out, or no response): the record may have committed in each of them as
// well (node.ErrLeadershipLost), so it may be in the log more than once.
func appendAnywhere(t *testing.T, c *cluster, payload string) (unsure int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, id := range c.ids {
			if p := c.procs[id]; p.live() {
				code, _ := httpPost(t, "http://"+p.http+"/append", payload)
				switch code {
				case http.StatusOK:
					return unsure
				case http.StatusServiceUnavailable, 0:
					unsure++
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.fatalf("append %q: no process accepted it within 15s", payload)
	return unsure
}

// requireRecords checks a state machine's record count against the count
// before (from) and n acknowledged appends since, unsure attempts of which
// left their outcome open (appendAnywhere): each of those may have added
// a copy of its record.
func requireRecords(t *testing.T, got, from int64, n, unsure int) {
	t.Helper()
	require.GreaterOrEqual(t, got, from+int64(n), "records")
	require.LessOrEqual(t, got, from+int64(n+unsure), "records, with %d appends of open outcome retried", unsure)
}

// fullStatus is a process's GET /status with its state machine.
func fullStatus(c *cluster, id int) (status, error) {
	var st status
	resp, err := c.status.Get("http://" + c.procs[id].http + "/status")
	if err != nil {
		return st, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s", resp.Status)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

func waitFullStatus(t *testing.T, c *cluster, id int, what string, ok func(status) bool) status {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c.checkExits()
		if st, err := fullStatus(c, id); err == nil && ok(st) {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.fatalf("node %d: %s: not within 20s", id, what)
	return status{}
}

// waitSameState waits until every process has applied up to the leader's
// high watermark and their state machines agree, and returns the state.
func waitSameState(t *testing.T, c *cluster) machineStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last []status
	for time.Now().Before(deadline) {
		c.checkExits()
		last = last[:0]
		for _, id := range c.ids {
			if st, err := fullStatus(c, id); err == nil && st.State != nil {
				last = append(last, st)
			}
		}
		same := len(last) == len(c.ids)
		for _, st := range last {
			same = same && st.State.Applied >= st.HighWatermark-1 && st.State.Digest == last[0].State.Digest &&
				st.State.Records == last[0].State.Records && st.HighWatermark == last[0].HighWatermark
		}
		if same {
			return *last[0].State
		}
		time.Sleep(10 * time.Millisecond)
	}
	js, _ := json.Marshal(last)
	c.fatalf("the state machines did not agree within 20s: %s", js)
	return machineStatus{}
}
