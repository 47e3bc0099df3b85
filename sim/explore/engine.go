package explore

import (
	"fmt"

	"github.com/kraftquorum/kraft"
)

// MoveKind names a transition of the model.
type MoveKind uint8

// The transitions.
const (
	// Deliver: the host of Target receives message Msg (removed from the
	// network) and steps it (a Fetch response's records appended first
	// when the host contract allows).
	Deliver MoveKind = iota + 1
	// Drop: message Msg is lost.
	Drop
	// Duplicate: message Msg is copied (bounded by MaxDuplicates).
	Duplicate
	// Fire: Node's armed Timer fires.
	Fire
	// Flush: Node's host makes its whole written log durable and reports
	// LogFlushed.
	Flush
	// Crash: Node stops; its unflushed tail and the messages to it are
	// lost (bounded by MaxCrashes).
	Crash
	// Restart: a down Node is rebuilt with NewState from its durable
	// record and flushed log.
	Restart
	// ResignLeader: Node, a leader, steps kraft.Resign.
	ResignLeader
	// Append: a client record is written at Node, a leader, and reported
	// with LogAppended (unflushed; bounded by MaxAppends).
	Append
)

// Move is one transition: Msg indexes the network of the state it is
// taken from (sorted canonically), Target is the receiver of a delivered
// message, Node the replica of the other moves. Drops, when not zero, is
// the set (bit i: message i of the same network) of messages lost just
// before the move: the reduced model has no Drop moves of its own, and
// loses messages only where the in-flight bound would otherwise cut the
// move off (see Options.Full).
type Move struct {
	Kind   MoveKind
	Timer  kraft.Timer
	Drops  uint16
	Node   kraft.NodeID
	Target kraft.NodeID
	Msg    int32
}

// Violation is a broken invariant; Rule uses the names of sim.Violation
// ("one-leader-per-epoch", "one-vote-per-epoch", "vote-durable",
// "epoch-monotonic", "hwm-monotonic", "hwm-majority", "hwm-own-epoch",
// "committed-changed", "committed-lost", "log-matching",
// "persist-before-send", "record-matches-state", "host-log", "fault", "state-invariant",
// "restart"), plus "liveness" for a state from which no leader is
// reachable.
type Violation struct {
	Rule   string
	Node   kraft.NodeID
	Detail string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("explore: invariant %s violated on replica %d: %s", v.Rule, v.Node, v.Detail)
}

// StepFunc is kraft.Step's signature.
type StepFunc func(kraft.State, kraft.Event) (kraft.State, []kraft.Action)

// StartFunc is kraft.NewState's signature.
type StartFunc func(kraft.Config, *kraft.QuorumRecord, kraft.LogState) (kraft.State, []kraft.Action, error)

// recorder receives every NewState and Step call of a transition (for
// traces and for printing paths).
type recorder interface {
	start(id kraft.NodeID, cfg kraft.Config, rec *kraft.QuorumRecord, ls kraft.LogState, acts []kraft.Action, st kraft.State)
	step(id kraft.NodeID, e kraft.Event, acts []kraft.Action, st kraft.State)
}

// engine applies moves to worlds.
type engine struct {
	b     Bounds
	cfgs  []kraft.Config
	step  StepFunc
	start StartFunc
	rec   recorder
	full  bool // Options.Full: Drop moves, no reduction

	// per transition
	w      *world
	viol   *Violation
	pruned bool
	// over: how many messages past MaxMessages the result holds, when
	// only the in-flight bound cut it off (0 otherwise).
	over int
}

func (g *engine) fail(id kraft.NodeID, rule, format string, args ...interface{}) {
	if g.viol == nil {
		g.viol = &Violation{Rule: rule, Node: id, Detail: fmt.Sprintf(format, args...)}
	}
}

// initial builds the initial world: every replica started from an empty
// disk, in id order.
func (g *engine) initial() (*world, *Violation) {
	w := &world{reps: make([]replica, len(g.cfgs)), leaders: make([]kraft.NodeID, g.b.MaxEpoch+1)}
	for i := range w.leaders {
		w.leaders[i] = kraft.NoNode
	}
	g.w, g.viol, g.pruned = w, nil, false
	for i := range w.reps {
		g.restart(kraft.NodeID(i))
	}
	g.finish()
	return w, g.viol
}

// apply takes move m from a copy of w. It returns the new world, a
// violation found on the way, and whether a bound cut the transition off.
func (g *engine) apply(w *world, m Move) (*world, *Violation, bool) {
	g.w, g.viol, g.pruned, g.over = w.clone(), nil, false, 0
	w = g.w
	if m.Drops != 0 {
		out := w.net[:0:0]
		for i := range w.net {
			switch {
			case m.Drops&(1<<uint(i)) != 0:
			case int32(i) == m.Msg:
				m.Msg = int32(len(out))
				out = append(out, w.net[i])
			default:
				out = append(out, w.net[i])
			}
		}
		w.net = out
	}
	switch m.Kind {
	case Deliver:
		w.touch(m.Target)
	case Fire, Flush, Crash, Restart, ResignLeader, Append:
		w.touch(m.Node)
	case Drop, Duplicate:
	}
	switch m.Kind {
	case Deliver:
		msg := w.net[m.Msg]
		w.net = append(w.net[:m.Msg:m.Msg], w.net[m.Msg+1:]...)
		g.deliver(msg, m.Target)
	case Drop:
		w.net = append(w.net[:m.Msg:m.Msg], w.net[m.Msg+1:]...)
	case Duplicate:
		w.dups++
		w.net = append(w.net, w.net[m.Msg])
	case Fire:
		r := &w.reps[m.Node]
		r.timers &^= 1 << m.Timer
		g.stepNode(m.Node, m.Timer.Timeout(), nil)
	case Flush:
		r := &w.reps[m.Node]
		r.flushed = len(r.log)
		g.stepNode(m.Node, kraft.LogFlushed{Offset: int64(r.flushed)}, nil)
	case Crash:
		w.crashes++
		g.crash(m.Node)
	case Restart:
		g.restart(m.Node)
	case ResignLeader:
		g.stepNode(m.Node, kraft.Resign{}, nil)
	case Append:
		w.appends++
		r := &w.reps[m.Node]
		r.log = append(r.log[:len(r.log):len(r.log)], rec{Epoch: r.st.Epoch(), ID: int32(w.appends)})
		g.reportWrites(m.Node)
	}
	g.finish()
	return w, g.viol, g.pruned
}

// finish sorts the network, applies the bounds and runs the world checks.
func (g *engine) finish() {
	w := g.w
	if !g.full {
		// Dead messages (see dead) are taken off at once: the world with
		// one is the world after its no-op delivery.
		out := w.net[:0:0]
		for i := range w.net {
			if !dead(w, &w.net[i]) {
				out = append(out, w.net[i])
			}
		}
		if len(out) < len(w.net) {
			w.net = out
		}
	}
	epochOK := true
	for i := range w.reps {
		if w.reps[i].up && w.reps[i].st.Epoch() > g.b.MaxEpoch {
			epochOK = false
		}
	}
	if len(w.net) > g.b.MaxMessages {
		g.pruned = true
		if epochOK {
			g.over = len(w.net) - g.b.MaxMessages
		}
	}
	if !epochOK {
		g.pruned = true
	}
	w.sortNet()
	if g.viol == nil {
		g.checkWorld()
	}
}

func (g *engine) crash(id kraft.NodeID) {
	w := g.w
	r := &w.reps[id]
	r.up = false
	if len(r.log) > r.flushed {
		w.lostTail = true
	}
	r.log = r.log[:r.flushed:r.flushed]
	r.timers = 0
	r.fetching = false
	r.st = kraft.State{}
	// Connections to the replica are gone: messages to it are lost, and
	// answers to its requests will reach a new incarnation, whose host
	// drops them. Messages it sent stay in flight.
	out := w.net[:0:0]
	for _, m := range w.net {
		if m.to == id {
			continue
		}
		if m.from == id && !isResponse(m.ev) && !m.stale {
			m.stale = true
			m.enc = encodeMsg(&m)
		}
		out = append(out, m)
	}
	w.net = out
}

func (g *engine) restart(id kraft.NodeID) {
	r := &g.w.reps[id]
	r.up = true
	r.timers, r.fetching = 0, false
	ls := logState(r.log)
	var recp *kraft.QuorumRecord
	if r.hasRecord {
		rc := r.record
		recp = &rc
	}
	st, acts, err := g.start(g.cfgs[id], recp, ls)
	if err != nil {
		g.fail(id, "restart", "NewState: %v", err)
		return
	}
	r.st = st
	if g.rec != nil {
		g.rec.start(id, g.cfgs[id], recp, ls, acts, st)
	}
	g.carryOut(id, acts, nil, nil)
	g.afterStep(id, kraft.State{}, st, false)
	g.reportWrites(id)
}

// deliver hands m to its receiver's host.
func (g *engine) deliver(m msg, to kraft.NodeID) {
	r := &g.w.reps[to]
	if !r.up {
		return
	}
	if resp, ok := m.ev.(kraft.ReceiveFetchResponse); ok {
		if !r.fetching {
			return // not the answer to the Fetch in flight
		}
		r.fetching = false
		recs := m.records
		if len(recs) > 0 && !r.st.AcceptsRecords(resp) {
			recs = nil
		}
		if len(recs) > 0 {
			if int64(len(r.log)) != m.offset {
				// The log no longer ends at the fetch offset: the host
				// drops the response (the follower fetches again on its
				// fetch timeout).
				return
			}
			r.log = append(r.log[:len(r.log):len(r.log)], recs...)
			g.reportWrites(to)
			if g.viol != nil || !r.up {
				return
			}
		}
	}
	g.stepNode(to, m.ev, &m)
}

// stepNode steps e at id and carries out the actions; ctx is the request
// being answered, if any.
func (g *engine) stepNode(id kraft.NodeID, e kraft.Event, ctx *msg) {
	if g.viol != nil {
		return
	}
	r := &g.w.reps[id]
	if !r.up {
		return
	}
	before := r.st
	next, acts := g.step(before, e)
	r.st = next
	if g.rec != nil {
		g.rec.step(id, e, acts, next)
	}
	if err := next.CheckInvariants(); err != nil {
		g.fail(id, "state-invariant", "%v after %T (%v)", err, e, next)
		return
	}
	g.carryOut(id, acts, e, ctx)
	g.afterStep(id, before, next, true)
	g.reportWrites(id)
}

// reportWrites reports the records written since the state last saw its
// log end: one LogAppended per epoch run.
func (g *engine) reportWrites(id kraft.NodeID) {
	r := &g.w.reps[id]
	for g.viol == nil && r.up {
		from := int(r.st.LogEnd().Offset)
		if from >= len(r.log) {
			return
		}
		i := from
		for i+1 < len(r.log) && r.log[i+1].Epoch == r.log[from].Epoch {
			i++
		}
		before := r.st.LogEnd()
		g.stepNode(id, kraft.LogAppended{End: kraft.LogEnd{Offset: int64(i + 1), Epoch: r.log[i].Epoch}}, nil)
		if r.st.LogEnd() == before {
			return // refused (a Fault, reported) or ignored
		}
	}
}

// send puts a message on the network; a message to a down replica is lost.
func (g *engine) send(m msg) {
	if m.to != kraft.NoNode {
		if m.to < 0 || int(m.to) >= len(g.w.reps) || !g.w.reps[m.to].up {
			return
		}
	}
	m.enc = encodeMsg(&m)
	g.w.net = append(g.w.net, m)
}

// carryOut carries out a step's actions in order, checking each before it
// is carried out.
func (g *engine) carryOut(id kraft.NodeID, acts []kraft.Action, e kraft.Event, ctx *msg) {
	w := g.w
	r := &w.reps[id]
	self := g.cfgs[id].Local
	reply := func(to kraft.NodeID) bool { return ctx != nil && ctx.from == to && !ctx.stale }
	for _, a := range acts {
		if g.viol != nil {
			return
		}
		g.beforeAction(id, a, e)
		if g.viol != nil {
			return
		}
		switch a := a.(type) {
		case kraft.Persist:
			r.record, r.hasRecord = a.Record, true
		case kraft.SendVoteRequest, kraft.SendBeginQuorumEpoch, kraft.SendEndQuorumEpoch:
			to, ev, _ := kraft.Deliver(self, a)
			g.send(msg{from: id, to: to, ev: ev})
		case kraft.SendVoteResponse, kraft.SendBeginQuorumEpochResponse, kraft.SendEndQuorumEpochResponse:
			to, ev, ok := kraft.Deliver(self, a)
			if ok && reply(to) {
				g.send(msg{from: id, to: to, ev: ev})
			}
		case kraft.SendFetchSnapshotResponse:
			// No FetchSnapshot requests in the model.
		case kraft.SendFetch:
			// A newer Fetch supersedes the one in flight.
			out := w.net[:0:0]
			for _, m := range w.net {
				if _, ok := m.ev.(kraft.ReceiveFetchResponse); ok && m.to == id {
					continue
				}
				if _, ok := m.ev.(kraft.ReceiveFetch); ok && m.from == id && !m.stale {
					m.stale = true
					m.enc = encodeMsg(&m)
				}
				out = append(out, m)
			}
			w.net = out
			r.fetching = true
			to, ev, _ := kraft.Deliver(self, a)
			g.send(msg{from: id, to: to, ev: ev})
		case kraft.SendFetchResponse:
			to, ev, _ := kraft.Deliver(self, a)
			if !reply(to) {
				continue
			}
			f, _ := ctx.ev.(kraft.ReceiveFetch)
			m := msg{from: id, to: to, ev: ev, offset: f.FetchOffset}
			served := r.st.LogEnd().Offset
			if served > int64(len(r.log)) {
				served = int64(len(r.log))
			}
			if a.Error == kraft.ErrNone && a.Diverging == nil && f.FetchOffset >= 0 && f.FetchOffset < served {
				m.records = append([]rec(nil), r.log[f.FetchOffset:served]...)
			}
			g.send(m)
		case kraft.TruncateLog:
			if a.To >= 0 && a.To < int64(len(r.log)) {
				r.log = r.log[:a.To:a.To]
				if r.flushed > len(r.log) {
					r.flushed = len(r.log)
				}
			}
		case kraft.AppendLeaderChange:
			r.log = append(r.log[:len(r.log):len(r.log)], rec{Epoch: a.Epoch, ID: 0})
		case kraft.ResetTimer:
			r.timers |= 1 << a.Timer
		case kraft.StopTimer:
			r.timers &^= 1 << a.Timer
		case kraft.RoleChanged:
			// Kafka's resetConnections: answers to earlier requests are
			// dropped.
			r.fetching = false
			out := w.net[:0:0]
			for _, m := range w.net {
				if m.to == id && isResponse(m.ev) {
					continue
				}
				if m.from == id && !isResponse(m.ev) && !m.stale {
					m.stale = true
					m.enc = encodeMsg(&m)
				}
				out = append(out, m)
			}
			w.net = out
		case kraft.HighWatermarkChanged, kraft.Fault:
			// Checked in beforeAction.
		}
	}
}
