//go:build unix

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kraftquorum/kraft/node"
	"github.com/stretchr/testify/require"
)

// get fetches url and returns the status code and the body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
	require.NoError(t, err, url)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// scrape reads a process's /metrics and its /status around it; ok says
// the two statuses agree (the replica did not move in between).
func (c *cluster) scrape(p *proc) (map[string]*promFamily, node.Status, bool) {
	c.t.Helper()
	before, err := c.statusOf(p)
	require.NoError(c.t, err)
	code, body := get(c.t, "http://"+p.http+"/metrics")
	require.Equal(c.t, http.StatusOK, code, body)
	fams := parseProm(c.t, body)
	after, err := c.statusOf(p)
	require.NoError(c.t, err)
	return fams, after, fmt.Sprint(before) == fmt.Sprint(after)
}

// checkMetrics scrapes every process until its /metrics agrees with its
// /status (a stable status around the scrape), and checks the names and
// values Kafka's raft-metrics and kraft's share with the status.
func (c *cluster) checkMetrics(leader int) map[int]map[string]*promFamily {
	c.t.Helper()
	t := c.t
	out := map[int]map[string]*promFamily{}
	for _, id := range c.ids {
		p := c.procs[id]
		var fams map[string]*promFamily
		var st node.Status
		stable := false
		for i := 0; i < 100 && !stable; i++ {
			fams, st, stable = c.scrape(p)
			if !stable {
				time.Sleep(10 * time.Millisecond)
			}
		}
		require.True(t, stable, "node %d: /status moved around every scrape", id)
		v := func(name string, labels ...string) float64 {
			t.Helper()
			fam := strings.TrimSuffix(strings.TrimSuffix(name, "_count"), "_sum")
			require.Contains(t, fams, fam, "node %d", id)
			return fams[fam].value(t, name, labels...)
		}
		require.Equal(t, float64(leader), v("kafka_raft_current_leader"), "node %d", id)
		require.Equal(t, float64(st.Leader), v("kafka_raft_current_leader"), "node %d", id)
		require.Equal(t, float64(st.Epoch), v("kafka_raft_current_epoch"), "node %d", id)
		require.Equal(t, float64(st.HighWatermark), v("kafka_raft_high_watermark"), "node %d", id)
		require.Equal(t, float64(st.LogEnd), v("kafka_raft_log_end_offset"), "node %d", id)
		require.Equal(t, float64(st.LogEndEpoch), v("kafka_raft_log_end_epoch"), "node %d", id)
		require.Equal(t, 0.0, v("kafka_raft_number_unknown_voter_connections"), "node %d", id)
		require.Equal(t, 1.0, v("kraft_role", "role", st.Role), "node %d", id)
		state := strings.ToLower(st.Role)
		require.Equal(t, 1.0, v("kafka_raft_current_state", "state", state), "node %d", id)
		var sum float64
		for _, s := range fams["kafka_raft_current_state"].samples {
			sum += s.value
		}
		require.Equal(t, 1.0, sum, "node %d: one state", id)
		require.Positive(t, v("kraft_fsync_seconds_count"), "node %d", id)
		require.Positive(t, v("kafka_raft_poll_idle_seconds_total"), "node %d", id)
		require.Positive(t, v("kafka_raft_poll_busy_seconds_total"), "node %d", id)
		if id == leader {
			require.Equal(t, float64(id), v("kafka_raft_current_vote"), "node %d", id)
			require.Positive(t, v("kafka_raft_append_records_total"), "node %d", id)
			require.Positive(t, v("kafka_raft_election_latency_seconds_count"), "node %d", id)
			require.Positive(t, v("kafka_raft_commit_latency_seconds_count"), "node %d", id)
			require.Len(t, fams["kraft_voter_lag_records"].samples, len(st.Voters), "node %d", id)
			for _, vs := range st.Voters {
				voter := strconv.Itoa(int(vs.ID))
				require.Equal(t, float64(vs.Lag), v("kraft_voter_lag_records", "voter", voter), "node %d", id)
				require.Equal(t, float64(vs.EndOffset), v("kraft_voter_end_offset", "voter", voter), "node %d", id)
			}
			require.Equal(t, -1.0, v("kraft_leader_high_watermark"), "node %d", id)
		} else {
			require.Equal(t, -1.0, v("kafka_raft_current_vote"), "node %d", id)
			require.Positive(t, v("kafka_raft_fetch_records_total"), "node %d", id)
			require.Empty(t, fams["kraft_voter_lag_records"].samples, "node %d", id)
			require.Equal(t, float64(st.HighWatermark), v("kraft_leader_high_watermark"), "node %d: caught up", id)
		}
		code, body := get(t, "http://"+p.http+"/readyz")
		require.Equal(t, http.StatusOK, code, "node %d: %s", id, body)
		code, _ = get(t, "http://"+p.http+"/healthz")
		require.Equal(t, http.StatusOK, code, "node %d", id)
		out[id] = fams
	}
	return out
}

// TestProcessMetrics scrapes /metrics of three kraftd processes and
// checks the names and values against /status, before and after a
// leader change; /readyz says every replica is ready once they have
// converged. A fourth replica with another cluster id is refused, and
// both sides log it.
func TestProcessMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	bin := buildKraftd(t)
	c := newCluster(t, bin, 3)
	c.startAll()
	leader, _ := c.waitLeader(10 * time.Second)
	for i := 0; i < 5; i++ {
		code, body := httpPost(t, "http://"+c.procs[leader].http+"/append", fmt.Sprintf("r%d", i))
		require.Equal(t, http.StatusOK, code, string(body))
	}
	c.waitConverged(10 * time.Second)
	first := c.checkMetrics(leader)
	require.GreaterOrEqual(t, first[leader]["kafka_raft_append_records_total"].value(t, "kafka_raft_append_records_total"), 5.0)

	// A leader change.
	code, body := httpPost(t, "http://"+c.procs[leader].http+"/resign", "")
	require.Equal(t, http.StatusOK, code, string(body))
	next := leader
	require.Eventually(t, func() bool {
		next, _ = c.waitLeader(10 * time.Second)
		return next != leader
	}, 10*time.Second, 10*time.Millisecond)
	code, body = httpPost(t, "http://"+c.procs[next].http+"/append", "after")
	require.Equal(t, http.StatusOK, code, string(body))
	sts := c.waitConverged(10 * time.Second)
	require.Equal(t, "Leader", sts[next].Role)
	second := c.checkMetrics(next)
	epoch := func(id int, fams map[int]map[string]*promFamily) float64 {
		return fams[id]["kafka_raft_current_epoch"].value(t, "kafka_raft_current_epoch")
	}
	require.Greater(t, epoch(next, second), epoch(leader, first))
	require.Equal(t, 1.0, second[leader]["kafka_raft_current_state"].value(t, "kafka_raft_current_state", "state", "follower"))

	// A replica of another cluster: an observer that fetches from the
	// voters, refused by each.
	ports := freePorts(t, 1)
	var voters []string
	for _, id := range c.ids {
		voters = append(voters, fmt.Sprintf("%d@%s", id, c.procs[id].raft))
	}
	dir := t.TempDir()
	stray := &proc{t: t, id: 4, bin: bin, http: ports[0], dir: filepath.Join(dir, "node4"), stderr: filepath.Join(dir, "node4.stderr")}
	stray.args = append([]string{"-id", "4", "-voters", strings.Join(voters, ","), "-dir", stray.dir, "-http", stray.http,
		"-cluster-id", "AAECAwQFBgcICQoLDA0ODw"}, testTimeouts...)
	stray.start()
	t.Cleanup(stray.kill)
	logged := func(p *proc, s string) bool {
		b, err := os.ReadFile(p.stderr)
		require.NoError(t, err)
		return strings.Contains(string(b), s)
	}
	require.Eventually(t, func() bool {
		return logged(stray, "refused this replica's Fetch request: INCONSISTENT_CLUSTER_ID")
	}, 10*time.Second, 20*time.Millisecond, "the stray replica logs the refusal")
	require.Eventually(t, func() bool {
		return logged(c.procs[next], "refused a Fetch request from node 4: INCONSISTENT_CLUSTER_ID: it has cluster id 00010203-0405-0607-0809-0a0b0c0d0e0f")
	}, 10*time.Second, 20*time.Millisecond, "the leader logs the refusal")
	code, body2 := get(t, "http://"+stray.http+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body2, "not ready: no known leader", "%s", func() string { b, _ := os.ReadFile(stray.stderr); return string(b) }())
	code, body2 = get(t, "http://"+c.procs[next].http+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Positive(t, parseProm(t, body2)["kraft_cluster_id_refused_total"].value(t, "kraft_cluster_id_refused_total"))
	stray.stop()
	c.stopAll()
}
