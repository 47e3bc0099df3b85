package replica

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// sentVotes are the Vote requests among outs, by destination.
func sentVotes(outs []Output) map[kraft.NodeID]Message {
	m := map[kraft.NodeID]Message{}
	for _, o := range outs {
		if s, ok := o.(Send); ok && !s.Message.Response {
			if _, vote := s.Message.Event.(kraft.ReceiveVoteRequest); vote {
				m[s.Message.To] = s.Message
			}
		}
	}
	return m
}

// TestVoteRequestsGoAgainAfterAQuarterElection: a Vote request with no
// answer goes again after a quarter of the election timeout (plus the
// retry backoff), well before the request timeout, with a new correlation
// id (D95); a Fetch keeps the request timeout.
func TestVoteRequestsGoAgainAfterAQuarterElection(t *testing.T) {
	te := time.Second
	r, err := New(Config{
		Kraft: kraft.Config{
			Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}},
			ElectionTimeout: te, FetchTimeout: 2 * te,
		},
		Log: storage.NewMemLog(), Records: &memRecords{}, Static: true,
		RequestTimeout: 2 * time.Second, RetryBackoff: 20 * time.Millisecond,
	}, 0)
	require.NoError(t, err)
	r.Take()
	// The election timer fires: a pre-vote round to 2 and 3.
	at, ok := r.NextDeadline()
	require.True(t, ok)
	r.Tick(at)
	first := sentVotes(r.Take())
	require.Len(t, first, 2)
	// Nothing answers. Just before a quarter election, nothing more.
	r.Tick(at + te/4 - time.Millisecond)
	require.Empty(t, sentVotes(r.Take()))
	// A quarter election later they time out, and after the backoff both
	// go again.
	r.Tick(at + te/4)
	require.Empty(t, sentVotes(r.Take()))
	r.Tick(at + te/4 + 20*time.Millisecond)
	again := sentVotes(r.Take())
	require.Len(t, again, 2)
	for to, m := range again {
		require.NotEqual(t, first[to].Corr, m.Corr)
		require.Equal(t, first[to].Event, m.Event)
	}
	require.Equal(t, te/4, r.timeoutOf(kindVote))
	require.Equal(t, te/4, r.timeoutOf(kindBegin))
	require.Equal(t, 2*time.Second, r.timeoutOf(kindFetch))
}

// TestTickAllocatesNothingWhenNothingIsDue: the runtime calls NextDeadline
// and Tick on every timer; listing the deadlines costs no allocation.
func TestTickAllocatesNothingWhenNothingIsDue(t *testing.T) {
	r, err := New(Config{
		Kraft: kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}},
		Log:   storage.NewMemLog(), Records: &memRecords{}, Static: true,
	}, 0)
	require.NoError(t, err)
	r.Take()
	at, ok := r.NextDeadline()
	require.True(t, ok)
	allocs := testing.AllocsPerRun(100, func() {
		_, _ = r.NextDeadline()
		r.Tick(at - 1)
	})
	require.Zero(t, allocs)
}
