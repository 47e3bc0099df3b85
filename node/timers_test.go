package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// maxLiveTimers is the most timers one node of a three-voter cluster may
// have armed at once: one per kraft timer kind, one per request in flight
// (a leader's BeginQuorumEpoch to each voter, a follower's Fetch), a
// retry backoff or two, and one per parked Fetch (one per follower).
const maxLiveTimers = int64(kraft.VoterChangeTimer+1) + 10

// TestNodeTimersStayBoundedUnderLoad: under a steady stream of appends,
// every fetch round re-arms the followers' fetch timers and every append
// wakes the Fetches parked at the leader. A node stops the timer an
// arming replaces and the timer of a parked Fetch answered early, so the
// timers it has armed at once stay a handful however many appends go
// through (the stale timers were counted in thousands under load, each
// firing into the loop).
func TestNodeTimersStayBoundedUnderLoad(t *testing.T) {
	c := newTestCluster(t, 3)
	c.appendCommitted("warm-up")
	for _, nd := range c.nodes {
		atomic.StoreInt64(&nd.timersMax, atomic.LoadInt64(&nd.timersLive))
	}
	const clients, appends = 8, 1600
	var done int64
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			l := c.leader()
			for j := 0; atomic.LoadInt64(&done) < appends; j++ {
				// A leader change under load fails some appends: go on at
				// the new leader (the count is of timers, not records).
				if _, err := l.Append(context.Background(), []byte(fmt.Sprintf("c%d-%d", i, j))); err != nil {
					l = c.leader()
					continue
				}
				atomic.AddInt64(&done, 1)
			}
		}(i)
	}
	wg.Wait()
	for id, nd := range c.nodes {
		max := atomic.LoadInt64(&nd.timersMax)
		t.Logf("node %d: at most %d timers armed at once, %d now", id, max, atomic.LoadInt64(&nd.timersLive))
		require.LessOrEqual(t, max, maxLiveTimers, "node %d: timers armed at once", id)
	}
}
