package sim

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// TestAimedFaultStrikesAtTheSyncUnderWay: an aimed fault at a replica
// whose log has a sync under way strikes right after that sync completes
// (aimAtSync), not at its own time, and the replica is restarted within a
// second (docs/design.md D130).
func TestAimedFaultStrikesAtTheSyncUnderWay(t *testing.T) {
	opts := DefaultOptions()
	opts.Seed = 7
	opts.SnapshotEvery = -1
	opts.AimedFaults = 1
	c, err := New(opts, nil)
	require.NoError(t, err)
	l, err := c.WaitForLeader(10 * time.Second)
	require.NoError(t, err)
	require.NoError(t, c.RunFor(time.Second))
	f := (l + 1) % kraft.NodeID(opts.Voters)
	n := c.nodes[f]
	// The follower's disk flushes within 2 s: the aim window (200 ms) ends
	// long before most of its syncs.
	c.Apply(Op{Kind: OpDisk, Group: []kraft.NodeID{f}, FlushDelay: 2 * time.Second})
	require.NoError(t, c.RunUntil(c.now+5*time.Second, func() bool {
		return n.flushAt && c.flushDueAt(f) > c.now+defaultAimWindow
	}))
	require.True(t, n.flushAt, "no slow sync under way")
	due := c.flushDueAt(f)

	c.aim(n, "truncate", true)
	require.NotNil(t, n.aim)
	var struck time.Duration = -1
	c.OnOp = func(op Op) {
		// The timed op finds the sync under way and leaves the fault
		// waiting for it (n.aim stays).
		if op.Aimed != "" && n.aim == nil {
			struck = op.At
			require.False(t, n.up, "the aimed fault crashes its replica")
		}
	}
	require.NoError(t, c.RunUntil(due+time.Millisecond, func() bool { return struck >= 0 }))
	require.Equal(t, due, struck, "the fault struck at %v, the sync completed at %v", struck, due)
	require.Nil(t, n.aim)
	require.Equal(t, 1, c.Stats().Aimed)
	// Restarted within a second; after a damage in a static voter set,
	// refused and restored RestoreDelay later.
	require.NoError(t, c.RunFor(time.Second+RestoreDelay))
	require.True(t, n.up, "the replica is not back")

	// The run's budget is spent: no second aimed fault.
	c.aim(n, "truncate", true)
	require.Nil(t, n.aim)
}

// TestStopFaultsEndsAimedFaults: an aimed fault on its way when the faults
// stop (CheckLiveness heals the cluster) does not strike.
func TestStopFaultsEndsAimedFaults(t *testing.T) {
	opts := DefaultOptions()
	opts.Seed = 3
	opts.SnapshotEvery = -1
	opts.AimedFaults = 1
	c, err := New(opts, nil)
	require.NoError(t, err)
	l, err := c.WaitForLeader(10 * time.Second)
	require.NoError(t, err)
	n := c.nodes[(l+1)%kraft.NodeID(opts.Voters)]
	c.aim(n, "delete_before", true)
	require.NotNil(t, n.aim)
	c.StopFaults()
	struck := false
	c.OnOp = func(op Op) { struck = struck || op.Aimed != "" && !n.up }
	require.NoError(t, c.RunFor(3*time.Second))
	require.False(t, struck, "an aimed fault struck after the faults stopped")
	for _, m := range c.nodes {
		require.True(t, m.up, "replica %d is down after the faults stopped", m.id)
	}
	require.Zero(t, c.Stats().AimedDamages)
}

// flushDueAt is when replica id's sync under way completes (-1: none).
func (c *Cluster) flushDueAt(id kraft.NodeID) time.Duration {
	n := c.nodes[id]
	for _, it := range c.q {
		if it.kind == itemFlush && it.node == id && it.inc == n.inc {
			return it.at
		}
	}
	return -1
}
