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
	require.Equal(t, te/4, r.timeoutOf(Message{}, kindVote))
	require.Equal(t, te/4, r.timeoutOf(Message{}, kindBegin))
}

// sentFetches are the Fetch requests among outs.
func sentFetches(outs []Output) []Message {
	var fs []Message
	for _, o := range outs {
		if s, ok := o.(Send); ok {
			if _, fetch := s.Message.Event.(kraft.ReceiveFetch); fetch {
				fs = append(fs, s.Message)
			}
		}
	}
	return fs
}

// TestFetchThatCannotBeParkedGoesAgainAfterAQuarterElection: a
// follower's first Fetch of its leader's epoch is answered at once (the
// leader has the epoch's LeaderChange for it), so with no answer it goes
// again after a quarter of the election timeout; once one has timed out,
// the link is taken as slow and the next waits the request timeout, until
// the epoch changes. A Fetch the leader may park (the follower holds
// nothing past its high watermark) keeps the request timeout (D100).
func TestFetchThatCannotBeParkedGoesAgainAfterAQuarterElection(t *testing.T) {
	te, backoff := time.Second, 20*time.Millisecond
	r, err := New(Config{
		Kraft: kraft.Config{
			Local: kraft.ReplicaKey{ID: 2}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}},
			ElectionTimeout: te, FetchTimeout: 10 * te,
		},
		Log: storage.NewMemLog(), Records: &memRecords{}, Static: true,
		RequestTimeout: 2 * time.Second, RetryBackoff: backoff,
	}, 0)
	require.NoError(t, err)
	r.Take()
	r.Receive(0, Message{From: 1, To: 2, Corr: 7, Event: kraft.ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 2}})
	first := sentFetches(r.Take())
	require.Len(t, first, 1)
	r.Tick(te/4 - time.Millisecond)
	require.Empty(t, sentFetches(r.Take()))
	r.Tick(te / 4)
	r.Tick(te/4 + backoff)
	again := sentFetches(r.Take())
	require.Len(t, again, 1, "the first Fetch of the epoch goes again after a quarter election")
	require.NotEqual(t, first[0].Corr, again[0].Corr)

	// This one timed out once already in the epoch: the request timeout.
	sent := te/4 + backoff
	r.Tick(sent + te/4)
	r.Tick(sent + te/4 + backoff)
	require.Empty(t, sentFetches(r.Take()))
	r.Tick(sent + 2*time.Second)
	r.Tick(sent + 2*time.Second + backoff)
	require.Len(t, sentFetches(r.Take()), 1)

	// Which Fetches cannot be parked.
	f := func(offset int64, epoch kraft.Epoch) kraft.ReceiveFetch {
		return kraft.ReceiveFetch{From: 2, CurrentLeaderEpoch: 3, FetchOffset: offset, FetchEpoch: epoch}
	}
	require.True(t, atOnce(f(10, 2), 10), "the first of the leader's epoch")
	require.True(t, atOnce(f(10, 3), 9), "records past the high watermark")
	require.False(t, atOnce(f(10, 3), 10), "caught up: parked until something new")
	fresh, err := New(Config{
		Kraft: kraft.Config{Local: kraft.ReplicaKey{ID: 2}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}, ElectionTimeout: te},
		Log:   storage.NewMemLog(), Records: &memRecords{}, Static: true, RequestTimeout: 2 * time.Second,
	}, 0)
	require.NoError(t, err)
	require.Equal(t, te/4, fresh.timeoutOf(Message{Event: f(10, 2), HighWatermark: 10}, kindFetch))
	require.Equal(t, 2*time.Second, fresh.timeoutOf(Message{Event: f(10, 3), HighWatermark: 10}, kindFetch))
	require.Equal(t, 2*time.Second, fresh.timeoutOf(Message{Event: kraft.ReceiveFetchSnapshot{From: 2}}, kindFetch),
		"a snapshot chunk keeps the request timeout")
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

// TestLeaderDownIsTheFetchTimeoutAtOnce: a follower told that its
// leader's process is gone takes it as its fetch timeout, at once (D101).
// The first survivor (replica 2: equal logs, lowest key without the
// leader) asks for pre-votes at once; the second (replica 3) asks nothing
// yet, but grants the first's pre-vote, which it refuses while it hears
// the leader. A report about another replica, or a second report in the
// epoch, does nothing.
func TestLeaderDownIsTheFetchTimeoutAtOnce(t *testing.T) {
	follower := func(id kraft.NodeID) *Replica {
		r, err := New(Config{
			Kraft: kraft.Config{Local: kraft.ReplicaKey{ID: id}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}},
			Log:   storage.NewMemLog(), Records: &memRecords{}, Static: true,
		}, 0)
		require.NoError(t, err)
		r.Take()
		r.Receive(0, Message{From: 1, To: id, Corr: 7, Event: kraft.ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: id}})
		fetches := sentFetches(r.Take())
		require.Len(t, fetches, 1)
		r.Receive(time.Millisecond, Message{From: 1, To: id, Corr: fetches[0].Corr, Response: true,
			Event: kraft.ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1}})
		r.Take()
		require.Equal(t, kraft.Follower, r.State().Role())
		return r
	}
	preVotes := func(outs []Output) (n int) {
		for _, o := range outs {
			if s, ok := o.(Send); ok {
				if v, ok := s.Message.Event.(kraft.ReceiveVoteRequest); ok && v.PreVote && !s.Message.Response {
					n++
				}
			}
		}
		return n
	}
	granted := func(r *Replica) bool {
		r.Receive(3*time.Millisecond, Message{From: 2, To: r.local.ID, Corr: 9, Event: kraft.ReceiveVoteRequest{
			From: 2, VoterID: r.local.ID, CandidateEpoch: 1, Candidate: 2, CandidateLogEnd: r.State().LogEnd(), PreVote: true}})
		for _, o := range r.Take() {
			if s, ok := o.(Send); ok && s.Message.Response {
				if v, ok := s.Message.Event.(kraft.ReceiveVoteResponse); ok {
					return v.VoteGranted
				}
			}
		}
		t.Fatal("no answer to the pre-vote")
		return false
	}

	first := follower(2)
	first.PeerDown(2*time.Millisecond, 3)
	require.Zero(t, preVotes(first.Take()), "replica 3 is not the leader")
	require.Equal(t, kraft.Follower, first.State().Role())
	first.PeerDown(2*time.Millisecond, 1)
	require.Equal(t, kraft.Prospective, first.State().Role())
	require.Equal(t, 2, preVotes(first.Take()), "the first survivor asks at once")

	hears := follower(3)
	require.False(t, granted(hears), "a voter that hears its leader refuses")

	second := follower(3)
	second.PeerDown(2*time.Millisecond, 1)
	require.Zero(t, preVotes(second.Take()), "the second survivor waits its rank")
	second.PeerDown(2*time.Millisecond, 1)
	require.Zero(t, preVotes(second.Take()), "a second report does not cut the wait short")
	require.Equal(t, kraft.Follower, second.State().Role())
	require.True(t, granted(second), "a voter that lost the leader grants")
}
