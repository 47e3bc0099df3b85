package node

import (
	"context"
	"errors"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"sync"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// testCluster runs n voters over an in-memory network, each with an
// in-memory log and record store that survive a restart of the node.
type testCluster struct {
	t       *testing.T
	net     *MemNetwork
	voters  []kraft.ReplicaKey
	nodes   map[kraft.NodeID]*Node
	logs    map[kraft.NodeID]*storage.MemLog
	records map[kraft.NodeID]*MemRecords

	mu        sync.Mutex
	committed map[kraft.NodeID][]Record

	// With snapshots (newSnapshotCluster): each node's snapshot directory
	// and the state machine of its current life.
	snap     *snapOpts
	snapDirs map[kraft.NodeID]string
	sms      map[kraft.NodeID]*testSM

	// With a dynamic voter set (newDynamicCluster): the bootstrap voters;
	// the other replicas start as observers.
	dynamic  bool
	boot     []Voter
	autoJoin bool // observers ask to join (kraft.Config.AutoJoin)
	// disks counts each replica's disk losses (wipe): its directory id
	// changes with each.
	disks map[kraft.NodeID]byte
	// tune, if set, changes each node's Config before it starts.
	tune func(cfg *Config)
}

func newTestCluster(t *testing.T, n int) *testCluster { return newCluster(t, n, nil) }

func newCluster(t *testing.T, n int, snap *snapOpts) *testCluster {
	return newTunedCluster(t, n, snap, nil)
}

// newTunedCluster is newCluster with tune applied to every node's Config.
func newTunedCluster(t *testing.T, n int, snap *snapOpts, tune func(cfg *Config)) *testCluster {
	c := &testCluster{
		t: t, net: NewMemNetwork(),
		nodes: map[kraft.NodeID]*Node{}, logs: map[kraft.NodeID]*storage.MemLog{},
		records: map[kraft.NodeID]*MemRecords{}, committed: map[kraft.NodeID][]Record{},
		snap: snap, snapDirs: map[kraft.NodeID]string{}, sms: map[kraft.NodeID]*testSM{},
		tune: tune,
	}
	for i := 1; i <= n; i++ {
		c.voters = append(c.voters, kraft.ReplicaKey{ID: kraft.NodeID(i)})
	}
	for _, v := range c.voters {
		c.logs[v.ID] = storage.NewMemLog()
		c.records[v.ID] = &MemRecords{}
		c.snapDirs[v.ID] = t.TempDir()
		c.start(v.ID)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			_ = nd.Close()
		}
	})
	return c
}

// fastKraft is a kraft.Config with short timeouts, so tests run in
// fractions of a second.
func (c *testCluster) kraftConfig(id kraft.NodeID) kraft.Config {
	if c.dynamic {
		return kraft.Config{
			Local: c.key(id), Observer: kraft.VoterByID(keysOf(c.boot), id) < 0, Seed: uint64(id) * 7919, AutoJoin: c.autoJoin,
			ElectionTimeout: 100 * time.Millisecond, FetchTimeout: 200 * time.Millisecond, ElectionBackoffMax: 100 * time.Millisecond,
		}
	}
	return kraft.Config{
		Local: kraft.ReplicaKey{ID: id}, Voters: c.voters, Seed: uint64(id) * 7919,
		ElectionTimeout: 100 * time.Millisecond, FetchTimeout: 200 * time.Millisecond, ElectionBackoffMax: 100 * time.Millisecond,
	}
}

func (c *testCluster) start(id kraft.NodeID) {
	c.t.Helper()
	c.mu.Lock()
	c.committed[id] = nil
	c.mu.Unlock()
	cfg := Config{Config: replica.Config{Kraft: c.kraftConfig(id),
		Log:     c.logs[id],
		Records: c.records[id],

		RequestTimeout: 200 * time.Millisecond,
		FetchMaxWait:   50 * time.Millisecond}, Transport: c.net.Endpoint(id),

		OnCommit: func(rs []Record) {
			c.mu.Lock()
			c.committed[id] = append(c.committed[id], rs...)
			c.mu.Unlock()
		},
	}
	if c.snap != nil {
		c.configureSnapshots(id, &cfg)
	}
	if c.dynamic {
		if kraft.VoterByID(keysOf(c.boot), id) >= 0 {
			cfg.InitialVoters = c.boot
		}
		for _, v := range c.boot {
			cfg.BootstrapServers = append(cfg.BootstrapServers, v.Key.ID)
		}
		cfg.Endpoint = dynEndpoint(id)
	}
	if c.tune != nil {
		c.tune(&cfg)
	}
	nd, err := Start(cfg)
	require.NoError(c.t, err)
	c.nodes[id] = nd
}

// crash stops a node as kill -9 would: what was not synced is lost.
func (c *testCluster) crash(id kraft.NodeID) {
	nd := c.nodes[id]
	nd.stopOnce.Do(func() { close(nd.stop) })
	<-nd.done
	nd.commitMu.Lock()
	nd.commitHWM = stopApplier
	nd.commitCond.Broadcast()
	nd.commitMu.Unlock()
	<-nd.applierOut
	_ = nd.cfg.Transport.Close()
	if nd.cfg.Snapshots != nil {
		_ = nd.cfg.Snapshots.Close() // a partial download stays behind, as after a crash
	}
	c.logs[id].Crash()
	delete(c.nodes, id)
}

// leader waits for a node that leads and returns it.
func (c *testCluster) leader() *Node {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, nd := range c.nodes {
			st, err := nd.Status()
			if err == nil && st.Role == "Leader" {
				return nd
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("no leader within 5s")
	return nil
}

// appendCommitted appends at the leader, retrying on leadership changes,
// and returns the record's offset once committed. It appends the record
// once: an append whose outcome is unknown (leadership lost, or no answer
// in time: the record may still commit under the next leader) is retried
// only after the committed log shows the record did not make it.
func (c *testCluster) appendCommitted(data string) int64 {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		l := c.leader()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		off, err := l.Append(ctx, []byte(data))
		cancel()
		if err == nil {
			return off
		}
		if errors.Is(err, ErrLeadershipLost) || errors.Is(err, context.DeadlineExceeded) {
			if c.committedAt(off, data) {
				return off
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("append %q did not commit within 10s", data)
	return -1
}

// committedAt waits until a leader has committed offset off and reports
// whether the record there is data (the final word: a committed record
// never changes).
func (c *testCluster) committedAt(off int64, data string) bool {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		l := c.leader()
		st, err := l.Status()
		if err != nil || st.HighWatermark <= off {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		es, err := c.logs[l.local.ID].Read(off, 1)
		if err == nil && len(es) > 0 && es[0].Offset == off {
			return string(es[0].Data) == string(recordData)+data
		}
		// Below the log start: the leader's OnCommit saw it, if it was data
		// (OnCommit records of this life only).
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, r := range c.committed[l.local.ID] {
			if r.Offset == off {
				return string(r.Data) == data
			}
		}
		return false
	}
	c.t.Fatalf("offset %d not committed within 10s", off)
	return false
}

func (c *testCluster) waitCommitted(id kraft.NodeID, n int) []Record {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		got := append([]Record(nil), c.committed[id]...)
		c.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNodeElectsReplicatesAndCommits: three nodes elect a leader; appends
// at the leader commit and reach every node's OnCommit, in order.
func TestNodeElectsReplicatesAndCommits(t *testing.T) {
	c := newTestCluster(t, 3)
	var offs []int64
	for i := 0; i < 20; i++ {
		offs = append(offs, c.appendCommitted(fmt.Sprintf("r%d", i)))
	}
	for i := 1; i < len(offs); i++ {
		require.Greater(t, offs[i], offs[i-1])
	}
	for _, v := range c.voters {
		got := c.waitCommitted(v.ID, 20)
		require.Len(t, got, 20, "node %d", v.ID)
		for i, r := range got {
			require.Equal(t, fmt.Sprintf("r%d", i), string(r.Data), "node %d record %d", v.ID, i)
		}
	}
	l := c.leader()
	st, err := l.Status()
	require.NoError(t, err)
	require.Len(t, st.Voters, 3)
	require.GreaterOrEqual(t, st.HighWatermark, offs[len(offs)-1]+1)
}

// TestNodeAppendOnFollowerNamesTheLeader: a follower refuses appends with
// a NotLeaderError naming the leader.
func TestNodeAppendOnFollowerNamesTheLeader(t *testing.T) {
	c := newTestCluster(t, 3)
	c.appendCommitted("x")
	l := c.leader()
	for id, nd := range c.nodes {
		if nd == l {
			continue
		}
		_, err := nd.Append(context.Background(), []byte("y"))
		require.ErrorIs(t, err, ErrNotLeader, "node %d", id)
		var nl *NotLeaderError
		require.ErrorAs(t, err, &nl)
		require.Equal(t, l.local.ID, nl.Leader)
	}
}

// TestNodeFailoverKeepsCommittedRecords: the leader crashes (losing its
// unflushed tail), the others elect a new one, appends go on, and the old
// leader restarts and catches up; every committed record is on every node.
func TestNodeFailoverKeepsCommittedRecords(t *testing.T) {
	c := newTestCluster(t, 3)
	for i := 0; i < 10; i++ {
		c.appendCommitted(fmt.Sprintf("a%d", i))
	}
	old := c.leader().local.ID
	c.crash(old)
	for i := 0; i < 10; i++ {
		c.appendCommitted(fmt.Sprintf("b%d", i))
	}
	require.NotEqual(t, old, c.leader().local.ID)
	c.start(old)
	for i := 0; i < 5; i++ {
		c.appendCommitted(fmt.Sprintf("c%d", i))
	}
	want := c.waitCommitted(c.leader().local.ID, 25)
	require.Len(t, want, 25)
	for _, v := range c.voters {
		got := c.waitCommitted(v.ID, 25)
		require.Equal(t, want, got, "node %d", v.ID)
	}
}

// TestNodeShutdownHandsLeadershipOver: a leader's graceful shutdown makes
// another node leader before it returns (D27), and says which.
func TestNodeShutdownHandsLeadershipOver(t *testing.T) {
	c := newTestCluster(t, 3)
	c.appendCommitted("x")
	l := c.leader()
	id := l.local.ID
	st, err := l.Status()
	require.NoError(t, err)
	epoch := st.Epoch
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := l.Shutdown(ctx)
	require.NoError(t, err)
	delete(c.nodes, id)
	require.NoError(t, ctx.Err(), "shutdown waited for its timeout: no successor")
	require.True(t, h.HandedOver(), "%+v", h)
	require.Greater(t, h.Epoch, epoch)
	next := c.leader()
	require.NotEqual(t, id, next.local.ID)
	require.Equal(t, next.local.ID, h.Successor)

	// A follower's shutdown hands nothing over.
	for fid, nd := range c.nodes {
		h, err := nd.Shutdown(context.Background())
		require.NoError(t, err)
		if fid != next.local.ID {
			require.False(t, h.WasLeader)
		}
		delete(c.nodes, fid)
		break
	}
}

// shutdownReturns runs Shutdown(context.Background()) and fails the test
// if it has not returned within a minute (it must end on its own).
func shutdownReturns(t *testing.T, nd *Node) Handover {
	t.Helper()
	type result struct {
		h   Handover
		err error
	}
	ch := make(chan result, 1)
	go func() {
		h, err := nd.Shutdown(context.Background())
		ch <- result{h, err}
	}()
	select {
	case r := <-ch:
		require.NoError(t, r.err)
		return r.h
	case <-time.After(time.Minute):
		t.Fatal("Shutdown(context.Background()) did not return")
		return Handover{}
	}
}

// TestNodeShutdownEndsWithoutASuccessor: Shutdown with no deadline ends
// when no handover can happen: at once for the only voter, and after the
// handover bound for a leader whose followers are gone. Neither reports a
// handover.
func TestNodeShutdownEndsWithoutASuccessor(t *testing.T) {
	c := newTestCluster(t, 1)
	c.appendCommitted("x")
	h := shutdownReturns(t, c.nodes[1])
	delete(c.nodes, 1)
	require.True(t, h.WasLeader)
	require.False(t, h.HandedOver(), "%+v", h)

	c = newTestCluster(t, 3)
	c.appendCommitted("x")
	l := c.leader()
	for id := range c.nodes {
		if id != l.local.ID {
			c.crash(id)
		}
	}
	h = shutdownReturns(t, l)
	require.True(t, h.WasLeader)
	require.False(t, h.HandedOver(), "%+v", h)
	require.Equal(t, kraft.NoNode, h.Successor)
}

// TestNodeDropsStaleTimersAndResponses: a tick before the fetch timer's
// deadline and a response that answers no request in flight change
// nothing; a tick past the deadline fires it.
func TestNodeDropsStaleTimersAndResponses(t *testing.T) {
	c := newTestCluster(t, 3)
	c.appendCommitted("x")
	l := c.leader()
	var follower *Node
	for _, nd := range c.nodes {
		if nd != l {
			follower = nd
		}
	}
	require.NoError(t, follower.call(func() {
		before := follower.r.State()
		now := follower.clock()
		follower.r.Tick(now)
		require.Equal(t, before, follower.r.State(), "a fetch timeout was delivered before its deadline")
		follower.r.Receive(now, Message{
			From: l.local.ID, To: follower.local.ID, Corr: 1 << 40, Response: true,
			Event: kraft.ReceiveFetchResponse{From: l.local.ID, LeaderID: kraft.NoNode, LeaderEpoch: before.Epoch() + 5, HighWatermark: -1},
		})
		require.Equal(t, before, follower.r.State(), "a response to no request in flight was stepped")
		// T_f passes; a follower that ranks after another survivor then
		// waits its rank's offset, at most 2 T_e/64 (D78), and campaigns
		// well before its election timer (T_e, 100 ms) could end the round.
		follower.r.Tick(now + time.Minute)
		follower.r.Tick(now + time.Minute + 10*time.Millisecond)
		require.Equal(t, kraft.Prospective, follower.r.State().Role(), "the fetch timer must fire")
		follower.carry()
	}))
}

// TestNodeParksCaughtUpFetches: a leader holds a caught-up follower's
// Fetch for FetchMaxWait (long poll) instead of answering at once, so an
// idle cluster exchanges a Fetch and its answer per follower per wait,
// and answers a parked Fetch as soon as there is news: with a wait far
// longer than any test, an append commits without a parked Fetch ever
// being answered on its timer.
func TestNodeParksCaughtUpFetches(t *testing.T) {
	// Idle: count the messages per long poll, not per second, over 20 long
	// polls of one leader in one epoch (under load an election may come
	// between: count again).
	c := newTestCluster(t, 3)
	c.appendCommitted("x")
	var l *Node
	polls := func() (n int) {
		require.NoError(t, l.call(func() { n = l.r.LongPolls() }))
		return n
	}
	counted := false
	for attempt := 0; attempt < 5 && !counted; attempt++ {
		l = c.leader()
		st, err := l.Status()
		require.NoError(t, err)
		startPolls, before := polls(), c.net.Delivered()
		deadline := time.Now().Add(10 * time.Second)
		for polls() < startPolls+20 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		n, k := c.net.Delivered()-before, polls()-startPolls
		now, err := l.Status()
		require.NoError(t, err)
		if now.Role != "Leader" || now.Epoch != st.Epoch {
			continue
		}
		require.GreaterOrEqual(t, k, 20, "followers stopped fetching, or their Fetches are not parked")
		// A Fetch and its answer per long poll, a few in flight at either
		// end of the count, and under load the odd retry or
		// BeginQuorumEpoch: a few messages per long poll, where a
		// follower answered at once would send hundreds.
		require.LessOrEqual(t, n, uint64(4*k+16), "idle cluster delivered %d messages over %d long polls", n, k)
		counted = true
	}
	require.True(t, counted, "no leader kept its epoch over 20 long polls")

	// News: the parked Fetches are answered at once, not on their timer.
	c = newTunedCluster(t, 3, nil, func(cfg *Config) {
		cfg.Kraft.FetchTimeout = time.Minute
		cfg.Kraft.ElectionTimeout = 100 * time.Millisecond
		cfg.FetchMaxWait = 30 * time.Second
		cfg.RequestTimeout = time.Minute
	})
	c.appendCommitted("x")
	l = c.leader()
	c.waitStatus(l.local.ID, "both followers parked", func(Status) bool {
		var parked int
		require.NoError(t, l.call(func() { parked = l.r.Parked() }))
		return parked == 2
	})
	c.appendCommitted("y")
	require.Zero(t, polls(), "a parked Fetch was answered on its timer")
}

// TestNodePartitionedLeaderStepsDownAndRejoins: a leader cut off from the
// others resigns after check-quorum; the others elect a new leader and go
// on committing; after healing, the old leader follows and catches up.
func TestNodePartitionedLeaderStepsDownAndRejoins(t *testing.T) {
	c := newTestCluster(t, 3)
	c.appendCommitted("a")
	old := c.leader()
	c.net.Isolate(old.local.ID)
	// The majority side elects a leader and commits; under load an
	// election may come between (the append's outcome is then open, and
	// it goes again at the leader of the moment).
	deadline := time.Now().Add(10 * time.Second)
	committed := false
	for !committed && time.Now().Before(deadline) {
		var next *Node
		for _, nd := range c.nodes {
			if st, _ := nd.Status(); nd != old && st.Role == "Leader" {
				next = nd
			}
		}
		if next == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := next.Append(ctx, []byte("b"))
		cancel()
		committed = err == nil
	}
	require.True(t, committed, "the majority side did not commit within 10s")
	c.net.Heal()
	c.appendCommitted("c")
	for _, v := range c.voters {
		got := c.waitCommitted(v.ID, 3)
		require.Len(t, got, 3, "node %d", v.ID)
		require.Equal(t, "abc", string(got[0].Data)+string(got[1].Data)+string(got[2].Data), "node %d", v.ID)
	}
}
