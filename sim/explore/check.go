package explore

import (
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/sim"
)

// The checks are package sim's (sim/check.go), on the explored worlds:
// the rules are sim's pure functions (PersistRule, PersistBeforeSend,
// LeaderHighWatermarkRule, HighWatermarkRestarts, kraft.State's
// CheckInvariants) where the two know the same things, and the same rules
// restated over the world (one leader per epoch, leader completeness, the
// committed log) where the simulator keeps a history the explorer does not.
// beforeAction runs before each action is carried out, afterStep after
// each Step or NewState, checkWorld after each transition.

// beforeAction checks action a of id's step (e is the step's event, nil at
// start) against the durable record as it is when a is carried out.
func (g *engine) beforeAction(id kraft.NodeID, a kraft.Action, e kraft.Event) {
	r := &g.w.reps[id]
	d := r.durable()
	self := g.cfgs[id].Local
	if sim.Outbound(a) {
		if detail := sim.PersistBeforeSend(self, d, a, e); detail != "" {
			g.fail(id, "persist-before-send", "%s", detail)
		}
		return
	}
	switch a := a.(type) {
	case kraft.Persist:
		if rule, detail := sim.PersistRule(self, d, r.hasRecord, a.Record); rule != "" {
			g.fail(id, rule, "%s", detail)
		}
	case kraft.HighWatermarkChanged:
		if r.st.Role() == kraft.Leader {
			g.leaderHighWatermark(id, a.HighWatermark)
		}
	case kraft.Fault:
		g.fail(id, "fault", "Step returned Fault %q on %v after %T %+v", a.Reason, r.st, e, e)
	case kraft.TruncateLog, kraft.AppendLeaderChange, kraft.ResetTimer, kraft.StopTimer, kraft.RoleChanged:
	case kraft.LeaderRefused:
		// No violation (docs/design.md D113): the log is kept, and the
		// other rules check what the replica does next.
	}
}

// leaderHighWatermark checks a leader's new high watermark h and extends
// the committed log.
func (g *engine) leaderHighWatermark(id kraft.NodeID, h int64) {
	w := g.w
	n := &w.reps[id]
	var atH kraft.Epoch
	holders := 0
	if h > 0 && h <= int64(len(n.log)) {
		atH = n.log[h-1].Epoch
		for i := 0; i < g.b.Voters; i++ {
			o := &w.reps[i]
			if int64(o.flushed) >= h && sameRecs(o.log[:h], n.log[:h]) {
				holders++
			}
		}
	}
	if rule, detail := sim.LeaderHighWatermarkRule(h, int64(len(n.log)), n.st.Epoch(), atH, holders, g.b.Voters); rule != "" {
		g.fail(id, rule, "%s", detail)
		return
	}
	m := len(w.committed)
	if int(h) < m {
		m = int(h)
	}
	if !sameRecs(n.log[:m], w.committed[:m]) {
		g.fail(id, "committed-changed", "leader's log differs from the committed log below %d", m)
		return
	}
	if int(h) > len(w.committed) {
		w.committed = append(w.committed[:len(w.committed):len(w.committed)], n.log[len(w.committed):h]...)
	}
}

// afterStep checks id after a step (sameLife) or a (re)start.
func (g *engine) afterStep(id kraft.NodeID, before, after kraft.State, sameLife bool) {
	if g.viol != nil {
		return
	}
	r := &g.w.reps[id]
	if sameLife {
		if after.Epoch() < before.Epoch() {
			g.fail(id, "epoch-monotonic", "epoch went from %d to %d", before.Epoch(), after.Epoch())
			return
		}
		if !sim.HighWatermarkRestarts(before, after) && after.HighWatermark() < before.HighWatermark() {
			g.fail(id, "hwm-monotonic", "high watermark went from %d to %d", before.HighWatermark(), after.HighWatermark())
			return
		}
	}
	if after.Role() == kraft.Leader {
		e := after.Epoch()
		if int(e) < len(g.w.leaders) {
			if l := g.w.leaders[e]; l != kraft.NoNode && l != id {
				g.fail(id, "one-leader-per-epoch", "replicas %d and %d both led epoch %d", l, id, e)
				return
			}
			if g.w.leaders[e] != id {
				g.w.leaders = append([]kraft.NodeID(nil), g.w.leaders...)
				g.w.leaders[e] = id
			}
		}
		if !sameLife || before.Role() != kraft.Leader || before.Epoch() != e {
			// Leader completeness: a new leader holds every committed
			// record (package sim's "leader-complete").
			if c := g.w.committed; len(r.log) < len(c) || !sameRecs(r.log[:len(c)], c) {
				g.fail(id, "leader-complete", "became leader of epoch %d without every record of the committed log %v (log %v)", e, c, r.log)
				return
			}
		}
	}
	if d := r.durable(); after.Record() != d {
		g.fail(id, "record-matches-state", "state %v has record %+v but the durable record is %+v", after, after.Record(), d)
	}
}

// checkWorld checks every replica's log after a transition.
func (g *engine) checkWorld() {
	w := g.w
	for i := range w.reps {
		id := kraft.NodeID(i)
		r := &w.reps[i]
		limit := r.flushed
		if limit > len(w.committed) {
			limit = len(w.committed)
		}
		held := 0
		for held < limit && r.log[held] == w.committed[held] {
			held++
		}
		if held < r.held {
			g.fail(id, "committed-lost", "replica held committed records up to %d durably, now only up to %d", r.held, held)
			return
		}
		if held != r.held {
			r.held = held
			w.touch(id)
		}
		if !r.up {
			continue
		}
		h := r.st.HighWatermark()
		if h > int64(len(w.committed)) {
			g.fail(id, "log-matching", "high watermark %d is past the committed log (%d records)", h, len(w.committed))
			return
		}
		if h > 0 && (h > int64(len(r.log)) || !sameRecs(r.log[:h], w.committed[:h])) {
			g.fail(id, "log-matching", "log differs from the committed log below the high watermark %d", h)
			return
		}
		if want := logEnd(r.log); r.mem.End() != want || r.mem.Flushed() != int64(r.flushed) {
			g.fail(id, "host-log", "the world's view of the log ends at %+v flushed %d, the log at %+v flushed %d",
				want, r.flushed, r.mem.End(), r.mem.Flushed())
			return
		}
		if want := logEnd(r.log); r.st.LogEnd() != want || r.st.FlushedOffset() != int64(r.flushed) {
			g.fail(id, "host-log", "state's log end %+v flushed %d, host's written log end %+v flushed %d",
				r.st.LogEnd(), r.st.FlushedOffset(), want, r.flushed)
			return
		}
	}
}
