package sim

import (
	"fmt"

	"sort"
	"time"

	"github.com/kraftquorum/kraft"
)

// Failover is what MeasureFailover saw after one leader crash, or
// MeasureHandover after one resignation.
type Failover struct {
	// Took is the virtual time from the crash (or resignation) to a new
	// leader whose high watermark passed the one committed then.
	Took time.Duration
	// Split: the first election after it did not elect a leader
	// (the new leader's epoch is more than one past the old one).
	Split bool
}

// MeasureFailover runs a cluster with opts until it has a leader and has
// committed for settle, crashes the leader, and measures the failover.
func MeasureFailover(opts Options, settle time.Duration) (Failover, error) {
	return measure(opts, settle, OpCrash)
}

// MeasureKill is MeasureFailover with the leader's process killed on a
// host that stays up (OpKill): the other replicas learn it a round trip
// later, rather than by their fetch timeout.
func MeasureKill(opts Options, settle time.Duration) (Failover, error) {
	return measure(opts, settle, OpKill)
}

// MeasureHandover is MeasureFailover with a graceful resignation
// (kraft.Resign: EndQuorumEpoch to the voters) instead of the crash; the
// old leader stays up.
func MeasureHandover(opts Options, settle time.Duration) (Failover, error) {
	return measure(opts, settle, OpResign)
}

func measure(opts Options, settle time.Duration, how OpKind) (Failover, error) {
	resign := how == OpResign
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
	what := map[OpKind]string{OpCrash: "crash", OpKill: "kill", OpResign: "resignation"}[how]
	c.Apply(Op{Kind: how, Node: old})
	start := c.Now()
	leader := old
	// A leader of a later epoch that committed past hwm: after a crash
	// another replica; after a resignation possibly the old leader again,
	// elected in a new epoch.
	done := func(l kraft.NodeID) bool {
		return (resign || l != old) && c.State(l).Epoch() > epoch && c.State(l).HighWatermark() > hwm
	}
	err = c.RunUntil(start+time.Duration(LivenessBound)*c.opts.ElectionTimeout, func() bool {
		l, ok := c.Leader()
		if !ok {
			return false
		}
		leader = l
		return done(l)
	})
	if err != nil {
		return Failover{}, err
	}
	if !done(leader) {
		return Failover{}, fmt.Errorf("sim: seed %d: no new leader committed within %d election timeouts of the %s", opts.Seed, LivenessBound, what)
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
