package sim

import (
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failover crashes the leader of a settled cluster and measures, in
// virtual time, how long it takes until a new leader has moved the high
// watermark past what was committed at the crash, and whether the first
// election after the crash split (the new leader's epoch is more than one
// past the old one).
func failover(t *testing.T, voters int, seed int64) (time.Duration, bool) {
	opts := DefaultOptions()
	opts.Voters, opts.Seed = voters, seed
	c, err := New(opts, nil)
	require.NoError(t, err)
	old, err := c.WaitForLeader(20 * time.Second)
	require.NoError(t, err)
	require.NoError(t, c.RunFor(3*time.Second))
	epoch, hwm := c.State(old).Epoch(), c.State(old).HighWatermark()
	c.Crash(old)
	start := c.Now()
	var leader = old
	require.NoError(t, c.RunUntil(start+time.Minute, func() bool {
		l, ok := c.Leader()
		if !ok || l == old {
			return false
		}
		leader = l
		return c.State(l).HighWatermark() > hwm
	}))
	require.NotEqual(t, old, leader, "seed %d: no new leader", seed)
	return c.Now() - start, c.State(leader).Epoch() > epoch+1
}

// TestFailoverWithoutSplitVotes: over 200 seeds each of 3 and 5 voters,
// a leader crash is followed by a new leader that commits within
// T_f + 2 T_e (p99), and fewer than 5% of failovers split the vote.
func TestFailoverWithoutSplitVotes(t *testing.T) {
	if testing.Short() {
		t.Skip("200 failovers per cluster size")
	}
	opts := DefaultOptions()
	bound := opts.FetchTimeout + 2*opts.ElectionTimeout
	for _, voters := range []int{3, 5} {
		var took []time.Duration
		splits := 0
		const seeds = 200
		for seed := int64(0); seed < seeds; seed++ {
			d, split := failover(t, voters, seed)
			took = append(took, d)
			if split {
				splits++
			}
		}
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		p50, p99, max := took[len(took)/2], took[len(took)*99/100], took[len(took)-1]
		t.Logf("%d voters, %d failovers: p50 %v, p99 %v, max %v, split votes %d (%.1f%%)",
			voters, seeds, p50.Round(time.Millisecond), p99.Round(time.Millisecond), max.Round(time.Millisecond), splits, 100*float64(splits)/seeds)
		assert.Less(t, float64(splits)/seeds, 0.05, "%d voters: split votes", voters)
		assert.LessOrEqual(t, p99, bound, "%d voters: p99 failover", voters)
	}
}
