package sim

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/kraftquorum/kraft"
)

// RandomSchedule draws n fault operations in [0, window) for a cluster of
// the given size: crashes (half of them kills that the others notice),
// restarts, resignations, symmetric and one-way
// partitions, heals, lossy or duplicating network phases, and slow disk
// phases (flushes that take up to three election timeouts). Disk loss is
// left out (see the package doc); add OpLoseDisk operations by hand, and
// disk faults with RandomDiskFaults.
func RandomSchedule(r *rand.Rand, voters, observers int, window time.Duration, n int) []Op {
	total := voters + observers
	ops := make([]Op, 0, n)
	for i := 0; i < n; i++ {
		op := Op{At: time.Duration(r.Int63n(int64(window))), Node: kraft.NodeID(r.Intn(total))}
		switch k := r.Intn(11); {
		case k < 2:
			// Half the crashes are kills, which the other replicas
			// notice (the parity of the time draws it, so that the
			// random stream, and every other operation of a seed's
			// schedule, stay as they were before kills).
			op.Kind = OpCrash
			if op.At%2 == 1 {
				op.Kind = OpKill
			}
		case k < 4:
			op.Kind = OpRestart
		case k < 5:
			op.Kind = OpResign
		case k < 7:
			op.Kind, op.Group = OpPartition, randomGroup(r, total)
		case k < 8:
			op.Kind, op.Group = OpOneWay, randomGroup(r, total)
		case k < 9:
			op.Kind = OpHeal
		case k < 10:
			op.Kind = OpNetwork
			op.Network = &Network{
				MinDelay: time.Millisecond, MaxDelay: time.Duration(1+r.Intn(100)) * time.Millisecond,
				Loss: float64(r.Intn(4)) / 10, Duplicate: float64(r.Intn(3)) / 10,
			}
		default:
			op.Kind, op.FlushDelay = OpDisk, SlowFlushDelays[r.Intn(len(SlowFlushDelays))]
		}
		ops = append(ops, op)
	}
	return ops
}

// SlowFlushDelays are the maximum flush delays a slow disk phase draws
// from: from an instant flush to three times Kafka's election timeout.
var SlowFlushDelays = []time.Duration{0, 20 * time.Millisecond, 200 * time.Millisecond, time.Second, 3 * time.Second}

func randomGroup(r *rand.Rand, total int) []kraft.NodeID {
	var g []kraft.NodeID
	for len(g) == 0 {
		for i := 0; i < total; i++ {
			if r.Intn(2) == 0 {
				g = append(g, kraft.NodeID(i))
			}
		}
	}
	return g
}

// LivenessBound is the time, in election timeouts T_e, within which a
// cluster whose faults have stopped must have a leader that a majority of
// voters follows, with every running replica following it and none
// Prospective, and every replica caught up with what was committed half way
// through.
const LivenessBound = 20

// CheckLiveness stops every fault (StopFaults) and runs for
// LivenessBound election timeouts. It fails unless a leader that a majority
// follows appears within that time and, at the end, every running replica
// follows it (so none is Prospective). It returns how long the first
// majority-followed leader took to appear.
func (c *Cluster) CheckLiveness() (time.Duration, error) {
	c.StopFaults()
	start := c.now
	bound := time.Duration(LivenessBound) * c.opts.ElectionTimeout
	if _, err := c.WaitForLeader(bound); err != nil {
		return 0, err
	}
	took := c.now - start
	if err := c.RunUntil(start+bound/2, nil); err != nil {
		return took, err
	}
	committed := c.check.committedLen()
	if err := c.RunUntil(start+bound, nil); err != nil {
		return took, err
	}
	l, ok := c.Leader()
	if !ok {
		return took, fmt.Errorf("sim: leader lost after healing, at %v: %s", c.now, c.Describe())
	}
	ep := c.nodes[l].st.Epoch()
	if err := c.checkCaughtUp(l, committed); err != nil {
		return took, err
	}
	for _, n := range c.nodes {
		s := n.st
		if n.id != l && (s.Role() != kraft.Follower || s.Leader() != l || s.Epoch() != ep) {
			return took, fmt.Errorf("sim: replica %d does not follow leader %d %v after healing (Prospective for %v): %s",
				n.id, l, c.now-start, c.check.ProspectiveFor(n.id), c.Describe())
		}
	}
	return took, nil
}

// checkCaughtUp fails unless every running replica's log holds the first
// committed records (durably) and its high watermark has reached them:
// replication must make progress once faults stop, not only elections.
func (c *Cluster) checkCaughtUp(leader kraft.NodeID, committed int) error {
	for _, n := range c.nodes {
		if !n.up {
			continue
		}
		if n.flushed < committed || c.check.matched(n, committed) < committed || n.st.HighWatermark() < int64(committed) {
			return fmt.Errorf("sim: replica %d did not catch up with the %d records committed half way through healing (flushed %d, high watermark %d, leader %d): %s",
				n.id, committed, n.flushed, n.st.HighWatermark(), leader, c.Describe())
		}
	}
	return nil
}

// RandomVoterChanges draws n voter changes in [0, window) for a cluster
// of the given number of replicas (Options.Dynamic): AddRaftVoter and
// RemoveRaftVoter requests naming a replica drawn at random. Requests
// that make no sense then (adding a voter, removing a non-voter, a second
// change while one is pending) are refused by the leader, as they would be
// in Kafka.
func RandomVoterChanges(r *rand.Rand, replicas int, window time.Duration, n int) []Op {
	ops := make([]Op, 0, n)
	for i := 0; i < n; i++ {
		op := Op{At: time.Duration(r.Int63n(int64(window))), Kind: OpAddVoter, Node: kraft.NodeID(r.Intn(replicas))}
		if r.Intn(2) == 0 {
			op.Kind = OpRemoveVoter
		}
		ops = append(ops, op)
	}
	return ops
}
