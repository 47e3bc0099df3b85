package explore

import (
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/sim"
)

// The checks follow package sim's Checker (sim/check.go), rule for rule,
// on the explored worlds: beforeAction before each action is carried out,
// afterStep after each Step or NewState, checkWorld after each transition.

// beforeAction checks action a of id's step (e is the step's event, nil at
// start) against the durable record as it is when a is carried out.
func (g *engine) beforeAction(id kraft.NodeID, a kraft.Action, e kraft.Event) {
	r := &g.w.reps[id]
	d := r.durable()
	self := g.cfgs[id].Local
	switch a := a.(type) {
	case kraft.Persist:
		n := a.Record
		switch {
		case n.Epoch < d.Epoch:
			g.fail(id, "epoch-monotonic", "persisted epoch %d after %d", n.Epoch, d.Epoch)
		case n.Epoch > d.Epoch || !r.hasRecord:
		case d.HasVote() && n.HasVote() && n.VotedKey != d.VotedKey:
			g.fail(id, "one-vote-per-epoch", "voted for %v and for %v in epoch %d", d.VotedKey, n.VotedKey, n.Epoch)
		case d.HasVote() && !n.HasVote() && n.LeaderID != id:
			// Only a leader's own record drops its self-vote.
			g.fail(id, "vote-durable", "persisted %+v, forgetting its vote for %v in epoch %d", n, d.VotedKey, n.Epoch)
		case !d.HasVote() && d.LeaderID == id && n.HasVote() && !n.VotedKey.Matches(self):
			g.fail(id, "one-vote-per-epoch", "led epoch %d (its vote for itself) and then voted for %v", n.Epoch, n.VotedKey)
		}
	case kraft.SendVoteRequest, kraft.SendVoteResponse, kraft.SendBeginQuorumEpoch, kraft.SendEndQuorumEpoch,
		kraft.SendFetch, kraft.SendFetchResponse, kraft.SendBeginQuorumEpochResponse,
		kraft.SendEndQuorumEpochResponse, kraft.SendFetchSnapshotResponse:
		if detail := sim.PersistBeforeSend(self, d, a, e); detail != "" {
			g.fail(id, "persist-before-send", "%s", detail)
		}
	case kraft.HighWatermarkChanged:
		if r.st.Role() == kraft.Leader {
			g.leaderHighWatermark(id, a.HighWatermark)
		}
	case kraft.Fault:
		g.fail(id, "fault", "Step returned Fault %q on %v after %T %+v", a.Reason, r.st, e, e)
	case kraft.TruncateLog, kraft.AppendLeaderChange, kraft.ResetTimer, kraft.StopTimer, kraft.RoleChanged:
	}
}

// leaderHighWatermark checks a leader's new high watermark h and extends
// the committed log.
func (g *engine) leaderHighWatermark(id kraft.NodeID, h int64) {
	w := g.w
	n := &w.reps[id]
	if h > int64(len(n.log)) {
		g.fail(id, "hwm-majority", "leader's high watermark %d is past its own written log of %d", h, len(n.log))
		return
	}
	if h <= 0 {
		g.fail(id, "hwm-own-epoch", "leader of epoch %d moved its high watermark to %d, which ends in no record", n.st.Epoch(), h)
		return
	}
	if e := n.log[h-1].Epoch; e != n.st.Epoch() {
		g.fail(id, "hwm-own-epoch", "leader of epoch %d moved its high watermark to %d, which ends in a record of epoch %d", n.st.Epoch(), h, e)
		return
	}
	holders, voters := 0, 0
	for i := 0; i < g.b.Voters; i++ {
		voters++
		o := &w.reps[i]
		if int64(o.flushed) >= h && sameRecs(o.log[:h], n.log[:h]) {
			holders++
		}
	}
	if holders < voters/2+1 {
		g.fail(id, "hwm-majority", "leader moved its high watermark to %d, held by %d of %d voters", h, holders, voters)
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
		// A new leader's high watermark starts unknown, and so does a
		// resigned leader's (docs/design.md D5); monotonic from there.
		reset := (after.Role() == kraft.Leader || after.Role() == kraft.Resigned) && after.Role() != before.Role()
		if !reset && after.HighWatermark() < before.HighWatermark() {
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
		if want := logEnd(r.log); r.st.LogEnd() != want || r.st.FlushedOffset() != int64(r.flushed) {
			g.fail(id, "host-log", "state's log end %+v flushed %d, host's written log end %+v flushed %d",
				r.st.LogEnd(), r.st.FlushedOffset(), want, r.flushed)
			return
		}
	}
}
