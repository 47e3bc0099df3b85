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

// staticLeaderWithHWM is leaderOf(t, 3) with its high watermark
// established (voters 2 and 3 fetched its LeaderChange record).
func staticLeaderWithHWM(t *testing.T) State {
	t.Helper()
	s := leaderOf(t, 3)
	s, _ = step(t, s, fetchFrom(2, 1, 1, 1))
	require.Equal(t, int64(1), s.HighWatermark())
	return s
}

// TestReconfigRequestErrors: each refusal of AddRaftVoter, RemoveRaftVoter
// and UpdateRaftVoter, in Kafka's order of checks, leaves the state as it
// was and answers at once.
// Reference: KafkaRaftClientReconfigTest testAddVoterInvalidClusterId,
// testAddVoterToNotLeader, testAddVoterWithMissingDirectoryId,
// testAddVoterWithoutFencedPreviousLeaders, testAddVoterWithKraftVersion0,
// testAddVoterWithExistingVoter, testAddVoterWithPendingAddVoter,
// testRemoveVoterInvalidClusterId, testRemoveVoterToNotLeader,
// testRemoveVoterWithNoneVoter, testRemoveVoterWithNoneVoterId,
// testRemoveVoterWithKraftVersion0, testRemoveVoterWithPendingRemoveVoter,
// testRemoveVoterWithoutFencedPreviousLeaders, testUpdateVoterInvalidClusterId,
// testUpdateVoterOldEpoch, testUpdateVoterNewEpoch, testInvalidUpdateVoter,
// testUpdateVoterToNotLeader, testUpdateVoterWithKraftVersion0,
// testUpdateVoterWithNoneVoter, testUpdateVoterWithPendingAddVoter,
// testUpdateVoterWithoutFencedPreviousLeaders; VoterSetTest
// testCannotRemoveToEmptyVoterSet.
func TestReconfigRequestErrors(t *testing.T) {
	leader := dynamicLeader(t, key1A, key2B, key3C)
	alone := dynamicLeader(t, key1A)
	static := staticLeaderWithHWM(t)
	// A new leader of the bootstrap set: no high watermark yet.
	fresh, _, err := NewState(dynamicConfig(key1A), nil, bootstrap(key1A, key2B, key3C))
	require.NoError(t, err)
	fresh, _ = step(t, fresh, ElectionTimeout{})
	fresh, _ = step(t, fresh, ReceiveVoteResponse{From: 2, Epoch: 0, VoteGranted: true, LeaderID: NoNode})
	fresh, _ = step(t, fresh, ReceiveVoteResponse{From: 2, Epoch: 1, VoteGranted: true, LeaderID: NoNode})
	require.Equal(t, Leader, fresh.Role())
	follower, _, err := NewState(dynamicConfig(key2B), nil, bootstrap(key1A, key2B, key3C))
	require.NoError(t, err)
	follower, _ = step(t, follower, ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 2, VoterDirectoryID: dirB})
	require.Equal(t, Follower, follower.Role())
	// A leader with an AddRaftVoter waiting for ApiVersions.
	pending, _ := step(t, leader, ReceiveAddVoter{Ref: 1, Voter: key4A, Listener: true})
	// A leader whose latest VotersRecord is not committed (an update went
	// out and was written).
	uncommitted, acts := step(t, leader, ReceiveUpdateVoter{Ref: 1, CurrentLeaderEpoch: 1, Voter: key2B, Listener: true, KRaftVersions: VersionRange{Min: 0, Max: 1}})
	require.Len(t, ofType[AppendVoters](acts), 1)
	uncommitted, _ = step(t, uncommitted, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	uncommitted, _ = step(t, uncommitted, VotersAppended{Offset: 2, Voters: []ReplicaKey{key1A, key2B, key3C}})

	v01 := VersionRange{Min: 0, Max: 1}
	add := func(key ReplicaKey) ReceiveAddVoter {
		return ReceiveAddVoter{Ref: 9, From: 5, Voter: key, Listener: true}
	}
	remove := func(key ReplicaKey) ReceiveRemoveVoter { return ReceiveRemoveVoter{Ref: 9, From: 5, Voter: key} }
	update := func(epoch Epoch, key ReplicaKey, r VersionRange) ReceiveUpdateVoter {
		return ReceiveUpdateVoter{Ref: 9, From: 5, CurrentLeaderEpoch: epoch, Voter: key, Listener: true, KRaftVersions: r}
	}
	withCluster := func(e Event) Event {
		switch e := e.(type) {
		case ReceiveAddVoter:
			e.ClusterID = otherClusterID
			return e
		case ReceiveRemoveVoter:
			e.ClusterID = otherClusterID
			return e
		case ReceiveUpdateVoter:
			e.ClusterID = otherClusterID
			return e
		}
		return e
	}
	clusterLeader := dynamicLeaderWithCluster(t)
	noListener := add(key4A)
	noListener.Listener = false
	noUpdateListener := update(1, key2B, v01)
	noUpdateListener.Listener = false

	cases := []struct {
		name string
		s    State
		e    Event
		kind VoterChangeKind
		code ErrorCode
	}{
		{"add: another cluster", clusterLeader, withCluster(add(key4A)), AddVoter, ErrInconsistentClusterID},
		{"add: not the leader", follower, add(key4A), AddVoter, ErrNotLeaderOrFollower},
		{"add: no directory id", leader, add(ReplicaKey{ID: 4}), AddVoter, ErrInvalidRequest},
		{"add: no default listener", leader, noListener, AddVoter, ErrInvalidRequest},
		{"add: a change pending", pending, add(ReplicaKey{ID: 5, DirectoryID: dirB}), AddVoter, ErrRequestTimedOut},
		{"add: no high watermark yet", fresh, add(key4A), AddVoter, ErrRequestTimedOut},
		{"add: kraft.version 0", static, add(key4A), AddVoter, ErrUnsupportedVersion},
		{"add: kraft.version 0, no high watermark yet", leaderOf(t, 3), add(key4A), AddVoter, ErrRequestTimedOut},
		{"add: uncommitted VotersRecord", uncommitted, add(key4A), AddVoter, ErrRequestTimedOut},
		{"add: an existing voter id", leader, add(key2C), AddVoter, ErrDuplicateVoter},
		{"remove: another cluster", clusterLeader, withCluster(remove(key2B)), RemoveVoter, ErrInconsistentClusterID},
		{"remove: not the leader", follower, remove(key2B), RemoveVoter, ErrNotLeaderOrFollower},
		{"remove: no directory id", leader, remove(ReplicaKey{ID: 2}), RemoveVoter, ErrInvalidRequest},
		{"remove: a change pending", pending, remove(key2B), RemoveVoter, ErrRequestTimedOut},
		{"remove: no high watermark yet", fresh, remove(key2B), RemoveVoter, ErrRequestTimedOut},
		{"remove: kraft.version 0", static, remove(ReplicaKey{ID: 2, DirectoryID: dirB}), RemoveVoter, ErrUnsupportedVersion},
		{"remove: uncommitted VotersRecord", uncommitted, remove(key2B), RemoveVoter, ErrRequestTimedOut},
		{"remove: not a voter", leader, remove(key4A), RemoveVoter, ErrVoterNotFound},
		{"remove: another directory id", leader, remove(key2C), RemoveVoter, ErrVoterNotFound},
		{"remove: the last voter", alone, remove(key1A), RemoveVoter, ErrVoterNotFound},
		{"update: another cluster", clusterLeader, withCluster(update(1, key2B, v01)), UpdateVoter, ErrInconsistentClusterID},
		{"update: an older epoch", leader, update(0, key2B, v01), UpdateVoter, ErrFencedLeaderEpoch},
		{"update: a newer epoch", leader, update(2, key2B, v01), UpdateVoter, ErrUnknownLeaderEpoch},
		{"update: not the leader", follower, update(1, key2B, v01), UpdateVoter, ErrNotLeaderOrFollower},
		{"update: no directory id", leader, update(1, ReplicaKey{ID: 2}, v01), UpdateVoter, ErrInvalidRequest},
		{"update: no default listener", leader, noUpdateListener, UpdateVoter, ErrInvalidRequest},
		{"update: a negative version", leader, update(1, key2B, VersionRange{Min: -1, Max: 1}), UpdateVoter, ErrInvalidRequest},
		{"update: max below min", leader, update(1, key2B, VersionRange{Min: 1, Max: 0}), UpdateVoter, ErrInvalidRequest},
		{"update: a change pending", pending, update(1, key2B, v01), UpdateVoter, ErrRequestTimedOut},
		{"update: no high watermark yet", fresh, update(1, key2B, v01), UpdateVoter, ErrRequestTimedOut},
		{"update: kraft.version 0", static, update(1, ReplicaKey{ID: 2, DirectoryID: dirB}, v01), UpdateVoter, ErrUnsupportedVersion},
		{"update: uncommitted VotersRecord", uncommitted, update(1, key2B, v01), UpdateVoter, ErrRequestTimedOut},
		{"update: kraft.version 1 unsupported", leader, update(1, key2B, VersionRange{Min: 0, Max: 0}), UpdateVoter, ErrInvalidRequest},
		{"update: not a voter", leader, update(1, key4A, v01), UpdateVoter, ErrVoterNotFound},
		{"update: another directory id", leader, update(1, key2C, v01), UpdateVoter, ErrVoterNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, acts := step(t, tc.s, tc.e)
			require.Equal(t, []Action{changeResponse(9, 5, tc.kind, tc.code, tc.s.Epoch(), tc.s.Leader())}, acts)
			require.Equal(t, tc.s, next)
		})
	}
}

// dynamicLeaderWithCluster is dynamicLeader(key1A, key2B, key3C) with a
// cluster id.
func dynamicLeaderWithCluster(t *testing.T) State {
	t.Helper()
	cfg := dynamicConfig(key1A)
	cfg.ClusterID = testClusterID
	s, _, err := NewState(cfg, nil, bootstrap(key1A))
	require.NoError(t, err)
	require.Equal(t, Leader, s.Role())
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 2, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 1, Voters: []ReplicaKey{key1A}})
	s, _ = step(t, s, LogFlushed{Offset: 2})
	require.Equal(t, int64(2), s.HighWatermark())
	return s
}

// addPending is dynamicLeader(key1A, key2B, key3C) with an AddRaftVoter of
// key4A (handle 7, from an admin client) waiting for ApiVersions.
func addPending(t *testing.T) State {
	t.Helper()
	s, acts := step(t, dynamicLeader(t, key1A, key2B, key3C), ReceiveAddVoter{Ref: 7, From: NoNode, Voter: key4A, Listener: true})
	requireActions(t, []Action{SendAPIVersions{To: key4A}, ResetTimer{Timer: VoterChangeTimer, After: DefaultRequestTimeout}}, acts)
	return s
}

var v01 = &VersionRange{Min: 0, Max: 1}

// TestAddVoterApiVersionsAnswers: the new voter's ApiVersions answer.
// An error or a range without kraft.version 1 fails the request (after
// StopTimer), one from another node is ignored, and a caught-up observer
// is added at once.
// Reference: KafkaRaftClientReconfigTest testAddVoterWithApiVersionsFromIncorrectNode,
// testAddVoterInvalidFeatureVersion, testAddVoter;
// AddVoterHandler.handleApiVersionsResponse.
func TestAddVoterApiVersionsAnswers(t *testing.T) {
	s := addPending(t)
	failed := []Action{StopTimer{Timer: VoterChangeTimer}, changeResponse(7, NoNode, AddVoter, ErrRequestTimedOut, 1, 1)}
	invalid := []Action{StopTimer{Timer: VoterChangeTimer}, changeResponse(7, NoNode, AddVoter, ErrInvalidRequest, 1, 1)}
	for _, tc := range []struct {
		name string
		e    ReceiveAPIVersionsResponse
		want []Action
	}{
		{"an error", ReceiveAPIVersionsResponse{From: 4, Error: ErrBrokerNotAvailable, KRaftVersions: v01}, failed},
		{"no kraft.version", ReceiveAPIVersionsResponse{From: 4}, invalid},
		{"kraft.version 0 only", ReceiveAPIVersionsResponse{From: 4, KRaftVersions: &VersionRange{Min: 0, Max: 0}}, invalid},
		{"kraft.version 2 and up", ReceiveAPIVersionsResponse{From: 4, KRaftVersions: &VersionRange{Min: 2, Max: 3}}, invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, acts := step(t, s, tc.e)
			requireActions(t, tc.want, acts)
			_, _, ok := next.PendingVoterChange()
			require.False(t, ok)
		})
	}
	t.Run("another node", func(t *testing.T) {
		next, acts := step(t, s, ReceiveAPIVersionsResponse{From: 5, KRaftVersions: v01})
		require.Empty(t, acts)
		require.Equal(t, s, next)
	})
	t.Run("not a leader any more", func(t *testing.T) {
		f, _ := step(t, s, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2, VoterID: 1, VoterDirectoryID: dirA})
		next, acts := step(t, f, ReceiveAPIVersionsResponse{From: 4, KRaftVersions: v01})
		require.Empty(t, acts)
		require.Equal(t, f, next)
	})
	t.Run("caught up", func(t *testing.T) {
		next, _ := step(t, s, ReceiveFetch{From: 4, FromDirectoryID: dirA, CurrentLeaderEpoch: 1, FetchOffset: 2, FetchEpoch: 1})
		next, acts := step(t, next, ReceiveAPIVersionsResponse{From: 4, KRaftVersions: v01})
		requireActions(t, []Action{AppendVoters{Epoch: 1, Voters: []ReplicaKey{key1A, key2B, key3C, key4A}, Change: VoterChange{Kind: AddVoter, Voter: key4A, KRaftVersions: *v01}}}, acts)
		c, offset, ok := next.PendingVoterChange()
		require.True(t, ok)
		require.Equal(t, int64(-1), offset)
		require.Equal(t, VoterChange{Kind: AddVoter, Voter: key4A, KRaftVersions: *v01}, c)
	})
}

// TestAddVoterWaitsForLaggingVoter: a new voter behind the leader's log
// end is waited for (a Fetch that reaches the log end, or the end the
// leader had at its previous Fetch, shows it caught up) until the request
// times out; Kafka answers REQUEST_TIMED_OUT at once (D51, KAFKA-17147).
// Fetches from another directory id of the new voter's id do not count.
// Reference: KafkaRaftClientReconfigTest testAddVoterWithLaggingNewVoter;
// LeaderState.ReplicaState.updateFollowerState.
func TestAddVoterWaitsForLaggingVoter(t *testing.T) {
	s := addPending(t)
	s, _ = step(t, s, ReceiveFetch{From: 4, FromDirectoryID: dirA, CurrentLeaderEpoch: 1, FetchOffset: 0, FetchEpoch: 0})
	s, acts := step(t, s, ReceiveAPIVersionsResponse{From: 4, KRaftVersions: v01})
	require.Empty(t, acts, "lagging: wait")

	timedOut, acts := step(t, s, VoterChangeTimeout{})
	requireActions(t, []Action{StopTimer{Timer: VoterChangeTimer}, changeResponse(7, NoNode, AddVoter, ErrRequestTimedOut, 1, 1)}, acts)
	_, _, ok := timedOut.PendingVoterChange()
	require.False(t, ok)

	// Another directory id with the same node id: not the new voter.
	next, acts := step(t, s, ReceiveFetch{From: 4, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 2, FetchEpoch: 1})
	require.Empty(t, ofType[AppendVoters](acts))
	// The leader's log moves on to 5: below the log end and below the
	// end the leader had at the new voter's previous Fetch (2), still
	// lagging; at the end it had at the previous Fetch (5, while the log
	// moved on to 6), caught up: a busy leader's log end moves under
	// every Fetch (Kafka's lastFetchLeaderLogEndOffset).
	next, _ = step(t, next, LogAppended{End: LogEnd{Offset: 5, Epoch: 1}})
	next, acts = step(t, next, ReceiveFetch{From: 4, FromDirectoryID: dirA, CurrentLeaderEpoch: 1, FetchOffset: 1, FetchEpoch: 1})
	require.Empty(t, ofType[AppendVoters](acts))
	next, _ = step(t, next, LogAppended{End: LogEnd{Offset: 6, Epoch: 1}})
	next, acts = step(t, next, ReceiveFetch{From: 4, FromDirectoryID: dirA, CurrentLeaderEpoch: 1, FetchOffset: 4, FetchEpoch: 1})
	require.Empty(t, ofType[AppendVoters](acts))
	_, acts = step(t, next, ReceiveFetch{From: 4, FromDirectoryID: dirA, CurrentLeaderEpoch: 1, FetchOffset: 6, FetchEpoch: 1})
	require.Len(t, ofType[AppendVoters](acts), 1)
	next, _ = step(t, next, LogAppended{End: LogEnd{Offset: 7, Epoch: 1}})
	_, acts = step(t, next, ReceiveFetch{From: 4, FromDirectoryID: dirA, CurrentLeaderEpoch: 1, FetchOffset: 6, FetchEpoch: 1})
	require.Len(t, ofType[AppendVoters](acts), 1, "6 is the end the leader had at the previous Fetch")
}

// TestVoterChangeFailsWhenLeadershipIsLost: a pending change is answered
// NOT_LEADER_OR_FOLLOWER when the leader leaves the role, and its timer
// stopped.
// Reference: KafkaRaftClientReconfigTest testAddVoterFailsWhenLosingLeadership,
// testRemoveVoterFailsWhenLosingLeadership; LeaderState.close.
func TestVoterChangeFailsWhenLeadershipIsLost(t *testing.T) {
	s := addPending(t)
	next, acts := step(t, s, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2, VoterID: 1, VoterDirectoryID: dirA})
	require.Equal(t, Follower, next.Role())
	require.Contains(t, acts, Action(StopTimer{Timer: VoterChangeTimer}))
	require.Contains(t, acts, Action(changeResponse(7, NoNode, AddVoter, ErrNotLeaderOrFollower, 2, 2)))

	r, _ := step(t, dynamicLeader(t, key1A, key2B, key3C), ReceiveRemoveVoter{Ref: 8, From: 3, Voter: key3C})
	next, acts = step(t, r, Resign{})
	require.Equal(t, Resigned, next.Role())
	require.Contains(t, acts, Action(changeResponse(8, 3, RemoveVoter, ErrNotLeaderOrFollower, 1, 1)))
}

// TestRemoveVoterCommitsAgainstNewSet: removing a follower, the new set is
// in force once written; the high watermark and check-quorum count the
// remaining voters; a timeout before the commit fails the request but the
// record stays in force.
// Reference: KafkaRaftClientReconfigTest testRemoveVoter,
// testRemoveVoterTimedOut (RemoveVoterHandler's request timeout).
func TestRemoveVoterCommitsAgainstNewSet(t *testing.T) {
	s := dynamicLeader(t, key1A, key2B, key3C)
	s, acts := step(t, s, ReceiveRemoveVoter{Ref: 8, From: NoNode, Voter: key3C})
	requireActions(t, []Action{
		ResetTimer{Timer: VoterChangeTimer, After: DefaultRequestTimeout},
		AppendVoters{Epoch: 1, Voters: []ReplicaKey{key1A, key2B}, Change: VoterChange{Kind: RemoveVoter, Voter: key3C}},
	}, acts)
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 2, Voters: []ReplicaKey{key1A, key2B}})
	s, _ = step(t, s, LogFlushed{Offset: 3})
	require.Equal(t, []ReplicaKey{key1A, key2B}, s.Voters())

	// Voter 3 is no longer counted: its Fetch moves nothing.
	n, acts := step(t, s, ReceiveFetch{From: 3, FromDirectoryID: dirC, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.Equal(t, int64(2), n.HighWatermark())
	require.Empty(t, ofType[SendVoterChangeResponse](acts))
	// Voter 2 with the leader is the majority of two.
	n, acts = step(t, n, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.Equal(t, int64(3), n.HighWatermark())
	require.Contains(t, acts, Action(changeResponse(8, NoNode, RemoveVoter, ErrNone, 1, 1)))
	require.Equal(t, Leader, n.Role(), "a leader in the new set stays")

	timedOut, acts := step(t, s, VoterChangeTimeout{})
	requireActions(t, []Action{StopTimer{Timer: VoterChangeTimer}, changeResponse(8, NoNode, RemoveVoter, ErrRequestTimedOut, 1, 1)}, acts)
	require.Equal(t, []ReplicaKey{key1A, key2B}, timedOut.Voters(), "the written record stays in force")
	// It commits later; nobody waits for it.
	_, acts = step(t, timedOut, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.Empty(t, ofType[SendVoterChangeResponse](acts))
}

// TestUpdateVoter: the leader appends the updated set and answers at
// once; a voter known without a directory id gets one (the upgrade path).
// Reference: KafkaRaftClientReconfigTest testUpdateVoter; VoterSetTest
// testUpdateVoter; UpdateVoterHandler.
func TestUpdateVoter(t *testing.T) {
	noDir := ReplicaKey{ID: 2}
	s := dynamicLeader(t, key1A, noDir, key3C)
	s, acts := step(t, s, ReceiveUpdateVoter{Ref: 3, From: 2, CurrentLeaderEpoch: 1, Voter: key2B, Listener: true, KRaftVersions: VersionRange{Min: 0, Max: 1}})
	requireActions(t, []Action{
		AppendVoters{Epoch: 1, Voters: []ReplicaKey{key1A, key2B, key3C}, Change: VoterChange{Kind: UpdateVoter, Voter: key2B, KRaftVersions: VersionRange{Min: 0, Max: 1}}},
		changeResponse(3, 2, UpdateVoter, ErrNone, 1, 1),
	}, acts)
	_, _, pending := s.PendingVoterChange()
	require.False(t, pending, "an update is not waited for")
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 2, Voters: []ReplicaKey{key1A, key2B, key3C}})
	require.Equal(t, []ReplicaKey{key1A, key2B, key3C}, s.Voters())
	// Voter 2's position carries over: its old key, without a directory
	// id, matches the new one (Kafka's getReplicaState).
	require.Equal(t, []int64{2, 2, 2}, s.VoterEndOffsets())
}

// dynamicFollower is key2B following leader 1 in epoch 1 of the bootstrap
// set {1, 2, 3}, with records of epoch 1 at offsets 0 and 1 (the
// LeaderChange and the VotersRecord of the bootstrap set) fetched and
// flushed.
func dynamicFollower(t *testing.T) State {
	t.Helper()
	s, _, err := NewState(dynamicConfig(key2B), nil, bootstrap(key1A, key2B, key3C))
	require.NoError(t, err)
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 2, VoterDirectoryID: dirB})
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 2, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 1, Voters: []ReplicaKey{key1A, key2B, key3C}})
	s, _ = step(t, s, LogFlushed{Offset: 2})
	s, _ = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 2})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, int64(2), s.HighWatermark())
	return s
}

// TestVoterSetFollowsTheLog: a fetched VotersRecord is in force at once,
// uncommitted; a truncation that removes it reverts to the set before it;
// a voter removed becomes an observer (its fetch timeout no longer starts
// an election) and counts elections against the set in force.
// Reference: VoterSetHistoryTest testAddAt, testTruncateTo;
// KRaftControlRecordStateMachine; KafkaRaftClientReconfigTest
// testLeaderSendsBeginQuorumEpochToNewVoter (the new set counts).
func TestVoterSetFollowsTheLog(t *testing.T) {
	s := dynamicFollower(t)
	four := []ReplicaKey{key1A, key2B, key3C, key4A}
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 2, Voters: four})
	require.Equal(t, four, s.Voters())
	require.Equal(t, []VoterSetAt{{Offset: -1, Voters: []ReplicaKey{key1A, key2B, key3C}}, {Offset: 1, Voters: []ReplicaKey{key1A, key2B, key3C}}, {Offset: 2, Voters: four}}, s.VoterSets())
	s, _ = step(t, s, LogFlushed{Offset: 3})

	// Elections count the set in force: three pre-votes, a majority of 3.
	p, acts := step(t, s, FetchTimeout{})
	require.Equal(t, Prospective, p.Role())
	require.Len(t, ofType[SendVoteRequest](acts), 3)
	p, _ = step(t, p, ReceiveVoteResponse{From: 1, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Prospective, p.Role(), "2 of 4 is no majority")
	p, _ = step(t, p, ReceiveVoteResponse{From: 4, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Candidate, p.Role())

	// A new leader of epoch 2 diverges at 2: the record goes, the set
	// reverts.
	f, _ := step(t, s, ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 2, VoterID: 2, VoterDirectoryID: dirB})
	f, acts = step(t, f, ReceiveFetchResponse{From: 3, LeaderID: 3, LeaderEpoch: 2, HighWatermark: 2, Diverging: &LogOffsetMetadata{Offset: 2, Epoch: 1}})
	require.Contains(t, acts, Action(TruncateLog{To: 2}))
	require.Equal(t, []ReplicaKey{key1A, key2B, key3C}, f.Voters())

	// A VotersRecord without this replica: an observer Follower; its fetch
	// timeout makes it Unattached, searching.
	o, _ := step(t, s, LogAppended{End: LogEnd{Offset: 4, Epoch: 1}})
	o, _ = step(t, o, VotersAppended{Offset: 3, Voters: []ReplicaKey{key1A, key3C, key4A}})
	require.False(t, o.IsVoter())
	require.Equal(t, Follower, o.Role())
	o, acts = step(t, o, FetchTimeout{})
	require.Equal(t, Unattached, o.Role())
	require.Empty(t, ofType[SendVoteRequest](acts))
}

// TestVotersAppendedFaults: a VotersRecord out of order, outside the log,
// with an invalid set or without a majority in common with the previous
// set proves the host or the cluster wrong (Kafka's VoterSetHistory.addAt
// throws); a repeated report is dropped.
// Reference: VoterSetHistoryTest testAddAtNonOverlappingMajority,
// testNonoverlappingFromStaticVoterSet, testAddAtOffsetBeforeLast.
func TestVotersAppendedFaults(t *testing.T) {
	s := dynamicFollower(t)
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 5, Epoch: 1}})
	three := []ReplicaKey{key1A, key2B, key3C}
	for _, tc := range []struct {
		name string
		e    VotersAppended
	}{
		{"at the previous record", VotersAppended{Offset: 1, Voters: []ReplicaKey{key1A, key2B}}},
		{"before the previous record", VotersAppended{Offset: 0, Voters: three}},
		{"at the log end", VotersAppended{Offset: 5, Voters: three}},
		{"empty", VotersAppended{Offset: 3, Voters: nil}},
		{"a duplicate id", VotersAppended{Offset: 3, Voters: []ReplicaKey{key1A, key2B, key2C}}},
		{"two voters added", VotersAppended{Offset: 3, Voters: []ReplicaKey{key1A, key2B, key3C, key4A, {ID: 5, DirectoryID: dirB}}}},
		{"two voters removed", VotersAppended{Offset: 3, Voters: []ReplicaKey{key2B}}},
		{"two replaced", VotersAppended{Offset: 3, Voters: []ReplicaKey{key1A, key2C, key4A}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, acts := step(t, s, tc.e)
			requireFault(t, s, next, acts)
		})
	}
	next, acts := step(t, s, VotersAppended{Offset: 1, Voters: three})
	require.Empty(t, acts, "a repeated report")
	require.Equal(t, s, next)
	// One voter replaced (one removed, one added) overlaps.
	next, acts = step(t, s, VotersAppended{Offset: 3, Voters: []ReplicaKey{key1A, key2B, {ID: 3, DirectoryID: dirA}}})
	require.Empty(t, ofType[Fault](acts))
	require.Len(t, next.VoterSets(), 3)
}

// TestVoterSetOfSnapshot: an installed snapshot's set replaces the history
// (reported at the snapshot's end minus one); a log start moved past older
// records keeps only the last set at or below it.
// Reference: KRaftControlRecordStateMachine (a new snapshot reloads the
// history), VoterSetHistoryTest testTruncateOldEntries.
func TestVoterSetOfSnapshot(t *testing.T) {
	s := dynamicFollower(t)
	s, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 2, Snapshot: &LogEnd{Offset: 10, Epoch: 1}})
	require.NotEmpty(t, ofType[SendFetchSnapshot](acts))
	s, acts = step(t, s, ReceiveFetchSnapshotResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, Snapshot: LogEnd{Offset: 10, Epoch: 1}, Size: 5, Position: 0, Bytes: 5})
	require.Contains(t, acts, Action(InstallSnapshot{Snapshot: LogEnd{Offset: 10, Epoch: 1}}))
	require.Equal(t, []ReplicaKey{key1A, key2B, key3C}, s.Voters(), "in force until the snapshot's set is reported")
	s, _ = step(t, s, VotersAppended{Offset: 9, Voters: []ReplicaKey{key1A, key2B, key4A}})
	require.Equal(t, []VoterSetAt{{Offset: 9, Voters: []ReplicaKey{key1A, key2B, key4A}}}, s.VoterSets())

	// The log start: a leader with sets at -1, 1 and 3 moves its start to
	// a snapshot at 3.
	l := dynamicLeader(t, key1A)
	l, _ = step(t, l, ReceiveAddVoter{Ref: 1, Voter: key2B, Listener: true})
	l, _ = step(t, l, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 2, FetchEpoch: 1})
	l, _ = step(t, l, ReceiveAPIVersionsResponse{From: 2, KRaftVersions: v01})
	l, _ = step(t, l, LogAppended{End: LogEnd{Offset: 4, Epoch: 1}})
	l, _ = step(t, l, VotersAppended{Offset: 3, Voters: []ReplicaKey{key1A, key2B}})
	l, _ = step(t, l, LogFlushed{Offset: 4})
	l, _ = step(t, l, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 4, FetchEpoch: 1})
	require.Equal(t, int64(4), l.CommittedOffset())
	require.Len(t, l.VoterSets(), 3)
	l, _ = step(t, l, SnapshotCreated{Snapshot: LogEnd{Offset: 2, Epoch: 1}})
	l, _ = step(t, l, LogStartMoved{Snapshot: LogEnd{Offset: 2, Epoch: 1}})
	require.Equal(t, []VoterSetAt{{Offset: 1, Voters: []ReplicaKey{key1A}}, {Offset: 3, Voters: []ReplicaKey{key1A, key2B}}}, l.VoterSets())
}

// TestNewStateVoterSets: NewState takes the sets the host found in the log
// (the last in force, Config.Voters ignored) and refuses inconsistent ones.
// Reference: VoterSetHistoryTest, KRaftControlRecordStateMachine.
func TestNewStateVoterSets(t *testing.T) {
	cfg := Config{Local: key2B, Voters: keys(7, 8, 9)}
	log := LogState{End: LogEnd{Offset: 4, Epoch: 1}, VoterSets: []VoterSetAt{{Offset: -1, Voters: []ReplicaKey{key1A}}, {Offset: 2, Voters: []ReplicaKey{key1A, key2B}}}}
	s, _, err := NewState(cfg, nil, log)
	require.NoError(t, err)
	require.Equal(t, []ReplicaKey{key1A, key2B}, s.Voters())
	require.True(t, s.IsVoter())
	require.Equal(t, KRaftVersionReconfig, s.KRaftVersion())

	bad := map[string][]VoterSetAt{
		"out of order":            {{Offset: 2, Voters: []ReplicaKey{key1A}}, {Offset: 1, Voters: []ReplicaKey{key1A}}},
		"at the log end":          {{Offset: 4, Voters: []ReplicaKey{key1A}}},
		"below -1":                {{Offset: -2, Voters: []ReplicaKey{key1A}}},
		"empty":                   {{Offset: 1}},
		"no overlapping majority": {{Offset: 0, Voters: []ReplicaKey{key1A}}, {Offset: 1, Voters: []ReplicaKey{key2B, key3C}}},
	}
	for name, sets := range bad {
		_, _, err := NewState(cfg, nil, LogState{End: LogEnd{Offset: 4, Epoch: 1}, VoterSets: sets})
		require.Error(t, err, name)
	}
	// The bootstrap set need not overlap the first record's (Kafka: it is
	// configuration, never replicated).
	_, _, err = NewState(cfg, nil, LogState{End: LogEnd{Offset: 4, Epoch: 1}, VoterSets: []VoterSetAt{{Offset: -1, Voters: []ReplicaKey{key1A}}, {Offset: 1, Voters: []ReplicaKey{key2B, key3C}}}})
	require.NoError(t, err)
}

// TestOverlappingMajority is Kafka's VoterSet.hasOverlappingMajority.
// Reference: VoterSetTest testOverlappingMajority, testNonoverlappingMajority.
func TestOverlappingMajority(t *testing.T) {
	k := func(id NodeID) ReplicaKey { return ReplicaKey{ID: id, DirectoryID: dirA} }
	set := func(ids ...NodeID) []ReplicaKey {
		out := make([]ReplicaKey, len(ids))
		for i, id := range ids {
			out[i] = k(id)
		}
		return out
	}
	for _, tc := range []struct {
		a, b []ReplicaKey
		want bool
	}{
		{set(1, 2, 3), set(1, 2, 3), true},
		{set(1, 2, 3), set(1, 2, 3, 4), true},
		{set(1, 2, 3), set(1, 2), true},
		{set(1, 2, 3), set(1, 2, 4), true},
		{set(1, 2, 3), set(1, 2, 4, 5), false},
		{set(1, 2, 3), set(1), false},
		{set(1, 2, 3), set(4, 5, 6), false},
		{set(1), set(1, 2), true},
		{set(1, 2, 3), []ReplicaKey{k(1), k(2), {ID: 3, DirectoryID: dirB}}, true},
		{set(1, 2, 3), []ReplicaKey{k(1), {ID: 2, DirectoryID: dirB}, {ID: 3, DirectoryID: dirB}}, false},
	} {
		require.Equal(t, tc.want, overlappingMajority(tc.a, tc.b), "%v %v", tc.a, tc.b)
		require.Equal(t, tc.want, overlappingMajority(tc.b, tc.a), "%v %v", tc.b, tc.a)
	}
}

// TestAutoJoin: an observer with AutoJoin asks its leader, after a
// successful Fetch, to add it, or first to remove the voter with its id
// and an older directory id; once per voter-change timer period.
// Reference: KafkaRaftClientReconfigTest testObserverAutoJoinAddsVoter (and
// the remove-old-key case), pollFollowerAsObserver.
func TestAutoJoin(t *testing.T) {
	cfg := dynamicConfig(key4A)
	cfg.AutoJoin, cfg.Observer = true, true
	s, _, err := NewState(cfg, nil, bootstrap(key1A, key2B, key3C))
	require.NoError(t, err)
	require.False(t, s.IsVoter())
	s, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	require.Equal(t, Follower, s.Role())
	require.Contains(t, acts, Action(ResetTimer{Timer: VoterChangeTimer, After: testTf}), "the period starts with the Follower role")
	s, acts = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	require.Empty(t, ofType[SendVoterChange](acts), "not before a period")
	s, _ = step(t, s, VoterChangeTimeout{})
	s, acts = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	require.Contains(t, acts, Action(SendVoterChange{To: 1, Kind: AddVoter, Voter: key4A}))
	require.Contains(t, acts, Action(ResetTimer{Timer: VoterChangeTimer, After: testTf}))
	s, acts = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	require.Empty(t, ofType[SendVoterChange](acts), "once per period")
	s, _ = step(t, s, VoterChangeTimeout{})
	_, acts = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	require.Len(t, ofType[SendVoterChange](acts), 1)
	// A new leader: a new period first.
	n, acts := step(t, s, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2, VoterID: NoNode})
	require.Equal(t, Follower, n.Role())
	require.Contains(t, acts, Action(ResetTimer{Timer: VoterChangeTimer, After: testTf}))
	_, acts = step(t, n, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: 0})
	require.Empty(t, ofType[SendVoterChange](acts))

	// A replica whose id is a voter with another directory id (its disk
	// was replaced) removes that key first.
	cfg = dynamicConfig(key2C)
	cfg.AutoJoin, cfg.Observer = true, true
	r, _, err := NewState(cfg, nil, bootstrap(key1A, key2B, key3C))
	require.NoError(t, err)
	r, _ = step(t, r, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	r, _ = step(t, r, VoterChangeTimeout{})
	_, acts = step(t, r, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	require.Contains(t, acts, Action(SendVoterChange{To: 1, Kind: RemoveVoter, Voter: key2B}))

	// Without AutoJoin nothing is asked, and no timer runs.
	cfg.AutoJoin = false
	r, _, err = NewState(cfg, nil, bootstrap(key1A, key2B, key3C))
	require.NoError(t, err)
	r, acts = step(t, r, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	require.NotContains(t, acts, Action(ResetTimer{Timer: VoterChangeTimer, After: testTf}))
	r, _ = step(t, r, VoterChangeTimeout{})
	_, acts = step(t, r, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	require.Empty(t, ofType[SendVoterChange](acts))
}

// TestDynamicObserverFetchesAfterFlush: with a dynamic voter set an
// observer's Fetch waits for its written log to be flushed, as a voter's
// does: it may be added while the Fetch is in flight, and the leader would
// then count records it has not made durable (D52). A static observer
// fetches at once.
func TestDynamicObserverFetchesAfterFlush(t *testing.T) {
	cfg := dynamicConfig(key4A)
	cfg.Observer = true
	s, _, err := NewState(cfg, nil, bootstrap(key1A, key2B, key3C))
	require.NoError(t, err)
	s, _ = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 2, Epoch: 1}})
	s, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	require.Empty(t, ofType[SendFetch](acts))
	_, acts = step(t, s, LogFlushed{Offset: 2})
	require.Len(t, ofType[SendFetch](acts), 1)

	o := observerFollower(t)
	o, _ = step(t, o, LogAppended{End: LogEnd{Offset: o.LogEnd().Offset + 1, Epoch: o.Epoch()}})
	_, acts = step(t, o, ReceiveFetchResponse{From: o.Leader(), LeaderID: o.Leader(), LeaderEpoch: o.Epoch(), HighWatermark: -1})
	require.Len(t, ofType[SendFetch](acts), 1)
}

// TestRemovedLeaderCountsOnlyTheVoters: a leader that removed itself
// neither counts its own log toward the high watermark nor itself toward
// check-quorum until the removal commits.
// Reference: LeaderState.updateCheckQuorumForFollowingVoter,
// maybeUpdateHighWatermark (voterStates without the leader);
// KafkaRaftClientReconfigTest testRemoveVoterIsLeader.
func TestRemovedLeaderCountsOnlyTheVoters(t *testing.T) {
	s := dynamicLeader(t, key1A, key2B, key3C)
	s, _ = step(t, s, ReceiveRemoveVoter{Ref: 8, Voter: key1A})
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 2, Voters: []ReplicaKey{key2B, key3C}})
	s, _ = step(t, s, LogFlushed{Offset: 3})
	require.False(t, s.IsVoter())
	require.Equal(t, Leader, s.Role())

	s, acts := step(t, s, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.NotContains(t, acts, Action(checkQuorumTimerReset), "one of two voters is no majority without the leader")
	require.Equal(t, int64(2), s.HighWatermark())
	s, acts = step(t, s, ReceiveFetch{From: 3, FromDirectoryID: dirC, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.Contains(t, acts, Action(checkQuorumTimerReset))
	require.Equal(t, int64(3), s.CommittedOffset())
	require.Equal(t, Resigned, s.Role())
}

// TestAddVoterBeyondMaxVoters: kraft keeps at most MaxVoters voters (D51).
func TestAddVoterBeyondMaxVoters(t *testing.T) {
	voters := make([]ReplicaKey, MaxVoters)
	for i := range voters {
		voters[i] = ReplicaKey{ID: NodeID(i + 1), DirectoryID: dirA}
	}
	cfg := dynamicConfig(voters[0])
	log := LogState{End: LogEnd{Offset: 1, Epoch: 1}, VoterSets: []VoterSetAt{{Offset: -1, Voters: voters}}}
	s, _, err := NewState(cfg, &QuorumRecord{Epoch: 1, LeaderID: NoNode, VotedKey: NoReplica}, log)
	require.NoError(t, err)
	s = electLeader(t, s)
	for _, v := range voters[1:33] {
		s, _ = step(t, s, ReceiveFetch{From: v.ID, FromDirectoryID: dirA, CurrentLeaderEpoch: 2, FetchOffset: 2, FetchEpoch: 2})
	}
	require.Equal(t, int64(2), s.HighWatermark())
	_, acts := step(t, s, ReceiveAddVoter{Ref: 1, Voter: ReplicaKey{ID: 100, DirectoryID: dirB}, Listener: true})
	require.Equal(t, []Action{changeResponse(1, 0, AddVoter, ErrInvalidRequest, 2, 1)}, acts)
	next, acts := step(t, s, VotersAppended{Offset: 1, Voters: append(append([]ReplicaKey(nil), voters...), ReplicaKey{ID: 100})})
	requireFault(t, s, next, acts)
}

// TestLeaderRoundsFollowTheNewSet: after an addition, the BeginQuorumEpoch
// re-send, check-quorum and the successor list of a resignation include
// the new voter; after a removal they leave the removed one out.
// Reference: KafkaRaftClientReconfigTest testLeaderSendsBeginQuorumEpochToNewVoter
// (KAFKA-16926's rounds over the voter set), LeaderState
// nonLeaderVotersByDescendingFetchOffset.
func TestLeaderRoundsFollowTheNewSet(t *testing.T) {
	s := addPending(t)
	s, _ = step(t, s, ReceiveFetch{From: 4, FromDirectoryID: dirA, CurrentLeaderEpoch: 1, FetchOffset: 2, FetchEpoch: 1})
	s, _ = step(t, s, ReceiveAPIVersionsResponse{From: 4, KRaftVersions: v01})
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 2, Voters: []ReplicaKey{key1A, key2B, key3C, key4A}})
	s, _ = step(t, s, LogFlushed{Offset: 3})

	// Voters 2 and 3 fetched in the round that just ended; 4 is new.
	s, acts := step(t, s, BeginQuorumEpochTimeout{})
	require.Equal(t, []ReplicaKey{key4A}, toKeys(ofType[SendBeginQuorumEpoch](acts)))
	// Check-quorum: 2 of the 3 others make the majority of 4 with the
	// leader.
	s, acts = step(t, s, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.NotContains(t, acts, Action(checkQuorumTimerReset))
	require.Equal(t, int64(2), s.HighWatermark(), "2 of 4 voters is no majority")
	s, acts = step(t, s, ReceiveFetch{From: 4, FromDirectoryID: dirA, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.Contains(t, acts, Action(checkQuorumTimerReset))
	require.Equal(t, int64(3), s.HighWatermark())
	require.Contains(t, acts, Action(changeResponse(7, NoNode, AddVoter, ErrNone, 1, 1)))

	// The successors: 2 and 4 at 3, then 3 at 2.
	_, acts = step(t, s, Resign{})
	ends := ofType[SendEndQuorumEpoch](acts)
	require.Len(t, ends, 3)
	require.Equal(t, []ReplicaKey{key2B, key4A, key3C}, ends[0].PreferredSuccessors)

	// Remove 3: it is no longer asked to start the epoch nor told of the
	// resignation.
	s, _ = step(t, s, ReceiveRemoveVoter{Ref: 9, Voter: key3C})
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 4, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 3, Voters: []ReplicaKey{key1A, key2B, key4A}})
	_, acts = step(t, s, BeginQuorumEpochTimeout{})
	require.NotContains(t, toKeys(ofType[SendBeginQuorumEpoch](acts)), key3C)
	_, acts = step(t, s, Resign{})
	for _, e := range ofType[SendEndQuorumEpoch](acts) {
		require.NotEqual(t, key3C, e.To)
		require.NotContains(t, e.PreferredSuccessors, key3C)
	}
}

func toKeys(begins []SendBeginQuorumEpoch) []ReplicaKey {
	var out []ReplicaKey
	for _, b := range begins {
		out = append(out, b.To)
	}
	return out
}

// TestRemovedLeaderResignsAfterTimedOutRemoval: a leader whose removal of
// itself timed out (REQUEST_TIMED_OUT, the VotersRecord staying in force)
// still resigns once that record commits: a leader outside the committed
// voter set does not lead on (D51; Kafka resigns only when the pending
// removal commits). Found by the simulator's reconfiguration property.
func TestRemovedLeaderResignsAfterTimedOutRemoval(t *testing.T) {
	s := dynamicLeader(t, key1A, key2B, key3C)
	s, _ = step(t, s, ReceiveRemoveVoter{Ref: 8, From: NoNode, Voter: key1A})
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 2, Voters: []ReplicaKey{key2B, key3C}})
	s, _ = step(t, s, LogFlushed{Offset: 3})
	s, acts := step(t, s, VoterChangeTimeout{})
	require.Contains(t, acts, Action(changeResponse(8, NoNode, RemoveVoter, ErrRequestTimedOut, 1, 1)))
	s, _ = step(t, s, ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.Equal(t, Leader, s.Role(), "not committed yet")
	s, acts = step(t, s, ReceiveFetch{From: 3, FromDirectoryID: dirC, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1})
	require.Equal(t, int64(3), s.CommittedOffset())
	require.Equal(t, Resigned, s.Role())
	require.Empty(t, ofType[SendVoterChangeResponse](acts), "the request was answered already")
	require.Len(t, ofType[SendEndQuorumEpoch](acts), 2)
}

// TestDynamicUnattachedObserverSearchesAfterFlush: an Unattached observer
// of a dynamic quorum sends its Fetch to any voter only once its written
// log is flushed, as a Follower does (D52): the leader that answers may
// count it as a voter already. Found by the simulator's reconfiguration
// property.
func TestDynamicUnattachedObserverSearchesAfterFlush(t *testing.T) {
	cfg := dynamicConfig(key3C)
	cfg.Observer = true
	s, _, err := NewState(cfg, nil, bootstrap(key1A))
	require.NoError(t, err)
	s, _ = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 0})
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 2, Epoch: 1}})
	s, _ = step(t, s, VotersAppended{Offset: 1, Voters: []ReplicaKey{key1A}})
	s, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 2})
	require.Empty(t, ofType[SendFetch](acts))
	s, acts = step(t, s, FetchTimeout{})
	require.Equal(t, Unattached, s.Role())
	require.Empty(t, ofType[SendFetch](acts), "the log is not flushed")
	s, acts = step(t, s, FetchTimeout{})
	require.Empty(t, ofType[SendFetch](acts), "nor on the next search")
	_, acts = step(t, s, LogFlushed{Offset: 2})
	require.Equal(t, []SendFetch{{To: NoNode, CurrentLeaderEpoch: 1, FetchOffset: 2, FetchEpoch: 1, HighWatermark: 2}}, ofType[SendFetch](acts))
}
