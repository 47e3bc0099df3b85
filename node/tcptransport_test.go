package node

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

const tcpWait = 5 * time.Second

// newTCP starts a transport on a free loopback port; the test closes it.
func newTCP(t *testing.T, id kraft.NodeID, peers map[kraft.NodeID]string) *TCPTransport {
	t.Helper()
	tr, err := NewTCPTransport(TCPConfig{
		ID: id, Listen: "127.0.0.1:0", Peers: peers,
		DialTimeout: time.Second, ReconnectBackoff: 10 * time.Millisecond, MaxReconnectBackoff: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(func() { closeWithin(t, tr, tcpWait) })
	return tr
}

// recv waits for the next message in tr's Inbox.
func recv(t *testing.T, tr Transport) Message {
	t.Helper()
	select {
	case m, ok := <-tr.Inbox():
		require.True(t, ok, "inbox closed")
		return m
	case <-time.After(tcpWait):
		require.FailNow(t, "no message")
		return Message{}
	}
}

// requireQuiet checks that nothing arrives in tr's Inbox for a while.
func requireQuiet(t *testing.T, tr Transport, d time.Duration) {
	t.Helper()
	select {
	case m := <-tr.Inbox():
		require.FailNow(t, "unexpected message", "%+v", m)
	case <-time.After(d):
	}
}

func tcpRequest(from, to kraft.NodeID, corr uint64) Message {
	return Message{
		From: from, To: to, Corr: corr, HighWatermark: 42,
		Event: kraft.ReceiveFetch{From: from, FetchOffset: int64(corr), FetchEpoch: 3},
	}
}

func tcpResponse(req Message) Message {
	return Message{
		From: req.To, To: req.From, Corr: req.Corr, Response: true,
		Event:   kraft.ReceiveFetchResponse{From: req.To, LeaderID: req.To, LeaderEpoch: 3, HighWatermark: 7, Diverging: &kraft.LogOffsetMetadata{Offset: 1, Epoch: 2}},
		Records: []storage.Entry{{Offset: 5, Epoch: 3, Data: []byte("record")}},
	}
}

// sendUntil sends m again and again until a message with m's Corr
// arrives at to, and returns it. For a message that may be lost while a
// connection is being replaced. Copies of m sent before the one that
// arrived may arrive after it.
func sendUntil(t *testing.T, from, to Transport, m Message) Message {
	t.Helper()
	deadline := time.Now().Add(tcpWait)
	for time.Now().Before(deadline) {
		from.Send(m)
		select {
		case got := <-to.Inbox():
			if got.Corr == m.Corr {
				return got
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
	require.FailNow(t, "message never arrived")
	return Message{}
}

func TestTCPRequestResponse(t *testing.T) {
	b := newTCP(t, 2, nil) // b knows no address for a: it can only answer
	a := newTCP(t, 1, map[kraft.NodeID]string{2: b.Addr().String()})

	for corr := uint64(1); corr <= 3; corr++ {
		req := tcpRequest(1, 2, corr)
		a.Send(req)
		got := recv(t, b)
		require.Equal(t, req, got)

		resp := tcpResponse(got)
		b.Send(resp)
		require.Equal(t, resp, recv(t, a))
	}
	// b never dialed a: a accepted nothing, and holds one connection, to b.
	require.Equal(t, 1, a.l.Conns())
	a.mu.Lock()
	require.Empty(t, a.routes)
	a.mu.Unlock()
	require.Zero(t, a.Dropped())
	require.Zero(t, b.Dropped())
}

func TestTCPThreeTransports(t *testing.T) {
	var trs [4]*TCPTransport
	addrs := map[kraft.NodeID]string{}
	for id := kraft.NodeID(1); id <= 3; id++ {
		trs[id] = newTCP(t, id, nil)
		addrs[id] = trs[id].Addr().String()
	}
	for id := kraft.NodeID(1); id <= 3; id++ {
		for peer, addr := range addrs {
			if peer != id {
				trs[id].SetPeer(peer, addr)
			}
		}
	}

	// Every replica sends a request to each other one, and answers every
	// request it gets.
	for from := kraft.NodeID(1); from <= 3; from++ {
		for to := kraft.NodeID(1); to <= 3; to++ {
			if to != from {
				trs[from].Send(tcpRequest(from, to, uint64(10*from+to)))
			}
		}
	}
	type key struct {
		at   kraft.NodeID
		from kraft.NodeID
		resp bool
	}
	got := map[key]Message{}
	deadline := time.After(tcpWait)
	for len(got) < 12 { // two requests and two responses at each
		var m Message
		var at kraft.NodeID
		select {
		case m = <-trs[1].Inbox():
			at = 1
		case m = <-trs[2].Inbox():
			at = 2
		case m = <-trs[3].Inbox():
			at = 3
		case <-deadline:
			require.FailNow(t, "messages missing", "got %d", len(got))
		}
		require.Equal(t, at, m.To)
		k := key{at, m.From, m.Response}
		require.NotContains(t, got, k)
		got[k] = m
		if !m.Response {
			trs[at].Send(tcpResponse(m))
		}
	}
	for at := kraft.NodeID(1); at <= 3; at++ {
		for from := kraft.NodeID(1); from <= 3; from++ {
			if at == from {
				continue
			}
			req := tcpRequest(from, at, uint64(10*from+at))
			require.Equal(t, req, got[key{at, from, false}])
			require.Equal(t, tcpResponse(tcpRequest(at, from, uint64(10*at+from))), got[key{at, from, true}])
		}
		// One connection dialed to each peer and one accepted from each:
		// responses opened none of their own.
		require.Equal(t, 4, trs[at].l.Conns())
		trs[at].mu.Lock()
		require.Len(t, trs[at].routes, 2)
		trs[at].mu.Unlock()
	}
}

// rawHello is the hello frame a dialer with id sends.
func rawHello(id kraft.NodeID) []byte {
	var b bytes.Buffer
	p := append([]byte("KRFT"), 1, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(p[5:], uint32(id))
	if err := WriteFrame(&b, p); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func TestTCPResponseOnRequestConnection(t *testing.T) {
	b := newTCP(t, 2, map[kraft.NodeID]string{})

	// A client of our own, that reads what comes back on its connection.
	conn, err := net.Dial("tcp", b.Addr().String())
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	req := tcpRequest(9, 2, 77)
	frame, err := appendFrame(rawHello(9), req)
	require.NoError(t, err)
	_, err = conn.Write(frame)
	require.NoError(t, err)
	require.Equal(t, req, recv(t, b))

	resp := tcpResponse(req)
	b.Send(resp)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(tcpWait)))
	r := bufio.NewReader(conn)
	payload, err := ReadFrame(r)
	require.NoError(t, err)
	got, err := DecodeMessage(payload)
	require.NoError(t, err)
	require.Equal(t, resp, got)

	// Once the connection is gone, a response to 9 is dropped.
	_ = conn.Close()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.routes) == 0
	}, tcpWait, time.Millisecond)
	before := b.Dropped()
	b.Send(resp)
	require.Equal(t, before+1, b.Dropped())
}

func TestTCPResponseWithoutRequestDropped(t *testing.T) {
	b := newTCP(t, 2, nil)
	a := newTCP(t, 1, map[kraft.NodeID]string{2: b.Addr().String()})

	// a has an address for 2 but 2 never sent it a request: the response
	// has no connection to go on.
	a.Send(tcpResponse(tcpRequest(2, 1, 1)))
	require.Equal(t, uint64(1), a.Dropped())
	requireQuiet(t, b, 50*time.Millisecond)

	// Nor do unknown peers, the local id or non-message events get sent.
	a.Send(tcpRequest(1, 3, 1))
	a.Send(tcpRequest(1, 1, 1))
	a.Send(Message{From: 1, To: 2, Event: kraft.ElectionTimeout{}})
	require.Equal(t, uint64(4), a.Dropped())
	requireQuiet(t, b, 50*time.Millisecond)
}

func TestTCPReconnect(t *testing.T) {
	b := newTCP(t, 2, nil)
	addr := b.Addr().String()
	a := newTCP(t, 1, map[kraft.NodeID]string{2: addr})

	a.Send(tcpRequest(1, 2, 1))
	require.Equal(t, uint64(1), recv(t, b).Corr)

	require.NoError(t, b.Close())
	// While b is away, requests are lost (and Send does not block).
	for i := 0; i < 100; i++ {
		a.Send(tcpRequest(1, 2, 2))
	}

	b2, err := NewTCPTransport(TCPConfig{ID: 2, Listen: addr})
	require.NoError(t, err)
	defer closeWithin(t, b2, tcpWait)
	got := sendUntil(t, a, b2, tcpRequest(1, 2, 3))
	require.Equal(t, tcpRequest(1, 2, 3), got)

	// The response goes back on the new connection.
	b2.Send(tcpResponse(got))
	for {
		m := recv(t, a)
		if m.Response {
			require.Equal(t, tcpResponse(got), m)
			break
		}
	}
}

func TestTCPSetPeer(t *testing.T) {
	b1 := newTCP(t, 2, nil)
	b2 := newTCP(t, 2, nil)
	a := newTCP(t, 1, map[kraft.NodeID]string{2: b1.Addr().String()})

	a.Send(tcpRequest(1, 2, 1))
	require.Equal(t, uint64(1), recv(t, b1).Corr)

	a.SetPeer(2, b2.Addr().String())
	require.Equal(t, uint64(2), sendUntil(t, a, b2, tcpRequest(1, 2, 2)).Corr)
	a.Send(tcpRequest(1, 2, 3))
	// sendUntil sends request 2 again after 20 ms without it: on a loaded
	// machine a copy may still be on its way, ahead of request 3.
	m := recv(t, b2)
	for m.Corr == 2 {
		m = recv(t, b2)
	}
	require.Equal(t, uint64(3), m.Corr)
	requireQuiet(t, b1, 50*time.Millisecond)

	// Forgetting the peer drops its requests.
	a.SetPeer(2, "")
	before := a.Dropped()
	require.Eventually(t, func() bool {
		a.Send(tcpRequest(1, 2, 4))
		return a.Dropped() > before
	}, tcpWait, 5*time.Millisecond)
}

// sendHang is how long sendMany waits before it calls the sends hung. It
// tells a Send that blocks (it would wait for ever) from a slow one, not
// a fast Send from a slow one: a race build on a loaded machine took more
// than 2 s for 10,000 sends of 4 KiB.
const sendHang = 30 * time.Second

// sendMany sends n requests from tr to peer 2, failing if that takes
// longer than d.
func sendMany(t *testing.T, tr *TCPTransport, n int, data []byte, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			m := tcpRequest(1, 2, uint64(i))
			m.Records = []storage.Entry{{Data: data}}
			tr.Send(m)
		}
	}()
	select {
	case <-done:
	case <-time.After(d):
		require.FailNow(t, "Send blocked")
	}
}

func TestTCPSendNeverBlocks(t *testing.T) {
	t.Run("peer down", func(t *testing.T) {
		a := newTCP(t, 1, map[kraft.NodeID]string{2: refusedAddr(t)})
		sendMany(t, a, 10000, nil, sendHang)
		require.Eventually(t, func() bool { return a.Dropped() >= 10000 }, tcpWait, time.Millisecond)
	})
	t.Run("peer does not read", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer func() { _ = ln.Close() }()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				accepted <- c
			}
		}()
		a := newTCP(t, 1, map[kraft.NodeID]string{2: ln.Addr().String()})
		// 10,000 messages of 4 KiB are far more than the socket buffers
		// and the queue hold.
		sendMany(t, a, 10000, make([]byte, 4096), sendHang)
		require.Eventually(t, func() bool { return a.Dropped() > 0 }, tcpWait, time.Millisecond)
		select {
		case c := <-accepted:
			defer func() { _ = c.Close() }()
		case <-time.After(tcpWait):
			require.FailNow(t, "never dialed")
		}
		closeWithin(t, a, time.Second) // Close does not hang on the stuck write
	})
}

func TestTCPBadConnections(t *testing.T) {
	b, err := NewTCPTransport(TCPConfig{ID: 2, Listen: "127.0.0.1:0", DialTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	defer closeWithin(t, b, tcpWait)
	hello := rawHello(1)
	bigHeader := []byte{0x7f, 0xff, 0xff, 0xff}
	badMessage := func() []byte {
		var buf bytes.Buffer
		require.NoError(t, WriteFrame(&buf, []byte{1, 2, 3}))
		return buf.Bytes()
	}()
	for name, data := range map[string][]byte{
		"garbage":             []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"wrong magic":         append([]byte{0, 0, 0, 9}, "KRFX\x01\x00\x00\x00\x01"...),
		"wrong version":       append([]byte{0, 0, 0, 9}, "KRFT\x02\x00\x00\x00\x01"...),
		"huge hello":          bigHeader,
		"huge frame":          append(append([]byte{}, hello...), bigHeader...),
		"undecodable message": append(append([]byte{}, hello...), badMessage...),
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", b.Addr().String())
			require.NoError(t, err)
			defer func() { _ = conn.Close() }()
			_, err = conn.Write(data)
			require.NoError(t, err)
			// The transport hangs up.
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(tcpWait)))
			_, err = conn.Read(make([]byte, 1))
			require.Error(t, err)
			require.False(t, isTimeout(err), "the transport did not close the connection")
		})
	}
	// A silent client is cut off after the hello timeout (DialTimeout).
	start := time.Now()
	conn, err := net.Dial("tcp", b.Addr().String())
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(tcpWait)))
	_, err = conn.Read(make([]byte, 1))
	require.False(t, isTimeout(err), "the transport did not close the connection")
	require.Greater(t, int64(time.Since(start)), int64(50*time.Millisecond))

	// And b still works.
	a := newTCP(t, 1, map[kraft.NodeID]string{2: b.Addr().String()})
	a.Send(tcpRequest(1, 2, 5))
	require.Equal(t, tcpRequest(1, 2, 5), recv(t, b))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// closeWithin closes tr and drains its Inbox, failing if either takes
// longer than d.
func closeWithin(t *testing.T, tr *TCPTransport, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		err := tr.Close()
		for range tr.Inbox() { // closed after what is left
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(d):
		require.FailNow(t, "Close did not return, or did not close Inbox")
	}
}

func TestTCPCloseNoLeak(t *testing.T) {
	start := runtime.NumGoroutine()

	var trs []*TCPTransport
	mk := func(id kraft.NodeID, peers map[kraft.NodeID]string) *TCPTransport {
		tr, err := NewTCPTransport(TCPConfig{ID: id, Listen: "127.0.0.1:0", Peers: peers, ReconnectBackoff: time.Hour})
		require.NoError(t, err)
		trs = append(trs, tr)
		return tr
	}
	deadAddr := refusedAddr(t)

	// A peer that accepts a connection and holds it open without a word.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = mute.Close() }()
	muted := make(chan net.Conn, 1)
	go func() {
		c, err := mute.Accept()
		if err == nil {
			muted <- c
		}
		close(muted)
	}()

	c := mk(3, nil)
	b := mk(2, map[kraft.NodeID]string{3: c.Addr().String()})
	a := mk(1, map[kraft.NodeID]string{2: b.Addr().String(), 3: c.Addr().String(), 4: deadAddr, 5: mute.Addr().String()})
	b.SetPeer(1, a.Addr().String())
	for _, to := range []kraft.NodeID{2, 3, 4, 5} {
		a.Send(tcpRequest(1, to, 1))
	}
	b.Send(tcpRequest(2, 1, 2))
	b.Send(tcpRequest(2, 3, 3))
	for i := 0; i < 2; i++ {
		m := recv(t, c)
		c.Send(tcpResponse(m))
	}
	recv(t, b)
	recv(t, a)
	// A client that says hello, sends a request and then holds its
	// connection open.
	client, err := net.Dial("tcp", a.Addr().String())
	require.NoError(t, err)
	defer func() { _ = client.Close() }()
	frame, err := appendFrame(rawHello(6), tcpRequest(6, 1, 1))
	require.NoError(t, err)
	_, err = client.Write(frame)
	require.NoError(t, err)
	// Let the dial to 4 fail: its writer now waits out an hour of backoff,
	// which Close must cut short. Messages stay unread in the inboxes.
	deadline := time.Now().Add(tcpWait)
	for a.Dropped() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.NotZero(t, a.Dropped())
	b.Send(tcpRequest(2, 1, 4))
	conn, ok := <-muted
	require.True(t, ok, "a dialed the mute peer")
	defer func() { _ = conn.Close() }()
	require.Greater(t, runtime.NumGoroutine(), start)

	for _, tr := range trs {
		closeWithin(t, tr, time.Second)
		require.NoError(t, tr.Close(), "a second Close does nothing")
		tr.Send(tcpRequest(tr.cfg.ID, 2, 9)) // dropped, no panic
	}
	deadline = time.Now().Add(time.Second)
	for runtime.NumGoroutine() > start && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > start {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		require.FailNow(t, "goroutines leaked", "%d at the start, %d now:\n%s", start, n, buf)
	}
}

// TestTCPSetPeerSameAddress: setting the address a peer already has keeps
// its connection (the runtime sets the voter set's addresses as its
// records come).
func TestTCPSetPeerSameAddress(t *testing.T) {
	b := newTCP(t, 2, nil)
	a := newTCP(t, 1, map[kraft.NodeID]string{2: b.Addr().String()})
	a.Send(tcpRequest(1, 2, 1))
	require.Equal(t, uint64(1), recv(t, b).Corr)
	conn := a.l.PeerConn(2)
	require.NotNil(t, conn)
	a.SetPeer(2, b.Addr().String())
	require.False(t, conn.IsShut(), "the connection was closed")
	a.Send(tcpRequest(1, 2, 2))
	require.Equal(t, uint64(2), recv(t, b).Corr)
}

// TestTCPLogsDrops: a message the codec refuses is dropped, counted and
// logged each time; the other drops are logged at the 1st, 2nd, 4th...
func TestTCPLogsDrops(t *testing.T) {
	var log logLines
	tr, err := NewTCPTransport(TCPConfig{ID: 1, Listen: "127.0.0.1:0", Logf: log.logf})
	require.NoError(t, err)
	t.Cleanup(func() { closeWithin(t, tr, tcpWait) })
	tr.Send(Message{From: 1, To: 2, Event: kraft.ReceiveRemoveVoter{From: 1}, Endpoint: "x"})
	tr.Send(Message{From: 1, To: 2, Event: kraft.ReceiveRemoveVoter{From: 1}, Endpoint: "x"})
	require.Equal(t, uint64(2), tr.Dropped())
	lines := log.get()
	require.Len(t, lines, 2)
	require.Contains(t, lines[1], "endpoint with kraft.ReceiveRemoveVoter")
	for i := uint64(0); i < 6; i++ {
		tr.Send(tcpRequest(1, 7, i)) // no address for 7
	}
	require.Equal(t, uint64(8), tr.Dropped())
	require.Len(t, log.get(), 2+2, "the 4th and 8th drop are logged")
	require.Contains(t, log.get()[3], "no connection or address for 7")
}
