package kraft

import "unsafe"

// Action values without a heap allocation each (docs/design.md D47).
//
// Putting a struct into an interface copies it to the heap: one allocation
// per SendFetchResponse, SendFetch, HighWatermarkChanged... on every step of
// a running quorum. Instead, the values of the frequent actions are written
// into typed pools (an arena) owned by the step's Buffer, and the Action
// handed to the host refers to the pooled value. The interface value is
// built from the type word Go uses for that action type and a pointer to
// the pooled value: exactly what the compiler builds when it boxes, minus
// the copy. A type switch, an assertion, reflect and fmt read it as any
// other Action. This file is the only one that uses package unsafe.
//
// The arena is safe because nothing writes a pooled value once its Action
// is returned, until the Buffer's next step reuses the pool (Buffer's
// documentation tells the host so); Step never reuses its pools. If the
// layout check below ever fails (a Go release that lays interfaces out
// differently), every action is boxed the ordinary way.

// ifaceWords is the layout of a non-empty interface value: the type word
// and the data word, which points at the value for every action type (none
// is pointer-shaped).
type ifaceWords struct {
	tab  unsafe.Pointer
	data unsafe.Pointer
}

func typeWord(a Action) unsafe.Pointer { return (*ifaceWords)(unsafe.Pointer(&a)).tab }

// refer returns the Action whose type word is tab and whose value is *p.
func refer(tab, p unsafe.Pointer) Action {
	var a Action
	w := (*ifaceWords)(unsafe.Pointer(&a))
	w.tab, w.data = tab, p
	return a
}

// The type words of the pooled action types.
var (
	tabPersist       = typeWord(Persist{})
	tabVoteRequest   = typeWord(SendVoteRequest{})
	tabVoteResponse  = typeWord(SendVoteResponse{})
	tabBeginEpoch    = typeWord(SendBeginQuorumEpoch{})
	tabBeginResponse = typeWord(SendBeginQuorumEpochResponse{})
	tabFetch         = typeWord(SendFetch{})
	tabFetchResponse = typeWord(SendFetchResponse{})
	tabHighWatermark = typeWord(HighWatermarkChanged{})
	tabResetTimer    = typeWord(ResetTimer{})
	tabRoleChanged   = typeWord(RoleChanged{})
	tabAppendFetched = typeWord(AppendFetched{})
)

// tabReceiveFetch is the type word of a ReceiveFetch held by an Event, or
// nil if receivedFetch cannot find the event in an Event (checkFetchIn).
var tabReceiveFetch = fetchTypeWord()

func fetchTypeWord() unsafe.Pointer {
	var e Event = ReceiveFetch{}
	tab := (*ifaceWords)(unsafe.Pointer(&e)).tab
	if !checkFetchIn(tab) {
		return nil
	}
	return tab
}

// receivedFetch returns the ReceiveFetch that e holds, where e holds it, or
// nil when e holds another event (always, if checkFetchIn failed). A
// leader's step on a voter's Fetch, the most frequent step, reaches its
// handler through it without the type switch and without copying the
// 80-byte event out of the interface (D340). The value is only read: an
// interface's value is immutable, and no handler writes through the
// pointer it is given.
func receivedFetch(e Event) *ReceiveFetch {
	w := (*ifaceWords)(unsafe.Pointer(&e))
	if w.tab != tabReceiveFetch || w.tab == nil {
		return nil
	}
	return (*ReceiveFetch)(w.data)
}

// checkFetchIn: an Event holding a ReceiveFetch has the type word tab and
// points at the event, and one holding another event has another type word.
func checkFetchIn(tab unsafe.Pointer) bool {
	v := ReceiveFetch{From: 2, CurrentLeaderEpoch: 7, FetchEpoch: 6, FetchOffset: 1 << 40}
	v.ClusterID.Valid = true
	var e Event = v
	w := (*ifaceWords)(unsafe.Pointer(&e))
	if tab == nil || w.tab != tab || w.data == nil || *(*ReceiveFetch)(w.data) != v {
		return false
	}
	var other Event = ReceiveFetchSnapshot{}
	return (*ifaceWords)(unsafe.Pointer(&other)).tab != tab
}

// referOK: refer builds Actions that read back as the values they refer to.
var referOK = checkRefer()

func checkRefer() bool {
	v := SendFetchResponse{To: 3, Error: ErrNone, Epoch: 7, LeaderID: 1, HighWatermark: 1 << 40}
	a := refer(tabFetchResponse, unsafe.Pointer(&v))
	got, ok := a.(SendFetchResponse)
	if !ok || got != v {
		return false
	}
	_, isFetch := a.(SendFetch)
	return !isFetch
}

// pool holds values of one action type. Its storage grows by whole new
// chunks, never by moving: earlier values stay where the Actions that refer
// to them point.
type pool[T any] struct {
	items []T
}

func (p *pool[T]) reset() { p.items = p.items[:0] }

// slot returns a fresh zero value in the pool, to be filled in place.
func (p *pool[T]) slot() *T {
	q := p.next()
	var zero T
	*q = zero
	return q
}

// next returns the pool's next slot as its last use left it, for a caller
// that writes every field of it (D340): the leader's Fetch answer, which
// zeroing and then filling made write twice.
func (p *pool[T]) next() *T {
	if len(p.items) == cap(p.items) {
		n := 2 * cap(p.items)
		if n < 4 {
			n = 4
		}
		p.items = make([]T, 0, n)
	}
	p.items = p.items[:len(p.items)+1]
	return &p.items[len(p.items)-1]
}

// arena holds the values of one step's frequent actions.
type arena struct {
	persist       pool[Persist]
	voteRequest   pool[SendVoteRequest]
	voteResponse  pool[SendVoteResponse]
	beginEpoch    pool[SendBeginQuorumEpoch]
	beginResponse pool[SendBeginQuorumEpochResponse]
	fetch         pool[SendFetch]
	fetchResponse pool[SendFetchResponse]
	highWatermark pool[HighWatermarkChanged]
	resetTimer    pool[ResetTimer]
	roleChanged   pool[RoleChanged]
	appendFetched pool[AppendFetched]
}

func (a *arena) reset() {
	a.persist.reset()
	a.voteRequest.reset()
	a.voteResponse.reset()
	a.beginEpoch.reset()
	a.beginResponse.reset()
	a.fetch.reset()
	a.fetchResponse.reset()
	a.highWatermark.reset()
	a.resetTimer.reset()
	a.roleChanged.reset()
	a.appendFetched.reset()
}

// Buffer is reusable storage for StepInto: the list of actions and the
// values of the frequent ones. Once a Buffer has grown to the size of the
// largest step it serves, stepping through it allocates nothing.
//
// The actions StepInto returns live in the Buffer: they stay valid until
// the next StepInto with the same Buffer, which reuses its storage. A host
// that keeps an action longer copies its value out (a type switch or an
// assertion copies) or steps with Step, whose actions are its own. The
// zero Buffer is ready to use; one Buffer serves one goroutine at a time.
type Buffer struct {
	acts  []Action
	arena arena
	// oneShot: Step's Buffer, on Step's stack. Its storage is allocated
	// on the step's first action, sized for the event (oneShotFor), and
	// never reused.
	oneShot uint8
}

// The one-shot storages: room for a steady step's actions and their
// values, in one small allocation each (a larger step grows the pools it
// fills). A leader's answer to a Fetch and a follower's handling of the
// response, a running quorum's two steps, get blocks of their own, a third
// of the general one smaller.
const (
	oneShotGeneral       uint8 = iota + 1
	oneShotFetch               // a ReceiveFetch: a SendFetchResponse, maybe a HighWatermarkChanged
	oneShotFetchResponse       // a ReceiveFetchResponse: a SendFetch, maybe a HighWatermarkChanged; or an AppendFetched
)

func oneShotFor(e Event) uint8 {
	switch e.(type) {
	case ReceiveFetch:
		return oneShotFetch
	case ReceiveFetchResponse:
		return oneShotFetchResponse
	}
	return oneShotGeneral
}

type generalBlock struct {
	acts     [3]Action
	fetch    [1]SendFetch
	response [1]SendFetchResponse
	hwm      [1]HighWatermarkChanged
}

type fetchBlock struct {
	acts     [3]Action
	response [1]SendFetchResponse
	hwm      [1]HighWatermarkChanged
}

type fetchResponseBlock struct {
	acts     [3]Action
	fetch    [1]SendFetch
	hwm      [1]HighWatermarkChanged
	appended [1]AppendFetched
}

// buffer is the step's Buffer, with storage for a one-shot Buffer. It is
// small enough to be inlined at every emitter (D340): a reused Buffer, or a
// one-shot one after its first action, costs a test; the allocation is out
// of line.
func (t *stepper) buffer() *Buffer {
	b := t.buf
	if b.oneShot != 0 && b.acts == nil {
		b.oneShotStorage()
	}
	return b
}

// oneShotStorage gives a one-shot Buffer its storage, sized for its event.
func (b *Buffer) oneShotStorage() {
	switch b.oneShot {
	case oneShotFetch:
		k := new(fetchBlock)
		b.acts = k.acts[:0]
		b.arena.fetchResponse.items = k.response[:0]
		b.arena.highWatermark.items = k.hwm[:0]
	case oneShotFetchResponse:
		k := new(fetchResponseBlock)
		b.acts = k.acts[:0]
		b.arena.fetch.items = k.fetch[:0]
		b.arena.highWatermark.items = k.hwm[:0]
		b.arena.appendFetched.items = k.appended[:0]
	default:
		k := new(generalBlock)
		b.acts = k.acts[:0]
		b.arena.fetch.items = k.fetch[:0]
		b.arena.fetchResponse.items = k.response[:0]
		b.arena.highWatermark.items = k.hwm[:0]
	}
}

// pooled returns an Action that refers to v, written into pool p of the
// step's Buffer.
func pooled[T Action](tab unsafe.Pointer, p *pool[T], v T) Action {
	q := p.next()
	*q = v
	return referTo(tab, q)
}

// referTo returns the Action that refers to the pooled value *p, whose type
// word is tab (or, if referOK is false, *p boxed the ordinary way).
func referTo[T Action](tab unsafe.Pointer, p *T) Action {
	if !referOK {
		return *p
	}
	return refer(tab, unsafe.Pointer(p))
}

// The emitters of the pooled action types.

func (t *stepper) emitPersist(v Persist) {
	t.emit(t.pooledPersist(v))
}

func (t *stepper) pooledPersist(v Persist) Action {
	return pooled(tabPersist, &t.buffer().arena.persist, v)
}

func (t *stepper) emitVoteRequest(v SendVoteRequest) {
	t.emit(pooled(tabVoteRequest, &t.buffer().arena.voteRequest, v))
}

func (t *stepper) emitVoteResponse(v SendVoteResponse) {
	t.emit(pooled(tabVoteResponse, &t.buffer().arena.voteResponse, v))
}

func (t *stepper) emitBeginEpoch(v SendBeginQuorumEpoch) {
	t.emit(pooled(tabBeginEpoch, &t.buffer().arena.beginEpoch, v))
}

func (t *stepper) emitBeginResponse(v SendBeginQuorumEpochResponse) {
	t.emit(pooled(tabBeginResponse, &t.buffer().arena.beginResponse, v))
}

func (t *stepper) emitHighWatermark(v HighWatermarkChanged) {
	t.emit(pooled(tabHighWatermark, &t.buffer().arena.highWatermark, v))
}

func (t *stepper) emitResetTimer(v ResetTimer) {
	t.emit(pooled(tabResetTimer, &t.buffer().arena.resetTimer, v))
}

func (t *stepper) emitRoleChanged(v RoleChanged) {
	t.emit(pooled(tabRoleChanged, &t.buffer().arena.roleChanged, v))
}
