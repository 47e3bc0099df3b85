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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kraftquorum/kraft"
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
type TCPTransport struct {
	drops dropCounter // first, for its counter's alignment

	cfg    TCPConfig
	ln     net.Listener
	inbox  chan Message
	done   chan struct{}
	ctx    context.Context // cancelled by Close, for dials
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	mu     sync.Mutex
	closed bool
	addrs  map[kraft.NodeID]string
	peers  map[kraft.NodeID]*tcpPeer
	conns  map[*tcpConn]struct{}
	// routes maps a requester's id to the incoming connection its latest
	// request arrived on: where its responses go.
	routes map[kraft.NodeID]*tcpConn

	log    *slog.Logger
	limits limiter
	start  time.Time
	downs  chan kraft.NodeID // PeerDowns
}

var _ Transport = (*TCPTransport)(nil)

// tcpPeer is the outgoing side to one peer: its queue of frames, drained
// by one writer goroutine (runPeer) that owns the connection.
type tcpPeer struct {
	id    kraft.NodeID
	queue chan []byte
	// conn is the current connection, guarded by TCPTransport.mu; SetPeer
	// closes it to make the writer dial the new address.
	conn *tcpConn
	// failures counts the failed connection attempts in a row since
	// failingSince; runPeer's alone.
	failures     int
	failingSince time.Time
}

// tcpConn is one connection. Incoming connections have a queue of
// response frames for their writer goroutine; outgoing ones are written
// by their peer's writer.
type tcpConn struct {
	c     net.Conn
	out   chan []byte // incoming connections only; never closed
	done  chan struct{}
	close sync.Once
}

func newTCPConn(c net.Conn, queue int) *tcpConn {
	tc := &tcpConn{c: c, done: make(chan struct{})}
	if queue > 0 {
		tc.out = make(chan []byte, queue)
	}
	return tc
}

// shut closes the connection; its reader and writer stop.
func (c *tcpConn) shut() {
	c.close.Do(func() {
		close(c.done)
		_ = c.c.Close()
	})
}

func (c *tcpConn) isShut() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// NewTCPTransport listens on cfg.Listen and returns the transport.
func NewTCPTransport(cfg TCPConfig) (*TCPTransport, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("node: listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logger := newLogger(cfg.Logger, cfg.Logf).With("node", int32(cfg.ID))
	t := &TCPTransport{
		drops:  dropCounter{log: logger},
		log:    logger,
		limits: limiter{every: DefaultLogEvery},
		start:  time.Now(),
		cfg:    cfg,
		ln:     ln,
		inbox:  make(chan Message, cfg.InboxSize),
		done:   make(chan struct{}),
		ctx:    ctx,
		cancel: cancel,
		addrs:  make(map[kraft.NodeID]string, len(cfg.Peers)),
		peers:  make(map[kraft.NodeID]*tcpPeer),
		conns:  make(map[*tcpConn]struct{}),
		routes: make(map[kraft.NodeID]*tcpConn),
		downs:  make(chan kraft.NodeID, 16),
	}
	for id, addr := range cfg.Peers {
		t.addrs[id] = addr
	}
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

// Addr returns the address the transport listens on.
func (t *TCPTransport) Addr() net.Addr { return t.ln.Addr() }

// SetPeer sets the address of peer id; an empty addr forgets the peer. A
// connection to the old address is closed, and the next request to id
// dials the new one; the address a peer already has changes nothing (the
// runtime sets the addresses of a dynamic voter set as its records come).
func (t *TCPTransport) SetPeer(id kraft.NodeID, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.addrs[id]; ok && old == addr {
		return
	}
	if addr == "" {
		delete(t.addrs, id)
	} else {
		t.addrs[id] = addr
	}
	if p := t.peers[id]; p != nil && p.conn != nil {
		p.conn.shut()
	}
}

// Dropped returns how many messages the transport dropped: sent ones it
// could not send and received ones it could not decode.
func (t *TCPTransport) Dropped() uint64 { return t.drops.count() }

// drop counts a dropped message and logs it (TCPConfig.Logf; see
// dropCounter).
func (t *TCPTransport) drop(always bool, format string, args ...interface{}) {
	t.drops.drop(always, fmt.Sprintf("tcp transport %d", t.cfg.ID), format, args...)
}

// Send queues m for m.To: a request for the connection dialed to m.To, a
// response for the connection m.To's latest request came on. It never
// blocks; a message it cannot queue is dropped.
func (t *TCPTransport) Send(m Message) {
	if m.To == t.cfg.ID {
		t.drop(false, "a message to the local id %d", m.To)
		return
	}
	frame, err := appendFrame(nil, m)
	if err != nil {
		t.drop(true, "message %d -> %d not encoded: %v", m.From, m.To, err)
		return
	}
	var queue chan []byte
	t.mu.Lock()
	switch {
	case t.closed:
	case m.Response:
		if c := t.routes[m.To]; c != nil {
			queue = c.out
		}
	default:
		p := t.peers[m.To]
		if p == nil {
			if _, ok := t.addrs[m.To]; ok {
				p = &tcpPeer{id: m.To, queue: make(chan []byte, t.cfg.QueueSize)}
				t.peers[m.To] = p
				t.wg.Add(1)
				go t.runPeer(p)
			}
		}
		if p != nil {
			queue = p.queue
		}
	}
	t.mu.Unlock()
	if queue == nil {
		t.drop(false, "no connection or address for %d (response %v)", m.To, m.Response)
		return
	}
	select {
	case queue <- frame:
	default:
		t.drop(false, "the queue for %d is full", m.To)
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
		t.mu.Lock()
		t.closed = true
		conns := make([]*tcpConn, 0, len(t.conns))
		for c := range t.conns {
			conns = append(conns, c)
		}
		t.mu.Unlock()
		close(t.done)
		t.cancel()
		err = t.ln.Close()
		for _, c := range conns {
			c.shut()
		}
		t.wg.Wait()
		close(t.inbox)
	})
	return err
}

// track registers c so Close closes it; false if the transport is closed
// (and c is then closed). On true, it has added n to t.wg for the
// goroutines the caller starts for c.
func (t *TCPTransport) track(c *tcpConn, n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.shut()
		return false
	}
	t.conns[c] = struct{}{}
	t.wg.Add(n)
	return true
}

// forget closes c and removes every trace of it.
func (t *TCPTransport) forget(c *tcpConn) {
	c.shut()
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.conns, c)
	for id, rc := range t.routes {
		if rc == c {
			delete(t.routes, id)
		}
	}
}

// sleep waits d or until Close; false if closed.
func (t *TCPTransport) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.done:
		return false
	}
}

// accept accepts connections until Close.
func (t *TCPTransport) accept() {
	defer t.wg.Done()
	var delay time.Duration
	for {
		nc, err := t.ln.Accept()
		if err != nil {
			select {
			case <-t.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors or similar: wait and retry.
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay < time.Second {
				delay *= 2
			}
			if !t.sleep(delay) {
				return
			}
			continue
		}
		delay = 0
		c := newTCPConn(nc, t.cfg.QueueSize)
		if !t.track(c, 2) {
			continue
		}
		go t.readIncoming(c)
		go t.writeIncoming(c)
	}
}

// readIncoming reads the hello and then the messages of an accepted
// connection. A request makes c the route for responses to its sender.
func (t *TCPTransport) readIncoming(c *tcpConn) {
	defer t.wg.Done()
	defer t.forget(c)
	r := bufio.NewReaderSize(c.c, 64<<10)
	_ = c.c.SetReadDeadline(time.Now().Add(t.cfg.DialTimeout))
	head, _ := r.Peek(4) // the first bytes, for the log if they are not a hello
	head = append([]byte(nil), head...)
	hello, err := readFrameLimit(r, tcpHelloSize)
	if err != nil || len(hello) != tcpHelloSize || string(hello[:4]) != tcpHelloMagic || hello[4] != wireVersion {
		if hello == nil && len(head) > 0 {
			hello = head
		}
		t.garbage(c, hello, err)
		return
	}
	_ = c.c.SetReadDeadline(time.Time{})
	t.readMessages(c, r, true)
}

// readMessages reads messages from c into Inbox until an error or Close.
func (t *TCPTransport) readMessages(c *tcpConn, r *bufio.Reader, incoming bool) {
	for {
		frame, err := ReadFrame(r)
		if errors.Is(err, ErrFrameTooLarge) {
			t.garbage(c, nil, err)
			return
		}
		if err != nil {
			return
		}
		m, err := decodeShared(frame)
		if err != nil {
			// The stream is not what the peer should send: give up on it.
			atomic.AddUint64(&t.drops.n, 1)
			t.garbage(c, nil, fmt.Errorf("undecodable message: %w", err))
			return
		}
		if incoming && !m.Response {
			t.mu.Lock()
			if !c.isShut() {
				t.routes[m.From] = c
			}
			t.mu.Unlock()
		}
		select {
		case t.inbox <- m:
		case <-t.done:
			return
		}
	}
}

// writeIncoming writes the responses queued for an accepted connection.
func (t *TCPTransport) writeIncoming(c *tcpConn) {
	defer t.wg.Done()
	defer t.forget(c)
	w := bufio.NewWriterSize(c.c, 64<<10)
	for {
		select {
		case <-t.done:
			return
		case <-c.done:
			return
		case frame := <-c.out:
			if !t.write(c, w, frame, c.out) {
				return
			}
		}
	}
}

// write writes frame and whatever else is queued in more, then flushes;
// false after an error, and c is then closed.
func (t *TCPTransport) write(c *tcpConn, w *bufio.Writer, frame []byte, more chan []byte) bool {
	_ = c.c.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
	for frame != nil {
		if _, err := w.Write(frame); err != nil {
			t.drop(false, "writing to %v: %v", c.c.RemoteAddr(), err)
			c.shut()
			return false
		}
		select {
		case frame = <-more:
		default:
			frame = nil
		}
	}
	if err := w.Flush(); err != nil {
		t.drop(false, "writing to %v: %v", c.c.RemoteAddr(), err)
		c.shut()
		return false
	}
	return true
}

// runPeer sends the requests queued for p, dialing its connection when
// there is none.
func (t *TCPTransport) runPeer(p *tcpPeer) {
	defer t.wg.Done()
	var c *tcpConn
	var w *bufio.Writer
	backoff := t.cfg.ReconnectBackoff
	for {
		var frame []byte
		select {
		case <-t.done:
			return
		case frame = <-p.queue:
		}
		if c != nil && c.isShut() {
			c, w = nil, nil
		}
		if c == nil {
			var err error
			c, err = t.dial(p)
			if err != nil {
				t.unreachable(p, err)
				t.mu.Lock()
				addr := t.addrs[p.id]
				t.mu.Unlock()
				t.refused(p.id, addr, err)
				// The peer is unreachable: drop what waits for it, as
				// its sender will retry, and back off.
				t.drop(false, "%d unreachable: %v", p.id, err)
				for n := len(p.queue); n > 0; n-- {
					<-p.queue
					t.drop(false, "%d unreachable: %v", p.id, err)
				}
				if !t.sleep(backoff) {
					return
				}
				backoff *= 2
				if backoff > t.cfg.MaxReconnectBackoff {
					backoff = t.cfg.MaxReconnectBackoff
				}
				continue
			}
			if c == nil { // closed
				return
			}
			t.connected(p)
			backoff = t.cfg.ReconnectBackoff
			w = bufio.NewWriterSize(c.c, 64<<10)
			hello := make([]byte, 4, 4+tcpHelloSize)
			binary.BigEndian.PutUint32(hello, uint32(tcpHelloSize))
			hello = append(hello, tcpHelloMagic...)
			hello = append(hello, wireVersion)
			hello = appendI32(hello, int32(t.cfg.ID))
			_, _ = w.Write(hello) // an error shows in the write below
		}
		t.write(c, w, frame, p.queue)
	}
}

// dial connects to p's current address and starts the connection's
// reader. It returns nil, nil if the transport is closed.
func (t *TCPTransport) dial(p *tcpPeer) (*tcpConn, error) {
	t.mu.Lock()
	addr, ok := t.addrs[p.id]
	t.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("node: no address for %d", p.id)
	}
	d := net.Dialer{Timeout: t.cfg.DialTimeout}
	nc, err := d.DialContext(t.ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := newTCPConn(nc, 0)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		c.shut()
		return nil, nil
	}
	t.conns[c] = struct{}{}
	p.conn = c
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		defer t.forget(c)
		t.readMessages(c, bufio.NewReaderSize(c.c, 64<<10), false)
		// However it ended (the peer closed or reset it, or a write to
		// it failed and the writer closed it), ask whether the peer is
		// still there, unless the transport is closing or the peer has
		// moved (SetPeer).
		t.mu.Lock()
		moved := t.closed || t.addrs[p.id] != addr
		t.mu.Unlock()
		if !moved && !t.cfg.NoPeerDown {
			t.probe(p.id, addr)
		}
	}()
	return c, nil
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
func (t *TCPTransport) PeerDowns() <-chan kraft.NodeID { return t.downs }

// probe asks, after a connection to peer id ended, whether the peer's
// process is gone (PeerGone), and reports it if so.
func (t *TCPTransport) probe(id kraft.NodeID, addr string) {
	if err := PeerGone(t.ctx, t.cfg.DialTimeout, addr); err != nil {
		t.refused(id, addr, err)
	}
}

// PeerGone dials addr to learn whether the process that listened there is
// gone, after a connection to it ended (docs/design.md D101): it returns
// the refusal if nothing listens there, nil otherwise. A dying process's
// sockets close one by one, its listener possibly after the connection:
// a dial that connects is closed at once (the peer logs it as a health
// check) and tried again 5 ms and 20 ms later, before the peer is taken
// as alive. A transport of the runtime's other than TCPTransport (package
// kafkawire's) uses it too.
func PeerGone(ctx context.Context, dialTimeout time.Duration, addr string) error {
	d := net.Dialer{Timeout: dialTimeout}
	for _, wait := range []time.Duration{0, 5 * time.Millisecond, 15 * time.Millisecond} {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil
			}
		}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			if IsRefusal(err) {
				return err
			}
			return nil
		}
		_ = nc.Close()
	}
	return nil
}

// IsRefusal reports whether err, from a connection attempt, is a refusal:
// nothing listens at the address (D101).
func IsRefusal(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

type peerDownKey kraft.NodeID

// refused reports peer id down if err, from a connection attempt to addr,
// is a refusal (nothing listens there): after a connection to the peer
// ended (probe), or when a connection is to be made to send it a request
// (runPeer), since a connection that ended unnoticed before leaves a
// refusal the only sign.
func (t *TCPTransport) refused(id kraft.NodeID, addr string, err error) {
	if t.cfg.NoPeerDown || !IsRefusal(err) {
		return
	}
	if ok, _ := t.limits.allow(peerDownKey(id), t.clock()); ok {
		logEvent(t.log, slog.LevelInfo, EventPeerDown, "",
			fmt.Sprintf("node %d refuses connections at %s: its process is gone", id, addr),
			"peer", int32(id), "addr", addr)
	}
	select {
	case t.downs <- id:
	default:
	}
}

// clock is the time since the transport was made, for its rate limits.
func (t *TCPTransport) clock() time.Duration { return time.Since(t.start) }

type peerKey kraft.NodeID

// unreachable logs a failed connection attempt to p: the first of a row,
// then at most once per DefaultLogEvery while they go on.
func (t *TCPTransport) unreachable(p *tcpPeer, err error) {
	p.failures++
	if p.failures == 1 {
		p.failingSince = time.Now()
	}
	ok, _ := t.limits.allow(peerKey(p.id), t.clock())
	if !ok {
		return
	}
	t.mu.Lock()
	addr := t.addrs[p.id]
	t.mu.Unlock()
	var dnsErr *net.DNSError
	dns := errors.As(err, &dnsErr)
	advice := adviceUnreachable
	if dns {
		advice = adviceDNS
	}
	msg := fmt.Sprintf("cannot connect to node %d at %s: %v", p.id, addr, err)
	if p.failures > 1 {
		msg += fmt.Sprintf(" (%d attempts in a row over %v)", p.failures, time.Since(p.failingSince).Round(time.Millisecond))
	}
	logEvent(t.log, slog.LevelWarn, EventPeerUnreachable, advice, msg,
		"peer", int32(p.id), "addr", addr, "err", err.Error(), "dns", dns, "attempts", p.failures)
}

// connected logs a connection to p after failed attempts.
func (t *TCPTransport) connected(p *tcpPeer) {
	if p.failures == 0 {
		return
	}
	t.mu.Lock()
	addr := t.addrs[p.id]
	t.mu.Unlock()
	logEvent(t.log, slog.LevelInfo, EventPeerConnected, "",
		fmt.Sprintf("connected to node %d at %s after %d failed attempts over %v", p.id, addr, p.failures, time.Since(p.failingSince).Round(time.Millisecond)),
		"peer", int32(p.id), "addr", addr, "attempts", p.failures)
	p.failures = 0
	t.limits.forget(peerKey(p.id))
}

type garbageKey string

// garbage logs a connection that does not speak kraft's protocol, at most
// once per DefaultLogEvery per remote host. A connection closed before it
// sent a byte (a TCP health check) is logged at Debug level.
func (t *TCPTransport) garbage(c *tcpConn, hello []byte, err error) {
	remote := c.c.RemoteAddr().String()
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
		why = fmt.Sprintf("it sent no kraft hello within %v", t.cfg.DialTimeout)
	case err != nil && hello != nil:
		why = fmt.Sprintf("it sent %q where kraft's hello was expected (%v)", hello, err)
	case err != nil:
		why = err.Error()
	default:
		why = fmt.Sprintf("it sent %q where kraft's hello was expected", hello)
	}
	if level == slog.LevelWarn {
		ok, suppressed := t.limits.allow(garbageKey(host), t.clock())
		if !ok {
			return
		}
		if suppressed > 0 {
			why += fmt.Sprintf(" (%d more connections from %s since the last report)", suppressed, host)
		}
	}
	logEvent(t.log, level, EventGarbageConnection, adviceGarbage,
		fmt.Sprintf("a connection from %s does not speak kraft's protocol: %s", remote, why),
		"remote", remote, "reason", why)
}
