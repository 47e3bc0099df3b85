package sim

import (
	"math/rand"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// TestOnOpSeesEveryOperation: OnOp is called once per operation, after it
// is carried out, for direct calls and scheduled operations alike, with the
// virtual time; it does not change the run.
func TestOnOpSeesEveryOperation(t *testing.T) {
	run := func(hook bool) (*Cluster, []Op, []bool) {
		c, err := New(Options{Voters: 3, Seed: 9}, nil)
		require.NoError(t, err)
		var ops []Op
		var upAfter []bool
		if hook {
			c.OnOp = func(op Op) {
				ops = append(ops, op)
				upAfter = append(upAfter, c.Up(op.Node))
			}
		}
		c.Crash(1)
		c.Schedule(Op{At: 2 * time.Second, Kind: OpRestart, Node: 1}, Op{At: 3 * time.Second, Kind: OpPartition, Group: []kraft.NodeID{0}})
		require.NoError(t, c.RunFor(5*time.Second))
		c.Restart(2) // ignored: replica 2 is up
		return c, ops, upAfter
	}
	c, ops, upAfter := run(true)
	require.Len(t, ops, 4)
	require.Equal(t, []OpKind{OpCrash, OpRestart, OpPartition, OpRestart}, []OpKind{ops[0].Kind, ops[1].Kind, ops[2].Kind, ops[3].Kind})
	require.Equal(t, []time.Duration{0, 2 * time.Second, 3 * time.Second, 5 * time.Second}, []time.Duration{ops[0].At, ops[1].At, ops[2].At, ops[3].At})
	require.Equal(t, []bool{false, true, true, true}, upAfter, "the hook runs after the operation")
	quiet, _, _ := run(false)
	require.Equal(t, quiet.Stats(), c.Stats(), "the hook does not change the run")
}

// naiveFirstDiff compares a and b record by record from the start.
func naiveFirstDiff(a, b []Record, n int) int {
	for i := 0; i < n; i++ {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	return n
}

// TestCheckerMatchedPrefixStaysValid: the checker compares logs with the
// committed log only past a prefix it knows to match. Under random faults
// (crashes losing unflushed tails, truncations of diverging logs, restarts,
// snapshots and logs cleaned behind them),
// that prefix must really match after every event, and the incremental
// answer must equal a full comparison.
func TestCheckerMatchedPrefixStaysValid(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 4} {
		opts := DefaultOptions()
		opts.Voters, opts.Observers, opts.Seed = 5, 1, seed
		c, err := New(opts, nil)
		require.NoError(t, err)
		c.Schedule(RandomSchedule(rand.New(rand.NewSource(seed)), 5, 1, 10*time.Second, 20)...)
		checked := 0
		require.NoError(t, c.RunUntil(10*time.Second, func() bool {
			k := c.check
			for _, n := range c.nodes {
				p := k.of(n)
				// Below the log start, the records are the snapshot's.
				recs := n.records()
				require.LessOrEqual(t, p.same, len(n.log), "seed %d replica %d", seed, n.id)
				require.Equal(t, p.same, naiveFirstDiff(recs, k.committed, p.same), "seed %d replica %d: the known prefix does not match", seed, n.id)
				limit := len(n.log)
				require.Equal(t, naiveFirstDiff(recs, k.committed, limit), k.matched(n, limit), "seed %d replica %d", seed, n.id)
				checked++
			}
			return false
		}))
		require.Greater(t, checked, 1000)
	}
}

// TestCheckerCatchesRewrittenCommittedRecords: a host that truncates
// committed records and appends others in their place is caught, although
// the checker compares only past the prefix it knows to match.
func TestCheckerCatchesRewrittenCommittedRecords(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	require.GreaterOrEqual(t, c.CommittedLen(), 10)
	log := hostLog{c, f}
	require.NoError(t, log.Truncate(2))
	for i := 0; i < 2*c.CommittedLen(); i++ {
		_, err := log.Append(99, dataOf(Record{Epoch: 99, Payload: "LeaderChange(epoch=99,leader=0)"}))
		require.NoError(t, err)
	}
	require.NoError(t, log.Sync())
	c.check.afterEvent()
	var v Violation
	require.ErrorAs(t, c.Err(), &v)
	require.Equal(t, "committed-lost", v.Rule)
}
