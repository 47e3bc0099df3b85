package kraft_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// The voter set in force at a snapshot's last contained offset survives
// every truncation the log allows (docs/design.md D56): a log cleaned up to
// a snapshot whose end holds an uncommitted VotersRecord, which a new leader
// then truncates, falls back to the snapshot's set, as a restart from the
// snapshot would (Kafka's KRaftControlRecordStateMachine.maybeLoadSnapshot),
// never to no set or to Config.Voters. Kafka's
// VoterSetHistory.truncateOldEntries keeps the set at the start offset
// itself, and loses the snapshot's.

var (
	vhDirA = uuid.MustParse("aaaaaaaa-0000-0000-0000-000000000001")
	vhDirB = uuid.MustParse("bbbbbbbb-0000-0000-0000-000000000002")
	vhDirC = uuid.MustParse("cccccccc-0000-0000-0000-000000000003")
	vhDirD = uuid.MustParse("dddddddd-0000-0000-0000-000000000004")
	vhK1   = kraft.ReplicaKey{ID: 1, DirectoryID: vhDirA}
	vhK2   = kraft.ReplicaKey{ID: 2, DirectoryID: vhDirB}
	vhK3   = kraft.ReplicaKey{ID: 3, DirectoryID: vhDirC}
	vhK4   = kraft.ReplicaKey{ID: 4, DirectoryID: vhDirD}
)

func stepNoFault(t *testing.T, s kraft.State, e kraft.Event) (kraft.State, []kraft.Action) {
	t.Helper()
	next, acts := kraft.Step(s, e)
	for _, a := range acts {
		if f, ok := a.(kraft.Fault); ok {
			t.Fatalf("Fault on %T %+v: %s", e, e, f.Reason)
		}
	}
	return next, acts
}

// cleanedFollowerTruncatedToStart is voter 1 of the bootstrap set {1,2,3}, following
// leader 2 in epoch 1 with the log [0, 11) of epoch 1 whose record 10 is an
// uncommitted VotersRecord adding voter 4; its high watermark is 10, it
// took a snapshot at 10@1 and cleaned its log up to it (Kafka's
// deleteBeforeSnapshot). static is Config.Voters.
func cleanedFollowerTruncatedToStart(t *testing.T, static []kraft.ReplicaKey) kraft.State {
	t.Helper()
	three := []kraft.ReplicaKey{vhK1, vhK2, vhK3}
	four := []kraft.ReplicaKey{vhK1, vhK2, vhK3, vhK4}
	cfg := kraft.Config{Local: vhK1, Voters: static, Seed: 7}
	rec := kraft.QuorumRecord{Epoch: 1, LeaderID: 2, VotedKey: kraft.NoReplica}
	log := kraft.LogState{
		End:    kraft.LogEnd{Offset: 11, Epoch: 1},
		Epochs: []kraft.EpochStart{{Epoch: 1, StartOffset: 0}},
		VoterSets: []kraft.VoterSetAt{
			{Offset: -1, Voters: three},
			{Offset: 1, Voters: three}, // the first leader's copy of the bootstrap set
			{Offset: 10, Voters: four}, // AddRaftVoter(4), not committed
		},
	}
	s, _, err := kraft.NewState(cfg, &rec, log)
	require.NoError(t, err)
	require.Equal(t, kraft.Follower, s.Role())
	require.Equal(t, four, s.Voters())
	// The leader reports a high watermark of 10: records [0, 10) are
	// committed, the VotersRecord at 10 is not.
	s, _ = stepNoFault(t, s, kraft.ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 1, HighWatermark: 10})
	require.Equal(t, int64(10), s.HighWatermark())
	// The host snapshots the committed log and cleans the log behind it.
	s, _ = stepNoFault(t, s, kraft.SnapshotCreated{Snapshot: kraft.LogEnd{Offset: 10, Epoch: 1}})
	s, _ = stepNoFault(t, s, kraft.LogStartMoved{Snapshot: kraft.LogEnd{Offset: 10, Epoch: 1}})
	// The snapshot at 10 holds the set in force at offset 9: {1,2,3}. The
	// history now holds only the uncommitted record at 10.
	t.Logf("after cleaning: voter sets %v", s.VoterSets())
	// Leader 2 is deposed; leader 3 of epoch 2 never got the VotersRecord.
	s, _ = stepNoFault(t, s, kraft.ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 2, VoterID: 1, VoterDirectoryID: vhDirA})
	require.Equal(t, kraft.Follower, s.Role())
	require.Equal(t, kraft.NodeID(3), s.Leader())
	// Its Fetch answer: the log diverges at 10 (epoch 1 ends at 10 there).
	s, acts := stepNoFault(t, s, kraft.ReceiveFetchResponse{From: 3, LeaderID: 3, LeaderEpoch: 2, HighWatermark: 12,
		Diverging: &kraft.LogOffsetMetadata{Offset: 10, Epoch: 1}})
	require.Contains(t, acts, kraft.Action(kraft.TruncateLog{To: 10}))
	return s
}

// TestTruncationToCleanedStartKeepsSnapshotVoterSet: after the truncation
// to the log start the set in force is the snapshot's {1,2,3} (the set at
// offset 9): the replica is still a voter, at kraft.version 1.
// Reference: docs/design.md D56; the simulator's host-voters rule checks the
// same against the host's log.
func TestTruncationToCleanedStartKeepsSnapshotVoterSet(t *testing.T) {
	s := cleanedFollowerTruncatedToStart(t, nil)
	t.Logf("after truncating to 10: %v, voters %v, sets %v, kraft.version %d", s, s.Voters(), s.VoterSets(), s.KRaftVersion())
	require.Equal(t, []kraft.ReplicaKey{vhK1, vhK2, vhK3}, s.Voters(), "the set in force at offset 9 is the snapshot's {1,2,3}")
	require.True(t, s.IsVoter())
	require.Equal(t, int16(1), s.KRaftVersion())
}

// TestTruncationToCleanedStartNeverRevertsToStaticVoters: the same with
// Config.Voters set to a set the quorum left long ago: it is ignored once
// the log has held a set, and the snapshot's set stays in force.
// Reference: docs/design.md D56.
func TestTruncationToCleanedStartNeverRevertsToStaticVoters(t *testing.T) {
	old := []kraft.ReplicaKey{{ID: 1}, {ID: 5}, {ID: 6}}
	s := cleanedFollowerTruncatedToStart(t, old)
	t.Logf("after truncating to 10: %v, voters %v, sets %v", s, s.Voters(), s.VoterSets())
	require.Equal(t, []kraft.ReplicaKey{vhK1, vhK2, vhK3}, s.Voters(), "the set in force at offset 9 is the snapshot's {1,2,3}, not Config.Voters")
}

// TestTruncationToCleanedStartStillFetchesOnlyFlushed: after the
// truncation, the replica, voter 1 in its leader's set, still waits for its
// flush before it fetches: its Fetch must not tell leader 3 of records it
// has not made durable, which the leader would count toward the high
// watermark (Kafka's appendAsFollower: "the leader only requires that
// voters have flushed their log before sending a Fetch request").
// Reference: docs/design.md D30, D52, D56.
func TestTruncationToCleanedStartStillFetchesOnlyFlushed(t *testing.T) {
	s := cleanedFollowerTruncatedToStart(t, nil)
	// The leader's next answer carries records 10 and 11 of epoch 2; the
	// host appends them and reports the write (not flushed yet).
	s, _ = stepNoFault(t, s, kraft.LogAppended{End: kraft.LogEnd{Offset: 12, Epoch: 2}})
	s, acts := stepNoFault(t, s, kraft.ReceiveFetchResponse{From: 3, LeaderID: 3, LeaderEpoch: 2, HighWatermark: 12})
	require.Equal(t, int64(10), s.FlushedOffset())
	for _, a := range acts {
		if f, ok := a.(kraft.SendFetch); ok {
			t.Fatalf("voter 1 sends %+v with records [10, 12) written but flushed only to %d", f, s.FlushedOffset())
		}
	}
}

// TestTruncationToCleanedStartElectsOnlyWithTheSetInForce: with
// Config.Voters {1,5,6} (a set the quorum left long ago) voter 1 must not
// win an epoch with the votes of replicas 5 and 6, two observers of the
// quorum: 2 and 3, a majority of the set in force, could elect a second
// leader of the same epoch.
// Reference: docs/design.md D56.
func TestTruncationToCleanedStartElectsOnlyWithTheSetInForce(t *testing.T) {
	old := []kraft.ReplicaKey{{ID: 1}, {ID: 5}, {ID: 6}}
	s := cleanedFollowerTruncatedToStart(t, old)
	obs := map[kraft.NodeID]kraft.State{}
	for _, id := range []kraft.NodeID{5, 6} {
		o, _, err := kraft.NewState(kraft.Config{Local: kraft.ReplicaKey{ID: id}, Observer: true, Seed: uint64(id)}, nil, kraft.LogState{})
		require.NoError(t, err)
		obs[id] = o
	}
	// deliver runs the vote requests among acts through the observers and
	// steps their answers into s.
	deliver := func(s kraft.State, acts []kraft.Action) (kraft.State, []kraft.Action) {
		var out []kraft.Action
		for _, a := range acts {
			req, ok := a.(kraft.SendVoteRequest)
			if !ok {
				continue
			}
			to, ev, _ := kraft.Deliver(s.Local(), req)
			o, isObs := obs[to]
			if !isObs {
				continue
			}
			o, oacts := stepNoFault(t, o, ev)
			obs[to] = o
			for _, oa := range oacts {
				if resp, ok := oa.(kraft.SendVoteResponse); ok {
					_, rev, _ := kraft.Deliver(o.Local(), resp)
					var more []kraft.Action
					s, more = stepNoFault(t, s, rev)
					out = append(out, more...)
				}
			}
		}
		return s, out
	}
	s, acts := stepNoFault(t, s, kraft.FetchTimeout{})
	s, acts = deliver(s, acts) // pre-votes
	s, _ = deliver(s, acts)    // standard votes, if it got that far
	t.Logf("replica 1: %v; observer 5: %v; observer 6: %v", s, obs[5], obs[6])
	require.NotEqual(t, kraft.Leader, s.Role(), "replica 1 leads epoch %d with the votes of 5 and 6 only", s.Epoch())
}

// TestTruncationOfEveryLoggedSetLeavesNoVoterSet: once the log has held a
// voter set, Config.Voters is never in force again. A replica whose log
// holds a VotersRecord but no older set (no snapshot or bootstrap set below
// it) and truncates it away has no voter set at all: it is no voter, stays
// at kraft.version 1, and still waits for its flush before it fetches.
// Reference: docs/design.md D56.
func TestTruncationOfEveryLoggedSetLeavesNoVoterSet(t *testing.T) {
	static := []kraft.ReplicaKey{vhK1, vhK2, vhK3}
	cfg := kraft.Config{Local: vhK1, Voters: static, Seed: 3}
	rec := kraft.QuorumRecord{Epoch: 1, LeaderID: 2, VotedKey: kraft.NoReplica}
	s, _, err := kraft.NewState(cfg, &rec, kraft.LogState{
		End:       kraft.LogEnd{Offset: 5, Epoch: 1},
		VoterSets: []kraft.VoterSetAt{{Offset: 3, Voters: []kraft.ReplicaKey{vhK1, vhK2, vhK4}}},
	})
	require.NoError(t, err)
	require.Equal(t, int16(1), s.KRaftVersion())
	s, _ = stepNoFault(t, s, kraft.ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2, VoterID: 1, VoterDirectoryID: vhDirA})
	s, acts := stepNoFault(t, s, kraft.ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: -1,
		Diverging: &kraft.LogOffsetMetadata{Offset: 2, Epoch: 1}})
	require.Contains(t, acts, kraft.Action(kraft.TruncateLog{To: 2}))
	require.Empty(t, s.Voters(), "not Config.Voters")
	require.False(t, s.IsVoter())
	require.Equal(t, int16(1), s.KRaftVersion())

	s, _ = stepNoFault(t, s, kraft.LogAppended{End: kraft.LogEnd{Offset: 4, Epoch: 2}})
	_, acts = stepNoFault(t, s, kraft.ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: -1})
	for _, a := range acts {
		_, fetch := a.(kraft.SendFetch)
		require.False(t, fetch, "a Fetch with records [2, 4) written but flushed only to %d", s.FlushedOffset())
	}
}
