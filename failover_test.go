package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Tests of kraft's failover refinements over Kafka (docs/design.md D39),
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

// TestFollowerFetchTimeoutHasJitter: a voter Follower's fetch timer is T_f
// plus a jitter in [0, T_e), drawn when it becomes Follower and kept for
// the role (every successful fetch re-arms the same value); replicas and
// roles draw different values. With KafkaFailover, and for observers,
// it is exactly T_f, as in Kafka.
func TestFollowerFetchTimeoutHasJitter(t *testing.T) {
	seen := map[ResetTimer]bool{}
	for _, local := range []NodeID{2, 3} {
		for seed := uint64(0); seed < 8; seed++ {
			cfg := failoverConfig(local, 1, 2, 3)
			cfg.Seed = seed*10 + uint64(local)
			s, acts := failoverFollower(t, cfg)
			r := fetchTimer(t, acts)
			require.GreaterOrEqual(t, r.After, testTf)
			require.Less(t, r.After, testTf+testTe)
			_, again := step(t, s, fetchOK(1, 1, 2))
			require.Equal(t, r, fetchTimer(t, again), "the jitter is kept for the role")
			seen[r] = true
		}
	}
	require.Greater(t, len(seen), 8, "replicas draw different jitters")

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

// TestProspectiveAsksAgainWhenAPeerCampaigns: voter 3, still a Follower
// that has fetched, rejects 2's pre-vote (KIP-996). When 3 campaigns
// itself with a log behind 2's, 2 rejects it and asks 3 again; 3, now
// Prospective, grants, and 2 runs for epoch 2 at once, instead of waiting
// out its election timeout and another fetch timeout.
func TestProspectiveAsksAgainWhenAPeerCampaigns(t *testing.T) {
	s := failoverProspective(t, failoverConfig(2, 1, 2, 3))
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: false, LeaderID: 1})
	require.Equal(t, Prospective, s.Role())

	behind := preVoteRequest(3, 1, LogEnd{Offset: 1, Epoch: 1})
	s, acts := step(t, s, behind)
	require.Equal(t, []Action{
		SendVoteResponse{To: 3, Error: ErrNone, Epoch: 1, LeaderID: 1, VoteGranted: false},
		SendVoteRequest{To: ReplicaKey{ID: 3}, CandidateEpoch: 1, Candidate: ReplicaKey{ID: 2}, CandidateLogEnd: LogEnd{Offset: 2, Epoch: 1}, PreVote: true},
	}, acts)
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Candidate, s.Role())

	// Kafka's rules: no second request.
	k := failoverProspective(t, config(2, 1, 2, 3))
	k, _ = step(t, k, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: false, LeaderID: 1})
	_, acts = step(t, k, behind)
	require.Empty(t, ofType[SendVoteRequest](acts))

	// A peer that never rejected is not asked again.
	s = failoverProspective(t, failoverConfig(2, 1, 2, 3))
	_, acts = step(t, s, behind)
	require.Empty(t, ofType[SendVoteRequest](acts))
}

// TestProspectiveYieldsToABetterPeer: 2 grants the pre-vote of 1, whose log
// is as up to date and whose key is lower, so 2 yields this round: a grant
// that would make it win does not make it Candidate. It yields once per
// epoch: the next round in the same epoch runs as usual. A peer that is
// behind or has a higher key is not yielded to.
func TestProspectiveYieldsToABetterPeer(t *testing.T) {
	s := failoverProspective(t, failoverConfig(2, 1, 2, 3))
	equal := LogEnd{Offset: 2, Epoch: 1}
	s, acts := step(t, s, preVoteRequest(1, 1, equal))
	require.True(t, ofType[SendVoteResponse](acts)[0].VoteGranted)
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Prospective, s.Role(), "a yielding round does not become Candidate")

	// The round times out; the next one in epoch 1 does not yield again.
	s, _ = step(t, s, ElectionTimeout{})
	require.Equal(t, Follower, s.Role())
	s, _ = step(t, s, FetchTimeout{})
	require.Equal(t, Prospective, s.Role())
	s, _ = step(t, s, preVoteRequest(1, 1, equal))
	s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Candidate, s.Role())

	for _, c := range []struct {
		from NodeID
		last LogEnd
	}{
		{3, equal},                       // higher key, same log
		{1, LogEnd{Offset: 1, Epoch: 1}}, // lower key, log behind (rejected)
	} {
		s := failoverProspective(t, failoverConfig(2, 1, 2, 3))
		s, _ = step(t, s, preVoteRequest(c.from, 1, c.last))
		s, _ = step(t, s, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
		require.Equal(t, Candidate, s.Role(), "pre-vote from %d at %+v", c.from, c.last)
	}

	// A log ahead of ours is yielded to whatever its key.
	s = failoverProspective(t, failoverConfig(2, 1, 2, 3))
	s, _ = step(t, s, preVoteRequest(3, 1, LogEnd{Offset: 3, Epoch: 1}))
	s, _ = step(t, s, ReceiveVoteResponse{From: 1, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Prospective, s.Role())

	// Kafka's rules: no yielding.
	k := failoverProspective(t, config(2, 1, 2, 3))
	k, _ = step(t, k, preVoteRequest(1, 1, equal))
	k, _ = step(t, k, ReceiveVoteResponse{From: 3, Epoch: 1, VoteGranted: true, LeaderID: 1})
	require.Equal(t, Candidate, k.Role())
}
