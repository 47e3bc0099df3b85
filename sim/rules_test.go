package sim

import (
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// TestPersistRule: every branch of the rule the simulator and the
// explorer both apply to a Persist.
func TestPersistRule(t *testing.T) {
	self := kraft.ReplicaKey{ID: 1}
	rec := func(epoch kraft.Epoch, leader kraft.NodeID, voted kraft.NodeID) kraft.QuorumRecord {
		r := kraft.EmptyRecord()
		r.Epoch, r.LeaderID = epoch, leader
		if voted != kraft.NoNode {
			r.VotedKey = kraft.ReplicaKey{ID: voted}
		}
		return r
	}
	for _, c := range []struct {
		name      string
		d         kraft.QuorumRecord
		hasRecord bool
		next      kraft.QuorumRecord
		want      string
	}{
		{"a first record", kraft.EmptyRecord(), false, rec(3, kraft.NoNode, 2), ""},
		{"a later epoch", rec(3, kraft.NoNode, 2), true, rec(4, kraft.NoNode, 3), ""},
		{"an earlier epoch", rec(3, kraft.NoNode, 2), true, rec(2, kraft.NoNode, kraft.NoNode), "epoch-monotonic"},
		{"the same vote and a leader", rec(3, kraft.NoNode, 2), true, rec(3, 2, 2), ""},
		{"another vote", rec(3, kraft.NoNode, 2), true, rec(3, kraft.NoNode, 3), "one-vote-per-epoch"},
		{"a vote dropped for another leader", rec(3, kraft.NoNode, 2), true, rec(3, 2, kraft.NoNode), "vote-durable"},
		{"its own vote dropped as leader", rec(3, kraft.NoNode, 1), true, rec(3, 1, kraft.NoNode), ""},
		{"led, then voted for another", rec(3, 1, kraft.NoNode), true, rec(3, 1, 2), "one-vote-per-epoch"},
		{"led, then its own vote", rec(3, 1, kraft.NoNode), true, rec(3, 1, 1), ""},
	} {
		rule, detail := PersistRule(self, c.d, c.hasRecord, c.next)
		require.Equal(t, c.want, rule, "%s: %s", c.name, detail)
		require.Equal(t, c.want == "", detail == "", c.name)
	}
}

// TestLeaderHighWatermarkRule: a leader's high watermark ends in a record
// of its epoch, within its log, held by a majority.
func TestLeaderHighWatermarkRule(t *testing.T) {
	for _, c := range []struct {
		name            string
		h, logLen       int64
		epoch, atH      kraft.Epoch
		holders, voters int
		want            string
	}{
		{"held by a majority", 5, 6, 2, 2, 2, 3, ""},
		{"held by all of five", 5, 5, 2, 2, 5, 5, ""},
		{"past its log", 7, 6, 2, 2, 3, 3, "hwm-majority"},
		{"no record", 0, 6, 2, 0, 3, 3, "hwm-own-epoch"},
		{"a record of an older epoch", 5, 6, 2, 1, 3, 3, "hwm-own-epoch"},
		{"held by a minority", 5, 6, 2, 2, 1, 3, "hwm-majority"},
		{"half of four", 5, 6, 2, 2, 2, 4, "hwm-majority"},
	} {
		rule, _ := LeaderHighWatermarkRule(c.h, c.logLen, c.epoch, c.atH, c.holders, c.voters)
		require.Equal(t, c.want, rule, c.name)
	}
}

// TestHighWatermarkRestarts: only becoming Leader or Resigned starts the
// high watermark again.
func TestHighWatermarkRestarts(t *testing.T) {
	three := kraft.Config{Local: kraft.ReplicaKey{ID: 0}, Voters: []kraft.ReplicaKey{{ID: 0}, {ID: 1}, {ID: 2}}}
	follower, _, err := kraft.NewState(three, nil, kraft.LogState{})
	require.NoError(t, err)
	require.NotEqual(t, kraft.Leader, follower.Role())
	alone := kraft.Config{Local: kraft.ReplicaKey{ID: 0}, Voters: []kraft.ReplicaKey{{ID: 0}}}
	leader, _, err := kraft.NewState(alone, nil, kraft.LogState{})
	require.NoError(t, err)
	require.Equal(t, kraft.Leader, leader.Role(), "a lone voter leads at once")
	require.True(t, HighWatermarkRestarts(follower, leader))
	require.False(t, HighWatermarkRestarts(leader, leader))
	require.False(t, HighWatermarkRestarts(follower, follower))
	require.False(t, HighWatermarkRestarts(leader, follower))
}

// TestPersistBeforeSendOnSnapshotsAndVoterChanges: the rules of the
// outbound actions the check did not cover before docs/design.md D115, each
// with a record it holds on and one it breaks on.
func TestPersistBeforeSendOnSnapshotsAndVoterChanges(t *testing.T) {
	self := kraft.ReplicaKey{ID: 1}
	rec := func(epoch kraft.Epoch, leader kraft.NodeID) kraft.QuorumRecord {
		r := kraft.EmptyRecord()
		r.Epoch, r.LeaderID = epoch, leader
		return r
	}
	snap := func(to kraft.NodeID, epoch kraft.Epoch) kraft.Action {
		return kraft.SendFetchSnapshot{To: to, CurrentLeaderEpoch: epoch}
	}
	for _, c := range []struct {
		name string
		d    kraft.QuorumRecord
		a    kraft.Action
		ok   bool
	}{
		{"FetchSnapshot to the recorded leader", rec(3, 2), snap(2, 3), true},
		{"FetchSnapshot to another leader", rec(3, 0), snap(2, 3), false},
		{"FetchSnapshot in a later epoch", rec(2, 2), snap(2, 3), false},
		{"voter change to the recorded leader", rec(3, 2), kraft.SendVoterChange{To: 2, Kind: kraft.AddVoter, Voter: self}, true},
		{"voter change to a leader not recorded", rec(3, kraft.NoNode), kraft.SendVoterChange{To: 2, Kind: kraft.AddVoter, Voter: self}, false},
		{"ApiVersions from the recorded leader", rec(3, 1), kraft.SendAPIVersions{To: kraft.ReplicaKey{ID: 4}}, true},
		{"ApiVersions from a replica not recorded leader", rec(3, 2), kraft.SendAPIVersions{To: kraft.ReplicaKey{ID: 4}}, false},
		{"voter change response in the recorded epoch", rec(3, 1), kraft.SendVoterChangeResponse{Epoch: 3, LeaderID: 1}, true},
		{"voter change response in a later epoch", rec(2, 1), kraft.SendVoterChangeResponse{Epoch: 3, LeaderID: 1}, false},
		{"a local action", rec(0, kraft.NoNode), kraft.InstallSnapshot{}, true},
	} {
		detail := PersistBeforeSend(self, c.d, c.a, nil)
		require.Equal(t, c.ok, detail == "", "%s: %q", c.name, detail)
	}
}

// TestPersistBeforeSendOnTheCoreMessages: each vote, epoch and fetch
// message's reliance (kraft.RelianceOf, docs/design.md D282), with a
// record it holds on and one it breaks on.
func TestPersistBeforeSendOnTheCoreMessages(t *testing.T) {
	self := kraft.ReplicaKey{ID: 1}
	cand := kraft.ReplicaKey{ID: 2}
	rec := func(epoch kraft.Epoch, leader kraft.NodeID, voted kraft.ReplicaKey) kraft.QuorumRecord {
		r := kraft.EmptyRecord()
		r.Epoch, r.LeaderID, r.VotedKey = epoch, leader, voted
		return r
	}
	none := kraft.ReplicaKey{ID: kraft.NoNode}
	standard := kraft.ReceiveVoteRequest{From: 2, CandidateEpoch: 4, Candidate: 2}
	pre := standard
	pre.PreVote = true
	for _, c := range []struct {
		name string
		d    kraft.QuorumRecord
		a    kraft.Action
		e    kraft.Event
		ok   bool
	}{
		{"vote request with its own vote durable", rec(4, kraft.NoNode, self), kraft.SendVoteRequest{CandidateEpoch: 4, Candidate: self}, nil, true},
		{"vote request without its vote", rec(4, kraft.NoNode, none), kraft.SendVoteRequest{CandidateEpoch: 4, Candidate: self}, nil, false},
		{"vote request in an earlier record", rec(3, kraft.NoNode, self), kraft.SendVoteRequest{CandidateEpoch: 4, Candidate: self}, nil, false},
		{"pre-vote request in the record's epoch", rec(4, kraft.NoNode, none), kraft.SendVoteRequest{CandidateEpoch: 4, PreVote: true}, nil, true},
		{"pre-vote request past the record", rec(3, kraft.NoNode, none), kraft.SendVoteRequest{CandidateEpoch: 4, PreVote: true}, nil, false},
		{"granted vote durable", rec(4, kraft.NoNode, cand), kraft.SendVoteResponse{To: 2, Epoch: 4, VoteGranted: true}, standard, true},
		{"granted vote not durable", rec(4, kraft.NoNode, none), kraft.SendVoteResponse{To: 2, Epoch: 4, VoteGranted: true}, standard, false},
		{"granted pre-vote binds nothing", rec(4, kraft.NoNode, none), kraft.SendVoteResponse{To: 2, Epoch: 4, VoteGranted: true}, pre, true},
		{"vote response past the record", rec(3, kraft.NoNode, none), kraft.SendVoteResponse{To: 2, Epoch: 4}, standard, false},
		{"BeginQuorumEpoch of the recorded leader", rec(4, 1, self), kraft.SendBeginQuorumEpoch{Epoch: 4, LeaderID: 1}, nil, true},
		{"BeginQuorumEpoch without the leader recorded", rec(4, kraft.NoNode, self), kraft.SendBeginQuorumEpoch{Epoch: 4, LeaderID: 1}, nil, false},
		{"EndQuorumEpoch of an earlier epoch", rec(5, 1, none), kraft.SendEndQuorumEpoch{Epoch: 4, LeaderID: 1}, nil, false},
		{"fetch to the recorded leader", rec(4, 2, none), kraft.SendFetch{To: 2, CurrentLeaderEpoch: 4}, nil, true},
		{"fetch to another leader", rec(4, 3, none), kraft.SendFetch{To: 2, CurrentLeaderEpoch: 4}, nil, false},
		{"observer's fetch to no one", rec(4, kraft.NoNode, none), kraft.SendFetch{To: kraft.NoNode, CurrentLeaderEpoch: 4}, nil, true},
		{"fetch response past the record", rec(3, 1, none), kraft.SendFetchResponse{To: 2, Epoch: 4, LeaderID: 1}, nil, false},
	} {
		detail := PersistBeforeSend(self, c.d, c.a, c.e)
		require.Equal(t, c.ok, detail == "", "%s: %q", c.name, detail)
	}
}
