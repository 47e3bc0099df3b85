package main

import (
	"encoding/json"
	"fmt"
	kreplica "github.com/kraftquorum/kraft/replica"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// kvReplica is one replica of an in-process cluster: a node on a
// MemNetwork, its machine behind a gate (held: the application is slow)
// and the HTTP API.
type kvReplica struct {
	n    *node.Node
	m    *machine
	gate sync.Mutex
	url  string
}

func startKVCluster(t *testing.T, size int) map[kraft.NodeID]*kvReplica {
	t.Helper()
	net := node.NewMemNetwork()
	var voters []kraft.ReplicaKey
	for i := 1; i <= size; i++ {
		voters = append(voters, kraft.ReplicaKey{ID: kraft.NodeID(i)})
	}
	rs := map[kraft.NodeID]*kvReplica{}
	for _, v := range voters {
		r := &kvReplica{m: &machine{}}
		n, err := node.Start(node.Config{Config: kreplica.Config{Kraft: kraft.Config{Local: v, Voters: voters, Seed: uint64(v.ID) * 7919,
			ElectionTimeout: 100 * time.Millisecond, FetchTimeout: 200 * time.Millisecond, ElectionBackoffMax: 100 * time.Millisecond},
			Log:     storage.NewMemLog(),
			Records: &node.MemRecords{},

			RequestTimeout: 200 * time.Millisecond,
			FetchMaxWait:   50 * time.Millisecond}, Transport: net.Endpoint(v.ID),

			OnCommit: func(recs []node.Record) {
				r.gate.Lock()
				defer r.gate.Unlock()
				r.m.apply(recs)
			},
		})
		require.NoError(t, err)
		r.n = n
		srv := httptest.NewServer(newHandler(n, r.m, node.VoterInfo{ID: v.ID}, 100))
		r.url = srv.URL
		t.Cleanup(func() { srv.Close(); _ = n.Close() })
		rs[v.ID] = r
	}
	return rs
}

// kvLeader waits for a leader other than not.
func kvLeader(t *testing.T, rs map[kraft.NodeID]*kvReplica, not kraft.NodeID) kraft.NodeID {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for id, r := range rs {
			if st, err := r.n.Status(); err == nil && st.Role == "Leader" && id != not {
				return id
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no leader")
	return 0
}

func kvDo(t *testing.T, method, url, body string) (int, map[string]interface{}) {
	t.Helper()
	code, out, err := kvTry(method, url, body)
	require.NoError(t, err)
	return code, out
}

// kvTry is one request: its status code and JSON body.
func kvTry(method, url, body string) (int, map[string]interface{}, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body)) //nolint:noctx // a test against a local server
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var out map[string]interface{}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		return 0, nil, fmt.Errorf("%w: %s", err, b)
	}
	return resp.StatusCode, out, nil
}

// TestKVClusterLinearizableReads, three replicas in one process: writes
// at a follower and linearizable reads at a follower answer 421 naming the
// leader; a stale read at a follower serves its applied map; a write
// acknowledged by one leader is seen by a linearizable read at the next
// one, which waits for its slow application to apply it first.
func TestKVClusterLinearizableReads(t *testing.T) {
	rs := startKVCluster(t, 3)
	l := kvLeader(t, rs, kraft.NoNode)
	var f kraft.NodeID
	for id := range rs {
		if id != l {
			f = id
			break
		}
	}
	code, out := kvDo(t, http.MethodPut, rs[l].url+"/kv/x", "1")
	require.Equal(t, http.StatusOK, code, "%v", out)

	code, out = kvDo(t, http.MethodGet, rs[f].url+"/kv/x", "")
	require.Equal(t, http.StatusMisdirectedRequest, code, "%v", out)
	require.Equal(t, json.Number(kvID(l)), out["leader"])
	code, out = kvDo(t, http.MethodPut, rs[f].url+"/kv/x", "2")
	require.Equal(t, http.StatusMisdirectedRequest, code, "%v", out)
	require.Equal(t, json.Number(kvID(l)), out["leader"])
	require.Eventually(t, func() bool {
		code, out := kvDo(t, http.MethodGet, rs[f].url+"/kv/x?consistency=stale", "")
		return code == http.StatusOK && out["value"] == "1"
	}, 10*time.Second, 10*time.Millisecond, "a stale read at a follower")

	// The followers' applications stall; the leader acknowledges a write
	// and hands leadership over.
	for id, r := range rs {
		if id != l {
			r.gate.Lock()
		}
	}
	held := true
	defer func() {
		if held {
			for id, r := range rs {
				if id != l {
					r.gate.Unlock()
				}
			}
		}
	}()
	code, out = kvDo(t, http.MethodPut, rs[l].url+"/kv/y", "acked")
	require.Equal(t, http.StatusOK, code, "%v", out)
	require.NoError(t, rs[l].n.Resign())
	next := kvLeader(t, rs, l)

	type answer struct {
		code int
		out  map[string]interface{}
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		for {
			code, out, err := kvTry(http.MethodGet, rs[next].url+"/kv/y", "")
			if err != nil || code != http.StatusServiceUnavailable {
				got <- answer{code, out, err}
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	select {
	case a := <-got:
		t.Fatalf("answered %d %v before its replica applied the write", a.code, a.out)
	case <-time.After(300 * time.Millisecond):
	}
	for id, r := range rs {
		if id != l {
			r.gate.Unlock()
		}
	}
	held = false
	a := <-got
	require.NoError(t, a.err)
	require.Equal(t, http.StatusOK, a.code, "%v", a.out)
	require.Equal(t, "acked", a.out["value"])

	// CAS through the cluster: decided by the machine at apply.
	code, out = kvDo(t, http.MethodPost, rs[next].url+"/kv/y/cas", `{"from": "acked", "to": "swapped"}`)
	require.Equal(t, http.StatusOK, code, "%v", out)
	code, out = kvDo(t, http.MethodPost, rs[next].url+"/kv/y/cas", `{"from": "acked", "to": "again"}`)
	require.Equal(t, http.StatusConflict, code, "%v", out)
	require.Equal(t, "swapped", out["value"])
}

func kvID(id kraft.NodeID) string { return fmt.Sprint(int32(id)) }
