package node

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/stream"
)

// Defaults of TCPConfig.
const (
	DefaultDialTimeout         = time.Second
	DefaultReconnectBackoff    = 100 * time.Millisecond
	DefaultMaxReconnectBackoff = 2 * time.Second
	DefaultWriteTimeout        = 10 * time.Second
	DefaultTCPQueueSize        = 1024
)

// TCPConfig configures a TCPTransport.
type TCPConfig struct {
	// ID is the local replica's id, sent to the peers it dials.
	ID kraft.NodeID
	// Listen is the address to accept connections on, for example
	// "127.0.0.1:9093" or "127.0.0.1:0" for any free port (see Addr).
	Listen string
	// Peers are the addresses of the other replicas, for requests. A
	// replica that only answers needs none: responses go back on the
	// request's connection.
	Peers map[kraft.NodeID]string
	// DialTimeout bounds one connection attempt (default 1s). It also
	// bounds the wait for a new connection's hello.
	DialTimeout time.Duration
	// ReconnectBackoff is the wait after a failed connection attempt
	// before the next one (default 100ms); it doubles with each failure
	// in a row up to MaxReconnectBackoff (default 2s).
	ReconnectBackoff    time.Duration
	MaxReconnectBackoff time.Duration
	// WriteTimeout bounds one write to a connection (default 10s); a peer
	// that does not read for that long loses its connection.
	WriteTimeout time.Duration
	// QueueSize is how many messages wait for each peer and for each
	// incoming connection's responses (default 1024); InboxSize is the
	// capacity of Inbox (default QueueSize). Beyond them, messages are
	// dropped.
	QueueSize int
	InboxSize int
	// Logger, if set, receives the transport's log records: the messages
	// it drops (EventMessageDropped: each one that cannot be encoded, and
	// the others, no address or connection, a full queue, a write error,
	// at the 1st, 2nd, 4th, 8th... drop; Dropped counts them all), the
	// peers it cannot connect to (EventPeerUnreachable, with "dns" true
	// when the name does not resolve) and connects to again
	// (EventPeerConnected), and connections that do not speak kraft's
	// protocol (EventGarbageConnection). Repeats are rate-limited.
	Logger *slog.Logger
	// Logf, if set and Logger is nil, receives those records as lines
	// (see node.Config.Logf).
	Logf func(format string, args ...interface{})
	// NoPeerDown turns off the reports of PeerDowns: a peer's process is
	// then found gone by the fetch timeout alone.
	NoPeerDown bool
}

func (c TCPConfig) withDefaults() (TCPConfig, error) {
	if c.DialTimeout < 0 || c.ReconnectBackoff < 0 || c.MaxReconnectBackoff < 0 ||
		c.WriteTimeout < 0 || c.QueueSize < 0 || c.InboxSize < 0 {
		return c, errors.New("node: TCPConfig: negative timeout, backoff or size")
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.ReconnectBackoff == 0 {
		c.ReconnectBackoff = DefaultReconnectBackoff
	}
	if c.MaxReconnectBackoff == 0 {
		c.MaxReconnectBackoff = DefaultMaxReconnectBackoff
	}
	if c.MaxReconnectBackoff < c.ReconnectBackoff {
		c.MaxReconnectBackoff = c.ReconnectBackoff
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultTCPQueueSize
	}
	if c.InboxSize == 0 {
		c.InboxSize = c.QueueSize
	}
	return c, nil
}

// The hello is the first frame on a connection, from the dialer: a magic
// "KRFT", the wire version and the dialer's id (i32).
const (
	tcpHelloMagic = "KRFT"
	tcpHelloSize  = len(tcpHelloMagic) + 1 + 4
)

// TCPTransport is a Transport over TCP, with Kafka's connection pattern:
// a replica sends its requests to a peer on a connection it dialed to that
// peer, and the peer writes each response back on the connection its
// request arrived on. So each pair of replicas that both send requests has
// two connections, one dialed by each.
//
// Connections to peers are dialed at the first request to them and dialed
// again, with exponential backoff, after an error. Send never waits for
// the network: it encodes the message and queues it for the connection's
// writer goroutine, dropping it when the queue is full, when the peer has
// no known address, when its connection cannot be made, and, for a
// response, when the connection its request came on is gone. A message
// sent to the local id is dropped.
//
// Every message read from any connection goes to Inbox; while Inbox is
// full, the connection's reader waits, and TCP flow control holds up the
// sender, whose queue then drops. The frames are those of WriteFrame; the
// first frame a dialer sends is a hello with its id. Close stops every
// goroutine of the transport before it returns.
//
// The connections, queues, backoff and peer-down reports are those of the
// connection layer package kafkawire's transport shares
// (internal/stream, docs/design.md D220); TCPTransport adds kraft's
// frames, its hello and its logs.
type TCPTransport struct {
	l     *stream.Layer[[]byte]
	cfg   TCPConfig
	inbox chan Message
	once  sync.Once

	log    *slog.Logger
	limits limiter
	start  time.Time

	mu sync.Mutex
	// routes maps a requester's id to the accepted connection its latest
	// request arrived on: where its responses go.
	routes map[kraft.NodeID]*stream.Conn
}

var _ Transport = (*TCPTransport)(nil)

// tcpWire is TCPTransport as the connection layer's stream.Wire.
type tcpWire TCPTransport

// NewTCPTransport listens on cfg.Listen and returns the transport.
func NewTCPTransport(cfg TCPConfig) (*TCPTransport, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l, err := stream.Listen[[]byte](stream.Config{
		Listen: cfg.Listen, Peers: cfg.Peers,
		DialTimeout: cfg.DialTimeout, ReconnectBackoff: cfg.ReconnectBackoff, MaxReconnectBackoff: cfg.MaxReconnectBackoff,
		WriteTimeout: cfg.WriteTimeout, QueueSize: cfg.QueueSize, NoPeerDown: cfg.NoPeerDown,
	})
	if err != nil {
		return nil, fmt.Errorf("node: listen: %w", err)
	}
	t := &TCPTransport{
		l:      l,
		cfg:    cfg,
		inbox:  make(chan Message, cfg.InboxSize),
		log:    newLogger(cfg.Logger, cfg.Logf).With("node", int32(cfg.ID)),
		limits: limiter{every: DefaultLogEvery},
		start:  time.Now(),
		routes: make(map[kraft.NodeID]*stream.Conn),
	}
	l.Start((*tcpWire)(t))
	return t, nil
}

// Addr returns the address the transport listens on.
func (t *TCPTransport) Addr() net.Addr { return t.l.Addr() }

// SetPeer sets the address of peer id; an empty addr forgets the peer. A
// connection to the old address is closed, and the next request to id
// dials the new one; the address a peer already has changes nothing (the
// runtime sets the addresses of a dynamic voter set as its records come).
func (t *TCPTransport) SetPeer(id kraft.NodeID, addr string) { t.l.SetPeer(id, addr) }

// Dropped returns how many messages the transport dropped: sent ones it
// could not send and received ones it could not decode.
func (t *TCPTransport) Dropped() uint64 { return t.l.Dropped() }

// Send queues m for m.To: a request for the connection dialed to m.To, a
// response for the connection m.To's latest request came on. It never
// blocks; a message it cannot queue is dropped.
func (t *TCPTransport) Send(m Message) {
	if m.To == t.cfg.ID {
		t.l.Drop(false, "a message to the local id %d", m.To)
		return
	}
	frame, err := appendFrame(nil, m)
	if err != nil {
		t.l.Drop(true, "message %d -> %d not encoded: %v", m.From, m.To, err)
		return
	}
	if !m.Response {
		switch err := t.l.Send(m.To, frame); err {
		case nil:
		case stream.ErrQueueFull:
			t.l.Drop(false, "the queue for %d is full", m.To)
		default:
			t.l.Drop(false, "no connection or address for %d (response false): %v", m.To, err)
		}
		return
	}
	t.mu.Lock()
	c := t.routes[m.To]
	t.mu.Unlock()
	if c == nil {
		t.l.Drop(false, "no connection or address for %d (response true)", m.To)
		return
	}
	if err := c.Queue(frame); err != nil {
		t.l.Drop(false, "the response to %d: %v", m.To, err)
	}
}

// Inbox delivers the messages that arrived, requests and responses.
func (t *TCPTransport) Inbox() <-chan Message { return t.inbox }

// Close closes the listener and every connection, waits for the
// transport's goroutines to end and closes Inbox. Messages still queued are
// dropped. Closing twice does nothing.
func (t *TCPTransport) Close() error {
	var err error
	t.once.Do(func() {
		err = t.l.Close()
		close(t.inbox)
	})
	return err
}

// PeerDowns delivers the ids of peers whose process is gone while their
// host is up (docs/design.md D101): a connection to the peer's address is
// refused, so no process listens there. The transport tries one as soon
// as a connection it dialed to the peer ends (the peer closed or reset
// it, or a write failed), and reports a refusal of its usual connection
// attempts too. The runtime hands the reports to
// replica.Replica.PeerDown. A peer that closed a connection but accepts
// new ones is not reported, nor is a machine that is gone or a network
// that drops everything: they refuse nothing, and the fetch timeout finds
// them. Reports that the runtime does not read in time are dropped (a
// buffer of 16).
func (t *TCPTransport) PeerDowns() <-chan kraft.NodeID { return t.l.PeerDowns() }

// PeerGone dials addr to learn whether the process that listened there is
// gone, after a connection to it ended (docs/design.md D101): it returns
// the refusal if nothing listens there, nil otherwise. A dying process's
// sockets close one by one, its listener possibly after the connection:
// a dial that connects is closed at once (the peer logs it as a health
// check) and tried again 5 ms and 20 ms later, before the peer is taken
// as alive. The connection layer under TCPTransport and package
// kafkawire's transport probes with it (D220).
func PeerGone(ctx context.Context, dialTimeout time.Duration, addr string) error {
	return stream.PeerGone(ctx, dialTimeout, addr)
}

// IsRefusal reports whether err, from a connection attempt, is a refusal:
// nothing listens at the address (D101).
func IsRefusal(err error) bool { return stream.IsRefusal(err) }

// Handshake writes the hello, sent with the first request.
func (w *tcpWire) Handshake(_ kraft.NodeID, _ *stream.Conn, bw *bufio.Writer) error {
	hello := make([]byte, 4, 4+tcpHelloSize)
	binary.BigEndian.PutUint32(hello, uint32(tcpHelloSize))
	hello = append(hello, tcpHelloMagic...)
	hello = append(hello, wireVersion)
	hello = appendI32(hello, int32(w.cfg.ID))
	_, _ = bw.Write(hello) // an error shows in the write of the request
	return nil
}

// Encode: a request's frame is made by Send.
func (w *tcpWire) Encode(_ kraft.NodeID, _ *stream.Conn, frame []byte) []byte { return frame }

// ReadResponses reads what comes back on a connection dialed to a peer.
func (w *tcpWire) ReadResponses(_ kraft.NodeID, c *stream.Conn, r *bufio.Reader) {
	w.readMessages(c, r, false)
}

// Serve reads the hello and then the messages of an accepted connection.
func (w *tcpWire) Serve(c *stream.Conn, r *bufio.Reader) {
	_ = c.SetReadDeadline(time.Now().Add(w.cfg.DialTimeout))
	head, _ := r.Peek(4) // the first bytes, for the log if they are not a hello
	head = append([]byte(nil), head...)
	hello, err := readFrameLimit(r, tcpHelloSize)
	if err != nil || len(hello) != tcpHelloSize || string(hello[:4]) != tcpHelloMagic || hello[4] != wireVersion {
		if hello == nil && len(head) > 0 {
			hello = head
		}
		w.garbage(c, hello, err)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	w.readMessages(c, r, true)
}

// readMessages reads messages from c into Inbox until an error or Close.
// A request on an accepted connection makes c the route for responses to
// its sender.
func (w *tcpWire) readMessages(c *stream.Conn, r *bufio.Reader, incoming bool) {
	for {
		frame, err := ReadFrame(r)
		if errors.Is(err, ErrFrameTooLarge) {
			w.garbage(c, nil, err)
			return
		}
		if err != nil {
			return
		}
		m, err := decodeShared(frame)
		if err != nil {
			// The stream is not what the peer should send: give up on it.
			w.l.CountDrop()
			w.garbage(c, nil, fmt.Errorf("undecodable message: %w", err))
			return
		}
		if incoming && !m.Response {
			w.mu.Lock()
			if !c.IsShut() {
				w.routes[m.From] = c
			}
			w.mu.Unlock()
		}
		select {
		case w.inbox <- m:
		case <-w.l.Done():
			return
		}
	}
}

// Closed forgets the routes to c.
func (w *tcpWire) Closed(c *stream.Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, rc := range w.routes {
		if rc == c {
			delete(w.routes, id)
		}
	}
}

// LogDrop logs a dropped message (dropCounter's rules).
func (w *tcpWire) LogDrop(n uint64, always bool, msg string) {
	logDrop(w.log, n, always, fmt.Sprintf("tcp transport %d", w.cfg.ID), msg)
}

type peerDownKey kraft.NodeID

// LogPeerDown logs a peer that refuses connections (D101), at most once
// per DefaultLogEvery.
func (w *tcpWire) LogPeerDown(id kraft.NodeID, addr string, _ bool) {
	if ok, _ := w.limits.allow(peerDownKey(id), w.clock()); ok {
		logEvent(w.log, slog.LevelInfo, EventPeerDown, "",
			fmt.Sprintf("node %d refuses connections at %s: its process is gone", id, addr),
			"peer", int32(id), "addr", addr)
	}
}

// clock is the time since the transport was made, for its rate limits.
func (w *tcpWire) clock() time.Duration { return time.Since(w.start) }

type peerKey kraft.NodeID

// LogUnreachable logs a failed connection attempt: the first of a row,
// then at most once per DefaultLogEvery while they go on.
func (w *tcpWire) LogUnreachable(id kraft.NodeID, addr string, err error, attempts int, since time.Time) {
	ok, _ := w.limits.allow(peerKey(id), w.clock())
	if !ok {
		return
	}
	var dnsErr *net.DNSError
	dns := errors.As(err, &dnsErr)
	advice := adviceUnreachable
	if dns {
		advice = adviceDNS
	}
	msg := fmt.Sprintf("cannot connect to node %d at %s: %v", id, addr, err)
	if attempts > 1 {
		msg += fmt.Sprintf(" (%d attempts in a row over %v)", attempts, time.Since(since).Round(time.Millisecond))
	}
	logEvent(w.log, slog.LevelWarn, EventPeerUnreachable, advice, msg,
		"peer", int32(id), "addr", addr, "err", err.Error(), "dns", dns, "attempts", attempts)
}

// LogConnected logs a connection to a peer after failed attempts.
func (w *tcpWire) LogConnected(id kraft.NodeID, addr string, attempts int, since time.Time) {
	logEvent(w.log, slog.LevelInfo, EventPeerConnected, "",
		fmt.Sprintf("connected to node %d at %s after %d failed attempts over %v", id, addr, attempts, time.Since(since).Round(time.Millisecond)),
		"peer", int32(id), "addr", addr, "attempts", attempts)
	w.limits.forget(peerKey(id))
}

type garbageKey string

// garbage logs a connection that does not speak kraft's protocol, at most
// once per DefaultLogEvery per remote host. A connection closed before it
// sent a byte (a TCP health check) is logged at Debug level.
func (w *tcpWire) garbage(c *stream.Conn, hello []byte, err error) {
	remote := c.RemoteAddr().String()
	host, _, splitErr := net.SplitHostPort(remote)
	if splitErr != nil {
		host = remote
	}
	var why string
	level := slog.LevelWarn
	switch {
	case errors.Is(err, io.EOF) && hello == nil:
		why, level = "it closed the connection without sending anything", slog.LevelDebug
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		why = fmt.Sprintf("it sent no kraft hello within %v", w.cfg.DialTimeout)
	case err != nil && hello != nil:
		why = fmt.Sprintf("it sent %q where kraft's hello was expected (%v)", hello, err)
	case err != nil:
		why = err.Error()
	default:
		why = fmt.Sprintf("it sent %q where kraft's hello was expected", hello)
	}
	if level == slog.LevelWarn {
		ok, suppressed := w.limits.allow(garbageKey(host), w.clock())
		if !ok {
			return
		}
		if suppressed > 0 {
			why += fmt.Sprintf(" (%d more connections from %s since the last report)", suppressed, host)
		}
	}
	logEvent(w.log, level, EventGarbageConnection, adviceGarbage,
		fmt.Sprintf("a connection from %s does not speak kraft's protocol: %s", remote, why),
		"remote", remote, "reason", why)
}
