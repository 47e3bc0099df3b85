package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Dynamic voter sets (KIP-853): the voter set follows the log, and the
// leader's AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter handling,
// after Kafka's KafkaRaftClientReconfigTest, VoterSetTest and
// VoterSetHistoryTest.

var (
	key1A = ReplicaKey{ID: 1, DirectoryID: dirA}
	key2B = ReplicaKey{ID: 2, DirectoryID: dirB}
	key3C = ReplicaKey{ID: 3, DirectoryID: dirC}
	key2C = ReplicaKey{ID: 2, DirectoryID: dirC}
	key4A = ReplicaKey{ID: 4, DirectoryID: dirA}
)

// dynamicConfig is a Config for local with no static voters: the voter set
// comes from the log (kraft.version 1).
func dynamicConfig(local ReplicaKey) Config {
	return Config{Local: local, Seed: uint64(local.ID) + 1, KafkaFailover: true}
}

// bootstrap is a LogState holding only the bootstrap checkpoint's voter
// set.
func bootstrap(voters ...ReplicaKey) LogState {
	return LogState{VoterSets: []VoterSetAt{{Offset: -1, Voters: voters}}}
}

// dynamicLeader is voter 1 of the bootstrap set voters, elected leader of
// epoch 1 (alone, or with every other voter's vote), with its LeaderChange
// and VotersRecord written and flushed (offsets 0 and 1) and, when others
// fetch, the high watermark established at 2.
func dynamicLeader(t *testing.T, voters ...ReplicaKey) State {
	t.Helper()
	s, acts, err := NewState(dynamicConfig(key1A), nil, bootstrap(voters...))
	require.NoError(t, err)
	if len(voters) > 1 {
		s, _ = step(t, s, ElectionTimeout{})
		for _, v := range voters[1:] {
			s, _ = step(t, s, ReceiveVoteResponse{From: v.ID, Epoch: 0, VoteGranted: true, LeaderID: NoNode})
		}
		for _, v := range voters[1:] {
			var a []Action
			s, a = step(t, s, ReceiveVoteResponse{From: v.ID, Epoch: 1, VoteGranted: true, LeaderID: NoNode})
			acts = append(acts, a...)
		}
	}
	require.Equal(t, Leader, s.Role())
	lc := ofType[AppendLeaderChange](acts)
	require.Len(t, lc, 1)
	// The bootstrap set is never replicated: the leader writes it.
	require.True(t, lc[0].VotersRecord)
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 2, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 1, Voters: voters})
	s, _ = step(t, s, LogFlushed{Offset: 2})
	for _, v := range voters[1:] {
		s, _ = step(t, s, ReceiveFetch{From: v.ID, FromDirectoryID: v.DirectoryID, CurrentLeaderEpoch: 1, FetchOffset: 2, FetchEpoch: 1})
	}
	require.Equal(t, int64(2), s.HighWatermark())
	return s
}

func changeResponse(ref uint64, to NodeID, kind VoterChangeKind, code ErrorCode, epoch Epoch, leader NodeID) SendVoterChangeResponse {
	return SendVoterChangeResponse{Ref: ref, To: to, Kind: kind, Error: code, Epoch: epoch, LeaderID: leader}
}

// TestReconfigGrowFromOneVoterAndLeaderRemovesItself grows a quorum from
// one voter to two, then the leader removes itself: it keeps leading
// without counting itself until the removal commits, then resigns
// (KafkaRaftClientReconfigTest.testAddVoter, testRemoveVoterIsLeader).
func TestReconfigGrowFromOneVoterAndLeaderRemovesItself(t *testing.T) {
	s := dynamicLeader(t, key1A)
	require.Equal(t, int16(1), s.KRaftVersion())

	// The new voter fetches as an observer: caught up at the log end.
	s, acts := step(t, s, ReceiveAddVoter{Ref: 7, From: NoNode, Voter: key2B, Listener: true})
	requireActions(t, []Action{SendAPIVersions{To: key2B}, ResetTimer{Timer: VoterChangeTimer, After: DefaultRequestTimeout}}, acts)
	s, _ = step(t, s, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 2, FetchEpoch: 1})
	s, acts = step(t, s, ReceiveAPIVersionsResponse{From: 2, KRaftVersions: &VersionRange{Min: 0, Max: 1}})
	requireActions(t, []Action{AppendVoters{Epoch: 1, Voters: []ReplicaKey{key1A, key2B}, Change: VoterChange{Kind: AddVoter, Voter: key2B, KRaftVersions: VersionRange{Min: 0, Max: 1}}}}, acts)

	// In force once written, uncommitted: the high watermark now needs
	// voter 2, and the leader starts check-quorum and BeginQuorumEpoch.
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	s, acts = step(t, s, VotersAppended{Offset: 2, Voters: []ReplicaKey{key1A, key2B}})
	require.Equal(t, []ReplicaKey{key1A, key2B}, s.Voters())
	requireActions(t, []Action{checkQuorumTimerReset, beginQuorumTimerReset}, acts)
	s, acts = step(t, s, LogFlushed{Offset: 3})
	require.Empty(t, acts)
	require.Equal(t, int64(2), s.HighWatermark())
	_, offset, ok := s.PendingVoterChange()
	require.True(t, ok)
	require.Equal(t, int64(2), offset)

	// Voter 2's fetch commits the record: the answer goes out.
	s, acts = step(t, s, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.Contains(t, acts, Action(changeResponse(7, NoNode, AddVoter, ErrNone, 1, 1)))
	require.Contains(t, acts, Action(StopTimer{Timer: VoterChangeTimer}))
	_, _, ok = s.PendingVoterChange()
	require.False(t, ok)

	// The leader removes itself: still Leader, not counted.
	s, acts = step(t, s, ReceiveRemoveVoter{Ref: 8, From: NoNode, Voter: key1A})
	requireActions(t, []Action{
		ResetTimer{Timer: VoterChangeTimer, After: DefaultRequestTimeout},
		AppendVoters{Epoch: 1, Voters: []ReplicaKey{key2B}, Change: VoterChange{Kind: RemoveVoter, Voter: key1A}},
	}, acts)
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 4, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 3, Voters: []ReplicaKey{key2B}})
	require.False(t, s.IsVoter())
	require.Equal(t, Leader, s.Role())
	s, _ = step(t, s, LogFlushed{Offset: 4})
	require.Equal(t, int64(3), s.HighWatermark(), "the leader's own flush does not count")
	s, acts = step(t, s, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 4, FetchEpoch: 1})
	require.Equal(t, int64(4), s.CommittedOffset(), "voter 2 alone is the majority")
	require.Contains(t, acts, Action(changeResponse(8, NoNode, RemoveVoter, ErrNone, 1, 1)))
	require.Equal(t, Resigned, s.Role(), "a leader whose removal committed resigns")
	ends := ofType[SendEndQuorumEpoch](acts)
	require.Len(t, ends, 1)
	require.Equal(t, key2B, ends[0].To)
}
