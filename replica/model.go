package replica

//go:generate go run ../internal/cmd/gencodec -canonical

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Model checking. An explorer of every interleaving (package sim/explore)
// runs replicas through a Model: it fires any armed deadline whatever its
// time (Deadlines, Expire), copies a replica to branch (Clone), and
// deduplicates the worlds it reaches by a canonical encoding in which
// correlation ids are renamed after what they name (Canonicalize,
// AppendCanonicalUntimed). A host never needs them, so they are not
// methods of Replica: its method set is what a host uses
// (docs/design.md D290).

// Model is a model checker's view of a Replica (ModelOf): its hooks act on
// the replica they view. A zero Model views no replica; only
// AppendCanonicalMessage, which reads none, may be called on it.
type Model struct {
	r *Replica
}

// ModelOf is the model checker's view of r (docs/design.md D290).
func ModelOf(r *Replica) Model { return Model{r: r} }

// DeadlineKind is what a deadline does when it fires.
type DeadlineKind uint8

// The deadlines, in the order Tick runs those due at the same time.
const (
	// DeadlineTimer: a kraft timer (Deadline.Timer) times out.
	DeadlineTimer DeadlineKind = iota + 1
	// DeadlineRequest: a request had no answer within the request timeout.
	DeadlineRequest
	// DeadlineRetry: a request goes again after the retry backoff.
	DeadlineRetry
	// DeadlineParked: a parked Fetch's wait is up.
	DeadlineParked
	// DeadlineClean: a snapshot download's hold on the log start lapses.
	DeadlineClean
	// DeadlineTransfer: a leadership transfer's time is up (transfer.go).
	DeadlineTransfer
)

// Deadline is one armed deadline of a Replica: its kind, the kraft timer
// or the index of the request, retry or parked Fetch (in their order at
// the time Model.Deadlines listed it), and its time.
type Deadline struct {
	Kind  DeadlineKind
	Timer kraft.Timer
	Index int
	At    time.Duration
}

func (d Deadline) String() string {
	switch d.Kind {
	case DeadlineTimer:
		return fmt.Sprintf("%v timer", d.Timer)
	case DeadlineRequest:
		return fmt.Sprintf("request #%d timeout", d.Index)
	case DeadlineRetry:
		return fmt.Sprintf("retry #%d", d.Index)
	case DeadlineParked:
		return fmt.Sprintf("parked Fetch #%d wait", d.Index)
	case DeadlineClean:
		return "log cleaning"
	case DeadlineTransfer:
		return "leadership transfer"
	}
	return "deadline?"
}

// Deadlines lists the armed deadlines, in the order Tick runs those due at
// the same time.
func (m Model) Deadlines() []Deadline {
	var out []Deadline
	m.r.eachDeadline(func(d Deadline) { out = append(out, d) })
	return out
}

// eachDeadline calls f with each armed deadline, in Deadlines' order; none
// once the replica stopped. Model.Deadlines, NextDeadline and Tick list them
// from here alone.
func (r *Replica) eachDeadline(f func(Deadline)) {
	if r.err != nil {
		return
	}
	for t, at := range r.timers {
		if at != 0 {
			f(Deadline{Kind: DeadlineTimer, Timer: kraft.Timer(t), At: at})
		}
	}
	for i, q := range r.inflight {
		f(Deadline{Kind: DeadlineRequest, Index: i, At: q.deadline})
	}
	for i, q := range r.retries {
		f(Deadline{Kind: DeadlineRetry, Index: i, At: q.at})
	}
	for i, p := range r.parked {
		f(Deadline{Kind: DeadlineParked, Index: i, At: p.deadline})
	}
	if r.snap.cleanAt != 0 {
		f(Deadline{Kind: DeadlineClean, At: r.snap.cleanAt})
	}
	if r.xfer.active {
		f(Deadline{Kind: DeadlineTransfer, At: r.xfer.deadline})
	}
}

// Expire runs deadline d (one Deadlines listed, with no input since) at
// time now, whether or not its time has come: a model checker's untimed
// firing. Tick runs the due ones the same way.
func (m Model) Expire(now time.Duration, d Deadline) {
	r := m.r
	if !r.input(now) {
		return
	}
	r.expire(d)
	r.drain()
	r.settle()
}

func (r *Replica) expire(d Deadline) {
	switch d.Kind {
	case DeadlineTimer:
		if r.timers[d.Timer] != 0 {
			r.fire(d.Timer)
		}
	case DeadlineRequest:
		if d.Index < len(r.inflight) {
			q := r.inflight[d.Index]
			r.inflight = append(r.inflight[:d.Index:d.Index], r.inflight[d.Index+1:]...)
			r.timedOut(q)
		}
	case DeadlineRetry:
		if d.Index < len(r.retries) {
			q := r.retries[d.Index]
			r.retries = append(r.retries[:d.Index:d.Index], r.retries[d.Index+1:]...)
			r.runRetry(q)
		}
	case DeadlineParked:
		if d.Index < len(r.parked) {
			p := r.parked[d.Index]
			r.parked = append(r.parked[:d.Index:d.Index], r.parked[d.Index+1:]...)
			if r.planted(bugParkForever) {
				return
			}
			r.queue = append(r.queue, inbound{msg: &p.msg, noPark: true})
			r.longPolls++
		}
	case DeadlineClean:
		r.snap.cleanAt = 0
		r.clean()
	case DeadlineTransfer:
		r.transferExpired()
	}
}

// Clone returns a copy of the replica, between inputs, that uses the
// given storage (holding what the original's holds) and observer; the
// copy and the original then go their own ways. A download in progress
// is not copied (a model checker that clones has no snapshots).
func (m Model) Clone(log storage.Log, records RecordStore, snaps Snapshots, obs Observer) *Replica {
	r := m.r
	c := *r
	c.cfg.Log, c.cfg.Records, c.cfg.Snapshots, c.cfg.Observer = log, records, snaps, obs
	c.buf = kraft.Buffer{}
	c.out, c.spare, c.queue = nil, nil, nil
	c.inflight = make([]*request, len(r.inflight))
	for i, q := range r.inflight {
		cp := *q
		c.inflight[i] = &cp
	}
	c.retries = append([]retry(nil), r.retries...)
	if r.lastFetch != nil {
		cp := *r.lastFetch
		c.lastFetch = &cp
	}
	c.parked = append([]parkedFetch(nil), r.parked...)
	c.snap.partial = nil
	c.snap.served = copyMap(r.snap.served)
	c.voters.vsets = append([]voterSetAt(nil), r.voters.vsets...)
	c.voters.peerAddrs = copyMap(r.voters.peerAddrs)
	c.voters.changeEndpoints = copyMap(r.voters.changeEndpoints)
	c.voters.changeListeners = copyMap(r.voters.changeListeners)
	c.reads = r.reads.clone()
	return &c
}

// copyMap copies m, keeping an empty map shared: the layer never writes
// to one (it makes a new one first, see put).
func copyMap[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return m
	}
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// put sets m[k] = v, making m first when it is empty (Clone shares empty
// maps).
func put[K comparable, V any](m *map[K]V, k K, v V) {
	if len(*m) == 0 {
		*m = map[K]V{}
	}
	(*m)[k] = v
}

// Correlations are the correlation ids the replica can still match a
// response with: those of its requests in flight and of its latest Fetch.
// A response with any other id is dropped, now and later (ids are never
// issued twice).
func (m Model) Correlations() []uint64 {
	r := m.r
	var out []uint64
	for _, q := range r.inflight {
		out = append(out, q.corr)
	}
	if r.lastFetch != nil {
		out = append(out, r.lastFetch.Corr)
	}
	return out
}

// Canonicalize renames the replica's correlation ids after what they name
// and returns the renaming: the requests in flight, sorted by kind and
// destination, get 1, 2, ...; the latest Fetch, when no longer in flight,
// the next one; any other id (in the retries) 0, which matches nothing.
// The next id issued is past them all. Only equality of ids matters to
// the replica, so the renamed replica behaves as the original does when
// the host renames the ids of the messages in flight the same way (0 for
// ids missing from the renaming, which match nothing either), including
// the Fetches other replicas hold parked (RenameParked). It also sorts
// the requests in flight and the retries, whose order matters only to
// deadlines due at the same time.
func (m Model) Canonicalize() map[uint64]uint64 {
	r := m.r
	sort.SliceStable(r.inflight, func(i, j int) bool {
		a, b := r.inflight[i], r.inflight[j]
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		return a.msg.To < b.msg.To
	})
	names := make(map[uint64]uint64, len(r.inflight)+1)
	next := uint64(0)
	for _, q := range r.inflight {
		next++
		names[q.corr] = next
	}
	if r.lastFetch != nil {
		if _, ok := names[r.lastFetch.Corr]; !ok {
			next++
			names[r.lastFetch.Corr] = next
		}
	}
	for _, q := range r.inflight {
		q.corr = names[q.corr]
		q.msg.Corr = q.corr
	}
	if r.lastFetch != nil {
		r.lastFetch.Corr = names[r.lastFetch.Corr]
	}
	for i := range r.retries {
		q := &r.retries[i]
		q.corr = names[q.corr]
		q.msg.Corr = names[q.msg.Corr]
	}
	sort.SliceStable(r.retries, func(i, j int) bool {
		a, b := r.retries[i], r.retries[j]
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		if a.msg.To != b.msg.To {
			return a.msg.To < b.msg.To
		}
		return a.corr < b.corr
	})
	r.corr = next
	return names
}

// ParkedFrom lists the correlation ids of the Fetches of replica from
// parked here.
func (m Model) ParkedFrom(from kraft.NodeID) []uint64 {
	r := m.r
	var out []uint64
	for _, p := range r.parked {
		if p.msg.From == from {
			out = append(out, p.msg.Corr)
		}
	}
	return out
}

// RenameParked renames the correlation ids of the Fetches of replica from
// parked here with from's renaming (Canonicalize; 0 for an id it does not
// name).
func (m Model) RenameParked(from kraft.NodeID, names map[uint64]uint64) {
	r := m.r
	for i := range r.parked {
		if m := &r.parked[i].msg; m.From == from {
			m.Corr = names[m.Corr]
		}
	}
}

// AppendCanonicalUntimed appends the replica's canonical encoding without
// its times: its State's (kraft.State.AppendCanonicalUntimed), which
// deadlines are armed but not when, the requests in flight, the retries,
// the latest Fetch and the parked Fetches with their messages, and the
// rest of the layer's state. Two replicas between inputs with equal
// encodings, given the same inputs (deadlines fired by Expire), give the
// same outputs, once canonicalized (Canonicalize).
func (m Model) AppendCanonicalUntimed(dst []byte) []byte {
	r := m.r
	dst = r.st.AppendCanonicalUntimed(dst)
	var armed uint64
	for t, at := range r.timers {
		if at != 0 {
			armed |= 1 << uint(t)
		}
	}
	dst = putUvarint(dst, armed)
	dst = putUvarint(dst, uint64(len(r.inflight)))
	for _, q := range r.inflight {
		dst = append(dst, byte(q.kind))
		dst = putUvarint(dst, q.corr)
		dst = m.AppendCanonicalMessage(dst, q.msg)
		if q.kind == kindRead {
			dst = putVarint(dst, int64(q.round)-int64(r.reads.round))
		}
	}
	dst = putUvarint(dst, uint64(len(r.retries)))
	for _, q := range r.retries {
		dst = append(dst, byte(q.kind))
		dst = putUvarint(dst, q.corr)
		dst = m.AppendCanonicalMessage(dst, q.msg)
	}
	if r.lastFetch != nil {
		dst = append(dst, 1)
		dst = m.AppendCanonicalMessage(dst, *r.lastFetch)
	} else {
		dst = append(dst, 0)
	}
	dst = putUvarint(dst, uint64(len(r.parked)))
	for _, p := range r.parked {
		dst = m.AppendCanonicalMessage(dst, p.msg)
	}
	// bootNext picks among the voters or the bootstrap servers in turn:
	// only its remainder matters.
	n := 1
	for _, k := range []int{len(r.st.Voters()), len(r.cfg.BootstrapServers)} {
		if k > 0 {
			n *= k
		}
	}
	dst = putUvarint(dst, uint64(r.bootNext%n))
	dst = putVarint(dst, r.leaderHWM)
	dst = putVarint(dst, r.hwm)
	flags := byte(0)
	// slowFetch and request.short change how long a request waits, not
	// what the replica does when the deadline fires: they are times.
	leaderDown := r.leaderDown == int64(r.st.Epoch())+1
	for i, f := range []bool{r.syncing, r.holdTimers, r.err != nil, r.snap.cleanAt != 0, r.snap.partial != nil, leaderDown} {
		if f {
			flags |= 1 << uint(i)
		}
	}
	dst = append(dst, flags)
	dst = putUvarint(dst, uint64(len(r.snap.served)))
	dst = putUvarint(dst, uint64(len(r.voters.vsets)))
	for _, s := range r.voters.vsets {
		dst = putVarint(dst, s.offset)
		dst = append(dst, EncodeVoters(s.voters)...)
	}
	return r.reads.appendCanonical(dst)
}

// AppendCanonicalMessage appends a message's canonical encoding (a zero
// Model will do: it reads no replica).
func (Model) AppendCanonicalMessage(dst []byte, m Message) []byte {
	dst = putVarint(dst, int64(m.From))
	dst = putVarint(dst, int64(m.To))
	dst = putUvarint(dst, m.Corr)
	flags := byte(0)
	if m.Response {
		flags |= 1
	}
	if m.APIVersions {
		flags |= 2
	}
	dst = append(dst, flags)
	dst = putVarint(dst, m.HighWatermark)
	dst = putUvarint(dst, uint64(len(m.Records)))
	for _, e := range m.Records {
		dst = putVarint(dst, e.Offset)
		dst = putVarint(dst, int64(e.Epoch))
		dst = putUvarint(dst, uint64(len(e.Data)))
		dst = append(dst, e.Data...)
	}
	dst = putUvarint(dst, uint64(len(m.Chunk)))
	dst = append(dst, m.Chunk...)
	dst = putUvarint(dst, uint64(len(m.Endpoint)))
	dst = append(dst, m.Endpoint...)
	return appendCanonicalEvent(dst, m.Event)
}

// appendCanonicalEvent encodes an event: a message event field by field
// as canonical_gen.go has it, generated from the catalogue of messages
// (docs/design.md D320); any other as its type and JSON (deterministic,
// pointers followed).
func appendCanonicalEvent(dst []byte, e kraft.Event) []byte {
	if e == nil {
		return append(dst, 0)
	}
	if out, ok := appendCanonicalMessageEvent(dst, e); ok {
		return out
	}
	dst = append(dst, 255)
	dst = append(dst, fmt.Sprintf("%T", e)...)
	b, err := json.Marshal(e)
	if err != nil {
		b = []byte(err.Error())
	}
	dst = putUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func putUvarint(dst []byte, x uint64) []byte {
	var b [binary.MaxVarintLen64]byte
	return append(dst, b[:binary.PutUvarint(b[:], x)]...)
}

func putVarint(dst []byte, x int64) []byte {
	var b [binary.MaxVarintLen64]byte
	return append(dst, b[:binary.PutVarint(b[:], x)]...)
}

func putBool(dst []byte, x bool) []byte {
	if x {
		return append(dst, 1)
	}
	return append(dst, 0)
}
