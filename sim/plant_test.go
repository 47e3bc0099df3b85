package sim

import (
	"math/rand"
	"testing"
	"time"

	"github.com/kraftquorum/kraft/internal/plant"
	"github.com/stretchr/testify/require"
)

// plantedRun runs a 3-voter, 1-observer cluster with bug planted in every
// replica's layer under a random fault schedule drawn from seed, on a
// lossy network that duplicates messages, then heals: it returns the
// violation or liveness failure, nil if the run passed.
func plantedRun(seed int64, bug plant.Bug) error {
	opts := DefaultOptions()
	opts.Voters, opts.Observers, opts.Seed = 3, 1, seed
	opts.Network.Loss, opts.Network.Duplicate = 0.05, 0.05
	opts.plant = bug
	c, err := New(opts, nil)
	if err != nil {
		return err
	}
	c.Schedule(RandomSchedule(rand.New(rand.NewSource(seed)), 3, 1, 10*time.Second, 8)...)
	if err := c.RunFor(10 * time.Second); err != nil {
		return err
	}
	_, err = c.CheckLiveness()
	return err
}

// TestRandomSchedulesCatchPlantedBugs: each bug planted in the replica
// layer's host logic (the one the runtime runs) makes some of the
// simulator's random schedules fail, while the same schedules pass
// without it.
func TestRandomSchedulesCatchPlantedBugs(t *testing.T) {
	if !plant.Enabled {
		t.Skip("planted bugs need the build tag kraftbug (docs/design.md D201)")
	}
	const seeds = 10
	for seed := int64(1); seed <= seeds; seed++ {
		require.NoError(t, plantedRun(seed, plant.None), "seed %d without a planted bug", seed)
	}
	for _, bug := range plant.Bugs {
		t.Run(bug.String(), func(t *testing.T) {
			failed := 0
			var first error
			for seed := int64(1); seed <= seeds; seed++ {
				if err := plantedRun(seed, bug); err != nil {
					failed++
					if first == nil {
						first = err
					}
				}
			}
			require.NotZero(t, failed, "the planted bug went unnoticed in %d schedules", seeds)
			t.Logf("%d of %d schedules failed; first: %v", failed, seeds, first)
		})
	}
}

// TestPersistLastBreaksPersistBeforeSend: a host that writes a step's
// quorum-state record after the step's messages (plant.PersistLast) is
// caught by the persist-before-send rule, and by no other rule first, in
// most random schedules (docs/design.md D115).
func TestPersistLastBreaksPersistBeforeSend(t *testing.T) {
	if !plant.Enabled {
		t.Skip("planted bugs need the build tag kraftbug (docs/design.md D201)")
	}
	const seeds = 10
	caught := 0
	for seed := int64(1); seed <= seeds; seed++ {
		err := plantedRun(seed, plant.PersistLast)
		if err == nil {
			continue
		}
		require.Equal(t, "persist-before-send", violationRule(t, err), "seed %d: %v", seed, err)
		caught++
		t.Logf("seed %d: %v", seed, err)
	}
	require.GreaterOrEqual(t, caught, seeds/2)
}

// TestRandomSchedulesAnswerReadsNoneStale: the simulator takes a
// linearizable read (replica.ReadIndex) at every replica that believes it
// leads at every client tick, a deposed leader that does not know it yet
// too, and checks each answer against the records committed before the
// read was taken ("stale-read", docs/design.md D120). The random schedules
// (crashes, partitions, loss) answer hundreds of reads, none stale. (The
// read bugs planted in the replica layer need a deposed leader to receive
// messages older than its read after a new leader committed, which these
// schedules' delays do not produce; replica's deterministic tests plant
// them: TestStaleLeaderNeverAnswersARead.)
func TestRandomSchedulesAnswerReadsNoneStale(t *testing.T) {
	const seeds = 20
	reads := 0
	for seed := int64(1); seed <= seeds; seed++ {
		opts := DefaultOptions()
		opts.Voters, opts.Seed = 3, seed
		c, err := New(opts, nil)
		require.NoError(t, err)
		c.Schedule(RandomSchedule(rand.New(rand.NewSource(seed)), 3, 0, 10*time.Second, 8)...)
		require.NoError(t, c.RunFor(10*time.Second), "seed %d", seed)
		reads += c.Stats().Reads
	}
	require.Greater(t, reads, 300, "reads answered")
	t.Logf("%d reads answered over %d schedules, none stale", reads, seeds)
}
