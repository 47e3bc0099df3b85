package sim

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/plant"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// Disk faults in the random schedules (docs/design.md D96-D99): flipped
// bits and lost writes in synced records, lost and rolled-back
// quorum-state records (OpDamage, damage.go), one damaged replica at a
// time, among crashes, restarts, partitions, lossy and duplicating
// network phases and slow disks. The host detects the damage at the next
// start as package storage does and applies the recovery rule (D91): a
// replaced disk in a dynamic voter set, a refusal and the operator's
// restore in a static one. The checker checks every safety rule after
// every event; the run checks at the end that the leader's log holds every
// record ever committed, those committed before a damage among them.

// diskRun is what runs with disk faults did.
type diskRun struct {
	runs, failed int
	stats        Stats
	// beforeDamage counts the records committed before a run's last
	// damage, all still committed at the end.
	beforeDamage int
	first        error
}

func (d *diskRun) add(st Stats, before int, err error) {
	d.runs++
	d.stats.Events += st.Events
	d.stats.Damages += st.Damages
	d.stats.DamagesSkipped += st.DamagesSkipped
	d.stats.DamagesBusy += st.DamagesBusy
	d.stats.DamagesReplaced += st.DamagesReplaced
	d.stats.DamagesRefused += st.DamagesRefused
	d.stats.DamagesRestored += st.DamagesRestored
	d.stats.DamagesCut += st.DamagesCut
	d.stats.Aimed += st.Aimed
	d.stats.AimedDamages += st.AimedDamages
	if d.stats.DamagesByKind == nil {
		d.stats.DamagesByKind = map[Damage]int{}
	}
	for k, n := range st.DamagesByKind {
		d.stats.DamagesByKind[k] += n
	}
	d.beforeDamage += before
	if err != nil {
		d.failed++
		if d.first == nil {
			d.first = err
		}
	}
}

func (d *diskRun) String() string {
	return fmt.Sprintf("%d runs, %d failed: %d damages injected (%d aimed, of %d aimed faults; flip %d, lost write %d, lost quorum state %d, rolled-back quorum state %d), %d skipped (%d while another was under way); %d replaced disks, %d refusals (%d restored), %d logs cut; %d records committed before a damage",
		d.runs, d.failed, d.stats.Damages, d.stats.AimedDamages, d.stats.Aimed, d.stats.DamagesByKind[DamageFlip], d.stats.DamagesByKind[DamageLostWrite],
		d.stats.DamagesByKind[DamageLostQuorumState], d.stats.DamagesByKind[DamageRolledBackQuorumState], d.stats.DamagesSkipped, d.stats.DamagesBusy,
		d.stats.DamagesReplaced, d.stats.DamagesRefused, d.stats.DamagesRestored, d.stats.DamagesCut, d.beforeDamage)
}

// keepsCommitted checks that the leader's log (its snapshot's records and
// its log) holds every record the checker saw committed; it returns how
// many there were.
func keepsCommitted(c *Cluster, seed int64) (int, error) {
	l, ok := c.Leader()
	if !ok {
		return 0, fmt.Errorf("seed %d: no leader at the end", seed)
	}
	committed := c.check.Committed()
	recs, _ := c.Log(l)
	for i, rec := range committed {
		if i >= len(recs) || recs[i] != rec {
			return 0, fmt.Errorf("seed %d: LOST COMMITTED RECORD at offset %d (%+v): the leader r%d's log has %d records", seed, i, rec, l, len(recs))
		}
	}
	return len(committed), nil
}

// runDiskFaults runs a random schedule of seed with disk faults on 3 or 5
// voters, two phases of one slow disk and up to two faults aimed right
// after log operations (D130), and heals; it returns the run's stats, how many records were
// committed before its last damage, and the first violation, liveness
// failure or lost committed record.
func runDiskFaults(seed int64, dynamic bool, bug plant.Bug) (Stats, int, error) {
	r := rand.New(rand.NewSource(seed))
	opts := diskFaultOptions(r, seed, dynamic, bug)
	opts.Network.Loss, opts.Network.Duplicate = 0.02, 0.02
	opts.AimedFaults = 2 // D130
	c, err := New(opts, nil)
	if err != nil {
		return Stats{}, 0, err
	}
	before := 0
	c.OnOp = func(op Op) {
		if op.Kind == OpDamage {
			before = c.CommittedLen()
		}
	}
	const window = 12 * time.Second
	c.Schedule(RandomSchedule(r, opts.Voters, 0, window, 8)...)
	c.Schedule(RandomDiskFaults(r, opts.Voters+opts.Observers, window, 4)...)
	c.Schedule(randomIdles(r, window, 2)...)
	c.Schedule(randomSlowDisks(r, opts.Voters+opts.Observers, window, 2)...)
	if err := c.RunFor(window + 3*time.Second); err != nil {
		return c.Stats(), before, fmt.Errorf("seed %d: %w", seed, err)
	}
	if _, err := c.CheckLiveness(); err != nil {
		return c.Stats(), before, fmt.Errorf("seed %d: %w", seed, err)
	}
	if _, err := keepsCommitted(c, seed); err != nil {
		return c.Stats(), before, err
	}
	return c.Stats(), before, c.Err()
}

// randomIdles draws n quiet phases (OpIdle) of 0.5 to 3 s in [0, window):
// a log whose last records were made durable by a DeleteBefore or a
// Truncate and then wait for no Sync is where review 4 found S1.
func randomIdles(r *rand.Rand, window time.Duration, n int) []Op {
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = Op{At: time.Duration(r.Int63n(int64(window))), Kind: OpIdle,
			Idle: 500*time.Millisecond + time.Duration(r.Int63n(int64(2500*time.Millisecond)))}
	}
	return ops
}

// randomSlowDisks draws n phases of 1 to 4 s in [0, window) in which one
// replica's disk is slow (flushes within 200 ms, 1 s or 3 s) while the
// others' are not: the replica lags, learns of records committed without
// it before it has synced them, and cleans its log behind a snapshot past
// what it has synced (docs/design.md D130).
func randomSlowDisks(r *rand.Rand, total int, window time.Duration, n int) []Op {
	ops := make([]Op, 0, 2*n)
	for i := 0; i < n; i++ {
		at := time.Duration(r.Int63n(int64(window)))
		g := []kraft.NodeID{kraft.NodeID(r.Intn(total))}
		ops = append(ops,
			Op{At: at, Kind: OpDisk, Group: g, FlushDelay: SlowFlushDelays[2+r.Intn(len(SlowFlushDelays)-2)]},
			Op{At: at + time.Second + time.Duration(r.Int63n(int64(3*time.Second))), Kind: OpDisk, Group: g})
	}
	return ops
}

// diskFaultOptions draws a disk-fault run's cluster from r: 3 or 5 voters,
// snapshots every 16 or 64 records or none, the log cleaned behind the
// newest one or the two newest, a dynamic voter set with
// auto-join or a static one, bug planted.
func diskFaultOptions(r *rand.Rand, seed int64, dynamic bool, bug plant.Bug) Options {
	opts := DefaultOptions()
	opts.Seed = seed
	opts.Voters = 3 + 2*r.Intn(2)
	opts.Observers = r.Intn(2)
	opts.SnapshotEvery = []int{-1, 16, 64}[r.Intn(3)]
	opts.SnapshotsKept = 1 + r.Intn(2)
	if dynamic {
		opts.Dynamic, opts.AutoJoin = true, true
	}
	opts.plant = bug
	return opts
}

// TestRandomSchedulesWithDiskFaults: 100 random schedules with disk faults
// in a dynamic voter set and 100 in a static one (KRAFT_SIM_DISK_SEEDS=N:
// N each): 0 safety violations, every run live once healed, 0 committed
// records lost.
func TestRandomSchedulesWithDiskFaults(t *testing.T) {
	seeds := soakEnv(t, "KRAFT_SIM_DISK_SEEDS", 100)
	for _, dynamic := range []bool{true, false} {
		name := map[bool]string{true: "dynamic", false: "static"}[dynamic]
		t.Run(name, func(t *testing.T) {
			var total diskRun
			for seed := int64(1); seed <= int64(seeds); seed++ {
				st, before, err := runDiskFaults(seed, dynamic, plant.None)
				require.NoError(t, err, "seed %d", seed)
				total.add(st, before, nil)
			}
			t.Logf("%s: %v; 0 violations, 0 committed records lost", name, &total)
			require.Positive(t, total.stats.Damages)
			require.Positive(t, total.stats.AimedDamages, "no aimed fault damaged a disk")
			for _, k := range Damages {
				require.Positive(t, total.stats.DamagesByKind[k], "no %s injected", k)
			}
			if dynamic {
				require.Positive(t, total.stats.DamagesReplaced)
				require.Zero(t, total.stats.DamagesRefused)
			} else {
				require.Positive(t, total.stats.DamagesRefused)
				require.Zero(t, total.stats.DamagesReplaced)
			}
		})
	}
}

// runTornSchedule runs the schedule of the defect D70 fixed (D90's), with
// a real disk fault: f laggards are crashed, records are committed by the
// others, those are crashed but one, the victim, whose synced records are
// damaged (a flipped bit or a lost write), the victim and the laggards
// are started first (a majority, were the victim to come back with what
// is left of its log under its old key and vote), then, 0-3 s later, the
// rest. It returns the run's stats and the first violation or lost
// committed record.
func runTornSchedule(seed int64, dynamic bool, bug plant.Bug) (Stats, int, error) {
	r := rand.New(rand.NewSource(seed))
	opts := diskFaultOptions(r, seed, dynamic, bug)
	c, err := New(opts, nil)
	if err != nil {
		return Stats{}, 0, err
	}
	fail := func(err error) (Stats, int, error) { return c.Stats(), 0, fmt.Errorf("seed %d: %w", seed, err) }
	if _, err := c.WaitForLeader(20 * time.Second); err != nil {
		return fail(err)
	}
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+r.Intn(hi-lo+1)) * time.Millisecond }
	before := 0
	for e := 0; e < 1+r.Intn(3); e++ {
		if err := c.RunFor(ms(200, 2000)); err != nil {
			return fail(err)
		}
		f := (opts.Voters - 1) / 2
		perm := r.Perm(opts.Voters)
		for _, i := range perm[:f] {
			c.Crash(kraft.NodeID(i))
		}
		if err := c.RunFor(ms(300, 1500)); err != nil {
			return fail(err)
		}
		for _, i := range perm[f+1:] {
			c.Crash(kraft.NodeID(i))
		}
		victim := kraft.NodeID(perm[f])
		before = c.CommittedLen()
		c.Damage(victim, []Damage{DamageFlip, DamageLostWrite}[r.Intn(2)])
		for _, i := range perm[:f+1] {
			c.Restart(kraft.NodeID(i))
		}
		if err := c.RunFor(ms(0, 3000)); err != nil {
			return fail(err)
		}
		c.StopFaults()
		// The damage is over (the victim restored, or a voter again
		// under its new key) before the next one.
		if err := c.RunUntil(c.Now()+30*time.Second, c.damageOver); err != nil {
			return fail(err)
		}
		if !c.damageOver() {
			return fail(fmt.Errorf("the damage of r%d is not over within 30 s: voters %v%s", victim, c.Voters(), c.Describe()))
		}
	}
	if _, err := c.CheckLiveness(); err != nil {
		return fail(err)
	}
	if _, err := keepsCommitted(c, seed); err != nil {
		return c.Stats(), before, err
	}
	return c.Stats(), before, c.Err()
}

// TestDiskFaultsInTheDefectsSchedule: the schedule of the defect D70
// fixed, with flipped bits and lost writes in synced records, over 60
// seeds in each kind of voter set: 0 violations, 0 committed records lost.
func TestDiskFaultsInTheDefectsSchedule(t *testing.T) {
	seeds := soakEnv(t, "KRAFT_SIM_DISK_SEEDS", 60)
	for _, dynamic := range []bool{true, false} {
		var total diskRun
		for seed := int64(1); seed <= int64(seeds); seed++ {
			st, before, err := runTornSchedule(seed, dynamic, plant.None)
			require.NoError(t, err, "dynamic %v seed %d", dynamic, seed)
			total.add(st, before, nil)
		}
		t.Logf("dynamic %v: %v", dynamic, &total)
		require.Positive(t, total.stats.Damages)
	}
}

// TestRandomSchedulesCatchTornTail: with the planted bug plant.TornTail
// (damage taken for a torn tail: the log cut at the damage, the replica
// back under its old key with its vote), the defect's schedules lose
// committed records or break a safety rule, in both kinds of voter set;
// the same seeds pass without it (TestDiskFaultsInTheDefectsSchedule).
// The random schedules of TestRandomSchedulesWithDiskFaults catch it too,
// less often (the defect needs a damaged replica and a lagging minority
// to make a majority).
func TestRandomSchedulesCatchTornTail(t *testing.T) {
	seeds := soakEnv(t, "KRAFT_SIM_DISK_SEEDS", 30)
	for _, dynamic := range []bool{true, false} {
		var torn, random diskRun
		for seed := int64(1); seed <= int64(seeds); seed++ {
			st, before, err := runTornSchedule(seed, dynamic, plant.TornTail)
			torn.add(st, before, err)
		}
		// The random schedules damage observers and records the log no
		// longer needs too (the disk's bytes, D118): four times the runs.
		for seed := int64(1); seed <= int64(4*seeds); seed++ {
			st, before, err := runDiskFaults(seed, dynamic, plant.TornTail)
			random.add(st, before, err)
		}
		t.Logf("dynamic %v, %s, the defect's schedule: %v; first: %v", dynamic, plant.TornTail, &torn, torn.first)
		t.Logf("dynamic %v, %s, random schedules: %v; first: %v", dynamic, plant.TornTail, &random, random.first)
		require.Positive(t, torn.failed, "the planted bug went unnoticed in the defect's schedules")
		require.Positive(t, random.failed, "the planted bug went unnoticed in the random schedules")
	}
}

// TestDetectIsStoragesVerdict: the quorum-state damage the host injects is
// damage storage.CheckQuorumState sees (it returns a
// *storage.QuorumStateDamageError for the record the damage leaves), and
// nothing is injected where no local check can see the damage. (The
// damage itself is made in the disk's bytes and found by datadir.Open.)
func TestDetectIsStoragesVerdict(t *testing.T) {
	n := &node{id: 1, log: []Record{{Epoch: 1}, {Epoch: 1}, {Epoch: 2}, {Epoch: 3}}, flushed: 3}
	n.record = &kraft.QuorumRecord{Epoch: 3, LeaderID: 0}
	n.history = []qsFiles{{record: kraft.QuorumRecord{Epoch: 1, LeaderID: 0}}, {record: kraft.QuorumRecord{Epoch: 2, LeaderID: 2}}, {record: kraft.QuorumRecord{Epoch: 3, LeaderID: 0}}}
	i, ok := detect(n, DamageLostQuorumState)
	require.True(t, ok)
	require.Equal(t, -1, i)
	var qe *storage.QuorumStateDamageError
	require.ErrorAs(t, storage.CheckQuorumState(qsPath, nil, n.syncedEpoch()), &qe)
	i, ok = detect(n, DamageRolledBackQuorumState)
	require.True(t, ok)
	require.Equal(t, 0, i, "the newest record below the log's synced epoch 2")
	old := n.history[i].record
	require.ErrorAs(t, storage.CheckQuorumState(qsPath, &old, n.syncedEpoch()), &qe)
	require.ErrorIs(t, storage.CheckQuorumState(qsPath, &old, n.syncedEpoch()), storage.ErrDamaged)
	// A rollback to a record of the log's synced epoch, or a loss with a
	// log of epoch 0, no local check can see: not injected.
	n.history = n.history[1:]
	_, ok = detect(n, DamageRolledBackQuorumState)
	require.False(t, ok)
	n.log, n.flushed = []Record{{Epoch: 0}}, 1
	_, ok = detect(n, DamageLostQuorumState)
	require.False(t, ok)
}
