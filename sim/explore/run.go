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

// Run explores every world reachable from the initial one within the
// bounds, breadth first, and stops at the first violation, whose path is
// then a shortest one. The worlds of a level are expanded in chunks by
// Options.Workers goroutines and the chunks' results merged in level
// order, so that everything Run returns but the time and memory figures is
// what a single-threaded breadth-first search returns.
func (m *Model) Run() Result {
	began := time.Now()
	var res Result
	var peak uint64
	readPeak := func() runtime.MemStats {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peak {
			peak = ms.HeapInuse
		}
		return ms
	}
	finish := func() Result {
		res.Elapsed = time.Since(began)
		if s := res.Elapsed.Seconds(); s > 0 {
			res.StatesPerSec = float64(res.Distinct) / s
		}
		ms := readPeak()
		res.PeakHeap, res.Sys = peak, ms.Sys
		return res
	}
	workers := m.opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	res.Workers = workers
	g0 := m.engine(nil)
	w0, v := g0.initial()
	res.Distinct = 1
	if v != nil {
		res.Violation = v
		return finish()
	}
	res.Witness.see(w0, false)
	l := layout{nreps: len(m.cfgs), maxNet: m.opts.MaxMessages}
	if len(w0.net) > l.maxNet {
		l.maxNet = len(w0.net)
	}
	stride := l.stride()
	in := newInterner()
	level, fp0 := in.compactor(l).compact(w0, nil)
	seen := newFPSet()
	seen.put(fp0, 0)
	parents := []int32{-1}
	via := []Move{{}}
	pathTo := func(idx int32, last *Move) []Move {
		var p []Move
		if last != nil {
			p = append(p, *last)
		}
		for i := idx; i > 0; i = parents[i] {
			p = append(p, via[i])
		}
		for i, j := 0, len(p)-1; i < j; i, j = i+1, j-1 {
			p[i], p[j] = p[j], p[i]
		}
		return p
	}
	// Liveness: fair edges, worlds with a leader, worlds cut off.
	var (
		edgeFrom, edgeTo []int32
		leader, cut      []bool
	)
	live := m.opts.Liveness
	if live {
		leader = append(leader, hasLeader(w0))
		cut = append(cut, false)
	}
	type worker struct {
		g     *engine
		c     *compactor
		moves []Move
		local map[fingerprint]struct{}
	}
	ws := make([]*worker, workers)
	for i := range ws {
		ws[i] = &worker{g: m.engine(nil), c: in.compactor(l), local: map[fingerprint]struct{}{}}
	}
	deadline := time.Time{}
	if m.opts.Timeout > 0 {
		deadline = began.Add(m.opts.Timeout)
	}
	var timedOut int32
	// expand expands worlds [from, to) of the level.
	expand := func(wk *worker, level []int32, from, to int) *chunkResult {
		r := &chunkResult{}
		for k := range wk.local {
			delete(wk.local, k)
		}
		for p := from; p < to; p++ {
			if !deadline.IsZero() && time.Now().After(deadline) {
				atomic.StoreInt32(&timedOut, 1)
				break
			}
			w := in.world(l, level[p*stride:(p+1)*stride])
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
				if live && fair(mv.Kind) && mv.Drops == 0 {
					r.edges = append(r.edges, edge{fp})
				}
				if _, ok := seen.get(fp); ok {
					r.rows = r.rows[:at]
					return true
				}
				if _, ok := wk.local[fp]; ok {
					r.rows = r.rows[:at]
					return true
				}
				wk.local[fp] = struct{}{}
				c := candidate{fp: fp, mv: mv}
				if live {
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
	levelStart := int32(0)
	stopped := false
	for depth := 0; len(level) > 0 && !stopped; depth++ {
		n := len(level) / stride
		if m.opts.MaxDepth > 0 && depth >= m.opts.MaxDepth {
			if live {
				for i := 0; i < n; i++ {
					cut[levelStart+int32(i)] = true
				}
			}
			break
		}
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
					if ci >= int64(nchunks) || ci > atomic.LoadInt64(&violChunk) || atomic.LoadInt32(&timedOut) != 0 {
						return
					}
					from := int(ci) * chunkSize
					to := from + chunkSize
					if to > n {
						to = n
					}
					r := expand(wk, level, from, to)
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
		// Merge, in level order.
		var next []int32
		merged := 0 // worlds of the level merged
	merge:
		for ci, r := range results {
			if r == nil {
				stopped = true
				break
			}
			var c0, e0 int32
			for p := 0; p < r.expanded; p++ {
				id := levelStart + int32(ci*chunkSize+p)
				res.Transitions += int64(r.trans[p])
				res.Pruned += int64(r.pruned[p])
				if live && r.pruned[p] > 0 {
					cut[id] = true
				}
				for k := c0; k < r.candEnd[p]; k++ {
					c := &r.cands[k]
					if _, ok := seen.get(c.fp); ok {
						continue
					}
					seen.put(c.fp, int32(len(parents)))
					parents = append(parents, id)
					via = append(via, c.mv)
					next = append(next, r.rows[int(k)*stride:int(k+1)*stride]...)
					res.Depth = depth + 1
					res.Witness.add(&c.wit)
					if live {
						leader = append(leader, c.leader)
						cut = append(cut, false)
					}
				}
				c0 = r.candEnd[p]
				if live {
					for k := e0; k < r.edgeEnd[p]; k++ {
						to, ok := seen.get(r.edges[k].to)
						if !ok {
							panic("explore: an edge to an unknown world")
						}
						edgeFrom = append(edgeFrom, id)
						edgeTo = append(edgeTo, to)
					}
					e0 = r.edgeEnd[p]
				}
				merged++
				if r.viol != nil && p == r.expanded-1 {
					res.Violation = r.viol
					res.Path = pathTo(id, &r.violMove)
					if len(res.Path) > res.Depth {
						res.Depth = len(res.Path)
					}
					res.Distinct = len(parents)
					return finish()
				}
				if m.opts.MaxStates > 0 && len(parents) >= m.opts.MaxStates {
					stopped = true
					break merge
				}
			}
			if r.expanded < chunkSize && ci*chunkSize+r.expanded < n {
				stopped = true // timed out
				break
			}
		}
		if stopped && live {
			for i := merged; i < n; i++ {
				cut[levelStart+int32(i)] = true
			}
		}
		levelStart += int32(n)
		level = next
		res.Distinct = len(parents)
		readPeak()
		if m.opts.Progress != nil {
			st := res.Stats
			st.Elapsed = time.Since(began)
			st.PeakHeap = peak
			m.opts.Progress(st)
		}
		if stopped && live {
			for i := 0; i < len(level)/stride; i++ {
				cut[levelStart+int32(i)] = true
			}
		}
	}
	res.Distinct = len(parents)
	res.Complete = !stopped && (m.opts.MaxDepth == 0 || len(level) == 0)
	res.DepthLimited = !stopped && m.opts.MaxDepth > 0 && len(level) > 0
	res.Interned = [3]int{len(in.reps), len(in.msgs), len(in.hists)}
	if live {
		res.LivenessChecked = true
		stuck := leaderless(len(parents), edgeFrom, edgeTo, leader, cut)
		res.Leaderless = len(stuck)
		if len(stuck) > 0 {
			res.Violation = &Violation{Rule: "liveness", Node: kraft.NoNode, Detail: fmt.Sprintf(
				"%d explored worlds reach no world with a leader by fair moves (and no cut-off world); the path leads to the first one found", len(stuck))}
			res.Path = pathTo(stuck[0], nil)
		}
	}
	return finish()
}
