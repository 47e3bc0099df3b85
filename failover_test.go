package kraft

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Tests of kraft's failover refinements over Kafka (docs/design.md D59),
// on by default and off with Config.KafkaFailover. The scenario tests of
// the other files use KafkaFailover (config) and check Kafka's exact rules.

// failoverConfig is config with kraft's failover refinements on.
func failoverConfig(local NodeID, voters ...NodeID) Config {
	c := config(local, voters...)
	c.KafkaFailover = false
	return c
}

// failoverFollower is voter local of 1, 2, 3, Follower of 1 in epoch 1, with
// the log 2@1 (the LeaderChange and one record), having fetched.
func failoverFollower(t *testing.T, cfg Config) (State, []Action) {
	t.Helper()
	s := start(t, cfg)
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: cfg.Local.ID})
	s, _ = durable(t, s, LogEnd{Offset: 2, Epoch: 1})
	return step(t, s, fetchOK(1, 1, 2))
}

// fetchTimer returns the one ResetTimer of the fetch timer in acts.
func fetchTimer(t *testing.T, acts []Action) ResetTimer {
	t.Helper()
	var found []ResetTimer
	for _, a := range ofType[ResetTimer](acts) {
		if a.Timer == FetchTimer {
			found = append(found, a)
		}
	}
	require.Len(t, found, 1, "%v", acts)
	return found[0]
}

// TestFollowerFetchTimeoutFollowsRank: a voter Follower's fetch timer is
// T_f plus T_e/64 for each voter with a lower replica key, at most two
// (D59), kept for the role; on a leader's crash the survivors time out in
// the order in which they rank on equal logs. With KafkaFailover, and for
// observers, it is exactly T_f, as in Kafka.
// TestFollowerFetchTimeoutFollowsRank: a voter Follower's fetch timer runs
// T_f; once it fires with the leader silent, the Follower grants pre-votes
// and campaigns after its rank's offset among the voters but the leader
// (D59, D78), unless it is first.
func TestFollowerFetchTimeoutFollowsRank(t *testing.T) {
	step64 := testTe / 64
	for _, c := range []struct {
		local, leader NodeID
		voters        []NodeID
		wait          time.Duration // 0: campaigns at T_f
	}{
		// The leader (1) is left out of the rank.
		{2, 1, []NodeID{1, 2, 3}, 0},
		{3, 1, []NodeID{1, 2, 3}, step64},
		{3, 1, []NodeID{3, 1, 2}, step64}, // by key, not by place in the set
		{5, 1, []NodeID{1, 2, 3, 4, 5}, 2 * step64},
		// A leader ranked after the replica changes nothing.
		{2, 3, []NodeID{1, 2, 3}, step64},
		{1, 3, []NodeID{1, 2, 3}, 0},
	} {
		what := fmt.Sprintf("voter %d of %v, leader %d", c.local, c.voters, c.leader)
		cfg := failoverConfig(c.local, c.voters...)
		s := start(t, cfg)
		s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: c.leader, LeaderID: c.leader, LeaderEpoch: 1, VoterID: cfg.Local.ID})
		s, _ = durable(t, s, LogEnd{Offset: 2, Epoch: 1})
		s, acts := step(t, s, fetchOK(c.leader, 1, 2))
		require.Equal(t, ResetTimer{Timer: FetchTimer, After: testTf}, fetchTimer(t, acts), what)
		s, acts = step(t, s, FetchTimeout{})
		if c.wait == 0 {
			require.Equal(t, Prospective, s.Role(), what)
			continue
		}
		require.Equal(t, Follower, s.Role(), what)
		require.Equal(t, ResetTimer{Timer: FetchTimer, After: c.wait}, fetchTimer(t, acts), what)
		// The leader is silent: pre-votes are granted now (KIP-996 rejects
		// them only while it is heard from).
		other := c.voters[0]
		for _, v := range c.voters {
			if v != c.local && v != c.leader {
				other = v
				break
			}
		}
		_, acts = step(t, s, preVoteRequest(other, 1, LogEnd{Offset: 3, Epoch: 1}))
		require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted, what)
		// A fetch in the wait: the leader is back, and the wait is over.
		back, acts := step(t, s, fetchOK(c.leader, 1, 2))
		require.Equal(t, ResetTimer{Timer: FetchTimer, After: testTf}, fetchTimer(t, acts), what)
		_, acts = step(t, back, preVoteRequest(other, 1, LogEnd{Offset: 3, Epoch: 1}))
		require.False(t, ofType[SendVoteResponse](acts)[0].VoteGranted, what)
		s, _ = step(t, s, FetchTimeout{})
		require.Equal(t, Prospective, s.Role(), what)
	}

	_, acts := failoverFollower(t, config(2, 1, 2, 3))
	require.Equal(t, ResetTimer{Timer: FetchTimer, After: testTf}, fetchTimer(t, acts))

	o := observerConfig(4, 1, 2, 3)
	s := start(t, o)
	_, acts = step(t, s, fetchOK(1, 1, -1))
	require.Equal(t, ResetTimer{Timer: FetchTimer, After: testTf}, fetchTimer(t, acts))
}

// failoverProspective is voter 2 of 1, 2, 3 with log 2@1 after its leader 1
// died: Prospective in epoch 1, pre-votes sent to 1 and 3.
func failoverProspective(t *testing.T, cfg Config) State {
	t.Helper()
	s, _ := failoverFollower(t, cfg)
	s, acts := step(t, s, FetchTimeout{})
	require.Equal(t, Prospective, s.Role())
	require.Len(t, ofType[SendVoteRequest](acts), 2)
	return s
}

// TestProspectiveAsksAgainWhenALowerRankedPeerCampaigns: voter 3, still a
// Follower that has fetched, rejects 2's pre-vote (KIP-996). When 3
// campaigns itself, ranking below 2 (a log behind, or the same log and a
// higher key), 2 rejects it and asks 3 again; 3, now Prospective, grants,
// and 2 runs for epoch 2 at once, instead of waiting out its election
// timeout and another fetch timeout. 2 asks again also when 3's rejection
// is still on its way, and not when 3 has granted.
// Reference: docs/design.md D59.
func TestProspectiveAsksAgainWhenALowerRankedPeerCampaigns(t *testing.T) {
	again := SendVoteRequest{To: ReplicaKey{ID: 3}, CandidateEpoch: 1, Candidate: ReplicaKey{ID: 2}, CandidateLogEnd: LogEnd{Offset: 2, Epoch: 1}, PreVote: true}
	for _, last := range []LogEnd{{Offset: 1, Epoch: 1}, {Offset: 2, Epoch: 1}} {
		s := failoverProspective(t, failoverConfig(2, 1, 2, 3))
		s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: false, LeaderID: 1})
		require.Equal(t, Prospective, s.Role())
		s, acts := step(t, s, preVoteRequest(3, 1, last))
		require.Equal(t, []Action{
			SendVoteResponse{To: 3, Error: ErrNone, Epoch: 1, LeaderID: 1, VoteGranted: false},
			again,
		}, acts, "3 campaigns at %+v", last)
		s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
		require.Equal(t, Candidate, s.Role())
	}

	// The rejection is still on its way: 2 asks again, and the late
	// rejection does not undo the grant.
	s := failoverProspective(t, failoverConfig(2, 1, 2, 3))
	s, acts := step(t, s, preVoteRequest(3, 1, LogEnd{Offset: 2, Epoch: 1}))
	require.Equal(t, []SendVoteRequest{again}, ofType[SendVoteRequest](acts))
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Candidate, s.Role())

	// 3 granted already: no second request.
	s, _ = failoverFollower(t, failoverConfig(2, 1, 2, 3, 4, 5))
	s, _ = step(t, s, FetchTimeout{})
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Prospective, s.Role())
	_, acts = step(t, s, preVoteRequest(3, 1, LogEnd{Offset: 2, Epoch: 1}))
	require.Empty(t, ofType[SendVoteRequest](acts))

	// Kafka's rules: no second request.
	k := failoverProspective(t, config(2, 1, 2, 3))
	k, _ = step(t, k, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: false, LeaderID: 1})
	_, acts = step(t, k, preVoteRequest(3, 1, LogEnd{Offset: 1, Epoch: 1}))
	require.Empty(t, ofType[SendVoteRequest](acts))
}

// TestProspectiveYieldsToARival: 2 hears the pre-vote of 1, whose log is as
// up to date and whose key is lower: 1 ranks above 2 and is its rival. 2
// grants it, and a grant that would make 2 win does not make it Candidate.
// The rival is forgotten when the round times out, and holds 2 back no
// more in the epoch: 2, whose round a majority granted, campaigns again at
// once and wins though 1 campaigns again (D105). A Prospective grants no
// pre-vote to a voter that ranks below it,
// and no replica grants one to a voter that ranks below its rival; a log
// ahead of ours ranks above whatever its key.
// Reference: docs/design.md D59, D105.
func TestProspectiveYieldsToARival(t *testing.T) {
	equal := LogEnd{Offset: 2, Epoch: 1}
	s := failoverProspective(t, failoverConfig(2, 1, 2, 3))
	s, acts := step(t, s, preVoteRequest(1, 1, equal))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Prospective, s.Role(), "a Prospective with a rival does not become Candidate")

	// The round times out; a majority had granted it, so it campaigns
	// again at once, and the rival campaigning again holds it back no more.
	s, acts = step(t, s, ElectionTimeout{})
	require.Equal(t, Prospective, s.Role())
	require.Len(t, ofType[SendVoteRequest](acts), 2)
	s, acts = step(t, s, preVoteRequest(1, 1, equal))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Candidate, s.Role())

	// A voter that ranks below: rejected by a Prospective.
	s = failoverProspective(t, failoverConfig(2, 1, 2, 3))
	_, acts = step(t, s, preVoteRequest(3, 1, equal))
	require.False(t, ofType[SendVoteResponse](acts)[0].VoteGranted)

	// A log ahead ranks above whatever its key, and is a rival.
	s = failoverProspective(t, failoverConfig(2, 1, 2, 3))
	s, acts = step(t, s, preVoteRequest(3, 1, LogEnd{Offset: 3, Epoch: 1}))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	s, _ = step(t, s, ReceiveVoteResponse{From: 1, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Prospective, s.Role())

	// A Follower that heard of rival 1 grants none below it (here 4, whose
	// log is up to date), and yields when it campaigns itself.
	f, _ := failoverFollower(t, failoverConfig(3, 1, 2, 3, 4, 5))
	f, acts = step(t, f, preVoteRequest(2, 1, equal))
	require.False(t, ofType[SendVoteResponse](acts)[0].VoteGranted, "a Follower that has fetched")
	f, acts = step(t, f, FetchTimeout{})
	require.Equal(t, Follower, f.Role(), "T_f passed: it waits its rank (D78)")
	require.Equal(t, ResetTimer{Timer: FetchTimer, After: testTe / 64}, fetchTimer(t, acts))
	f, _ = step(t, f, FetchTimeout{})
	require.Equal(t, Prospective, f.Role())
	_, acts = step(t, f, preVoteRequest(4, 1, LogEnd{Offset: 3, Epoch: 1}))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted, "4 ranks above rival 2")
	_, acts = step(t, f, preVoteRequest(1, 1, LogEnd{Offset: 1, Epoch: 1}))
	require.False(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	f, _ = step(t, f, ReceiveVoteResponse{From: 4, Epoch: 1, VoteGranted: true, LeaderID: 1})
	f, _ = step(t, f, ReceiveVoteResponse{From: 5, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Prospective, f.Role(), "it yields to rival 2")

	// Kafka's rules: no rival.
	k := failoverProspective(t, config(2, 1, 2, 3))
	k, _ = step(t, k, preVoteRequest(1, 1, equal))
	k, _ = step(t, k, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Candidate, k.Role())
}

// TestRivalForgottenWhenPreVoteRoundIsLost: 3 grants the pre-vote of 1,
// which ranks above it, and remembers 1 as its rival. 1 then never
// campaigns again (its disk was lost: it rejoins as an observer with a new
// directory id). 3's own pre-vote round is lost to voters that hold the
// same rival; losing ends the round as a timeout does, so 3 forgets the
// rival and grants 4, which ranks below 1. Kept, the rival would have
// every survivor refuse every pre-vote for good: no leader, ever.
// Reference: docs/design.md D59.
func TestRivalForgottenWhenPreVoteRoundIsLost(t *testing.T) {
	empty := LogEnd{}
	s := start(t, failoverConfig(3, 1, 2, 3, 4, 5))
	s, acts := step(t, s, preVoteRequest(1, 0, empty))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	_, acts = step(t, s, preVoteRequest(4, 0, empty))
	require.False(t, ofType[SendVoteResponse](acts)[0].VoteGranted, "4 ranks below rival 1")

	s, _ = step(t, s, ElectionTimeout{})
	require.Equal(t, Prospective, s.Role())
	for _, from := range []NodeID{2, 4, 5} {
		s, _ = step(t, s, ReceiveVoteResponse{From: from, Epoch: 0, VoteGranted: false, LeaderID: NoNode})
	}
	require.Equal(t, Unattached, s.Role(), "the pre-vote round is lost")
	_, acts = step(t, s, preVoteRequest(4, 0, empty))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted, "the rival went with the round")
}

// rivalHeldProspective is voter 3 of 1-5 after its leader 1 died: voter 2,
// whose log is as up to date and whose key is lower, campaigned and is its
// rival; 3's own round has begun (Prospective, pre-votes to 1, 2, 4, 5).
func rivalHeldProspective(t *testing.T, cfg Config) State {
	t.Helper()
	s, _ := failoverFollower(t, cfg)
	s, _ = step(t, s, FetchTimeout{})
	require.Equal(t, Follower, s.Role(), "3 waits its rank (D78)")
	s, acts := step(t, s, preVoteRequest(2, 1, LogEnd{Offset: 2, Epoch: 1}))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	s, acts = step(t, s, FetchTimeout{})
	require.Equal(t, Prospective, s.Role())
	require.Len(t, ofType[SendVoteRequest](acts), 4)
	return s
}

// TestRivalHoldsAVoterBackForOneRoundPerEpoch: review 4's finding L1. Five
// voters, the leader (1) is gone; 2 ranks first among the survivors but
// reaches only 3, which notes it as its rival. 4 and 5 grant 3's pre-vote,
// a majority with 3, and 3 yields to 2 (D59) until its round times out.
// Then the rival is spent for the epoch (D105): 3 campaigns again at once,
// notes 2 no more though 2 keeps campaigning, and becomes Candidate on the
// grants of 4 and 5. When a round that no majority granted times out, 3
// follows the leader it knew again (Kafka's
// prospectiveTransitionAfterElectionLoss), with the rival spent too: when
// 4 campaigns, 3 campaigns again at once (D59's rule for a Follower that
// ranks above a campaigner and has no rival) and wins. A lost round counts
// half: the rival holds 3 back for two of them. A new epoch
// brings the rule back: a rival of epoch 2 holds 3 back again.
// Reference: docs/design.md D105.
func TestRivalHoldsAVoterBackForOneRoundPerEpoch(t *testing.T) {
	cfg := failoverConfig(3, 1, 2, 3, 4, 5)
	equal := LogEnd{Offset: 2, Epoch: 1}
	grant := func(s State, from ...NodeID) State {
		for _, f := range from {
			s, _ = step(t, s, ReceiveVoteResponse{From: f, Epoch: 1, VoteGranted: true, LeaderID: 1})
		}
		return s
	}

	s := grant(rivalHeldProspective(t, cfg), 4, 5)
	require.Equal(t, Prospective, s.Role(), "the first round: 3 yields to rival 2")
	s, acts := step(t, s, ElectionTimeout{})
	require.Equal(t, Prospective, s.Role(), "a majority granted: it campaigns again at once")
	require.Len(t, ofType[SendVoteRequest](acts), 4)
	s, acts = step(t, s, preVoteRequest(2, 1, equal))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted, "2 ranks above 3")
	s = grant(s, 4, 5)
	require.Equal(t, Candidate, s.Role(), "rival 2 does not hold 3 back a second round")
	require.Equal(t, Epoch(2), s.Epoch())

	// A round that no majority granted: 3 follows its leader again, the
	// rival spent.
	s = grant(rivalHeldProspective(t, cfg), 4)
	_, acts = step(t, s, preVoteRequest(4, 1, equal))
	require.False(t, ofType[SendVoteResponse](acts)[0].VoteGranted, "a Prospective grants none below it")
	s, _ = step(t, s, ElectionTimeout{})
	require.Equal(t, Follower, s.Role())
	s, acts = step(t, s, preVoteRequest(2, 1, equal))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	s, acts = step(t, s, preVoteRequest(4, 1, equal))
	require.Equal(t, Prospective, s.Role(), "4 ranks below 3, and 2 is no rival now: 3 campaigns again at once (D59)")
	require.False(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	s = grant(s, 4, 5)
	require.Equal(t, Candidate, s.Role())

	// A lost round counts half: after one, rival 2 noted again still
	// holds 3 back (in a failover a round is lost early to Followers that
	// have not timed out yet); after two, it does not.
	lose := func(s State) State {
		for _, f := range []NodeID{1, 4, 5} {
			s, _ = step(t, s, ReceiveVoteResponse{From: f, Epoch: 1, VoteGranted: false, LeaderID: 1})
		}
		require.Equal(t, Follower, s.Role(), "the round is lost")
		return s
	}
	s = lose(rivalHeldProspective(t, cfg))
	s, _ = step(t, s, preVoteRequest(2, 1, equal))
	s, _ = step(t, s, preVoteRequest(4, 1, equal))
	require.Equal(t, Follower, s.Role(), "rival 2 noted again: 3 does not campaign when 4 does")
	s, _ = step(t, s, FetchTimeout{})
	s, _ = step(t, s, FetchTimeout{})
	require.Equal(t, Prospective, s.Role())
	held := grant(s, 4, 5)
	require.Equal(t, Prospective, held.Role(), "one lost round: rival 2 still holds 3 back")
	s = lose(s)
	s, _ = step(t, s, preVoteRequest(2, 1, equal))
	s, _ = step(t, s, preVoteRequest(4, 1, equal))
	require.Equal(t, Prospective, s.Role(), "two lost rounds: 2 is no rival now")
	s = grant(s, 4, 5)
	require.Equal(t, Candidate, s.Role())

	// The bound is per epoch: in epoch 2 a rival holds 3 back again.
	s = grant(rivalHeldProspective(t, cfg), 4, 5)
	s, _ = step(t, s, ElectionTimeout{})
	s, _ = step(t, s, preVoteRequest(2, 2, equal))
	require.Equal(t, Unattached, s.Role())
	require.Equal(t, Epoch(2), s.Epoch())
	s, _ = step(t, s, ElectionTimeout{})
	require.Equal(t, Prospective, s.Role())
	for _, f := range []NodeID{4, 5} {
		s, _ = step(t, s, ReceiveVoteResponse{From: f, Epoch: 2, VoteGranted: true, LeaderID: NoNode})
	}
	require.Equal(t, Prospective, s.Role(), "rival 2 of epoch 2 holds 3 back")

	// Kafka's rules: no rival.
	k, _ := failoverFollower(t, config(3, 1, 2, 3, 4, 5))
	k, _ = step(t, k, FetchTimeout{})
	require.Equal(t, Prospective, k.Role())
	k, _ = step(t, k, preVoteRequest(2, 1, equal))
	k = grant(k, 4, 5)
	require.Equal(t, Candidate, k.Role())
}

// TestFollowerThatLostCampaignsAgainWhenALowerRankedPeerCampaigns: 2 runs
// first and loses its pre-vote to Followers that still follow the dead
// leader; it follows the leader again (Kafka's
// prospectiveTransitionAfterElectionLoss). When 3, which ranks below 2,
// campaigns, 2 has not heard from the leader since: it campaigns again at
// once (answering 3 as a Prospective, with a rejection) instead of after
// another fetch timeout.
// Reference: docs/design.md D59.
func TestFollowerThatLostCampaignsAgainWhenALowerRankedPeerCampaigns(t *testing.T) {
	s := failoverProspective(t, failoverConfig(2, 1, 2, 3))
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: false, LeaderID: 1})
	s, _ = step(t, s, ReceiveVoteResponse{From: 1, Epoch: 1, VoteGranted: false, LeaderID: 1})
	require.Equal(t, Follower, s.Role())
	s, acts := step(t, s, preVoteRequest(3, 1, LogEnd{Offset: 2, Epoch: 1}))
	require.Equal(t, Prospective, s.Role())
	require.Len(t, ofType[SendVoteRequest](acts), 2)
	require.False(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Candidate, s.Role())

	// A Follower that has fetched since does not.
	f, _ := failoverFollower(t, failoverConfig(2, 1, 2, 3))
	f, acts = step(t, f, preVoteRequest(3, 1, LogEnd{Offset: 2, Epoch: 1}))
	require.Equal(t, Follower, f.Role())
	require.Empty(t, ofType[SendVoteRequest](acts))

	// Kafka's rules: it waits for its fetch timer.
	k := failoverProspective(t, config(2, 1, 2, 3))
	k, _ = step(t, k, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: false, LeaderID: 1})
	k, _ = step(t, k, ReceiveVoteResponse{From: 1, Epoch: 1, VoteGranted: false, LeaderID: 1})
	k, _ = step(t, k, preVoteRequest(3, 1, LogEnd{Offset: 2, Epoch: 1}))
	require.Equal(t, Follower, k.Role())
}

// TestFollowerOfAResignedLeaderCampaignsWhenALaggingSuccessorAsks: the
// leader resigns (EndQuorumEpoch) and ranks 3 first, whose log lags the
// one of 2 (a record 3 had not fetched yet). 2, at a later rank, refuses
// 3's pre-vote, which cannot win against 2's log, and campaigns at once
// instead of after its successor-rank backoff: a graceful handover takes
// round trips, not a timeout. A Follower whose leader did not resign does
// not (it still hears its leader), nor with Kafka's rules.
// Reference: docs/design.md D66.
func TestFollowerOfAResignedLeaderCampaignsWhenALaggingSuccessorAsks(t *testing.T) {
	resigned := func(cfg Config) State {
		s, _ := failoverFollower(t, cfg)
		s, acts := step(t, s, ReceiveEndQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: 1, Of: 2}})
		require.Equal(t, Follower, s.Role())
		require.Greater(t, fetchTimer(t, acts).After, time.Duration(0), "rank 1 waits its backoff")
		return s
	}
	lagging := LogEnd{Offset: 1, Epoch: 1}

	s := resigned(failoverConfig(2, 1, 2, 3))
	s, acts := step(t, s, preVoteRequest(3, 1, lagging))
	require.Equal(t, Prospective, s.Role())
	require.False(t, ofType[SendVoteResponse](acts)[0].VoteGranted, "3's log lags")
	require.Len(t, ofType[SendVoteRequest](acts), 2)

	// Its leader did not resign: it keeps following.
	f, _ := failoverFollower(t, failoverConfig(2, 1, 2, 3))
	f, acts = step(t, f, preVoteRequest(3, 1, lagging))
	require.Equal(t, Follower, f.Role())
	require.Empty(t, ofType[SendVoteRequest](acts))

	// D79: the pre-vote came first, the EndQuorumEpoch second (they cross
	// on the network). The resignation shows the election is on: 2
	// campaigns at once rather than after its backoff, and answers the
	// EndQuorumEpoch.
	f, acts = step(t, f, ReceiveEndQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, SuccessorRank: SuccessorRank{Position: 1, Of: 2}})
	require.Equal(t, Prospective, f.Role())
	require.Len(t, ofType[SendVoteRequest](acts), 2)
	require.Len(t, ofType[SendEndQuorumEpochResponse](acts), 1)
	// Without the pre-vote first, rank 1 waits its backoff (resigned, above).

	// Kafka's rules: it waits for its backoff.
	k := resigned(config(2, 1, 2, 3))
	k, acts = step(t, k, preVoteRequest(3, 1, lagging))
	require.Equal(t, Follower, k.Role())
	require.Empty(t, ofType[SendVoteRequest](acts))
}
