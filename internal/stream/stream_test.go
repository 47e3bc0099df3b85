package stream

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

const wait = 5 * time.Second

// testWire is a wire of length-prefixed frames; a dialer's hello is the
// frame "HELO". What a served connection reads goes to got; a frame
// starting with "echo" is sent back on its connection, and what comes
// back on a dialed connection goes to back.
type testWire struct {
	l    *Layer[[]byte]
	got  chan string
	back chan string
	// gate, if set, holds each Handshake until it is closed; entered
	// receives one value per Handshake that waits.
	gate    chan struct{}
	entered chan struct{}

	mu          sync.Mutex
	handshakes  int
	closed      int
	unreachable []time.Time
	connected   []int // attempts before each connection
	downs       []bool
}

func frame(p string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
	return append(b, p...)
}

func readFrame(r io.Reader) (string, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	b := make([]byte, binary.BigEndian.Uint32(n[:]))
	_, err := io.ReadFull(r, b)
	return string(b), err
}

func (w *testWire) Handshake(_ kraft.NodeID, _ *Conn, bw *bufio.Writer) error {
	w.mu.Lock()
	w.handshakes++
	w.mu.Unlock()
	if w.gate != nil {
		w.entered <- struct{}{}
		<-w.gate
	}
	_, err := bw.Write(frame("HELO"))
	return err
}

func (w *testWire) Encode(_ kraft.NodeID, _ *Conn, item []byte) []byte { return item }

func (w *testWire) ReadResponses(_ kraft.NodeID, _ *Conn, r *bufio.Reader) {
	for {
		p, err := readFrame(r)
		if err != nil {
			return
		}
		w.back <- p
	}
}

func (w *testWire) Serve(c *Conn, r *bufio.Reader) {
	if hello, err := readFrame(r); err != nil || hello != "HELO" {
		return
	}
	for {
		p, err := readFrame(r)
		if err != nil {
			return
		}
		if len(p) >= 4 && p[:4] == "echo" {
			_ = c.Queue(frame(p))
		}
		select {
		case w.got <- p:
		case <-w.l.Done():
			return
		}
	}
}

func (w *testWire) Closed(*Conn) {
	w.mu.Lock()
	w.closed++
	w.mu.Unlock()
}

func (w *testWire) LogDrop(uint64, bool, string) {}

func (w *testWire) LogUnreachable(_ kraft.NodeID, _ string, _ error, _ int, _ time.Time) {
	w.mu.Lock()
	w.unreachable = append(w.unreachable, time.Now())
	w.mu.Unlock()
}

func (w *testWire) LogConnected(_ kraft.NodeID, _ string, attempts int, _ time.Time) {
	w.mu.Lock()
	w.connected = append(w.connected, attempts)
	w.mu.Unlock()
}

func (w *testWire) LogPeerDown(_ kraft.NodeID, _ string, afterConn bool) {
	w.mu.Lock()
	w.downs = append(w.downs, afterConn)
	w.mu.Unlock()
}

func testConfig(listen string, peers map[kraft.NodeID]string) Config {
	return Config{
		Listen: listen, Peers: peers,
		DialTimeout: time.Second, ReconnectBackoff: 10 * time.Millisecond, MaxReconnectBackoff: 40 * time.Millisecond,
		WriteTimeout: time.Second, QueueSize: 8,
	}
}

// start makes a layer with a testWire; gated: its handshakes wait.
func start(t *testing.T, cfg Config, gated bool) (*Layer[[]byte], *testWire) {
	l, err := Listen[[]byte](cfg)
	require.NoError(t, err)
	w := &testWire{l: l, got: make(chan string, 1024), back: make(chan string, 1024)}
	if gated {
		w.gate, w.entered = make(chan struct{}), make(chan struct{}, 16)
	}
	l.Start(w)
	t.Cleanup(func() {
		if w.gate != nil {
			select {
			case <-w.gate:
			default:
				close(w.gate)
			}
		}
		closeWithin(t, l)
	})
	return l, w
}

// closeWithin closes l, failing the test (without waiting further) if
// Close does not return within wait.
func closeWithin(t *testing.T, l *Layer[[]byte]) {
	done := make(chan struct{})
	go func() { _ = l.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Errorf("Close hangs")
	}
}

func next(t *testing.T, ch chan string) string {
	select {
	case p := <-ch:
		return p
	case <-time.After(wait):
		require.FailNow(t, "nothing arrived")
		return ""
	}
}

// TestQueueHoldsQueueSizeRequestsPerPeer: while a peer's writer is busy
// (here in its handshake), Send queues QueueSize requests and refuses the
// next with ErrQueueFull; once the writer goes on, every queued request
// arrives, in order, on one connection.
func TestQueueHoldsQueueSizeRequestsPerPeer(t *testing.T) {
	b, wb := start(t, testConfig("127.0.0.1:0", nil), false)
	a, wa := start(t, testConfig("127.0.0.1:0", map[kraft.NodeID]string{2: b.Addr().String()}), true)

	require.NoError(t, a.Send(2, frame("r0")))
	select {
	case <-wa.entered: // the writer took r0 and waits in the handshake
	case <-time.After(wait):
		require.FailNow(t, "no handshake")
	}
	for i := 1; i <= 8; i++ {
		require.NoError(t, a.Send(2, frame("r"+string(rune('0'+i)))), "request %d", i)
	}
	require.ErrorIs(t, a.Send(2, frame("r9")), ErrQueueFull)
	require.ErrorIs(t, a.Send(3, frame("x")), ErrNoAddress)
	close(wa.gate)
	for i := 0; i <= 8; i++ {
		require.Equal(t, "r"+string(rune('0'+i)), next(t, wb.got))
	}
	require.Equal(t, 1, a.Conns(), "one connection dialed")
	wa.mu.Lock()
	require.Equal(t, 1, wa.handshakes)
	wa.mu.Unlock()
}

// TestUnreachablePeerDropsAndCountsItsQueue: a peer whose connection
// cannot be made loses the request that was to be sent and every request
// queued behind it, each counted by Dropped.
func TestUnreachablePeerDropsAndCountsItsQueue(t *testing.T) {
	gone := refusingAddr(t)
	a, _ := start(t, testConfig("127.0.0.1:0", map[kraft.NodeID]string{2: gone}), false)
	for i := 0; i < 5; i++ {
		_ = a.Send(2, frame("r"))
	}
	require.Eventually(t, func() bool { return a.Dropped() == 5 }, wait, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, uint64(5), a.Dropped(), "each request counted once")
}

// refusingAddr is a loopback address nothing listens on.
func refusingAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestReconnectsWithBackoffAfterThePeerRestarts: while a peer is gone,
// the connection attempts to it back off, doubling from ReconnectBackoff
// up to MaxReconnectBackoff however fast requests come; once it listens
// again at its address, the next request dials it, with a new handshake,
// and arrives.
func TestReconnectsWithBackoffAfterThePeerRestarts(t *testing.T) {
	b, wb := start(t, testConfig("127.0.0.1:0", nil), false)
	addr := b.Addr().String()
	a, wa := start(t, testConfig("127.0.0.1:0", map[kraft.NodeID]string{2: addr}), false)
	require.NoError(t, a.Send(2, frame("before")))
	require.Equal(t, "before", next(t, wb.got))
	require.NoError(t, b.Close())

	// Requests every millisecond for 250 ms: the attempts back off.
	for end := time.Now().Add(250 * time.Millisecond); time.Now().Before(end); {
		_ = a.Send(2, frame("during"))
		time.Sleep(time.Millisecond)
	}
	wa.mu.Lock()
	tries := append([]time.Time(nil), wa.unreachable...)
	wa.mu.Unlock()
	require.GreaterOrEqual(t, len(tries), 4)
	require.LessOrEqual(t, len(tries), 10, "250 ms at 10, 20, 40, 40... ms between attempts")
	want := 10 * time.Millisecond
	for i := 1; i < len(tries); i++ {
		require.GreaterOrEqual(t, tries[i].Sub(tries[i-1]), want, "attempt %d came early", i+1)
		if want < 40*time.Millisecond {
			want *= 2
		}
	}

	_, wb2 := start(t, testConfig(addr, nil), false)
	require.Eventually(t, func() bool {
		_ = a.Send(2, frame("after"))
		select {
		case p := <-wb2.got:
			return p == "after"
		case <-time.After(20 * time.Millisecond):
			return false
		}
	}, wait, time.Millisecond)
	wa.mu.Lock()
	defer wa.mu.Unlock()
	require.Equal(t, 2, wa.handshakes, "a new connection, with its handshake")
	require.Len(t, wa.connected, 1)
	require.GreaterOrEqual(t, wa.connected[0], len(tries), "the failed attempts counted")
}

// TestPeerDownReportedOncePerOutage: a peer whose process goes (its
// connection closes and its port refuses) is reported once, by the probe
// after its connection ended; a peer that restarts and goes again is
// reported again; a peer that closes a connection but still listens is
// not reported (D101).
func TestPeerDownReportedOncePerOutage(t *testing.T) {
	b, wb := start(t, testConfig("127.0.0.1:0", nil), false)
	addr := b.Addr().String()
	a, wa := start(t, testConfig("127.0.0.1:0", map[kraft.NodeID]string{2: addr}), false)
	quiet := func() {
		select {
		case id := <-a.PeerDowns():
			require.FailNow(t, "a second report", "node %d", id)
		case <-time.After(200 * time.Millisecond):
		}
	}
	for outage := 1; outage <= 2; outage++ {
		require.NoError(t, a.Send(2, frame("echo")))
		require.Equal(t, "echo", next(t, wb.got))
		require.Equal(t, "echo", next(t, wa.back))
		require.NoError(t, b.Close())
		select {
		case id := <-a.PeerDowns():
			require.Equal(t, kraft.NodeID(2), id)
		case <-time.After(wait):
			require.FailNow(t, "the peer's process is gone and was not reported")
		}
		quiet()
		wa.mu.Lock()
		require.Equal(t, []bool{true}, wa.downs[outage-1:], "logged once, after the connection ended")
		wa.mu.Unlock()
		b, wb = start(t, testConfig(addr, nil), false)
	}

	// A connection that ends while the peer listens: no report.
	require.NoError(t, a.Send(2, frame("echo")))
	require.Equal(t, "echo", next(t, wb.got))
	a.PeerConn(2).Shut()
	quiet()
}

// TestCloseLeavesNoGoroutine: Close ends every goroutine of the layer:
// the accept loop, the writers and readers of dialed and accepted
// connections, a writer backing off from an unreachable peer, a
// handshake in progress and what Go started.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		b, wb := start(t, testConfig("127.0.0.1:0", nil), false)
		c, wc := start(t, testConfig("127.0.0.1:0", nil), true)
		peers := map[kraft.NodeID]string{2: b.Addr().String(), 3: refusingAddr(t), 4: c.Addr().String()}
		a, wa := start(t, testConfig("127.0.0.1:0", peers), false)
		_ = a.Send(3, frame("x"))
		require.NoError(t, a.Send(2, frame("echo")))
		require.Equal(t, "echo", next(t, wb.got))
		require.Equal(t, "echo", next(t, wa.back))
		// c dials a and hangs in its handshake.
		c.SetPeer(1, a.Addr().String())
		require.NoError(t, c.Send(1, frame("y")))
		<-wc.entered
		require.True(t, a.Go(func() { <-a.Done() }))
		require.Eventually(t, func() bool { return a.Dropped() >= 1 }, wait, time.Millisecond)

		closeWithin(t, a)
		closeWithin(t, b)
		require.False(t, a.Go(func() {}), "Go after Close runs nothing")
		close(wc.gate)
		require.NoError(t, c.Close())
		require.NoError(t, c.Close(), "closing twice does nothing")
	}()
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		require.FailNow(t, "goroutines leaked", "%d before, %d now:\n%s", before, n, buf)
	}
}
