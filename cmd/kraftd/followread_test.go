package main

import (
	kreplica "github.com/kraftquorum/kraft/replica"
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

// peerBook is the test's -peer-http: the replicas' HTTP addresses, filled
// in once every server listens, and a switch that hides one (its API
// unreachable from the others).
type peerBook struct {
	mu     sync.Mutex
	addr   map[kraft.NodeID]string
	hidden map[kraft.NodeID]bool
}

func (p *peerBook) lookup(id kraft.NodeID) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.addr[id]
	return a, ok && !p.hidden[id]
}

// startFollowerReadCluster is startKVCluster with -peer-http.
func startFollowerReadCluster(t *testing.T, size int) (map[kraft.NodeID]*kvReplica, *peerBook) {
	t.Helper()
	net := node.NewMemNetwork()
	book := &peerBook{addr: map[kraft.NodeID]string{}, hidden: map[kraft.NodeID]bool{}}
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
		srv := httptest.NewServer(newHandler(n, r.m, node.VoterInfo{ID: v.ID}, 100, withPeerHTTP(book.lookup)))
		r.url = srv.URL
		book.mu.Lock()
		book.addr[v.ID] = strings.TrimPrefix(srv.URL, "http://")
		book.mu.Unlock()
		t.Cleanup(func() { srv.Close(); _ = n.Close() })
		rs[v.ID] = r
	}
	return rs, book
}

// TestFollowerReadReflectsAnAcknowledgedWrite (D152): a linearizable GET
// at a follower, sent after the leader acknowledged a write, answers with
// that write, waiting for the follower's slow application to apply it; it
// never answers the value from before. Without the leader's API the
// follower answers 421 naming the leader.
func TestFollowerReadReflectsAnAcknowledgedWrite(t *testing.T) {
	rs, book := startFollowerReadCluster(t, 3)
	l := kvLeader(t, rs, kraft.NoNode)
	var f kraft.NodeID
	for id := range rs {
		if id != l {
			f = id
			break
		}
	}
	code, out := kvDo(t, http.MethodPut, rs[l].url+"/kv/x", "before")
	require.Equal(t, http.StatusOK, code, "%v", out)
	code, out = kvDo(t, http.MethodGet, rs[f].url+"/kv/x", "")
	require.Equal(t, http.StatusOK, code, "a follower read with the leader reachable: %v", out)
	require.Equal(t, "before", out["value"])

	// The follower's application stalls; the leader acknowledges a write.
	rs[f].gate.Lock()
	held := true
	defer func() {
		if held {
			rs[f].gate.Unlock()
		}
	}()
	code, out = kvDo(t, http.MethodPut, rs[l].url+"/kv/x", "acked")
	require.Equal(t, http.StatusOK, code, "%v", out)
	code, out = kvDo(t, http.MethodGet, rs[f].url+"/kv/x?consistency=stale", "")
	require.Equal(t, http.StatusOK, code, "%v", out)
	require.Equal(t, "before", out["value"], "the follower's application is held")

	type answer struct {
		code int
		out  map[string]interface{}
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		code, out, err := kvTry(http.MethodGet, rs[f].url+"/kv/x", "")
		got <- answer{code, out, err}
	}()
	select {
	case a := <-got:
		t.Fatalf("answered %d %v before the follower applied the acknowledged write", a.code, a.out)
	case <-time.After(300 * time.Millisecond):
	}
	rs[f].gate.Unlock()
	held = false
	a := <-got
	require.NoError(t, a.err)
	require.Equal(t, http.StatusOK, a.code, "%v", a.out)
	require.Equal(t, "acked", a.out["value"], "the follower's read missed a write acknowledged before it was sent")

	// The leader's API unreachable: 421 naming the leader, as before.
	book.mu.Lock()
	book.hidden[l] = true
	book.mu.Unlock()
	code, out = kvDo(t, http.MethodGet, rs[f].url+"/kv/x", "")
	require.Equal(t, http.StatusMisdirectedRequest, code, "%v", out)
	require.Equal(t, kvID(l), out["leader"].(interface{ String() string }).String())

	// GET /readindex: a point at the leader, 421 at a follower.
	code, out = kvDo(t, http.MethodGet, rs[l].url+"/readindex", "")
	require.Equal(t, http.StatusOK, code, "%v", out)
	code, _ = kvDo(t, http.MethodGet, rs[f].url+"/readindex", "")
	require.Equal(t, http.StatusMisdirectedRequest, code)
}

// TestPeerHTTPFlag: -peer-http names the replicas' HTTP addresses, and a
// bad list is refused with the flag's name.
func TestPeerHTTPFlag(t *testing.T) {
	c, err := parseConfig(args("-peer-http", "1@127.0.0.1:8081,3@127.0.0.1:8083"))
	require.NoError(t, err)
	require.Equal(t, map[kraft.NodeID]string{1: "127.0.0.1:8081", 3: "127.0.0.1:8083"}, c.peerHTTP)
	c, err = parseConfig(args())
	require.NoError(t, err)
	require.Nil(t, c.peerHTTP)
	_, err = parseConfig(args("-peer-http", "1@127.0.0.1"))
	require.ErrorContains(t, err, "-peer-http: entry \"1@127.0.0.1\"")
}
