package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Tests of the step as a whole: purity and determinism, fetch responses
// that arrive during a transition, the AppendFetched a response carrying
// records gets before its records are appended, and the log's high watermark across
// roles.

// A Candidate that learns the leader of its epoch from a successful Fetch
// response (Kafka's maybeHandleCommonResponse follows a leader of its epoch
// that it did not know) becomes Follower and
// processes the response in the same step; exactly one Fetch goes out, from
// the position after the response, and the fetch timer is armed once.
// Reference: KafkaRaftClient.maybeHandleCommonResponse, handleFetchResponse;
// RequestManager (one Fetch in flight); docs/design.md D22.
func TestCandidateAttachingThroughFetchResponseSendsOneFetch(t *testing.T) {
	s := start(t, config(2, 1, 2, 3))
	s, _ = step(t, s, ElectionTimeout{})
	s, _ = step(t, s, grantVote(3, 0))
	require.Equal(t, Candidate, s.Role())
	s, _ = durable(t, s, LogEnd{Offset: 2, Epoch: 0})

	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 5})
	require.Equal(t, Follower, next.Role())
	require.Equal(t, NodeID(1), next.Leader())
	require.Equal(t, int64(2), next.HighWatermark())
	require.Equal(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 1, LeaderID: 1, VotedKey: ReplicaKey{ID: 2}}},
		RoleChanged{From: Candidate, To: Follower, Epoch: 1, LeaderID: 1, Reason: "response names the leader"},
		StopTimer{Timer: ElectionTimer},
		HighWatermarkChanged{HighWatermark: 2},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 2, FetchEpoch: 0, HighWatermark: 2},
	}, acts)
}

// An Unattached replica attaching on a diverging answer truncates first and
// sends its one Fetch from the truncated end.
// Reference: KafkaRaftClient.handleFetchResponse
// (maybeSwitchObserverFetchToLeader, then the truncation); docs/design.md D22.
func TestUnattachedAttachingOnDivergingAnswerFetchesFromTruncatedEnd(t *testing.T) {
	s, _ := restart(t, observerConfig(4, 1, 2, 3), QuorumRecord{Epoch: 2, LeaderID: 1, VotedKey: NoReplica},
		LogState{End: LogEnd{Offset: 10, Epoch: 2}, Epochs: []EpochStart{{Epoch: 1}, {Epoch: 2, StartOffset: 4}}})
	require.Equal(t, Follower, s.Role())
	s, _ = step(t, s, FetchTimeout{})
	require.Equal(t, Unattached, s.Role())

	next, acts := step(t, s, ReceiveFetchResponse{
		From: 1, LeaderID: 1, LeaderEpoch: 2, HighWatermark: 3,
		Diverging: &LogOffsetMetadata{Offset: 3, Epoch: 1},
	})
	require.Equal(t, Follower, next.Role())
	require.Equal(t, LogEnd{Offset: 3, Epoch: 1}, next.LogEnd())
	require.Equal(t, []Action{
		RoleChanged{From: Unattached, To: Follower, Epoch: 2, LeaderID: 1, Reason: "fetch response names the leader"},
		TruncateLog{To: 3},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 2, FetchOffset: 3, FetchEpoch: 1, HighWatermark: -1},
	}, acts)
}

// An Unattached replica that attaches on an error answer still fetches
// once (from the new leader), and does not process the error.
// Reference: KafkaRaftClient.handleFetchResponse
// (maybeSwitchObserverFetchToLeader), maybeHandleCommonResponse.
func TestUnattachedAttachingOnErrorAnswerStillFetches(t *testing.T) {
	s := start(t, observerConfig(4, 1, 2, 3))
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, Error: ErrBrokerNotAvailable, LeaderID: 1, LeaderEpoch: 0, HighWatermark: -1})
	require.Equal(t, Follower, next.Role())
	require.Equal(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 0, LeaderID: 1, VotedKey: NoReplica}},
		RoleChanged{From: Unattached, To: Follower, Epoch: 0, LeaderID: 1, Reason: "fetch response names the leader"},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 0, HighWatermark: -1},
	}, acts)
}

// A Leader that gets a stale response naming itself leader of an older
// epoch drops it (Kafka's hasConsistentLeader accepts a message naming the
// local replica while it is Leader; the stale check then drops it). A
// message naming it leader of a newer epoch is a Fault.
// Reference: KafkaRaftClient.hasConsistentLeader, maybeHandleCommonResponse.
func TestLeaderDropsStaleResponseNamingItself(t *testing.T) {
	s := leaderOf(t, 3)
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2, VoterID: NoNode})
	s, _ = step(t, s, ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: 3, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 1, Epoch: 1}})
	require.Equal(t, Epoch(3), s.Epoch())
	s, _ = step(t, s, ElectionTimeout{})
	s, _ = step(t, s, grantVote(3, 3))
	s, _ = step(t, s, grantVote(3, 4))
	require.Equal(t, Leader, s.Role())
	require.Equal(t, Epoch(4), s.Epoch())

	next, acts := step(t, s, ReceiveFetchResponse{From: 2, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 1})
	require.Equal(t, s, next)
	require.Empty(t, acts)

	next, acts = step(t, s, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 1, LeaderEpoch: 5, VoterID: NoNode})
	require.Equal(t, s, next)
	require.Len(t, acts, 1)
	require.IsType(t, Fault{}, acts[0])
}

// TestFetchResponseRecordsAreAppendedOnlyWhenTaken: a response carrying
// records (Records) is answered with AppendFetched alone, the state
// unchanged, exactly when stepping it takes its records: a Follower's
// successful answer from its leader in its epoch, or the answer that makes
// an Unattached replica attach; never an error, a diverging point, a
// snapshot, a stale epoch or another leader, which are stepped as if they
// carried none.
// Reference: KafkaRaftClient.handleFetchResponse (Kafka appends only after
// these checks); docs/design.md D240.
func TestFetchResponseRecordsAreAppendedOnlyWhenTaken(t *testing.T) {
	f := newFollower(t)
	require.True(t, takesRecords(t, f, fetchOK(1, 1, 0)))
	require.False(t, takesRecords(t, f, fetchOK(1, 0, 0)), "stale epoch")
	require.False(t, takesRecords(t, f, fetchOK(1, 2, 0)), "newer epoch")
	bad := fetchOK(1, 1, 0)
	bad.Error = ErrBrokerNotAvailable
	require.False(t, takesRecords(t, f, bad), "error")
	div := fetchOK(1, 1, 0)
	div.Diverging = &LogOffsetMetadata{Offset: 0, Epoch: 0}
	require.False(t, takesRecords(t, f, div), "diverging")
	snap := fetchOK(1, 1, 0)
	snap.Snapshot = &LogEnd{Offset: 5, Epoch: 1}
	require.False(t, takesRecords(t, f, snap), "snapshot")
	require.False(t, takesRecords(t, f, fetchOK(3, 1, 0)), "another leader")

	u := start(t, observerConfig(4, 1, 2, 3))
	require.True(t, takesRecords(t, u, fetchOK(1, 0, 0)), "attaching")
	require.False(t, takesRecords(t, State{}, fetchOK(1, 0, 0)))

	l := leaderOf(t, 3)
	require.False(t, takesRecords(t, l, fetchOK(1, 1, 0)))
}

// TestAppendFetchedThenIsTheResponseAfterTheAppend: the host appends the
// records AppendFetched asks for, reports them, then steps Then: the high
// watermark rises to the leader's, capped at the new log end, and the next
// Fetch goes from the new end, exactly as for a response whose records
// were appended before it was stepped.
// Reference: KafkaRaftClient.handleFetchResponse (appendAsFollower, then
// updateFollowerHighWatermark); docs/design.md D240.
func TestAppendFetchedThenIsTheResponseAfterTheAppend(t *testing.T) {
	f := newFollower(t)
	f, _ = durable(t, f, LogEnd{Offset: 2, Epoch: 1})
	r := fetchOK(1, 1, 9)
	r.Records = true
	same, acts := step(t, f, r)
	require.Equal(t, f, same)
	require.Equal(t, []Action{AppendFetched{Offset: 2, Then: fetchOK(1, 1, 9)}}, acts)
	a := acts[0].(AppendFetched)

	s, _ := step(t, same, LogAppended{End: LogEnd{Offset: 5, Epoch: 1}})
	s, _ = step(t, s, LogFlushed{Offset: 5})
	s, acts = step(t, s, a.Then)
	require.Equal(t, int64(5), s.HighWatermark(), "capped at the log end after the append")
	require.Equal(t, []SendFetch{{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 5, FetchEpoch: 1, HighWatermark: 5}}, ofType[SendFetch](acts))
}

// A replica that knew high watermark 5 as a follower and then led an epoch
// (a new leader's high watermark starts unknown) still refuses to truncate
// below 5 afterwards: Kafka's log keeps its own high watermark and its
// truncateTo throws; kraft refuses the leader (D113). Its
// HighWatermarkChanged actions never go backwards.
// Reference: KafkaRaftClient.handleFetchResponse; KafkaMetadataLog.truncateTo.
func TestTruncationBelowCommittedRefusedAfterLeading(t *testing.T) {
	rec := QuorumRecord{Epoch: 1, LeaderID: 2, VotedKey: NoReplica}
	s, _ := restart(t, config(1, 1, 2, 3), rec, LogState{End: LogEnd{Offset: 5, Epoch: 1}})
	s, acts := step(t, s, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 1, HighWatermark: 5})
	require.Contains(t, acts, Action(HighWatermarkChanged{HighWatermark: 5}))
	s, _ = step(t, s, FetchTimeout{})
	s, _ = step(t, s, grantVote(3, 1))
	s, _ = step(t, s, grantVote(3, 2))
	require.Equal(t, Leader, s.Role())
	require.Equal(t, int64(-1), s.HighWatermark())
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 3, VoterID: NoNode})
	require.Equal(t, Follower, s.Role())

	// The new leader reports a high watermark below ours: the quorum's
	// value follows it, but no HighWatermarkChanged goes backwards.
	s, acts = step(t, s, ReceiveFetchResponse{From: 3, LeaderID: 3, LeaderEpoch: 3, HighWatermark: 3})
	require.Equal(t, int64(3), s.HighWatermark())
	require.Empty(t, ofType[HighWatermarkChanged](acts))

	next, acts := step(t, s, ReceiveFetchResponse{
		From: 3, LeaderID: 3, LeaderEpoch: 3, HighWatermark: -1,
		Diverging: &LogOffsetMetadata{Offset: 3, Epoch: 1},
	})
	requireRefused(t, s, next, acts, LeaderRefused{LeaderID: 3, Epoch: 3, TruncateTo: 3, HighWatermark: 5, Reason: "the leader asks to truncate below the high watermark"})
}

// Step never changes the state it is given and always gives the same
// answer: every call in these tests goes through step(), which checks both;
// this test makes the check explicit on a state with shared slices (a
// leader's end offsets and a log with several epochs).
// Reference: the package doc (State is an immutable value; runs replay
// exactly).
func TestStepIsPureAndDeterministic(t *testing.T) {
	s := leaderOf(t, 3)
	s, _ = durable(t, s, LogEnd{Offset: 4, Epoch: 1})
	before := deepCopy(s)
	for _, e := range []Event{
		fetchFrom(2, 1, 4, 1), fetchFrom(3, 1, 2, 1),
		LogAppended{End: LogEnd{Offset: 6, Epoch: 1}},
		CheckQuorumTimeout{},
		BeginQuorumEpochTimeout{},
		Resign{},
		ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: 5, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 9, Epoch: 1}},
	} {
		a, actsA := Step(s, e)
		b, actsB := Step(s, e)
		require.Equal(t, a, b, "%T", e)
		require.Equal(t, actsA, actsB, "%T", e)
		require.Equal(t, before, s, "Step(%T) changed its input", e)
	}
	// StepInto through a reused Buffer gives each step exactly Step's
	// actions, and the actions Step returned stay as they were.
	var buf Buffer
	kept, fromStep := Step(s, fetchFrom(2, 1, 4, 1))
	want := append([]Action(nil), fromStep...)
	for _, e := range []Event{fetchFrom(2, 1, 4, 1), ElectionTimeout{}, Resign{}, fetchFrom(3, 1, 4, 1)} {
		wantNext, wantActs := Step(s, e)
		next, acts := StepInto(&buf, s, e)
		require.Equal(t, wantNext, next, "%T", e)
		require.Len(t, acts, len(wantActs), "%T", e)
		if len(acts) > 0 {
			require.Equal(t, wantActs, acts, "%T", e)
		}
	}
	require.Equal(t, want, fromStep)
	require.Equal(t, kept, CloneState(kept))
}

// A Persist is rewritten in place only while nothing has been sent after
// it: an observer that moves to a newer epoch sends its bootstrap Fetch of
// that epoch before it grants the vote, so it writes two records, the
// epoch's first (D1; the README's host contract, rule 1).
func TestPersistIsRewrittenOnlyBeforeAnySend(t *testing.T) {
	s := start(t, observerConfig(9, 1, 2, 3))
	next, acts := step(t, s, ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: 4, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 1, Epoch: 1}})
	require.Equal(t, ReplicaKey{ID: 2}, next.Record().VotedKey)
	require.Equal(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 4, LeaderID: NoNode, VotedKey: NoReplica}},
		RoleChanged{From: Unattached, To: Unattached, Epoch: 4, LeaderID: NoNode, Reason: "vote request with a newer epoch"},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: NoNode, CurrentLeaderEpoch: 4, HighWatermark: -1},
		Persist{Record: QuorumRecord{Epoch: 4, LeaderID: NoNode, VotedKey: ReplicaKey{ID: 2}}},
		SendVoteResponse{To: 2, Epoch: 4, LeaderID: NoNode, VoteGranted: true},
	}, acts)

	// Through a Buffer that held an earlier step's Persist, the rewrite
	// still only looks at this step's actions.
	var buf Buffer
	_, _ = StepInto(&buf, start(t, config(1, 1, 2, 3)), ElectionTimeout{})
	_, acts = StepInto(&buf, start(t, config(1, 1, 2, 3)),
		ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: 4, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 1, Epoch: 1}})
	_, fresh := Step(start(t, config(1, 1, 2, 3)),
		ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: 4, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 1, Epoch: 1}})
	require.Equal(t, fresh, acts)
	require.Equal(t, Persist{Record: QuorumRecord{Epoch: 4, LeaderID: NoNode, VotedKey: ReplicaKey{ID: 2}}}, acts[0])
}

// A message that names this replica leader of an epoch older than its own
// reports the past and is stale, not a proof of two leaders: voter 1, which
// led epoch 1 and now follows 4 in epoch 2, fetches from 4, which lost its
// disk, came back knowing only epoch 1 and answers UNKNOWN_LEADER_EPOCH
// naming 1 leader of epoch 1. Kafka's hasConsistentLeader fails on it
// (found by the simulator); kraft drops it (docs/design.md D49). Naming
// this replica leader of its own epoch or of a newer one, when it does not
// lead it, is still a Fault.
func TestMessageNamingUsLeaderOfAnOlderEpochIsStale(t *testing.T) {
	f := asFollower(t, start(t, config(1, 1, 2, 3, 4, 5)), 2, 4)
	for _, e := range []Event{
		ReceiveFetchResponse{From: 4, Error: ErrUnknownLeaderEpoch, LeaderID: 1, LeaderEpoch: 1, HighWatermark: -1},
		ReceiveQuorumResponse{From: 4, Error: ErrNone, LeaderID: 1, Epoch: 1},
		ReceiveBeginQuorumEpoch{From: 3, LeaderID: 1, LeaderEpoch: 1, VoterID: NoNode},
	} {
		next, acts := step(t, f, e)
		for _, a := range acts {
			_, isFault := a.(Fault)
			require.False(t, isFault, "%T: %v", e, acts)
		}
		requireState(t, next, Follower, 2, 4, f.Record().VotedKey)
	}
	for _, epoch := range []Epoch{2, 3} {
		e := ReceiveFetchResponse{From: 4, Error: ErrNone, LeaderID: 1, LeaderEpoch: epoch, HighWatermark: -1}
		next, acts := step(t, f, e)
		requireFault(t, f, next, acts)
	}
}
