package node

import (
	"log/slog"
	"sync"

	"github.com/kraftquorum/kraft"
)

// DefaultMemBuffer is the Inbox capacity of an endpoint made by
// MemNetwork.Endpoint.
const DefaultMemBuffer = 1024

// MemNetwork connects in-memory transports, for tests: each replica gets an
// endpoint (Endpoint), and a message sent to id goes into the Inbox of id's
// endpoint. Delivery never blocks the sender: a message for a full Inbox,
// an unknown or closed endpoint, a node that is down or across a cut link is
// dropped (and counted by Dropped and the sender's MemEndpoint.Dropped, and
// logged through SetLogf). A message is handed over as it is, by
// reference, as hashicorp/raft's InmemTransport hands over its *raft.Log
// values: the receiver gets the sender's records, chunk and event, which
// neither side modifies (Transport), and nothing is encoded or copied
// (docs/design.md D145). A message the codec would refuse (checkWire) is
// still dropped here, as TCPTransport drops it.
//
// The knobs Partition, Isolate, Heal, Down and Up change the network while
// it runs. All methods are safe for concurrent use.
type MemNetwork struct {
	mu        sync.Mutex
	endpoints map[kraft.NodeID]*MemEndpoint
	cut       map[memLink]bool
	isolated  map[kraft.NodeID]bool
	down      map[kraft.NodeID]bool
	delivered uint64
	dropped   uint64
	log       *slog.Logger
}

// memLink is an unordered pair of nodes: a < b.
type memLink struct{ a, b kraft.NodeID }

func newMemLink(a, b kraft.NodeID) memLink {
	if b < a {
		a, b = b, a
	}
	return memLink{a, b}
}

// NewMemNetwork returns an empty network with every link up.
func NewMemNetwork() *MemNetwork {
	return &MemNetwork{
		endpoints: make(map[kraft.NodeID]*MemEndpoint),
		cut:       make(map[memLink]bool),
		isolated:  make(map[kraft.NodeID]bool),
		down:      make(map[kraft.NodeID]bool),
	}
}

// Endpoint returns a new endpoint for id with an Inbox of DefaultMemBuffer
// messages. See EndpointBuffer.
func (n *MemNetwork) Endpoint(id kraft.NodeID) *MemEndpoint {
	return n.EndpointBuffer(id, DefaultMemBuffer)
}

// EndpointBuffer returns a new endpoint for id whose Inbox holds size
// messages (at least 1). Messages to id go to it from now on; an endpoint id
// had before is closed (a restarted replica gets a new transport).
func (n *MemNetwork) EndpointBuffer(id kraft.NodeID, size int) *MemEndpoint {
	if size < 1 {
		size = 1
	}
	e := &MemEndpoint{net: n, id: id, inbox: make(chan Message, size)}
	n.mu.Lock()
	old := n.endpoints[id]
	n.endpoints[id] = e
	if old != nil {
		old.closeLocked()
	}
	n.mu.Unlock()
	return e
}

// Partition cuts the link between a and b, both ways, until Heal.
func (n *MemNetwork) Partition(a, b kraft.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[newMemLink(a, b)] = true
}

// Isolate cuts every link of id, both ways, until Heal.
func (n *MemNetwork) Isolate(id kraft.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated[id] = true
}

// Heal undoes every Partition and Isolate. Nodes that are Down stay down.
func (n *MemNetwork) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = make(map[memLink]bool)
	n.isolated = make(map[kraft.NodeID]bool)
}

// Down takes id off the network until Up: what it sends and what is sent to
// it is dropped. Unlike Isolate, Heal does not undo it.
func (n *MemNetwork) Down(id kraft.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down[id] = true
}

// Up puts id back on the network after Down.
func (n *MemNetwork) Up(id kraft.NodeID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.down, id)
}

// SetLogf makes the network log the messages it drops through logf: every
// message the codec refuses, and the other drops at the 1st, 2nd, 4th,
// 8th... of the sending endpoint (see dropCounter).
func (n *MemNetwork) SetLogf(logf func(format string, args ...interface{})) {
	n.SetLogger(newLogger(nil, logf))
}

// SetLogger is SetLogf with a slog.Logger (EventMessageDropped records).
func (n *MemNetwork) SetLogger(l *slog.Logger) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.log = l
}

// Delivered returns how many messages went into an Inbox.
func (n *MemNetwork) Delivered() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.delivered
}

// Dropped returns how many messages were dropped.
func (n *MemNetwork) Dropped() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dropped
}

// connected reports whether a message from a can reach b. n.mu is held.
func (n *MemNetwork) connected(a, b kraft.NodeID) bool {
	return !n.down[a] && !n.down[b] && !n.isolated[a] && !n.isolated[b] && !n.cut[newMemLink(a, b)]
}

// send delivers m from endpoint from, as it is (D145).
func (n *MemNetwork) send(from *MemEndpoint, m Message) {
	err := checkWire(m)
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		n.dropLocked(from, true, "message %d -> %d not encoded: %v", m.From, m.To, err)
		return
	}
	to := n.endpoints[m.To]
	if from.closed || to == nil || to.closed || !n.connected(from.id, m.To) {
		n.dropLocked(from, false, "%d -> %d unreachable", m.From, m.To)
		return
	}
	select {
	case to.inbox <- m:
		n.delivered++
	default:
		n.dropLocked(from, false, "%d -> %d: inbox full", m.From, m.To)
	}
}

// dropLocked counts a dropped message and logs it; n.mu is held.
func (n *MemNetwork) dropLocked(from *MemEndpoint, always bool, format string, args ...interface{}) {
	n.dropped++
	from.drops.log = n.log
	from.drops.drop(always, "mem transport", format, args...)
}

// MemEndpoint is one replica's Transport on a MemNetwork.
type MemEndpoint struct {
	drops dropCounter // first: its counter is 64-bit aligned
	net   *MemNetwork
	id    kraft.NodeID
	inbox chan Message
	// closed is guarded by net.mu.
	closed bool
}

var _ Transport = (*MemEndpoint)(nil)

// ID returns the id the endpoint was made for.
func (e *MemEndpoint) ID() kraft.NodeID { return e.id }

// Send delivers m to m.To's endpoint, or drops it. It never blocks. The
// receiver shares m's byte slices and pointers with the sender (D145).
func (e *MemEndpoint) Send(m Message) { e.net.send(e, m) }

// Dropped returns how many of the messages this endpoint sent were
// dropped (not encodable, unreachable, or the receiver's Inbox full).
func (e *MemEndpoint) Dropped() uint64 { return e.drops.count() }

// Inbox delivers the messages sent to this endpoint.
func (e *MemEndpoint) Inbox() <-chan Message { return e.inbox }

// Close detaches the endpoint from the network and closes Inbox after the
// messages already in it. Closing twice does nothing.
func (e *MemEndpoint) Close() error {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	if e.net.endpoints[e.id] == e {
		delete(e.net.endpoints, e.id)
	}
	e.closeLocked()
	return nil
}

// closeLocked closes the endpoint; net.mu is held.
func (e *MemEndpoint) closeLocked() {
	if !e.closed {
		e.closed = true
		close(e.inbox)
	}
}
