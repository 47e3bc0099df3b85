//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProcessDynamicQuorum grows a dynamic quorum of kraftd processes from
// one voter to three: replica 1 starts alone from -initial-voters,
// replica 2 (started with -bootstrap-servers) is added with POST
// /voters/add at the leader, replica 3 joins by itself (-auto-join). Then
// the leader is killed and another voter takes over; the restarted one
// finds the voter set in its log and follows; a voter is stopped and
// removed, and joins again by itself once restarted; every replica ends
// with the same state.
func TestProcessDynamicQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	bin := buildKraftd(t)
	c := newCluster(t, bin, 3)
	const dir1 = "b5f2c9d4-8a1e-4c3b-9f7d-2e6a1b0c4d8e"
	for _, id := range c.ids {
		p := c.procs[id]
		p.args = append([]string{"-id", strconv.Itoa(id), "-dir", p.dir, "-http", p.http, "-snapshot-every", "20", "-cluster-id", testClusterID}, testTimeouts...)
		if id == 1 {
			p.args = append(p.args, "-initial-voters", "1:"+dir1+"@"+p.raft)
		} else {
			p.args = append(p.args, "-bootstrap-servers", "1@"+c.procs[1].raft, "-listen", p.raft)
		}
		if id == 3 {
			p.args = append(p.args, "-auto-join")
		}
	}
	start := time.Now()
	c.procs[1].start()
	leader, st := c.waitLeader(10 * time.Second)
	require.Equal(t, 1, leader)
	require.Equal(t, int16(1), st.KRaftVersion)
	unsure := 0
	for i := 0; i < 30; i++ {
		unsure += appendAnywhere(t, c, fmt.Sprintf("a%d", i))
	}

	// Replica 2 catches up as an observer, with replica 1's snapshot (which
	// holds the voter set), and is added; its key comes from its own GET
	// /voters.
	waitFullStatus(t, c, 1, "a snapshot and its log cleaned", func(s status) bool { return s.LogStart > 0 })
	c.procs[2].start()
	waitFullStatus(t, c, 2, "the leader's snapshot installed", func(s status) bool { return s.SnapshotsInstalled >= 1 })
	waitVoterIDs(t, c, 2, 1)
	var local struct {
		Local struct {
			ID          int    `json:"id"`
			DirectoryID string `json:"directory_id"`
			Endpoint    string `json:"endpoint"`
		} `json:"local"`
	}
	require.Eventually(t, func() bool {
		return getJSON(c.procs[2].http+"/voters", &local) == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, c.procs[2].raft, local.Local.Endpoint)
	body := fmt.Sprintf(`{"id": 2, "directory_id": %q, "endpoint": %q}`, local.Local.DirectoryID, local.Local.Endpoint)
	require.Eventually(t, func() bool {
		code, _ := httpPost(t, "http://"+c.procs[1].http+"/voters/add", body)
		return code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "POST /voters/add of replica 2")

	// Replica 3 asks to join by itself.
	c.procs[3].start()
	for _, id := range c.ids {
		waitVoterIDs(t, c, id, 1, 2, 3)
	}
	grown := time.Since(start)
	for i := 0; i < 10; i++ {
		unsure += appendAnywhere(t, c, fmt.Sprintf("b%d", i))
	}
	requireRecords(t, waitSameState(t, c).Records, 0, 40, unsure)

	// The leader dies: another voter leads; the old one comes back from
	// its log as a voter and follows.
	c.procs[1].kill()
	next, _ := c.waitLeader(10 * time.Second)
	require.NotEqual(t, 1, next)
	unsure += appendAnywhere(t, c, "c")
	c.procs[1].start()
	waitVoterIDs(t, c, 1, 1, 2, 3)

	// Remove replica 3 at the leader. It runs with -auto-join, so while it
	// runs it asks to be added again as soon as it sees itself removed
	// (Kafka's controller.quorum.auto.join.enable): it is stopped first,
	// as an operator decommissioning it would, so that the set {1, 2} is
	// there to be seen by the other two. Restarted, it joins again.
	var v3 struct {
		Local struct {
			DirectoryID string `json:"directory_id"`
		} `json:"local"`
	}
	require.NoError(t, getJSON(c.procs[3].http+"/voters", &v3))
	c.procs[3].stop()
	require.Eventually(t, func() bool {
		l, _ := c.waitLeader(10 * time.Second)
		code, _ := httpPost(t, "http://"+c.procs[l].http+"/voters/remove", fmt.Sprintf(`{"id": 3, "directory_id": %q}`, v3.Local.DirectoryID))
		return code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond, "POST /voters/remove of replica 3")
	for _, id := range []int{1, 2} {
		waitVoterIDs(t, c, id, 1, 2)
	}
	unsure += appendAnywhere(t, c, "d")
	c.procs[3].start()
	for _, id := range c.ids {
		waitVoterIDs(t, c, id, 1, 2, 3)
	}
	requireRecords(t, waitSameState(t, c).Records, 0, 42, unsure)
	t.Logf("grown from one voter to three in %v (from the first start)", grown.Round(time.Millisecond))
	c.stopAll()
}

// getJSON GETs http://url into v.
func getJSON(url string, v interface{}) error {
	resp, err := http.Get("http://" + url) //nolint:noctx // a test against a local server
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// waitVoterIDs waits until process id's GET /voters shows the voter ids
// (in any order) with kraft.version 1.
func waitVoterIDs(t *testing.T, c *cluster, id int, ids ...int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last votersBody
	for time.Now().Before(deadline) {
		var vb votersBody
		if err := getJSON(c.procs[id].http+"/voters", &vb); err == nil {
			last = vb
			if vb.KRaftVersion == 1 && len(vb.Voters) == len(ids) {
				found := 0
				for _, v := range vb.Voters {
					for _, want := range ids {
						if int(v.ID) == want && v.Endpoint == c.procs[want].raft {
							found++
						}
					}
				}
				if found == len(ids) {
					return
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.fatalf("kraftd %d: voters %v not within 15s (last %+v)", id, ids, last)
}
