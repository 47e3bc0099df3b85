package sim

import (
	"sort"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// TestRestartedLeaderRejoinsWithinARoundTrip: a crashed leader restarts
// Resigned and sends EndQuorumEpoch; the voters' answers name the new
// leader and its epoch, and the restarted replica follows it at once
// (Kafka's maybeHandleCommonResponse, through ReceiveQuorumResponse)
// instead of waiting for the new leader's BeginQuorumEpoch re-send (up to
// T_f/2 = 1 s). The rejoin time is measured in virtual time from the
// restart to the replica following the current leader, over 50 seeds.
func TestRestartedLeaderRejoinsWithinARoundTrip(t *testing.T) {
	var took []time.Duration
	for seed := int64(0); seed < 50; seed++ {
		opts := DefaultOptions()
		opts.Seed = seed
		c, err := New(opts, nil)
		require.NoError(t, err)
		old, err := c.WaitForLeader(10 * time.Second)
		require.NoError(t, err)
		require.NoError(t, c.RunFor(time.Second))
		c.Crash(old)
		next, err := c.WaitForLeader(20 * time.Second)
		require.NoError(t, err)
		require.NoError(t, c.RunFor(500*time.Millisecond))
		c.Restart(old)
		start := c.Now()
		require.NoError(t, c.RunUntil(start+10*time.Second, func() bool {
			s := c.State(old)
			return s.Role() == kraft.Follower && s.Leader() == c.State(next).Leader() && s.Epoch() == c.State(next).Epoch()
		}))
		took = append(took, c.Now()-start)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	p50, max := took[len(took)/2], took[len(took)-1]
	t.Logf("rejoin after a restart over %d seeds: median %v, max %v", len(took), p50, max)
	// Message delays are 1-20 ms: a round trip is at most 40 ms.
	require.Less(t, p50, 100*time.Millisecond)
}
