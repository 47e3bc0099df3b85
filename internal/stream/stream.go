// Package stream is the connection layer under kraft's two TCP wires:
// package node's TCPTransport (kraft's own frames) and package kafkawire's
// Transport (Kafka's). It owns what the two share (docs/design.md D220):
// the listener and its accept loop, dialing a peer and dialing it again
// with exponential backoff, one bounded queue per peer and per accepted
// connection with a count of the messages dropped, the writer and reader
// goroutines, the reports of a peer whose process is gone (D101) and
// Close. What a wire adds is a Wire: how a request is framed, the
// handshake on a new connection, how frames read from a connection become
// events. So hashicorp/raft's NetworkTransport sits over a StreamLayer.
//
// Connections follow Kafka's pattern: a replica sends its requests on a
// connection it dialed to the peer, and the peer writes each response back
// on the connection the request came on.
package stream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kraftquorum/kraft"
)

// Config configures a Layer. Its durations and sizes must be set (the
// wires have their own defaults).
type Config struct {
	// Listen is the address to accept connections on.
	Listen string
	// Peers are the other replicas' addresses, for requests.
	Peers map[kraft.NodeID]string
	// DialTimeout bounds one connection attempt and a PeerGone probe.
	DialTimeout time.Duration
	// ReconnectBackoff is the wait after a failed connection attempt; it
	// doubles with each failure in a row up to MaxReconnectBackoff.
	ReconnectBackoff    time.Duration
	MaxReconnectBackoff time.Duration
	// WriteTimeout bounds one batch of writes to a connection.
	WriteTimeout time.Duration
	// QueueSize bounds the queue of each peer and of each accepted
	// connection's responses; beyond it, messages are dropped.
	QueueSize int
	// NoPeerDown turns off PeerDowns.
	NoPeerDown bool
}

// Wire is what a wire protocol adds to the layer. The layer calls it from
// its goroutines, never with a lock of its own held.
type Wire[T any] interface {
	// Handshake runs on a connection just dialed to peer, before its
	// reader starts and before any request: it writes the wire's hello
	// into w (sent with the first request) or exchanges it on c. An error
	// closes c and counts as a failed connection attempt.
	Handshake(peer kraft.NodeID, c *Conn, w *bufio.Writer) error
	// Encode returns the frame of item, a request queued for peer, for
	// connection c; nil: it is not sent (the wire dropped or answered it).
	Encode(peer kraft.NodeID, c *Conn, item T) []byte
	// ReadResponses reads what comes back on a connection dialed to peer,
	// until an error or until c is shut.
	ReadResponses(peer kraft.NodeID, c *Conn, r *bufio.Reader)
	// Serve reads the requests of an accepted connection until an error
	// or until c is shut; its responses go back by c.Queue.
	Serve(c *Conn, r *bufio.Reader)
	// Closed is called once c is shut and forgotten by the layer, for the
	// wire to forget its routes to c.
	Closed(c *Conn)

	// LogDrop logs the n-th dropped message (the 1st, 2nd, 4th, 8th...,
	// and every one Drop was told to log always).
	LogDrop(n uint64, always bool, msg string)
	// LogUnreachable logs a failed connection attempt to peer at addr,
	// the attempts-th in a row since since; LogConnected a connection
	// after such attempts.
	LogUnreachable(peer kraft.NodeID, addr string, err error, attempts int, since time.Time)
	LogConnected(peer kraft.NodeID, addr string, attempts int, since time.Time)
	// LogPeerDown logs that peer refuses connections at addr, right after
	// a connection to it ended (afterConn) or at a connection attempt.
	LogPeerDown(peer kraft.NodeID, addr string, afterConn bool)
}

// Errors of Send and Conn.Queue: why a message was not queued.
var (
	ErrClosed    = errors.New("the transport is closed")
	ErrNoAddress = errors.New("no address")
	ErrQueueFull = errors.New("the queue is full")
	ErrConnGone  = errors.New("the connection is closed")
)

// bufSize is the size of a connection's read and write buffers.
const bufSize = 64 << 10

// Layer is the connection layer of one replica. Its requests are of type
// T: encoded frames for a wire that encodes at Send, messages for one that
// encodes per connection.
type Layer[T any] struct {
	dropped atomic.Uint64

	cfg    Config
	wire   Wire[T]
	ln     net.Listener
	done   chan struct{}
	ctx    context.Context // cancelled by Close, for dials
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
	downs  chan kraft.NodeID

	mu     sync.Mutex
	closed bool
	addrs  map[kraft.NodeID]string
	peers  map[kraft.NodeID]*peer[T]
	conns  map[*Conn]struct{}
}

// peer is the outgoing side to one peer: its queue, drained by one writer
// goroutine (runPeer) that owns the connection.
type peer[T any] struct {
	id    kraft.NodeID
	queue chan T
	// conn is the current connection, guarded by Layer.mu; SetPeer
	// shuts it to make the writer dial the new address.
	conn *Conn
	// failures counts the failed connection attempts in a row since
	// failingSince; runPeer's alone.
	failures     int
	failingSince time.Time
}

// Conn is one connection. Accepted connections have a queue of response
// frames for their writer goroutine; dialed ones are written by their
// peer's writer.
type Conn struct {
	net.Conn
	// Data is the wire's state of the connection, set by the wire in
	// Handshake or Serve, before the other goroutines of c use it.
	Data  any
	out   chan []byte // accepted connections only; never closed
	done  chan struct{}
	close sync.Once
}

func newConn(nc net.Conn, queue int) *Conn {
	c := &Conn{Conn: nc, done: make(chan struct{})}
	if queue > 0 {
		c.out = make(chan []byte, queue)
	}
	return c
}

// Shut closes the connection; its reader and writer stop.
func (c *Conn) Shut() {
	c.close.Do(func() {
		close(c.done)
		_ = c.Conn.Close()
	})
}

// Done is closed when c is shut.
func (c *Conn) Done() <-chan struct{} { return c.done }

// IsShut reports whether c is shut.
func (c *Conn) IsShut() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Queue queues frame for an accepted connection's writer without waiting:
// ErrConnGone if c is shut, ErrQueueFull if its queue is full.
func (c *Conn) Queue(frame []byte) error {
	select {
	case c.out <- frame:
		return nil
	case <-c.done:
		return ErrConnGone
	default:
		return ErrQueueFull
	}
}

// Put queues frame for an accepted connection's writer, waiting while its
// queue is full; false if c was shut first.
func (c *Conn) Put(frame []byte) bool {
	select {
	case c.out <- frame:
		return true
	case <-c.done:
		return false
	}
}

// Listen listens on cfg.Listen. The layer accepts nothing before Start.
func Listen[T any](cfg Config) (*Layer[T], error) {
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Layer[T]{
		cfg:    cfg,
		ln:     ln,
		done:   make(chan struct{}),
		ctx:    ctx,
		cancel: cancel,
		downs:  make(chan kraft.NodeID, 16),
		addrs:  make(map[kraft.NodeID]string, len(cfg.Peers)),
		peers:  make(map[kraft.NodeID]*peer[T]),
		conns:  make(map[*Conn]struct{}),
	}
	for id, addr := range cfg.Peers {
		l.addrs[id] = addr
	}
	return l, nil
}

// Start starts accepting connections, served by w, which also serves the
// connections Send dials. It is called once, before Send.
func (l *Layer[T]) Start(w Wire[T]) {
	l.wire = w
	l.wg.Add(1)
	go l.accept()
}

// Addr is the address the layer listens on.
func (l *Layer[T]) Addr() net.Addr { return l.ln.Addr() }

// Done is closed by Close.
func (l *Layer[T]) Done() <-chan struct{} { return l.done }

// Context is cancelled by Close.
func (l *Layer[T]) Context() context.Context { return l.ctx }

// PeerDowns delivers the ids of peers whose process is gone (D101; see
// PeerGone); reports not read in time are dropped (a buffer of 16).
func (l *Layer[T]) PeerDowns() <-chan kraft.NodeID { return l.downs }

// Dropped counts the messages dropped (Drop, CountDrop and the layer's
// own).
func (l *Layer[T]) Dropped() uint64 { return l.dropped.Load() }

// Drop counts a dropped message and logs it (Wire.LogDrop) if always, or
// at the 1st, 2nd, 4th, 8th... drop.
func (l *Layer[T]) Drop(always bool, format string, args ...interface{}) {
	n := l.dropped.Add(1)
	if always || n&(n-1) == 0 {
		l.wire.LogDrop(n, always, fmt.Sprintf(format, args...))
	}
}

// CountDrop counts a dropped message that the wire logs its own way.
func (l *Layer[T]) CountDrop() { l.dropped.Add(1) }

// SetPeer sets the address of peer id; an empty addr forgets it. A
// connection to the old address is shut, and the next request dials the
// new one; the address the peer already has changes nothing.
func (l *Layer[T]) SetPeer(id kraft.NodeID, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.addrs[id]; ok && old == addr {
		return
	}
	if addr == "" {
		delete(l.addrs, id)
	} else {
		l.addrs[id] = addr
	}
	if p := l.peers[id]; p != nil && p.conn != nil {
		p.conn.Shut()
	}
}

// PeerAddr is the address of peer id, if known.
func (l *Layer[T]) PeerAddr(id kraft.NodeID) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	addr, ok := l.addrs[id]
	return addr, ok
}

// PeerConn is the connection dialed to peer id, nil if none.
func (l *Layer[T]) PeerConn(id kraft.NodeID) *Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.peers[id]; p != nil {
		return p.conn
	}
	return nil
}

// Conns counts the open connections, dialed and accepted.
func (l *Layer[T]) Conns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// Send queues request item for peer to without waiting, starting the
// peer's writer at its first request. It does not count a drop: the
// error says why item was not queued (ErrClosed, ErrNoAddress,
// ErrQueueFull), for the wire to drop it with its own words.
func (l *Layer[T]) Send(to kraft.NodeID, item T) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	p := l.peers[to]
	if p == nil {
		if _, ok := l.addrs[to]; !ok {
			l.mu.Unlock()
			return ErrNoAddress
		}
		p = &peer[T]{id: to, queue: make(chan T, l.cfg.QueueSize)}
		l.peers[to] = p
		l.wg.Add(1)
		go l.runPeer(p)
	}
	l.mu.Unlock()
	select {
	case p.queue <- item:
		return nil
	default:
		return ErrQueueFull
	}
}

// Go runs f on a goroutine that Close waits for; false if closed (f is
// then not run).
func (l *Layer[T]) Go(f func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		f()
	}()
	return true
}

// Sleep waits d or until Close; false if closed.
func (l *Layer[T]) Sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-l.done:
		return false
	}
}

// Close closes the listener and every connection and waits for the
// layer's goroutines (and those of Go) to end. Requests still queued are
// dropped. Closing twice does nothing.
func (l *Layer[T]) Close() error {
	var err error
	l.once.Do(func() {
		l.mu.Lock()
		l.closed = true
		conns := make([]*Conn, 0, len(l.conns))
		for c := range l.conns {
			conns = append(conns, c)
		}
		l.mu.Unlock()
		close(l.done)
		l.cancel()
		err = l.ln.Close()
		for _, c := range conns {
			c.Shut()
		}
		l.wg.Wait()
	})
	return err
}

// track registers c so Close shuts it, adding n to the wait group for the
// goroutines the caller starts for c; false if closed (c is then shut).
func (l *Layer[T]) track(c *Conn, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Shut()
		return false
	}
	l.conns[c] = struct{}{}
	l.wg.Add(n)
	return true
}

// forget shuts c, removes it and tells the wire.
func (l *Layer[T]) forget(c *Conn) {
	c.Shut()
	l.mu.Lock()
	_, ok := l.conns[c]
	delete(l.conns, c)
	l.mu.Unlock()
	if ok {
		l.wire.Closed(c)
	}
}

// accept accepts connections until Close.
func (l *Layer[T]) accept() {
	defer l.wg.Done()
	var delay time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.done:
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
			if !l.Sleep(delay) {
				return
			}
			continue
		}
		delay = 0
		c := newConn(nc, l.cfg.QueueSize)
		if !l.track(c, 2) {
			continue
		}
		go l.serve(c)
		go l.writeAccepted(c)
	}
}

func (l *Layer[T]) serve(c *Conn) {
	defer l.wg.Done()
	defer l.forget(c)
	l.wire.Serve(c, bufio.NewReaderSize(c, bufSize))
}

// writeAccepted writes the responses queued for an accepted connection.
func (l *Layer[T]) writeAccepted(c *Conn) {
	defer l.wg.Done()
	defer l.forget(c)
	w := bufio.NewWriterSize(c, bufSize)
	for {
		select {
		case <-l.done:
			return
		case <-c.done:
			return
		case frame := <-c.out:
			_ = c.SetWriteDeadline(time.Now().Add(l.cfg.WriteTimeout))
			for frame != nil {
				if _, err := w.Write(frame); err != nil {
					l.Drop(false, "writing to %v: %v", c.RemoteAddr(), err)
					return
				}
				select {
				case frame = <-c.out:
				default:
					frame = nil
				}
			}
			if err := w.Flush(); err != nil {
				l.Drop(false, "writing to %v: %v", c.RemoteAddr(), err)
				return
			}
		}
	}
}

// runPeer sends the requests queued for p, dialing its connection when
// there is none.
func (l *Layer[T]) runPeer(p *peer[T]) {
	defer l.wg.Done()
	var c *Conn
	var w *bufio.Writer
	backoff := l.cfg.ReconnectBackoff
	for {
		var item T
		select {
		case <-l.done:
			return
		case item = <-p.queue:
		}
		if c != nil && c.IsShut() {
			c, w = nil, nil
		}
		if c == nil {
			addr, _ := l.PeerAddr(p.id)
			var err error
			c, w, err = l.dial(p)
			if err != nil {
				p.failures++
				if p.failures == 1 {
					p.failingSince = time.Now()
				}
				l.wire.LogUnreachable(p.id, addr, err, p.failures, p.failingSince)
				l.refused(p.id, addr, err, false)
				// The peer is unreachable: drop what waits for it, as
				// its sender will retry, and back off.
				l.Drop(false, "%d unreachable: %v", p.id, err)
				for n := len(p.queue); n > 0; n-- {
					<-p.queue
					l.Drop(false, "%d unreachable: %v", p.id, err)
				}
				if !l.Sleep(backoff) {
					return
				}
				backoff *= 2
				if backoff > l.cfg.MaxReconnectBackoff {
					backoff = l.cfg.MaxReconnectBackoff
				}
				continue
			}
			if c == nil { // closed
				return
			}
			if p.failures > 0 {
				l.wire.LogConnected(p.id, addr, p.failures, p.failingSince)
				p.failures = 0
			}
			backoff = l.cfg.ReconnectBackoff
		}
		l.write(p, c, w, item)
	}
}

// write writes item and whatever else is queued for p, then flushes; on
// an error c is shut.
func (l *Layer[T]) write(p *peer[T], c *Conn, w *bufio.Writer, item T) {
	_ = c.SetWriteDeadline(time.Now().Add(l.cfg.WriteTimeout))
	for more := true; more; {
		if frame := l.wire.Encode(p.id, c, item); frame != nil {
			if _, err := w.Write(frame); err != nil {
				l.Drop(false, "writing to %d: %v", p.id, err)
				c.Shut()
				return
			}
		}
		select {
		case item = <-p.queue:
		default:
			more = false
		}
	}
	if err := w.Flush(); err != nil {
		l.Drop(false, "writing to %d: %v", p.id, err)
		c.Shut()
	}
}

// dial connects to p's current address, runs the wire's handshake and
// starts the connection's reader. It returns nil, nil, nil if the layer
// is closed.
func (l *Layer[T]) dial(p *peer[T]) (*Conn, *bufio.Writer, error) {
	addr, ok := l.PeerAddr(p.id)
	if !ok {
		return nil, nil, fmt.Errorf("no address for %d", p.id)
	}
	d := net.Dialer{Timeout: l.cfg.DialTimeout}
	nc, err := d.DialContext(l.ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	c := newConn(nc, 0)
	if !l.track(c, 0) {
		return nil, nil, nil
	}
	w := bufio.NewWriterSize(c, bufSize)
	if err := l.wire.Handshake(p.id, c, w); err != nil {
		l.forget(c)
		return nil, nil, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.forget(c)
		return nil, nil, nil
	}
	p.conn = c
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		l.wire.ReadResponses(p.id, c, bufio.NewReaderSize(c, bufSize))
		l.forget(c)
		// However it ended (the peer closed or reset it, or a write to
		// it failed and the writer shut it), ask whether the peer is
		// still there, unless the layer is closing or the peer has moved
		// (SetPeer): D101.
		l.mu.Lock()
		moved := l.closed || l.addrs[p.id] != addr
		l.mu.Unlock()
		if !moved && !l.cfg.NoPeerDown {
			l.refused(p.id, addr, PeerGone(l.ctx, l.cfg.DialTimeout, addr), true)
		}
	}()
	return c, w, nil
}

// refused reports peer id down if err, from a connection attempt to addr,
// is a refusal (nothing listens there): after a connection to the peer
// ended (afterConn), or when a connection was to be made to send it a
// request, since a connection that ended unnoticed before leaves a
// refusal the only sign (D101).
func (l *Layer[T]) refused(id kraft.NodeID, addr string, err error, afterConn bool) {
	if l.cfg.NoPeerDown || err == nil || !IsRefusal(err) {
		return
	}
	l.wire.LogPeerDown(id, addr, afterConn)
	select {
	case l.downs <- id:
	default:
	}
}

// PeerGone dials addr to learn whether the process that listened there is
// gone, after a connection to it ended (docs/design.md D101): it returns
// the refusal if nothing listens there, nil otherwise. A dying process's
// sockets close one by one, its listener possibly after the connection:
// a dial that connects is closed at once (the peer logs it as a health
// check) and tried again 5 ms and 20 ms later, before the peer is taken
// as alive.
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
