package node

import (
	"sync"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// DefaultMemBuffer is the Inbox capacity of an endpoint made by
// MemNetwork.Endpoint.
const DefaultMemBuffer = 1024

// MemNetwork connects in-memory transports, for tests: each replica gets an
// endpoint (Endpoint), and a message sent to id goes into the Inbox of id's
// endpoint. Delivery never blocks the sender: a message for a full Inbox,
// an unknown or closed endpoint, a node that is down or across a cut link is
// dropped (and counted by Dropped). Messages are copied, so sender and
// receiver share no memory.
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

// send delivers a copy of m from endpoint from.
func (n *MemNetwork) send(from *MemEndpoint, m Message) {
	n.mu.Lock()
	defer n.mu.Unlock()
	to := n.endpoints[m.To]
	if from.closed || to == nil || to.closed || !n.connected(from.id, m.To) {
		n.dropped++
		return
	}
	select {
	case to.inbox <- cloneMessage(m):
		n.delivered++
	default:
		n.dropped++
	}
}

// MemEndpoint is one replica's Transport on a MemNetwork.
type MemEndpoint struct {
	net   *MemNetwork
	id    kraft.NodeID
	inbox chan Message
	// closed is guarded by net.mu.
	closed bool
}

var _ Transport = (*MemEndpoint)(nil)

// ID returns the id the endpoint was made for.
func (e *MemEndpoint) ID() kraft.NodeID { return e.id }

// Send delivers a copy of m to m.To's endpoint, or drops it. It never
// blocks.
func (e *MemEndpoint) Send(m Message) { e.net.send(e, m) }

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

// cloneMessage returns a deep copy of m: its records and the pointers in
// its event are copied.
func cloneMessage(m Message) Message {
	if m.Records != nil {
		recs := make([]storage.Entry, len(m.Records))
		for i, r := range m.Records {
			recs[i] = r
			if r.Data != nil {
				recs[i].Data = append([]byte{}, r.Data...)
			}
		}
		m.Records = recs
	}
	if m.Chunk != nil {
		m.Chunk = append([]byte{}, m.Chunk...)
	}
	if e, ok := m.Event.(kraft.ReceiveFetchResponse); ok {
		if e.Diverging != nil {
			d := *e.Diverging
			e.Diverging = &d
		}
		if e.Snapshot != nil {
			s := *e.Snapshot
			e.Snapshot = &s
		}
		m.Event = e
	}
	if e, ok := m.Event.(kraft.ReceiveAPIVersionsResponse); ok && e.KRaftVersions != nil {
		r := *e.KRaftVersions
		e.KRaftVersions = &r
		m.Event = e
	}
	return m
}
