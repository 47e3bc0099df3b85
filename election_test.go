package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Election scenario tests: the election timer (Kafka's poll* methods), epochs
// without a leader, timer ownership and whole elections on
// the testCluster host. Vote requests and responses are in vote_test.go.
//
// Every state is built by stepping real events from NewState; the helpers
// in helpers_test.go do that and check each step lands where it should.

// ---------------------------------------------------------------------------
// ElectionTimeout (Kafka's pollUnattached, pollProspective, pollCandidate,
// pollResigned)

// An Unattached voter whose election timer fires starts a pre-vote in its
// current epoch: memory only (no Persist), leader and vote kept, a fresh
// random timer, and a pre-vote to every other voter carrying the cluster id,
// its current (not bumped) epoch, its key and its log end, addressed to the
// voter's full key.
// Reference: KafkaRaftClient.pollUnattachedAsVoter, maybeSendVoteRequests,
// QuorumState.transitionToProspective, buildVoteRequest.
func TestUnattachedVoterBecomesProspectiveOnElectionTimeout(t *testing.T) {
	cfg := Config{
		Local:     ReplicaKey{ID: 1, DirectoryID: dirA},
		ClusterID: testClusterID,
		Voters:    []ReplicaKey{{ID: 1, DirectoryID: dirA}, {ID: 2, DirectoryID: dirB}, {ID: 3}},
		Seed:      7,
	}
	s := unattachedWithLog(t, cfg, 3, LogEnd{Offset: 10, Epoch: 2})

	next, acts := step(t, s, ElectionTimeout{})

	requireState(t, next, Prospective, 3, NoNode, NoReplica)
	requireActions(t, []Action{
		roleChanged(Unattached, Prospective, 3, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 1)),
		SendVoteRequest{
			To: ReplicaKey{ID: 2, DirectoryID: dirB}, ClusterID: testClusterID, CandidateEpoch: 3,
			Candidate: ReplicaKey{ID: 1, DirectoryID: dirA}, CandidateLogEnd: LogEnd{Offset: 10, Epoch: 2}, PreVote: true,
		},
		SendVoteRequest{
			To: ReplicaKey{ID: 3}, ClusterID: testClusterID, CandidateEpoch: 3,
			Candidate: ReplicaKey{ID: 1, DirectoryID: dirA}, CandidateLogEnd: LogEnd{Offset: 10, Epoch: 2}, PreVote: true,
		},
	}, acts)
	require.Empty(t, ofType[Persist](acts), "entering Prospective is memory only")
}

// A voter that granted a standard vote keeps it when it starts its own
// pre-vote in the same epoch (the vote binds it for the whole epoch).
// Reference: QuorumState.transitionToProspective (keeps the vote; one
// standard vote per epoch).
func TestUnattachedVoterKeepsItsVoteWhenBecomingProspective(t *testing.T) {
	s := unattachedWithLog(t, config(1, 1, 2, 3), 3, LogEnd{Offset: 10, Epoch: 2})
	s, _ = step(t, s, ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: 3, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 10, Epoch: 2}})
	requireState(t, s, Unattached, 3, NoNode, keyOf(2))

	next, acts := step(t, s, ElectionTimeout{})

	requireState(t, next, Prospective, 3, NoNode, keyOf(2))
	requireActions(t, concat([]Action{
		roleChanged(Unattached, Prospective, 3, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 1)),
	}, sentVoteRequests(s, true, keyOf(2), keyOf(3))), acts)
}

// An observer never starts an election; its Unattached state has no
// election timer, and a stray ElectionTimeout changes nothing.
// Reference: QuorumState.transitionToUnattached (an observer's election
// timer is infinite).
func TestUnattachedObserverIgnoresElectionTimeout(t *testing.T) {
	s := start(t, observerConfig(7, 1, 2, 3))
	requireState(t, s, Unattached, 0, NoNode, NoReplica)

	next, acts := step(t, s, ElectionTimeout{})

	require.Empty(t, acts)
	require.Equal(t, s, next)
}

// A Prospective whose pre-vote timed out and that knows a reachable leader
// goes back to following it in the same epoch, with a fresh Follower (fetch
// timer T_f, first fetch at once, hasFetchedFromLeader cleared so it grants
// pre-votes again). The record does not change, so nothing is rewritten.
// Reference: KafkaRaftClient.pollProspective, prospectiveTransitionAfterElectionLoss.
func TestProspectiveTimeoutFollowsReachableLeader(t *testing.T) {
	s := asFetched(t, asFollower(t, start(t, config(1, 1, 2, 3)), 1, 2))
	s, _ = step(t, s, FetchTimeout{})
	requireState(t, s, Prospective, 1, 2, NoReplica)

	next, acts := step(t, s, ElectionTimeout{})

	requireState(t, next, Follower, 1, 2, NoReplica)
	requireActions(t, []Action{
		roleChanged(Prospective, Follower, 1, 2),
		StopTimer{Timer: ElectionTimer},
		fetchTimerReset,
		sentFetch(s, 2),
	}, acts)

	// A new FollowerState has not fetched yet: it grants an up-to-date pre-vote.
	_, acts = step(t, next, ReceiveVoteRequest{From: 3, VoterID: NoNode, CandidateEpoch: 1, Candidate: 3, PreVote: true})
	require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 1, LeaderID: 2, VoteGranted: true}}, acts)
}

// A Prospective whose pre-vote timed out without a reachable leader becomes
// Unattached in the same epoch, keeping the leader id and the vote, with an
// election timer of 0 (the Prospective's remaining time), so it campaigns
// again at once.
// Reference: QuorumState.transitionToUnattached (a Prospective hands over its
// remaining time, 0 at expiry); KafkaRaftClient.pollProspective; D2.
func TestProspectiveTimeoutWithoutReachableLeaderBecomesUnattached(t *testing.T) {
	log := LogEnd{Offset: 10, Epoch: 2}
	cfg := config(1, 1, 2, 3)
	voted := unattachedWithLog(t, cfg, 3, log)
	voted, _ = step(t, voted, ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: 3, Candidate: 2, CandidateLogEnd: log})
	// Node 9 led epoch 3 but is not in our voter set: its id is known, its
	// endpoints are not.
	withLeader, _ := restart(t, cfg, QuorumRecord{Epoch: 3, LeaderID: 9, VotedKey: NoReplica}, LogState{End: log})
	requireState(t, withLeader, Unattached, 3, 9, NoReplica)

	cases := []struct {
		name   string
		s      State
		leader NodeID
		voted  ReplicaKey
	}{
		{"no leader, no vote", unattachedWithLog(t, cfg, 3, log), NoNode, NoReplica},
		{"with vote", voted, NoNode, keyOf(2)},
		{"with unreachable leader id", withLeader, 9, NoReplica},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			p := asProspective(t, tc.s)
			requireState(t, p, Prospective, 3, tc.leader, tc.voted)

			next, acts := step(t, p, ElectionTimeout{})

			requireState(t, next, Unattached, 3, tc.leader, tc.voted)
			requireActions(t, []Action{
				roleChanged(Prospective, Unattached, 3, tc.leader),
				electionTimerReset(0),
			}, acts)
		})
	}
}

// A Candidate whose election timer fires goes back to a pre-vote in the
// same epoch (no backoff, no new epoch since KAFKA-18345), memory only: the
// record still says it voted for itself.
// Reference: KafkaRaftClient.pollCandidate; KAFKA-18345.
func TestCandidateTimeoutBecomesProspectiveInSameEpoch(t *testing.T) {
	s := asCandidate(t, start(t, config(1, 1, 2, 3)))
	requireState(t, s, Candidate, 1, NoNode, keyOf(1))

	next, acts := step(t, s, ElectionTimeout{})

	requireState(t, next, Prospective, 1, NoNode, keyOf(1))
	requireActions(t, concat([]Action{
		roleChanged(Candidate, Prospective, 1, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 1)),
	}, sentVoteRequests(s, true, keyOf(2), keyOf(3))), acts)
	require.Equal(t, Epoch(1), ofType[SendVoteRequest](acts)[0].CandidateEpoch, "a pre-vote asks in the current epoch")
}

// A Resigned leader whose election timer fires moves to Unattached(E+1),
// persisted, with an election timer of 0 so that it starts a pre-vote in
// E+1 at once.
// Reference: KafkaRaftClient.pollResigned; QuorumState.transitionToUnattached
// (a Resigned replica hands over its remaining time).
func TestResignedTimeoutBecomesUnattachedInNextEpoch(t *testing.T) {
	s := asResigned(t, start(t, config(1, 1, 2, 3)))
	requireState(t, s, Resigned, 1, 1, NoReplica)

	next, acts := step(t, s, ElectionTimeout{})

	requireState(t, next, Unattached, 2, NoNode, NoReplica)
	requireActions(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 2, LeaderID: NoNode, VotedKey: NoReplica}},
		roleChanged(Resigned, Unattached, 2, NoNode),
		electionTimerReset(0),
	}, acts)

	// And the next expiry starts the pre-vote of epoch 2.
	next, _ = step(t, next, ElectionTimeout{})
	requireState(t, next, Prospective, 2, NoNode, NoReplica)
}

// Leaders and Followers own no election timer; a stray ElectionTimeout is
// ignored.
// Reference: the README's host contract, rule 2 (Step ignores a timeout the
// current role does not own).
func TestLeaderAndFollowerIgnoreElectionTimeout(t *testing.T) {
	cases := map[string]State{
		"leader":            asLeader(t, start(t, config(1, 1, 2, 3))),
		"follower":          asFollower(t, start(t, config(1, 1, 2, 3)), 1, 2),
		"observer follower": asFollower(t, start(t, observerConfig(7, 1, 2, 3)), 1, 2),
	}
	for name, s := range cases {
		s := s
		t.Run(name, func(t *testing.T) {
			next, acts := step(t, s, ElectionTimeout{})
			require.Empty(t, acts)
			require.Equal(t, s, next)
		})
	}
}

// The only voter elects itself at once: at start (Kafka's initialize) and
// whenever it finds itself Unattached and its election timer fires, it goes
// Prospective -> Candidate(E+1) -> Leader in one step, with nobody to ask.
// Reference: KafkaRaftClient.initialize, pollUnattachedAsVoter,
// onBecomeProspective, QuorumState.transitionToCandidate (the tally is already
// granted).
func TestSingleVoterElectsItselfAtOnce(t *testing.T) {
	cfg := config(1, 1)
	s, acts, err := NewState(cfg, nil, LogState{})
	require.NoError(t, err)

	requireState(t, s, Leader, 1, 1, NoReplica)
	requireActions(t, []Action{
		// Nothing is sent before the leader's record is written, so the
		// written-back record, the self-vote and the leadership are one
		// Persist (D1).
		Persist{Record: QuorumRecord{Epoch: 1, LeaderID: 1, VotedKey: NoReplica}},
		roleChanged(Unattached, Prospective, 0, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 2)),
		roleChanged(Prospective, Candidate, 1, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 4)),
		roleChanged(Candidate, Leader, 1, 1),
		StopTimer{Timer: ElectionTimer},
		AppendLeaderChange{Epoch: 1, LeaderID: 1, Voters: keys(1), GrantingVoters: keys(1)},
	}, acts)

	// Pushed out of its epoch, it is Unattached; its timer elects it again.
	s, _ = step(t, s, ReceiveLeaderlessEpoch{From: 2, Epoch: 3})
	requireState(t, s, Unattached, 3, NoNode, NoReplica)

	next, acts := step(t, s, ElectionTimeout{})

	requireState(t, next, Leader, 4, 1, NoReplica)
	requireActions(t, []Action{
		roleChanged(Unattached, Prospective, 3, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 1)),
		Persist{Record: QuorumRecord{Epoch: 4, LeaderID: 1, VotedKey: NoReplica}},
		roleChanged(Prospective, Candidate, 4, NoNode),
		electionTimerReset(electionTimeoutAt(t, acts, 4)),
		roleChanged(Candidate, Leader, 4, 1),
		StopTimer{Timer: ElectionTimer},
		AppendLeaderChange{Epoch: 4, LeaderID: 1, Voters: keys(1), GrantingVoters: keys(1)},
	}, acts)
}

// ---------------------------------------------------------------------------
// ReceiveLeaderlessEpoch (Kafka's maybeHandleCommonResponse,
// QuorumState.transitionToUnattached)

// Every role moves to Unattached(E') without leader or vote, persisted, when
// a response reports a newer epoch without a leader. The election timer
// follows Kafka's transitionToUnattached: Unattached, Prospective (not
// lost), Candidate and Resigned hand over their running timer (no ResetTimer), Followers and
// Leaders draw a fresh random one and stop the timers they owned; observers
// search for the leader with a fetch timer and a bootstrap Fetch.
// Reference: KafkaRaftClient.maybeHandleCommonResponse;
// QuorumState.transitionToUnattached.
func TestLeaderlessEpochMakesEveryRoleUnattached(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	obs := observerConfig(7, 1, 2, 3)
	persist := Persist{Record: QuorumRecord{Epoch: 5, LeaderID: NoNode, VotedKey: NoReplica}}

	cases := []struct {
		name string
		s    State
		want func(t *testing.T, acts []Action) []Action
	}{
		{"unattached", start(t, cfg), func(*testing.T, []Action) []Action {
			return []Action{persist, roleChanged(Unattached, Unattached, 5, NoNode)}
		}},
		{"unattached with vote", unattachedVotedFor(t, cfg, 2), func(*testing.T, []Action) []Action {
			return []Action{persist, roleChanged(Unattached, Unattached, 5, NoNode)}
		}},
		{"prospective", asProspective(t, start(t, cfg)), func(*testing.T, []Action) []Action {
			return []Action{persist, roleChanged(Prospective, Unattached, 5, NoNode)}
		}},
		{"candidate", asCandidate(t, start(t, cfg)), func(*testing.T, []Action) []Action {
			return []Action{persist, roleChanged(Candidate, Unattached, 5, NoNode)}
		}},
		{"resigned", asResigned(t, start(t, cfg)), func(*testing.T, []Action) []Action {
			return []Action{persist, roleChanged(Resigned, Unattached, 5, NoNode)}
		}},
		{"follower", asFetched(t, asFollower(t, start(t, cfg), 1, 2)), func(t *testing.T, acts []Action) []Action {
			return []Action{
				persist, roleChanged(Follower, Unattached, 5, NoNode),
				StopTimer{Timer: FetchTimer},
				electionTimerReset(electionTimeoutAt(t, acts, 3)),
			}
		}},
		{"leader", asLeader(t, start(t, cfg)), func(t *testing.T, acts []Action) []Action {
			return []Action{
				persist, roleChanged(Leader, Unattached, 5, NoNode),
				StopTimer{Timer: CheckQuorumTimer},
				StopTimer{Timer: BeginQuorumEpochTimer},
				electionTimerReset(electionTimeoutAt(t, acts, 4)),
			}
		}},
		{"observer unattached", start(t, obs), func(*testing.T, []Action) []Action {
			return []Action{
				persist, roleChanged(Unattached, Unattached, 5, NoNode), fetchTimerReset,
				SendFetch{To: NoNode, CurrentLeaderEpoch: 5, HighWatermark: -1},
			}
		}},
		{"observer follower", asFollower(t, start(t, obs), 1, 2), func(*testing.T, []Action) []Action {
			return []Action{
				persist, roleChanged(Follower, Unattached, 5, NoNode), fetchTimerReset,
				SendFetch{To: NoNode, CurrentLeaderEpoch: 5, HighWatermark: -1},
			}
		}},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			require.Less(t, tc.s.Epoch(), Epoch(5))

			next, acts := step(t, tc.s, ReceiveLeaderlessEpoch{From: 3, Epoch: 5})

			requireState(t, next, Unattached, 5, NoNode, NoReplica)
			requireActions(t, tc.want(t, acts), acts)
		})
	}
}

// unattachedVotedFor is an Unattached(1) voter that granted its standard
// vote to cand.
func unattachedVotedFor(t *testing.T, cfg Config, cand NodeID) State {
	t.Helper()
	s, _ := step(t, start(t, cfg), ReceiveVoteRequest{From: cand, VoterID: NoNode, CandidateEpoch: 1, Candidate: cand})
	requireState(t, s, Unattached, 1, NoNode, keyOf(cand))
	return s
}

// A leaderless epoch that is not newer than ours is stale: ignored by every
// role.
// Reference: KafkaRaftClient.maybeHandleCommonResponse (an older epoch is stale).
func TestLeaderlessEpochNotNewerIsIgnored(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	states := map[string]State{
		"unattached": unattachedAt(t, cfg, 2),
		"candidate":  asCandidate(t, unattachedAt(t, cfg, 1)),
		"leader":     asLeader(t, unattachedAt(t, cfg, 1)),
		"follower":   asFollower(t, start(t, cfg), 2, 3),
	}
	for name, s := range states {
		s := s
		t.Run(name, func(t *testing.T) {
			require.Equal(t, Epoch(2), s.Epoch())
			for _, e := range []Epoch{0, 1, 2} {
				next, acts := step(t, s, ReceiveLeaderlessEpoch{From: 3, Epoch: e})
				require.Empty(t, acts, "epoch %d", e)
				require.Equal(t, s, next, "epoch %d", e)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Timers owned per role (the README's host contract, rule 2)

// ownedTimers is the set of timers each role owns (as in Kafka's state
// classes): an Unattached voter, a Prospective, a Candidate and a Resigned
// leader the election timer; a Follower and an Unattached observer the fetch
// timer; a Leader check-quorum and BeginQuorumEpoch.
func ownedTimers(role Role, voter bool) map[Timer]bool {
	switch role {
	case Unattached:
		if voter {
			return map[Timer]bool{ElectionTimer: true}
		}
		return map[Timer]bool{FetchTimer: true}
	case Prospective, Candidate, Resigned:
		return map[Timer]bool{ElectionTimer: true}
	case Follower:
		return map[Timer]bool{FetchTimer: true}
	case Leader:
		return map[Timer]bool{CheckQuorumTimer: true, BeginQuorumEpochTimer: true}
	}
	return nil
}

// timerSet tracks which timers a host has armed, applying ResetTimer and
// StopTimer as the host contract says.
type timerSet map[Timer]bool

func (m timerSet) apply(acts []Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case ResetTimer:
			m[a.Timer] = true
		case StopTimer:
			delete(m, a.Timer)
		}
	}
}

// Across a long run of role changes, the timers a host has armed are
// exactly the timers the current role owns: every role change stops the
// timers the new role does not own and arms the ones it does.
// Reference: the timers of Kafka's UnattachedState, ProspectiveState,
// CandidateState, LeaderState, FollowerState, ResignedState; the README's host
// contract, rule 2.
func TestRoleChangeStopsEveryTimerTheNewRoleDoesNotOwn(t *testing.T) {
	run := func(t *testing.T, cfg Config, events []Event, wantRoles []Role) {
		t.Helper()
		s, acts, err := NewState(cfg, nil, LogState{})
		require.NoError(t, err)
		armed := timerSet{}
		armed.apply(acts)
		require.Equal(t, ownedTimers(s.Role(), s.IsVoter()), map[Timer]bool(armed))
		for i, e := range events {
			s, acts = step(t, s, e)
			armed.apply(acts)
			require.Equal(t, wantRoles[i], s.Role(), "after event %d %T: %v", i, e, s)
			require.Equal(t, ownedTimers(s.Role(), s.IsVoter()), map[Timer]bool(armed),
				"after event %d %T: %v, actions %+v", i, e, s, acts)
		}
	}
	t.Run("voter", func(t *testing.T) {
		grant := func(from NodeID, epoch Epoch) Event {
			return ReceiveVoteResponse{From: from, Epoch: epoch, VoteGranted: true, LeaderID: NoNode}
		}
		run(t, config(1, 1, 2, 3), []Event{
			ElectionTimeout{}, // U -> P
			grant(2, 0),       // P -> C(1)
			grant(3, 1),       // C -> L(1)
			ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2, VoterID: NoNode}, // L -> F(2)
			FetchTimeout{},    // F -> P(2)
			ElectionTimeout{}, // P -> F(2)
			ReceiveLeaderlessEpoch{From: 2, Epoch: 3}, // F -> U(3)
			ElectionTimeout{},                         // U -> P(3)
			grant(2, 3),                               // P -> C(4)
			ElectionTimeout{},                         // C -> P(4)
			grant(3, 4),                               // P -> C(5)
			grant(2, 5),                               // C -> L(5)
			Resign{},                                  // L -> R(5)
			ReceiveVoteRequest{From: 2, VoterID: NoNode, CandidateEpoch: 7, Candidate: 2},  // R -> U(7)
			ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 7, VoterID: NoNode}, // U -> F(7)
			ReceiveVoteResponse{From: 3, Epoch: 9, LeaderID: 3},                            // F -> F(9)
			ReceiveLeaderlessEpoch{From: 3, Epoch: 10},                                     // F -> U(10)
			ElectionTimeout{}, // U -> P(10)
			grant(2, 10),      // P -> C(11)
			ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 11, VoterID: NoNode}, // C -> F(11)
			CheckQuorumTimeout{}, // ignored
		}, []Role{
			Prospective, Candidate, Leader, Follower, Prospective, Follower, Unattached, Prospective,
			Candidate, Prospective, Candidate, Leader, Resigned, Unattached, Follower, Follower, Unattached,
			Prospective, Candidate, Follower, Follower,
		})
	})
	t.Run("observer", func(t *testing.T) {
		run(t, observerConfig(7, 1, 2, 3), []Event{
			ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: NoNode}, // U -> F(1)
			FetchTimeout{}, // F -> U(1)
			ReceiveLeaderlessEpoch{From: 2, Epoch: 2},           // U -> U(2)
			ReceiveVoteResponse{From: 3, Epoch: 3, LeaderID: 3}, // U -> F(3)
			ElectionTimeout{}, // ignored
		}, []Role{Follower, Unattached, Unattached, Follower, Follower})
	})
}

// ---------------------------------------------------------------------------
// Whole elections on the synchronous test host

// checkElected asserts that the cluster has exactly one leader, in epoch,
// and that every other node follows it, has persisted that, fetches from it
// (only the fetch timer armed) and holds the leader's log.
func checkElected(t *testing.T, c *testCluster, leader NodeID, epoch Epoch) {
	t.Helper()
	require.Empty(t, c.faults)
	require.Equal(t, []NodeID{leader}, c.leaders())
	require.Equal(t, QuorumRecord{Epoch: epoch, LeaderID: leader, VotedKey: NoReplica}, c.record[leader])
	require.Equal(t, map[Timer]bool{CheckQuorumTimer: true, BeginQuorumEpochTimer: true}, c.timers[leader])
	require.Equal(t, []Epoch{epoch}, c.logs[leader], "the leader's LeaderChange record")
	for _, id := range c.ids {
		s := c.states[id]
		require.Equal(t, epoch, s.Epoch(), "node %d: %v", id, s)
		if id == leader {
			continue
		}
		require.Equal(t, Follower, s.Role(), "node %d: %v", id, s)
		require.Equal(t, leader, s.Leader(), "node %d", id)
		require.Equal(t, s.Record(), c.record[id], "node %d: persisted record", id)
		require.Equal(t, leader, c.record[id].LeaderID, "node %d", id)
		require.Equal(t, map[Timer]bool{FetchTimer: true}, c.timers[id], "node %d", id)
		require.Equal(t, c.logs[leader], c.logs[id], "node %d: log", id)
	}
}

// Three voters, one election timer fires: pre-vote, vote, BeginQuorumEpoch,
// first fetch. One leader in epoch 1, every other voter follows it and
// remembers its vote for it; the first record commits.
// Reference: KIP-595, KIP-996 (a cold start of three voters).
func TestThreeVoterElectionEndsWithOneLeaderAndAttachedFollowers(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.fire(2, ElectionTimeout{})

	checkElected(t, c, 2, 1)
	for _, id := range []NodeID{1, 3} {
		require.Equal(t, QuorumRecord{Epoch: 1, LeaderID: 2, VotedKey: keyOf(2)}, c.record[id], "node %d voted for 2", id)
	}
	c.appendAt(2, 2)
	require.Equal(t, int64(3), c.states[2].HighWatermark())
	for _, id := range []NodeID{1, 3} {
		require.Equal(t, c.logs[2], c.logs[id])
	}
}

// Five voters: the candidate needs two other voters for each round; it ends
// with one leader and four attached followers.
// Reference: EpochElection.majoritySize (3 of 5).
func TestFiveVoterElectionEndsWithOneLeaderAndAttachedFollowers(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3, 4, 5)
	c.fire(4, ElectionTimeout{})

	checkElected(t, c, 4, 1)
	c.appendAt(4, 1)
	require.Equal(t, int64(2), c.states[4].HighWatermark())
}

// Five voters with two of them down: the other three still elect a leader
// (a majority), and the two come back as followers through a later
// BeginQuorumEpoch re-send.
// Reference: EpochElection.majoritySize;
// KafkaRaftClient.maybeSendBeginQuorumEpochRequests.
func TestFiveVoterElectionWithTwoVotersDown(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3, 4, 5)
	c.down[4], c.down[5] = true, true
	c.fire(1, ElectionTimeout{})
	require.Equal(t, []NodeID{1}, c.leaders())
	require.Equal(t, Unattached, c.states[4].Role())

	c.down[4], c.down[5] = false, false
	c.fire(1, BeginQuorumEpochTimeout{})
	checkElected(t, c, 1, 1)
}

// Two voters time out together: both win their pre-votes and become
// Candidates of epoch 1; each voter grants one standard vote per epoch, so
// exactly one wins, and the loser waits as Candidate until the winner's
// BeginQuorumEpoch makes it a follower.
// Reference: EpochState.canGrantVote (one standard vote per epoch);
// hasConsistentLeader (one leader per epoch).
func TestConcurrentCandidatesEndWithOneLeader(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.stepNode(1, ElectionTimeout{})
	c.stepNode(2, ElectionTimeout{})
	c.deliverAll()

	checkElected(t, c, 1, 1)
	// Node 2 voted for itself in epoch 1 and keeps that vote as a follower.
	require.Equal(t, QuorumRecord{Epoch: 1, LeaderID: 1, VotedKey: keyOf(2)}, c.record[2])
	require.Equal(t, QuorumRecord{Epoch: 1, LeaderID: 1, VotedKey: keyOf(1)}, c.record[3])
}

// deliverDropping is testCluster.deliverAll that also drops the messages
// drop selects.
func deliverDropping(c *testCluster, drop func(m envelope) bool) {
	c.t.Helper()
	for i := 0; len(c.queue) > 0; i++ {
		require.Less(c.t, i, 10000, "message storm")
		m := c.queue[0]
		c.queue = c.queue[1:]
		if drop(m) || c.down[m.from] || c.down[m.to] {
			continue
		}
		if m.records != nil || m.fetchAt >= 0 {
			if !c.appendFetched(m) {
				continue
			}
		}
		c.stepNode(m.to, m.event)
	}
}

// A voter that voted in the election but missed the winner's
// BeginQuorumEpoch is Unattached in the new epoch without a leader. When its
// timer fires it runs a pre-vote; the first answer names the leader of its
// epoch, so it follows that leader at once (and ignores the vote itself).
// Reference: KafkaRaftClient.maybeHandleCommonResponse; ReceiveVoteResponse.LeaderID;
// KafkaRaftClientPreVoteTest.testProspectiveWithoutLeaderTransitionsToFollower.
func TestProspectiveThatMissedBeginQuorumEpochLearnsLeaderFromVoteResponse(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.stepNode(1, ElectionTimeout{})
	deliverDropping(c, func(m envelope) bool {
		_, begin := m.event.(ReceiveBeginQuorumEpoch)
		return begin && m.to == 3
	})
	require.Equal(t, []NodeID{1}, c.leaders())
	requireState(t, c.states[3], Unattached, 1, NoNode, keyOf(1))

	c.stepNode(3, ElectionTimeout{})
	requireState(t, c.states[3], Prospective, 1, NoNode, keyOf(1))
	c.deliverAll()

	checkElected(t, c, 1, 1)
	require.Equal(t, QuorumRecord{Epoch: 1, LeaderID: 1, VotedKey: keyOf(1)}, c.record[3])
}

// A voter that was down for a whole election runs a pre-vote in the old
// epoch when it comes back; the answers carry the newer epoch and its
// leader, so it follows that leader instead of disturbing it.
// Reference: KafkaRaftClient.maybeHandleCommonResponse, maybeTransition (a newer
// epoch with a leader).
func TestProspectiveBehindLearnsLeaderFromNewerVoteResponse(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.down[3] = true
	c.fire(1, ElectionTimeout{})
	require.Equal(t, []NodeID{1}, c.leaders())
	requireState(t, c.states[3], Unattached, 0, NoNode, NoReplica)

	c.down[3] = false
	c.fire(3, ElectionTimeout{})

	checkElected(t, c, 1, 1)
	require.Equal(t, QuorumRecord{Epoch: 1, LeaderID: 1, VotedKey: NoReplica}, c.record[3])
}
