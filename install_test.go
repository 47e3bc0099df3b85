package kraft_test

import (
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// A follower whose log diverges from the leader's at or before the
// leader's only snapshot, in a newer epoch than the snapshot's, installs the
// snapshot over its whole log (docs/design.md D57). Kafka's follower throws
// "Full log truncation expected" at the end of the download and can never
// rejoin.

func staticVoter(id kraft.NodeID) kraft.Config {
	return kraft.Config{Local: kraft.ReplicaKey{ID: id}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}, Seed: uint64(id), KafkaFailover: true}
}

// TestInstallSnapshotReplacesDivergentLogEndingAtIt: leader 1 of epoch 7
// has cleaned its log up to its only snapshot 50@4 (record 49 is of epoch
// 4, committed; its log holds epoch 6 from 50 and epoch 7 from 51).
// Follower 2 holds records 45-49 of epoch 5, written by an epoch-5 leader
// that never committed them, so its log ends at 50@5. Its Fetch (50, 5) is
// at the leader's log start in another epoch than the earliest snapshot's,
// so the leader answers with the snapshot (Kafka's
// ReplicatedLog.validateOffsetAndEpoch). The download completes, and the
// follower's log becomes the snapshot, although 50@4 does not compare past
// 50@5: everything below 50 is committed as epoch 4, and the follower's
// epoch-5 records are not.
// Reference: KafkaRaftClient.handleFetchSnapshotResponse; docs/design.md D57.
func TestInstallSnapshotReplacesDivergentLogEndingAtIt(t *testing.T) {
	// The follower's log ends at the leader's log start, 50@5.
	installOverDivergentLog(t, kraft.LogState{End: kraft.LogEnd{Offset: 50, Epoch: 5}, Epochs: []kraft.EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 5, StartOffset: 45}}})
}

// TestInstallSnapshotReplacesShorterLogOfNewerEpoch: the same with the
// follower's log ending below the leader's log start, at 45@5 (records 40-44
// of epoch 5, uncommitted): the leader answers with the snapshot (offset
// below its log start), and 50@4 replaces the log although it does not
// compare past 45@5 by epoch.
// Reference: docs/design.md D57.
func TestInstallSnapshotReplacesShorterLogOfNewerEpoch(t *testing.T) {
	installOverDivergentLog(t, kraft.LogState{End: kraft.LogEnd{Offset: 45, Epoch: 5}, Epochs: []kraft.EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 5, StartOffset: 40}}})
}

func installOverDivergentLog(t *testing.T, flog kraft.LogState) {
	t.Helper()
	snap := kraft.LogEnd{Offset: 50, Epoch: 4}
	// Leader 1.
	l, _, err := kraft.NewState(staticVoter(1), &kraft.QuorumRecord{Epoch: 6, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica},
		kraft.LogState{End: kraft.LogEnd{Offset: 51, Epoch: 6}, Epochs: []kraft.EpochStart{{Epoch: 6, StartOffset: 50}},
			Start: 50, LatestSnapshot: &snap, EarliestSnapshot: &snap})
	require.NoError(t, err)
	l, _ = stepNoFault(t, l, kraft.ElectionTimeout{})
	l, _ = stepNoFault(t, l, kraft.ReceiveVoteResponse{From: 3, Epoch: 6, VoteGranted: true, LeaderID: kraft.NoNode})
	l, _ = stepNoFault(t, l, kraft.ReceiveVoteResponse{From: 3, Epoch: 7, VoteGranted: true, LeaderID: kraft.NoNode})
	require.Equal(t, kraft.Leader, l.Role())
	l, _ = stepNoFault(t, l, kraft.LogAppended{End: kraft.LogEnd{Offset: 52, Epoch: 7}})
	l, _ = stepNoFault(t, l, kraft.LogFlushed{Offset: 52})

	// Follower 2.
	f, acts, err := kraft.NewState(staticVoter(2), &kraft.QuorumRecord{Epoch: 7, LeaderID: 1, VotedKey: kraft.NoReplica}, flog)
	require.NoError(t, err)
	require.Equal(t, kraft.Follower, f.Role())

	deliver := func(from kraft.State, a kraft.Action) kraft.Event {
		_, e, ok := kraft.Deliver(from.Local(), a)
		require.True(t, ok)
		return e
	}
	var fetch kraft.SendFetch
	for _, a := range acts {
		if x, ok := a.(kraft.SendFetch); ok {
			fetch = x
		}
	}
	require.Equal(t, flog.End.Offset, fetch.FetchOffset)
	require.Equal(t, flog.End.Epoch, fetch.FetchEpoch)

	// The leader answers with its latest snapshot.
	l, lacts := stepNoFault(t, l, deliver(f, fetch))
	var resp kraft.SendFetchResponse
	for _, a := range lacts {
		if x, ok := a.(kraft.SendFetchResponse); ok {
			resp = x
		}
	}
	require.NotNil(t, resp.Snapshot, "leader answers %+v", resp)
	require.Equal(t, snap, *resp.Snapshot)

	// The follower downloads it in one chunk.
	f, acts = stepNoFault(t, f, deliver(l, resp))
	var fs kraft.SendFetchSnapshot
	for _, a := range acts {
		if x, ok := a.(kraft.SendFetchSnapshot); ok {
			fs = x
		}
	}
	require.Equal(t, snap, fs.Snapshot)
	req := deliver(f, fs).(kraft.ReceiveFetchSnapshot)
	req.Size = 100 // the leader's host has the snapshot
	_, lacts = stepNoFault(t, l, req)
	var fsr kraft.SendFetchSnapshotResponse
	for _, a := range lacts {
		if x, ok := a.(kraft.SendFetchSnapshotResponse); ok {
			fsr = x
		}
	}
	require.Equal(t, kraft.ErrNone, fsr.Error)
	next, acts := stepNoFault(t, f, deliver(l, fsr))
	require.Contains(t, acts, kraft.Action(kraft.InstallSnapshot{Snapshot: snap}))
	require.Equal(t, snap, next.LogEnd())
	require.Equal(t, snap.Offset, next.LogStart())
	require.Equal(t, snap.Offset, next.HighWatermark())
	require.Contains(t, acts, kraft.Action(kraft.SendFetch{To: 1, CurrentLeaderEpoch: 7, FetchOffset: 50, FetchEpoch: 4, HighWatermark: 50}))
}
