package sim

import (
	"fmt"
	"sort"
	"time"
)

// Failover is what MeasureFailover saw after one leader crash.
type Failover struct {
	// Took is the virtual time from the crash to a new leader whose high
	// watermark passed the one committed at the crash.
	Took time.Duration
	// Split: the first election after the crash did not elect a leader
	// (the new leader's epoch is more than one past the old one).
	Split bool
}

// MeasureFailover runs a cluster with opts until it has a leader and has
// committed for settle, crashes the leader, and measures the failover.
func MeasureFailover(opts Options, settle time.Duration) (Failover, error) {
	c, err := New(opts, nil)
	if err != nil {
		return Failover{}, err
	}
	old, err := c.WaitForLeader(time.Duration(LivenessBound) * c.opts.ElectionTimeout)
	if err != nil {
		return Failover{}, err
	}
	if err := c.RunFor(settle); err != nil {
		return Failover{}, err
	}
	epoch, hwm := c.State(old).Epoch(), c.State(old).HighWatermark()
	c.Crash(old)
	start := c.Now()
	leader := old
	err = c.RunUntil(start+time.Duration(LivenessBound)*c.opts.ElectionTimeout, func() bool {
		l, ok := c.Leader()
		if !ok || l == old {
			return false
		}
		leader = l
		return c.State(l).HighWatermark() > hwm
	})
	if err != nil {
		return Failover{}, err
	}
	if leader == old || c.State(leader).HighWatermark() <= hwm {
		return Failover{}, fmt.Errorf("sim: seed %d: no new leader committed within %d election timeouts of the crash", opts.Seed, LivenessBound)
	}
	return Failover{Took: c.Now() - start, Split: c.State(leader).Epoch() > epoch+1}, nil
}

// FailoverStats summarizes failovers: the distribution of their times and
// how many split the vote.
type FailoverStats struct {
	N, Splits     int
	P50, P99, Max time.Duration
}

// SummarizeFailovers computes FailoverStats.
func SummarizeFailovers(fs []Failover) FailoverStats {
	st := FailoverStats{N: len(fs)}
	if len(fs) == 0 {
		return st
	}
	took := make([]time.Duration, len(fs))
	for i, f := range fs {
		took[i] = f.Took
		if f.Split {
			st.Splits++
		}
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	st.P50, st.P99, st.Max = took[len(took)/2], took[len(took)*99/100], took[len(took)-1]
	return st
}
