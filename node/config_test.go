package node

import (
	"github.com/kraftquorum/kraft/replica"
	"strings"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// TestConfigFetchMaxWait: an unset FetchMaxWait is Kafka's 500 ms, or a
// quarter of the fetch timeout if that is shorter; one that is not below
// the fetch timeout is refused by Start with an error that says why.
func TestConfigFetchMaxWait(t *testing.T) {
	base := func(fetchTimeout, maxWait time.Duration) Config {
		return Config{Config: replica.Config{Kraft: kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}}, FetchTimeout: fetchTimeout},
			Log:     storage.NewMemLog(),
			Records: &MemRecords{}}, Transport: NewMemNetwork().Endpoint(1),
		}.withMaxWait(maxWait)
	}
	for _, tc := range []struct {
		fetchTimeout, maxWait, want time.Duration
	}{
		{0, 0, DefaultFetchMaxWait},                        // kraft's 2 s fetch timeout: Kafka's 500 ms
		{4 * time.Second, 0, DefaultFetchMaxWait},          // never more than Kafka's
		{200 * time.Millisecond, 0, 50 * time.Millisecond}, // a quarter of a short fetch timeout
		{200 * time.Millisecond, 150 * time.Millisecond, 150 * time.Millisecond},
		{0, 1999 * time.Millisecond, 1999 * time.Millisecond},
	} {
		c, err := base(tc.fetchTimeout, tc.maxWait).withDefaults()
		require.NoError(t, err, "%+v", tc)
		require.Equal(t, tc.want, c.FetchMaxWait, "%+v", tc)
	}
	for _, tc := range []struct{ fetchTimeout, maxWait time.Duration }{
		{200 * time.Millisecond, DefaultFetchMaxWait},
		{200 * time.Millisecond, 200 * time.Millisecond},
		{0, kraft.DefaultFetchTimeout},
	} {
		n, err := Start(base(tc.fetchTimeout, tc.maxWait))
		require.Nil(t, n)
		require.Error(t, err, "%+v", tc)
		require.True(t, strings.Contains(err.Error(), "FetchMaxWait") && strings.Contains(err.Error(), "fetch timeout"), "%v", err)
	}
}

func (c Config) withMaxWait(d time.Duration) Config {
	c.FetchMaxWait = d
	return c
}

// TestNodeIdleClusterKeepsItsLeader: with a 400 ms fetch timeout and the
// default fetch max wait, an idle cluster keeps its leader over many long
// polls (parked Fetches answered when their wait is up): the wait is a
// quarter of the fetch timeout, so a follower hears from its leader well
// before its fetch timer fires. With Kafka's 500 ms wait every parked
// Fetch outlived its follower's fetch timer, and the cluster went through
// about one election per long poll. A loaded machine may still delay a
// follower past its fetch timer now and then (a timing the test does not
// assert), so it requires elections to be rare against the long polls,
// not absent, and counts the long polls of whichever node leads.
func TestNodeIdleClusterKeepsItsLeader(t *testing.T) {
	net := NewMemNetwork()
	voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
	nodes := map[kraft.NodeID]*Node{}
	for _, v := range voters {
		nd, err := Start(Config{Config: replica.Config{Kraft: kraft.Config{
			Local: v, Voters: voters, Seed: uint64(v.ID) * 31,
			ElectionTimeout: 200 * time.Millisecond, FetchTimeout: 400 * time.Millisecond,
		},
			Log: storage.NewMemLog(), Records: &MemRecords{}}, Transport: net.Endpoint(v.ID),
		})
		require.NoError(t, err)
		nodes[v.ID] = nd
		t.Cleanup(func() { _ = nd.Close() })
	}
	// epoch is the highest epoch a node is in; polls the long polls all
	// nodes answered (only a leader answers any).
	epoch := func() (e kraft.Epoch) {
		for _, nd := range nodes {
			st, err := nd.Status()
			require.NoError(t, err)
			if st.Epoch > e {
				e = st.Epoch
			}
		}
		return e
	}
	polls := func() (total int) {
		for _, nd := range nodes {
			n := 0
			require.NoError(t, nd.call(func() { n = nd.r.LongPolls() }))
			total += n
		}
		return total
	}
	require.Eventually(t, func() bool {
		for _, nd := range nodes {
			if st, err := nd.Status(); err == nil && st.Role == "Leader" {
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond)
	startEpoch, first := epoch(), polls()
	const want = 20
	require.Eventually(t, func() bool { return polls() >= first+want }, 30*time.Second, 5*time.Millisecond,
		"the leader answers parked Fetches when their wait is up")
	elections := int(epoch() - startEpoch)
	t.Logf("%d long polls answered, %d elections", polls()-first, elections)
	require.LessOrEqual(t, elections*4, want, "an idle cluster keeps its leader over most long polls")
}
