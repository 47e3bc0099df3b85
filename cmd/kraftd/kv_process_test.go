//go:build unix

package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// kvAtLeader sends a write to whichever process leads, following 421s;
// it retries indeterminate answers (503, no answer) only for idempotent
// writes (put, delete), and returns the definite answer.
func kvAtLeader(t *testing.T, c *cluster, method, path, body string) (int, map[string]interface{}) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, id := range c.ids {
			p := c.procs[id]
			if !p.live() {
				continue
			}
			code, out, err := kvTry(method, "http://"+p.http+path, body)
			if err == nil && code != http.StatusMisdirectedRequest && code != http.StatusServiceUnavailable {
				return code, out
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.fatalf("%s %s: no definite answer within 20s", method, path)
	return 0, nil
}

// TestProcessKV runs three kraftd processes with -snapshot-every 10:
// writes at the leader, a CAS that matches and one that does not, a
// linearizable read at a follower (421 naming the leader); then a
// follower is killed while the others write past several snapshots and
// delete their logs, and restarted: it installs the leader's snapshot,
// whose map it serves to a stale read, and every replica ends with the
// same digest.
func TestProcessKV(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	bin := buildKraftd(t)
	c := newCluster(t, bin, 3)
	for _, id := range c.ids {
		c.procs[id].args = append(c.procs[id].args, "-snapshot-every", "10")
	}
	c.startAll()
	leader, _ := c.waitLeader(15 * time.Second)

	code, out := kvAtLeader(t, c, http.MethodPut, "/kv/colour", "blue")
	require.Equal(t, http.StatusOK, code, "%v", out)
	code, out = kvAtLeader(t, c, http.MethodGet, "/kv/colour", "")
	require.Equal(t, http.StatusOK, code, "%v", out)
	require.Equal(t, "blue", out["value"])
	code, out = kvAtLeader(t, c, http.MethodPost, "/kv/colour/cas", `{"from": "red", "to": "green"}`)
	require.Equal(t, http.StatusConflict, code, "%v", out)
	require.Equal(t, "blue", out["value"])
	code, out = kvAtLeader(t, c, http.MethodPost, "/kv/colour/cas", `{"from": "blue", "to": "green"}`)
	require.Equal(t, http.StatusOK, code, "%v", out)

	leader, _ = c.waitLeader(15 * time.Second)
	follower := c.follower(leader, nil)
	code, out, err := kvTry(http.MethodGet, "http://"+c.procs[follower].http+"/kv/colour", "")
	require.NoError(t, err)
	require.Equal(t, http.StatusMisdirectedRequest, code, "%v", out)
	require.Equal(t, fmt.Sprint(leader), fmt.Sprint(out["leader"]))

	c.procs[follower].kill()
	for i := 0; i < 40; i++ {
		code, out := kvAtLeader(t, c, http.MethodPut, fmt.Sprintf("/kv/k%d", i), fmt.Sprintf("v%d", i))
		require.Equal(t, http.StatusOK, code, "%v", out)
	}
	code, _ = kvAtLeader(t, c, http.MethodDelete, "/kv/k0", "")
	require.Equal(t, http.StatusOK, code)
	leader, _ = c.waitLeader(15 * time.Second)
	waitFullStatus(t, c, leader, "the leader deleted its log behind its snapshots", func(s status) bool {
		return s.LogStart > 20 && s.LatestSnapshot != nil
	})
	c.procs[follower].start()
	waitFullStatus(t, c, follower, "installed a snapshot", func(s status) bool {
		return s.SnapshotsInstalled >= 1 && s.State != nil && s.State.Restored != nil
	})
	waitSameState(t, c)
	stale := "http://" + c.procs[follower].http + "/kv/%s?consistency=stale"
	for key, want := range map[string]string{"colour": "green", "k1": "v1", "k39": "v39"} {
		code, out, err := kvTry(http.MethodGet, fmt.Sprintf(stale, key), "")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "%s: %v", key, out)
		require.Equal(t, want, out["value"], key)
	}
	code, _, err = kvTry(http.MethodGet, fmt.Sprintf(stale, "k0"), "")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code)
	c.stopAll()
}
