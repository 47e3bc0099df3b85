package explore

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kraftquorum/kraft"
)

// Witness says how far into the bounds the explored worlds went: the
// search can finish a bound (or a depth) without ever using part of it.
type Witness struct {
	// MaxEpoch is the highest epoch of an up replica in an explored world,
	// LeaderEpochs the epochs (bit e for epoch e, up to 63) that had a
	// Leader in an explored world.
	MaxEpoch     kraft.Epoch
	LeaderEpochs uint64
	// MaxInFlight is the most messages in flight in an explored world.
	MaxInFlight int
	// TailLosses counts the explored worlds first reached by a crash that
	// lost an unflushed tail of the written log.
	TailLosses int
	// Crashed counts the explored worlds after at least one crash,
	// Appended those after at least one client append.
	Crashed, Appended int
	// Damaged counts the explored worlds after at least one disk fault.
	Damaged int
	// MaxCommittedAppends is the most client records committed in an
	// explored world.
	MaxCommittedAppends int
}

// HadLeader reports whether some explored world had a Leader of epoch e.
func (x Witness) HadLeader(e kraft.Epoch) bool {
	return e >= 0 && e < 64 && x.LeaderEpochs&(1<<uint(e)) != 0
}

// see adds world w, first reached by a transition that lost an unflushed
// tail if lost.
func (x *Witness) see(w *world, lost bool) {
	for i := range w.reps {
		r := &w.reps[i]
		if !r.up {
			continue
		}
		e := r.st.Epoch()
		if e > x.MaxEpoch {
			x.MaxEpoch = e
		}
		if r.st.Role() == kraft.Leader && e >= 0 && e < 64 {
			x.LeaderEpochs |= 1 << uint(e)
		}
	}
	if len(w.net) > x.MaxInFlight {
		x.MaxInFlight = len(w.net)
	}
	if lost {
		x.TailLosses++
	}
	if w.crashes > 0 {
		x.Crashed++
	}
	if w.appends > 0 {
		x.Appended++
	}
	if w.damages > 0 {
		x.Damaged++
	}
	n := 0
	for _, r := range w.committed {
		if r.ID > 0 {
			n++
		}
	}
	if n > x.MaxCommittedAppends {
		x.MaxCommittedAppends = n
	}
}

func (x *Witness) add(y *Witness) {
	if y.MaxEpoch > x.MaxEpoch {
		x.MaxEpoch = y.MaxEpoch
	}
	x.LeaderEpochs |= y.LeaderEpochs
	if y.MaxInFlight > x.MaxInFlight {
		x.MaxInFlight = y.MaxInFlight
	}
	x.TailLosses += y.TailLosses
	x.Crashed += y.Crashed
	x.Appended += y.Appended
	x.Damaged += y.Damaged
	if y.MaxCommittedAppends > x.MaxCommittedAppends {
		x.MaxCommittedAppends = y.MaxCommittedAppends
	}
}

// chunkSize is how many worlds of a level a worker expands at a time.
const chunkSize = 256

// candidate is a successor a worker found that was not in the visited set
// when the level began (and not earlier in its chunk).
type candidate struct {
	fp     fingerprint
	mv     Move
	leader bool
	wit    Witness
}

// edge is a fair transition, for the liveness pass.
type edge struct{ to fingerprint }

// chunkResult is what a worker found expanding worlds [from, from+n) of a
// level, in order.
type chunkResult struct {
	expanded int // worlds expanded (fewer than n after a timeout or violation)
	// per expanded world: transitions, pruned, end of its candidates and
	// of its edges
	trans, pruned    []int32
	candEnd, edgeEnd []int32
	cands            []candidate
	rows             []int32 // the candidates' rows
	edges            []edge
	// viol: the last expanded world's move violMove broke an invariant.
	viol     *Violation
	violMove Move
}

// search is one Run: the visited set, the tree of first visits (for
// paths), the liveness graph and the figures. Everything but the time and
// memory figures is what a single-threaded breadth-first search computes.
type search struct {
	m        *Model
	began    time.Time
	deadline time.Time // zero: none
	timedOut int32     // set (atomically) by a worker past the deadline
	res      Result
	peak     uint64

	in     *interner
	l      layout
	stride int
	seen   *fpSet
	// parents[i] is the world world i was first reached from, via[i] the
	// move (world 0, the initial one, has none).
	parents []int32
	via     []Move

	// Liveness (only when live): fair edges, worlds with a leader, worlds
	// cut off.
	live             bool
	edgeFrom, edgeTo []int32
	leader, cut      []bool
}

// worker is one goroutine's engine, compactor and scratch.
type worker struct {
	g     *engine
	c     *compactor
	moves []Move
	local map[fingerprint]struct{}
}

// Run explores every world reachable from the initial one within the
// bounds, breadth first, and stops at the first violation, whose path is
// then a shortest one. The worlds of a level are expanded in chunks by
// Options.Workers goroutines and the chunks' results merged in level
// order, so that everything Run returns but the time and memory figures is
// what a single-threaded breadth-first search returns.
func (m *Model) Run() Result {
	s := &search{m: m, began: time.Now(), live: m.opts.Liveness}
	if m.opts.Timeout > 0 {
		s.deadline = s.began.Add(m.opts.Timeout)
	}
	workers := m.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	s.res.Workers = workers
	w0, v := m.engine(nil).initial()
	s.res.Distinct = 1
	if v != nil {
		s.res.Violation = v
		return s.finish()
	}
	s.res.Witness.see(w0, false)
	s.l = layout{nreps: len(m.cfgs), maxNet: m.opts.MaxMessages}
	if len(w0.net) > s.l.maxNet {
		s.l.maxNet = len(w0.net)
	}
	s.stride = s.l.stride()
	s.in = newInterner()
	level, fp0 := s.in.compactor(s.l).compact(w0, nil)
	s.seen = newFPSet()
	s.seen.put(fp0, 0)
	s.parents, s.via = []int32{-1}, []Move{{}}
	if s.live {
		s.leader = append(s.leader, hasLeader(w0))
		s.cut = append(s.cut, false)
	}
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = &worker{g: m.engine(nil), c: s.in.compactor(s.l), local: map[fingerprint]struct{}{}}
	}
	levelStart := int32(0)
	stopped := false
	for depth := 0; len(level) > 0 && !stopped; depth++ {
		n := len(level) / s.stride
		if m.opts.MaxDepth > 0 && depth >= m.opts.MaxDepth {
			s.cutOff(levelStart, 0, n)
			break
		}
		results := s.expandLevel(ws, level)
		next, merged, stop, done := s.merge(results, levelStart, depth, n)
		if done {
			return s.finish()
		}
		stopped = stop
		if stopped {
			s.cutOff(levelStart, merged, n)
		}
		levelStart += int32(n)
		level = next
		s.res.Distinct = len(s.parents)
		s.readPeak()
		if m.opts.Progress != nil {
			st := s.res.Stats
			st.Elapsed = time.Since(s.began)
			st.PeakHeap = s.peak
			m.opts.Progress(st)
		}
		if stopped {
			s.cutOff(levelStart, 0, len(level)/s.stride)
		}
	}
	s.res.Distinct = len(s.parents)
	s.res.Complete = !stopped && (m.opts.MaxDepth == 0 || len(level) == 0)
	s.res.DepthLimited = !stopped && m.opts.MaxDepth > 0 && len(level) > 0
	s.res.Interned = [3]int{len(s.in.reps), len(s.in.msgs), len(s.in.hists)}
	if s.live {
		s.checkLiveness()
	}
	return s.finish()
}

// readPeak reads the heap figures and keeps the peak in use.
func (s *search) readPeak() runtime.MemStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse > s.peak {
		s.peak = ms.HeapInuse
	}
	return ms
}

// finish fills the time and memory figures and returns the result.
func (s *search) finish() Result {
	s.res.Elapsed = time.Since(s.began)
	if sec := s.res.Elapsed.Seconds(); sec > 0 {
		s.res.StatesPerSec = float64(s.res.Distinct) / sec
	}
	ms := s.readPeak()
	s.res.PeakHeap, s.res.Sys = s.peak, ms.Sys
	return s.res
}

// pathTo is the path of moves from the initial world to world idx, then
// last if not nil.
func (s *search) pathTo(idx int32, last *Move) []Move {
	var p []Move
	if last != nil {
		p = append(p, *last)
	}
	for i := idx; i > 0; i = s.parents[i] {
		p = append(p, s.via[i])
	}
	for i, j := 0, len(p)-1; i < j; i, j = i+1, j-1 {
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// cutOff marks worlds [from, to) of the level starting at levelStart as
// cut off (not expanded), for the liveness pass.
func (s *search) cutOff(levelStart int32, from, to int) {
	if !s.live {
		return
	}
	for i := from; i < to; i++ {
		s.cut[levelStart+int32(i)] = true
	}
}

// expandLevel expands the level's worlds in chunks, on every worker; a
// chunk's result is nil when no worker took it (a violation in an earlier
// chunk, or the deadline).
func (s *search) expandLevel(ws []*worker, level []int32) []*chunkResult {
	n := len(level) / s.stride
	nchunks := (n + chunkSize - 1) / chunkSize
	results := make([]*chunkResult, nchunks)
	var nextChunk int64
	violChunk := int64(nchunks)
	var wg sync.WaitGroup
	for _, wk := range ws {
		wg.Add(1)
		go func(wk *worker) {
			defer wg.Done()
			for {
				ci := atomic.AddInt64(&nextChunk, 1) - 1
				if ci >= int64(nchunks) || ci > atomic.LoadInt64(&violChunk) || atomic.LoadInt32(&s.timedOut) != 0 {
					return
				}
				from := int(ci) * chunkSize
				r := s.expand(wk, level, from, min(from+chunkSize, n))
				results[ci] = r
				if r.viol != nil {
					for {
						old := atomic.LoadInt64(&violChunk)
						if ci >= old || atomic.CompareAndSwapInt64(&violChunk, old, ci) {
							break
						}
					}
				}
			}
		}(wk)
	}
	wg.Wait()
	return results
}

// expand expands worlds [from, to) of the level: their successors not yet
// seen (when the level began, or earlier in the chunk) become candidates.
func (s *search) expand(wk *worker, level []int32, from, to int) *chunkResult {
	r := &chunkResult{}
	clear(wk.local)
	for p := from; p < to; p++ {
		if !s.deadline.IsZero() && time.Now().After(s.deadline) {
			atomic.StoreInt32(&s.timedOut, 1)
			break
		}
		w := s.in.world(s.l, level[p*s.stride:(p+1)*s.stride])
		wk.moves = wk.g.moves(w, wk.moves)
		var trans, pruned int32
		wk.g.successors(w, wk.moves, func(mv Move, nw *world, viol *Violation, cutOff bool) bool {
			trans++
			if viol != nil {
				r.viol, r.violMove = viol, mv
				return false
			}
			if cutOff {
				pruned++
				return true
			}
			var fp fingerprint
			at := len(r.rows)
			r.rows, fp = wk.c.compact(nw, r.rows)
			if s.live && fair(mv.Kind) && mv.Drops == 0 {
				r.edges = append(r.edges, edge{fp})
			}
			if _, ok := s.seen.get(fp); ok {
				r.rows = r.rows[:at]
				return true
			}
			if _, ok := wk.local[fp]; ok {
				r.rows = r.rows[:at]
				return true
			}
			wk.local[fp] = struct{}{}
			c := candidate{fp: fp, mv: mv}
			if s.live {
				c.leader = hasLeader(nw)
			}
			c.wit.see(nw, nw.lostTail)
			r.cands = append(r.cands, c)
			return true
		})
		r.expanded++
		r.trans = append(r.trans, trans)
		r.pruned = append(r.pruned, pruned)
		r.candEnd = append(r.candEnd, int32(len(r.cands)))
		r.edgeEnd = append(r.edgeEnd, int32(len(r.edges)))
		if r.viol != nil {
			break
		}
	}
	return r
}

// merge merges the chunks' results in level order: the candidates not
// seen by an earlier chunk become the next level's worlds. It returns the
// next level, how many of the level's n worlds were merged, stopped when
// the search stops after this level (the deadline or the state bound), and
// done when a violation ended the search (s.res then has it and its path).
func (s *search) merge(results []*chunkResult, levelStart int32, depth, n int) (next []int32, merged int, stopped, done bool) {
	m := s.m
	for ci, r := range results {
		if r == nil {
			return next, merged, true, false
		}
		var c0, e0 int32
		for p := 0; p < r.expanded; p++ {
			id := levelStart + int32(ci*chunkSize+p)
			s.res.Transitions += int64(r.trans[p])
			s.res.Pruned += int64(r.pruned[p])
			if s.live && r.pruned[p] > 0 {
				s.cut[id] = true
			}
			for k := c0; k < r.candEnd[p]; k++ {
				c := &r.cands[k]
				if _, ok := s.seen.get(c.fp); ok {
					continue
				}
				s.seen.put(c.fp, int32(len(s.parents)))
				s.parents = append(s.parents, id)
				s.via = append(s.via, c.mv)
				next = append(next, r.rows[int(k)*s.stride:int(k+1)*s.stride]...)
				s.res.Depth = depth + 1
				s.res.Witness.add(&c.wit)
				if s.live {
					s.leader = append(s.leader, c.leader)
					s.cut = append(s.cut, false)
				}
			}
			c0 = r.candEnd[p]
			if s.live {
				for k := e0; k < r.edgeEnd[p]; k++ {
					to, ok := s.seen.get(r.edges[k].to)
					if !ok {
						panic("explore: an edge to an unknown world")
					}
					s.edgeFrom = append(s.edgeFrom, id)
					s.edgeTo = append(s.edgeTo, to)
				}
				e0 = r.edgeEnd[p]
			}
			merged++
			if r.viol != nil && p == r.expanded-1 {
				s.res.Violation = r.viol
				s.res.Path = s.pathTo(id, &r.violMove)
				if len(s.res.Path) > s.res.Depth {
					s.res.Depth = len(s.res.Path)
				}
				s.res.Distinct = len(s.parents)
				return next, merged, true, true
			}
			if m.opts.MaxStates > 0 && len(s.parents) >= m.opts.MaxStates {
				return next, merged, true, false
			}
		}
		if r.expanded < chunkSize && ci*chunkSize+r.expanded < n {
			return next, merged, true, false // timed out
		}
	}
	return next, merged, false, false
}

// checkLiveness fails the search when explored worlds reach no world with
// a leader by fair moves.
func (s *search) checkLiveness() {
	s.res.LivenessChecked = true
	stuck := leaderless(len(s.parents), s.edgeFrom, s.edgeTo, s.leader, s.cut)
	s.res.Leaderless = len(stuck)
	if len(stuck) > 0 {
		s.res.Violation = &Violation{Rule: "liveness", Node: kraft.NoNode, Detail: fmt.Sprintf(
			"%d explored worlds reach no world with a leader by fair moves (and no cut-off world); the path leads to the first one found", len(stuck))}
		s.res.Path = s.pathTo(stuck[0], nil)
	}
}
