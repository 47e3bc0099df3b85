package node

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
)

// Message is one RPC between two runtimes (replica.Message): a request or
// its response, with the records or snapshot bytes it carries.
type Message = replica.Message

// Transport carries Messages between the replicas of a cluster. A runtime
// calls Send from its one loop goroutine and reads Inbox there too. Send
// must not modify the message's byte slices: a Fetch response's records
// may be the log's own memory (storage.SharedReader), which the log never
// changes in place. TCPTransport encodes the message before Send returns;
// MemEndpoint hands it to the receiver as it is (docs/design.md D145), so
// a receiver must not modify a message's byte slices either.
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

// PeerDownReporter is a Transport that learns when a peer's process is
// gone while its host is up (TCPTransport, kafkawire.Transport: a
// connection to it is refused, right after one ended or when one is to be
// made). The runtime reads PeerDowns on its loop and tells the
// replica (replica.Replica.PeerDown): a follower whose leader died then
// campaigns at once rather than after the fetch timeout (docs/design.md
// D101).
type PeerDownReporter interface {
	PeerDowns() <-chan kraft.NodeID
}

// DropCounter is a Transport that counts the messages it dropped
// (MemEndpoint, TCPTransport); Node.Status reports the count.
type DropCounter interface {
	Dropped() uint64
}

// dropCounter counts the messages a transport drops and logs them
// (EventMessageDropped): every message that cannot be encoded (a sender's
// bug, which retries do not cure) at Warn, and the other drops (an
// unreachable peer, a full queue, which the runtime's retries make up for)
// at Info at the 1st, 2nd, 4th, 8th... drop, so an outage logs a line per
// doubling of the count rather than one per message. Keep it first in a
// struct: its counter is 64-bit.
type dropCounter struct {
	n   uint64 // atomic
	log *slog.Logger
}

// drop counts one message and maybe logs it.
func (d *dropCounter) drop(always bool, who, format string, args ...interface{}) {
	n := atomic.AddUint64(&d.n, 1)
	if d.log == nil || !(always || n&(n-1) == 0) {
		return
	}
	logDrop(d.log, n, always, who, fmt.Sprintf(format, args...))
}

// logDrop logs the n-th dropped message of a transport (who), at Warn if
// it could not be encoded (always), at Info otherwise.
func logDrop(log *slog.Logger, n uint64, always bool, who, msg string) {
	level, advice := slog.LevelInfo, adviceDropped
	if always {
		level, advice = slog.LevelWarn, adviceEncode
	}
	logEvent(log, level, EventMessageDropped, advice,
		fmt.Sprintf("%s: dropped a message (%d so far): %s", who, n, msg), "dropped", n)
}

func (d *dropCounter) count() uint64 { return atomic.LoadUint64(&d.n) }
