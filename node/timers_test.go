package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxLiveTimers is the most timers a node may have: one, the replica
// layer's next deadline, re-armed in place.
const maxLiveTimers = int64(1)

// TestNodeTimersStayBoundedUnderLoad: under a steady stream of appends,
// every fetch round moves the followers' fetch deadlines and every append
// wakes the Fetches parked at the leader. A node has one timer, at the
// replica layer's next deadline, re-armed in place: however many appends
// go through, it never has more (the stale timers of the first runtime
// were counted in thousands under load, each firing into the loop).
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
