package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// Dynamic voter sets (KIP-853) in the runtime.

// dynKey is replica id's key in a dynamic cluster: voters need a
// directory id.
func dynKey(id kraft.NodeID) kraft.ReplicaKey {
	return kraft.ReplicaKey{ID: id, DirectoryID: uuid.UUID{0xd1, byte(id), 15: 1}}
}

// key is replica id's key in a dynamic cluster with the directory id of its
// current disk: dynKey until a wipe.
func (c *testCluster) key(id kraft.NodeID) kraft.ReplicaKey {
	k := dynKey(id)
	k.DirectoryID[14] = c.disks[id]
	return k
}

// wipe crashes replica id and gives it an empty disk: no log, no
// quorum-state record, no snapshots, a new directory id. It is not
// started again.
func (c *testCluster) wipe(id kraft.NodeID) {
	c.crash(id)
	if c.disks == nil {
		c.disks = map[kraft.NodeID]byte{}
	}
	c.disks[id]++
	c.logs[id] = storage.NewMemLog()
	c.records[id] = &MemRecords{}
	c.snapDirs[id] = c.t.TempDir()
}

func dynEndpoint(id kraft.NodeID) string { return fmt.Sprintf("mem-%d", id) }

// newDynamicCluster starts replicas 1..running of n (more start with
// c.start): replicas 1..boot are the bootstrap voter set, the others
// observers that know replica 1.. boot as bootstrap servers.
func newDynamicCluster(t *testing.T, n, boot, running int, snap *snapOpts) *testCluster {
	c := &testCluster{
		t: t, net: NewMemNetwork(),
		nodes: map[kraft.NodeID]*Node{}, logs: map[kraft.NodeID]*storage.MemLog{},
		records: map[kraft.NodeID]*MemRecords{}, committed: map[kraft.NodeID][]Record{},
		snap: snap, snapDirs: map[kraft.NodeID]string{}, sms: map[kraft.NodeID]*testSM{},
		dynamic: true,
	}
	for i := 1; i <= n; i++ {
		id := kraft.NodeID(i)
		c.voters = append(c.voters, dynKey(id))
		if i <= boot {
			c.boot = append(c.boot, Voter{Key: dynKey(id), Endpoint: dynEndpoint(id), KRaftVersions: supportedKRaftVersions})
		}
		c.logs[id] = storage.NewMemLog()
		c.records[id] = &MemRecords{}
		c.snapDirs[id] = t.TempDir()
	}
	for i := 1; i <= running; i++ {
		c.start(kraft.NodeID(i))
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			_ = nd.Close()
		}
	})
	return c
}

// waitVoters waits until node id has the voter set ids in force, with
// kraft.version 1 and every voter's endpoint.
func (c *testCluster) waitVoters(id kraft.NodeID, ids ...kraft.NodeID) Status {
	c.t.Helper()
	return c.waitStatus(id, fmt.Sprintf("voters %v", ids), func(st Status) bool {
		if st.KRaftVersion != 1 || len(st.VoterSet) != len(ids) {
			return false
		}
		for i, v := range st.VoterSet {
			if v.ID != ids[i] || v.DirectoryID != dynKey(v.ID).DirectoryID || v.Endpoint != dynEndpoint(v.ID) {
				return false
			}
		}
		return true
	})
}

// voterChange runs f until it succeeds, as a client would: the leader
// refuses a change while the previous one is not committed in its epoch
// (REQUEST_TIMED_OUT), and a leader change fails it (NOT_LEADER, or no
// answer in time) with an unknown outcome: the change may still commit, so
// a later DUPLICATE_VOTER or VOTER_NOT_FOUND means it did. f should ask
// the current leader (c.leader()).
func voterChange(t *testing.T, what string, f func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	unknown := false
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := f(ctx)
		cancel()
		if err == nil {
			return
		}
		var vc *VoterChangeError
		var nl *NotLeaderError
		switch {
		case errors.As(err, &vc) && vc.Code == kraft.ErrRequestTimedOut:
		case errors.As(err, &nl) || errors.Is(err, context.DeadlineExceeded):
			unknown = true
		case unknown && errors.As(err, &vc) && (vc.Code == kraft.ErrDuplicateVoter || vc.Code == kraft.ErrVoterNotFound):
			return // made by the earlier attempt
		default:
			t.Fatalf("%s: %v", what, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// voterChangeFails runs f until it fails with code (it is retried while
// the previous change is not committed, REQUEST_TIMED_OUT, and after a
// leader change).
func voterChangeFails(t *testing.T, code kraft.ErrorCode, f func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := f(context.Background())
		var vc *VoterChangeError
		var nl *NotLeaderError
		if !errors.As(err, &nl) {
			require.ErrorAs(t, err, &vc)
			if vc.Code == code {
				return
			}
			require.Equal(t, kraft.ErrRequestTimedOut, vc.Code, "%v", err)
		}
		require.True(t, time.Now().Before(deadline), "still %v", err)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNodeVotersGrowFromOneToThree: a quorum bootstrapped with one voter
// grows to three with AddVoter for two observers; every replica sees the
// set with its endpoints, kraft.version 1, and commits the records; a
// second AddVoter of a voter is DUPLICATE_VOTER; a follower refuses voter
// changes and names the leader.
func TestNodeVotersGrowFromOneToThree(t *testing.T) {
	c := newDynamicCluster(t, 3, 1, 3, nil)
	l := c.leader()
	require.Equal(t, kraft.NodeID(1), l.local.ID)
	c.appendCommitted("a")
	c.waitVoters(2, 1)
	st := c.waitVoters(3, 1)
	require.Equal(t, "Follower", st.Role, "an observer follows the leader it found through the bootstrap servers")

	voterChange(t, "add 2", func(ctx context.Context) error { return c.leader().AddVoter(ctx, dynKey(2), dynEndpoint(2)) })
	voterChange(t, "add 3", func(ctx context.Context) error { return c.leader().AddVoter(ctx, dynKey(3), dynEndpoint(3)) })
	for _, id := range []kraft.NodeID{1, 2, 3} {
		c.waitVoters(id, 1, 2, 3)
	}
	c.waitStatus(c.leader().local.ID, "the leader tracks three voters", func(st Status) bool { return len(st.Voters) == 3 })

	c.appendCommitted("b")
	for _, id := range []kraft.NodeID{1, 2, 3} {
		got := c.waitCommitted(id, 2)
		require.Len(t, got, 2, "node %d", id)
		require.Equal(t, "ab", string(got[0].Data)+string(got[1].Data))
	}

	voterChangeFails(t, kraft.ErrDuplicateVoter, func(ctx context.Context) error { return c.leader().AddVoter(ctx, dynKey(2), dynEndpoint(2)) })
	// A follower refuses, naming the leader (asked again if the leader
	// changed in between).
	require.Eventually(t, func() bool {
		l := c.leader()
		err := c.nodes[l.local.ID%3+1].AddVoter(context.Background(), dynKey(4), "mem-4")
		var nl *NotLeaderError
		require.ErrorAs(t, err, &nl)
		return nl.Leader == l.local.ID
	}, 5*time.Second, 10*time.Millisecond, "a follower names the leader")

	// UpdateVoter records a new endpoint, answered once written.
	voterChange(t, "update 3", func(ctx context.Context) error { return c.leader().UpdateVoter(ctx, dynKey(3), "mem-3-new") })
	c.waitStatus(2, "the new endpoint", func(st Status) bool {
		return len(st.VoterSet) == 3 && st.VoterSet[2].Endpoint == "mem-3-new"
	})
	voterChangeFails(t, kraft.ErrVoterNotFound, func(ctx context.Context) error { return c.leader().UpdateVoter(ctx, dynKey(4), "x") })

	// With three voters, one may be down.
	c.crash(3)
	c.appendCommitted("c")
}

// TestNodeVotersAutoJoin: observers with AutoJoin ask the leader to add
// them (their AddRaftVoter requests travel with their endpoints) until the
// quorum holds every replica.
func TestNodeVotersAutoJoin(t *testing.T) {
	c := newDynamicCluster(t, 3, 1, 0, nil)
	c.autoJoin = true
	for _, id := range []kraft.NodeID{1, 2, 3} {
		c.start(id)
	}
	for _, id := range []kraft.NodeID{1, 2, 3} {
		c.waitStatus(id, "three voters", func(st Status) bool {
			if len(st.VoterSet) != 3 {
				return false
			}
			for _, v := range st.VoterSet {
				if v.DirectoryID != dynKey(v.ID).DirectoryID || v.Endpoint != dynEndpoint(v.ID) {
					return false
				}
			}
			return true
		})
	}
	c.appendCommitted("a")
	for _, id := range []kraft.NodeID{1, 2, 3} {
		require.Len(t, c.waitCommitted(id, 1), 1, "node %d", id)
	}
}

// TestNodeVotersAutoJoinReplacesAWipedVoter: a voter that lost its disk
// comes back as an observer with a new directory id; with AutoJoin it asks
// the leader to remove its old key (a RemoveRaftVoter, which carries no
// endpoint) and to add the new one, over the in-memory network, which
// encodes every message as TCP does. Every replica then has the new key in
// its voter set, and the replaced voter commits records again.
func TestNodeVotersAutoJoinReplacesAWipedVoter(t *testing.T) {
	c := newDynamicCluster(t, 3, 1, 0, nil)
	c.autoJoin = true
	for _, id := range []kraft.NodeID{1, 2, 3} {
		c.start(id)
	}
	voters := func(want kraft.ReplicaKey) func(st Status) bool {
		return func(st Status) bool {
			if len(st.VoterSet) != 3 {
				return false
			}
			for _, v := range st.VoterSet {
				k := c.key(v.ID)
				if v.ID == want.ID {
					k = want
				}
				if v.DirectoryID != k.DirectoryID || v.Endpoint != dynEndpoint(v.ID) {
					return false
				}
			}
			return true
		}
	}
	for _, id := range []kraft.NodeID{1, 2, 3} {
		c.waitStatus(id, "three voters", voters(c.key(3)))
	}
	c.appendCommitted("a")
	if c.leader().local.ID == 3 {
		require.NoError(t, c.nodes[3].Resign())
		c.waitStatus(3, "another leader", func(st Status) bool { return st.Leader != 3 && st.Leader != kraft.NoNode })
	}
	old := c.key(3)
	c.wipe(3)
	require.NotEqual(t, old, c.key(3))
	c.start(3)
	for _, id := range []kraft.NodeID{1, 2, 3} {
		c.waitStatus(id, "voter 3 replaced by its new key", voters(c.key(3)))
	}
	c.appendCommitted("b")
	got := c.waitCommitted(3, 2)
	require.Len(t, got, 2)
	require.Equal(t, "ab", string(got[0].Data)+string(got[1].Data))
}

// TestNodeVotersRemoveAndLeaderLeaves: a voter is removed (a second
// removal is VOTER_NOT_FOUND), then the leader removes itself: once the
// removal commits it resigns, another voter leads, and the old leader
// follows it as an observer.
func TestNodeVotersRemoveAndLeaderLeaves(t *testing.T) {
	c := newDynamicCluster(t, 4, 1, 4, nil)
	c.leader()
	c.appendCommitted("a")
	for _, id := range []kraft.NodeID{2, 3, 4} {
		id := id
		voterChange(t, fmt.Sprintf("add %d", id), func(ctx context.Context) error { return c.leader().AddVoter(ctx, dynKey(id), dynEndpoint(id)) })
	}
	voterChange(t, "remove 4", func(ctx context.Context) error { return c.leader().RemoveVoter(ctx, dynKey(4)) })
	for _, id := range []kraft.NodeID{1, 2, 3, 4} {
		c.waitVoters(id, 1, 2, 3)
	}
	voterChangeFails(t, kraft.ErrVoterNotFound, func(ctx context.Context) error { return c.leader().RemoveVoter(ctx, dynKey(4)) })
	c.waitStatus(4, "an observer", func(st Status) bool { return st.Role == "Follower" })

	voterChange(t, "remove 1", func(ctx context.Context) error { return c.leader().RemoveVoter(ctx, dynKey(1)) })
	deadline := time.Now().Add(5 * time.Second)
	var next *Node
	for next == nil && time.Now().Before(deadline) {
		for id, nd := range c.nodes {
			if st, err := nd.Status(); err == nil && st.Role == "Leader" && id != 1 {
				next = nd
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NotNil(t, next, "no other voter took over")
	for _, id := range []kraft.NodeID{1, 2, 3, 4} {
		c.waitVoters(id, 2, 3)
	}
	c.appendCommitted("b")
	for _, id := range []kraft.NodeID{1, 2, 3, 4} {
		got := c.waitCommitted(id, 2)
		require.Len(t, got, 2, "node %d", id)
	}
	st := c.waitStatus(1, "following", func(st Status) bool { return st.Role == "Follower" })
	require.Equal(t, next.local.ID, st.Leader)
}

// TestNodeVotersRestartFromTheLog: a replica added as a voter restarts
// cut off from the others and finds the voter set in its log (the leader's
// start-of-epoch VotersRecord and the one that added it), so it campaigns
// as a voter; a bootstrap voter restarts from its log the same way.
func TestNodeVotersRestartFromTheLog(t *testing.T) {
	c := newDynamicCluster(t, 2, 1, 2, nil)
	c.leader()
	voterChange(t, "add 2", func(ctx context.Context) error { return c.leader().AddVoter(ctx, dynKey(2), dynEndpoint(2)) })
	c.appendCommitted("a")
	c.waitVoters(2, 1, 2)

	c.crash(2)
	c.net.Down(2)
	c.start(2)
	st := c.waitVoters(2, 1, 2)
	require.Contains(t, []string{"Unattached", "Prospective", "Follower"}, st.Role)
	nd := c.nodes[2]
	require.NoError(t, nd.call(func() {
		require.True(t, nd.st.IsVoter())
		sets := nd.st.VoterSets()
		require.Len(t, sets, 2, "%v", sets)
		require.Equal(t, int64(2), sets[0].Offset, "the leader's start-of-epoch VotersRecord, after its LeaderChange and KRaftVersion records (D155)")
		require.Equal(t, []kraft.ReplicaKey{dynKey(1), dynKey(2)}, sets[1].Voters)
	}))
	c.waitStatus(2, "campaigning", func(st Status) bool { return st.Role == "Prospective" || st.Role == "Candidate" })
	c.net.Up(2)
	// The leader alone is no majority of {1, 2}: it may have resigned
	// (check-quorum); appendCommitted appends at whichever replica leads.
	c.appendCommitted("b")
	got := c.waitCommitted(2, 2)
	require.Equal(t, "ab", string(got[0].Data)+string(got[1].Data))

	leader := c.leader().local.ID
	c.crash(leader)
	c.start(leader)
	c.waitVoters(leader, 1, 2)
	off := c.appendCommitted("c")
	for _, id := range []kraft.NodeID{1, 2} {
		deadline := time.Now().Add(5 * time.Second)
		for {
			got = c.waitCommitted(id, 3)
			if got[len(got)-1].Offset == off || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		require.Equal(t, "c", string(got[len(got)-1].Data), "node %d", id)
	}
}

// TestNodeVotersSnapshotCarriesTheSet: a one-voter quorum snapshots and
// deletes its log; a new replica catches up by installing the snapshot,
// which holds the voter set (it is no longer in any log), and is added; a
// restart of the leader finds the set in its snapshot.
func TestNodeVotersSnapshotCarriesTheSet(t *testing.T) {
	c := newDynamicCluster(t, 2, 1, 1, &snapOpts{every: 5, chunk: 64})
	var want []string
	for i := 0; i < 12; i++ {
		want = append(want, fmt.Sprintf("a%d", i))
		c.appendCommitted(want[i])
	}
	c.waitStatus(1, "the log cleaned", func(st Status) bool { return st.LogStart > 2 })

	c.start(2)
	st := c.waitStatus(2, "an installed snapshot", func(st Status) bool { return st.SnapshotsInstalled >= 1 })
	require.Len(t, st.VoterSet, 1)
	c.waitApplied(2, want)
	nd := c.nodes[2]
	require.NoError(t, nd.call(func() {
		sets := nd.st.VoterSets()
		require.Len(t, sets, 1, "%v", sets)
		// Offset 1 holds the leader's VotersRecord, deleted behind its
		// snapshots: the set at a snapshot's end comes from the snapshot.
		require.Greater(t, sets[0].Offset, int64(1), "%v", sets)
	}))

	c.leader()
	voterChange(t, "add 2", func(ctx context.Context) error { return c.leader().AddVoter(ctx, dynKey(2), dynEndpoint(2)) })
	c.waitVoters(2, 1, 2)
	want = append(want, "b")
	c.appendCommitted("b")
	c.waitApplied(2, want)

	// Past the next snapshots, the leader restarts from its snapshot.
	for i := 0; i < 10; i++ {
		want = append(want, fmt.Sprintf("c%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	c.waitStatus(1, "a snapshot past the VotersRecord", func(st Status) bool { return st.LogStart > 14 })
	c.crash(1)
	c.start(1)
	c.waitVoters(1, 1, 2)
	c.waitApplied(1, want)
	_, _, _, errs := c.sm(1).view()
	require.Empty(t, errs)
}

// TestNodeVotersBootstrapCheckpoint: InitialVoters are written to the
// bootstrap checkpoint at the first start, read back at a restart without
// them, and refused when they differ or the log already holds records.
func TestNodeVotersBootstrapCheckpoint(t *testing.T) {
	dir := t.TempDir()
	path := storage.BootstrapPath(dir)
	boot := []Voter{{Key: dynKey(1), Endpoint: "127.0.0.1:1", KRaftVersions: supportedKRaftVersions}}
	lg := storage.NewMemLog()
	cfg := Config{Config: replica.Config{Log: lg}, InitialVoters: boot, BootstrapPath: path}
	got, err := bootstrapVoters(cfg)
	require.NoError(t, err)
	require.Equal(t, boot, got)
	_, err = os.Stat(path)
	require.NoError(t, err)

	cfg.InitialVoters = nil
	got, err = bootstrapVoters(cfg)
	require.NoError(t, err)
	require.Equal(t, boot, got, "read back without InitialVoters")

	cfg.InitialVoters = []Voter{{Key: dynKey(2)}}
	_, err = bootstrapVoters(cfg)
	require.Error(t, err, "other InitialVoters")

	_, err = lg.Append(1, []byte{recordData})
	require.NoError(t, err)
	cfg.BootstrapPath = filepath.Join(dir, "other")
	cfg.InitialVoters = boot
	_, err = bootstrapVoters(cfg)
	require.Error(t, err, "a log with records")
}

// TestVotersEncoding: voter sets and the snapshot header round-trip, and
// a snapshot without a voter set reads as the application's bytes.
func TestVotersEncoding(t *testing.T) {
	vs := []Voter{
		{Key: dynKey(1), Endpoint: "127.0.0.1:9091", KRaftVersions: kraft.VersionRange{Min: 0, Max: 1}},
		{Key: kraft.ReplicaKey{ID: 7}, KRaftVersions: kraft.VersionRange{Min: 1, Max: 1}},
	}
	got, err := decodeVoters(encodeVoters(vs))
	require.NoError(t, err)
	require.Equal(t, vs, got)
	for _, bad := range [][]byte{nil, {0}, {1, 0, 1}, {0, 0, 0}, append(encodeVoters(vs), 0), encodeVoters(vs)[:10]} {
		_, err := decodeVoters(bad)
		require.Error(t, err, "%x", bad)
	}
	_, err = decodeVoters(encodeVoters([]Voter{{Key: dynKey(1)}, {Key: dynKey(1)}}))
	require.Error(t, err, "a repeated id")

	var w bytes.Buffer
	require.NoError(t, writeSnapshotVoters(&w, vs))
	w.WriteString("app")
	got, r, err := readSnapshotVoters(bytes.NewReader(w.Bytes()))
	require.NoError(t, err)
	require.Equal(t, vs, got)
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "app", string(rest))

	for _, plain := range []string{"", "p", "plain application bytes"} {
		got, r, err = readSnapshotVoters(bytes.NewReader([]byte(plain)))
		require.NoError(t, err)
		require.Nil(t, got)
		rest, err = io.ReadAll(r)
		require.NoError(t, err)
		require.Equal(t, plain, string(rest))
	}
}

// TestNodeVotersOverTCP: a new replica that knows only the bootstrap
// voter's address joins over TCP: the leader learns its address from
// AddVoter (ApiVersions reaches it), keeps it in the VotersRecord, and
// after it removes itself fetches from the new leader at that address.
func TestNodeVotersOverTCP(t *testing.T) {
	tr1, err := NewTCPTransport(TCPConfig{ID: 1, Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	tr2, err := NewTCPTransport(TCPConfig{ID: 2, Listen: "127.0.0.1:0", Peers: map[kraft.NodeID]string{1: tr1.Addr().String()}})
	require.NoError(t, err)
	addr1, addr2 := tr1.Addr().String(), tr2.Addr().String()
	kc := func(id kraft.NodeID) kraft.Config {
		return kraft.Config{
			Local: dynKey(id), Observer: id != 1, Seed: uint64(id),
			ElectionTimeout: 100 * time.Millisecond, FetchTimeout: 200 * time.Millisecond, ElectionBackoffMax: 100 * time.Millisecond,
		}
	}
	start := func(id kraft.NodeID, tr Transport, boot []Voter) *Node {
		n, err := Start(Config{Config: replica.Config{Kraft: kc(id), Log: storage.NewMemLog(), Records: &MemRecords{},
			RequestTimeout: 200 * time.Millisecond, FetchMaxWait: 50 * time.Millisecond,
			BootstrapServers: []kraft.NodeID{1}, Endpoint: tr.(*TCPTransport).Addr().String()}, Transport: tr,

			InitialVoters: boot,
			Logf:          t.Logf,
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = n.Close() })
		return n
	}
	n1 := start(1, tr1, []Voter{{Key: dynKey(1), Endpoint: addr1, KRaftVersions: supportedKRaftVersions}})
	n2 := start(2, tr2, nil)
	waitRole := func(n *Node, role string, leader kraft.NodeID) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			st, err := n.Status()
			require.NoError(t, err)
			if st.Role == role && st.Leader == leader {
				return
			}
			require.True(t, time.Now().Before(deadline), "node %d: %+v", n.local.ID, st)
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitRole(n2, "Follower", 1)
	voterChange(t, "add 2", func(ctx context.Context) error { return n1.AddVoter(ctx, dynKey(2), addr2) })
	vs, version, err := n2.Voters()
	require.NoError(t, err)
	require.Equal(t, int16(1), version)
	require.Equal(t, []VoterInfo{{ID: 1, DirectoryID: dynKey(1).DirectoryID, Endpoint: addr1}, {ID: 2, DirectoryID: dynKey(2).DirectoryID, Endpoint: addr2}}, vs)

	// Node 1 leaves the voter set (a plain Resign could see it elected
	// again): node 2 leads alone.
	voterChange(t, "remove 1", func(ctx context.Context) error { return n1.RemoveVoter(ctx, dynKey(1)) })
	waitRole(n2, "Leader", 2)
	waitRole(n1, "Follower", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = n2.Append(ctx, []byte("x"))
	require.NoError(t, err)
	// Node 1, an observer now, fetches from node 2 at the address the
	// VotersRecord holds.
	st2, err := n2.Status()
	require.NoError(t, err)
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := n1.Status()
		require.NoError(t, err)
		if st.LogEnd >= st2.LogEnd && st.Leader == 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "node 1: %+v, node 2: %+v", st, st2)
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNodeVotersAddUnreachable: AddVoter of a replica that is not running
// fails with REQUEST_TIMED_OUT once its ApiVersions request times out, and
// the next change goes through. The call has no deadline of its own, so
// the error can only come from the leader's voter-change timer; how long
// it took is not asserted (a loaded machine delays any timer).
func TestNodeVotersAddUnreachable(t *testing.T) {
	c := newDynamicCluster(t, 2, 1, 2, nil)
	l := c.leader()
	c.appendCommitted("a")
	err := l.AddVoter(context.Background(), dynKey(9), "mem-9")
	var vc *VoterChangeError
	require.ErrorAs(t, err, &vc)
	require.Equal(t, kraft.ErrRequestTimedOut, vc.Code)
	voterChange(t, "add 2", func(ctx context.Context) error { return l.AddVoter(ctx, dynKey(2), dynEndpoint(2)) })
	c.waitVoters(2, 1, 2)
}

// TestVoterChangeAnswerWhenTheLeaderResigns: a change pending when its
// leader resigns is answered NOT_LEADER_OR_FOLLOWER by the state, which
// still names the resigning replica leader of its epoch; the caller gets
// a NotLeaderError that names no leader rather than the replica itself.
func TestVoterChangeAnswerWhenTheLeaderResigns(t *testing.T) {
	c := newDynamicCluster(t, 1, 1, 1, nil)
	nd := c.leader()
	ch := make(chan error, 1)
	require.NoError(t, nd.call(func() {
		nd.voterCalls[99] = &voterCall{ch: ch}
		nd.voterChangeResponse(kraft.SendVoterChangeResponse{Ref: 99, Kind: kraft.AddVoter, Error: kraft.ErrNotLeaderOrFollower, Epoch: 3, LeaderID: nd.local.ID})
	}))
	var nl *NotLeaderError
	require.ErrorAs(t, <-ch, &nl)
	require.Equal(t, kraft.NoNode, nl.Leader)
	require.Equal(t, kraft.Epoch(3), nl.Epoch)
}
