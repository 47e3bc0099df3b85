package kraft

import (
	"math"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// Bad input: zero values, negative fields, unknown senders, misaddressed
// and foreign requests. Step is total: it never panics, answers as Kafka
// does or drops the input, and never corrupts the state (the package doc,
// Faults).

// zeroEvents is the zero value of every event type.
var zeroEvents = []Event{
	ElectionTimeout{},
	FetchTimeout{},
	CheckQuorumTimeout{},
	BeginQuorumEpochTimeout{},
	ReceiveVoteRequest{},
	ReceiveVoteResponse{},
	ReceiveBeginQuorumEpoch{},
	ReceiveEndQuorumEpoch{},
	ReceiveFetch{},
	ReceiveFetchSnapshot{},
	ReceiveFetchResponse{},
	ReceiveLeaderlessEpoch{},
	ReceiveQuorumResponse{},
	LogAppended{},
	LogFlushed{},
	Resign{},
	ReceiveFetchSnapshotResponse{},
	SnapshotCreated{},
	LogStartMoved{},
	VotersAppended{},
	ReceiveAddVoter{},
	ReceiveRemoveVoter{},
	ReceiveUpdateVoter{},
	ReceiveAPIVersionsResponse{},
	VoterChangeTimeout{},
}

// ownsTimer reports whether a role of s acts on the timeout event e.
func ownsTimer(s State, e Event) bool {
	switch e.(type) {
	case ElectionTimeout:
		return s.IsVoter() && (s.Role() == Unattached || s.Role() == Prospective || s.Role() == Candidate) || s.Role() == Resigned
	case FetchTimeout:
		return s.Role() == Follower || (!s.IsVoter() && s.Role() == Unattached)
	case CheckQuorumTimeout, BeginQuorumEpochTimeout, Resign:
		return s.Role() == Leader
	}
	return false
}

// TestZeroValueEventsOnEveryRole: the zero value of every event type, on
// every reachable role in epoch 2 or 3: requests (epoch 0) are answered as
// Kafka does (a zero Vote request is malformed: INVALID_REQUEST; the others
// are fenced), responses of epoch 0 are stale and dropped, a zero log
// report and a zero leaderless epoch change nothing, and a timeout the role
// does not own is ignored. Reference: the README's host contract, rule 2;
// KafkaRaftClient.handleVoteRequest, validateVoterOnlyRequest,
// validateLeaderOnlyRequest, maybeHandleCommonResponse; docs/design.md D24.
func TestZeroValueEventsOnEveryRole(t *testing.T) {
	for name, s := range rolesInEpoch(t, testClusterID) {
		e, l := s.Epoch(), s.Leader()
		require.GreaterOrEqual(t, e, Epoch(2))
		for _, ev := range zeroEvents {
			var next State
			var acts []Action
			require.NotPanics(t, func() { next, acts = step(t, s, ev) }, "%s %T", name, ev)
			var want []Action
			switch ev.(type) {
			case ElectionTimeout, FetchTimeout, CheckQuorumTimeout, BeginQuorumEpochTimeout, Resign:
				if ownsTimer(s, ev) {
					// A real timeout of this role: covered by the role's
					// own tests; here only: it moves forward, never back.
					require.GreaterOrEqual(t, next.Epoch(), e, "%s %T", name, ev)
					require.NotEmpty(t, acts, "%s %T", name, ev)
					continue
				}
			case ReceiveVoteRequest:
				want = []Action{SendVoteResponse{To: 0, Error: ErrInvalidRequest, Epoch: e, LeaderID: l}}
			case ReceiveBeginQuorumEpoch:
				want = []Action{SendBeginQuorumEpochResponse{To: 0, Error: ErrFencedLeaderEpoch, Epoch: e, LeaderID: l}}
			case ReceiveEndQuorumEpoch:
				want = []Action{SendEndQuorumEpochResponse{To: 0, Error: ErrFencedLeaderEpoch, Epoch: e, LeaderID: l}}
			case ReceiveFetch:
				want = []Action{SendFetchResponse{To: 0, Error: ErrFencedLeaderEpoch, Epoch: e, LeaderID: l, HighWatermark: -1}}
			case ReceiveFetchSnapshot:
				want = []Action{fetchSnapshotError(0, ErrFencedLeaderEpoch, e, l)}
			case SnapshotCreated:
				// The bootstrap snapshot (0, 0): an empty prefix, always
				// committed (D45).
				require.Empty(t, acts, "%s %T", name, ev)
				id, ok := next.LatestSnapshot()
				require.True(t, ok, name)
				require.Equal(t, LogEnd{}, id, name)
				continue
			case VotersAppended:
				// An empty voter set is no set: the cluster is inconsistent.
				requireFault(t, s, next, acts)
				continue
			case ReceiveAddVoter, ReceiveRemoveVoter:
				// Addressed to epoch-less leadership: only a Leader takes
				// it, and a zero voter key has no directory id.
				code := ErrNotLeaderOrFollower
				if s.Role() == Leader {
					code = ErrInvalidRequest
				}
				kind := AddVoter
				if _, ok := ev.(ReceiveRemoveVoter); ok {
					kind = RemoveVoter
				}
				want = []Action{SendVoterChangeResponse{Kind: kind, Error: code, Epoch: e, LeaderID: l}}
			case ReceiveUpdateVoter:
				want = []Action{SendVoterChangeResponse{Kind: UpdateVoter, Error: ErrFencedLeaderEpoch, Epoch: e, LeaderID: l}}
			case ReceiveVoteResponse, ReceiveFetchResponse, ReceiveLeaderlessEpoch, ReceiveQuorumResponse, LogAppended, LogFlushed,
				ReceiveFetchSnapshotResponse, LogStartMoved, ReceiveAPIVersionsResponse, VoterChangeTimeout:
			}
			require.Equal(t, want, acts, "%s %T", name, ev)
			require.Equal(t, s, next, "%s %T", name, ev)
		}
	}
}

// TestZeroValueBeginQuorumEpochAtEpochZero: at epoch 0 a zero
// BeginQuorumEpoch is a well-formed message from leader 0 for epoch 0,
// addressed to voter 0: Kafka follows the leader first and then refuses
// the voter key (INVALID_VOTER_KEY), keeping the transition. A zero
// EndQuorumEpoch likewise makes the replica follow 0 and campaign at once
// (rank 0 of an empty list). Reference: KafkaRaftClient.maybeTransition,
// handleBeginQuorumEpochRequest, handleEndQuorumEpochRequest,
// endEpochElectionBackoff; docs/design.md D24.
func TestZeroValueBeginQuorumEpochAtEpochZero(t *testing.T) {
	s := start(t, config(1, 1, 2, 3))
	next, acts := step(t, s, ReceiveBeginQuorumEpoch{})
	requireState(t, next, Follower, 0, 0, NoReplica)
	require.Equal(t, []Action{
		Persist{Record: quorumRecord(0, 0, NoNode)},
		RoleChanged{From: Unattached, To: Follower, Epoch: 0, LeaderID: 0, Reason: "BeginQuorumEpoch"},
		StopTimer{Timer: ElectionTimer},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 0, CurrentLeaderEpoch: 0, HighWatermark: -1},
		SendBeginQuorumEpochResponse{To: 0, Error: ErrInvalidVoterKey, Epoch: 0, LeaderID: 0},
	}, acts)

	next, acts = step(t, s, ReceiveEndQuorumEpoch{})
	requireState(t, next, Follower, 0, 0, NoReplica)
	require.Equal(t, []Action{
		Persist{Record: quorumRecord(0, 0, NoNode)},
		RoleChanged{From: Unattached, To: Follower, Epoch: 0, LeaderID: 0, Reason: "EndQuorumEpoch"},
		StopTimer{Timer: ElectionTimer},
		ResetTimer{Timer: FetchTimer, After: 0},
		SendEndQuorumEpochResponse{To: 0, Error: ErrNone, Epoch: 0, LeaderID: 0},
	}, acts)

	// When the local replica is node 0, the same zero message names it
	// leader while it is not: a Fault.
	z := start(t, config(0, 0, 1, 2))
	next, acts = step(t, z, ReceiveBeginQuorumEpoch{})
	requireFault(t, z, next, acts)
}

// TestStepZeroStateDoesNothing: the zero State is not usable; Step returns
// it unchanged with no actions for every event, including nil.
// Reference: state.go (zero State).
func TestStepZeroStateDoesNothing(t *testing.T) {
	for _, e := range append(append([]Event(nil), zeroEvents...), nil,
		ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 3}, Resign{}) {
		var next State
		var acts []Action
		require.NotPanics(t, func() { next, acts = Step(State{}, e) })
		require.Equal(t, State{}, next)
		require.Empty(t, acts)
	}
	s := start(t, config(1, 1, 2, 3))
	next, acts := step(t, s, nil)
	requireUnchanged(t, s, next, acts)
}

// TestNegativeFieldsGetKafkaAnswers: negative ids, offsets and epochs are
// refused with Kafka's error codes or dropped, and never change the state
// (except where Kafka acts on a valid part of the message).
// Reference: KafkaRaftClient.handleVoteRequest, handleFetchRequest,
// validateVoterOnlyRequest, validateLeaderOnlyRequest, maybeHandleCommonResponse;
// LeaderState.updateReplicaState.
func TestNegativeFieldsGetKafkaAnswers(t *testing.T) {
	roles := rolesInEpoch(t, uuid.NullUUID{})
	u, f, l := roles["Unattached"], roles["Follower"], roles["Leader"]
	require.Equal(t, Epoch(3), l.Epoch())
	voteResp := func(code ErrorCode) []Action {
		return []Action{SendVoteResponse{To: 2, Error: code, Epoch: 2, LeaderID: NoNode}}
	}
	cases := []struct {
		name string
		s    State
		e    Event
		want []Action
	}{
		{"vote: negative candidate", u, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: 2, Candidate: -1}, voteResp(ErrInvalidRequest)},
		{"vote: negative candidate, old epoch", u, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: 1, Candidate: -1}, voteResp(ErrFencedLeaderEpoch)},
		{"vote: negative last offset", u, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: 3, Candidate: 2, CandidateLogEnd: LogEnd{Offset: -1}}, voteResp(ErrInvalidRequest)},
		{"vote: negative last epoch", u, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: 3, Candidate: 2, CandidateLogEnd: LogEnd{Epoch: -1}, PreVote: true}, voteResp(ErrInvalidRequest)},
		{"vote: negative epoch", u, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: -1, Candidate: 2}, voteResp(ErrInvalidRequest)},
		{"pre-vote: negative epoch", u, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: -1, Candidate: 2, PreVote: true}, voteResp(ErrInvalidRequest)},
		{"vote: last epoch not older", u, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: 5, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 3, Epoch: 5}}, voteResp(ErrInvalidRequest)},
		{"pre-vote: last epoch newer", u, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: 5, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 3, Epoch: 6}, PreVote: true}, voteResp(ErrInvalidRequest)},
		{"vote response: negative epoch", u, ReceiveVoteResponse{From: 2, Epoch: -1, VoteGranted: true, LeaderID: 2}, nil},
		{
			"begin: negative leader", u,
			ReceiveBeginQuorumEpoch{From: 2, LeaderID: -2, LeaderEpoch: 4, VoterID: NoNode},
			[]Action{SendBeginQuorumEpochResponse{To: 2, Error: ErrInvalidRequest, Epoch: 2, LeaderID: NoNode}},
		},
		{
			"begin: negative epoch", u,
			ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: -1, VoterID: NoNode},
			[]Action{SendBeginQuorumEpochResponse{To: 2, Error: ErrFencedLeaderEpoch, Epoch: 2, LeaderID: NoNode}},
		},
		{
			"end: negative leader", f,
			ReceiveEndQuorumEpoch{From: 2, LeaderID: -1, LeaderEpoch: 2},
			[]Action{SendEndQuorumEpochResponse{To: 2, Error: ErrInvalidRequest, Epoch: 2, LeaderID: 2}},
		},
		{
			"fetch: negative offset", f,
			ReceiveFetch{From: 3, CurrentLeaderEpoch: 2, FetchOffset: -1},
			[]Action{SendFetchResponse{To: 3, Error: ErrInvalidRequest, Epoch: 2, LeaderID: 2, HighWatermark: -1}},
		},
		{
			"fetch: negative last epoch", f,
			ReceiveFetch{From: 3, CurrentLeaderEpoch: 2, FetchEpoch: -1},
			[]Action{SendFetchResponse{To: 3, Error: ErrInvalidRequest, Epoch: 2, LeaderID: 2, HighWatermark: -1}},
		},
		{
			"fetch: negative leader epoch", f,
			ReceiveFetch{From: 3, CurrentLeaderEpoch: -1},
			[]Action{SendFetchResponse{To: 3, Error: ErrInvalidRequest, Epoch: 2, LeaderID: 2, HighWatermark: -1}},
		},
		{
			"fetch snapshot: negative epoch", f,
			ReceiveFetchSnapshot{From: 3, CurrentLeaderEpoch: -1},
			[]Action{fetchSnapshotError(3, ErrFencedLeaderEpoch, 2, 2)},
		},
		{"fetch response: negative epoch", f, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: -1, HighWatermark: 5}, nil},
		{"fetch response: negative leader", f, ReceiveFetchResponse{From: 2, LeaderID: -4, LeaderEpoch: 2, HighWatermark: 5}, nil},
		{"fetch response: negative diverging offset", f, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: -1, Diverging: &LogOffsetMetadata{Offset: -1, Epoch: 1}}, nil},
		{"fetch response: negative snapshot id", f, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: -1, Snapshot: &LogEnd{Offset: -1, Epoch: 1}}, nil},
		{"leaderless: negative epoch", f, ReceiveLeaderlessEpoch{From: 2, Epoch: -3}, nil},
		{"log: negative offset", f, LogAppended{End: LogEnd{Offset: -1, Epoch: 2}}, nil},
		{"log: negative epoch", f, LogAppended{End: LogEnd{Offset: 4, Epoch: -1}}, nil},
		{"log: backwards", l, LogAppended{End: LogEnd{Offset: 0, Epoch: 3}}, nil},
		{
			"leader: fetch with negative offset", l,
			ReceiveFetch{From: 2, CurrentLeaderEpoch: 3, FetchOffset: -5},
			[]Action{SendFetchResponse{To: 2, Error: ErrInvalidRequest, Epoch: 3, LeaderID: 1, HighWatermark: -1}},
		},
		{
			"leader: fetch from a non-replica", l,
			ReceiveFetch{From: -1, CurrentLeaderEpoch: 3, FetchEpoch: 3, FetchOffset: 1},
			[]Action{SendFetchResponse{To: -1, Error: ErrNone, Epoch: 3, LeaderID: 1, HighWatermark: -1}},
		},
		{
			"leader: fetch snapshot from a non-replica", l,
			ReceiveFetchSnapshot{From: -1, CurrentLeaderEpoch: 3, Snapshot: LogEnd{Offset: 1, Epoch: 3}, Size: 10},
			[]Action{SendFetchSnapshotResponse{To: -1, Error: ErrNone, Epoch: 3, LeaderID: 1, Snapshot: LogEnd{Offset: 1, Epoch: 3}, Size: 10}},
		},
		{
			"leader: fetch of a newer epoch", l,
			ReceiveFetch{From: 2, CurrentLeaderEpoch: 4, FetchEpoch: 3, FetchOffset: 1},
			[]Action{SendFetchResponse{To: 2, Error: ErrUnknownLeaderEpoch, Epoch: 3, LeaderID: 1, HighWatermark: -1}},
		},
	}
	for _, tc := range cases {
		next, acts := step(t, tc.s, tc.e)
		require.Equal(t, tc.want, acts, tc.name)
		require.Equal(t, tc.s, next, tc.name)
	}

	// A fetch response with a negative high watermark is still a
	// successful fetch: the timer restarts, the next Fetch goes out, the
	// high watermark does not move.
	next, acts := step(t, f, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: -7})
	require.Equal(t, []Action{
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 2, CurrentLeaderEpoch: 2, HighWatermark: -1},
	}, acts)
	require.Equal(t, int64(-1), next.HighWatermark())

	// A negative successor rank is "not listed": the longest backoff.
	_, acts = step(t, f, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2, SuccessorRank: SuccessorRank{Position: -3, Of: -1}})
	require.Equal(t, []Action{
		ResetTimer{Timer: FetchTimer, After: DefaultElectionBackoffMax},
		SendEndQuorumEpochResponse{To: 2, Epoch: 2, LeaderID: 2},
	}, acts)

	// A Fetch that carries the leader's own id: Kafka's updateReplicaState
	// throws and the request gets UNKNOWN_SERVER_ERROR; nothing is tracked.
	next, acts = step(t, l, ReceiveFetch{From: 1, CurrentLeaderEpoch: 3, FetchEpoch: 3, FetchOffset: 1})
	require.Equal(t, l, next)
	require.Equal(t, []Action{SendFetchResponse{To: 1, Error: ErrUnknownServerError, Epoch: 3, LeaderID: 1, HighWatermark: -1}}, acts)
}

// TestUnknownSenders: messages from replicas outside the voter set.
// Vote requests from non-voters are answered by the usual rules (KIP-853
// accepts them on purpose); vote responses from non-voters (or from
// ourselves) are not counted; a non-voter's Fetch is answered but not
// tracked (docs/design.md, contract decision 5); a non-voter may lead a
// newer epoch.
// Reference: KafkaRaftClient.handleVoteRequest (no voter check on the
// requester, KIP-853), handleVoteResponse; LeaderState.updateReplicaState.
func TestUnknownSenders(t *testing.T) {
	roles := rolesInEpoch(t, uuid.NullUUID{})
	u, p, l, f := roles["Unattached"], roles["Prospective"], roles["Leader"], roles["Follower"]

	next, acts := step(t, u, ReceiveVoteRequest{From: 9, VoterID: 1, CandidateEpoch: 2, Candidate: 9, PreVote: true})
	require.Equal(t, u, next)
	require.Equal(t, []Action{SendVoteResponse{To: 9, Epoch: 2, LeaderID: NoNode, VoteGranted: true}}, acts)
	next, acts = step(t, u, ReceiveVoteRequest{From: 9, VoterID: 1, CandidateEpoch: 2, Candidate: 9})
	requireState(t, next, Unattached, 2, NoNode, ReplicaKey{ID: 9})
	require.Equal(t, []Action{
		Persist{Record: quorumRecord(2, NoNode, 9)},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
		SendVoteResponse{To: 9, Epoch: 2, LeaderID: NoNode, VoteGranted: true},
	}, acts)

	for _, from := range []NodeID{9, 1, -1, 0} {
		next, acts = step(t, p, grantVote(from, 2))
		requireUnchanged(t, p, next, acts)
	}
	// The same grant from a voter counts (and wins, 2 of 3).
	next, _ = step(t, p, grantVote(3, 2))
	require.Equal(t, Candidate, next.Role())

	next, acts = step(t, l, ReceiveFetch{From: 9, CurrentLeaderEpoch: 3, FetchEpoch: 3, FetchOffset: 1})
	require.Equal(t, l, next, "an observer's fetch is not tracked")
	require.Equal(t, []Action{SendFetchResponse{To: 9, Epoch: 3, LeaderID: 1, HighWatermark: -1}}, acts)
	next, acts = step(t, l, ReceiveFetchSnapshot{From: 9, CurrentLeaderEpoch: 3, Snapshot: LogEnd{Offset: 1, Epoch: 3}, Size: 10, Position: 4})
	require.Equal(t, l, next)
	require.Equal(t, []Action{SendFetchSnapshotResponse{To: 9, Epoch: 3, LeaderID: 1, Snapshot: LogEnd{Offset: 1, Epoch: 3}, Size: 10, Position: 4}}, acts)

	// Leader 9 of a newer epoch is followed; leader 9 of our epoch, while
	// we follow 2, is a Fault.
	next, _ = step(t, f, ReceiveBeginQuorumEpoch{From: 9, LeaderID: 9, LeaderEpoch: 4, VoterID: 1})
	requireState(t, next, Follower, 4, 9, NoReplica)
	next, acts = step(t, f, ReceiveEndQuorumEpoch{From: 9, LeaderID: 9, LeaderEpoch: 2})
	requireFault(t, f, next, acts)
	// A fetch response from leader 9 of our epoch, likewise.
	next, acts = step(t, f, ReceiveFetchResponse{From: 9, LeaderID: 9, LeaderEpoch: 2, HighWatermark: -1})
	requireFault(t, f, next, acts)
}

// TestVoteAddressedToAnotherVoter: a Vote request whose voter key is not
// ours is refused with INVALID_VOTER_KEY, after the move to a newer epoch,
// which is kept. Reference: KafkaRaftClient.handleVoteRequest, isValidVoterKey.
func TestVoteAddressedToAnotherVoter(t *testing.T) {
	roles := rolesInEpoch(t, uuid.NullUUID{})
	u := roles["Unattached"]
	next, acts := step(t, u, ReceiveVoteRequest{From: 2, VoterID: 3, CandidateEpoch: 2, Candidate: 2})
	require.Equal(t, u, next)
	require.Equal(t, []Action{SendVoteResponse{To: 2, Error: ErrInvalidVoterKey, Epoch: 2, LeaderID: NoNode}}, acts)

	next, acts = step(t, u, ReceiveVoteRequest{From: 2, VoterID: 3, CandidateEpoch: 4, Candidate: 2, PreVote: true})
	requireState(t, next, Unattached, 4, NoNode, NoReplica)
	require.Equal(t, []Action{
		Persist{Record: quorumRecord(4, NoNode, NoNode)},
		RoleChanged{From: Unattached, To: Unattached, Epoch: 4, LeaderID: NoNode, Reason: "vote request with a newer epoch"},
		SendVoteResponse{To: 2, Error: ErrInvalidVoterKey, Epoch: 4, LeaderID: NoNode},
	}, acts)

	// On a Leader: refused, and the leader keeps leading.
	l := roles["Leader"]
	next, acts = step(t, l, ReceiveVoteRequest{From: 2, VoterID: 2, CandidateEpoch: 3, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 1, Epoch: 3}, PreVote: true})
	require.Equal(t, l, next)
	require.Equal(t, []Action{SendVoteResponse{To: 2, Error: ErrInvalidVoterKey, Epoch: 3, LeaderID: 1}}, acts)

	// Directory ids: our id with another directory id is not us.
	local := ReplicaKey{ID: 1, DirectoryID: dirA}
	d := start(t, Config{Local: local, Voters: []ReplicaKey{local, {ID: 2}, {ID: 3}}})
	_, acts = step(t, d, ReceiveVoteRequest{From: 2, VoterID: 1, VoterDirectoryID: dirB, CandidateEpoch: 0, Candidate: 2, PreVote: true})
	require.Equal(t, []Action{SendVoteResponse{To: 2, Error: ErrInvalidVoterKey, Epoch: 0, LeaderID: NoNode}}, acts)
	_, acts = step(t, d, ReceiveVoteRequest{From: 2, VoterID: 1, VoterDirectoryID: dirA, CandidateEpoch: 0, Candidate: 2, PreVote: true})
	require.Equal(t, []Action{SendVoteResponse{To: 2, Epoch: 0, LeaderID: NoNode, VoteGranted: true}}, acts)

	// An observer without an id is nobody's addressee.
	o := roles["observer without id Unattached"]
	next, acts = step(t, o, ReceiveVoteRequest{From: 2, VoterID: 0, CandidateEpoch: 2, Candidate: 2, PreVote: true})
	require.Equal(t, o, next)
	require.Equal(t, []Action{SendVoteResponse{To: 2, Error: ErrInvalidVoterKey, Epoch: 2, LeaderID: NoNode}}, acts)
}

// TestForeignClusterIDOnEveryRequestType: every request type carrying
// another cluster's id is refused with INCONSISTENT_CLUSTER_ID by every
// role, even with a newer epoch, and changes nothing; a request without a
// cluster id is accepted. Reference: KafkaRaftClient.hasValidClusterId.
func TestForeignClusterIDOnEveryRequestType(t *testing.T) {
	for name, s := range rolesInEpoch(t, testClusterID) {
		e, l := s.Epoch(), s.Leader()
		for _, tc := range []struct {
			ev   Event
			want Action
		}{
			{
				ReceiveVoteRequest{From: 2, ClusterID: otherClusterID, VoterID: NoNode, CandidateEpoch: 9, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 99, Epoch: 8}},
				SendVoteResponse{To: 2, Error: ErrInconsistentClusterID, Epoch: e, LeaderID: l},
			},
			{
				ReceiveVoteRequest{From: 2, ClusterID: otherClusterID, VoterID: NoNode, CandidateEpoch: 9, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 99, Epoch: 9}, PreVote: true},
				SendVoteResponse{To: 2, Error: ErrInconsistentClusterID, Epoch: e, LeaderID: l},
			},
			{
				ReceiveBeginQuorumEpoch{From: 2, ClusterID: otherClusterID, LeaderID: 2, LeaderEpoch: 9, VoterID: NoNode},
				SendBeginQuorumEpochResponse{To: 2, Error: ErrInconsistentClusterID, Epoch: e, LeaderID: l},
			},
			{
				ReceiveEndQuorumEpoch{From: 2, ClusterID: otherClusterID, LeaderID: 2, LeaderEpoch: 9},
				SendEndQuorumEpochResponse{To: 2, Error: ErrInconsistentClusterID, Epoch: e, LeaderID: l},
			},
			{
				ReceiveFetch{From: 2, ClusterID: otherClusterID, CurrentLeaderEpoch: e, FetchEpoch: 0, FetchOffset: 0},
				SendFetchResponse{To: 2, Error: ErrInconsistentClusterID, Epoch: e, LeaderID: l, HighWatermark: -1},
			},
			{
				ReceiveFetchSnapshot{From: 2, ClusterID: otherClusterID, CurrentLeaderEpoch: e},
				fetchSnapshotError(2, ErrInconsistentClusterID, e, l),
			},
		} {
			next, acts := step(t, s, tc.ev)
			require.Equal(t, []Action{tc.want}, acts, "%s %T", name, tc.ev)
			require.Equal(t, s, next, "%s %T", name, tc.ev)
		}
	}

	// The same BeginQuorumEpoch without a cluster id, or with ours, moves
	// the replica.
	s := rolesInEpoch(t, testClusterID)["Unattached"]
	for _, id := range []uuid.NullUUID{{}, testClusterID} {
		next, _ := step(t, s, ReceiveBeginQuorumEpoch{From: 2, ClusterID: id, LeaderID: 2, LeaderEpoch: 9, VoterID: NoNode})
		requireState(t, next, Follower, 9, 2, NoReplica)
	}
	// And the cluster id goes out on the replica's own requests.
	_, acts := step(t, s, ElectionTimeout{})
	for _, r := range ofType[SendVoteRequest](acts) {
		require.Equal(t, testClusterID, r.ClusterID)
	}
	require.Len(t, ofType[SendVoteRequest](acts), 2)
}

// ---- property ----

// genEvent draws any event with small field values, negatives included;
// cur is the current epoch.
func genEvent(rt *rapid.T, cur Epoch) Event {
	id := func(l string) NodeID {
		return rapid.SampledFrom([]NodeID{-2, -1, 0, 1, 2, 2, 2, 3, 3, 3, 4, 5}).Draw(rt, l)
	}
	// Epochs near the current one are likelier, so elections complete.
	near := []Epoch{-1, 0, 1, 2, 3, 4, 5, math.MaxInt32, cur, cur, cur, cur}
	if cur < math.MaxInt32 {
		near = append(near, cur+1, cur+1)
	}
	ep := func(l string) Epoch { return rapid.SampledFrom(near).Draw(rt, l) }
	off := func(l string) int64 { return int64(rapid.IntRange(-1, 8).Draw(rt, l)) }
	cluster := func() uuid.NullUUID {
		return rapid.SampledFrom([]uuid.NullUUID{{}, {}, testClusterID, otherClusterID}).Draw(rt, "cluster")
	}
	dir := func(l string) uuid.UUID { return rapid.SampledFrom([]uuid.UUID{uuid.Nil, uuid.Nil, dirA}).Draw(rt, l) }
	code := func() ErrorCode {
		return rapid.SampledFrom([]ErrorCode{
			ErrNone, ErrNone, ErrNone, ErrNone, ErrNone, ErrNone, ErrNotLeaderOrFollower, ErrFencedLeaderEpoch,
			ErrUnknownLeaderEpoch, ErrInvalidRequest, ErrBrokerNotAvailable, ErrInvalidVoterKey, ErrUnsupportedVersion, 999,
		}).Draw(rt, "code")
	}
	voters := func(l string) []ReplicaKey {
		n := rapid.IntRange(0, 4).Draw(rt, l+"Len")
		out := make([]ReplicaKey, n)
		for i := range out {
			out[i] = ReplicaKey{ID: id(l), DirectoryID: dir(l + "Dir")}
		}
		return out
	}
	versions := func() VersionRange {
		return VersionRange{Min: int16(rapid.IntRange(-1, 2).Draw(rt, "min")), Max: int16(rapid.IntRange(-1, 2).Draw(rt, "max"))}
	}
	switch rapid.IntRange(0, 24).Draw(rt, "kind") {
	case 0:
		return ElectionTimeout{}
	case 1:
		return FetchTimeout{}
	case 2:
		return CheckQuorumTimeout{}
	case 3:
		return BeginQuorumEpochTimeout{}
	case 4:
		return ReceiveVoteRequest{
			From: id("from"), ClusterID: cluster(), VoterID: id("voter"), VoterDirectoryID: dir("voterDir"),
			CandidateEpoch: ep("epoch"), Candidate: id("candidate"), CandidateDirectoryID: dir("candidateDir"),
			CandidateLogEnd: LogEnd{Offset: off("lastOffset"), Epoch: ep("lastEpoch")}, PreVote: rapid.Bool().Draw(rt, "preVote"),
		}
	case 5:
		leader := NoNode
		if rapid.IntRange(0, 3).Draw(rt, "namesLeader") == 0 {
			leader = id("leader")
		}
		return ReceiveVoteResponse{From: id("from"), Error: code(), Epoch: ep("epoch"), VoteGranted: rapid.Bool().Draw(rt, "granted"), LeaderID: leader}
	case 6:
		return ReceiveBeginQuorumEpoch{
			From: id("from"), ClusterID: cluster(), LeaderID: id("leader"), LeaderEpoch: ep("epoch"),
			VoterID: id("voter"), VoterDirectoryID: dir("voterDir"),
		}
	case 7:
		return ReceiveEndQuorumEpoch{
			From: id("from"), ClusterID: cluster(), LeaderID: id("leader"), LeaderEpoch: ep("epoch"),
			SuccessorRank: SuccessorRank{Position: rapid.IntRange(-1, 6).Draw(rt, "position"), Of: rapid.IntRange(-1, 12).Draw(rt, "of")},
		}
	case 8:
		return ReceiveFetch{
			From: id("from"), FromDirectoryID: dir("fromDir"), ClusterID: cluster(), CurrentLeaderEpoch: ep("epoch"),
			FetchEpoch: ep("fetchEpoch"), FetchOffset: off("fetchOffset"),
		}
	case 9:
		return ReceiveFetchSnapshot{
			From: id("from"), FromDirectoryID: dir("fromDir"), ClusterID: cluster(), CurrentLeaderEpoch: ep("epoch"),
			Snapshot: LogEnd{Offset: off("snapOffset"), Epoch: ep("snapEpoch")}, Position: off("position"), Size: off("size"),
		}
	case 10:
		r := ReceiveFetchResponse{From: id("from"), Error: code(), LeaderID: id("leader"), LeaderEpoch: ep("epoch"), HighWatermark: off("hwm")}
		switch rapid.IntRange(0, 3).Draw(rt, "payload") {
		case 1:
			r.Diverging = &LogOffsetMetadata{Offset: off("divOffset"), Epoch: ep("divEpoch")}
		case 2:
			r.Snapshot = &LogEnd{Offset: off("snapOffset"), Epoch: ep("snapEpoch")}
		}
		return r
	case 11:
		return ReceiveLeaderlessEpoch{From: id("from"), Epoch: ep("epoch")}
	case 12:
		return LogAppended{End: LogEnd{Offset: off("offset"), Epoch: ep("epoch")}}
	case 13:
		return LogFlushed{Offset: off("flushed")}
	case 14:
		return ReceiveQuorumResponse{From: id("from"), Error: code(), Epoch: ep("epoch"), LeaderID: id("leader")}
	case 15:
		c := code()
		if rapid.IntRange(0, 3).Draw(rt, "snapshotError") == 0 {
			c = rapid.SampledFrom([]ErrorCode{ErrSnapshotNotFound, ErrPositionOutOfRange}).Draw(rt, "snapCode")
		}
		return ReceiveFetchSnapshotResponse{
			From: id("from"), Error: c, LeaderID: id("leader"), LeaderEpoch: ep("epoch"),
			Snapshot: LogEnd{Offset: off("snapOffset"), Epoch: ep("snapEpoch")},
			Size:     off("size"), Position: off("position"), Bytes: off("bytes"),
		}
	case 16:
		return SnapshotCreated{Snapshot: LogEnd{Offset: off("snapOffset"), Epoch: ep("snapEpoch")}}
	case 17:
		return LogStartMoved{Snapshot: LogEnd{Offset: off("snapOffset"), Epoch: ep("snapEpoch")}}
	case 18:
		return VotersAppended{Offset: off("votersOffset"), Voters: voters("voters")}
	case 19:
		return ReceiveAddVoter{Ref: 1, From: id("from"), ClusterID: cluster(), Voter: ReplicaKey{ID: id("voter"), DirectoryID: dir("voterDir")}, Listener: rapid.Bool().Draw(rt, "listener")}
	case 20:
		return ReceiveRemoveVoter{Ref: 2, From: id("from"), ClusterID: cluster(), Voter: ReplicaKey{ID: id("voter"), DirectoryID: dir("voterDir")}}
	case 21:
		return ReceiveUpdateVoter{
			Ref: 3, From: id("from"), ClusterID: cluster(), CurrentLeaderEpoch: ep("epoch"),
			Voter: ReplicaKey{ID: id("voter"), DirectoryID: dir("voterDir")}, Listener: rapid.Bool().Draw(rt, "listener"), KRaftVersions: versions(),
		}
	case 22:
		r := ReceiveAPIVersionsResponse{From: id("from"), Error: code()}
		if rapid.Bool().Draw(rt, "withVersions") {
			v := versions()
			r.KRaftVersions = &v
		}
		return r
	case 23:
		return VoterChangeTimeout{}
	}
	return Resign{}
}

// genStart draws a replica: a configuration (voter, voter with id 0,
// only voter, voter with directory id, observer with and without id, with
// or without cluster id), a stored record and a log.
func genStart(rt *rapid.T) (State, []Action, bool) {
	local := ReplicaKey{ID: 1, DirectoryID: dirA}
	cfgs := []Config{
		config(1, 1, 2, 3),
		config(0, 0, 1, 2),
		config(1, 1),
		config(2, 1, 2, 3, 4, 5),
		{Local: local, Voters: []ReplicaKey{local, {ID: 2}, {ID: 3, DirectoryID: dirA}}, Seed: 7},
		observerConfig(4, 1, 2, 3),
		{Local: NoReplica, Observer: true, Voters: keys(1, 2, 3)},
		// Dynamic voter sets (D50): the set comes from the log.
		{Local: local, Seed: 8},
		{Local: local, Seed: 9, AutoJoin: true},
		{Local: ReplicaKey{ID: 4, DirectoryID: dirA}, Observer: true, AutoJoin: true, Seed: 10},
	}
	cfg := rapid.SampledFrom(cfgs).Draw(rt, "config")
	dynamic := len(cfg.Voters) == 0
	if rapid.Bool().Draw(rt, "withCluster") {
		cfg.ClusterID = testClusterID
	}
	var rec *QuorumRecord
	if rapid.Bool().Draw(rt, "withRecord") {
		r := QuorumRecord{
			Epoch:    Epoch(rapid.IntRange(0, 3).Draw(rt, "recEpoch")),
			LeaderID: NodeID(rapid.IntRange(-1, 5).Draw(rt, "recLeader")),
			VotedKey: ReplicaKey{ID: NodeID(rapid.IntRange(-1, 5).Draw(rt, "recVoted"))},
		}
		rec = &r
	}
	var log LogState
	if n := rapid.IntRange(0, 4).Draw(rt, "logLen"); n > 0 {
		log.End = LogEnd{Offset: int64(n), Epoch: Epoch(rapid.IntRange(0, 3).Draw(rt, "logEpoch"))}
		if rapid.IntRange(0, 2).Draw(rt, "snapshot") == 0 && log.End.Epoch > 0 {
			// A snapshot inside the log, the log cleaned up to it or not
			// (D42).
			id := LogEnd{Offset: int64(rapid.IntRange(1, n).Draw(rt, "snapOffset")), Epoch: log.End.Epoch}
			log.LatestSnapshot, log.EarliestSnapshot = &id, &id
			if rapid.Bool().Draw(rt, "cleaned") {
				log.Start = id.Offset
			}
		}
	}
	if dynamic || rapid.IntRange(0, 3).Draw(rt, "voterSets") == 0 {
		sets := [][]ReplicaKey{{local}, {local, {ID: 2, DirectoryID: dirA}}, {local, {ID: 2, DirectoryID: dirA}, {ID: 3, DirectoryID: dirB}}, {{ID: 2, DirectoryID: dirA}, {ID: 3}}}
		log.VoterSets = []VoterSetAt{{Offset: -1, Voters: rapid.SampledFrom(sets).Draw(rt, "bootstrap")}}
		if log.End.Offset > 0 && rapid.Bool().Draw(rt, "votersRecord") {
			log.VoterSets = append(log.VoterSets, VoterSetAt{Offset: log.End.Offset - 1, Voters: rapid.SampledFrom(sets).Draw(rt, "record")})
		}
	}
	s, acts, err := NewState(cfg, rec, log)
	return s, acts, err == nil
}

// TestStepRandomEventsProperty: random event sequences from random restarts
// never panic, never mutate their input, are deterministic, never decrease
// the epoch, and a Fault always comes alone with the state unchanged. Also:
// observers never campaign or lead, a Leader leads itself and a Follower
// follows someone else, the state's record is always the last one
// persisted, no message carries an epoch before it is persisted, and a
// step's responses come after its Persists.
// Reference: the package doc (State is immutable, replays exactly, never
// panics); the README's host contract, rule 1; QuorumState.durableTransitionTo.
func TestStepRandomEventsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s, acts, ok := genStart(rt)
		if !ok {
			return
		}
		if _, isPersist := acts[0].(Persist); !isPersist {
			rt.Fatalf("NewState's first action is %T, not Persist", acts[0])
		}
		var record QuorumRecord
		for _, a := range acts {
			if p, ok := a.(Persist); ok {
				record = p.Record
			}
		}
		if record != s.Record() {
			rt.Fatalf("NewState persisted %+v last but the state's record is %+v", record, s.Record())
		}
		n := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := 0; i < n; i++ {
			e := genEvent(rt, s.Epoch())
			before := deepCopy(s)
			next, acts := Step(s, e)
			if !reflect.DeepEqual(before, s) {
				rt.Fatalf("step %d: Step mutated its input on %#v", i, e)
			}
			again, acts2 := Step(s, e)
			if !reflect.DeepEqual(next, again) || !reflect.DeepEqual(acts, acts2) {
				rt.Fatalf("step %d: Step is not deterministic on %#v", i, e)
			}
			if next.Epoch() < s.Epoch() {
				rt.Fatalf("step %d: epoch went from %d to %d on %#v", i, s.Epoch(), next.Epoch(), e)
			}
			responded := false
			for _, a := range acts {
				var epoch Epoch
				switch a := a.(type) {
				case Fault:
					if len(acts) != 1 || !reflect.DeepEqual(next, s) {
						rt.Fatalf("step %d: Fault not alone or state changed: %v", i, acts)
					}
					continue
				case Persist:
					if responded {
						rt.Fatalf("step %d: Persist after a response: %v", i, acts)
					}
					if a.Record.Epoch < record.Epoch {
						rt.Fatalf("step %d: persisted epoch went back: %+v after %+v", i, a.Record, record)
					}
					record = a.Record
					continue
				case SendVoteResponse:
					epoch, responded = a.Epoch, true
				case SendBeginQuorumEpochResponse:
					epoch, responded = a.Epoch, true
				case SendEndQuorumEpochResponse:
					epoch, responded = a.Epoch, true
				case SendFetchResponse:
					epoch, responded = a.Epoch, true
				case SendFetchSnapshotResponse:
					epoch, responded = a.Epoch, true
				case SendVoteRequest:
					epoch = a.CandidateEpoch
				case SendBeginQuorumEpoch:
					epoch = a.Epoch
				case SendEndQuorumEpoch:
					epoch = a.Epoch
				case SendFetch:
					epoch = a.CurrentLeaderEpoch
				case SendFetchSnapshot:
					epoch = a.CurrentLeaderEpoch
				default:
					continue
				}
				// No message carries an epoch that is not durable yet.
				if epoch > record.Epoch {
					rt.Fatalf("step %d: a message of epoch %d before epoch %d is persisted: %v", i, epoch, record.Epoch, acts)
				}
			}
			if record != next.Record() {
				rt.Fatalf("step %d: state record %+v is not the persisted %+v after %#v (%v)", i, next.Record(), record, e, acts)
			}
			switch next.Role() {
			case Leader:
				// A leader removed from a dynamic voter set keeps leading
				// until the removal commits (D51); no one else leads
				// without being a voter.
				if !next.IsVoter() && s.Role() != Leader {
					rt.Fatalf("step %d: observer became %v", i, next.Role())
				}
			case Prospective, Candidate:
				if !next.IsVoter() {
					rt.Fatalf("step %d: observer became %v", i, next.Role())
				}
			case Unattached, Follower, Resigned:
			default:
				rt.Fatalf("step %d: bad role %v", i, next.Role())
			}
			if next.Role() == Leader && next.Leader() != next.Local().ID {
				rt.Fatalf("step %d: Leader names %d leader", i, next.Leader())
			}
			if next.Role() == Follower && (next.Leader() == NoNode || next.Leader() == next.Local().ID) {
				rt.Fatalf("step %d: Follower of %d (local %v)", i, next.Leader(), next.Local())
			}
			s = next
		}
	})
}
