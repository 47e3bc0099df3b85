package sim

import (
	"sort"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
)

func TestDebugFailoverBreakdown(t *testing.T) {
	for _, v := range []int{3, 5} {
		var tFT, tLead, tDone []time.Duration
		for seed := int64(1); seed <= 300; seed++ {
			opts := DefaultOptions()
			opts.Voters, opts.Seed, opts.SnapshotEvery = v, seed, -1
			c, _ := New(opts, nil)
			old, _ := c.WaitForLeader(20 * time.Second)
			_ = c.RunFor(3 * time.Second)
			epoch, hwm := c.State(old).Epoch(), c.State(old).HighWatermark()
			var ft, ld time.Duration = -1, -1
			start := c.Now() // set below
			c.OnStep = func(id kraft.NodeID, e kraft.Event, before, after kraft.State, acts []kraft.Action) {
				if _, ok := e.(kraft.FetchTimeout); ok && ft < 0 {
					ft = c.Now() - start
				}
				if after.Role() == kraft.Leader && before.Role() != kraft.Leader && ld < 0 {
					ld = c.Now() - start
				}
			}
			c.Crash(old)
			start = c.Now()
			_ = c.RunUntil(start+20*time.Second, func() bool {
				l, ok := c.Leader()
				return ok && l != old && c.State(l).Epoch() > epoch && c.State(l).HighWatermark() > hwm
			})
			tFT, tLead, tDone = append(tFT, ft), append(tLead, ld), append(tDone, c.Now()-start)
		}
		p := func(x []time.Duration) time.Duration { sort.Slice(x, func(i, j int) bool { return x[i] < x[j] }); return x[len(x)/2] }
		t.Logf("%d voters: p50 first fetch timeout %v, leader %v, done %v", v, p(tFT), p(tLead), p(tDone))
	}
}
