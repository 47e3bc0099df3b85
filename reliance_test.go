package kraft_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// TestRelianceOfAVoteNamesTheWholeKey: a vote relies on the durable record
// holding a vote for the whole replica key, directory id included (KIP-853:
// a vote binds the candidate's key, not only its id; docs/design.md D282).
// A standard vote request relies on the sender's own key, a granted vote
// response on the candidate's key from the request stepped, in the
// request's epoch; a granted pre-vote and a refusal rely on no vote.
func TestRelianceOfAVoteNamesTheWholeKey(t *testing.T) {
	dirA := uuid.MustParse("11111111-1111-1111-1111-111111111111")
	dirB := uuid.MustParse("22222222-2222-2222-2222-222222222222")
	self := kraft.ReplicaKey{ID: 1, DirectoryID: dirA}
	cand := kraft.ReplicaKey{ID: 2, DirectoryID: dirB}
	req := kraft.ReceiveVoteRequest{From: 2, CandidateEpoch: 4, Candidate: cand.ID, CandidateDirectoryID: cand.DirectoryID}

	r, ok := kraft.RelianceOf(self, kraft.SendVoteRequest{CandidateEpoch: 4, Candidate: self}, nil)
	require.True(t, ok)
	require.True(t, r.Vote && r.InEpoch)
	require.Equal(t, self, r.Voted)
	require.Equal(t, kraft.Epoch(4), r.Epoch)

	r, ok = kraft.RelianceOf(self, kraft.SendVoteResponse{To: 2, Epoch: 4, VoteGranted: true}, req)
	require.True(t, ok)
	require.True(t, r.Vote && r.InEpoch)
	require.Equal(t, cand, r.Voted, "a vote for the candidate's key, directory id included")
	// The record a host checks it against: a vote for the same id with
	// another directory id is not this vote.
	require.False(t, kraft.ReplicaKey{ID: 2, DirectoryID: dirA}.Matches(r.Voted))
	require.True(t, cand.Matches(r.Voted))

	pre := req
	pre.PreVote = true
	for name, c := range map[string]struct {
		a kraft.Action
		e kraft.Event
	}{
		"granted pre-vote": {kraft.SendVoteResponse{To: 2, Epoch: 4, VoteGranted: true}, pre},
		"refusal":          {kraft.SendVoteResponse{To: 2, Epoch: 4}, req},
		"pre-vote request": {kraft.SendVoteRequest{CandidateEpoch: 4, Candidate: self, PreVote: true}, nil},
	} {
		r, ok := kraft.RelianceOf(self, c.a, c.e)
		require.True(t, ok, name)
		require.False(t, r.Vote || r.InEpoch, "%s relies on a vote: %+v", name, r)
		require.True(t, r.HasEpoch, name)
		require.Equal(t, kraft.Epoch(4), r.Epoch, name)
	}
}
