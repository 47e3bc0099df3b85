package explore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/plant"
)

// Bounds limit the explored worlds. A transition whose result breaks a
// bound is not taken (it is counted in Stats.Pruned).
type Bounds struct {
	// Voters (1 to 8) get ids 0..Voters-1, Observers the ids after them.
	Voters, Observers int
	// MaxEpoch: no replica's epoch goes past it.
	MaxEpoch kraft.Epoch
	// MaxMessages: at most this many messages in flight.
	MaxMessages int
	// MaxCrashes, MaxAppends, MaxDuplicates: at most this many crashes,
	// client appends and message duplications along any path.
	MaxCrashes, MaxAppends, MaxDuplicates int
	// MaxDamages: at most this many disk faults along any path (Damage
	// moves: a down replica restarts on a log whose synced records are
	// damaged); 0, the default, for none.
	MaxDamages int
	// MaxDepth: at most this many transitions from the initial world; 0
	// for no limit.
	MaxDepth int
	// PeerDowns: a Follower's host may report its leader's process gone
	// at any moment (ReportDown), true or not, as a host that notices a
	// killed process does (docs/design.md D101). A replica takes one
	// report per epoch, so the moves need no bound of their own.
	PeerDowns bool
}

// Options configure a Model.
type Options struct {
	Bounds
	// Step replaces kraft.Step and Start kraft.NewState when set (tests
	// plant bugs through them).
	Step  StepFunc
	Start StartFunc
	// Liveness keeps the graph of fair transitions (every move but drops,
	// duplications and crashes) and checks, once the exploration is done,
	// that a world with a leader is reachable from every explored world
	// (see Stats.Leaderless).
	Liveness bool
	// Full turns the reductions off: every message may be dropped at any
	// moment, as a move of its own. By default (the reduced model) a
	// message is lost only just before a move that the in-flight bound
	// would otherwise cut off, as part of that move (Move.Drops), which
	// reaches the same replica states (docs/verification.md).
	Full bool
	// MaxStates stops the exploration, incomplete, after this many
	// distinct worlds; 0 for no limit. Timeout does the same after a wall
	// time.
	MaxStates int
	Timeout   time.Duration
	// Progress, when set, is called after every completed BFS level.
	Progress func(Stats)
	// Workers is how many goroutines expand a level; 0 for
	// runtime.GOMAXPROCS(0). The result does not depend on it.
	Workers int

	// plant is a bug planted in the model's host (package internal/plant:
	// plant.TornTail), by the tests that show the search finds it.
	plant plant.Bug
}

// Stats say what an exploration did.
type Stats struct {
	// Transitions is the number of moves taken (successors computed),
	// Distinct the number of distinct worlds found (the initial one
	// included), Pruned the moves a bound cut off.
	Transitions int64
	Distinct    int
	Pruned      int64
	// Depth is the length of the longest shortest path to an explored
	// world.
	Depth int
	// Complete: every world reachable within the bounds was explored (no
	// violation, MaxStates or Timeout stopped the search) and MaxDepth, if
	// set, cut nothing off. DepthLimited: the search ended only at
	// MaxDepth: every world within that many moves was explored, and the
	// worlds at that depth have successors that were not.
	Complete, DepthLimited bool
	// Workers is the number of goroutines that expanded the levels.
	Workers int
	// Witness: how far into the bounds the explored worlds went.
	Witness Witness
	// Interned: the distinct replicas, messages and checker histories the
	// worlds are made of.
	Interned [3]int
	// Elapsed is the wall time, StatesPerSec Distinct per second of it.
	Elapsed      time.Duration
	StatesPerSec float64
	// PeakHeap is the largest HeapInuse seen at the end of a level, Sys
	// the memory obtained from the OS at the end (runtime.MemStats).
	PeakHeap, Sys uint64
	// With Options.Liveness: LivenessChecked, and Leaderless is the number
	// of explored worlds from which no world with a leader is reachable by
	// fair moves within the explored graph, and from which no cut-off
	// (pruned or unexpanded) world is reachable either: those are stuck
	// for good within the model.
	LivenessChecked bool
	Leaderless      int
}

// Result is what Run found.
type Result struct {
	Stats
	// Violation is the first broken invariant, nil if none; Path is the
	// shortest sequence of moves from the initial world that breaks it
	// (for "liveness": that reaches a stuck world).
	Violation *Violation
	Path      []Move
}

// Model is a small cluster to explore.
type Model struct {
	opts Options
	cfgs []kraft.Config
}

// MaxVoters is the largest voter set the explorer takes.
const MaxVoters = 8

// New checks the options and builds the model.
func New(opts Options) (*Model, error) {
	b := opts.Bounds
	switch {
	case b.Voters < 1 || b.Voters > MaxVoters:
		return nil, fmt.Errorf("explore: %d voters, want 1 to %d", b.Voters, MaxVoters)
	case b.Observers < 0 || b.Observers > 4:
		return nil, fmt.Errorf("explore: %d observers, want 0 to 4", b.Observers)
	case b.MaxEpoch < 0 || b.MaxEpoch > 100:
		return nil, fmt.Errorf("explore: max epoch %d, want 0 to 100", b.MaxEpoch)
	case !opts.Full && b.MaxMessages > 16:
		return nil, fmt.Errorf("explore: %d messages in flight, want at most 16 (or Options.Full)", b.MaxMessages)
	case b.MaxDuplicates >= 1<<16 || b.MaxDamages >= 1<<15:
		return nil, errors.New("explore: too many duplications or damages")
	case b.MaxMessages < 0 || b.MaxCrashes < 0 || b.MaxAppends < 0 || b.MaxDuplicates < 0 || b.MaxDepth < 0 || b.MaxDamages < 0:
		return nil, errors.New("explore: negative bound")
	}
	if opts.Step == nil {
		opts.Step = kraft.Step
	}
	if opts.Start == nil {
		opts.Start = kraft.NewState
	}
	m := &Model{opts: opts}
	voters := make([]kraft.ReplicaKey, b.Voters)
	for i := range voters {
		voters[i] = kraft.ReplicaKey{ID: kraft.NodeID(i)}
	}
	for i := 0; i < b.Voters+b.Observers; i++ {
		m.cfgs = append(m.cfgs, kraft.Config{
			Local:    kraft.ReplicaKey{ID: kraft.NodeID(i)},
			Observer: i >= b.Voters,
			Voters:   voters,
			Seed:     uint64(i) + 1,
		})
	}
	return m, nil
}

// Configs returns each replica's kraft.Config.
func (m *Model) Configs() []kraft.Config { return append([]kraft.Config(nil), m.cfgs...) }

func (m *Model) engine(r recorder) *engine {
	return &engine{b: m.opts.Bounds, cfgs: m.cfgs, step: m.opts.Step, start: m.opts.Start, rec: r, full: m.opts.Full, plant: m.opts.plant}
}

// moves lists the moves available in w, in a fixed order.
func (g *engine) moves(w *world, out []Move) []Move {
	out = out[:0]
	for i := range w.net {
		if i > 0 && w.net[i].enc == w.net[i-1].enc {
			continue // the same message: the same successors
		}
		m := &w.net[i]
		if to := m.to(); to >= 0 && int(to) < len(w.reps) && w.reps[to].up {
			out = append(out, Move{Kind: Deliver, Msg: int32(i), Target: to, Node: m.from()})
		}
		if g.full {
			out = append(out, Move{Kind: Drop, Msg: int32(i), Node: m.from(), Target: m.to()})
		}
		if w.dups < g.b.MaxDuplicates {
			out = append(out, Move{Kind: Duplicate, Msg: int32(i), Node: m.from(), Target: m.to()})
		}
	}
	damaging := w.damages < g.b.MaxDamages
	for i := range w.reps {
		r := &w.reps[i]
		id := kraft.NodeID(i)
		if !r.up {
			out = append(out, Move{Kind: Restart, Node: id})
			for from := 0; damaging && from < r.flushed; from++ {
				out = append(out, Move{Kind: Damage, Node: id, Msg: int32(from)})
			}
			continue
		}
		for _, d := range r.model().Deadlines() {
			out = append(out, Move{Kind: Fire, Node: id, Deadline: d})
		}
		if r.flushed < len(r.log) {
			out = append(out, Move{Kind: Flush, Node: id})
		}
		if w.crashes < g.b.MaxCrashes {
			out = append(out, Move{Kind: Crash, Node: id})
		}
		if g.b.PeerDowns && r.st.Role() == kraft.Follower && r.rep.LeaderDownReportable() {
			out = append(out, Move{Kind: ReportDown, Node: id, Target: r.st.Leader()})
		}
		if r.st.Role() == kraft.Leader {
			out = append(out, Move{Kind: ResignLeader, Node: id})
			if w.appends < g.b.MaxAppends {
				out = append(out, Move{Kind: Append, Node: id})
			}
		}
	}
	return out
}

// successors takes the moves of w (from moves) in order and calls visit
// with each result; visit returns false to stop. In the reduced model (not
// Options.Full) a move that only the in-flight bound cuts off is visited
// (pruned) and then followed by its variants that first lose just enough
// of the messages already in flight, each choice of them once (equal
// messages are interchangeable).
func (g *engine) successors(w *world, moves []Move, visit func(mv Move, nw *world, viol *Violation, pruned bool) bool) {
	for _, mv := range moves {
		nw, viol, pruned := g.apply(w, mv)
		over := g.over
		if !visit(mv, nw, viol, pruned) {
			return
		}
		if viol != nil || over == 0 || g.full {
			continue
		}
		n := len(w.net)
		skip := -1
		if mv.Kind == Deliver || mv.Kind == Duplicate {
			skip = int(mv.Msg)
		}
		for mask := 1; mask < 1<<uint(n); mask++ {
			if bits.OnesCount(uint(mask)) != over || (skip >= 0 && mask&(1<<uint(skip)) != 0) || !canonicalDrops(w, mask, skip) {
				continue
			}
			dm := mv
			dm.Drops = uint16(mask)
			nw, viol, pruned := g.apply(w, dm)
			if pruned && viol == nil && g.over > 0 {
				// The move itself removed some of the dropped messages:
				// another choice covers it.
				continue
			}
			if !visit(dm, nw, viol, pruned) {
				return
			}
		}
	}
}

// canonicalDrops: among equal messages in flight (adjacent in the sorted
// network), the lowest indexes are dropped first, so that each multiset of
// dropped messages is chosen once.
func canonicalDrops(w *world, mask, skip int) bool {
	for i := 1; i < len(w.net); i++ {
		if mask&(1<<uint(i)) != 0 && mask&(1<<uint(i-1)) == 0 && i-1 != skip && w.net[i].enc == w.net[i-1].enc {
			return false
		}
	}
	return true
}

// fair: the moves a liveness path may use (no loss, no duplicate, no
// crash, no disk fault).
func fair(k MoveKind) bool { return k != Drop && k != Duplicate && k != Crash && k != Damage }

func hasLeader(w *world) bool {
	for i := range w.reps {
		if w.reps[i].up && w.reps[i].st.Role() == kraft.Leader {
			return true
		}
	}
	return false
}

// fingerprint is a 128-bit hash of a world's canonical encoding: the
// visited set keeps fingerprints, not encodings (as TLC does); two
// distinct worlds collide with probability about n^2/2^129 for n worlds.
type fingerprint [2]uint64

func hash128(b []byte) fingerprint {
	const k1, k2 = 0x9e3779b97f4a7c15, 0xc2b2ae3d27d4eb4f
	h1, h2 := uint64(len(b))^0x243f6a8885a308d3, uint64(len(b))^0x13198a2e03707344
	mix := func(a, k uint64) uint64 {
		hi, lo := bits.Mul64(a, k)
		return hi ^ lo
	}
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		h1 = mix(h1^x, k1) + 0x27d4eb2f165667c5
		h2 = mix(h2^bits.RotateLeft64(x, 29), k2) ^ h1
		b = b[8:]
	}
	var tail [8]byte
	copy(tail[:], b)
	x := binary.LittleEndian.Uint64(tail[:]) ^ uint64(len(b))<<56
	h1 = mix(h1^x, k1)
	h2 = mix(h2^bits.RotateLeft64(x, 29), k2) ^ h1
	h1 = mix(h1^h2, k2)
	h2 = mix(h2^h1, k1)
	return fingerprint{h1, h2}
}

// leaderless returns the worlds from which no world with a leader and no
// cut-off world is reachable along the edges, in index order (so the
// first is one of the shallowest).
func leaderless(n int, from, to []int32, leader, cut []bool) []int32 {
	// Reverse adjacency in CSR form.
	start := make([]int32, n+1)
	for _, t := range to {
		start[t+1]++
	}
	for i := 0; i < n; i++ {
		start[i+1] += start[i]
	}
	adj := make([]int32, len(from))
	fill := append([]int32(nil), start[:n]...)
	for i, t := range to {
		adj[fill[t]] = from[i]
		fill[t]++
	}
	good := make([]bool, n)
	var queue []int32
	for i := 0; i < n; i++ {
		if leader[i] || cut[i] {
			good[i] = true
			queue = append(queue, int32(i))
		}
	}
	for len(queue) > 0 {
		x := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, p := range adj[start[x]:start[x+1]] {
			if !good[p] {
				good[p] = true
				queue = append(queue, p)
			}
		}
	}
	var out []int32
	for i := 0; i < n; i++ {
		if !good[i] {
			out = append(out, int32(i))
		}
	}
	return out
}

// View is a read-only look at an explored world.
type View struct{ w *world }

// State returns replica id's state and whether it is up (a down replica's
// state is the zero State).
func (v View) State(id kraft.NodeID) (kraft.State, bool) {
	r := &v.w.reps[id]
	return r.st, r.up
}

// AllUp reports whether every replica is up.
func (v View) AllUp() bool {
	for i := range v.w.reps {
		if !v.w.reps[i].up {
			return false
		}
	}
	return true
}

// Committed is the length of the committed log.
func (v View) Committed() int { return len(v.w.committed) }

// Crashes counts the crashes so far.
func (v View) Crashes() int { return v.w.crashes }

// Damages counts the disk faults (Damage moves) so far.
func (v View) Damages() int { return v.w.damages }

// Appends counts the client appends so far.
func (v View) Appends() int { return v.w.appends }

// InFlight is the number of messages in flight.
func (v View) InFlight() int { return len(v.w.net) }

// ShortestPath searches breadth first, within the bounds (MaxStates
// included), for a world that satisfies goal and returns a shortest path to
// it, or false. Worlds that break an invariant are not entered.
func (m *Model) ShortestPath(goal func(View) bool) ([]Move, bool) {
	g := m.engine(nil)
	w0, v := g.initial()
	if v != nil {
		return nil, false
	}
	if goal(View{w0}) {
		return nil, true
	}
	type node struct {
		w    *world
		path []Move
	}
	seen := map[fingerprint]bool{hash128(w0.encode()): true}
	level := []node{{w: w0}}
	var moves, path []Move
	for depth := 0; len(level) > 0 && (m.opts.MaxDepth == 0 || depth < m.opts.MaxDepth); depth++ {
		var next []node
		for _, n := range level {
			moves = g.moves(n.w, moves)
			found, full := false, false
			g.successors(n.w, moves, func(mv Move, nw *world, viol *Violation, pruned bool) bool {
				if viol != nil || pruned {
					return true
				}
				fp := hash128(nw.encode())
				if seen[fp] {
					return true
				}
				seen[fp] = true
				p := append(append([]Move(nil), n.path...), mv)
				if goal(View{nw}) {
					path, found = p, true
					return false
				}
				if m.opts.MaxStates > 0 && len(seen) >= m.opts.MaxStates {
					full = true
					return false
				}
				next = append(next, node{nw, p})
				return true
			})
			if found {
				return path, true
			}
			if full {
				return nil, false
			}
		}
		level = next
	}
	return nil, false
}
