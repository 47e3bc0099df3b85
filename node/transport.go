package node

import (
	"fmt"
	"sync/atomic"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Message is one RPC between two runtimes: a request or its response,
// carrying the event the receiver steps (kraft.Deliver made it from the
// sender's action). A Fetch response also carries the records the leader
// attached, and a FetchSnapshot response the snapshot bytes; a Fetch
// request carries the follower's high watermark, so the leader can park it
// until it has news (long poll).
type Message struct {
	From, To kraft.NodeID
	// Corr is the request's correlation id; a response carries its
	// request's. The sender picks it; it is unique per sender.
	Corr     uint64
	Response bool
	Event    kraft.Event
	// Records are a Fetch response's records, from the request's fetch
	// offset on.
	Records []storage.Entry
	// HighWatermark is a Fetch request's sender's high watermark.
	HighWatermark int64
	// Chunk is a FetchSnapshot response's bytes of the snapshot, from the
	// response's Position on (only with a kraft.ReceiveFetchSnapshotResponse).
	Chunk []byte
	// APIVersions marks an ApiVersions request (with no Event); its
	// response carries a kraft.ReceiveAPIVersionsResponse.
	APIVersions bool
	// Endpoint is the endpoint of the voter an AddRaftVoter request
	// (kraft.ReceiveAddVoter) adds: the requester's own, for auto-join.
	Endpoint string
}

// Transport carries Messages between the replicas of a cluster. A runtime
// calls Send from its one loop goroutine and reads Inbox there too. Send
// must not modify the message's byte slices: a Fetch response's records
// may be the log's own memory (storage.SharedReader); the transports of
// this package encode the message before Send returns.
//
// Send must not block for long: a message that cannot be sent now (no
// connection, a full buffer) is dropped, and the runtime's request timeout
// and retries make up for it. Responses go back the way their request came
// (Kafka answers on the request's connection). Delivery may lose, delay or
// reorder messages, never corrupt them.
type Transport interface {
	// Send sends m to m.To.
	Send(m Message)
	// Inbox delivers the messages sent to this replica.
	Inbox() <-chan Message
	// Close stops the transport; Inbox is closed after it.
	Close() error
}

// DropCounter is a Transport that counts the messages it dropped
// (MemEndpoint, TCPTransport); Node.Status reports the count.
type DropCounter interface {
	Dropped() uint64
}

// dropCounter counts the messages a transport drops and logs them: every
// message that cannot be encoded (a sender's bug, which retries do not
// cure), and the other drops (an unreachable peer, a full queue, which the
// runtime's retries make up for) at the 1st, 2nd, 4th, 8th... drop, so an
// outage logs a line per doubling of the count rather than one per
// message. Keep it first in a struct: its counter is 64-bit.
type dropCounter struct {
	n    uint64 // atomic
	logf func(format string, args ...interface{})
}

// drop counts one message and maybe logs it.
func (d *dropCounter) drop(always bool, who, format string, args ...interface{}) {
	n := atomic.AddUint64(&d.n, 1)
	if d.logf != nil && (always || n&(n-1) == 0) {
		d.logf("%s: dropped a message (%d so far): %s", who, n, fmt.Sprintf(format, args...))
	}
}

func (d *dropCounter) count() uint64 { return atomic.LoadUint64(&d.n) }
