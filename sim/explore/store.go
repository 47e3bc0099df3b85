package explore

import (
	"encoding/binary"
	"sync"

	"github.com/kraftquorum/kraft"
)

// The search keeps its worlds compact. Every distinct replica (its State,
// host data and checker data), message and checker history is kept once,
// in an interner, under its canonical encoding; a world of the frontier is
// a row of int32: the indexes of its replicas, of its history, its
// counters and the indexes of its messages in network order. The row is
// turned back into a world when it is expanded. Interning by canonical
// encoding merges exactly what the world fingerprints already merge (the
// untimed State encoding leaves out the PRNG and the fetch jitter, which
// feed only timer durations), so a rebuilt world has the successors of the
// world that was stored.

// history is the checker's part of a world.
type history struct {
	leaders   []kraft.NodeID
	committed []rec
}

// interner keeps the distinct replicas, messages and histories. Safe for
// concurrent use.
type interner struct {
	mu      sync.RWMutex
	repIdx  map[string]int32
	reps    []replica
	repFP   []fingerprint
	msgIdx  map[string]int32
	msgs    []msg
	msgFP   []fingerprint
	histIdx map[string]int32
	hists   []history
	histFP  []fingerprint
}

func newInterner() *interner {
	return &interner{repIdx: map[string]int32{}, msgIdx: map[string]int32{}, histIdx: map[string]int32{}}
}

// layout is the shape of a compact row: nreps replica indexes, the history
// index, the three counters, the network's length and up to maxNet message
// indexes.
type layout struct{ nreps, maxNet int }

func (l layout) stride() int { return l.nreps + 5 + l.maxNet }

// compactor turns worlds into rows; one per goroutine (it keeps scratch
// buffers).
type compactor struct {
	in      *interner
	l       layout
	repKeys [][]byte
	histKey []byte
	fpBuf   []byte
	miss    []int
}

func (in *interner) compactor(l layout) *compactor {
	return &compactor{in: in, l: l, repKeys: make([][]byte, l.nreps)}
}

// compact appends w's row to dst and returns it with w's fingerprint,
// which is a function of the canonical encodings of w's parts.
func (c *compactor) compact(w *world, dst []int32) ([]int32, fingerprint) {
	l := c.l
	at := len(dst)
	for i := 0; i < l.stride(); i++ {
		dst = append(dst, -1)
	}
	row := dst[at:]
	in := c.in
	dirty := func(i int) bool { return w.ids == nil || w.ids[i] < 0 }
	for i := range w.reps {
		if dirty(i) {
			// The replica's id first: replicas of equal encodings but
			// different ids have different configurations.
			c.repKeys[i] = w.reps[i].encode(putV(c.repKeys[i][:0], int64(i)))
		} else {
			row[i] = w.ids[i]
		}
	}
	c.histKey = w.encodeHistory(c.histKey[:0])
	// The duplications and the damages share a counter: at most 2^16 of
	// each.
	row[l.nreps+1], row[l.nreps+2], row[l.nreps+3] = int32(w.crashes), int32(w.appends), int32(w.dups|w.damages<<16)
	row[l.nreps+4] = int32(len(w.net))
	c.miss = c.miss[:0]
	in.mu.RLock()
	for i := range w.reps {
		if dirty(i) {
			if id, ok := in.repIdx[string(c.repKeys[i])]; ok {
				row[i] = id
			} else {
				c.miss = append(c.miss, i)
			}
		}
	}
	if id, ok := in.histIdx[string(c.histKey)]; ok {
		row[l.nreps] = id
	} else {
		c.miss = append(c.miss, -1)
	}
	for j := range w.net {
		if id, ok := in.msgIdx[w.net[j].enc]; ok {
			row[l.nreps+5+j] = id
		} else {
			c.miss = append(c.miss, -2-j)
		}
	}
	in.mu.RUnlock()
	if len(c.miss) > 0 {
		c.intern(w, row)
	}
	return dst, c.fingerprint(w, row)
}

// intern adds the parts of w that compact did not find (c.miss) to the
// interner, under its write lock, and writes their ids into row.
func (c *compactor) intern(w *world, row []int32) {
	l, in := c.l, c.in
	in.mu.Lock()
	for _, x := range c.miss {
		switch {
		case x >= 0:
			k := string(c.repKeys[x])
			id, ok := in.repIdx[k]
			if !ok {
				id = int32(len(in.reps))
				in.repIdx[k] = id
				in.reps = append(in.reps, w.reps[x])
				in.repFP = append(in.repFP, hash128(c.repKeys[x]))
			}
			row[x] = id
		case x == -1:
			k := string(c.histKey)
			id, ok := in.histIdx[k]
			if !ok {
				id = int32(len(in.hists))
				in.histIdx[k] = id
				in.hists = append(in.hists, history{leaders: w.leaders, committed: w.committed})
				in.histFP = append(in.histFP, hash128(c.histKey))
			}
			row[l.nreps] = id
		default:
			j := -2 - x
			m := w.net[j]
			id, ok := in.msgIdx[m.enc]
			if !ok {
				id = int32(len(in.msgs))
				in.msgIdx[m.enc] = id
				in.msgs = append(in.msgs, m)
				in.msgFP = append(in.msgFP, hash128([]byte(m.enc)))
			}
			row[l.nreps+5+j] = id
		}
	}
	in.mu.Unlock()
}

// fingerprint hashes the parts' fingerprints and the counters of row.
func (c *compactor) fingerprint(w *world, row []int32) fingerprint {
	l, in := c.l, c.in
	// The fingerprint: the parts' fingerprints and the counters.
	b := c.fpBuf[:0]
	in.mu.RLock()
	for i := 0; i < l.nreps; i++ {
		b = putFP(b, in.repFP[row[i]])
	}
	b = putFP(b, in.histFP[row[l.nreps]])
	for j := 0; j < len(w.net); j++ {
		b = putFP(b, in.msgFP[row[l.nreps+5+j]])
	}
	in.mu.RUnlock()
	for i := l.nreps + 1; i < l.nreps+5; i++ {
		var x [4]byte
		binary.LittleEndian.PutUint32(x[:], uint32(row[i]))
		b = append(b, x[:]...)
	}
	c.fpBuf = b
	fp := hash128(b)
	fp[1] |= 1 // never the empty slot of fpSet
	return fp
}

func putFP(b []byte, fp fingerprint) []byte {
	var x [16]byte
	binary.LittleEndian.PutUint64(x[:8], fp[0])
	binary.LittleEndian.PutUint64(x[8:], fp[1])
	return append(b, x[:]...)
}

// world rebuilds the world of a row.
func (in *interner) world(l layout, row []int32) *world {
	w := &world{reps: make([]replica, l.nreps), ids: make([]int32, l.nreps)}
	n := int(row[l.nreps+4])
	w.net = make([]msg, n)
	in.mu.RLock()
	for i := 0; i < l.nreps; i++ {
		w.reps[i] = in.reps[row[i]]
		w.ids[i] = row[i]
	}
	h := in.hists[row[l.nreps]]
	for j := 0; j < n; j++ {
		w.net[j] = in.msgs[row[l.nreps+5+j]]
	}
	in.mu.RUnlock()
	w.leaders, w.committed = h.leaders, h.committed
	w.crashes, w.appends, w.dups, w.damages = int(row[l.nreps+1]), int(row[l.nreps+2]), int(row[l.nreps+3]&0xffff), int(row[l.nreps+3]>>16)
	return w
}

// fpSet maps fingerprints to world indexes: open addressing, linear
// probing, 20 bytes a slot. Not safe for concurrent writes; concurrent
// gets are safe while nobody puts.
type fpSet struct {
	keys []fingerprint // {0, 0}: empty (fingerprints have bit 0 of [1] set)
	vals []int32
	n    int
}

func newFPSet() *fpSet {
	return &fpSet{keys: make([]fingerprint, 1<<10), vals: make([]int32, 1<<10)}
}

func (s *fpSet) get(fp fingerprint) (int32, bool) {
	mask := uint64(len(s.keys) - 1)
	for i := fp[0] & mask; ; i = (i + 1) & mask {
		switch s.keys[i] {
		case fp:
			return s.vals[i], true
		case fingerprint{}:
			return 0, false
		}
	}
}

// put adds fp, which must be absent.
func (s *fpSet) put(fp fingerprint, v int32) {
	if (s.n+1)*10 > len(s.keys)*7 {
		old, oldv := s.keys, s.vals
		s.keys, s.vals = make([]fingerprint, 2*len(old)), make([]int32, 2*len(old))
		for i, k := range old {
			if k != (fingerprint{}) {
				s.insert(k, oldv[i])
			}
		}
	}
	s.insert(fp, v)
	s.n++
}

func (s *fpSet) insert(fp fingerprint, v int32) {
	mask := uint64(len(s.keys) - 1)
	i := fp[0] & mask
	for s.keys[i] != (fingerprint{}) {
		i = (i + 1) & mask
	}
	s.keys[i], s.vals[i] = fp, v
}
