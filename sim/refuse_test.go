package sim

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// A leader elected without committed records, and the healthy voters that
// refuse it (docs/design.md D113). Five voters, no snapshots: two
// laggards are crashed and the other three commit more records; the victim
// among those three loses the tail of its log as the planted bug
// plant.TornTail loses it (damage taken for a torn tail: the log cut, the
// identity and the vote kept), one record past the laggards' logs and
// below the committed offset; the two healthy voters (the leader among
// them) are cut off one way, so that the victim and the laggards elect the
// victim; once it leads, the victim is cut off from the laggards before
// they hear of its epoch, and everything else heals. The healthy voters
// are asked to truncate below their high watermark: they must refuse,
// keep their logs, stay up, and with the laggards elect a leader holding
// every committed record, which the victim then follows. The victim's
// election is the damage's doing (leader-complete), the one violation the
// run tolerates.

type refusal struct {
	by, leader kraft.NodeID
	epoch      kraft.Epoch
}

type badLeaderRun struct {
	refusals []refusal
	victim   kraft.NodeID
	healthy  []kraft.NodeID
	epoch    kraft.Epoch   // the victim's epoch
	elected  time.Duration // from the victim's election to a legitimate leader's
	leader   kraft.NodeID
}

func runBadLeader(t *testing.T, seed int64) badLeaderRun {
	t.Helper()
	var run badLeaderRun
	opts := DefaultOptions()
	opts.Seed, opts.Voters, opts.SnapshotEvery = seed, 5, -1
	c, err := New(opts, nil)
	require.NoError(t, err)
	c.OnStep = func(id kraft.NodeID, _ kraft.Event, _, _ kraft.State, acts []kraft.Action) {
		for _, a := range acts {
			if r, ok := a.(kraft.LeaderRefused); ok {
				run.refusals = append(run.refusals, refusal{by: id, leader: r.LeaderID, epoch: r.Epoch})
			}
		}
	}
	l0, err := c.WaitForLeader(20 * time.Second)
	require.NoError(t, err)
	require.NoError(t, c.WaitForHighWatermark(10, 20*time.Second))
	var others []kraft.NodeID
	for _, id := range c.VoterIDs() {
		if id != l0 {
			others = append(others, id)
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i] < others[j] })
	a, b, v, h := others[0], others[1], others[2], others[3]
	run.victim, run.healthy = v, []kraft.NodeID{l0, h}

	c.Crash(a)
	c.Crash(b)
	require.NoError(t, c.RunFor(time.Second))
	lag := c.node(a).flushed
	if f := c.node(b).flushed; f > lag {
		lag = f
	}
	cut := lag + 1
	// The victim's Fetches still in flight arrive before its disk is
	// damaged: a leader counting one after the damage would move its
	// high watermark onto records the victim no longer holds (D99's
	// hwm-majority), another consequence of the damage than this test's.
	c.Crash(v)
	require.NoError(t, c.RunFor(100*time.Millisecond))
	committed := c.Checker().Committed()
	require.Greater(t, len(committed), cut+1, "records committed without the laggards")
	require.Less(t, int64(cut), c.State(h).HighWatermark())
	n := c.node(v)
	require.GreaterOrEqual(t, n.flushed, cut)
	// The cut on the victim's disk, as the bug leaves it: the log ends at
	// cut, and nothing reports a loss.
	l, _, err := storage.Open(logDir, storage.Options{FS: n.dsk, SegmentBytes: simSegmentBytes})
	require.NoError(t, err)
	require.NoError(t, l.Truncate(int64(cut)))
	require.NoError(t, l.Close())
	n.log, n.flushed = n.log[:cut:cut], cut
	c.check.diskDamaged(n, cut)
	c.tolerate = func(x Violation) bool { return x.Rule == "leader-complete" && x.Node == v }

	c.Apply(Op{Kind: OpOneWay, Group: []kraft.NodeID{l0, h}})
	c.Restart(v)
	c.Restart(a)
	c.Restart(b)
	leads := func() bool { return c.Up(v) && c.State(v).Role() == kraft.Leader }
	require.NoError(t, c.RunUntil(c.now+20*time.Second, leads))
	require.True(t, leads(), "the victim leads: %s", c.Describe())
	run.epoch = c.State(v).Epoch()
	at := c.now
	c.cut = map[[2]kraft.NodeID]bool{{v, a}: true, {a, v}: true, {v, b}: true, {b, v}: true}

	legit := func() bool {
		id, ok := c.Leader()
		return ok && id != v && c.State(id).Epoch() > run.epoch
	}
	require.NoError(t, c.RunUntil(c.now+30*time.Second, legit), "%s", c.Describe())
	require.True(t, legit(), "a leader of a newer epoch, followed by a majority: %s", c.Describe())
	run.elected = c.now - at
	run.leader, _ = c.Leader()

	c.Heal()
	end := int64(len(c.Checker().Committed()))
	require.NoError(t, c.WaitForHighWatermark(end, 30*time.Second))
	require.Equal(t, kraft.Follower, c.State(v).Role())
	require.NoError(t, c.Err())
	require.Len(t, c.tolerated, 1, "the victim's election, and nothing else: %v", c.tolerated)
	// Every record committed before the damage is still committed, and
	// every replica, the victim too, holds it.
	now := c.Checker().Committed()
	require.GreaterOrEqual(t, len(now), len(committed))
	require.Equal(t, committed, now[:len(committed)])
	for _, id := range c.IDs() {
		log, _ := c.Log(id)
		require.GreaterOrEqual(t, len(log), len(committed), "r%d", id)
		require.Equal(t, committed, log[:len(committed)], "r%d", id)
	}
	return run
}

// TestHealthyVotersRefuseALeaderWithoutCommittedRecords: see above. Each
// healthy voter refused the victim,
// no replica stopped, and a legitimate leader, one of the healthy voters
// (the laggards' logs are shorter), was elected within 4 s of the
// victim's election (two fetch timeouts; the refusing voters campaign when
// theirs runs out).
func TestHealthyVotersRefuseALeaderWithoutCommittedRecords(t *testing.T) {
	var worst time.Duration
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			run := runBadLeader(t, seed)
			for _, id := range run.healthy {
				refused := false
				for _, r := range run.refusals {
					refused = refused || r.by == id
				}
				require.True(t, refused, "r%d refused the victim", id)
			}
			for _, r := range run.refusals {
				require.Contains(t, run.healthy, r.by, "only a healthy voter refuses: %+v", r)
				require.Equal(t, refusal{by: r.by, leader: run.victim, epoch: run.epoch}, r)
			}
			require.Contains(t, run.healthy, run.leader)
			require.LessOrEqual(t, run.elected, 4*time.Second)
			if run.elected > worst {
				worst = run.elected
			}
			t.Logf("victim r%d led epoch %d; %d refusals; r%d leads %v later", run.victim, run.epoch, len(run.refusals), run.leader, run.elected)
		})
	}
	t.Logf("longest time to a legitimate leader: %v", worst)
}
