package sim

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
)

func TestDebugStuck(t *testing.T) {
	opts := DefaultOptions()
	opts.Seed = -198
	opts.Dynamic = true
	opts.Voters, opts.BootstrapVoters, opts.Observers, opts.AutoJoin = 5, 1, 1, true
	opts.SnapshotEvery, opts.SnapshotsKept = -1, 1
	window := 10 * time.Second
	r := rand.New(rand.NewSource(opts.Seed))
	ops := RandomSchedule(r, 5, 1, window, 6)
	ops = append(ops, RandomVoterChanges(r, 6, window, 10)...)
	c, _ := New(opts, nil)
	c.Schedule(ops...)
	_ = c.RunFor(window)
	c.OnStep = func(id kraft.NodeID, e kraft.Event, before, after kraft.State, acts []kraft.Action) {
		if id != 2 {
			return
		}
		s := ""
		for _, a := range acts {
			switch a.(type) {
			case kraft.SendFetch, kraft.ResetTimer, kraft.RoleChanged, kraft.SendVoteRequest:
				s += fmt.Sprintf(" %T%+v", a, a)
			}
		}
		t.Logf("%v r2 %T%+v -> %v |%s", c.Now(), e, e, after, s)
	}
	c.StopFaults()
	_ = c.RunFor(3 * time.Second)
	t.Logf("%s", c.Describe())
	t.Logf("voters %v", c.Voters())
}
