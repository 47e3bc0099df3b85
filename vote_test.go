package kraft

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// Vote scenario tests: handling Vote requests (Kafka's handleVoteRequest and
// EpochState.canGrantVote) and Vote responses (handleVoteResponse,
// maybeHandleCommonResponse). Helpers are in helpers_test.go.
//
// Most tests use replica 1 of voters {1, 2, 3} whose log ends at offset 10
// in epoch 2 (voterLog), restarted in epoch 3.

var voterLog = LogEnd{Offset: 10, Epoch: 2}

// Candidate logs compared with voterLog (OffsetAndEpoch order: by epoch, then
// offset).
var (
	upToDateLogs = []LogEnd{{Offset: 10, Epoch: 2}, {Offset: 11, Epoch: 2}}
	staleLogs    = []LogEnd{{Offset: 9, Epoch: 2}, {Offset: 50, Epoch: 1}, {Offset: 0, Epoch: 0}}
)

// answersOnly asserts that s answers e with exactly one Vote response
// with the given verdict and changes nothing else.
func answersOnly(t *testing.T, s State, e ReceiveVoteRequest, granted bool) {
	t.Helper()
	next, acts := step(t, s, e)
	require.Equal(t, []Action{voteAnswer(e.From, ErrNone, s.Epoch(), s.Leader(), granted)}, acts, "request %+v", e)
	require.Equal(t, s, next, "request %+v", e)
}

// preVotesIffUpToDate asserts that s, in its own epoch, grants pre-votes
// exactly to candidates whose log is at least as up to date as its own
// (when grants is true), or rejects them all (when it is false), and that a
// pre-vote never changes the state.
func preVotesIffUpToDate(t *testing.T, s State, from NodeID, grants bool) {
	t.Helper()
	upToDate := append(append([]LogEnd(nil), upToDateLogs...), LogEnd{Offset: 1, Epoch: s.Epoch()})
	for _, last := range upToDate {
		answersOnly(t, s, preVoteRequest(from, s.Epoch(), last), grants)
	}
	for _, last := range staleLogs {
		answersOnly(t, s, preVoteRequest(from, s.Epoch(), last), false)
	}
}

// rejectsStandardVotes asserts that s rejects every standard vote of its
// epoch, however up to date the candidate, and changes nothing.
func rejectsStandardVotes(t *testing.T, s State, from NodeID) {
	t.Helper()
	for _, last := range append(append([]LogEnd(nil), upToDateLogs...), staleLogs...) {
		answersOnly(t, s, standardVoteRequest(from, s.Epoch(), last), false)
	}
}

// ---------------------------------------------------------------------------
// ReceiveVoteRequest: the common prefix of Kafka's handleVoteRequest (checks,
// fencing, the move to a newer epoch, the voter key)

// A request from another cluster is refused with INCONSISTENT_CLUSTER_ID
// before anything else: even a newer epoch moves nothing. A request that
// carries our cluster id, or none, is handled.
// Reference: KafkaRaftClient.handleVoteRequest, hasValidClusterId.
func TestVoteRequestFromForeignClusterIsRejected(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	cfg.ClusterID = testClusterID
	s := unattachedWithLog(t, cfg, 3, voterLog)

	foreign := standardVoteRequest(2, 5, voterLog)
	foreign.ClusterID = uuid.NullUUID{UUID: dirA, Valid: true}
	next, acts := step(t, s, foreign)
	require.Equal(t, []Action{voteAnswer(2, ErrInconsistentClusterID, 3, NoNode, false)}, acts)
	require.Equal(t, s, next)

	for name, id := range map[string]uuid.NullUUID{"ours": testClusterID, "none": {}} {
		req := preVoteRequest(2, 5, voterLog)
		req.ClusterID = id
		next, acts = step(t, s, req)
		require.Equal(t, voteAnswer(2, ErrNone, 5, NoNode, true), acts[len(acts)-1], name)
		requireState(t, next, Unattached, 5, NoNode, NoReplica)
	}
}

// Malformed requests get INVALID_REQUEST without any state change, before
// the epoch is even looked at: a negative last offset or epoch, a standard
// vote whose last epoch is not older than the candidate's epoch, a pre-vote
// whose last epoch is newer than the requester's epoch.
// Reference: KafkaRaftClient.handleVoteRequest (last epoch < replica epoch
// for a standard vote, <= for a pre-vote).
func TestVoteRequestWithIllegalFieldsIsInvalid(t *testing.T) {
	s := unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog)
	cases := []struct {
		name string
		req  ReceiveVoteRequest
	}{
		{"negative last offset", standardVoteRequest(2, 5, LogEnd{Offset: -1, Epoch: 2})},
		{"negative last epoch", standardVoteRequest(2, 5, LogEnd{Offset: 10, Epoch: -1})},
		{"standard vote with last epoch equal to its epoch", standardVoteRequest(2, 5, LogEnd{Offset: 10, Epoch: 5})},
		{"standard vote with last epoch above its epoch", standardVoteRequest(2, 5, LogEnd{Offset: 10, Epoch: 6})},
		{"standard vote in epoch 0", standardVoteRequest(2, 0, LogEnd{})},
		{"pre-vote with last epoch above its epoch", preVoteRequest(2, 5, LogEnd{Offset: 10, Epoch: 6})},
		{"pre-vote with negative last offset", preVoteRequest(2, 5, LogEnd{Offset: -1, Epoch: 0})},
		{"pre-vote with negative last epoch", preVoteRequest(2, 5, LogEnd{Offset: 0, Epoch: -1})},
		{"checked before fencing", standardVoteRequest(2, 1, LogEnd{Offset: -1, Epoch: 0})},
		{"checked before the candidate id", ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: 5, Candidate: -1, CandidateLogEnd: LogEnd{Offset: 10, Epoch: 5}}},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			next, acts := step(t, s, tc.req)
			require.Equal(t, []Action{voteAnswer(2, ErrInvalidRequest, 3, NoNode, false)}, acts)
			require.Equal(t, s, next)
		})
	}

	// The boundaries are legal: a pre-vote from the epoch of its last
	// record, a standard vote from the epoch after it.
	next, acts := step(t, s, preVoteRequest(2, 5, LogEnd{Offset: 10, Epoch: 5}))
	require.Equal(t, voteAnswer(2, ErrNone, 5, NoNode, true), acts[len(acts)-1])
	requireState(t, next, Unattached, 5, NoNode, NoReplica)
	next, acts = step(t, s, standardVoteRequest(2, 5, LogEnd{Offset: 10, Epoch: 4}))
	require.Equal(t, voteAnswer(2, ErrNone, 5, NoNode, true), acts[len(acts)-1])
	requireState(t, next, Unattached, 5, NoNode, keyOf(2))
}

// A request from an older epoch is fenced: FENCED_LEADER_EPOCH with our
// epoch and leader, not granted, nothing changes. Fencing comes before the
// candidate-id check.
// Reference: KafkaRaftClient.handleVoteRequest, validateVoterOnlyRequest.
func TestVoteRequestWithStaleEpochIsFenced(t *testing.T) {
	unattached := unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog)
	leader := asLeader(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog))
	requireState(t, leader, Leader, 4, 1, NoReplica)

	for name, s := range map[string]State{"unattached": unattached, "leader": leader} {
		stale := s.Epoch() - 1
		reqs := []ReceiveVoteRequest{
			preVoteRequest(2, stale, LogEnd{Offset: 100, Epoch: 1}),
			standardVoteRequest(2, stale, LogEnd{Offset: 100, Epoch: 1}),
			{From: 2, VoterID: NoNode, CandidateEpoch: stale, Candidate: -1, CandidateLogEnd: LogEnd{Offset: 100, Epoch: 1}},
		}
		for _, req := range reqs {
			next, acts := step(t, s, req)
			require.Equal(t, []Action{voteAnswer(2, ErrFencedLeaderEpoch, s.Epoch(), s.Leader(), false)}, acts, "%s: %+v", name, req)
			require.Equal(t, s, next, name)
		}
	}
}

// A request with a negative candidate id (and a current or newer epoch) is
// INVALID_REQUEST and does not move us to its epoch.
// Reference: KafkaRaftClient.handleVoteRequest, validateVoterOnlyRequest.
func TestVoteRequestWithNegativeCandidateIsInvalid(t *testing.T) {
	s := unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog)
	for _, epoch := range []Epoch{3, 5} {
		for _, pre := range []bool{false, true} {
			req := ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: epoch, Candidate: -1, CandidateLogEnd: voterLog, PreVote: pre}
			next, acts := step(t, s, req)
			require.Equal(t, []Action{voteAnswer(2, ErrInvalidRequest, 3, NoNode, false)}, acts, "%+v", req)
			require.Equal(t, s, next)
		}
	}
}

// A request from a newer epoch moves every role to Unattached in that epoch,
// persisted, before the vote is decided: even a pre-vote, which itself binds
// nobody. The transition follows the timer rule of Kafka's
// QuorumState.transitionToUnattached, and the
// decision is then the Unattached one (a Follower that had fetched, a Leader
// or a Resigned leader may now grant). A granted standard vote is persisted
// with the epoch in one record (nothing was sent between the two, D1),
// before the response.
// Reference: KafkaRaftClient.handleVoteRequest; QuorumState.durableTransitionTo
// (the record is written before the response).
func TestVoteRequestWithNewerEpochMakesEveryRoleUnattached(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	base := func() State { return unattachedWithLog(t, cfg, 3, voterLog) }
	cases := []struct {
		name string
		s    State
		// leaving is what leaving the role emits between RoleChanged and
		// the vote: stopped timers and a fresh election timer or none.
		leaving func(t *testing.T, acts []Action) []Action
	}{
		{"unattached", base(), func(*testing.T, []Action) []Action { return nil }},
		{"prospective", asProspective(t, base()), func(*testing.T, []Action) []Action { return nil }},
		{"candidate", asCandidate(t, base()), func(*testing.T, []Action) []Action { return nil }},
		{"resigned", asResigned(t, base()), func(*testing.T, []Action) []Action { return nil }},
		{"follower that fetched", asFetched(t, asFollower(t, base(), 3, 2)), func(t *testing.T, acts []Action) []Action {
			return []Action{StopTimer{Timer: FetchTimer}, electionTimerReset(electionTimeoutAt(t, acts, 3))}
		}},
		{"leader", asLeader(t, base()), func(t *testing.T, acts []Action) []Action {
			return []Action{StopTimer{Timer: CheckQuorumTimer}, StopTimer{Timer: BeginQuorumEpochTimer}, electionTimerReset(electionTimeoutAt(t, acts, 4))}
		}},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name+"/pre-vote", func(t *testing.T) {
			next, acts := step(t, tc.s, preVoteRequest(3, 7, voterLog))

			requireState(t, next, Unattached, 7, NoNode, NoReplica)
			requireActions(t, concat(
				[]Action{Persist{Record: QuorumRecord{Epoch: 7, LeaderID: NoNode, VotedKey: NoReplica}}, roleChanged(tc.s.Role(), Unattached, 7, NoNode)},
				tc.leaving(t, acts),
				[]Action{voteAnswer(3, ErrNone, 7, NoNode, true)},
			), acts)
		})
		t.Run(tc.name+"/standard", func(t *testing.T) {
			next, acts := step(t, tc.s, standardVoteRequest(3, 7, voterLog))

			requireState(t, next, Unattached, 7, NoNode, keyOf(3))
			leaving := tc.leaving(t, acts)
			n := 2 + len(leaving)
			// One Persist: the epoch's record is rewritten in place with
			// the vote, as nothing was sent in between (D1).
			requireActions(t, concat(
				[]Action{Persist{Record: QuorumRecord{Epoch: 7, LeaderID: NoNode, VotedKey: keyOf(3)}}, roleChanged(tc.s.Role(), Unattached, 7, NoNode)},
				leaving,
				[]Action{
					electionTimerReset(electionTimeoutAt(t, acts, n)),
					voteAnswer(3, ErrNone, 7, NoNode, true),
				},
			), acts)
		})
		t.Run(tc.name+"/stale log", func(t *testing.T) {
			next, acts := step(t, tc.s, standardVoteRequest(3, 7, LogEnd{Offset: 9, Epoch: 2}))

			requireState(t, next, Unattached, 7, NoNode, NoReplica)
			requireActions(t, concat(
				[]Action{Persist{Record: QuorumRecord{Epoch: 7, LeaderID: NoNode, VotedKey: NoReplica}}, roleChanged(tc.s.Role(), Unattached, 7, NoNode)},
				tc.leaving(t, acts),
				[]Action{voteAnswer(3, ErrNone, 7, NoNode, false)},
			), acts)
		})
	}
}

// A request addressed to another voter key gets INVALID_VOTER_KEY and is not
// granted, but the move to its newer epoch, done before the check, stays.
// A request without an addressee, or addressed to our id without a
// directory id, or to our exact key, is ours.
// Reference: KafkaRaftClient.handleVoteRequest, isValidVoterKey, KIP-853.
func TestVoteRequestToAnotherVoterKeyIsInvalidButKeepsTheEpoch(t *testing.T) {
	plain := unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog)
	withDir := unattachedWithLog(t, Config{
		Local:  ReplicaKey{ID: 1, DirectoryID: dirA},
		Voters: []ReplicaKey{{ID: 1, DirectoryID: dirA}, {ID: 2}, {ID: 3}},
		Seed:   3,
	}, 3, voterLog)

	wrong := []struct {
		name string
		s    State
		to   ReplicaKey
	}{
		{"another id", plain, keyOf(3)},
		{"our id with a directory id we do not have", plain, ReplicaKey{ID: 1, DirectoryID: dirA}},
		{"our id with another directory id", withDir, ReplicaKey{ID: 1, DirectoryID: dirB}},
	}
	for _, tc := range wrong {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			req := standardVoteRequest(2, 5, voterLog)
			req.VoterID, req.VoterDirectoryID = tc.to.ID, tc.to.DirectoryID
			next, acts := step(t, tc.s, req)

			requireState(t, next, Unattached, 5, NoNode, NoReplica)
			requireActions(t, []Action{
				Persist{Record: QuorumRecord{Epoch: 5, LeaderID: NoNode, VotedKey: NoReplica}},
				roleChanged(Unattached, Unattached, 5, NoNode),
				voteAnswer(2, ErrInvalidVoterKey, 5, NoNode, false),
			}, acts)

			// In the current epoch nothing changes at all.
			pre := preVoteRequest(2, 3, voterLog)
			pre.VoterID, pre.VoterDirectoryID = tc.to.ID, tc.to.DirectoryID
			next, acts = step(t, tc.s, pre)
			require.Equal(t, []Action{voteAnswer(2, ErrInvalidVoterKey, 3, NoNode, false)}, acts)
			require.Equal(t, tc.s, next)
		})
	}

	right := []struct {
		name string
		s    State
		to   ReplicaKey
	}{
		{"no addressee", withDir, NoReplica},
		{"our id", plain, keyOf(1)},
		{"our id without directory id", withDir, keyOf(1)},
		{"our exact key", withDir, ReplicaKey{ID: 1, DirectoryID: dirA}},
	}
	for _, tc := range right {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			req := standardVoteRequest(2, 5, voterLog)
			req.VoterID, req.VoterDirectoryID = tc.to.ID, tc.to.DirectoryID
			next, acts := step(t, tc.s, req)
			require.Equal(t, voteAnswer(2, ErrNone, 5, NoNode, true), acts[len(acts)-1])
			requireState(t, next, Unattached, 5, NoNode, keyOf(2))
		})
	}
}

// ---------------------------------------------------------------------------
// ReceiveVoteRequest: the grant table per role (each EpochState.canGrantVote)

// An Unattached replica grants a pre-vote iff the candidate's log is at
// least as up to date as its own; nothing is recorded.
// Reference: UnattachedState.canGrantVote; OffsetAndEpoch.compareTo.
func TestUnattachedGrantsPreVoteIffUpToDate(t *testing.T) {
	preVotesIffUpToDate(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog), 2, true)
}

// An Unattached replica without vote or leader grants a standard vote iff
// the candidate is up to date; a granted vote is persisted (with the
// candidate's directory id) before the response, and the election timer is
// reset to a fresh random value.
// Reference: KafkaRaftClient.handleVoteRequest; QuorumState.unattachedAddVotedState.
func TestUnattachedGrantsStandardVoteIffUpToDateAndPersistsIt(t *testing.T) {
	s := unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog)
	for _, last := range upToDateLogs {
		req := standardVoteRequest(2, 3, last)
		req.CandidateDirectoryID = dirA
		next, acts := step(t, s, req)

		voted := ReplicaKey{ID: 2, DirectoryID: dirA}
		requireState(t, next, Unattached, 3, NoNode, voted)
		requireActions(t, []Action{
			Persist{Record: QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: voted}},
			electionTimerReset(electionTimeoutAt(t, acts, 1)),
			voteAnswer(2, ErrNone, 3, NoNode, true),
		}, acts)
	}
	for _, last := range staleLogs {
		if last.Epoch < 3 {
			answersOnly(t, s, standardVoteRequest(2, 3, last), false)
		}
	}
}

// An Unattached replica that voted re-grants its vote to the same candidate
// without looking at the log again and without writing anything, and
// rejects any other candidate.
// Reference: QuorumState.unattachedOrProspectiveCanGrantVote (at most one
// standard vote per epoch).
func TestUnattachedWithVoteReGrantsOnlyTheSameCandidate(t *testing.T) {
	s, _ := step(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog), standardVoteRequest(2, 3, voterLog))
	requireState(t, s, Unattached, 3, NoNode, keyOf(2))

	for _, last := range append(append([]LogEnd(nil), upToDateLogs...), LogEnd{}) {
		answersOnly(t, s, standardVoteRequest(2, 3, last), true)
	}
	for _, last := range upToDateLogs {
		answersOnly(t, s, standardVoteRequest(3, 3, LogEnd{Offset: last.Offset + 5, Epoch: last.Epoch}), false)
	}
	// Pre-votes ignore the vote: granted iff up to date, to anyone.
	preVotesIffUpToDate(t, s, 3, true)
}

// KIP-853 matching of the vote: a vote stored without a directory id
// matches the same id with any directory id; a vote stored with one matches
// only that directory id.
// Reference: ReplicaKey matching (VoterSet.VoterNode.isVoter), KIP-853;
// QuorumState.unattachedOrProspectiveCanGrantVote.
func TestUnattachedVoteReGrantFollowsDirectoryIDMatching(t *testing.T) {
	base := unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog)
	cases := []struct {
		name    string
		stored  uuid.UUID
		asking  uuid.UUID
		granted bool
	}{
		{"stored without directory, asked with one", uuid.Nil, dirA, true},
		{"same directory", dirA, dirA, true},
		{"stored with directory, asked without", dirA, uuid.Nil, false},
		{"another directory", dirA, dirB, false},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			first := standardVoteRequest(2, 3, voterLog)
			first.CandidateDirectoryID = tc.stored
			s, _ := step(t, base, first)
			requireState(t, s, Unattached, 3, NoNode, ReplicaKey{ID: 2, DirectoryID: tc.stored})

			again := standardVoteRequest(2, 3, voterLog)
			again.CandidateDirectoryID = tc.asking
			answersOnly(t, s, again, tc.granted)
		})
	}
}

// An Unattached replica that knows the leader's id (but cannot reach it)
// rejects standard votes and still grants up-to-date pre-votes.
// Reference: QuorumState.unattachedOrProspectiveCanGrantVote (leader id known);
// UnattachedState.
func TestUnattachedWithLeaderRejectsStandardVotesButGrantsPreVotes(t *testing.T) {
	// Node 9 led epoch 3 but is not in our voter set: Unattached(3, leader 9).
	s, _ := restart(t, config(1, 1, 2, 3), QuorumRecord{Epoch: 3, LeaderID: 9, VotedKey: NoReplica}, LogState{End: voterLog})
	requireState(t, s, Unattached, 3, 9, NoReplica)

	rejectsStandardVotes(t, s, 2)
	preVotesIffUpToDate(t, s, 2, true)
}

// A Prospective answers like an Unattached replica: pre-votes iff up to
// date, standard votes iff up to date and not voted yet.
// Reference: ProspectiveState.canGrantVote (same rule as UnattachedState).
func TestProspectiveGrantsVotesLikeUnattached(t *testing.T) {
	s := asProspective(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog))
	preVotesIffUpToDate(t, s, 2, true)
	for _, last := range staleLogs {
		answersOnly(t, s, standardVoteRequest(2, 3, last), false)
	}

	next, acts := step(t, s, standardVoteRequest(2, 3, voterLog))
	requireState(t, next, Prospective, 3, NoNode, keyOf(2))
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: keyOf(2)}},
		electionTimerReset(electionTimeoutAt(t, acts, 1)),
		voteAnswer(2, ErrNone, 3, NoNode, true),
	}, acts)

	// Having voted, it re-grants the same candidate and rejects others.
	answersOnly(t, next, standardVoteRequest(2, 3, LogEnd{}), true)
	answersOnly(t, next, standardVoteRequest(3, 3, LogEnd{Offset: 20, Epoch: 2}), false)
}

// A Prospective that grants a standard vote persists it and starts over as
// a new Prospective: a fresh random timer and a fresh tally with only its
// own pre-vote, asking again the voters that had already answered. The
// earlier grants no longer count.
// Reference: KafkaRaftClient.handleVoteRequest; QuorumState.prospectiveAddVotedState.
func TestProspectiveGrantingStandardVoteStartsAFreshTally(t *testing.T) {
	s := asProspective(t, unattachedWithLog(t, config(1, 1, 2, 3, 4, 5), 3, voterLog))
	s, acts := step(t, s, grantVote(2, 3))
	require.Empty(t, acts)
	s, acts = step(t, s, rejectVote(5, 3))
	require.Empty(t, acts)
	require.Equal(t, Prospective, s.Role())

	next, acts := step(t, s, standardVoteRequest(3, 3, voterLog))

	requireState(t, next, Prospective, 3, NoNode, keyOf(3))
	requireActions(t, concat(
		[]Action{
			Persist{Record: QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: keyOf(3)}},
			electionTimerReset(electionTimeoutAt(t, acts, 1)),
		},
		sentVoteRequests(s, true, keyOf(2), keyOf(5)),
		[]Action{voteAnswer(3, ErrNone, 3, NoNode, true)},
	), acts)

	// Self and 4 are only 2 of 5: node 2's earlier grant was forgotten.
	next, acts = step(t, next, grantVote(4, 3))
	require.Empty(t, acts)
	require.Equal(t, Prospective, next.Role())
	next, _ = step(t, next, grantVote(2, 3))
	requireState(t, next, Candidate, 4, NoNode, keyOf(1))
}

// A Candidate grants pre-votes iff up to date and rejects every standard
// vote, even one from itself: it has already voted for itself.
// Reference: CandidateState.canGrantVote.
func TestCandidateGrantsPreVotesIffUpToDateAndRejectsStandardVotes(t *testing.T) {
	s := asCandidate(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog))
	requireState(t, s, Candidate, 4, NoNode, keyOf(1))

	preVotesIffUpToDate(t, s, 2, true)
	rejectsStandardVotes(t, s, 2)
	rejectsStandardVotes(t, s, 1)
}

// A Follower grants an up-to-date pre-vote until its first successful fetch
// from the leader, and rejects every pre-vote after it. It never grants a
// standard vote.
// Reference: KIP-996; FollowerState.canGrantVote, hasFetchedFromLeader.
func TestFollowerGrantsPreVoteOnlyBeforeItsFirstFetch(t *testing.T) {
	s := asFollower(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog), 3, 2)
	requireState(t, s, Follower, 3, 2, NoReplica)

	preVotesIffUpToDate(t, s, 3, true)
	rejectsStandardVotes(t, s, 3)
}

// Reference: FollowerState.canGrantVote (rejects pre-votes once
// hasFetchedFromLeader).
func TestFollowerRejectsPreVoteAfterFetch(t *testing.T) {
	s := asFetched(t, asFollower(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog), 3, 2))

	preVotesIffUpToDate(t, s, 3, false)
	rejectsStandardVotes(t, s, 3)
}

// kraft's change (the fix proposed in KAFKA-20895): once its leader has
// resigned with EndQuorumEpoch, a Follower that has fetched grants
// up-to-date pre-votes again, so that the preferred successor can win; it
// still rejects standard votes.
// Reference: docs/design.md, contract decision 3; KAFKA-20895.
func TestFollowerGrantsPreVoteAgainAfterItsLeaderResigns(t *testing.T) {
	s := asFetched(t, asFollower(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog), 3, 2))
	s, _ = step(t, s, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 3, SuccessorRank: SuccessorRank{Position: 1, Of: 2}})
	requireState(t, s, Follower, 3, 2, NoReplica)

	preVotesIffUpToDate(t, s, 3, true)
	rejectsStandardVotes(t, s, 3)
}

// A Leader rejects every vote of its epoch, pre-vote or standard.
// Reference: LeaderState.canGrantVote.
func TestLeaderRejectsEveryVote(t *testing.T) {
	s := asLeader(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog))
	requireState(t, s, Leader, 4, 1, NoReplica)

	preVotesIffUpToDate(t, s, 2, false)
	rejectsStandardVotes(t, s, 2)
}

// A Resigned leader helps its successor: it grants up-to-date pre-votes; it
// never grants a standard vote in the epoch it led.
// Reference: ResignedState; ResignedStateTest.testGrantVote.
func TestResignedGrantsPreVotesIffUpToDateAndRejectsStandardVotes(t *testing.T) {
	s := asResigned(t, unattachedWithLog(t, config(1, 1, 2, 3), 3, voterLog))
	requireState(t, s, Resigned, 4, 1, NoReplica)

	preVotesIffUpToDate(t, s, 2, true)
	rejectsStandardVotes(t, s, 2)
}

// Observers answer Vote requests by the same rules as voters: an Unattached
// observer grants up-to-date pre-votes and may grant and persist a standard
// vote (it owns no election timer to reset); an observer Follower rejects
// pre-votes once it has fetched.
// Reference: KafkaRaftClient.handleVoteRequest (no local voter check);
// docs/design.md D29.
func TestObserverAnswersVotesLikeAVoter(t *testing.T) {
	cfg := observerConfig(7, 1, 2, 3)
	s, _ := restart(t, cfg, QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: NoReplica}, LogState{End: voterLog})
	requireState(t, s, Unattached, 3, NoNode, NoReplica)
	require.False(t, s.IsVoter())

	preVotesIffUpToDate(t, s, 2, true)
	next, acts := step(t, s, standardVoteRequest(2, 3, voterLog))
	requireState(t, next, Unattached, 3, NoNode, keyOf(2))
	require.Equal(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: keyOf(2)}},
		voteAnswer(2, ErrNone, 3, NoNode, true),
	}, acts)

	f := asFollower(t, s, 3, 2)
	preVotesIffUpToDate(t, f, 3, true)
	rejectsStandardVotes(t, f, 3)
	preVotesIffUpToDate(t, asFetched(t, f), 3, false)
}

// A replica without a node id answers pre-votes but can never grant a
// standard vote (it could not persist it), and any request addressed to a
// voter key is not for it.
// Reference: KafkaRaftClient.isValidVoterKey; QuorumState.unattachedAddVotedState
// (needs a local id); docs/design.md D8, D29.
func TestObserverWithoutIDNeverGrantsStandardVote(t *testing.T) {
	s := start(t, Config{Local: NoReplica, Observer: true, Voters: keys(1, 2, 3), Seed: 9})
	requireState(t, s, Unattached, 0, NoNode, NoReplica)

	answersOnly(t, s, preVoteRequest(2, 0, LogEnd{}), true)

	next, acts := step(t, s, standardVoteRequest(2, 1, LogEnd{}))
	requireState(t, next, Unattached, 1, NoNode, NoReplica)
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 1, LeaderID: NoNode, VotedKey: NoReplica}},
		roleChanged(Unattached, Unattached, 1, NoNode),
		fetchTimerReset,
		SendFetch{To: NoNode, CurrentLeaderEpoch: 1, HighWatermark: -1},
		voteAnswer(2, ErrNone, 1, NoNode, false),
	}, acts)

	addressed := preVoteRequest(2, 0, LogEnd{})
	addressed.VoterID = 7
	next, acts = step(t, s, addressed)
	require.Equal(t, []Action{voteAnswer(2, ErrInvalidVoterKey, 0, NoNode, false)}, acts)
	require.Equal(t, s, next)
}

// ---------------------------------------------------------------------------
// ReceiveVoteResponse (Kafka's handleVoteResponse, maybeHandleCommonResponse)

// A response from an older epoch is stale and ignored, whatever it says.
// Reference: KafkaRaftClient.maybeHandleCommonResponse (an older epoch is stale).
func TestVoteResponseFromOlderEpochIsIgnored(t *testing.T) {
	s := asCandidate(t, start(t, config(1, 1, 2, 3)))
	requireState(t, s, Candidate, 1, NoNode, keyOf(1))

	for _, e := range []ReceiveVoteResponse{
		grantVote(3, 0),
		rejectVote(3, 0),
		{From: 3, Epoch: 0, VoteGranted: true, LeaderID: 2},
		{From: 3, Epoch: 0, LeaderID: 1},
		{From: 3, Epoch: 0, Error: ErrUnknownLeaderEpoch},
	} {
		next, acts := step(t, s, e)
		require.Empty(t, acts, "%+v", e)
		require.Equal(t, s, next, "%+v", e)
	}
}

// A response from a newer epoch that names a leader makes the nominee a
// Follower of that leader in that epoch (persisted, first fetch at once).
// Reference: KafkaRaftClient.handleVoteResponse, maybeHandleCommonResponse,
// maybeTransition.
func TestVoteResponseFromNewerEpochWithLeaderMakesFollower(t *testing.T) {
	s := asProspective(t, start(t, config(1, 1, 2, 3)))

	next, acts := step(t, s, ReceiveVoteResponse{From: 2, Error: ErrFencedLeaderEpoch, Epoch: 2, LeaderID: 3})

	requireState(t, next, Follower, 2, 3, NoReplica)
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 2, LeaderID: 3, VotedKey: NoReplica}},
		roleChanged(Prospective, Follower, 2, 3),
		StopTimer{Timer: ElectionTimer},
		fetchTimerReset,
		SendFetch{To: 3, CurrentLeaderEpoch: 2, HighWatermark: -1},
	}, acts)
}

// A response from a newer epoch without a leader makes the nominee
// Unattached in that epoch, persisted, keeping its running election timer.
// Reference: KafkaRaftClient.maybeHandleCommonResponse;
// QuorumState.transitionToUnattached (remaining election time); D2.
func TestVoteResponseFromNewerEpochWithoutLeaderMakesUnattached(t *testing.T) {
	for name, s := range map[string]State{
		"prospective": asProspective(t, start(t, config(1, 1, 2, 3))),
		"candidate":   asCandidate(t, start(t, config(1, 1, 2, 3))),
	} {
		next, acts := step(t, s, ReceiveVoteResponse{From: 2, Epoch: 3, LeaderID: NoNode})

		require.Equal(t, Unattached, next.Role(), name)
		requireState(t, next, Unattached, 3, NoNode, NoReplica)
		requireActions(t, []Action{
			Persist{Record: QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: NoReplica}},
			roleChanged(s.Role(), Unattached, 3, NoNode),
		}, acts)
	}
}

// A response of our epoch that names a leader we did not know makes us its
// Follower in the same epoch, keeping our vote; the vote it carries is then
// ignored (a granted one does not make a Candidate or a Leader).
// Reference: KafkaRaftClient.maybeHandleCommonResponse;
// KafkaRaftClientPreVoteTest.testProspectiveWithoutLeaderTransitionsToFollower.
func TestVoteResponseNamingUnknownLeaderOfOurEpochMakesFollower(t *testing.T) {
	p := asProspective(t, unattachedAt(t, config(1, 1, 2, 3), 2))
	next, acts := step(t, p, ReceiveVoteResponse{From: 2, Epoch: 2, VoteGranted: true, LeaderID: 3})
	requireState(t, next, Follower, 2, 3, NoReplica)
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 2, LeaderID: 3, VotedKey: NoReplica}},
		roleChanged(Prospective, Follower, 2, 3),
		StopTimer{Timer: ElectionTimer},
		fetchTimerReset,
		SendFetch{To: 3, CurrentLeaderEpoch: 2, HighWatermark: -1},
	}, acts)

	c := asCandidate(t, unattachedAt(t, config(1, 1, 2, 3), 1))
	requireState(t, c, Candidate, 2, NoNode, keyOf(1))
	next, acts = step(t, c, ReceiveVoteResponse{From: 2, Epoch: 2, VoteGranted: true, LeaderID: 3})
	requireState(t, next, Follower, 2, 3, keyOf(1))
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 2, LeaderID: 3, VotedKey: keyOf(1)}},
		roleChanged(Candidate, Follower, 2, 3),
		StopTimer{Timer: ElectionTimer},
		fetchTimerReset,
		SendFetch{To: 3, CurrentLeaderEpoch: 2, HighWatermark: -1},
	}, acts)
}

// With three voters the Prospective's own pre-vote plus one grant is a
// majority: it becomes Candidate(E+1), persists its self-vote, draws a fresh
// timer and asks every other voter for a standard vote in E+1.
// Reference: KafkaRaftClient.handleVoteResponse; QuorumState.transitionToCandidate;
// EpochElection.majoritySize.
func TestProspectiveWinsPreVoteWithMajorityOfThree(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	cfg.ClusterID = testClusterID
	s := asProspective(t, unattachedWithLog(t, cfg, 3, voterLog))

	next, acts := step(t, s, grantVote(3, 3))

	requireState(t, next, Candidate, 4, NoNode, keyOf(1))
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 4, LeaderID: NoNode, VotedKey: keyOf(1)}},
		roleChanged(Prospective, Candidate, 4, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 2)),
		SendVoteRequest{To: keyOf(2), ClusterID: testClusterID, CandidateEpoch: 4, Candidate: keyOf(1), CandidateLogEnd: voterLog},
		SendVoteRequest{To: keyOf(3), ClusterID: testClusterID, CandidateEpoch: 4, Candidate: keyOf(1), CandidateLogEnd: voterLog},
	}, acts)
}

// With five voters the Prospective needs two grants besides its own.
// Reference: KafkaRaftClient.handleVoteResponse; EpochElection.majoritySize.
func TestProspectiveWinsPreVoteWithMajorityOfFive(t *testing.T) {
	s := asProspective(t, start(t, config(1, 1, 2, 3, 4, 5)))

	s, acts := step(t, s, grantVote(2, 0))
	require.Empty(t, acts)
	require.Equal(t, Prospective, s.Role())
	s, acts = step(t, s, rejectVote(3, 0))
	require.Empty(t, acts)
	require.Equal(t, Prospective, s.Role())

	next, acts := step(t, s, grantVote(4, 0))

	requireState(t, next, Candidate, 1, NoNode, keyOf(1))
	requireActions(t, concat([]Action{
		Persist{Record: QuorumRecord{Epoch: 1, LeaderID: NoNode, VotedKey: keyOf(1)}},
		roleChanged(Prospective, Candidate, 1, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 2)),
	}, sentVoteRequests(next, false, keyOf(2), keyOf(3), keyOf(4), keyOf(5))), acts)
}

// A Candidate with a majority becomes Leader: it persists (E, self, no
// vote), announces the role change, stops its election timer, arms
// check-quorum (1.5*T_f) and BeginQuorumEpoch (T_f/2), appends the
// LeaderChange record naming the voters that granted (itself included) and
// sends BeginQuorumEpoch to every other voter, in that order.
// Reference: KafkaRaftClient.onBecomeLeader, QuorumState.transitionToLeader.
func TestCandidateWinsElectionWithMajorityOfThree(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	cfg.ClusterID = testClusterID
	s := asCandidate(t, start(t, cfg))

	next, acts := step(t, s, grantVote(3, 1))

	requireState(t, next, Leader, 1, 1, NoReplica)
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 1, LeaderID: 1, VotedKey: NoReplica}},
		roleChanged(Candidate, Leader, 1, 1),
		StopTimer{Timer: ElectionTimer},
		checkQuorumTimerReset,
		beginQuorumTimerReset,
		AppendLeaderChange{Epoch: 1, LeaderID: 1, Voters: keys(1, 2, 3), GrantingVoters: keys(1, 3)},
		SendBeginQuorumEpoch{To: keyOf(2), ClusterID: testClusterID, Epoch: 1, LeaderID: 1},
		SendBeginQuorumEpoch{To: keyOf(3), ClusterID: testClusterID, Epoch: 1, LeaderID: 1},
	}, acts)
}

// Reference: KafkaRaftClient.handleVoteResponse, onBecomeLeader;
// EpochElection.majoritySize (3 of 5).
func TestCandidateWinsElectionWithMajorityOfFive(t *testing.T) {
	s := asCandidate(t, unattachedWithLog(t, config(3, 1, 2, 3, 4, 5), 3, voterLog))
	requireState(t, s, Candidate, 4, NoNode, keyOf(3))

	for _, e := range []ReceiveVoteResponse{rejectVote(1, 4), grantVote(5, 4)} {
		var acts []Action
		s, acts = step(t, s, e)
		require.Empty(t, acts)
		require.Equal(t, Candidate, s.Role())
	}
	next, acts := step(t, s, grantVote(2, 4))

	requireState(t, next, Leader, 4, 3, NoReplica)
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 4, LeaderID: 3, VotedKey: NoReplica}},
		roleChanged(Candidate, Leader, 4, 3),
		StopTimer{Timer: ElectionTimer},
		checkQuorumTimerReset,
		beginQuorumTimerReset,
		AppendLeaderChange{Epoch: 4, LeaderID: 3, Voters: keys(1, 2, 3, 4, 5), GrantingVoters: keys(2, 3, 5)},
		SendBeginQuorumEpoch{To: keyOf(1), Epoch: 4, LeaderID: 3},
		SendBeginQuorumEpoch{To: keyOf(2), Epoch: 4, LeaderID: 3},
		SendBeginQuorumEpoch{To: keyOf(4), Epoch: 4, LeaderID: 3},
		SendBeginQuorumEpoch{To: keyOf(5), Epoch: 4, LeaderID: 3},
	}, acts)
}

// Voters with KIP-853 directory ids: a Vote response carries only the
// responder's node id, and it must still be counted (Kafka's EpochElection
// keys the tally by id).
// Reference: KafkaRaftClient.handleVoteResponse; EpochElection.recordVote.
func TestVoteResponsesCountForVotersWithDirectoryIDs(t *testing.T) {
	voters := []ReplicaKey{{ID: 1, DirectoryID: dirA}, {ID: 2, DirectoryID: dirB}, {ID: 3, DirectoryID: dirC}}
	s := asProspective(t, start(t, Config{Local: voters[0], Voters: voters, Seed: 5}))

	s, _ = step(t, s, grantVote(2, 0))
	requireState(t, s, Candidate, 1, NoNode, voters[0])
	next, acts := step(t, s, grantVote(3, 1))
	requireState(t, next, Leader, 1, 1, NoReplica)
	require.Equal(t, []AppendLeaderChange{{Epoch: 1, LeaderID: 1, Voters: voters, GrantingVoters: []ReplicaKey{voters[0], voters[2]}}},
		ofType[AppendLeaderChange](acts))
	require.Equal(t, []SendBeginQuorumEpoch{{To: voters[1], Epoch: 1, LeaderID: 1}, {To: voters[2], Epoch: 1, LeaderID: 1}},
		ofType[SendBeginQuorumEpoch](acts))
}

// A Prospective that can no longer reach a majority (granted + unanswered <
// majority) gives up at once: without a reachable leader it is Unattached
// in the same epoch, leader id and vote kept, with a fresh random election
// timer (the "lost by rejections" branch of Kafka's
// QuorumState.transitionToUnattached).
// Reference: KafkaRaftClient.maybeHandleElectionLoss,
// prospectiveTransitionAfterElectionLoss.
func TestProspectiveLosingPreVoteBecomesUnattachedWithFreshTimer(t *testing.T) {
	// Three voters: the second rejection loses.
	s := asProspective(t, start(t, config(1, 1, 2, 3)))
	s, acts := step(t, s, rejectVote(2, 0))
	require.Empty(t, acts)
	require.Equal(t, Prospective, s.Role())
	next, acts := step(t, s, rejectVote(3, 0))
	requireState(t, next, Unattached, 0, NoNode, NoReplica)
	requireActions(t, []Action{roleChanged(Prospective, Unattached, 0, NoNode), electionTimerReset(electionTimeoutAt(t, acts, 1))}, acts)

	// Five voters: the third rejection loses.
	s = asProspective(t, start(t, config(1, 1, 2, 3, 4, 5)))
	for _, e := range []ReceiveVoteResponse{rejectVote(2, 0), grantVote(3, 0), rejectVote(4, 0)} {
		s, acts = step(t, s, e)
		require.Empty(t, acts)
		require.Equal(t, Prospective, s.Role())
	}
	next, acts = step(t, s, rejectVote(5, 0))
	requireState(t, next, Unattached, 0, NoNode, NoReplica)
	requireActions(t, []Action{roleChanged(Prospective, Unattached, 0, NoNode), electionTimerReset(electionTimeoutAt(t, acts, 1))}, acts)

	// A known but unreachable leader id is kept.
	u, _ := restart(t, config(1, 1, 2, 3), QuorumRecord{Epoch: 3, LeaderID: 9, VotedKey: NoReplica}, LogState{End: voterLog})
	s = asProspective(t, u)
	s, _ = step(t, s, rejectVote(2, 3))
	next, acts = step(t, s, rejectVote(3, 3))
	requireState(t, next, Unattached, 3, 9, NoReplica)
	requireActions(t, []Action{roleChanged(Prospective, Unattached, 3, 9), electionTimerReset(electionTimeoutAt(t, acts, 1))}, acts)
}

// A Prospective that came from following a reachable leader and loses its
// pre-vote follows that leader again in the same epoch.
// Reference: KafkaRaftClient.maybeHandleElectionLoss,
// prospectiveTransitionAfterElectionLoss.
func TestProspectiveLosingPreVoteFollowsReachableLeaderAgain(t *testing.T) {
	s := asFetched(t, asFollower(t, start(t, config(1, 1, 2, 3)), 1, 2))
	s, _ = step(t, s, FetchTimeout{})
	requireState(t, s, Prospective, 1, 2, NoReplica)

	s, acts := step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, LeaderID: 2})
	require.Empty(t, acts)
	require.Equal(t, Prospective, s.Role())
	next, acts := step(t, s, ReceiveVoteResponse{From: 2, Epoch: 1, LeaderID: 2})

	requireState(t, next, Follower, 1, 2, NoReplica)
	requireActions(t, []Action{
		roleChanged(Prospective, Follower, 1, 2),
		StopTimer{Timer: ElectionTimer},
		fetchTimerReset,
		sentFetch(s, 2),
	}, acts)
}

// A Candidate that has lost (too many rejections) does nothing: no new
// epoch, no backoff, it waits for its election timer (KAFKA-18345). It
// never changes a verdict it recorded, so a late grant from a voter that
// rejected cannot make it Leader.
// Reference: KafkaRaftClient.maybeHandleElectionLoss, KAFKA-18345;
// CandidateState.recordGrantedVote (Kafka throws on a flip; kraft ignores it).
func TestCandidateLosingWaitsAndNeverFlipsAVerdict(t *testing.T) {
	s := asCandidate(t, start(t, config(1, 1, 2, 3)))
	for _, e := range []ReceiveVoteResponse{rejectVote(2, 1), rejectVote(3, 1), grantVote(2, 1), grantVote(3, 1)} {
		var acts []Action
		s, acts = step(t, s, e)
		require.Empty(t, acts, "%+v", e)
		requireState(t, s, Candidate, 1, NoNode, keyOf(1))
	}

	// Not lost yet: a flip from rejected to granted is ignored too.
	s = asCandidate(t, start(t, config(1, 1, 2, 3, 4, 5)))
	s, _ = step(t, s, rejectVote(2, 1))
	s, _ = step(t, s, grantVote(3, 1))
	next, acts := step(t, s, grantVote(2, 1))
	require.Empty(t, acts)
	require.Equal(t, s, next)
	next, _ = step(t, next, grantVote(4, 1))
	require.Equal(t, Leader, next.Role())
}

// A Prospective records the latest verdict of a voter (Kafka overwrites):
// a grant after a rejection from the same voter counts.
// Reference: ProspectiveState (records over an earlier verdict); docs/design.md,
// contract decision 2.
func TestProspectiveOverwritesAVerdict(t *testing.T) {
	s := asProspective(t, start(t, config(1, 1, 2, 3)))
	s, acts := step(t, s, rejectVote(2, 0))
	require.Empty(t, acts)
	next, _ := step(t, s, grantVote(2, 0))
	requireState(t, next, Candidate, 1, NoNode, keyOf(1))
}

// A repeated response is counted once, for a Prospective and a Candidate:
// the second grant from the same voter changes nothing.
// Reference: EpochElection.recordVote (returns false for a repeat).
func TestDuplicateVoteResponseIsCountedOnce(t *testing.T) {
	p := asProspective(t, start(t, config(1, 1, 2, 3, 4, 5)))
	p, _ = step(t, p, grantVote(2, 0))
	next, acts := step(t, p, grantVote(2, 0))
	require.Empty(t, acts)
	require.Equal(t, p, next)
	next, _ = step(t, next, grantVote(3, 0))
	require.Equal(t, Candidate, next.Role())

	c := asCandidate(t, start(t, config(1, 1, 2, 3, 4, 5)))
	c, _ = step(t, c, grantVote(2, 1))
	next, acts = step(t, c, grantVote(2, 1))
	require.Empty(t, acts)
	require.Equal(t, c, next)
	next, _ = step(t, next, grantVote(3, 1))
	require.Equal(t, Leader, next.Role())
}

// Responses from replicas outside the voter set, or carrying our own id,
// are not counted.
// Reference: EpochElection.getVoterStateOrThrow (Kafka throws; kraft ignores).
func TestVoteResponseFromNonVoterIsIgnored(t *testing.T) {
	for name, s := range map[string]State{
		"prospective": asProspective(t, start(t, config(1, 1, 2, 3))),
		"candidate":   asCandidate(t, start(t, config(1, 1, 2, 3))),
	} {
		for _, from := range []NodeID{9, 1, -1, 0} {
			next, acts := step(t, s, grantVote(from, s.Epoch()))
			require.Empty(t, acts, "%s from %d", name, from)
			require.Equal(t, s, next, "%s from %d", name, from)
			next, acts = step(t, s, rejectVote(from, s.Epoch()))
			require.Empty(t, acts, "%s from %d", name, from)
			require.Equal(t, s, next, "%s from %d", name, from)
		}
	}
}

// A voter that does not know Vote v2 answers UNSUPPORTED_VERSION; a
// Prospective then skips the pre-vote and becomes Candidate(E+1) at once. A
// Candidate ignores it.
// Reference: KafkaRaftClient.handleVoteResponse (UNSUPPORTED_VERSION while
// Prospective); docs/design.md D7.
func TestProspectiveBecomesCandidateOnUnsupportedVersion(t *testing.T) {
	s := asProspective(t, start(t, config(1, 1, 2, 3, 4, 5)))

	next, acts := step(t, s, ReceiveVoteResponse{From: 2, Error: ErrUnsupportedVersion, LeaderID: NoNode})

	requireState(t, next, Candidate, 1, NoNode, keyOf(1))
	requireActions(t, concat([]Action{
		Persist{Record: QuorumRecord{Epoch: 1, LeaderID: NoNode, VotedKey: keyOf(1)}},
		roleChanged(Prospective, Candidate, 1, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 2)),
	}, sentVoteRequests(next, false, keyOf(2), keyOf(3), keyOf(4), keyOf(5))), acts)

	for _, epoch := range []Epoch{0, 1} {
		after, acts := step(t, next, ReceiveVoteResponse{From: 3, Error: ErrUnsupportedVersion, Epoch: epoch, LeaderID: NoNode})
		require.Empty(t, acts)
		require.Equal(t, next, after)
	}
}

// KAFKA-16281: a Prospective ignores a Vote response that names itself the
// leader of its epoch (no Fault, and the vote is not counted).
// Reference: KAFKA-16281; KafkaRaftClient.handleVoteResponse.
func TestProspectiveIgnoresVoteResponseNamingItselfLeader(t *testing.T) {
	s := asProspective(t, unattachedAt(t, config(1, 1, 2, 3), 2))
	for _, granted := range []bool{true, false} {
		next, acts := step(t, s, ReceiveVoteResponse{From: 2, Epoch: 2, VoteGranted: granted, LeaderID: 1})
		require.Empty(t, acts)
		require.Equal(t, s, next)
	}
}

// A Vote response that names a second leader for our epoch, or names us
// leader when we are not (outside KAFKA-16281's Prospective case), proves
// the cluster inconsistent: a single Fault and the state unchanged.
// Reference: KafkaRaftClient.hasConsistentLeader; docs/design.md, contract
// decision 1, and D13.
func TestVoteResponseNamingSecondLeaderIsAFault(t *testing.T) {
	follower := asFollower(t, start(t, config(1, 1, 2, 3)), 1, 2)
	prospective, _ := step(t, follower, FetchTimeout{})
	requireState(t, prospective, Prospective, 1, 2, NoReplica)
	candidate := asCandidate(t, start(t, config(1, 1, 2, 3)))

	cases := []struct {
		name string
		s    State
		e    ReceiveVoteResponse
	}{
		{"prospective that knows another leader", prospective, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 3}},
		{"follower of another leader", follower, ReceiveVoteResponse{From: 3, Epoch: 1, LeaderID: 3}},
		{"candidate named leader", candidate, ReceiveVoteResponse{From: 2, Epoch: 1, VoteGranted: true, LeaderID: 1}},
		{"candidate named leader of a newer epoch", candidate, ReceiveVoteResponse{From: 2, Epoch: 3, LeaderID: 1}},
		{"fenced answer naming another leader of our epoch", prospective, ReceiveVoteResponse{From: 3, Error: ErrFencedLeaderEpoch, Epoch: 1, LeaderID: 3}},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			next, acts := step(t, tc.s, tc.e)
			requireFault(t, tc.s, next, acts)
		})
	}
}

// Roles that are not running an election ignore Vote responses of their
// epoch.
// Reference: KafkaRaftClient.handleVoteResponse (ignored unless a nominee).
func TestNonNomineesIgnoreVoteResponses(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	cases := []struct {
		name string
		s    State
		e    ReceiveVoteResponse
	}{
		{"leader", asLeader(t, start(t, cfg)), grantVote(2, 1)},
		{"leader named", asLeader(t, start(t, cfg)), ReceiveVoteResponse{From: 2, Epoch: 1, VoteGranted: true, LeaderID: 1}},
		{"follower", asFollower(t, start(t, cfg), 1, 2), ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 2}},
		{"unattached", unattachedAt(t, cfg, 1), grantVote(2, 1)},
		{"resigned", asResigned(t, start(t, cfg)), grantVote(2, 1)},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			next, acts := step(t, tc.s, tc.e)
			require.Empty(t, acts)
			require.Equal(t, tc.s, next)
		})
	}
}

// TestInvalidRequestNamingNewLeaderIsFollowedNotFatal: a Prospective of
// epoch 0 gets a Vote response {INVALID_REQUEST, epoch 0, leader 3}. Kafka's
// maybeHandleCommonResponse follows the newly named leader (persisting it
// and fetching) and returns before its INVALID_REQUEST check; the same
// answer naming no new leader stays fatal (D13).
func TestInvalidRequestNamingNewLeaderIsFollowedNotFatal(t *testing.T) {
	s := start(t, config(1, 1, 2, 3))
	s, _ = step(t, s, ElectionTimeout{})
	require.Equal(t, Prospective, s.Role())
	next, acts := step(t, s, ReceiveVoteResponse{From: 2, Error: ErrInvalidRequest, Epoch: 0, LeaderID: 3})
	require.Empty(t, ofType[Fault](acts))
	require.Equal(t, Follower, next.Role())
	require.Equal(t, NodeID(3), next.Leader())
	require.Equal(t, []Persist{{Record: QuorumRecord{Epoch: 0, LeaderID: 3, VotedKey: NoReplica}}}, ofType[Persist](acts))
	require.Len(t, ofType[SendFetch](acts), 1)
	_, acts = step(t, s, ReceiveVoteResponse{From: 2, Error: ErrInvalidRequest, Epoch: 0, LeaderID: NoNode})
	require.Equal(t, []Action{Fault{Reason: "a response says our request of the current epoch was invalid"}}, acts)
}

// TestResponseNamingNodeZeroLeaderIsFollowed: node 0 is a valid leader id
// (only negative ids mean "no leader"): a Prospective whose pre-vote is
// answered with leader 0 of its epoch follows node 0.
// Reference: KafkaRaftClient.maybeHandleCommonResponse; NodeID doc.
func TestResponseNamingNodeZeroLeaderIsFollowed(t *testing.T) {
	s := asProspective(t, start(t, config(1, 0, 1, 2)))
	next, acts := step(t, s, ReceiveVoteResponse{From: 2, Epoch: 0, VoteGranted: false, LeaderID: 0})
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 0, LeaderID: 0, VotedKey: NoReplica}},
		roleChanged(Prospective, Follower, 0, 0),
		StopTimer{Timer: ElectionTimer},
		fetchTimerReset,
		sentFetch(next, 0),
	}, acts)
	requireState(t, next, Follower, 0, 0, NoReplica)
}

// TestResponseNamingAnUnreachableLeaderIsFollowed: a replica that knows
// its epoch's leader by id only (restarted from a record naming a leader
// its voter set lacks: Unattached with a leader, no endpoints, as Kafka
// keeps it) campaigns; a vote answer naming that leader makes it follow,
// as a request naming it would (reconcile). Kafka's responses carry the
// leader's endpoints (KIP-853's NodeEndpoints); without this a voter removed
// while it was down stays Unattached for good. Reference: docs/design.md D94.
func TestResponseNamingAnUnreachableLeaderIsFollowed(t *testing.T) {
	cfg := config(2, 1, 2, 4)
	s, _ := restart(t, cfg, QuorumRecord{Epoch: 2, LeaderID: 3, VotedKey: NoReplica}, LogState{})
	require.Equal(t, Unattached, s.Role())
	require.Equal(t, NodeID(3), s.Leader())
	s, _ = step(t, s, ElectionTimeout{})
	require.Equal(t, Prospective, s.Role())
	s, acts := step(t, s, ReceiveVoteResponse{From: 1, Epoch: 2, VoteGranted: false, LeaderID: 3})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, NodeID(3), s.Leader())
	require.Len(t, ofType[SendFetch](acts), 1, "it fetches from the leader")
}
