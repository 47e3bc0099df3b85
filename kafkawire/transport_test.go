package kafkawire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/storage"
)

// wireCluster runs n kraft runtimes (node.Node) over Transports on
// loopback, each with an in-memory log and quorum-state record that
// survive a restart, and optionally snapshots in a directory each.
type wireCluster struct {
	t        *testing.T
	n        int
	addrs    map[kraft.NodeID]string
	nodes    map[kraft.NodeID]*node.Node
	trs      map[kraft.NodeID]*Transport
	dirs     map[kraft.NodeID]string
	snapDirs map[kraft.NodeID]string
	snapshot bool
	versions map[kraft.NodeID]Versions // per node: advertised table (nil: Supported)

	mu      sync.Mutex
	applied map[kraft.NodeID][]string
}

func newWireCluster(t *testing.T, n int, snapshot bool, versions map[kraft.NodeID]Versions) *wireCluster {
	c := &wireCluster{
		t: t, n: n, addrs: map[kraft.NodeID]string{}, nodes: map[kraft.NodeID]*node.Node{},
		trs: map[kraft.NodeID]*Transport{}, dirs: map[kraft.NodeID]string{}, snapDirs: map[kraft.NodeID]string{},
		snapshot: snapshot, versions: versions, applied: map[kraft.NodeID][]string{},
	}
	for i := 1; i <= n; i++ {
		id := kraft.NodeID(i)
		c.dirs[id] = t.TempDir()
		c.snapDirs[id] = t.TempDir()
	}
	for i := 1; i <= n; i++ {
		c.start(kraft.NodeID(i))
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			_ = nd.Close()
		}
	})
	return c
}

func (c *wireCluster) voters() []kraft.ReplicaKey {
	var vs []kraft.ReplicaKey
	for i := 1; i <= c.n; i++ {
		vs = append(vs, kraft.ReplicaKey{ID: kraft.NodeID(i)})
	}
	return vs
}

// start starts node id, on the address it had before if it ran already.
func (c *wireCluster) start(id kraft.NodeID) {
	c.t.Helper()
	listen := c.addrs[id]
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	var tr *Transport
	var err error
	for try := 0; try < 50; try++ { // the old port may linger a moment
		tr, err = NewTransport(TransportConfig{ID: id, Listen: listen, Versions: c.versions[id], Logf: c.t.Logf})
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	c.addrs[id] = tr.Addr().String()
	c.trs[id] = tr
	for other, a := range c.addrs {
		if other != id {
			tr.SetPeer(other, a)
			if o := c.trs[other]; o != nil {
				o.SetPeer(id, c.addrs[id])
			}
		}
	}
	c.mu.Lock()
	c.applied[id] = nil
	c.mu.Unlock()
	cfg := node.Config{Config: replica.Config{Kraft: kraft.Config{
		Local: kraft.ReplicaKey{ID: id}, Voters: c.voters(), Seed: uint64(id) * 7919,
		ElectionTimeout: 150 * time.Millisecond, FetchTimeout: 300 * time.Millisecond, ElectionBackoffMax: 100 * time.Millisecond,
	},
		Records:        node.FileRecords{Path: filepath.Join(c.dirs[id], "quorum-state")},
		RequestTimeout: 300 * time.Millisecond, FetchMaxWait: 50 * time.Millisecond}, Transport: tr,
		Logf: c.t.Logf,
		OnCommit: func(rs []node.Record) {
			c.mu.Lock()
			defer c.mu.Unlock()
			for _, r := range rs {
				c.applied[id] = append(c.applied[id], string(r.Data))
			}
		},
	}
	if c.snapshot {
		snaps, err := storage.OpenSnapshots(c.snapDirs[id])
		if err != nil {
			c.t.Fatal(err)
		}
		cfg.Snapshots = snaps
		cfg.SnapshotEvery = 10
		cfg.SnapshotChunkBytes = 64
		cfg.Snapshot = func(_ kraft.LogEnd, w io.Writer) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			return json.NewEncoder(w).Encode(c.applied[id])
		}
		cfg.Restore = func(_ kraft.LogEnd, r io.Reader) error {
			var s []string
			if err := json.NewDecoder(r).Decode(&s); err != nil {
				return err
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.applied[id] = s
			return nil
		}
	}
	lg, _, err := storage.Open(c.dirs[id], storage.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.Log = lg
	nd, err := node.Start(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id] = nd
}

// stop closes node id (its transport too), as a killed process would be.
func (c *wireCluster) stop(id kraft.NodeID) {
	_ = c.nodes[id].Close()
	delete(c.nodes, id)
	delete(c.trs, id)
}

// leader waits for one node that leads, and no other in a newer epoch.
func (c *wireCluster) leader() (*node.Node, kraft.NodeID) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for id, nd := range c.nodes {
			st, err := nd.Status()
			if err == nil && st.Role == "Leader" {
				return nd, id
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("no leader within 10s")
	return nil, kraft.NoNode
}

// appendCommitted appends data at the leader until one append commits.
func (c *wireCluster) appendCommitted(data string) {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		l, _ := c.leader()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := l.Append(ctx, []byte(data))
		cancel()
		if err == nil {
			return
		}
		if !errors.Is(err, node.ErrLeadershipLost) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, node.ErrNotLeader) {
			c.t.Logf("append %q: %v", data, err)
		}
		if c.contains(data) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("append %q did not commit", data)
}

func (c *wireCluster) contains(data string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range c.applied {
		for _, r := range rs {
			if r == data {
				return true
			}
		}
	}
	return false
}

// waitApplied waits until every running node applied exactly want.
func (c *wireCluster) waitApplied(want []string) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		bad := ""
		for id := range c.nodes {
			if fmt.Sprint(c.applied[id]) != fmt.Sprint(want) {
				bad = fmt.Sprintf("node %d applied %q, want %q", id, c.applied[id], want)
			}
		}
		c.mu.Unlock()
		if bad == "" {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal(bad)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTransportQuorum: three kraft runtimes in Kafka's wire protocol elect
// a leader, commit appends on every node, elect another when the leader is
// killed, and the old leader catches up when it comes back.
func TestTransportQuorum(t *testing.T) {
	c := newWireCluster(t, 3, false, nil)
	var want []string
	for i := 0; i < 20; i++ {
		want = append(want, fmt.Sprintf("a%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	c.waitApplied(want)
	_, old := c.leader()
	c.stop(old)
	for i := 0; i < 10; i++ {
		want = append(want, fmt.Sprintf("b%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	_, now := c.leader()
	if now == old {
		t.Fatalf("node %d still leads after it was stopped", old)
	}
	c.start(old)
	c.waitApplied(want)
	for id, tr := range c.trs {
		if tr.Dropped() > 1000 {
			t.Errorf("node %d's transport dropped %d messages", id, tr.Dropped())
		}
	}
}

// TestTransportSnapshot: a follower stopped while the others snapshot and
// delete their logs comes back, downloads the leader's snapshot with
// FetchSnapshot in 64-byte chunks, installs it and ends with the same
// state.
func TestTransportSnapshot(t *testing.T) {
	c := newWireCluster(t, 3, true, nil)
	var want []string
	for i := 0; i < 5; i++ {
		want = append(want, fmt.Sprintf("a%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	c.waitApplied(want)
	_, l := c.leader()
	lagging := l%3 + 1
	lagSt, err := c.nodes[lagging].Status()
	if err != nil {
		t.Fatal(err)
	}
	c.stop(lagging)
	for i := 0; i < 40; i++ {
		want = append(want, fmt.Sprintf("b%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok := true
		for _, nd := range c.nodes {
			st, err := nd.Status()
			if err != nil || st.LogStart <= lagSt.LogEnd {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the running nodes did not clean their logs past the stopped one's end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.start(lagging)
	deadline = time.Now().Add(10 * time.Second)
	for {
		st, err := c.nodes[lagging].Status()
		if err == nil && st.SnapshotsInstalled >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d installed no snapshot (%+v)", lagging, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	want = append(want, "c")
	c.appendCommitted("c")
	c.waitApplied(want)
}

// TestTransportOlderPeers: replicas of an older Kafka (Vote v1, no
// pre-vote; BeginQuorumEpoch and EndQuorumEpoch v0, no endpoints; Fetch
// v16; FetchSnapshot v0) negotiate those versions. A Prospective's
// pre-vote cannot be sent below Vote v2: the transport answers it with
// UNSUPPORTED_VERSION and the Prospective becomes Candidate (KIP-996), so
// the quorum elects, commits and fails over; without that answer no
// replica would ever be elected.
func TestTransportOlderPeers(t *testing.T) {
	old := Versions{APIVersions: {0, 3}, Vote: {0, 1}, BeginQuorumEpoch: {0, 0}, EndQuorumEpoch: {0, 0},
		Fetch: {12, 16}, FetchSnapshot: {0, 0}, DescribeQuorum: {0, 1}}
	c := newWireCluster(t, 3, false, map[kraft.NodeID]Versions{1: old, 2: old, 3: old})
	var want []string
	for i := 0; i < 5; i++ {
		want = append(want, fmt.Sprintf("a%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	_, l := c.leader()
	if err := c.nodes[l].Resign(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		want = append(want, fmt.Sprintf("b%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	c.waitApplied(want)
}
