package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Scenario tests for the follower side of replication: the fetch timer,
// Fetch responses (truncation, high watermark, errors), and multi-node
// scenarios on testCluster.

// grantsPreVote reports whether s grants an up-to-date pre-vote from
// voter 3 in its epoch.
func grantsPreVote(t *testing.T, s State) bool {
	t.Helper()
	_, acts := step(t, s, preVoteRequest(3, s.Epoch(), LogEnd{Offset: 100, Epoch: s.Epoch()}))
	resp := ofType[SendVoteResponse](acts)
	require.Len(t, resp, 1)
	return resp[0].VoteGranted
}

// TestFollowerFetchTimeoutStartsPreVote: a voter Follower whose fetch timer
// expires becomes Prospective in the same epoch, in memory only (no
// Persist), keeping its leader and vote, stops its fetch timer, arms an
// election timer and sends pre-votes carrying its log end to every other
// voter.
// Reference: KafkaRaftClient.pollFollowerAsVoter, QuorumState.transitionToProspective.
func TestFollowerFetchTimeoutStartsPreVote(t *testing.T) {
	s := start(t, config(2, 1, 2, 3))
	s, _ = step(t, s, ReceiveVoteRequest{From: 1, VoterID: 2, CandidateEpoch: 1, Candidate: 1, PreVote: false})
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 2})
	s, _ = durable(t, s, LogEnd{Offset: 2, Epoch: 1})
	record := QuorumRecord{Epoch: 1, LeaderID: 1, VotedKey: ReplicaKey{ID: 1}}
	require.Equal(t, record, s.Record())

	next, acts := step(t, s, FetchTimeout{})
	require.Equal(t, Prospective, next.Role())
	require.Equal(t, Epoch(1), next.Epoch())
	require.Equal(t, NodeID(1), next.Leader())
	voted, ok := next.VotedKey()
	require.True(t, ok)
	require.Equal(t, ReplicaKey{ID: 1}, voted)
	require.Equal(t, record, next.Record())
	require.Equal(t, []Action{
		RoleChanged{From: Follower, To: Prospective, Epoch: 1, LeaderID: 1, Reason: "fetch timeout"},
		StopTimer{Timer: FetchTimer},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutIn(t, acts)},
		SendVoteRequest{To: ReplicaKey{ID: 1}, CandidateEpoch: 1, Candidate: ReplicaKey{ID: 2}, CandidateLogEnd: LogEnd{Offset: 2, Epoch: 1}, PreVote: true},
		SendVoteRequest{To: ReplicaKey{ID: 3}, CandidateEpoch: 1, Candidate: ReplicaKey{ID: 2}, CandidateLogEnd: LogEnd{Offset: 2, Epoch: 1}, PreVote: true},
	}, acts)
}

// TestObserverFollowerFetchTimeoutBecomesUnattachedKeepingLeader: an
// observer Follower whose fetch timer expires becomes Unattached in the same
// epoch, keeping the leader id, and goes back to looking for the leader: its
// fetch timer is re-armed and a Fetch goes to any bootstrap voter (NoNode).
// The record does not change (Kafka rewrites the same record), so nothing
// is persisted.
// Reference: KafkaRaftClient.pollFollowerAsObserver; docs/design.md, contract
// decision 6.
func TestObserverFollowerFetchTimeoutBecomesUnattachedKeepingLeader(t *testing.T) {
	s := observerFollower(t)
	s, _ = durable(t, s, LogEnd{Offset: 3, Epoch: 1})
	s, _ = step(t, s, fetchOK(2, 1, 2))
	require.Equal(t, int64(2), s.HighWatermark())

	next, acts := step(t, s, FetchTimeout{})
	require.Equal(t, Unattached, next.Role())
	require.Equal(t, Epoch(1), next.Epoch())
	require.Equal(t, NodeID(2), next.Leader())
	require.Equal(t, QuorumRecord{Epoch: 1, LeaderID: 2, VotedKey: NoReplica}, next.Record())
	require.Equal(t, []Action{
		RoleChanged{From: Follower, To: Unattached, Epoch: 1, LeaderID: 2, Reason: "fetch timeout"},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: NoNode, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1, HighWatermark: 2},
	}, acts)
}

// TestUnattachedObserverSearchesOnEachFetchTimeout: an Unattached observer
// sends a Fetch to any bootstrap voter on every fetch timeout and re-arms
// the timer; nothing else changes.
// Reference: docs/design.md, contract decision 6 (Kafka's
// pollUnattachedCommon retries at once).
func TestUnattachedObserverSearchesOnEachFetchTimeout(t *testing.T) {
	s := start(t, observerConfig(4, 1, 2, 3))
	for i := 0; i < 3; i++ {
		next, acts := step(t, s, FetchTimeout{})
		require.Equal(t, s, next)
		require.Equal(t, []Action{
			ResetTimer{Timer: FetchTimer, After: testTf},
			SendFetch{To: NoNode, CurrentLeaderEpoch: 0, FetchOffset: 0, FetchEpoch: 0, HighWatermark: -1},
		}, acts)
		s = next
	}
}

// TestFetchTimeoutIgnoredByRolesWithoutFetchTimer: Unattached voters,
// Prospective, Candidate, Leader and Resigned own no fetch timer and ignore
// a stray FetchTimeout.
// Reference: the README's host contract, rule 2 (Step ignores a timeout the
// current role does not own).
func TestFetchTimeoutIgnoredByRolesWithoutFetchTimer(t *testing.T) {
	for _, c := range everyRole(t, noCluster()) {
		if c.s.Role() == Follower || !c.s.IsVoter() {
			continue
		}
		next, acts := step(t, c.s, FetchTimeout{})
		require.Equal(t, c.s, next, c.name)
		require.Empty(t, acts, c.name)
	}
}

// TestFollowerIgnoresStaleFetchResponse: a Fetch response from an older
// epoch, or UNKNOWN_LEADER_EPOCH, is no longer relevant: nothing changes and
// no Fetch follows (not even a timer reset).
// Reference: KafkaRaftClient.maybeHandleCommonResponse (stale responses).
func TestFollowerIgnoresStaleFetchResponse(t *testing.T) {
	s := start(t, config(2, 1, 2, 3))
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 2, VoterID: 2})
	s, _ = durable(t, s, LogEnd{Offset: 4, Epoch: 1})
	for _, e := range []ReceiveFetchResponse{
		fetchOK(3, 1, 3),
		{From: 3, Error: ErrNone, LeaderID: 3, LeaderEpoch: 1, HighWatermark: 3, Diverging: &LogOffsetMetadata{Epoch: 1, Offset: 0}},
		{From: 1, Error: ErrUnknownLeaderEpoch, LeaderID: 1, LeaderEpoch: 2, HighWatermark: 3},
		{From: 1, Error: ErrFencedLeaderEpoch, LeaderID: NoNode, LeaderEpoch: 0, HighWatermark: -1},
	} {
		next, acts := step(t, s, e)
		require.Equal(t, s, next, "%+v", e)
		require.Empty(t, acts, "%+v", e)
	}
}

// TestFetchResponseWithNewerEpochMovesOn: a response from a newer epoch
// naming a leader makes the replica that leader's Follower (persisted, the
// first Fetch at once); naming no leader makes it Unattached in that epoch.
// The response's records and high watermark are not processed.
// Reference: KafkaRaftClient.handleFetchResponse, maybeHandleCommonResponse,
// maybeTransition.
func TestFetchResponseWithNewerEpochMovesOn(t *testing.T) {
	s := newFollower(t)
	s, _ = durable(t, s, LogEnd{Offset: 2, Epoch: 1})

	next, acts := step(t, s, fetchOK(3, 2, 2))
	require.Equal(t, Follower, next.Role())
	require.Equal(t, Epoch(2), next.Epoch())
	require.Equal(t, NodeID(3), next.Leader())
	require.Equal(t, int64(-1), next.HighWatermark())
	require.Equal(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 2, LeaderID: 3, VotedKey: NoReplica}},
		RoleChanged{From: Follower, To: Follower, Epoch: 2, LeaderID: 3, Reason: "response with a newer epoch"},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 3, CurrentLeaderEpoch: 2, FetchOffset: 2, FetchEpoch: 1, HighWatermark: -1},
	}, acts)

	next, acts = step(t, s, ReceiveFetchResponse{From: 1, Error: ErrFencedLeaderEpoch, LeaderID: NoNode, LeaderEpoch: 3, HighWatermark: -1})
	require.Equal(t, Unattached, next.Role())
	require.Equal(t, Epoch(3), next.Epoch())
	require.Equal(t, NoNode, next.Leader())
	require.Equal(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: NoReplica}},
		RoleChanged{From: Follower, To: Unattached, Epoch: 3, LeaderID: NoNode, Reason: "response with a newer epoch"},
		StopTimer{Timer: FetchTimer},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutIn(t, acts)},
	}, acts)
}

// TestUnattachedReplicaAttachesToLeaderNamedInFetchResponse: an Unattached
// replica that knows the leader id of its epoch but cannot reach it (here an
// observer after a fetch timeout) attaches when a Fetch response names that
// leader, and processes the response in the same step: one Fetch goes out,
// after the high watermark it brought, and the fetch timer is armed once.
// Reference: KafkaRaftClient.handleFetchResponse
// (maybeSwitchObserverFetchToLeader); RequestManager (at most one Fetch in
// flight).
func TestUnattachedReplicaAttachesToLeaderNamedInFetchResponse(t *testing.T) {
	s := observerFollower(t)
	s, _ = step(t, s, FetchTimeout{})
	require.Equal(t, Unattached, s.Role())
	require.Equal(t, NodeID(2), s.Leader())
	// The bootstrap voter it reached is the leader: records come back.
	s, _ = durable(t, s, LogEnd{Offset: 3, Epoch: 1})

	next, acts := step(t, s, fetchOK(2, 1, 2))
	require.Equal(t, Follower, next.Role())
	require.Equal(t, Epoch(1), next.Epoch())
	require.Equal(t, NodeID(2), next.Leader())
	require.Equal(t, int64(2), next.HighWatermark())
	require.Equal(t, []Action{
		RoleChanged{From: Unattached, To: Follower, Epoch: 1, LeaderID: 2, Reason: "fetch response names the leader"},
		HighWatermarkChanged{HighWatermark: 2},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 2, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1, HighWatermark: 2},
	}, acts)

	// A fresh observer that knows no leader learns it from a newer epoch.
	fresh := start(t, observerConfig(4, 1, 2, 3))
	next, acts = step(t, fresh, fetchOK(2, 1, 0))
	require.Equal(t, Follower, next.Role())
	require.Equal(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 1, LeaderID: 2, VotedKey: NoReplica}},
		RoleChanged{From: Unattached, To: Follower, Epoch: 1, LeaderID: 2, Reason: "response with a newer epoch"},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 2, CurrentLeaderEpoch: 1, FetchOffset: 0, FetchEpoch: 0, HighWatermark: -1},
	}, acts)
}

// TestFollowerTruncatesToKafkasTruncationPoint: a diverging answer makes the
// follower truncate where Kafka's ReplicatedLog.truncateToEndOffset does:
// for diverging epoch 0, min(offset, log end); otherwise, with (e, o) the
// local endOffsetForEpoch of the diverging epoch, min(o, offset) if e is
// that epoch, else o. The state's log end follows at once, the fetch timer
// is reset and the next Fetch starts at the new end. The high watermark of
// a diverging answer is not used.
// Reference: KafkaRaftClient.handleFetchResponse.
func TestFollowerTruncatesToKafkasTruncationPoint(t *testing.T) {
	s := restartedFollower(t) // epochs 1@0, 2@3, 4@6, end 8
	cases := []struct {
		name string
		d    LogOffsetMetadata
		to   int64
		end  LogEnd
	}{
		{"epoch 0: min(offset, log end)", LogOffsetMetadata{Epoch: 0, Offset: 3}, 3, LogEnd{Offset: 3, Epoch: 1}},
		{"local epoch 2 ends at 6, leader's at 5", LogOffsetMetadata{Epoch: 2, Offset: 5}, 5, LogEnd{Offset: 5, Epoch: 2}},
		{"local epoch 2 ends at 6, leader's at 7", LogOffsetMetadata{Epoch: 2, Offset: 7}, 6, LogEnd{Offset: 6, Epoch: 2}},
		{"epoch 3 unknown locally: end of epoch 2", LogOffsetMetadata{Epoch: 3, Offset: 7}, 6, LogEnd{Offset: 6, Epoch: 2}},
		{"epoch 1 ends at 3", LogOffsetMetadata{Epoch: 1, Offset: 1}, 1, LogEnd{Offset: 1, Epoch: 1}},
	}
	for _, c := range cases {
		d := c.d
		next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: 1, Diverging: &d})
		require.Equal(t, c.end, next.LogEnd(), c.name)
		require.Equal(t, int64(-1), next.HighWatermark(), c.name)
		require.Equal(t, Follower, next.Role(), c.name)
		require.Equal(t, []Action{
			TruncateLog{To: c.to},
			ResetTimer{Timer: FetchTimer, After: testTf},
			SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: c.end.Offset, FetchEpoch: c.end.Epoch, HighWatermark: -1},
		}, acts, c.name)
		require.False(t, grantsPreVote(t, next), "a diverging answer is a successful fetch")
	}
	// A diverging point at or past the log end truncates nothing.
	for _, d := range []LogOffsetMetadata{{Epoch: 0, Offset: 20}, {Epoch: 4, Offset: 9}} {
		d := d
		next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1, Diverging: &d})
		require.Equal(t, LogEnd{Offset: 8, Epoch: 4}, next.LogEnd())
		require.Equal(t, []Action{
			ResetTimer{Timer: FetchTimer, After: testTf},
			SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 8, FetchEpoch: 4, HighWatermark: -1},
		}, acts)
	}
}

// TestFollowerRefusesLeaderThatTruncatesBelowHighWatermark: a leader
// asking to truncate below the follower's high watermark lacks committed
// records: the follower keeps its log and refuses the leader (one
// LeaderRefused, no truncation, no timer reset, no next Fetch). Truncating
// exactly to the high watermark is fine.
// Reference: KafkaRaftClient.handleFetchResponse throws KafkaException;
// kraft refuses instead (docs/design.md D113).
func TestFollowerRefusesLeaderThatTruncatesBelowHighWatermark(t *testing.T) {
	s := restartedFollower(t)
	s, _ = step(t, s, fetchOK(1, 4, 7))
	require.Equal(t, int64(7), s.HighWatermark())
	for _, c := range []struct {
		d  LogOffsetMetadata
		to int64
	}{{LogOffsetMetadata{Epoch: 2, Offset: 5}, 5}, {LogOffsetMetadata{Epoch: 4, Offset: 6}, 6}, {LogOffsetMetadata{Epoch: 0, Offset: 2}, 2}, {LogOffsetMetadata{Epoch: 3, Offset: 9}, 6}} {
		d := c.d
		next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: 7, Diverging: &d})
		requireRefused(t, s, next, acts, LeaderRefused{LeaderID: 1, Epoch: 4, TruncateTo: c.to, HighWatermark: 7,
			Reason: "the leader asks to truncate below the high watermark"})
	}
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: 7, Diverging: &LogOffsetMetadata{Epoch: 4, Offset: 7}})
	require.Equal(t, LogEnd{Offset: 7, Epoch: 4}, next.LogEnd())
	require.Equal(t, int64(7), next.HighWatermark())
	require.Equal(t, []Action{
		TruncateLog{To: 7},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 7, FetchEpoch: 4, HighWatermark: 7},
	}, acts)
	_, refused := next.RefusedLeader()
	require.False(t, refused)
}

// TestFollowerHighWatermarkIsMinOfLogEndAndLeaders: a successful response
// sets the follower's high watermark to min(log end, leader's high
// watermark), never lower than before; HighWatermarkChanged precedes the
// timer reset and the next Fetch, which carries the log end, the epoch and
// the new high watermark.
// Reference: KafkaRaftClient.buildFetchRequest, handleFetchResponse
// (updateFollowerHighWatermark); FollowerState.updateHighWatermark.
func TestFollowerHighWatermarkIsMinOfLogEndAndLeaders(t *testing.T) {
	s := newFollower(t)
	s, _ = durable(t, s, LogEnd{Offset: 5, Epoch: 1})

	s, acts := step(t, s, fetchOK(1, 1, 8))
	require.Equal(t, int64(5), s.HighWatermark())
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 5},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 5, FetchEpoch: 1, HighWatermark: 5},
	}, acts)

	for _, hwm := range []int64{-1, 5} {
		var acts []Action
		s, acts = step(t, s, fetchOK(1, 1, hwm))
		require.Equal(t, int64(5), s.HighWatermark(), "leader hwm %d", hwm)
		require.Equal(t, []Action{
			ResetTimer{Timer: FetchTimer, After: testTf},
			SendFetch{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 5, FetchEpoch: 1, HighWatermark: 5},
		}, acts, "leader hwm %d", hwm)
	}

	s, _ = durable(t, s, LogEnd{Offset: 9, Epoch: 1})
	s, acts = step(t, s, fetchOK(1, 1, 8))
	require.Equal(t, int64(8), s.HighWatermark())
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 8},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 9, FetchEpoch: 1, HighWatermark: 8},
	}, acts)
}

// TestFollowerFaultsWhenTheLeaderLowersTheHighWatermark: a Fetch answer of
// the current leader in its epoch with a high watermark below the one the
// follower knows is a Fault with the state unchanged: a leader never lowers
// what it published, and a host that keeps one Fetch in flight and drops
// stale answers never delivers an older one. An unknown high watermark (-1)
// is no report at all.
// Reference: FollowerState.updateHighWatermark ("Non-monotonic update of
// high watermark"); docs/design.md D58.
func TestFollowerFaultsWhenTheLeaderLowersTheHighWatermark(t *testing.T) {
	s := newFollower(t)
	s, _ = durable(t, s, LogEnd{Offset: 5, Epoch: 1})
	s, _ = step(t, s, fetchOK(1, 1, 4))
	require.Equal(t, int64(4), s.HighWatermark())
	next, acts := step(t, s, fetchOK(1, 1, 3))
	requireFault(t, s, next, acts)
	withRecords := fetchOK(1, 1, 3)
	withRecords.Records = true
	next, acts = step(t, s, withRecords)
	requireFault(t, s, next, acts) // a host must not append the records of such an answer
	require.True(t, takesRecords(t, s, fetchOK(1, 1, 4)))
	require.True(t, takesRecords(t, s, fetchOK(1, 1, -1)))
}

// TestSuccessfulFetchResponseEndsPreVoteGranting: a Follower grants pre-votes until
// its first successful Fetch (or FetchSnapshot) answer from its leader in
// this Follower role, and rejects them after; error answers do not count.
// Reference: FollowerState.canGrantVote, hasFetchedFromLeader,
// KIP-996.
func TestSuccessfulFetchResponseEndsPreVoteGranting(t *testing.T) {
	s := newFollower(t)
	require.True(t, grantsPreVote(t, s))

	errored, _ := step(t, s, ReceiveFetchResponse{From: 1, Error: ErrBrokerNotAvailable, LeaderID: 1, LeaderEpoch: 1, HighWatermark: -1})
	require.True(t, grantsPreVote(t, errored))

	fetched, _ := step(t, s, fetchOK(1, 1, -1))
	require.False(t, grantsPreVote(t, fetched))
	_, acts := step(t, fetched, ReceiveVoteRequest{From: 3, VoterID: NoNode, CandidateEpoch: 1, Candidate: 3, CandidateLogEnd: LogEnd{Offset: 9, Epoch: 1}, PreVote: true})
	require.Equal(t, []Action{SendVoteResponse{To: 3, Error: ErrNone, Epoch: 1, LeaderID: 1, VoteGranted: false}}, acts)

	snap, _ := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 4, Snapshot: &LogEnd{Offset: 4, Epoch: 1}})
	require.False(t, grantsPreVote(t, snap))
}

// TestFollowerSnapshotAnswerStartsDownload: a response that points to a
// snapshot resets the fetch timer and sends a FetchSnapshot for it from
// position 0 instead of a Fetch; a snapshot id with negative fields is
// dropped (no timer reset).
// Reference: KafkaRaftClient.handleFetchResponse;
// KafkaRaftClientSnapshotTest.testFetchResponseWithInvalidSnapshotId and
// testFetchResponseWithSnapshotId; docs/design.md D43.
func TestFollowerSnapshotAnswerStartsDownload(t *testing.T) {
	s := newFollower(t)
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 10, Snapshot: &LogEnd{Offset: 10, Epoch: 1}})
	require.Equal(t, Follower, next.Role())
	require.Equal(t, int64(-1), next.HighWatermark())
	require.Equal(t, s.LogEnd(), next.LogEnd())
	require.Equal(t, []Action{
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetchSnapshot{To: 1, CurrentLeaderEpoch: 1, Snapshot: LogEnd{Offset: 10, Epoch: 1}},
	}, acts)

	for _, bad := range []LogEnd{{Offset: -1, Epoch: 1}, {Offset: 10, Epoch: -1}} {
		bad := bad
		next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 10, Snapshot: &bad})
		require.Equal(t, s, next)
		require.Empty(t, acts)
	}
}

// TestFetchResponseErrorsChangeNothing: BROKER_NOT_AVAILABLE (back off),
// INVALID_VOTER_KEY, and NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH that
// name the leader we already follow in our epoch change nothing: no timer
// reset, no Fetch.
// Reference: KafkaRaftClient.maybeHandleCommonResponse, handleFetchResponse.
func TestFetchResponseErrorsChangeNothing(t *testing.T) {
	s := newFollower(t)
	for _, code := range []ErrorCode{ErrBrokerNotAvailable, ErrInvalidVoterKey, ErrNotLeaderOrFollower, ErrFencedLeaderEpoch, ErrUnknownTopicOrPartition} {
		next, acts := step(t, s, ReceiveFetchResponse{From: 1, Error: code, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 3})
		require.Equal(t, s, next, "%v", code)
		require.Empty(t, acts, "%v", code)
	}
}

// TestFetchResponseInvalidRequestInCurrentEpochFaults: INVALID_REQUEST for a
// Fetch of the current epoch means our own request was malformed: a single
// Fault, the state unchanged. From an older epoch it is just stale.
// Reference: KafkaRaftClient.maybeHandleCommonResponse (IllegalStateException).
func TestFetchResponseInvalidRequestInCurrentEpochFaults(t *testing.T) {
	s := newFollower(t)
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, Error: ErrInvalidRequest, LeaderID: 1, LeaderEpoch: 1, HighWatermark: -1})
	require.Equal(t, s, next)
	require.Len(t, acts, 1)
	require.IsType(t, Fault{}, acts[0])

	next, acts = step(t, s, ReceiveFetchResponse{From: 1, Error: ErrInvalidRequest, LeaderID: NoNode, LeaderEpoch: 0, HighWatermark: -1})
	require.Equal(t, s, next)
	require.Empty(t, acts)
}

// TestFetchResponseNamingAnotherLeaderFaults: a response naming a second
// leader for our epoch, or naming us leader when we are not, is a fatal
// inconsistency: a single Fault, the state unchanged.
// Reference: KafkaRaftClient.hasConsistentLeader.
func TestFetchResponseNamingAnotherLeaderFaults(t *testing.T) {
	s := newFollower(t)
	for _, leader := range []NodeID{3, 2} {
		next, acts := step(t, s, fetchOK(leader, 1, 0))
		require.Equal(t, s, next, "leader %d", leader)
		require.Len(t, acts, 1, "leader %d", leader)
		require.IsType(t, Fault{}, acts[0], "leader %d", leader)
	}
}

// addObserver starts observer id (empty log) in cluster c, carries out its
// first actions and delivers the messages that follow.
func addObserver(t *testing.T, c *testCluster, id NodeID) {
	t.Helper()
	voters := append([]NodeID(nil), c.ids...)
	c.ids = append(c.ids, id)
	c.timers[id] = map[Timer]bool{}
	s, acts, err := NewState(observerConfig(id, voters...), nil, LogState{})
	require.NoError(t, err)
	c.states[id] = s
	c.apply(id, acts)
	c.deliverAll()
}

// clusterLogState describes a testCluster log (one epoch per record).
func clusterLogState(log []Epoch) LogState {
	var ls LogState
	for i, e := range log {
		if i == 0 || log[i-1] != e {
			ls.Epochs = append(ls.Epochs, EpochStart{Epoch: e, StartOffset: int64(i)})
		}
	}
	if n := len(log); n > 0 {
		ls.End = LogEnd{Offset: int64(n), Epoch: log[n-1]}
	}
	return ls
}

// restartNode restarts voter id of c from its persisted record and log.
func restartNode(t *testing.T, c *testCluster, id NodeID) {
	t.Helper()
	rec := c.record[id]
	s, acts, err := NewState(config(id, c.ids...), &rec, clusterLogState(c.logs[id]))
	require.NoError(t, err)
	c.states[id] = s
	c.timers[id] = map[Timer]bool{}
	c.apply(id, acts)
}

// deliverLimited is deliverAll with two knobs: fetch responses carry at most
// maxRecords records (Kafka's fetch max bytes; 0 means no limit), and
// delivery stops as soon as until() holds. after runs after every step.
func deliverLimited(t *testing.T, c *testCluster, maxRecords int, until func() bool, after func()) {
	t.Helper()
	for i := 0; len(c.queue) > 0; i++ {
		require.Less(t, i, 10000, "message storm")
		if until != nil && until() {
			return
		}
		m := c.queue[0]
		c.queue = c.queue[1:]
		if c.down[m.from] || c.down[m.to] {
			continue
		}
		if maxRecords > 0 && len(m.records) > maxRecords {
			m.records = m.records[:maxRecords]
		}
		if m.records != nil || m.fetchAt >= 0 {
			if !c.appendFetched(m) {
				continue
			}
		}
		c.stepNode(m.to, m.event)
		if after != nil {
			after()
		}
	}
}

// TestClusterObserverFindsLeaderAfterFetchTimeout: an observer that started
// before the election knows no leader (voters do not announce leaders to
// observers); on its next fetch timeout it asks a bootstrap voter, which
// names the leader; the observer follows it and replicates the log and the
// high watermark. The leader's state never grows with it.
// Reference: KafkaRaftClient.pollFollowerAsObserver; docs/design.md, contract
// decisions 5 and 6.
func TestClusterObserverFindsLeaderAfterFetchTimeout(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	addObserver(t, c, 4)
	require.Equal(t, Unattached, c.states[4].Role())

	c.fire(2, ElectionTimeout{})
	require.Equal(t, []NodeID{2}, c.leaders())
	require.Equal(t, Unattached, c.states[4].Role(), "nobody told the observer")
	require.Equal(t, Epoch(0), c.states[4].Epoch())

	// The bootstrap fetch goes to voter 1, a Follower, which names leader 2.
	c.fire(4, FetchTimeout{})
	require.Empty(t, c.faults)
	obs := c.states[4]
	require.Equal(t, Follower, obs.Role())
	require.Equal(t, Epoch(1), obs.Epoch())
	require.Equal(t, NodeID(2), obs.Leader())
	require.Equal(t, QuorumRecord{Epoch: 1, LeaderID: 2, VotedKey: NoReplica}, c.record[4])
	require.Equal(t, c.logs[2], c.logs[4])

	c.appendAt(2, 3)
	require.Empty(t, c.faults)
	require.Equal(t, c.logs[2], c.logs[4])
	require.Equal(t, int64(4), c.states[2].HighWatermark())
	require.Equal(t, int64(4), c.states[4].HighWatermark())
}

// TestClusterFollowerWithDivergentTailTruncatesAndCatchesUp: a leader of
// epoch 1 appends records nobody else gets and is cut off; the others elect
// a new leader in epoch 2. When the old leader comes back it learns the new
// epoch from a re-sent BeginQuorumEpoch, is told where its log diverges,
// truncates its uncommitted epoch-1 tail and catches up.
// Reference: KafkaRaftClient.maybeSendBeginQuorumEpochRequests,
// RaftLog.validateOffsetAndEpoch, handleFetchResponse; KIP-595.
func TestClusterFollowerWithDivergentTailTruncatesAndCatchesUp(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.fire(1, ElectionTimeout{})
	require.Equal(t, []NodeID{1}, c.leaders())
	require.Equal(t, int64(1), c.states[1].HighWatermark())

	c.down[2], c.down[3] = true, true
	c.appendAt(1, 2)
	require.Equal(t, []Epoch{1, 1, 1}, c.logs[1])
	require.Equal(t, int64(1), c.states[1].HighWatermark(), "nothing new is committed")

	c.down[1] = true
	delete(c.down, 2)
	delete(c.down, 3)
	// 3's pre-vote fails (2 has fetched, 1 is away) and re-enters Follower
	// when it times out, which lets it grant 2's pre-vote.
	c.fire(3, FetchTimeout{})
	require.Equal(t, Prospective, c.states[3].Role())
	c.fire(3, ElectionTimeout{})
	require.Equal(t, Follower, c.states[3].Role())
	c.fire(2, FetchTimeout{})
	require.Equal(t, Leader, c.states[2].Role())
	require.Equal(t, Epoch(2), c.states[2].Epoch())
	require.Equal(t, []Epoch{1, 2}, c.logs[2])
	require.Equal(t, []Epoch{1, 2}, c.logs[3])
	require.Equal(t, int64(2), c.states[2].HighWatermark())

	delete(c.down, 1)
	c.fire(2, BeginQuorumEpochTimeout{})
	require.Empty(t, c.faults)
	old := c.states[1]
	require.Equal(t, Follower, old.Role())
	require.Equal(t, Epoch(2), old.Epoch())
	require.Equal(t, NodeID(2), old.Leader())
	require.Equal(t, []Epoch{1, 2}, c.logs[1], "the epoch-1 tail is gone")
	require.Equal(t, LogEnd{Offset: 2, Epoch: 2}, old.LogEnd())
	require.Equal(t, int64(2), old.HighWatermark())

	c.appendAt(2, 2)
	require.Empty(t, c.faults)
	for _, id := range []NodeID{1, 3} {
		require.Equal(t, c.logs[2], c.logs[id], "node %d", id)
		require.Equal(t, int64(4), c.states[id].HighWatermark(), "node %d", id)
	}
}

// TestClusterFigure8OlderEpochRecordsCommitOnlyWithNewEpochRecord: Raft's
// figure 8 on five voters. Leader 1 (epoch 1) gets a record onto 2 only;
// 5 is elected in epoch 2 by 3, 4, 5 and appends its LeaderChange alone;
// 1 restarts and is elected in epoch 3. While it brings its epoch-1 record
// to a majority (responses carry one record at a time) its high watermark
// must not move: only once its own epoch-3 record is on a majority. Then 5
// returns, truncates its epoch-2 record and every log agrees.
// Reference: LeaderState.maybeUpdateHighWatermark; Raft paper section 5.4.2
// figure 8.
func TestClusterFigure8OlderEpochRecordsCommitOnlyWithNewEpochRecord(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3, 4, 5)
	c.fire(1, ElectionTimeout{})
	require.Equal(t, []NodeID{1}, c.leaders())
	require.Equal(t, int64(1), c.states[1].HighWatermark())

	// (a) Leader 1 replicates offset 1 (epoch 1) to 2 only.
	c.down[3], c.down[4], c.down[5] = true, true, true
	c.appendAt(1, 1)
	require.Equal(t, []Epoch{1, 1}, c.logs[2])
	require.Equal(t, int64(1), c.states[1].HighWatermark())

	// (b) 1 crashes; 5 is elected in epoch 2 by 3, 4 and 5. 3 and 4 first
	// re-enter Follower so that they grant pre-votes again.
	c.down[1] = true
	delete(c.down, 3)
	delete(c.down, 4)
	delete(c.down, 5)
	c.fire(3, FetchTimeout{})
	require.Equal(t, Follower, c.states[3].Role())
	c.fire(4, FetchTimeout{})
	c.fire(4, ElectionTimeout{})
	require.Equal(t, Follower, c.states[4].Role())
	c.stepNode(5, FetchTimeout{})
	deliverLimited(t, c, 0, func() bool { return c.states[5].Role() == Leader }, nil)
	require.Equal(t, Leader, c.states[5].Role())
	require.Equal(t, Epoch(2), c.states[5].Epoch())
	require.Equal(t, []Epoch{1, 2}, c.logs[5])
	// 5 crashes before anyone fetches its record.
	c.down[5] = true
	c.deliverAll()
	require.Equal(t, []Epoch{1}, c.logs[3])
	require.Equal(t, []Epoch{1}, c.logs[4])

	// (c) 1 restarts (Resigned in epoch 1) and is elected in epoch 3.
	delete(c.down, 1)
	restartNode(t, c, 1)
	require.Equal(t, Resigned, c.states[1].Role())
	c.fire(1, ElectionTimeout{})
	require.Equal(t, Unattached, c.states[1].Role())

	onMajority := func(offset int64, epoch Epoch) bool {
		n := 0
		for _, id := range c.ids {
			if int64(len(c.logs[id])) > offset && c.logs[id][offset] == epoch {
				n++
			}
		}
		return n >= 3
	}
	sawOldOnMajorityOnly := false
	var hwms []int64
	last := c.states[1].HighWatermark()
	check := func() {
		s := c.states[1]
		if s.Role() != Leader || s.Epoch() != 3 {
			return
		}
		if onMajority(1, 1) && !onMajority(2, 3) {
			sawOldOnMajorityOnly = true
			require.Equal(t, int64(-1), s.HighWatermark(), "figure 8: an epoch-1 record on a majority is not committed by leader 1 of epoch 3")
		}
		if h := s.HighWatermark(); h != last {
			require.Greater(t, h, last, "the high watermark never goes down")
			require.True(t, onMajority(2, 3), "high watermark %d without an epoch-3 record on a majority", h)
			hwms = append(hwms, h)
			last = h
		}
	}
	c.stepNode(1, ElectionTimeout{})
	deliverLimited(t, c, 1, nil, check)
	require.Empty(t, c.faults)
	require.Equal(t, Leader, c.states[1].Role())
	require.Equal(t, Epoch(3), c.states[1].Epoch())
	require.True(t, sawOldOnMajorityOnly, "the scenario must reach figure 8's state")
	require.Equal(t, []int64{3}, hwms)
	for _, id := range []NodeID{2, 3, 4} {
		require.Equal(t, []Epoch{1, 1, 3}, c.logs[id], "node %d", id)
	}

	// (d) 5 returns, learns epoch 3 and truncates its epoch-2 record.
	delete(c.down, 5)
	c.stepNode(1, BeginQuorumEpochTimeout{})
	deliverLimited(t, c, 1, nil, check)
	require.Empty(t, c.faults)
	require.Equal(t, Follower, c.states[5].Role())
	require.Equal(t, []Epoch{1, 1, 3}, c.logs[5])
	require.Equal(t, int64(3), c.states[5].HighWatermark())
}

// restartedFollowerOfEpoch2 is replica 2 of voters 1, 2, 3 restarted as
// Follower of 1 in epoch 2, with five records of epoch 1 in its log and no
// high watermark.
func restartedFollowerOfEpoch2(t *testing.T) State {
	t.Helper()
	s, _ := restart(t, config(2, 1, 2, 3), QuorumRecord{Epoch: 2, LeaderID: 1, VotedKey: NoReplica}, LogState{End: LogEnd{Offset: 5, Epoch: 1}})
	requireState(t, s, Follower, 2, 1, NoReplica)
	require.Equal(t, int64(-1), s.HighWatermark())
	return s
}

// TestFollowerTruncatesWholeLogOnDivergingOffsetZero: a diverging point at
// offset 0 is a valid answer (only a negative offset is dropped); the
// follower truncates its whole log, goes back to epoch 0, and fetches from
// the start.
// Reference: KafkaRaftClient.handleFetchResponse, ReplicatedLog.truncateToEndOffset.
func TestFollowerTruncatesWholeLogOnDivergingOffsetZero(t *testing.T) {
	s := restartedFollowerOfEpoch2(t)
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 2, HighWatermark: -1, Diverging: &LogOffsetMetadata{Epoch: 1, Offset: 0}})
	require.Equal(t, []Action{
		TruncateLog{To: 0},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 2, FetchOffset: 0, FetchEpoch: 0, HighWatermark: -1},
	}, acts)
	requireState(t, next, Follower, 2, 1, NoReplica)
	require.Equal(t, LogEnd{}, next.LogEnd())
}

// TestFollowerTakesBootstrapSnapshotID: a snapshot id whose offset and
// epoch are 0 (Kafka's bootstrap checkpoint 0-0) is a valid answer: only
// negative fields are dropped. The follower resets its fetch timer, asks
// for the snapshot with FetchSnapshot, and counts the answer as a
// successful fetch (it stops granting pre-votes).
// Reference: KafkaRaftClient.handleFetchResponse; docs/design.md D43;
// KIP-996.
func TestFollowerTakesBootstrapSnapshotID(t *testing.T) {
	s := newFollower(t)
	require.True(t, grantsPreVote(t, s))
	for _, id := range []LogEnd{{Offset: 0, Epoch: 0}, {Offset: 7, Epoch: 0}, {Offset: 0, Epoch: 1}} {
		id := id
		next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: -1, Snapshot: &id})
		require.Equal(t, []Action{ResetTimer{Timer: FetchTimer, After: testTf}, SendFetchSnapshot{To: 1, CurrentLeaderEpoch: 1, Snapshot: id}}, acts, "snapshot %+v", id)
		require.False(t, grantsPreVote(t, next), "snapshot %+v", id)
	}
}

// TestFollowerAdoptsHighWatermarkZero: a leader's high watermark of 0 is
// known (only -1 means unknown), so a follower whose high watermark is
// unknown adopts 0 and reports it.
// Reference: KafkaRaftClient.handleFetchResponse (updateFollowerHighWatermark).
func TestFollowerAdoptsHighWatermarkZero(t *testing.T) {
	s := newFollower(t)
	require.Equal(t, int64(-1), s.HighWatermark())
	next, acts := step(t, s, fetchOK(1, 1, 0))
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 0},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 0, FetchEpoch: 0, HighWatermark: 0},
	}, acts)
	require.Equal(t, int64(0), next.HighWatermark())
}

// refusingFollower is restartedFollower (replica 2 following 1 in epoch
// 4, log end (8, 4)) after a successful fetch (high watermark 7) and a
// diverging answer that asks it to truncate to 5: it refuses leader 1.
func refusingFollower(t *testing.T) State {
	t.Helper()
	s := restartedFollower(t)
	s, _ = step(t, s, fetchOK(1, 4, 7))
	require.False(t, grantsPreVote(t, s), "KIP-996: a Follower that fetched rejects pre-votes")
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: 7, Diverging: &LogOffsetMetadata{Epoch: 2, Offset: 5}})
	requireRefused(t, s, next, acts, LeaderRefused{LeaderID: 1, Epoch: 4, TruncateTo: 5, HighWatermark: 7, Reason: "the leader asks to truncate below the high watermark"})
	return next
}

// TestRefusingFollowerGrantsPreVotesAndCampaigns: a Follower that refused
// its leader grants pre-votes again (the leader is not heard from: KIP-996
// rejects them only while it is), answers the refused leader's
// BeginQuorumEpoch with NOT_LEADER_OR_FOLLOWER and sends it no Fetch, and
// its fetch timeout starts a pre-vote at once (no rank wait: D78 waits
// only after a successful fetch).
// Reference: docs/design.md D113; KIP-996; KafkaRaftClient.pollFollowerAsVoter.
func TestRefusingFollowerGrantsPreVotesAndCampaigns(t *testing.T) {
	s := refusingFollower(t)
	require.True(t, grantsPreVote(t, s))

	next, acts := step(t, s, ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 4, VoterID: NoNode})
	require.Equal(t, []Action{SendBeginQuorumEpochResponse{To: 1, Error: ErrNotLeaderOrFollower, Epoch: 4, LeaderID: 1}}, acts)
	require.Equal(t, s, next)

	p, acts := step(t, s, FetchTimeout{})
	requireState(t, p, Prospective, 4, 1, NoReplica)
	require.Equal(t, []Action{
		RoleChanged{From: Follower, To: Prospective, Epoch: 4, LeaderID: 1, Reason: "fetch timeout"},
		StopTimer{Timer: FetchTimer},
		ResetTimer{Timer: ElectionTimer, After: acts[2].(ResetTimer).After},
		SendVoteRequest{To: ReplicaKey{ID: 1}, CandidateEpoch: 4, Candidate: ReplicaKey{ID: 2}, CandidateLogEnd: LogEnd{Offset: 8, Epoch: 4}, PreVote: true},
		SendVoteRequest{To: ReplicaKey{ID: 3}, CandidateEpoch: 4, Candidate: ReplicaKey{ID: 2}, CandidateLogEnd: LogEnd{Offset: 8, Epoch: 4}, PreVote: true},
	}, acts)
	id, ok := p.RefusedLeader()
	require.True(t, ok, "the refusal lasts while the epoch does")
	require.Equal(t, NodeID(1), id)

	// The refused leader's BeginQuorumEpoch does not bring it back.
	next, acts = step(t, p, ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 4, VoterID: NoNode})
	require.Equal(t, []Action{SendBeginQuorumEpochResponse{To: 1, Error: ErrNotLeaderOrFollower, Epoch: 4, LeaderID: 1}}, acts)
	require.Equal(t, p, next)

	// Voter 3 grants, the replica stands in epoch 5: the refusal is over.
	c, _ := step(t, p, ReceiveVoteResponse{From: 3, Epoch: 4, VoteGranted: true, LeaderID: 1})
	requireState(t, c, Candidate, 5, NoNode, ReplicaKey{ID: 2})
	_, ok = c.RefusedLeader()
	require.False(t, ok)
}

// TestRefusingFollowerBackFromALostPreVoteDoesNotFetch: a Prospective
// that loses its pre-vote follows its known leader again (Kafka's
// prospectiveTransitionAfterElectionLoss), but not by fetching from a
// leader it refused: it arms its fetch timer only, and campaigns again
// when it runs out.
// Reference: docs/design.md D113.
func TestRefusingFollowerBackFromALostPreVoteDoesNotFetch(t *testing.T) {
	p, _ := step(t, refusingFollower(t), FetchTimeout{})
	p, _ = step(t, p, ReceiveVoteResponse{From: 1, Epoch: 4, VoteGranted: false, LeaderID: 1})
	require.Equal(t, Prospective, p.Role())
	next, acts := step(t, p, ReceiveVoteResponse{From: 3, Epoch: 4, VoteGranted: false, LeaderID: 1})
	requireState(t, next, Follower, 4, 1, NoReplica)
	require.Equal(t, []Action{
		RoleChanged{From: Prospective, To: Follower, Epoch: 4, LeaderID: 1, Reason: "lost pre-vote"},
		StopTimer{Timer: ElectionTimer},
		ResetTimer{Timer: FetchTimer, After: testTf},
	}, acts)
	_, ok := next.RefusedLeader()
	require.True(t, ok)
}

// TestRefusalEndsWithTheEpoch: a leader of a newer epoch is followed as
// usual: the refusal was of the leader of the older one.
// Reference: docs/design.md D113.
func TestRefusalEndsWithTheEpoch(t *testing.T) {
	s := refusingFollower(t)
	next, acts := step(t, s, ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 5, VoterID: NoNode})
	requireState(t, next, Follower, 5, 3, NoReplica)
	_, ok := next.RefusedLeader()
	require.False(t, ok)
	require.Contains(t, acts, Action(SendBeginQuorumEpochResponse{To: 3, Error: ErrNone, Epoch: 5, LeaderID: 3}))
	require.Contains(t, acts, Action(SendFetch{To: 3, CurrentLeaderEpoch: 5, FetchOffset: 8, FetchEpoch: 4, HighWatermark: 7}))
}

// TestObserverAttachingToALeaderItRefuses: an Unattached observer that
// attaches to the leader a Fetch answer names, which then asks it to
// truncate below its high watermark, is that leader's Follower (the
// attachment stands and arms the fetch timer) but refuses it: no
// truncation and no Fetch.
// Reference: docs/design.md D113; KafkaRaftClient.maybeSwitchObserverFetchToLeader.
func TestObserverAttachingToALeaderItRefuses(t *testing.T) {
	cfg := Config{Local: ReplicaKey{ID: 4}, Observer: true, Voters: []ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}, Seed: 9}
	ls := LogState{End: LogEnd{Offset: 10, Epoch: 2}, Epochs: []EpochStart{{Epoch: 1}, {Epoch: 2, StartOffset: 4}}}
	s, _ := restart(t, cfg, QuorumRecord{Epoch: 2, LeaderID: 1, VotedKey: NoReplica}, ls)
	s, _ = step(t, s, fetchOK(1, 2, 9))
	s, _ = step(t, s, FetchTimeout{})
	require.Equal(t, Unattached, s.Role())
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 2, HighWatermark: 9, Diverging: &LogOffsetMetadata{Offset: 3, Epoch: 1}})
	require.Equal(t, Follower, next.Role())
	require.Equal(t, LogEnd{Offset: 10, Epoch: 2}, next.LogEnd())
	require.Equal(t, []Action{
		RoleChanged{From: Unattached, To: Follower, Epoch: 2, LeaderID: 1, Reason: "fetch response names the leader"},
		LeaderRefused{LeaderID: 1, Epoch: 2, TruncateTo: 3, HighWatermark: 9, Reason: "the leader asks to truncate below the high watermark"},
		ResetTimer{Timer: FetchTimer, After: testTf},
	}, acts)
	id, ok := next.RefusedLeader()
	require.True(t, ok)
	require.Equal(t, NodeID(1), id)
}
