package kraft

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// Graceful resignation, the Resigned role, and the receipt of
// EndQuorumEpoch and BeginQuorumEpoch (Kafka's ResignedState,
// handleEndQuorumEpochRequest, handleBeginQuorumEpochRequest).

// ---- Resign ----

// TestResignLeaderBecomesResignedWithSuccessorsByFetchPosition: a leader
// that resigns stays in its epoch as Resigned (memory only, nothing
// persisted), arms its election timer, and sends EndQuorumEpoch to every
// other voter naming the preferred successors: the other voters by last
// known fetch position, highest first, unknown last, ties by replica key.
// Reference: QuorumState.transitionToResigned (memory only);
// LeaderState.nonLeaderVotersByDescendingFetchOffset.
func TestResignLeaderBecomesResignedWithSuccessorsByFetchPosition(t *testing.T) {
	s := leaderOf(t, 5)
	s, _ = durable(t, s, LogEnd{Offset: 8, Epoch: 1})
	for _, f := range []ReceiveFetch{
		{From: 3, CurrentLeaderEpoch: 1, FetchEpoch: 1, FetchOffset: 6},
		{From: 5, CurrentLeaderEpoch: 1, FetchEpoch: 1, FetchOffset: 3},
		{From: 4, CurrentLeaderEpoch: 1, FetchEpoch: 1, FetchOffset: 3},
		// Voter 2 never fetches: its position is unknown, so it is last
		// although its key is the smallest.
	} {
		var acts []Action
		s, acts = step(t, s, f)
		require.Equal(t, ErrNone, ofType[SendFetchResponse](acts)[0].Error)
	}
	before := s.Record()

	next, acts := step(t, s, Resign{})
	requireState(t, next, Resigned, 1, 1, NoReplica)
	require.Equal(t, before, next.Record(), "Resigned is memory only")
	successors := keys(3, 4, 5, 2)
	send := func(to NodeID) Action {
		return SendEndQuorumEpoch{To: ReplicaKey{ID: to}, Epoch: 1, LeaderID: 1, PreferredSuccessors: successors}
	}
	require.Equal(t, []Action{
		RoleChanged{From: Leader, To: Resigned, Epoch: 1, LeaderID: 1, Reason: "resigned"},
		StopTimer{Timer: CheckQuorumTimer},
		StopTimer{Timer: BeginQuorumEpochTimer},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 3)},
		send(2), send(3), send(4), send(5),
	}, acts)

	// A second Resign does nothing.
	again, acts := step(t, next, Resign{})
	requireUnchanged(t, next, again, acts)
}

// TestResignToASuccessorRanksItFirst: a Resign naming a successor (a
// leadership transfer) ranks it first in EndQuorumEpoch's preferred
// successors, the others in their usual order after it, so that it
// campaigns at once; a successor that is no other voter (the leader
// itself, an unknown key) changes nothing. docs/design.md D135.
func TestResignToASuccessorRanksItFirst(t *testing.T) {
	s := leaderOf(t, 5)
	s, _ = durable(t, s, LogEnd{Offset: 8, Epoch: 1})
	for _, f := range []ReceiveFetch{
		{From: 3, CurrentLeaderEpoch: 1, FetchEpoch: 1, FetchOffset: 8},
		{From: 5, CurrentLeaderEpoch: 1, FetchEpoch: 1, FetchOffset: 3},
		{From: 4, CurrentLeaderEpoch: 1, FetchEpoch: 1, FetchOffset: 8},
	} {
		s, _ = step(t, s, f)
	}
	successorsOf := func(acts []Action) []ReplicaKey {
		sends := ofType[SendEndQuorumEpoch](acts)
		require.Len(t, sends, 4)
		for _, a := range sends[1:] {
			require.Equal(t, sends[0].PreferredSuccessors, a.PreferredSuccessors)
		}
		return sends[0].PreferredSuccessors
	}
	for name, tc := range map[string]struct {
		to   *ReplicaKey
		want []ReplicaKey
	}{
		"caught-up voter behind a tie": {&ReplicaKey{ID: 4}, keys(4, 3, 5, 2)},
		"lagging voter":                {&ReplicaKey{ID: 5}, keys(5, 3, 4, 2)},
		"unknown position":             {&ReplicaKey{ID: 2}, keys(2, 3, 4, 5)},
		"already first":                {&ReplicaKey{ID: 3}, keys(3, 4, 5, 2)},
		"none":                         {nil, keys(3, 4, 5, 2)},
		"itself":                       {&ReplicaKey{ID: 1}, keys(3, 4, 5, 2)},
		"not a voter":                  {&ReplicaKey{ID: 9}, keys(3, 4, 5, 2)},
		"another directory":            {&ReplicaKey{ID: 4, DirectoryID: uuid.New()}, keys(3, 4, 5, 2)},
	} {
		before := s
		next, acts := step(t, s, Resign{Successor: tc.to})
		require.Equal(t, before, s, name)
		requireState(t, next, Resigned, 1, 1, NoReplica)
		require.Equal(t, tc.want, successorsOf(acts), name)
	}
}

// TestResignOutsideLeaderDoesNothing: Resign only concerns a Leader.
// Reference: KafkaRaftClient.resign; docs/design.md D27.
func TestResignOutsideLeaderDoesNothing(t *testing.T) {
	for name, s := range map[string]State{
		"Unattached":          start(t, config(1, 1, 2, 3)),
		"Prospective":         asProspective(t, start(t, config(1, 1, 2, 3))),
		"Candidate":           node1Candidate(t),
		"Follower":            node1Fetched(t),
		"Resigned":            node1Resigned(t),
		"observer Unattached": start(t, observerConfig(9, 1, 2, 3)),
		"observer Follower":   asFollower(t, start(t, observerConfig(9, 1, 2, 3)), 1, 2),
	} {
		next, acts := step(t, s, Resign{})
		require.Empty(t, acts, name)
		require.Equal(t, s, next, name)
	}
}

// ---- the Resigned role ----

// resignedStates are the two ways to be Resigned in epoch 1 with log end
// (1, 1): a leader that resigned, and a former leader that restarted.
func resignedStates(t *testing.T) map[string]State {
	restarted, _ := restart(t, config(1, 1, 2, 3), quorumRecord(1, 1, NoNode), LogState{End: LogEnd{Offset: 1, Epoch: 1}})
	return map[string]State{"resigned": node1Resigned(t), "restarted": restarted}
}

// TestResignedVotes: a Resigned replica grants pre-votes to up-to-date
// requesters only and rejects standard votes of its epoch. Reference:
// ResignedState; ResignedStateTest.testGrantVote.
func TestResignedVotes(t *testing.T) {
	for name, s := range resignedStates(t) {
		s := s
		t.Run(name, func(t *testing.T) {
			pre := func(end LogEnd) ReceiveVoteRequest {
				return ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: 1, Candidate: 2, CandidateLogEnd: end, PreVote: true}
			}
			next, acts := step(t, s, pre(LogEnd{Offset: 1, Epoch: 1}))
			require.Equal(t, s, next)
			require.Equal(t, []Action{SendVoteResponse{To: 2, Epoch: 1, LeaderID: 1, VoteGranted: true}}, acts)

			next, acts = step(t, s, pre(LogEnd{Offset: 0, Epoch: 1}))
			require.Equal(t, s, next)
			require.Equal(t, []Action{SendVoteResponse{To: 2, Epoch: 1, LeaderID: 1}}, acts)

			next, acts = step(t, s, ReceiveVoteRequest{From: 3, VoterID: 1, CandidateEpoch: 1, Candidate: 3, CandidateLogEnd: LogEnd{Offset: 9, Epoch: 0}})
			require.Equal(t, s, next)
			require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 1, LeaderID: 1}}, acts)
		})
	}
}

// TestResignedAnswersFetchWithNotLeaderNamingItself: a Resigned replica is
// no longer leader but still names itself leader of its epoch. Reference:
// KafkaRaftClient.validateLeaderOnlyRequest; ResignedState.
func TestResignedAnswersFetchWithNotLeaderNamingItself(t *testing.T) {
	for name, s := range resignedStates(t) {
		next, acts := step(t, s, ReceiveFetch{From: 2, CurrentLeaderEpoch: 1, FetchEpoch: 1, FetchOffset: 1})
		require.Equal(t, s, next, name)
		require.Equal(t, []Action{
			SendFetchResponse{To: 2, Error: ErrNotLeaderOrFollower, Epoch: 1, LeaderID: 1, HighWatermark: -1},
		}, acts, name)
	}
}

// TestResignedElectionTimeoutGoesUnattachedNextEpoch: the Resigned election
// timer moves to Unattached(E+1), persisted, with a 0 timer, and from there
// to a pre-vote in E+1. Reference: KafkaRaftClient.pollResigned (newest
// Kafka: always Unattached); QuorumState.transitionToUnattached.
func TestResignedElectionTimeoutGoesUnattachedNextEpoch(t *testing.T) {
	for name, s := range resignedStates(t) {
		s := s
		t.Run(name, func(t *testing.T) {
			u, acts := step(t, s, ElectionTimeout{})
			requireState(t, u, Unattached, 2, NoNode, NoReplica)
			require.Equal(t, []Action{
				Persist{Record: quorumRecord(2, NoNode, NoNode)},
				RoleChanged{From: Resigned, To: Unattached, Epoch: 2, LeaderID: NoNode, Reason: "resigned leader's election timeout"},
				ResetTimer{Timer: ElectionTimer, After: 0},
			}, acts)

			p, acts := step(t, u, ElectionTimeout{})
			requireState(t, p, Prospective, 2, NoNode, NoReplica)
			end := LogEnd{Offset: 1, Epoch: 1}
			require.Equal(t, []Action{
				RoleChanged{From: Unattached, To: Prospective, Epoch: 2, LeaderID: NoNode, Reason: "election timeout"},
				ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
				SendVoteRequest{To: ReplicaKey{ID: 2}, CandidateEpoch: 2, Candidate: ReplicaKey{ID: 1}, CandidateLogEnd: end, PreVote: true},
				SendVoteRequest{To: ReplicaKey{ID: 3}, CandidateEpoch: 2, Candidate: ReplicaKey{ID: 1}, CandidateLogEnd: end, PreVote: true},
			}, acts)
		})
	}
}

// TestResignedLeavesOnNewerEpoch: any newer epoch moves a Resigned replica
// on: BeginQuorumEpoch makes it Follower, a leaderless epoch or a vote
// request of a newer epoch Unattached (keeping the remaining election time).
// Reference: ResignedState; QuorumState.transitionToUnattached (a Resigned
// replica hands over its remaining time); KafkaRaftClient.handleVoteRequest,
// maybeHandleCommonResponse.
func TestResignedLeavesOnNewerEpoch(t *testing.T) {
	for name, s := range resignedStates(t) {
		s := s
		t.Run(name, func(t *testing.T) {
			next, acts := step(t, s, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2, VoterID: 1})
			requireState(t, next, Follower, 2, 2, NoReplica)
			require.Equal(t, []Action{
				Persist{Record: quorumRecord(2, 2, NoNode)},
				RoleChanged{From: Resigned, To: Follower, Epoch: 2, LeaderID: 2, Reason: "BeginQuorumEpoch"},
				StopTimer{Timer: ElectionTimer},
				ResetTimer{Timer: FetchTimer, After: testTf},
				SendFetch{To: 2, CurrentLeaderEpoch: 2, FetchOffset: 1, FetchEpoch: 1, HighWatermark: -1},
				SendBeginQuorumEpochResponse{To: 2, Epoch: 2, LeaderID: 2},
			}, acts)

			next, acts = step(t, s, ReceiveLeaderlessEpoch{From: 2, Epoch: 3})
			requireState(t, next, Unattached, 3, NoNode, NoReplica)
			require.Equal(t, []Action{
				Persist{Record: quorumRecord(3, NoNode, NoNode)},
				RoleChanged{From: Resigned, To: Unattached, Epoch: 3, LeaderID: NoNode, Reason: "leaderless epoch"},
			}, acts)

			// A standard vote of epoch 2 from an up-to-date candidate: first
			// Unattached(2), then the vote is granted; one Persist holds both.
			next, acts = step(t, s, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: 2, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 1, Epoch: 1}})
			requireState(t, next, Unattached, 2, NoNode, ReplicaKey{ID: 2})
			require.Equal(t, []Action{
				Persist{Record: quorumRecord(2, NoNode, 2)},
				RoleChanged{From: Resigned, To: Unattached, Epoch: 2, LeaderID: NoNode, Reason: "vote request with a newer epoch"},
				ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 2)},
				SendVoteResponse{To: 2, Epoch: 2, LeaderID: NoNode, VoteGranted: true},
			}, acts)

			// A pre-vote of epoch 2 moves it too, and binds nothing.
			next, acts = step(t, s, ReceiveVoteRequest{From: 3, VoterID: 1, CandidateEpoch: 2, Candidate: 3, CandidateLogEnd: LogEnd{Offset: 1, Epoch: 1}, PreVote: true})
			requireState(t, next, Unattached, 2, NoNode, NoReplica)
			require.Equal(t, []Action{
				Persist{Record: quorumRecord(2, NoNode, NoNode)},
				RoleChanged{From: Resigned, To: Unattached, Epoch: 2, LeaderID: NoNode, Reason: "vote request with a newer epoch"},
				SendVoteResponse{To: 3, Epoch: 2, LeaderID: NoNode, VoteGranted: true},
			}, acts)
		})
	}
}

// TestResignedInconsistentLeaderFaults: a Resigned replica is leader of its
// epoch in the record but not Leader: another leader for its epoch, or a
// message naming it leader, proves the cluster inconsistent. Reference:
// KafkaRaftClient.hasConsistentLeader; docs/design.md, contract decision 1.
func TestResignedInconsistentLeaderFaults(t *testing.T) {
	for name, s := range resignedStates(t) {
		s := s
		t.Run(name, func(t *testing.T) {
			for _, e := range []Event{
				ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: 1},
				ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 1},
				ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1},
				ReceiveEndQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1},
			} {
				next, acts := step(t, s, e)
				requireFault(t, s, next, acts)
			}
		})
	}
}

// ---- EndQuorumEpoch receipt ----

// TestEndQuorumEpochRejectsBadRequests: a foreign cluster id, an older epoch
// (FENCED_LEADER_EPOCH, checked first) and a negative leader id
// (INVALID_REQUEST) are answered without any change. Reference:
// handleEndQuorumEpochRequest, hasValidClusterId, validateVoterOnlyRequest.
func TestEndQuorumEpochRejectsBadRequests(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	cfg.ClusterID = testClusterID
	s := asFollower(t, start(t, cfg), 3, 2)
	for _, tc := range []struct {
		e    ReceiveEndQuorumEpoch
		code ErrorCode
	}{
		{ReceiveEndQuorumEpoch{From: 2, ClusterID: otherClusterID, LeaderID: 2, LeaderEpoch: 3}, ErrInconsistentClusterID},
		{ReceiveEndQuorumEpoch{From: 2, ClusterID: otherClusterID, LeaderID: 2, LeaderEpoch: 9}, ErrInconsistentClusterID},
		{ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2}, ErrFencedLeaderEpoch},
		{ReceiveEndQuorumEpoch{From: 2, ClusterID: testClusterID, LeaderID: -5, LeaderEpoch: 2}, ErrFencedLeaderEpoch},
		{ReceiveEndQuorumEpoch{From: 2, LeaderID: NoNode, LeaderEpoch: 3}, ErrInvalidRequest},
		{ReceiveEndQuorumEpoch{From: 2, LeaderID: -7, LeaderEpoch: 4}, ErrInvalidRequest},
	} {
		next, acts := step(t, s, tc.e)
		require.Equal(t, s, next, "%+v", tc.e)
		require.Equal(t, []Action{SendEndQuorumEpochResponse{To: 2, Error: tc.code, Epoch: 3, LeaderID: 2}}, acts, "%+v", tc.e)
	}

	// Our own cluster id, or none, is accepted.
	for _, id := range []uuid.NullUUID{testClusterID, {}} {
		_, acts := step(t, s, ReceiveEndQuorumEpoch{From: 2, ClusterID: id, LeaderID: 2, LeaderEpoch: 3, SuccessorRank: SuccessorRank{Position: 0, Of: 2}})
		require.Equal(t, []Action{
			ResetTimer{Timer: FetchTimer, After: 0},
			SendEndQuorumEpochResponse{To: 2, Epoch: 3, LeaderID: 2},
		}, acts)
	}
}

// TestEndQuorumEpochHigherEpochFollowsLeader: EndQuorumEpoch of a newer
// epoch makes the receiver Follower of that leader (persisted), and, being
// now a Follower of exactly that leader, it takes the backoff of its rank;
// as any new Follower it then fetches from its leader (Kafka's
// pollFollowerAsVoter on the next poll), unless its backoff is 0 (rank 0:
// it becomes Prospective on the next poll instead).
// Reference: KafkaRaftClient.handleEndQuorumEpochRequest, maybeTransition,
// endEpochElectionBackoff.
func TestEndQuorumEpochHigherEpochFollowsLeader(t *testing.T) {
	s := start(t, config(1, 1, 2, 3))
	next, acts := step(t, s, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 3, SuccessorRank: SuccessorRank{Position: 1, Of: 2}})
	requireState(t, next, Follower, 3, 2, NoReplica)
	require.Equal(t, []Action{
		Persist{Record: quorumRecord(3, 2, NoNode)},
		RoleChanged{From: Unattached, To: Follower, Epoch: 3, LeaderID: 2, Reason: "EndQuorumEpoch"},
		StopTimer{Timer: ElectionTimer},
		ResetTimer{Timer: FetchTimer, After: 500 * time.Millisecond},
		SendEndQuorumEpochResponse{To: 2, Epoch: 3, LeaderID: 2},
		SendFetch{To: 2, CurrentLeaderEpoch: 3, FetchOffset: 0, FetchEpoch: 0, HighWatermark: -1},
	}, acts)

	// A Follower of leader 2 in epoch 1 hears that leader 3 of epoch 2
	// resigns: it follows 3 and backs off by its rank there.
	next, acts = step(t, node1Fetched(t), ReceiveEndQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 2, SuccessorRank: SuccessorRank{Position: 0, Of: 1}})
	requireState(t, next, Follower, 2, 3, NoReplica)
	require.Equal(t, []Action{
		Persist{Record: quorumRecord(2, 3, NoNode)},
		RoleChanged{From: Follower, To: Follower, Epoch: 2, LeaderID: 3, Reason: "EndQuorumEpoch"},
		ResetTimer{Timer: FetchTimer, After: 0},
		SendEndQuorumEpochResponse{To: 3, Epoch: 2, LeaderID: 3},
	}, acts)
}

// TestEndQuorumEpochSameEpochUnknownLeaderFollowsKeepingVote: in our epoch,
// a replica that knows no leader follows the resigning one, keeping its
// vote. Reference: KafkaRaftClient.handleEndQuorumEpochRequest, maybeTransition;
// QuorumState.transitionToFollower (keeps the vote in the same epoch).
func TestEndQuorumEpochSameEpochUnknownLeaderFollowsKeepingVote(t *testing.T) {
	s, _ := restart(t, config(1, 1, 2, 3), quorumRecord(2, NoNode, 3), LogState{})
	next, acts := step(t, s, ReceiveEndQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 2, SuccessorRank: SuccessorRank{Position: 1, Of: 3}})
	requireState(t, next, Follower, 2, 3, ReplicaKey{ID: 3})
	require.Equal(t, []Action{
		Persist{Record: quorumRecord(2, 3, 3)},
		RoleChanged{From: Unattached, To: Follower, Epoch: 2, LeaderID: 3, Reason: "EndQuorumEpoch"},
		StopTimer{Timer: ElectionTimer},
		ResetTimer{Timer: FetchTimer, After: 250 * time.Millisecond},
		SendEndQuorumEpochResponse{To: 3, Epoch: 2, LeaderID: 3},
		SendFetch{To: 3, CurrentLeaderEpoch: 2, FetchOffset: 0, FetchEpoch: 0, HighWatermark: -1},
	}, acts)
}

// TestEndQuorumEpochBackoffByRank: a Follower of the resigning leader
// replaces its fetch timer with Kafka's strict exponential backoff of its
// rank p in a list of n: 0 for p = 0 (also for the empty list a restarted
// leader sends), min(B, (B >> (n-1)) << (p-1)) whole ms for a listed rank,
// B when not listed. Reference: KafkaRaftClient.endEpochElectionBackoff,
// KafkaRaftClient.strictExponentialElectionBackoffMs.
func TestEndQuorumEpochBackoffByRank(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		p, n int
		want time.Duration
	}{
		{0, 0, 0},
		{0, 1, 0},
		{0, 5, 0},
		{1, 2, 500 * ms},
		{1, 3, 250 * ms},
		{2, 3, 500 * ms},
		{1, 4, 125 * ms},
		{2, 4, 250 * ms},
		{3, 4, 500 * ms},
		{1, 5, 62 * ms},
		{2, 5, 124 * ms},
		{3, 5, 248 * ms},
		{4, 5, 496 * ms},
		// Not listed.
		{5, 5, time.Second},
		{9, 5, time.Second},
		{-1, 5, time.Second},
		{1, 0, time.Second},
		{1, 1, time.Second},
	}
	for _, tc := range cases {
		s := node1Fetched(t)
		next, acts := step(t, s, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: tc.p, Of: tc.n}})
		requireState(t, next, Follower, 1, 2, NoReplica)
		require.Equal(t, s.Record(), next.Record())
		require.Equal(t, []Action{
			ResetTimer{Timer: FetchTimer, After: tc.want},
			SendEndQuorumEpochResponse{To: 2, Epoch: 1, LeaderID: 2},
		}, acts, "rank %d of %d", tc.p, tc.n)
	}

	// B_max is the configured value: B = 2 s, n = 3.
	cfg := config(1, 1, 2, 3)
	cfg.ElectionBackoffMax = 2 * time.Second
	s := asFollower(t, start(t, cfg), 1, 2)
	for p, want := range []time.Duration{0, 500 * ms, time.Second, 2 * time.Second} {
		_, acts := step(t, s, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: p, Of: 3}})
		require.Equal(t, ResetTimer{Timer: FetchTimer, After: want}, acts[0], "rank %d of 3", p)
	}
}

// backoffFor is the fetch timer a Follower of 2 sets for rank p of n.
func backoffFor(t *testing.T, s State, p, n int) time.Duration {
	t.Helper()
	_, acts := step(t, s, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: p, Of: n}})
	require.Len(t, acts, 2)
	rt, ok := acts[0].(ResetTimer)
	require.True(t, ok)
	require.Equal(t, FetchTimer, rt.Timer)
	return rt.After
}

// TestEndQuorumEpochBackoffLongListsStayOrdered: for n >= 11 Kafka's base
// B >> (n-1) is 0 and every listed rank would campaign at once; kraft keeps
// the base at least 1 ms so that ranks stay ordered, never above B.
// Reference: docs/design.md, contract decision 4;
// KafkaRaftClient.strictExponentialElectionBackoffMs.
func TestEndQuorumEpochBackoffLongListsStayOrdered(t *testing.T) {
	s := node1Fetched(t)
	var got []time.Duration
	for p := 1; p < 11; p++ {
		got = append(got, backoffFor(t, s, p, 11))
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{1 * ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms, 128 * ms, 256 * ms, 512 * ms}, got)

	for _, n := range []int{12, 20, 64, 100, 1000} {
		prev := time.Duration(0)
		for p := 1; p < n; p++ {
			b := backoffFor(t, s, p, n)
			require.Greater(t, b, time.Duration(0), "rank %d of %d", p, n)
			require.GreaterOrEqual(t, b, prev, "rank %d of %d", p, n)
			require.LessOrEqual(t, b, time.Second, "rank %d of %d", p, n)
			prev = b
		}
		require.Equal(t, time.Millisecond, backoffFor(t, s, 1, n), "rank 1 of %d", n)
		require.Equal(t, time.Second, backoffFor(t, s, n, n), "unlisted of %d", n)
	}
}

// TestEndQuorumEpochOtherRolesKeepTimers: only a Follower of exactly the
// resigning leader changes its timer; a Prospective that already knows that
// leader, or the Leader hearing its own epoch's EndQuorumEpoch, just answer.
// Reference: KafkaRaftClient.handleEndQuorumEpochRequest (the backoff applies
// only to a Follower of the requesting leader).
func TestEndQuorumEpochOtherRolesKeepTimers(t *testing.T) {
	p, _ := step(t, node1Fetched(t), FetchTimeout{})
	require.Equal(t, Prospective, p.Role())
	require.Equal(t, NodeID(2), p.Leader())
	next, acts := step(t, p, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: 0, Of: 2}})
	require.Equal(t, p, next)
	require.Equal(t, []Action{SendEndQuorumEpochResponse{To: 2, Epoch: 1, LeaderID: 2}}, acts)

	l := leaderOf(t, 3)
	next, acts = step(t, l, ReceiveEndQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1})
	require.Equal(t, l, next)
	require.Equal(t, []Action{SendEndQuorumEpochResponse{To: 1, Epoch: 1, LeaderID: 1}}, acts)
}

// TestEndQuorumEpochInconsistentLeaderFaults: an EndQuorumEpoch naming
// another leader for our epoch, or naming us when we do not lead, is a
// Fault. Reference: KafkaRaftClient.hasConsistentLeader; docs/design.md,
// contract decision 1.
func TestEndQuorumEpochInconsistentLeaderFaults(t *testing.T) {
	f := node1Fetched(t)
	next, acts := step(t, f, ReceiveEndQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 1})
	requireFault(t, f, next, acts)
	next, acts = step(t, f, ReceiveEndQuorumEpoch{From: 3, LeaderID: 1, LeaderEpoch: 1})
	requireFault(t, f, next, acts)
	l := leaderOf(t, 3)
	next, acts = step(t, l, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1})
	requireFault(t, l, next, acts)
}

// TestFollowerGrantsPreVoteAfterEndQuorumEpoch: a Follower that has fetched
// rejects pre-votes (KIP-996), but after EndQuorumEpoch from its leader it
// grants them again to up-to-date requesters, so that the preferred
// successor can win; standard votes stay rejected. Reference:
// docs/design.md, contract decision 3 (KAFKA-20895); FollowerState.canGrantVote.
func TestFollowerGrantsPreVoteAfterEndQuorumEpoch(t *testing.T) {
	pre := ReceiveVoteRequest{From: 3, VoterID: 1, CandidateEpoch: 1, Candidate: 3, CandidateLogEnd: LogEnd{Offset: 0, Epoch: 0}, PreVote: true}
	f := node1Fetched(t)
	_, acts := step(t, f, pre)
	require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 1, LeaderID: 2}}, acts)

	r, _ := step(t, f, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: 1, Of: 2}})
	next, acts := step(t, r, pre)
	require.Equal(t, r, next)
	require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 1, LeaderID: 2, VoteGranted: true}}, acts)

	// Still only to up-to-date requesters.
	r, _ = durable(t, r, LogEnd{Offset: 2, Epoch: 1})
	_, acts = step(t, r, pre)
	require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 1, LeaderID: 2}}, acts)

	// Standard votes of the epoch are still refused.
	_, acts = step(t, r, ReceiveVoteRequest{From: 3, VoterID: 1, CandidateEpoch: 1, Candidate: 3, CandidateLogEnd: LogEnd{Offset: 5, Epoch: 0}})
	require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 1, LeaderID: 2}}, acts)

	// A late fetch response from before the resignation does not undo it:
	// the leader has resigned for good in this epoch.
	r, _ = step(t, r, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 1, HighWatermark: -1})
	_, acts = step(t, r, ReceiveVoteRequest{From: 3, VoterID: 1, CandidateEpoch: 1, Candidate: 3, CandidateLogEnd: LogEnd{Offset: 2, Epoch: 1}, PreVote: true})
	require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 1, LeaderID: 2, VoteGranted: true}}, acts)
}

// TestEndQuorumEpochRankZeroCampaignsAtOnce: rank 0 (or the empty list of a
// restarted leader) sets the fetch timer to 0; when it fires the Follower
// runs a pre-vote in the same epoch. Reference:
// KafkaRaftClient.endEpochElectionBackoff, pollFollowerAsVoter.
func TestEndQuorumEpochRankZeroCampaignsAtOnce(t *testing.T) {
	f, acts := step(t, node1Fetched(t), ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: 0, Of: 0}})
	require.Equal(t, ResetTimer{Timer: FetchTimer, After: 0}, acts[0])
	p, acts := step(t, f, FetchTimeout{})
	requireState(t, p, Prospective, 1, 2, NoReplica)
	require.Equal(t, []Action{
		RoleChanged{From: Follower, To: Prospective, Epoch: 1, LeaderID: 2, Reason: "fetch timeout"},
		StopTimer{Timer: FetchTimer},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 2)},
		SendVoteRequest{To: ReplicaKey{ID: 2}, CandidateEpoch: 1, Candidate: ReplicaKey{ID: 1}, PreVote: true},
		SendVoteRequest{To: ReplicaKey{ID: 3}, CandidateEpoch: 1, Candidate: ReplicaKey{ID: 1}, PreVote: true},
	}, acts)
}

// ---- BeginQuorumEpoch receipt ----

// TestBeginQuorumEpochRejectsBadRequests: foreign cluster id, older epoch
// and negative leader id are answered without change, on every role.
// Reference: KafkaRaftClient.handleBeginQuorumEpochRequest, hasValidClusterId,
// validateVoterOnlyRequest.
func TestBeginQuorumEpochRejectsBadRequests(t *testing.T) {
	for name, s := range rolesInEpoch(t, testClusterID) {
		for _, tc := range []struct {
			e    ReceiveBeginQuorumEpoch
			code ErrorCode
		}{
			{ReceiveBeginQuorumEpoch{From: 3, ClusterID: otherClusterID, LeaderID: 3, LeaderEpoch: 9, VoterID: NoNode}, ErrInconsistentClusterID},
			{ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 1, VoterID: NoNode}, ErrFencedLeaderEpoch},
			{ReceiveBeginQuorumEpoch{From: 3, LeaderID: -3, LeaderEpoch: 1, VoterID: NoNode}, ErrFencedLeaderEpoch},
			{ReceiveBeginQuorumEpoch{From: 3, ClusterID: testClusterID, LeaderID: NoNode, LeaderEpoch: 9, VoterID: NoNode}, ErrInvalidRequest},
		} {
			next, acts := step(t, s, tc.e)
			require.Equal(t, s, next, "%s %+v", name, tc.e)
			require.Equal(t, []Action{
				SendBeginQuorumEpochResponse{To: 3, Error: tc.code, Epoch: s.Epoch(), LeaderID: s.Leader()},
			}, acts, "%s %+v", name, tc.e)
		}
	}
}

// TestBeginQuorumEpochNewerEpochFollowsFromEveryRole: a newer epoch makes
// every role Follower of the named leader, persisted, fetch timer T_f, first
// Fetch at once: the Leader steps down, Resigned leaves, Prospective and
// Candidate abort. Reference: KafkaRaftClient.handleBeginQuorumEpochRequest,
// maybeTransition.
func TestBeginQuorumEpochNewerEpochFollowsFromEveryRole(t *testing.T) {
	stops := map[Role][]Action{
		Unattached:  {StopTimer{Timer: ElectionTimer}},
		Prospective: {StopTimer{Timer: ElectionTimer}},
		Candidate:   {StopTimer{Timer: ElectionTimer}},
		Leader:      {StopTimer{Timer: CheckQuorumTimer}, StopTimer{Timer: BeginQuorumEpochTimer}},
		Follower:    nil,
		Resigned:    {StopTimer{Timer: ElectionTimer}},
	}
	for name, s := range rolesInEpoch(t, uuid.NullUUID{}) {
		const epoch, leader = 5, 3
		next, acts := step(t, s, ReceiveBeginQuorumEpoch{From: leader, LeaderID: leader, LeaderEpoch: epoch, VoterID: s.Local().ID})
		requireState(t, next, Follower, epoch, leader, NoReplica)
		require.Equal(t, s.IsVoter(), next.IsVoter())
		want := []Action{
			Persist{Record: quorumRecord(epoch, leader, NoNode)},
			RoleChanged{From: s.Role(), To: Follower, Epoch: epoch, LeaderID: leader, Reason: "BeginQuorumEpoch"},
		}
		if s.IsVoter() {
			want = append(want, stops[s.Role()]...)
		}
		end := s.LogEnd()
		want = append(want,
			ResetTimer{Timer: FetchTimer, After: testTf},
			SendFetch{To: leader, CurrentLeaderEpoch: epoch, FetchOffset: end.Offset, FetchEpoch: end.Epoch, HighWatermark: -1},
			SendBeginQuorumEpochResponse{To: leader, Epoch: epoch, LeaderID: leader},
		)
		require.Equal(t, want, acts, name)
	}
}

// TestBeginQuorumEpochSameEpochNoLeaderFollowsKeepingVote: in our epoch, a
// replica that knows no leader follows the announced one and keeps its
// vote: Unattached with a vote, Prospective, Candidate (its self-vote).
// Reference: KafkaRaftClient.handleBeginQuorumEpochRequest, maybeTransition;
// QuorumState.transitionToFollower (keeps the vote in the same epoch).
func TestBeginQuorumEpochSameEpochNoLeaderFollowsKeepingVote(t *testing.T) {
	uv, _ := restart(t, config(1, 1, 2, 3), quorumRecord(2, NoNode, 3), LogState{})
	cases := []struct {
		name  string
		s     State
		epoch Epoch
		voted ReplicaKey
		stop  bool
	}{
		{"Unattached with vote", uv, 2, ReplicaKey{ID: 3}, true},
		{"Prospective", asProspective(t, start(t, config(1, 1, 2, 3))), 0, NoReplica, true},
		{"Candidate", node1Candidate(t), 1, ReplicaKey{ID: 1}, true},
		{"observer Unattached", start(t, observerConfig(9, 1, 2, 3)), 0, NoReplica, false},
	}
	for _, tc := range cases {
		next, acts := step(t, tc.s, ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: tc.epoch, VoterID: NoNode})
		requireState(t, next, Follower, tc.epoch, 3, tc.voted)
		want := []Action{
			Persist{Record: QuorumRecord{Epoch: tc.epoch, LeaderID: 3, VotedKey: tc.voted}},
			RoleChanged{From: tc.s.Role(), To: Follower, Epoch: tc.epoch, LeaderID: 3, Reason: "BeginQuorumEpoch"},
		}
		if tc.stop {
			want = append(want, StopTimer{Timer: ElectionTimer})
		}
		want = append(want,
			ResetTimer{Timer: FetchTimer, After: testTf},
			SendFetch{To: 3, CurrentLeaderEpoch: tc.epoch, HighWatermark: -1},
			SendBeginQuorumEpochResponse{To: 3, Epoch: tc.epoch, LeaderID: 3},
		)
		require.Equal(t, want, acts, tc.name)
	}
}

// TestBeginQuorumEpochUnattachedWithLeaderIDFollows: an Unattached replica
// that knows the leader's id but could not reach it follows once the
// leader's own BeginQuorumEpoch brings the way to it. Reference:
// KafkaRaftClient.maybeTransition (the request brings endpoints the
// Unattached replica lacks); QuorumState.initialize.
func TestBeginQuorumEpochUnattachedWithLeaderIDFollows(t *testing.T) {
	s, _ := restart(t, config(1, 1, 2, 3), quorumRecord(2, 7, 2), LogState{})
	next, acts := step(t, s, ReceiveBeginQuorumEpoch{From: 7, LeaderID: 7, LeaderEpoch: 2, VoterID: 1})
	requireState(t, next, Follower, 2, 7, ReplicaKey{ID: 2})
	require.Equal(t, []Action{
		RoleChanged{From: Unattached, To: Follower, Epoch: 2, LeaderID: 7, Reason: "BeginQuorumEpoch"},
		StopTimer{Timer: ElectionTimer},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 7, CurrentLeaderEpoch: 2, HighWatermark: -1},
		SendBeginQuorumEpochResponse{To: 7, Epoch: 2, LeaderID: 7},
	}, acts, "the record (2, 7, 2) does not change, so nothing is persisted")
}

// TestBeginQuorumEpochLeaderOwnIsNoop: a Leader that receives its own
// BeginQuorumEpoch answers and changes nothing. Reference:
// KafkaRaftClient.handleBeginQuorumEpochRequest, maybeTransition.
func TestBeginQuorumEpochLeaderOwnIsNoop(t *testing.T) {
	l := leaderOf(t, 3)
	next, acts := step(t, l, ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 1})
	require.Equal(t, l, next)
	require.Equal(t, []Action{SendBeginQuorumEpochResponse{To: 1, Epoch: 1, LeaderID: 1}}, acts)
}

// TestBeginQuorumEpochInconsistentLeaderFaults: another leader for our
// epoch, or a message naming us leader when we are not, is a single Fault
// with the state unchanged. Reference: handleBeginQuorumEpochRequest,
// hasConsistentLeader; docs/design.md, contract decision 1.
func TestBeginQuorumEpochInconsistentLeaderFaults(t *testing.T) {
	ua, _ := restart(t, config(1, 1, 2, 3), quorumRecord(2, 7, NoNode), LogState{})
	cases := []struct {
		name string
		s    State
		e    ReceiveBeginQuorumEpoch
	}{
		{"Follower, other leader", node1Fetched(t), ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 1, VoterID: 1}},
		{"Leader, other leader", leaderOf(t, 3), ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: 1}},
		{"Resigned, other leader", node1Resigned(t), ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: 1}},
		{"Unattached with leader id, other leader", ua, ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 2, VoterID: 1}},
		{"Unattached, names us", start(t, config(1, 1, 2, 3)), ReceiveBeginQuorumEpoch{From: 2, LeaderID: 1, LeaderEpoch: 0, VoterID: 1}},
		{"Candidate, names us", node1Candidate(t), ReceiveBeginQuorumEpoch{From: 2, LeaderID: 1, LeaderEpoch: 1, VoterID: 1}},
		{"Follower, names us in a newer epoch", node1Fetched(t), ReceiveBeginQuorumEpoch{From: 2, LeaderID: 1, LeaderEpoch: 4, VoterID: 1}},
		{"Leader, names us in a newer epoch", leaderOf(t, 3), ReceiveBeginQuorumEpoch{From: 2, LeaderID: 1, LeaderEpoch: 4, VoterID: 1}},
	}
	for _, tc := range cases {
		next, acts := step(t, tc.s, tc.e)
		require.Len(t, acts, 1, tc.name)
		requireFault(t, tc.s, next, acts)
	}
}

// TestBeginQuorumEpochInvalidVoterKeyAfterTransition: a BeginQuorumEpoch
// addressed to another voter key is answered INVALID_VOTER_KEY, but only
// after the epoch/leader transition, which is kept. Reference:
// KafkaRaftClient.handleBeginQuorumEpochRequest, isValidVoterKey.
func TestBeginQuorumEpochInvalidVoterKeyAfterTransition(t *testing.T) {
	s := start(t, config(1, 1, 2, 3))
	next, acts := step(t, s, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 3, VoterID: 3})
	requireState(t, next, Follower, 3, 2, NoReplica)
	require.Equal(t, []Action{
		Persist{Record: quorumRecord(3, 2, NoNode)},
		RoleChanged{From: Unattached, To: Follower, Epoch: 3, LeaderID: 2, Reason: "BeginQuorumEpoch"},
		StopTimer{Timer: ElectionTimer},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 2, CurrentLeaderEpoch: 3, HighWatermark: -1},
		SendBeginQuorumEpochResponse{To: 2, Error: ErrInvalidVoterKey, Epoch: 3, LeaderID: 2},
	}, acts)

	// Directory ids: a request for our id with another directory id is not
	// for us; with ours or with none it is.
	local := ReplicaKey{ID: 1, DirectoryID: dirA}
	f := asFollower(t, start(t, Config{Local: local, Voters: []ReplicaKey{local, {ID: 2}, {ID: 3}}}), 1, 2)
	for dir, code := range map[uuid.UUID]ErrorCode{dirB: ErrInvalidVoterKey, dirA: ErrNone, uuid.Nil: ErrNone} {
		next, acts := step(t, f, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: 1, VoterDirectoryID: dir})
		require.Equal(t, f, next)
		require.Equal(t, []Action{SendBeginQuorumEpochResponse{To: 2, Error: code, Epoch: 1, LeaderID: 2}}, acts, "directory %v", dir)
	}
	// An observer without an id is never the addressee of a voter key.
	o := start(t, Config{Local: NoReplica, Observer: true, Voters: keys(1, 2, 3)})
	_, acts = step(t, o, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 3, VoterID: 0})
	require.Equal(t, SendBeginQuorumEpochResponse{To: 2, Error: ErrInvalidVoterKey, Epoch: 3, LeaderID: 2}, acts[len(acts)-1])
}

// TestBeginQuorumEpochRepeatedDoesNotResetFetchTimer: a Follower that hears
// BeginQuorumEpoch again from its leader only answers: no timer reset, and
// it still rejects pre-votes because it has fetched. Reference:
// KafkaRaftClient.handleBeginQuorumEpochRequest, QuorumState.transitionToFollower
// (a same-epoch Follower is replaced only with more endpoints).
func TestBeginQuorumEpochRepeatedDoesNotResetFetchTimer(t *testing.T) {
	f := node1Fetched(t)
	next, acts := step(t, f, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: 1})
	require.Equal(t, f, next)
	require.Equal(t, []Action{SendBeginQuorumEpochResponse{To: 2, Epoch: 1, LeaderID: 2}}, acts)
	_, acts = step(t, next, ReceiveVoteRequest{From: 3, VoterID: 1, CandidateEpoch: 1, Candidate: 3, PreVote: true})
	require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 1, LeaderID: 2}}, acts)

	// The same for a Follower that has not fetched yet.
	g := asFollower(t, start(t, config(1, 1, 2, 3)), 1, 2)
	next, acts = step(t, g, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: 1})
	require.Equal(t, g, next)
	require.Equal(t, []Action{SendBeginQuorumEpochResponse{To: 2, Epoch: 1, LeaderID: 2}}, acts)

	// A Prospective that left this leader on a fetch timeout keeps
	// campaigning: the request brings no way to the leader it lacked
	// (Kafka's maybeTransition needs more endpoints than it knows).
	p, _ := step(t, f, FetchTimeout{})
	require.Equal(t, Prospective, p.Role())
	next, acts = step(t, p, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: 1})
	require.Equal(t, p, next)
	require.Equal(t, []Action{SendBeginQuorumEpochResponse{To: 2, Epoch: 1, LeaderID: 2}}, acts)
}

// ---- the 5-voter scenario ----

// TestResignFiveVotersElectsFirstPreferredSuccessor: five voters elect 1;
// records are appended while 5, then 4, then 3 are cut off, so that the
// followers' positions are 2 > 3 > 4 > 5. The leader resigns; 2, its first
// preferred successor, campaigns at once (rank 0) and wins epoch 2 because
// the followers that have fetched grant its pre-vote after EndQuorumEpoch.
// Kafka elects a lower-ranked voter here (KAFKA-20895); docs/design.md,
// contract decision 3, is why kraft does better. Reference: KAFKA-20895;
// docs/design.md, contract decision 3.
func TestResignFiveVotersElectsFirstPreferredSuccessor(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3, 4, 5)
	c.fire(1, ElectionTimeout{})
	require.Equal(t, []NodeID{1}, c.leaders())
	for _, id := range []NodeID{5, 4, 3} {
		c.down[id] = true
		c.appendAt(1, 2)
	}
	for _, id := range []NodeID{3, 4, 5} {
		c.down[id] = false
	}
	require.Empty(t, c.faults)
	positions := map[NodeID]int{}
	for _, id := range c.ids {
		positions[id] = len(c.logs[id])
		if id != 1 {
			requireState(t, c.states[id], Follower, 1, 1, c.states[id].Record().VotedKey)
		}
	}
	require.Equal(t, map[NodeID]int{1: 7, 2: 7, 3: 5, 4: 3, 5: 1}, positions)

	// The resignation names the successors by fetch position.
	_, acts := step(t, c.states[1], Resign{})
	ends := ofType[SendEndQuorumEpoch](acts)
	require.Len(t, ends, 4)
	for _, e := range ends {
		require.Equal(t, keys(2, 3, 4, 5), e.PreferredSuccessors)
	}
	c.fire(1, Resign{})
	requireState(t, c.states[1], Resigned, 1, 1, NoReplica)
	for _, id := range []NodeID{2, 3, 4, 5} {
		require.Equal(t, Follower, c.states[id].Role())
	}

	// Follower 3 has fetched from 1, yet grants 2's pre-vote now.
	_, acts = step(t, c.states[3], ReceiveVoteRequest{From: 2, VoterID: 3, CandidateEpoch: 1, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 7, Epoch: 1}, PreVote: true})
	require.Equal(t, []Action{SendVoteResponse{To: 2, Epoch: 1, LeaderID: 1, VoteGranted: true}}, acts)

	// Rank 0's fetch timer is 0: it fires first.
	c.fire(2, FetchTimeout{})
	require.Empty(t, c.faults)
	require.Equal(t, []NodeID{2}, c.leaders())
	for _, id := range c.ids {
		s := c.states[id]
		require.Equal(t, Epoch(2), s.Epoch(), "node %d: %v", id, s)
		require.Equal(t, NodeID(2), s.Leader(), "node %d: %v", id, s)
		if id != 2 {
			require.Equal(t, Follower, s.Role(), "node %d: %v", id, s)
		}
		// Everyone caught up with the new leader, whose epoch starts with
		// its LeaderChange record at offset 7.
		require.Equal(t, c.logs[2], c.logs[id], "node %d", id)
	}
	require.Equal(t, []Epoch{1, 1, 1, 1, 1, 1, 1, 2}, c.logs[2])
	require.Equal(t, int64(8), c.states[2].HighWatermark())
}

// TestEndQuorumEpochAttachesAndFetchesByRank: an Unattached voter of a
// 5-voter set that learns of the leader only from its EndQuorumEpoch
// becomes its Follower and backs off by its rank. At rank 0 it sends no
// Fetch to the leader that just resigned: its timer has run out, and it
// becomes Prospective on the next poll (Kafka's pollFollowerAsVoter). At
// any other rank it fetches, as Kafka's pollFollowerAsVoter does while the
// fetch timer runs (maybeSendFetchToBestNode); the resigned leader's answer
// (NOT_LEADER_OR_FOLLOWER) changes nothing, and the backoff still decides
// when it campaigns.
// Reference: KafkaRaftClient.handleEndQuorumEpochRequest,
// pollFollowerAsVoter.
func TestEndQuorumEpochAttachesAndFetchesByRank(t *testing.T) {
	s := start(t, config(1, 1, 2, 3, 4, 5))
	next, acts := step(t, s, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: 0, Of: 4}})
	require.Equal(t, Follower, next.Role())
	require.Equal(t, NodeID(2), next.Leader())
	require.Empty(t, ofType[SendFetch](acts))
	require.Equal(t, []ResetTimer{{Timer: FetchTimer, After: 0}}, ofType[ResetTimer](acts))
	next, acts = step(t, next, FetchTimeout{})
	require.Equal(t, Prospective, next.Role())
	require.NotEmpty(t, ofType[SendVoteRequest](acts))

	for _, rank := range []SuccessorRank{{Position: 2, Of: 4}, {Position: 4, Of: 4}} {
		next, acts := step(t, s, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: rank})
		require.Equal(t, Follower, next.Role())
		require.Equal(t, []SendFetch{{To: 2, CurrentLeaderEpoch: 1, HighWatermark: -1}}, ofType[SendFetch](acts), "rank %+v", rank)
		require.IsType(t, SendFetch{}, acts[len(acts)-1], "the Fetch follows the answer")
		// The resigned leader's answer leaves the backoff running.
		after, acts := step(t, next, ReceiveFetchResponse{From: 2, Error: ErrNotLeaderOrFollower, LeaderID: 2, LeaderEpoch: 1, HighWatermark: -1})
		require.Empty(t, acts)
		require.Equal(t, Follower, after.Role())
		after, _ = step(t, after, FetchTimeout{})
		require.Equal(t, Prospective, after.Role())
	}
}

// TestResignedHasNoHighWatermark: Kafka's ResignedState has no high
// watermark and the next role inherits none, so a resigned leader's is
// unknown (-1) until a leader reports one; the value reported to the host
// (HighWatermarkChanged) never goes down, so nothing is emitted (D5).
func TestResignedHasNoHighWatermark(t *testing.T) {
	s := electLeader(t, start(t, config(1, 1, 2, 3)))
	s, _ = step(t, s, fetchFrom(2, s.Epoch(), 1, s.Epoch()))
	require.Equal(t, int64(1), s.HighWatermark())
	s, acts := step(t, s, Resign{})
	require.Equal(t, Resigned, s.Role())
	require.Equal(t, int64(-1), s.HighWatermark())
	require.Empty(t, ofType[HighWatermarkChanged](acts))
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: s.Epoch() + 1, VoterID: NoNode})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, int64(-1), s.HighWatermark())
	s, acts = step(t, s, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: s.Epoch(), HighWatermark: 1})
	require.Equal(t, int64(1), s.HighWatermark())
	require.Empty(t, ofType[HighWatermarkChanged](acts), "the log's high watermark did not move")
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
		s := asFetched(t, asFollower(t, start(t, cfg), 1, 2))
		_, acts := step(t, s, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: 1, Of: 2}})
		require.Equal(t, []Action{
			ResetTimer{Timer: FetchTimer, After: c.want},
			SendEndQuorumEpochResponse{To: 2, Epoch: 1, LeaderID: 2},
		}, acts, "B_max %v", c.backoffMax)
	}
}

// TestPreferredSuccessorsTieBreakByReplicaKey: voters with the same fetch
// position (here: none known) are ordered by replica key, not by their
// place in the configured voter set.
// Reference: LeaderState.nonLeaderVotersByDescendingFetchOffset.
func TestPreferredSuccessorsTieBreakByReplicaKey(t *testing.T) {
	s := electLeader(t, start(t, config(1, 1, 3, 2)))
	next, acts := step(t, s, Resign{})
	successors := keys(2, 3)
	requireActions(t, []Action{
		roleChanged(Leader, Resigned, 1, 1),
		StopTimer{Timer: CheckQuorumTimer},
		StopTimer{Timer: BeginQuorumEpochTimer},
		electionTimerReset(electionTimeoutIn(t, acts)),
		SendEndQuorumEpoch{To: keyOf(3), Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
		SendEndQuorumEpoch{To: keyOf(2), Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
	}, acts)
	require.Equal(t, Resigned, next.Role())
}
