package node

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// memPing is a small request from one node to another.
func memPing(from, to kraft.NodeID, corr uint64) Message {
	return Message{From: from, To: to, Corr: corr, Event: kraft.ReceiveFetch{From: from, FetchOffset: int64(corr)}}
}

// requireInbox returns the next message in e's Inbox, failing if there is
// none.
func requireInbox(t *testing.T, e Transport) Message {
	t.Helper()
	select {
	case m, ok := <-e.Inbox():
		require.True(t, ok, "inbox closed")
		return m
	default:
		require.FailNow(t, "inbox empty")
		return Message{}
	}
}

func requireInboxEmpty(t *testing.T, e Transport) {
	t.Helper()
	select {
	case m, ok := <-e.Inbox():
		if ok {
			require.FailNow(t, "unexpected message", "%+v", m)
		}
	default:
	}
}

func TestMemDelivery(t *testing.T) {
	n := NewMemNetwork()
	a, b := n.Endpoint(1), n.Endpoint(2)
	require.Equal(t, kraft.NodeID(1), a.ID())

	diverging := &kraft.LogOffsetMetadata{Offset: 4, Epoch: 1}
	snapshot := &kraft.LogEnd{Offset: 9, Epoch: 2}
	m := Message{
		From: 1, To: 2, Corr: 5, Response: true,
		Event:   kraft.ReceiveFetchResponse{From: 1, LeaderID: 1, Diverging: diverging, Snapshot: snapshot},
		Records: []storage.Entry{{Offset: 3, Epoch: 1, Data: []byte("abc")}, {Offset: 4, Data: []byte{}}, {Offset: 5}},
	}
	a.Send(m)
	got := requireInbox(t, b)
	require.Equal(t, m, got)
	requireInboxEmpty(t, a)

	// The receiver got the sender's message itself, not a copy (D145):
	// the same payloads and event pointers, as hashicorp/raft's
	// InmemTransport hands over its *raft.Log values.
	require.Same(t, &m.Records[0].Data[0], &got.Records[0].Data[0])
	require.Same(t, &m.Records[0], &got.Records[0])
	ev := got.Event.(kraft.ReceiveFetchResponse)
	require.Same(t, diverging, ev.Diverging)
	require.Same(t, snapshot, ev.Snapshot)

	// A snapshot chunk is handed over too.
	chunk := []byte("snapshot bytes")
	a.Send(Message{From: 1, To: 2, Response: true, Event: kraft.ReceiveFetchSnapshotResponse{From: 1, Bytes: 14}, Chunk: chunk})
	got = requireInbox(t, b)
	require.Same(t, &chunk[0], &got.Chunk[0])

	// Both ways, in order.
	for i := uint64(0); i < 3; i++ {
		b.Send(memPing(2, 1, i))
	}
	for i := uint64(0); i < 3; i++ {
		require.Equal(t, memPing(2, 1, i), requireInbox(t, a))
	}
	require.Equal(t, uint64(5), n.Delivered())
	require.Zero(t, n.Dropped())
}

func TestMemUnknownAndClosedEndpoints(t *testing.T) {
	n := NewMemNetwork()
	a, b := n.Endpoint(1), n.Endpoint(2)

	a.Send(memPing(1, 3, 1)) // nobody is 3
	require.Equal(t, uint64(1), n.Dropped())

	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	_, ok := <-b.Inbox()
	require.False(t, ok, "Close closes Inbox")
	a.Send(memPing(1, 2, 2)) // b is closed
	require.Equal(t, uint64(2), n.Dropped())

	// A closed endpoint sends nothing.
	b.Send(memPing(2, 1, 3))
	requireInboxEmpty(t, a)
	require.Equal(t, uint64(3), n.Dropped())

	// A new endpoint for 2 gets 2's messages; a new one for 1 closes the
	// old one.
	b2 := n.Endpoint(2)
	a.Send(memPing(1, 2, 4))
	require.Equal(t, memPing(1, 2, 4), requireInbox(t, b2))
	a2 := n.Endpoint(1)
	_, ok = <-a.Inbox()
	require.False(t, ok)
	b2.Send(memPing(2, 1, 5))
	require.Equal(t, memPing(2, 1, 5), requireInbox(t, a2))
	require.NoError(t, a.Close()) // closing the replaced one leaves a2 in place
	b2.Send(memPing(2, 1, 6))
	require.Equal(t, memPing(2, 1, 6), requireInbox(t, a2))
}

func TestMemPartition(t *testing.T) {
	n := NewMemNetwork()
	ep := map[kraft.NodeID]*MemEndpoint{1: n.Endpoint(1), 2: n.Endpoint(2), 3: n.Endpoint(3)}
	// reach reports, for each ordered pair, whether a message gets through.
	reach := func() map[[2]kraft.NodeID]bool {
		r := map[[2]kraft.NodeID]bool{}
		for from := kraft.NodeID(1); from <= 3; from++ {
			for to := kraft.NodeID(1); to <= 3; to++ {
				if from == to {
					continue
				}
				ep[from].Send(memPing(from, to, 1))
				select {
				case m := <-ep[to].Inbox():
					require.Equal(t, from, m.From)
					r[[2]kraft.NodeID{from, to}] = true
				default:
					r[[2]kraft.NodeID{from, to}] = false
				}
			}
		}
		return r
	}
	all := func(up bool, except ...[2]kraft.NodeID) map[[2]kraft.NodeID]bool {
		r := map[[2]kraft.NodeID]bool{}
		for _, p := range [][2]kraft.NodeID{{1, 2}, {1, 3}, {2, 1}, {2, 3}, {3, 1}, {3, 2}} {
			r[p] = up
		}
		for _, p := range except {
			r[p] = !up
		}
		return r
	}

	require.Equal(t, all(true), reach())

	n.Partition(1, 2)
	require.Equal(t, all(true, [2]kraft.NodeID{1, 2}, [2]kraft.NodeID{2, 1}), reach())
	n.Heal()
	require.Equal(t, all(true), reach())

	n.Partition(3, 1)
	n.Partition(2, 3)
	require.Equal(t, all(false, [2]kraft.NodeID{1, 2}, [2]kraft.NodeID{2, 1}), reach())
	n.Heal()

	n.Isolate(2)
	require.Equal(t, all(false, [2]kraft.NodeID{1, 3}, [2]kraft.NodeID{3, 1}), reach())
	n.Heal()
	require.Equal(t, all(true), reach())

	n.Down(3)
	require.Equal(t, all(false, [2]kraft.NodeID{1, 2}, [2]kraft.NodeID{2, 1}), reach())
	n.Heal() // does not bring 3 back
	require.Equal(t, all(false, [2]kraft.NodeID{1, 2}, [2]kraft.NodeID{2, 1}), reach())
	n.Up(3)
	require.Equal(t, all(true), reach())
}

func TestMemDropWhenFull(t *testing.T) {
	n := NewMemNetwork()
	a, b := n.Endpoint(1), n.EndpointBuffer(2, 3)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := uint64(0); i < 10; i++ {
			a.Send(memPing(1, 2, i))
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		require.FailNow(t, "Send blocked on a full inbox")
	}
	for i := uint64(0); i < 3; i++ {
		require.Equal(t, i, requireInbox(t, b).Corr, "the first ones are kept")
	}
	requireInboxEmpty(t, b)
	require.Equal(t, uint64(3), n.Delivered())
	require.Equal(t, uint64(7), n.Dropped())

	// Room again after reading.
	a.Send(memPing(1, 2, 11))
	require.Equal(t, uint64(11), requireInbox(t, b).Corr)
}

func TestMemConcurrentSendAndClose(t *testing.T) {
	n := NewMemNetwork()
	b := n.EndpointBuffer(2, 16)
	var wg sync.WaitGroup
	for s := kraft.NodeID(10); s < 14; s++ {
		a := n.Endpoint(s)
		wg.Add(1)
		go func(a *MemEndpoint) {
			defer wg.Done()
			for i := uint64(0); i < 500; i++ {
				a.Send(memPing(a.ID(), 2, i))
			}
		}(a)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range b.Inbox() {
		}
	}()
	time.Sleep(time.Millisecond)
	require.NoError(t, b.Close())
	wg.Wait()
	require.Equal(t, uint64(4*500), n.Delivered()+n.Dropped())
}

// logLines collects what a Logf receives.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// TestMemRefusesWhatTheCodecRefuses: the in-memory network hands messages
// over without encoding them (D145), but what EncodeMessage refuses (an
// endpoint with a RemoveRaftVoter, an event that is not a message) is
// dropped, counted for the sender and logged, as TCP drops it, and the
// rest arrives as sent.
func TestMemRefusesWhatTheCodecRefuses(t *testing.T) {
	n := NewMemNetwork()
	var log logLines
	n.SetLogf(log.logf)
	a, b := n.Endpoint(1), n.Endpoint(2)

	remove := Message{From: 1, To: 2, Corr: 1, Event: kraft.ReceiveRemoveVoter{From: 1, Voter: kraft.ReplicaKey{ID: 3}}, Endpoint: "mem-3"}
	a.Send(remove)
	requireInboxEmpty(t, b)
	require.Equal(t, uint64(1), n.Dropped())
	require.Equal(t, uint64(1), a.Dropped())
	require.Zero(t, b.Dropped())
	a.Send(Message{From: 1, To: 2, Event: kraft.LogFlushed{Offset: 3}})
	requireInboxEmpty(t, b)
	require.Equal(t, uint64(2), a.Dropped())
	lines := log.get()
	require.Len(t, lines, 2, "every refused message is logged")
	require.Contains(t, lines[0], "endpoint with kraft.ReceiveRemoveVoter")
	require.Contains(t, lines[1], "not a message event")

	remove.Endpoint = ""
	a.Send(remove)
	require.Equal(t, remove, requireInbox(t, b))
	require.Equal(t, uint64(2), a.Dropped())

	// Unreachable: counted, and logged at the 1st, 2nd, 4th... drop.
	for i := uint64(0); i < 8; i++ {
		b.Send(memPing(2, 9, i))
	}
	require.Equal(t, uint64(8), b.Dropped())
	require.Len(t, log.get(), 2+4)
}

// TestNodeStatusCountsTransportDrops: Status reports what the node's
// transport dropped.
func TestNodeStatusCountsTransportDrops(t *testing.T) {
	c := newTestCluster(t, 1)
	nd := c.leader()
	nd.cfg.Transport.Send(Message{From: 1, To: 2, Event: kraft.ReceiveRemoveVoter{From: 1}, Endpoint: "x"})
	st, err := nd.Status()
	require.NoError(t, err)
	require.Equal(t, uint64(1), st.TransportDropped)
}

// TestMemSendAllocatesNothing: a message goes from one endpoint to another
// by reference (D145): Send neither encodes nor copies it, so a Fetch
// response with 64 records of 1 KiB allocates nothing on the way.
func TestMemSendAllocatesNothing(t *testing.T) {
	n := NewMemNetwork()
	a, b := n.Endpoint(1), n.Endpoint(2)
	recs := make([]storage.Entry, 64)
	for i := range recs {
		recs[i] = storage.Entry{Offset: int64(i), Epoch: 1, Data: make([]byte, 1024)}
	}
	m := Message{From: 1, To: 2, Corr: 7, Response: true,
		Event: kraft.ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 3}, Records: recs}
	allocs := testing.AllocsPerRun(100, func() {
		a.Send(m)
		<-b.Inbox()
	})
	require.Zero(t, allocs)
	require.Equal(t, uint64(101), n.Delivered())
}
