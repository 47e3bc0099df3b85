package kraft

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Scenario tests that close the gaps mutation testing (gremlins) found: each
// pins a boundary that the other tests left free. docs/verification.md
// ("Mutation testing") lists the mutants each one kills and the survivors
// that cannot change behaviour.

// mtRestartedFollower is replica 2 of voters 1, 2, 3 restarted as Follower
// of 1 in epoch 2, with five records of epoch 1 in its log and no high
// watermark.
func mtRestartedFollower(t *testing.T) State {
	t.Helper()
	s, _ := restart(t, config(2, 1, 2, 3), QuorumRecord{Epoch: 2, LeaderID: 1, VotedKey: NoReplica}, LogState{End: LogEnd{Offset: 5, Epoch: 1}})
	vtIs(t, s, Follower, 2, 1, NoReplica)
	require.Equal(t, int64(-1), s.HighWatermark())
	return s
}

// TestEndQuorumBackoffOfOneMillisecondIsWholeMilliseconds: Kafka computes
// the backoff in whole milliseconds, and kraft does so whenever B_max is at
// least 1 ms; only a B_max below 1 ms is computed in nanoseconds. With
// B_max = 1 ms, rank 1 of 2 waits max(1, 1 >> 1) << 0 = 1 ms, not 0.5 ms.
// Reference: KafkaRaftClient.strictExponentialElectionBackoffMs;
// docs/design.md, contract decision 4.
func TestEndQuorumBackoffOfOneMillisecondIsWholeMilliseconds(t *testing.T) {
	cases := []struct {
		backoffMax time.Duration
		want       time.Duration
	}{
		{time.Millisecond, time.Millisecond},
		{999 * time.Microsecond, 499500 * time.Nanosecond},
	}
	for _, c := range cases {
		cfg := config(1, 1, 2, 3)
		cfg.ElectionBackoffMax = c.backoffMax
		s := vtFetched(t, rrFollower(t, cfg, 1, 2))
		_, acts := step(t, s, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: 1, Of: 2}})
		require.Equal(t, []Action{
			ResetTimer{Timer: FetchTimer, After: c.want},
			SendEndQuorumEpochResponse{To: 2, Epoch: 1, LeaderID: 2},
		}, acts, "B_max %v", c.backoffMax)
	}
}

// TestFollowerTruncatesWholeLogOnDivergingOffsetZero: a diverging point at
// offset 0 is a valid answer (only a negative offset is dropped); the
// follower truncates its whole log, goes back to epoch 0, and fetches from
// the start.
// Reference: KafkaRaftClient.handleFetchResponse, ReplicatedLog.truncateToEndOffset.
func TestFollowerTruncatesWholeLogOnDivergingOffsetZero(t *testing.T) {
	s := mtRestartedFollower(t)
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 2, HighWatermark: -1, Diverging: &LogOffsetMetadata{Epoch: 1, Offset: 0}})
	require.Equal(t, []Action{
		TruncateLog{To: 0},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 2, FetchOffset: 0, FetchEpoch: 0, HighWatermark: -1},
	}, acts)
	vtIs(t, next, Follower, 2, 1, NoReplica)
	require.Equal(t, LogEnd{}, next.LogEnd())
}

// TestFollowerTakesBootstrapSnapshotID: a snapshot id whose offset and
// epoch are 0 (Kafka's bootstrap checkpoint 0-0) is a valid answer: only
// negative fields are dropped. The follower resets its fetch timer, sends
// no Fetch (the host fetches the snapshot), and counts the answer as a
// successful fetch (it stops granting pre-votes).
// Reference: KafkaRaftClient.handleFetchResponse; docs/design.md, contract
// decision 8, and D10; KIP-996.
func TestFollowerTakesBootstrapSnapshotID(t *testing.T) {
	s := rpFollower(t)
	require.True(t, rpPreVoteGranted(t, s))
	for _, id := range []LogEnd{{Offset: 0, Epoch: 0}, {Offset: 7, Epoch: 0}, {Offset: 0, Epoch: 1}} {
		id := id
		next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: -1, Snapshot: &id})
		require.Equal(t, []Action{ResetTimer{Timer: FetchTimer, After: testTf}}, acts, "snapshot %+v", id)
		require.False(t, rpPreVoteGranted(t, next), "snapshot %+v", id)
	}
}

// TestFollowerAdoptsHighWatermarkZero: a leader's high watermark of 0 is
// known (only -1 means unknown), so a follower whose high watermark is
// unknown adopts 0 and reports it.
// Reference: KafkaRaftClient.handleFetchResponse (updateFollowerHighWatermark).
func TestFollowerAdoptsHighWatermarkZero(t *testing.T) {
	s := rpFollower(t)
	require.Equal(t, int64(-1), s.HighWatermark())
	next, acts := step(t, s, rpOK(1, 1, 0))
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 0},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 0, FetchEpoch: 0, HighWatermark: 0},
	}, acts)
	require.Equal(t, int64(0), next.HighWatermark())
}

// TestLeaderTreatsFetchFromOffsetZeroAsValid: a fetch from offset 0 never
// diverges, whatever last fetched epoch it carries (the log starts at 0):
// it is answered with data and counts for check-quorum. The same epoch at a
// later offset diverges.
// Reference: KafkaMetadataLog.validateOffsetAndEpoch
// (startOffset == 0 && offset == 0 is valid).
func TestLeaderTreatsFetchFromOffsetZeroAsValid(t *testing.T) {
	// Epochs 1 at 0 and 3 at 5; leader of 4 from offset 8, log end 9.
	s := rpRestartedLeader(t, 3, LogState{End: LogEnd{Offset: 8, Epoch: 3}, Epochs: []EpochStart{{Epoch: 1}, {Epoch: 3, StartOffset: 5}}})
	_, acts := step(t, s, rpFetch(2, 4, 0, 2))
	require.Equal(t, []Action{
		vtCheckTimer,
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 4, LeaderID: 1, HighWatermark: -1},
	}, acts)

	_, acts = step(t, s, rpFetch(2, 4, 1, 2))
	require.Equal(t, []Action{
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 4, LeaderID: 1, HighWatermark: -1, Diverging: &LogOffsetMetadata{Epoch: 1, Offset: 5}},
	}, acts)
}

// TestRestartLogWithoutHistoryIsAllInItsEndEpoch: a LogState with records
// and no epoch history is read as a log whose records all belong to its end
// epoch. Elected leader of the next epoch, the replica answers a fetch in
// an older epoch with the diverging point (that epoch, 0): the start of its
// first epoch.
// Reference: LogState doc; RaftLog.validateOffsetAndEpoch;
// LeaderEpochFileCache.endOffsetFor.
func TestRestartLogWithoutHistoryIsAllInItsEndEpoch(t *testing.T) {
	s := rpRestartedLeader(t, 2, LogState{End: LogEnd{Offset: 5, Epoch: 2}})
	require.Equal(t, Epoch(3), s.Epoch())
	require.Equal(t, LogEnd{Offset: 6, Epoch: 3}, s.LogEnd())
	_, acts := step(t, s, rpFetch(2, 3, 3, 1))
	require.Equal(t, []Action{
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 3, LeaderID: 1, HighWatermark: -1, Diverging: &LogOffsetMetadata{Epoch: 1, Offset: 0}},
	}, acts)
}

// TestLogStateEpochBoundaries: an epoch history may start with epoch 0 (the
// same log NewState builds from records of epoch 0 without a history), but
// two epochs may not start at the same offset: each epoch in the history
// holds at least one record.
// Reference: LeaderEpochFileCache (epochs in a log ascend).
func TestLogStateEpochBoundaries(t *testing.T) {
	ok := LogState{End: LogEnd{Offset: 5, Epoch: 1}, Epochs: []EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 2}}}
	s, _, err := NewState(config(1, 1, 2, 3), nil, ok)
	require.NoError(t, err)
	require.Equal(t, LogEnd{Offset: 5, Epoch: 1}, s.LogEnd())

	empty := LogState{End: LogEnd{Offset: 5, Epoch: 2}, Epochs: []EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 0}}}
	_, _, err = NewState(config(1, 1, 2, 3), nil, empty)
	require.Error(t, err)
}

// TestLogHistoryDoesNotDependOnAppendBatching: the state after a leader's
// log reaches an end does not depend on how the host batched the
// LogAppended reports of one epoch: one report per record gives the state
// one report for all of them gives.
// Reference: LogAppended doc (one report per epoch); LeaderState.updateLocalState.
func TestLogHistoryDoesNotDependOnAppendBatching(t *testing.T) {
	s := start(t, config(1, 1))
	require.Equal(t, Leader, s.Role())
	one := s
	for i := int64(1); i <= 5; i++ {
		one, _ = durable(t, one, LogEnd{Offset: i, Epoch: 1})
	}
	all, _ := durable(t, s, LogEnd{Offset: 5, Epoch: 1})
	require.Equal(t, all, one)
	require.Equal(t, int64(5), one.HighWatermark())
}

// TestConfigAcceptsMaxVoters: a voter set of exactly MaxVoters voters is
// valid and elects a leader; one more is an error.
// Reference: Config doc (MaxVoters).
func TestConfigAcceptsMaxVoters(t *testing.T) {
	ids := make([]NodeID, MaxVoters+1)
	for i := range ids {
		ids[i] = NodeID(i)
	}
	cfg := config(MaxVoters-1, ids[:MaxVoters]...)
	require.NoError(t, cfg.Validate())
	s := start(t, cfg)
	require.Equal(t, Leader, vtLeader(t, s).Role())

	require.Error(t, config(0, ids...).Validate())
}

// TestResponseNamingNodeZeroLeaderIsFollowed: node 0 is a valid leader id
// (only negative ids mean "no leader"): a Prospective whose pre-vote is
// answered with leader 0 of its epoch follows node 0.
// Reference: KafkaRaftClient.maybeHandleCommonResponse; NodeID doc.
func TestResponseNamingNodeZeroLeaderIsFollowed(t *testing.T) {
	s := vtProspective(t, start(t, config(1, 0, 1, 2)))
	next, acts := step(t, s, ReceiveVoteResponse{From: 2, Epoch: 0, VoteGranted: false, LeaderID: 0})
	vtActs(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 0, LeaderID: 0, VotedKey: NoReplica}},
		vtRC(Prospective, Follower, 0, 0),
		StopTimer{Timer: ElectionTimer},
		vtFetchTimer,
		vtFetch(next, 0),
	}, acts)
	vtIs(t, next, Follower, 0, 0, NoReplica)
}

// TestLeaderCountsFetchesOfVoterZero: node 0 is a voter like any other: its
// valid Fetch moves its position (and with it the high watermark) and
// restarts the check-quorum window, and so does its FetchSnapshot. Only a
// negative replica id is a non-replica consumer.
// Reference: LeaderState.updateReplicaState, updateCheckQuorumForFollowingVoter,
// maybeUpdateHighWatermark; KafkaRaftClient.handleFetchRequest,
// handleFetchSnapshotRequest
// (replicaId >= 0).
func TestLeaderCountsFetchesOfVoterZero(t *testing.T) {
	s := rpElect(t, start(t, config(1, 0, 1, 2)))
	require.Equal(t, LogEnd{Offset: 1, Epoch: 1}, s.LogEnd())

	next, acts := step(t, s, rpFetch(0, 1, 1, 1))
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 1},
		vtCheckTimer,
		SendFetchResponse{To: 0, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 1},
	}, acts)
	require.Equal(t, int64(1), next.HighWatermark())

	_, acts = step(t, s, ReceiveFetchSnapshot{From: 0, CurrentLeaderEpoch: 1})
	require.Equal(t, []Action{
		vtCheckTimer,
		SendFetchSnapshotResponse{To: 0, Error: ErrNone, Epoch: 1, LeaderID: 1},
	}, acts)
}

// TestLeaderZeroRefusesFetchCarryingItsOwnID: a leader whose id is 0
// answers a Fetch that carries its own id with UNKNOWN_SERVER_ERROR, as
// Kafka's updateReplicaState throws, and records nothing.
// Reference: KafkaRaftClient.handleFetchRequest,
// LeaderState.updateReplicaState.
func TestLeaderZeroRefusesFetchCarryingItsOwnID(t *testing.T) {
	s := rpElect(t, start(t, config(0, 0, 1, 2)))
	next, acts := step(t, s, rpFetch(0, 1, 1, 1))
	require.Equal(t, []Action{
		SendFetchResponse{To: 0, Error: ErrUnknownServerError, Epoch: 1, LeaderID: 0, HighWatermark: -1},
	}, acts)
	require.Equal(t, s, next)
}

// TestTwoVoterLeaderResendsBeginQuorumEpoch: a leader of two voters re-sends
// BeginQuorumEpoch to the other voter when it has not fetched since the
// last round; only the only voter has no one to tell.
// Reference: LeaderState.needToSendBeginQuorumRequests, KAFKA-16926.
func TestTwoVoterLeaderResendsBeginQuorumEpoch(t *testing.T) {
	s := rpLeaderOf(t, 2)
	_, acts := step(t, s, BeginQuorumEpochTimeout{})
	require.Equal(t, []Action{
		SendBeginQuorumEpoch{To: vtKey(2), Epoch: 1, LeaderID: 1},
		vtBeginTimer,
	}, acts)
}

// TestPreferredSuccessorsTieBreakByReplicaKey: voters with the same fetch
// position (here: none known) are ordered by replica key, not by their
// place in the configured voter set.
// Reference: LeaderState.nonLeaderVotersByDescendingFetchOffset.
func TestPreferredSuccessorsTieBreakByReplicaKey(t *testing.T) {
	s := rpElect(t, start(t, config(1, 1, 3, 2)))
	next, acts := step(t, s, Resign{})
	successors := keys(2, 3)
	vtActs(t, []Action{
		vtRC(Leader, Resigned, 1, 1),
		StopTimer{Timer: CheckQuorumTimer},
		StopTimer{Timer: BeginQuorumEpochTimer},
		vtElection(rpElectionTimer(t, acts)),
		SendEndQuorumEpoch{To: vtKey(3), Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
		SendEndQuorumEpoch{To: vtKey(2), Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
	}, acts)
	require.Equal(t, Resigned, next.Role())
}

// TestReplicaKeyCompareOrdersByIDThenDirectory: ReplicaKey.Compare is
// Kafka's ReplicaKey.compareTo: by id, then by directory id byte by byte,
// "no directory id" as the zero UUID; equal keys compare 0.
// Reference: ReplicaKey.compareTo.
func TestReplicaKeyCompareOrdersByIDThenDirectory(t *testing.T) {
	cases := []struct {
		a, b ReplicaKey
		want int
	}{
		{ReplicaKey{ID: 1}, ReplicaKey{ID: 2}, -1},
		{ReplicaKey{ID: 2}, ReplicaKey{ID: 1}, 1},
		{ReplicaKey{ID: 2}, ReplicaKey{ID: 2}, 0},
		{ReplicaKey{ID: 1, DirectoryID: vtDirB}, ReplicaKey{ID: 2}, -1},
		{ReplicaKey{ID: 2}, ReplicaKey{ID: 2, DirectoryID: dirA}, -1},
		{ReplicaKey{ID: 2, DirectoryID: dirA}, ReplicaKey{ID: 2}, 1},
		{ReplicaKey{ID: 2, DirectoryID: dirA}, ReplicaKey{ID: 2, DirectoryID: vtDirB}, -1},
		{ReplicaKey{ID: 2, DirectoryID: vtDirB}, ReplicaKey{ID: 2, DirectoryID: dirA}, 1},
		{ReplicaKey{ID: 2, DirectoryID: dirA}, ReplicaKey{ID: 2, DirectoryID: dirA}, 0},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.a.Compare(c.b), "%v vs %v", c.a, c.b)
	}
}

// TestLogEndCompareOrdersByEpochThenOffset: LogEnd.Compare is Kafka's
// OffsetAndEpoch.compareTo: by epoch first, then by offset; equal tips
// compare 0.
// Reference: OffsetAndEpoch.compareTo.
func TestLogEndCompareOrdersByEpochThenOffset(t *testing.T) {
	cases := []struct {
		a, b LogEnd
		want int
	}{
		{LogEnd{Offset: 9, Epoch: 1}, LogEnd{Offset: 1, Epoch: 2}, -1},
		{LogEnd{Offset: 1, Epoch: 2}, LogEnd{Offset: 9, Epoch: 1}, 1},
		{LogEnd{Offset: 4, Epoch: 2}, LogEnd{Offset: 5, Epoch: 2}, -1},
		{LogEnd{Offset: 5, Epoch: 2}, LogEnd{Offset: 4, Epoch: 2}, 1},
		{LogEnd{Offset: 5, Epoch: 2}, LogEnd{Offset: 5, Epoch: 2}, 0},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.a.Compare(c.b), "%+v vs %+v", c.a, c.b)
	}
}

// TestErrorCodesHaveKafkaValues: the error codes are Kafka's numeric wire
// values, and print as Kafka names them.
// Reference: org.apache.kafka.common.protocol.Errors.
func TestErrorCodesHaveKafkaValues(t *testing.T) {
	cases := []struct {
		code  ErrorCode
		value int16
		name  string
	}{
		{ErrUnknownServerError, -1, "UNKNOWN_SERVER_ERROR"},
		{ErrNone, 0, "NONE"},
		{ErrUnknownTopicOrPartition, 3, "UNKNOWN_TOPIC_OR_PARTITION"},
		{ErrNotLeaderOrFollower, 6, "NOT_LEADER_OR_FOLLOWER"},
		{ErrBrokerNotAvailable, 8, "BROKER_NOT_AVAILABLE"},
		{ErrClusterAuthorizationFailed, 31, "CLUSTER_AUTHORIZATION_FAILED"},
		{ErrUnsupportedVersion, 35, "UNSUPPORTED_VERSION"},
		{ErrInvalidRequest, 42, "INVALID_REQUEST"},
		{ErrFencedLeaderEpoch, 74, "FENCED_LEADER_EPOCH"},
		{ErrUnknownLeaderEpoch, 75, "UNKNOWN_LEADER_EPOCH"},
		{ErrSnapshotNotFound, 98, "SNAPSHOT_NOT_FOUND"},
		{ErrPositionOutOfRange, 99, "POSITION_OUT_OF_RANGE"},
		{ErrInconsistentClusterID, 104, "INCONSISTENT_CLUSTER_ID"},
		{ErrInvalidVoterKey, 125, "INVALID_VOTER_KEY"},
	}
	for _, c := range cases {
		require.Equal(t, c.value, int16(c.code), c.name)
		require.Equal(t, c.name, c.code.String())
	}
	require.Equal(t, "ERROR(1)", ErrorCode(1).String())
}

// TestConfigRejectsObserverThatIsFirstVoter: Observer set on a replica
// whose key is in the voter set is an error wherever the key stands in the
// set, the first place included.
// Reference: Config.Validate doc.
func TestConfigRejectsObserverThatIsFirstVoter(t *testing.T) {
	for _, local := range []NodeID{1, 2, 3} {
		cfg := Config{Local: ReplicaKey{ID: local}, Observer: true, Voters: keys(1, 2, 3)}
		require.Error(t, cfg.Validate(), "local %d", local)
		_, _, err := NewState(cfg, nil, LogState{})
		require.Error(t, err, "local %d", local)
	}
}
