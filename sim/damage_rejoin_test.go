package sim

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// The recovery rule for a replica whose disk lost what it had made durable
// (docs/design.md D91): it does not rejoin with what is left. It moves the
// damaged data aside and starts empty with a new directory id, as a
// replaced disk (KIP-853): an observer, which votes for no one and is
// counted by no leader, until it has caught up from the leader and the
// leader has removed its old key and added the new one (auto-join, Kafka's
// KafkaRaftClient with controller.quorum.auto.join.enable). To the
// protocol the damage is then the loss of the whole disk: OpLoseDisk, which
// gives the replica a new directory id in a dynamic quorum.
//
// Each run (3 or 5 voters, snapshots every 16 or 64 records or none)
// drives the schedule that loses acknowledged records when a damaged
// replica rejoins as it was: a minority of laggards is crashed, records are
// committed by the others, all of those but one (the victim) are crashed,
// the victim's disk is damaged, the victim and the laggards come back
// first (with the victim's records gone and its vote still counted, they
// are a majority that elects a leader without the new records), then the
// rest. Network phases with losses, duplicates and long delays come and
// go. The checker checks every safety
// rule after every event (one leader per epoch, a new leader holds every
// committed record, committed records never change, ...); the run also
// checks, itself, that every record committed before a damage is still
// committed at the end, and that the replaced replica is a voter again
// under its new key before the next damage (one damaged replica at a time:
// a majority of damaged disks is beyond any rule).

// damageRun is what one run of the damage schedule did: how many damages,
// how many damaged replicas were voters again, how many records were
// committed.
type damageRun struct {
	damages, rejoined, committed int
}

// runDamageSchedule runs the damage schedule of seed. dynamic false runs
// the same schedule with a static voter set, where a damaged replica comes
// back under its old key with what is left of its disk (here nothing): the
// rule that loses records. It returns the first violation or lost record.
func runDamageSchedule(seed int64, dynamic bool) (damageRun, error) {
	var run damageRun
	r := rand.New(rand.NewSource(seed))
	opts := DefaultOptions()
	opts.Seed = seed
	opts.Voters = 3 + 2*r.Intn(2)
	opts.SnapshotEvery = []int{-1, 16, 64}[r.Intn(3)]
	if dynamic {
		opts.Dynamic, opts.BootstrapVoters, opts.AutoJoin = true, opts.Voters, true
	}
	c, err := New(opts, nil)
	if err != nil {
		return run, err
	}
	if _, err := c.WaitForLeader(20 * time.Second); err != nil {
		return run, err
	}
	// committed is a prefix of the committed log, as held by a leader.
	var committed []Record
	remember := func() {
		l, ok := c.Leader()
		if !ok {
			return
		}
		recs, _ := c.Log(l)
		if n := c.CommittedLen(); n <= len(recs) && n > len(committed) {
			committed = append([]Record(nil), recs[:n]...)
		}
	}
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+r.Intn(hi-lo+1)) * time.Millisecond }
	episodes := 1 + r.Intn(3)
	for e := 0; e < episodes; e++ {
		if err := c.RunFor(ms(200, 2000)); err != nil {
			return run, err
		}
		if r.Intn(3) == 0 {
			c.SetNetwork(Network{MinDelay: time.Millisecond, MaxDelay: ms(5, 150), Loss: float64(r.Intn(3)) / 10, Duplicate: float64(r.Intn(2)) / 10})
		}
		// f laggards, the victim and f others: the victim and the
		// laggards are a majority without the records the others hold.
		f := (opts.Voters - 1) / 2
		var laggards, others []kraft.NodeID
		perm := r.Perm(opts.Voters)
		for _, i := range perm[:f] {
			laggards = append(laggards, kraft.NodeID(i))
		}
		victim := kraft.NodeID(perm[f])
		for _, i := range perm[f+1:] {
			others = append(others, kraft.NodeID(i))
		}
		for _, id := range laggards {
			c.Crash(id)
		}
		if err := c.RunFor(ms(100, 1500)); err != nil {
			return run, err
		}
		remember()
		for _, id := range others {
			c.Crash(id)
		}
		old := c.Key(victim)
		c.LoseDisk(victim) // what the rule turns damage into: crashed, moved aside, started empty
		run.damages++
		if dynamic && c.Key(victim) == old {
			return run, fmt.Errorf("seed %d: r%d came back from damage with its old key %v", seed, victim, old)
		}
		for _, id := range laggards {
			c.Restart(id)
		}
		if err := c.RunFor(ms(0, 3000)); err != nil {
			return run, err
		}
		c.StopFaults() // restarts the others too
		if !dynamic {
			if _, err := c.WaitForLeader(20 * time.Second); err != nil {
				return run, err
			}
			continue
		}
		// The replaced replica is a voter again under its new key, and
		// its old key is gone, before the next damage.
		back := func() bool {
			hasNew, hasOld := false, false
			for _, k := range c.Voters() {
				hasNew = hasNew || k == c.Key(victim)
				hasOld = hasOld || k == old
			}
			return hasNew && !hasOld && c.State(victim).IsVoter()
		}
		if err := c.RunUntil(c.Now()+30*time.Second, back); err != nil {
			return run, err
		}
		if !back() {
			return run, fmt.Errorf("seed %d: r%d is not a voter under its new key %v within 30s of its damage: voters %v, changes %v%s",
				seed, victim, c.Key(victim), c.Voters(), c.VoterChanges(), c.Describe())
		}
		run.rejoined++
	}
	if _, err := c.CheckLiveness(); err != nil {
		return run, err
	}
	remember()
	l, ok := c.Leader()
	if !ok {
		return run, fmt.Errorf("seed %d: no leader at the end", seed)
	}
	recs, _ := c.Log(l)
	for i, rec := range committed {
		if i >= len(recs) || recs[i] != rec {
			return run, fmt.Errorf("seed %d: LOST COMMITTED RECORD at offset %d (%+v): the leader r%d's log has %d records", seed, i, rec, l, len(recs))
		}
	}
	run.committed = len(committed)
	return run, c.Err()
}

// TestDamagedReplicaRejoinsAsReplacedDisk: the rule over 60 seeds
// (KRAFT_SIM_DAMAGE_SEEDS=N: N): 0 safety violations, 0 committed records
// lost, every damaged replica a voter again under a new key.
func TestDamagedReplicaRejoinsAsReplacedDisk(t *testing.T) {
	seeds := soakEnv(t, "KRAFT_SIM_DAMAGE_SEEDS", 60)
	var total damageRun
	for seed := int64(0); seed < int64(seeds); seed++ {
		run, err := runDamageSchedule(seed, true)
		require.NoError(t, err, "seed %d", seed)
		total.damages += run.damages
		total.rejoined += run.rejoined
		total.committed += run.committed
	}
	t.Logf("%d seeds: %d damages, %d replaced replicas voters again under a new key, 0 violations, 0 of %d committed records lost",
		seeds, total.damages, total.rejoined, total.committed)
}

// TestDamagedReplicaRejoiningAsItWasLosesRecords: the same schedules with
// the rule broken (the damaged replica comes back under its old key, a
// voter with what is left of its disk) lose committed records or break a
// safety rule: the schedules can tell the rule from a wrong one.
func TestDamagedReplicaRejoiningAsItWasLosesRecords(t *testing.T) {
	failed := 0
	var first error
	for seed := int64(0); seed < 30; seed++ {
		if _, err := runDamageSchedule(seed, false); err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	t.Logf("rejoining as it was: %d of 30 seeds fail; the first: %v", failed, first)
	require.Positive(t, failed, "no seed noticed a damaged replica rejoining as it was")
}
