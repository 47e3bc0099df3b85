package explore

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/plant"
	layer "github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
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
	// Fire: Node's armed Deadline fires (a kraft timer, a request
	// timeout, a retry, a parked Fetch's wait), whatever its time.
	Fire
	// Flush: Node's host makes its whole written log durable and reports
	// it (replica.Replica.Synced).
	Flush
	// Crash: Node stops; its unflushed tail and the messages to it are
	// lost (bounded by MaxCrashes).
	Crash
	// Restart: a down Node is rebuilt (replica.New, kraft.NewState) from
	// its durable record and flushed log.
	Restart
	// ResignLeader: Node, a leader, resigns (kraft.Resign).
	ResignLeader
	// Append: a client record is proposed at Node, a leader (written and
	// reported, unflushed; bounded by MaxAppends).
	Append
	// ReportDown: Node's host reports its leader Target's process gone
	// (replica.Replica.PeerDown, docs/design.md D101), whether it is or
	// not (Bounds.PeerDowns).
	ReportDown
	// Damage: a down Node restarts on a log whose synced records are
	// damaged from offset Msg on (a flipped bit or a lost write: no record
	// from there reads back), bounded by MaxDamages. The damage and the
	// restart are one move: nothing touches a down replica's disk between
	// them, so a damage while it is down and a restart later reach the
	// same worlds, and one damaged replica at a time holds by
	// construction. The model's voter set is static, so the host refuses
	// to start (storage.Open's *storage.DamageError, docs/design.md D71)
	// and the operator restores the directory as it was when Node stopped
	// (D91): Node starts on its log as it was, the world of a Restart.
	// With the planted bug plant.TornTail the host takes the damage for a
	// torn tail instead: it cuts the log at Msg and starts Node on what is
	// left, under its old identity and vote (D99).
	Damage
)

// Move is one transition: Msg indexes the network of the state it is
// taken from (sorted canonically), Target is the receiver of a delivered
// message, Node the replica of the other moves (a Damage move's Msg is
// the first damaged offset). Drops, when not zero, is
// the set (bit i: message i of the same network) of messages lost just
// before the move: the reduced model has no Drop moves of its own, and
// loses messages only where the in-flight bound would otherwise cut the
// move off (see Options.Full).
type Move struct {
	Kind     MoveKind
	Deadline layer.Deadline
	Drops    uint16
	Node     kraft.NodeID
	Target   kraft.NodeID
	Msg      int32
}

// Violation is a broken invariant; Rule uses the names of sim.Violation
// ("one-leader-per-epoch", "one-vote-per-epoch", "vote-durable",
// "epoch-monotonic", "hwm-monotonic", "hwm-majority", "hwm-own-epoch",
// "committed-changed", "committed-lost", "leader-complete", "log-matching",
// "persist-before-send", "record-matches-state", "host-log", "fault", "state-invariant",
// "restart", "replica-stopped"), plus "liveness" for a state from which
// no leader is reachable.
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
	plant plant.Bug

	// per transition
	w      *world
	viol   *Violation
	pruned bool
	owned  []bool // the replicas whose layer this transition copied (own)
	// logOwned: the replicas whose log this transition copied
	// (hostLog.writable).
	logOwned []bool
	names    []map[uint64]uint64
	live     [][]uint64
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
	g.owned = make([]bool, len(g.cfgs))
	g.logOwned = make([]bool, len(g.cfgs))
	for i := range w.reps {
		w.reps[i].mem = storage.NewMemLog()
		g.logOwned[i] = true
		g.restart(kraft.NodeID(i))
	}
	g.finish()
	return w, g.viol
}

// apply takes move m from a copy of w. It returns the new world, a
// violation found on the way, and whether a bound cut the transition off.
func (g *engine) apply(w *world, m Move) (*world, *Violation, bool) {
	g.w, g.viol, g.pruned, g.over = w.clone(), nil, false, 0
	if len(g.owned) != len(w.reps) {
		g.owned = make([]bool, len(w.reps))
		g.logOwned = make([]bool, len(w.reps))
	}
	for i := range g.owned {
		g.owned[i], g.logOwned[i] = false, false
	}
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
	case Fire, Flush, Crash, Restart, ResignLeader, Append, ReportDown, Damage:
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
		if r := g.own(m.Node); r != nil {
			r.model().Expire(0, m.Deadline)
			g.carry(m.Node)
		}
	case Flush:
		if r := g.own(m.Node); r != nil {
			_ = hostLog{g, m.Node}.Sync()
			r.rep.Synced(0)
			g.carry(m.Node)
		}
	case Crash:
		w.crashes++
		g.crash(m.Node)
	case Restart:
		g.restart(m.Node)
	case Damage:
		w.damages++
		g.damagedRestart(m.Node, int(m.Msg))
	case ResignLeader:
		if r := g.own(m.Node); r != nil {
			r.rep.Resign(0)
			g.carry(m.Node)
		}
	case ReportDown:
		if r := g.own(m.Node); r != nil {
			r.rep.PeerDown(0, m.Target)
			g.carry(m.Node)
		}
	case Append:
		w.appends++
		if r := g.own(m.Node); r != nil {
			_, _ = r.rep.Propose(0, [][]byte{dataOf(rec{Epoch: r.st.Epoch(), ID: int32(w.appends)})})
			g.carry(m.Node)
		}
	}
	g.finish()
	return w, g.viol, g.pruned
}

// model is the model checker's view of the replica's layer: its hooks
// (Deadlines, Expire, Clone, Canonicalize, ...) are not methods of
// layer.Replica, whose method set is a host's (docs/design.md D290).
func (r *replica) model() layer.Model { return layer.ModelOf(r.rep) }

// own makes replica id's layer this transition's own (a copy, bound to
// this engine's storage and checks), before it takes an input; nil if the
// replica is down.
func (g *engine) own(id kraft.NodeID) *replica {
	r := &g.w.reps[id]
	if !r.up || r.rep == nil {
		return nil
	}
	if !g.owned[id] {
		r.rep = r.model().Clone(hostLog{g, id}, hostRecords{g, id}, nil, observer{g, id})
		g.owned[id] = true
		g.w.touch(id)
	}
	return r
}

// finish renames the correlation ids (canonicalize), takes the dead
// messages off, sorts the network, applies the bounds and runs the world
// checks.
func (g *engine) finish() {
	w := g.w
	g.canonicalize()
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
	inFlight := len(w.net)
	for i := range w.reps {
		if r := &w.reps[i]; r.up {
			if r.st.Epoch() > g.b.MaxEpoch {
				epochOK = false
			}
			// A Fetch a leader holds (long poll) is a request in flight.
			inFlight += r.rep.Parked()
		}
	}
	if inFlight > g.b.MaxMessages {
		g.pruned = true
		if epochOK {
			g.over = inFlight - g.b.MaxMessages
			if g.over > len(w.net) {
				g.over = 0 // losing messages cannot bring it under the bound
			}
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

// canonicalize renames every correlation id of the world after what it
// names (replica.Model.Canonicalize): in the layers this transition
// changed, in the messages in flight, and in the Fetches parked at the
// leaders; an id of a down replica, or one its replica no longer matches,
// becomes 0. The replicas this transition did not change are canonical
// already: their ids name themselves. Two worlds that differ only in the
// ids they issued are then one.
func (g *engine) canonicalize() {
	w := g.w
	// names[i] renames replica i's ids: a map for a replica this
	// transition changed, nil for a down one (every id becomes 0); live[i]
	// the ids an unchanged replica matches (they name themselves).
	names := g.names[:0]
	live := g.live[:0]
	changed := false
	for i := range w.reps {
		r := &w.reps[i]
		var nm map[uint64]uint64
		var lv []uint64
		switch {
		case !r.up || r.rep == nil:
			changed = true
		case g.owned[i]:
			nm = r.model().Canonicalize()
			changed = true
		default:
			lv = r.model().Correlations()
		}
		names, live = append(names, nm), append(live, lv)
	}
	g.names, g.live = names, live
	out := w.net[:0:0]
	for j := range w.net {
		m := w.net[j]
		owner := m.m.From
		if m.m.Response {
			owner = m.m.To
		}
		c := g.rename(owner, m.m.Corr)
		if m.m.Response && c == 0 {
			// A response its requester no longer matches: the layer
			// would drop it; it is lost at once.
			continue
		}
		if c != m.m.Corr || m.enc == "" {
			m.m.Corr = c
			m.enc = encodeMsg(&m)
		}
		out = append(out, m)
	}
	w.net = out
	if !changed {
		return
	}
	g.renameStaleParked()
}

// rename is the name canonicalize gives the correlation id corr issued
// by replica owner: from g.names for a replica this transition changed
// or a down one, itself if g.live says owner still matches it, else 0.
func (g *engine) rename(owner kraft.NodeID, corr uint64) uint64 {
	if owner < 0 || int(owner) >= len(g.names) {
		return 0
	}
	if nm := g.names[owner]; nm != nil {
		return nm[corr]
	}
	for _, c := range g.live[owner] {
		if c == corr {
			return c
		}
	}
	return 0
}

// renameStaleParked renames the ids of the Fetches parked at each leader
// that came from a replica this transition changed or that is down.
func (g *engine) renameStaleParked() {
	w := g.w
	for y := range w.reps {
		ry := &w.reps[y]
		if !ry.up || ry.rep == nil || ry.rep.Parked() == 0 {
			continue
		}
		for x := range w.reps {
			if x == y || (w.reps[x].up && !g.owned[x]) {
				continue
			}
			stale := false
			for _, c := range ry.model().ParkedFrom(kraft.NodeID(x)) {
				if g.rename(kraft.NodeID(x), c) != c {
					stale = true
				}
			}
			if stale {
				g.own(kraft.NodeID(y)).model().RenameParked(kraft.NodeID(x), g.names[x])
			}
		}
	}
}

func (g *engine) crash(id kraft.NodeID) {
	w := g.w
	r := &w.reps[id]
	r.up = false
	if (hostLog{g, id}).crash() {
		w.lostTail = true
	}
	r.rep = nil
	r.st = kraft.State{}
	// Connections to the replica are gone: messages to it are lost, and
	// answers to its requests will reach a new incarnation, which matches
	// none of them (their ids become 0). Messages it sent stay in flight.
	out := w.net[:0:0]
	for _, m := range w.net {
		if m.to() != id {
			out = append(out, m)
		}
	}
	w.net = out
}

// damagedRestart restarts down replica id on a log damaged from offset
// from on (a Damage move).
func (g *engine) damagedRestart(id kraft.NodeID, from int) {
	r := &g.w.reps[id]
	if r.up || from < 0 || from >= r.flushed {
		return
	}
	if g.plant == plant.TornTail {
		// The planted bug: the damage taken for a torn tail. The disk
		// lost the records, not the protocol: what the checker holds
		// against the replica starts again from what is left.
		_ = hostLog{g, id}.Truncate(int64(from))
		if r.held > from {
			r.held = from
		}
	}
	// Otherwise the host refused to start and the operator restored the
	// directory: the log is as it was.
	g.restart(id)
}

func (g *engine) restart(id kraft.NodeID) {
	r := &g.w.reps[id]
	r.up = true
	cfg := layer.Config{
		Kraft:    g.cfgs[id],
		Log:      hostLog{g, id},
		Records:  hostRecords{g, id},
		Static:   true,
		Observer: observer{g, id},
		Step:     g.step,
		Start:    g.start,
	}
	rep, err := layer.New(cfg, 0)
	if err != nil {
		g.fail(id, "restart", "replica.New: %v", err)
		r.up = false
		return
	}
	r.rep = rep
	g.owned[id] = true
	g.carry(id)
}

// deliver hands m to its receiver's replica.
func (g *engine) deliver(m msg, to kraft.NodeID) {
	r := g.own(to)
	if r == nil {
		return
	}
	r.rep.Receive(0, m.m)
	g.carry(to)
}

// carry carries out id's outputs: the messages go on the network, and a
// layer that stopped is a violation. A Sync is answered by a Flush move.
func (g *engine) carry(id kraft.NodeID) {
	r := &g.w.reps[id]
	if r.rep == nil {
		return
	}
	for _, o := range r.rep.Take() {
		switch o := o.(type) {
		case layer.Send:
			g.send(msg{m: o.Message})
		case layer.Stopped:
			g.fail(id, "replica-stopped", "%v", o.Err)
		}
	}
}

// send puts a message on the network; a message to a down replica is lost.
func (g *engine) send(m msg) {
	to := m.to()
	if to < 0 || int(to) >= len(g.w.reps) || !g.w.reps[to].up {
		return
	}
	m.enc = "" // encoded once its id is renamed (canonicalize)
	g.w.net = append(g.w.net, m)
}

// The host's storage of replica id, as the layer reads and writes it: the
// world's record and log (the engine's current world, so that a layer
// copied for a transition works on that transition's world).
//
// The log is package storage's MemLog (docs/design.md D126): its appends
// are written but not durable until Sync, Truncate is durable at once, and
// a crash loses what was not durable (MemLog.Crash). Worlds share a
// replica's MemLog until a transition changes it (writable clones it
// first, copy-on-write). hostLog forwards every call to it and keeps the
// world's view of it (replica.log and replica.flushed, what the checker
// and the canonical encoding read) in step with what it answers.

type hostLog struct {
	g  *engine
	id kraft.NodeID
}

var (
	_ storage.Log            = hostLog{}
	_ storage.SharedReader   = hostLog{}
	_ storage.OwningAppender = hostLog{}
)

func (l hostLog) r() *replica { return &l.g.w.reps[l.id] }

// mem is the replica's log, to read.
func (l hostLog) mem() *storage.MemLog { return l.r().mem }

// writable is the replica's log made this transition's own (a clone of
// the log the world it was taken from holds), to change.
func (l hostLog) writable() *storage.MemLog {
	r := l.r()
	if !l.g.logOwned[l.id] {
		r.mem = r.mem.Clone()
		l.g.logOwned[l.id] = true
		l.g.w.touch(l.id)
	}
	return r.mem
}

// appended adds to the view the records an append took, from offset
// before on, and returns the append's answer.
func (l hostLog) appended(before int64, end kraft.LogEnd, err error, epoch func(int) kraft.Epoch, data func(int) []byte) (kraft.LogEnd, error) {
	r := l.r()
	for i := 0; before+int64(i) < end.Offset; i++ {
		r.log = append(r.log[:len(r.log):len(r.log)], recordOf(epoch(i), data(i)))
	}
	return end, err
}

func (l hostLog) Append(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error) {
	m := l.writable()
	before := m.End().Offset
	end, err := m.Append(epoch, records...)
	return l.appended(before, end, err, func(int) kraft.Epoch { return epoch }, func(i int) []byte { return records[i] })
}

func (l hostLog) AppendOwned(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error) {
	m := l.writable()
	before := m.End().Offset
	end, err := m.AppendOwned(epoch, records...)
	return l.appended(before, end, err, func(int) kraft.Epoch { return epoch }, func(i int) []byte { return records[i] })
}

func (l hostLog) AppendEntries(entries ...storage.Entry) (kraft.LogEnd, error) {
	m := l.writable()
	before := m.End().Offset
	end, err := m.AppendEntries(entries...)
	return l.appended(before, end, err, func(i int) kraft.Epoch { return entries[i].Epoch }, func(i int) []byte { return entries[i].Data })
}

func (l hostLog) Truncate(to int64) error {
	if to >= 0 && to >= l.mem().End().Offset {
		return nil // nothing to remove: the log stays shared
	}
	m := l.writable()
	err := m.Truncate(to)
	l.sync(m)
	return err
}

// Sync makes the whole written log durable.
func (l hostLog) Sync() error {
	m := l.writable()
	err := m.Sync()
	l.sync(m)
	return err
}

// crash loses what of the log was not durable (MemLog.Crash) and reports
// whether there was any.
func (l hostLog) crash() bool {
	m := l.writable()
	lost := m.Flushed() < m.End().Offset
	m.Crash()
	l.sync(m)
	return lost
}

// sync cuts the view to m's end and takes m's flushed offset.
func (l hostLog) sync(m *storage.MemLog) {
	r := l.r()
	if n := int(m.End().Offset); n < len(r.log) {
		r.log = r.log[:n:n]
	}
	r.flushed = int(m.Flushed())
}

func (l hostLog) Read(from int64, maxBytes int) ([]storage.Entry, error) {
	return l.mem().Read(from, maxBytes)
}

// ReadShared shares the records' payloads: the log never changes one in
// place, in any world.
func (l hostLog) ReadShared(from int64, maxBytes int) ([]storage.Entry, error) {
	return l.mem().ReadShared(from, maxBytes)
}

func (l hostLog) StartOffset() int64                   { return l.mem().StartOffset() }
func (l hostLog) Start() kraft.LogEnd                  { return l.mem().Start() }
func (l hostLog) End() kraft.LogEnd                    { return l.mem().End() }
func (l hostLog) Flushed() int64                       { return l.mem().Flushed() }
func (l hostLog) State() kraft.LogState                { return l.mem().State() }
func (l hostLog) EpochFor(o int64) (kraft.Epoch, bool) { return l.mem().EpochFor(o) }
func (l hostLog) Close() error                         { return nil }

// The model has no snapshots: the log start stays 0.
func (l hostLog) DeleteBefore(int64) error   { return errNoSnapshots }
func (l hostLog) ResetTo(kraft.LogEnd) error { return errNoSnapshots }

var errNoSnapshots = errors.New("explore: the model has no snapshots")

// recordOf and dataOf convert between the layer's records (a type byte,
// then the payload) and the model's: a client record's payload is its
// number, a LeaderChange record is number 0.
func recordOf(epoch kraft.Epoch, data []byte) rec {
	if len(data) > 0 && data[0] == layer.RecordData {
		id, _ := strconv.Atoi(string(data[1:]))
		return rec{Epoch: epoch, ID: int32(id)}
	}
	return rec{Epoch: epoch}
}

func dataOf(r rec) []byte {
	if r.ID == 0 {
		return []byte{layer.RecordLeaderChange}
	}
	return append([]byte{layer.RecordData}, strconv.Itoa(int(r.ID))...)
}

type hostRecords struct {
	g  *engine
	id kraft.NodeID
}

func (h hostRecords) Read() (*kraft.QuorumRecord, error) {
	r := &h.g.w.reps[h.id]
	if !r.hasRecord {
		return nil, nil
	}
	rc := r.record
	return &rc, nil
}

func (h hostRecords) Write(q kraft.QuorumRecord) error {
	r := &h.g.w.reps[h.id]
	r.record, r.hasRecord = q, true
	return nil
}

// observer runs the checks of check.go on replica id's steps and hands
// them to the recorder.
type observer struct {
	g  *engine
	id kraft.NodeID
}

func (o observer) Started(rec *kraft.QuorumRecord, ls kraft.LogState, st kraft.State, acts []kraft.Action) {
	g := o.g
	g.w.reps[o.id].st = st
	if g.rec != nil {
		g.rec.start(o.id, g.cfgs[o.id], rec, ls, acts, st)
	}
}

func (o observer) Stepped(e kraft.Event, before, after kraft.State, acts []kraft.Action) {
	g := o.g
	g.w.reps[o.id].st = after
	if g.rec != nil {
		g.rec.step(o.id, e, acts, after)
	}
	if g.viol != nil {
		return
	}
	if err := after.CheckInvariants(); err != nil {
		g.fail(o.id, "state-invariant", "%v after %T (%v)", err, e, after)
		return
	}
	for _, a := range acts {
		if f, ok := a.(kraft.Fault); ok {
			g.beforeAction(o.id, f, e)
		}
	}
}

func (o observer) Carrying(a kraft.Action, e kraft.Event) {
	if _, fault := a.(kraft.Fault); !fault && o.g.viol == nil {
		o.g.beforeAction(o.id, a, e)
	}
}

func (o observer) Carried(e kraft.Event, before kraft.State) {
	o.g.afterStep(o.id, before, o.g.w.reps[o.id].st, e != nil)
}
