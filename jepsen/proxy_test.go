package jepsen

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"time"
)

// A link is the TCP proxy that one replica's connections to another go
// through: kraftd i is told that kraftd j listens at the link's address
// (its -voters entry for j), and the link forwards to j's real address.
// kraft's TCP transport sends requests on the connections it dials and
// the answers come back on them (node.TCPTransport), so link (i, j)
// carries i's requests to j forward and j's answers to i backward.
//
// A cut direction drops every byte in it, on whole connections: a change
// of the cuts closes the link's connections, and each new one keeps the
// cuts it was accepted with (a byte stream cut in the middle of a frame
// would be garbage, not a lost message). A connection accepted with its
// forward direction cut is never forwarded: the dialer's bytes are read
// and dropped, as a network that loses every packet would (D142).
type link struct {
	from, to int
	target   string
	ln       net.Listener

	mu        sync.Mutex
	fwd, back bool // cut: drop the bytes from -> to (fwd), to -> from (back)
	conns     map[net.Conn]struct{}
	closed    bool
}

func newLink(from, to int, target string) (*link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &link{from: from, to: to, target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go l.accept()
	return l, nil
}

func (l *link) addr() string { return l.ln.Addr().String() }

// cut sets the link's cut directions; a change drops its connections.
func (l *link) cut(fwd, back bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fwd == fwd && l.back == back {
		return
	}
	l.fwd, l.back = fwd, back
	for c := range l.conns {
		_ = c.Close()
	}
	clear(l.conns)
}

func (l *link) close() {
	l.mu.Lock()
	l.closed = true
	for c := range l.conns {
		_ = c.Close()
	}
	clear(l.conns)
	l.mu.Unlock()
	if l.ln != nil {
		_ = l.ln.Close()
	}
}

// track registers c, unless the link is closed.
func (l *link) track(cs ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	for _, c := range cs {
		l.conns[c] = struct{}{}
	}
	return true
}

func (l *link) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.serve(c)
	}
}

func (l *link) serve(c net.Conn) {
	l.mu.Lock()
	fwd, back := l.fwd, l.back
	l.mu.Unlock()
	if !l.track(c) {
		_ = c.Close()
		return
	}
	if fwd {
		// Nothing the dialer sends arrives, so nothing comes back.
		_, _ = io.Copy(io.Discard, c)
		_ = c.Close()
		return
	}
	t, err := net.DialTimeout("tcp", l.target, time.Second)
	if err != nil {
		_ = c.Close() // the target is down: as a refused connection would
		return
	}
	if !l.track(t) {
		_ = c.Close()
		_ = t.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn, drop bool) {
		if drop {
			_, _ = io.Copy(io.Discard, src)
		} else {
			_, _ = io.Copy(dst, src)
		}
		done <- struct{}{}
	}
	go pipe(t, c, false)
	go pipe(c, t, back)
	<-done
	_ = c.Close()
	_ = t.Close()
	<-done
	l.mu.Lock()
	delete(l.conns, c)
	delete(l.conns, t)
	l.mu.Unlock()
}

// network is the links between n replicas: links[i][j] carries i's
// connections to j.
type network struct {
	n       int
	links   map[[2]int]*link
	routers []*router // a dynamic quorum's: routers[j-1] is j's address
}

// set cuts exactly the directions in cuts: cuts[{a, b}] loses every
// message from a to b, a's requests (forward on link (a, b)) and a's
// answers to b's requests (backward on link (b, a)).
func (nw *network) set(cuts map[[2]int]bool) {
	for k, l := range nw.links {
		a, b := k[0], k[1]
		l.cut(cuts[[2]int{a, b}], cuts[[2]int{b, a}])
	}
}

func (nw *network) close() {
	for _, l := range nw.links {
		l.close()
	}
	for _, r := range nw.routers {
		_ = r.ln.Close()
	}
}

// A router is the one proxy address of replica j in a dynamic quorum
// (D161): there a voter's endpoint comes from the VotersRecord, the same
// at every replica, so replica i cannot be told a link address of its
// own for j. The router reads the hello a dialer sends first on every
// connection (its magic, wire version and node id; node.TCPTransport) and
// hands the connection, hello included, to the link (id, j), which cuts
// it as the static quorum's links do. A connection that sends no hello
// (a PeerGone probe, closed at once) is closed.
type router struct {
	to    int
	ln    net.Listener
	links map[int]*link // by the dialer's id
}

// helloLen is a hello frame: its 4-byte length, then "KRFT", the wire
// version and the dialer's id (node.TCPTransport's tcpHelloSize).
const helloLen = 4 + 4 + 1 + 4

func newRouter(to int, links map[int]*link) (*router, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &router{to: to, ln: ln, links: links}
	go r.accept()
	return r, nil
}

func (r *router) addr() string { return r.ln.Addr().String() }

func (r *router) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.route(c)
	}
}

func (r *router) route(c net.Conn) {
	hello := make([]byte, helloLen)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadFull(c, hello); err != nil || string(hello[4:8]) != "KRFT" {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	l := r.links[int(int32(binary.BigEndian.Uint32(hello[9:13])))]
	if l == nil {
		_ = c.Close()
		return
	}
	l.serve(&prefixConn{Conn: c, r: io.MultiReader(bytes.NewReader(hello), c)})
}

// prefixConn is a connection whose first bytes, already read, are read
// again.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(b []byte) (int, error) { return c.r.Read(b) }
