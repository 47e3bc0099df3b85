package replica

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// memRecords keeps a quorum-state record in memory.
type memRecords struct{ rec *kraft.QuorumRecord }

func (m *memRecords) Read() (*kraft.QuorumRecord, error) { return m.rec, nil }
func (m *memRecords) Write(r kraft.QuorumRecord) error   { m.rec = &r; return nil }

// newSingle is a one-voter replica with an in-memory log and its
// snapshots in dir.
func newSingle(t *testing.T, dir string) *Replica {
	t.Helper()
	snaps, err := storage.OpenSnapshots(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = snaps.Close() })
	r, err := New(Config{
		Kraft:     kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}}},
		Log:       storage.NewMemLog(),
		Records:   &memRecords{},
		Snapshots: StorageSnapshots(snaps),
		Static:    true,
	}, 0)
	require.NoError(t, err)
	return r
}

// TestDownloadChunks: a chunk at position 0 starts a new partial
// snapshot and replaces an earlier one (of the same snapshot too); a chunk
// that does not continue the download, or an install of a snapshot not
// being downloaded, stops the replica.
func TestDownloadChunks(t *testing.T) {
	dir := t.TempDir()
	r := newSingle(t, dir)
	id := kraft.LogEnd{Offset: 500, Epoch: 9}
	other := kraft.LogEnd{Offset: 600, Epoch: 9}
	parts := func() []string {
		des, err := os.ReadDir(dir)
		require.NoError(t, err)
		var names []string
		for _, de := range des {
			if strings.HasSuffix(de.Name(), ".part") {
				names = append(names, de.Name())
			}
		}
		return names
	}
	write := func(a kraft.WriteSnapshotChunk, chunk string) (err error) {
		r.snap.chunk = []byte(chunk)
		err = r.writeChunk(a)
		r.snap.chunk = nil
		return err
	}
	require.NoError(t, write(kraft.WriteSnapshotChunk{Snapshot: id, Position: 0}, "abc"))
	require.NoError(t, write(kraft.WriteSnapshotChunk{Snapshot: id, Position: 3}, "de"))
	require.Error(t, write(kraft.WriteSnapshotChunk{Snapshot: id, Position: 3}, "de"), "a chunk that does not continue")
	require.Error(t, write(kraft.WriteSnapshotChunk{Snapshot: other, Position: 5}, "f"), "a chunk of another snapshot")
	require.Len(t, parts(), 1)
	require.NoError(t, write(kraft.WriteSnapshotChunk{Snapshot: id, Position: 0}, "xyz"), "the download starts over")
	require.Len(t, parts(), 1)
	require.NoError(t, write(kraft.WriteSnapshotChunk{Snapshot: other, Position: 0}, "q"), "another download replaces it")
	require.Equal(t, []string{storage.SnapshotFileName(other) + ".part"}, parts())
	require.Error(t, r.install(id), "installing a snapshot that is not being downloaded")
}

// TestRecoverLogAfterAnInterruptedInstall: a follower crashed after it
// froze a downloaded snapshot and before it reset its log (and deleted
// its older snapshot): Start's recovery resets the log to the snapshot
// and deletes the snapshot below the new log start, so NewState takes it.
func TestRecoverLogAfterAnInterruptedInstall(t *testing.T) {
	lg := storage.NewMemLog()
	_, err := lg.Append(1, []byte("a"), []byte("b"), []byte("c"), []byte("d"))
	require.NoError(t, err)
	snaps, err := storage.OpenSnapshots(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, snaps.Close()) }()
	for _, id := range []kraft.LogEnd{{Offset: 2, Epoch: 1}, {Offset: 20, Epoch: 3}} {
		w, err := snaps.Create(id)
		require.NoError(t, err)
		require.NoError(t, w.Append([]byte("state")))
		require.NoError(t, w.Freeze())
	}
	ls, err := recoverLog(lg, StorageSnapshots(snaps))
	require.NoError(t, err)
	id := kraft.LogEnd{Offset: 20, Epoch: 3}
	require.Equal(t, kraft.LogState{End: id, Start: 20, LatestSnapshot: &id, EarliestSnapshot: &id}, ls)
	require.Equal(t, []kraft.LogEnd{id}, snaps.List())
	require.Equal(t, id, lg.End())
	_, _, err = kraft.NewState(kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}}}, nil, ls)
	require.NoError(t, err)

	// A log that holds its snapshot needs nothing.
	lg2 := storage.NewMemLog()
	_, err = lg2.Append(1, []byte("a"), []byte("b"), []byte("c"))
	require.NoError(t, err)
	snaps2, err := storage.OpenSnapshots(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, snaps2.Close()) }()
	w, err := snaps2.Create(kraft.LogEnd{Offset: 2, Epoch: 1})
	require.NoError(t, err)
	require.NoError(t, w.Freeze())
	ls, err = recoverLog(lg2, StorageSnapshots(snaps2))
	require.NoError(t, err)
	two := kraft.LogEnd{Offset: 2, Epoch: 1}
	require.Equal(t, kraft.LogEnd{Offset: 3, Epoch: 1}, ls.End)
	require.Equal(t, int64(0), ls.Start)
	require.Equal(t, &two, ls.LatestSnapshot)
}

// TestRecoverVotersAfterSnapshotBeforeCleaning: a crash between taking a
// snapshot and cleaning the log behind it leaves VotersRecords below the
// snapshot's end in the log. The snapshot holds the set in force at its
// end, so those records are read no more (Kafka reads the log from the
// snapshot's end) and the sets stay in offset order for kraft.NewState.
func TestRecoverVotersAfterSnapshotBeforeCleaning(t *testing.T) {
	k := func(id kraft.NodeID) Voter {
		return Voter{Key: kraft.ReplicaKey{ID: id, DirectoryID: uuid.UUID{byte(id)}}, Endpoint: fmt.Sprintf("n%d", id), KRaftVersions: SupportedKRaftVersions}
	}
	one, two := []Voter{k(1)}, []Voter{k(1), k(2)}
	lg := storage.NewMemLog()
	_, err := lg.Append(1, []byte{RecordLeaderChange}, VotersRecord(one), []byte{RecordData, 'a'}, VotersRecord(two), []byte{RecordData, 'b'})
	require.NoError(t, err)
	snaps, err := storage.OpenSnapshots(t.TempDir())
	require.NoError(t, err)
	w, err := snaps.Create(kraft.LogEnd{Offset: 4, Epoch: 1})
	require.NoError(t, err)
	require.NoError(t, WriteSnapshotVoters(w, two))
	_, err = w.Write([]byte("app"))
	require.NoError(t, err)
	require.NoError(t, w.Freeze())

	sets, err := recoverVoters(lg, StorageSnapshots(snaps), one, false, 1<<20, nil)
	require.NoError(t, err)
	require.Equal(t, []kraft.VoterSetAt{
		{Offset: -1, Voters: KeysOf(one)},
		{Offset: 3, Voters: KeysOf(two)},
	}, keySets(sets))

	ls, err := recoverLog(lg, StorageSnapshots(snaps))
	require.NoError(t, err)
	ls.VoterSets = keySets(sets)
	_, _, err = kraft.NewState(kraft.Config{Local: k(1).Key}, nil, ls)
	require.NoError(t, err)
}

// TestNoteClusterIDRefusals: a request with another cluster id is noted as
// refused here (with the id it sent), a response refusing ours for its
// cluster id as refused by the peer; a request with our cluster id or
// none is no refusal. The current leader's Fetch answers raise
// LeaderHighWatermark, a role change forgets it.
func TestNoteClusterIDRefusals(t *testing.T) {
	ours := uuid.NullUUID{UUID: uuid.New(), Valid: true}
	other := uuid.NullUUID{UUID: uuid.New(), Valid: true}
	r := newSingle(t, t.TempDir())
	r.cfg.Kraft.ClusterID = ours
	r.Take()
	refusals := func() (out []ClusterIDRefused) {
		for _, o := range r.Take() {
			if c, ok := o.(ClusterIDRefused); ok {
				out = append(out, c)
			}
		}
		return out
	}
	r.Receive(0, Message{From: 3, To: 1, Event: kraft.ReceiveFetch{From: 3, ClusterID: other}})
	require.Equal(t, []ClusterIDRefused{{Peer: 3, Request: "Fetch", Inbound: true, Theirs: other}}, refusals())
	r.Receive(0, Message{From: 3, To: 1, Response: true, Event: kraft.ReceiveVoteResponse{From: 3, Error: kraft.ErrInconsistentClusterID}})
	require.Equal(t, []ClusterIDRefused{{Peer: 3, Request: "Vote"}}, refusals())
	r.Receive(0, Message{From: 4, To: 1, Event: kraft.ReceiveFetch{From: 4, ClusterID: ours}})
	r.Receive(0, Message{From: 4, To: 1, Event: kraft.ReceiveFetch{From: 4}})
	require.Empty(t, refusals())

	require.Equal(t, int64(-1), r.LeaderHighWatermark())
	r.st = followerOf(t, 2)
	r.note(Message{From: 2, To: 1, Response: true, Event: kraft.ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: r.st.Epoch(), HighWatermark: 7}})
	require.Equal(t, int64(7), r.LeaderHighWatermark())
	r.note(Message{From: 3, To: 1, Response: true, Event: kraft.ReceiveFetchResponse{From: 3, LeaderID: 2, LeaderEpoch: r.st.Epoch(), HighWatermark: 9}})
	require.Equal(t, int64(7), r.LeaderHighWatermark(), "not from the leader")
	r.onRoleChanged(kraft.RoleChanged{From: kraft.Follower, To: kraft.Prospective})
	require.Equal(t, int64(-1), r.LeaderHighWatermark())
}

// followerOf is voter 1 of 1, 2, 3 following leader in epoch 1.
func followerOf(t *testing.T, leader kraft.NodeID) kraft.State {
	t.Helper()
	cfg := kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}}
	s, _, err := kraft.NewState(cfg, nil, kraft.LogState{})
	require.NoError(t, err)
	s, _ = kraft.Step(s, kraft.ReceiveBeginQuorumEpoch{From: leader, LeaderID: leader, LeaderEpoch: 1, VoterID: 1})
	require.Equal(t, kraft.Follower, s.Role())
	return s
}
