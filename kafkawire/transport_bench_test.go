package kafkawire

import (
	"context"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/storage"
)

// benchTransport is one of the two transports compared: Kafka's protocol
// (Transport) or kraft's own codec (node.TCPTransport), both TCP on
// loopback.
type benchTransport interface {
	node.Transport
	SetPeer(id kraft.NodeID, addr string)
	Addr() net.Addr
}

func newBenchTransport(b *testing.B, kind string, id kraft.NodeID) benchTransport {
	var t benchTransport
	var err error
	switch kind {
	case "kafka":
		t, err = NewTransport(TransportConfig{ID: id, Listen: "127.0.0.1:0"})
	case "kraft":
		t, err = node.NewTCPTransport(node.TCPConfig{ID: id, Listen: "127.0.0.1:0"})
	}
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// BenchmarkFetchRoundTrip is one Fetch request and its response (100
// records of 100 bytes, or none) between two transports: encoding,
// loopback TCP both ways and decoding, without the replicas.
func BenchmarkFetchRoundTrip(b *testing.B) {
	for _, kind := range []string{"kafka", "kraft"} {
		for _, n := range []int{0, 100} {
			b.Run(fmt.Sprintf("transport=%s/records=%d", kind, n), func(b *testing.B) {
				client, server := newBenchTransport(b, kind, 1), newBenchTransport(b, kind, 2)
				defer client.Close()
				defer server.Close()
				client.SetPeer(2, server.Addr().String())
				var records []storage.Entry
				if n > 0 {
					records = benchEntries()[:n]
				}
				go func() {
					for m := range server.Inbox() {
						server.Send(node.Message{From: 2, To: m.From, Corr: m.Corr, Response: true, Records: records,
							Event: kraft.ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 3, HighWatermark: 1000}})
					}
				}()
				req := node.Message{From: 1, To: 2, Event: kraft.ReceiveFetch{From: 1, CurrentLeaderEpoch: 3, FetchOffset: 1000, FetchEpoch: 3}}
				// The first request dials (and, in Kafka's protocol,
				// exchanges ApiVersions).
				roundTrip := func(corr uint64) {
					req.Corr = corr
					for {
						client.Send(req)
						select {
						case m := <-client.Inbox():
							if m.Corr != corr {
								b.Fatalf("corr %d, want %d", m.Corr, corr)
							}
							return
						case <-time.After(time.Second):
						}
					}
				}
				roundTrip(1)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					roundTrip(uint64(i + 2))
				}
			})
		}
	}
}

// countingProxy forwards loopback connections to target and counts the
// bytes both ways.
type countingProxy struct {
	ln    net.Listener
	bytes atomic.Int64
	wg    sync.WaitGroup
}

func newCountingProxy(b *testing.B, target string) *countingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			cp := func(dst, src net.Conn) {
				_, _ = io.Copy(countingWriter{dst, &p.bytes}, src)
				dst.Close()
				src.Close()
			}
			go cp(t, c)
			go cp(c, t)
		}
	}()
	return p
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// BenchmarkQuorumAppends is committed appends per second of a three-voter
// quorum of runtimes (node.Node, in-memory logs) over loopback TCP in
// Kafka's protocol and in kraft's own, with 1 or 64 clients appending
// 100-byte records at the leader; with one client an append's latency is
// about one fetch round trip more than the leader's own work. With
// proxy=true the peers reach each other through byte-counting proxies,
// and wire-B/record is every byte on the wire (requests, responses,
// ApiVersions, both directions) per committed record.
func BenchmarkQuorumAppends(b *testing.B) {
	for _, proxy := range []bool{false, true} {
		for _, kind := range []string{"kafka", "kraft"} {
			for _, clients := range []int{1, 64} {
				b.Run(fmt.Sprintf("proxy=%v/transport=%s/clients=%d", proxy, kind, clients), func(b *testing.B) {
					benchQuorum(b, kind, clients, proxy)
				})
			}
		}
	}
}

func benchQuorum(b *testing.B, kind string, clients int, proxy bool) {
	voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
	trs := map[kraft.NodeID]benchTransport{}
	for _, v := range voters {
		trs[v.ID] = newBenchTransport(b, kind, v.ID)
	}
	var proxies []*countingProxy
	for _, v := range voters {
		addr := trs[v.ID].Addr().String()
		if proxy {
			p := newCountingProxy(b, addr)
			proxies = append(proxies, p)
			defer p.ln.Close()
			addr = p.ln.Addr().String()
		}
		for _, o := range voters {
			if o.ID != v.ID {
				trs[o.ID].SetPeer(v.ID, addr)
			}
		}
	}
	var nodes []*node.Node
	for _, v := range voters {
		n, err := node.Start(node.Config{Config: replica.Config{Kraft: kraft.Config{Local: v, Voters: voters, Seed: uint64(v.ID)},
			Log: storage.NewMemLog(), Records: &node.MemRecords{}}, Transport: trs[v.ID],
		})
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	defer func() {
		for _, n := range nodes {
			_ = n.Close()
		}
	}()
	var leader *node.Node
	for deadline := time.Now().Add(20 * time.Second); leader == nil && time.Now().Before(deadline); {
		for _, n := range nodes {
			if _, err := n.Append(context.Background(), []byte("warm-up")); err == nil {
				leader = n
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if leader == nil {
		b.Fatal("no leader")
	}
	var before int64
	for _, p := range proxies {
		before += p.bytes.Load()
	}
	rec := make([]byte, 100)
	b.SetBytes(int64(len(rec)))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := (b.N + clients - 1) / clients
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if _, err := leader.Append(context.Background(), rec); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(per*clients)/elapsed.Seconds(), "appends/s")
	if proxy {
		// Let the last responses through the proxies.
		time.Sleep(50 * time.Millisecond)
		var after int64
		for _, p := range proxies {
			after += p.bytes.Load()
		}
		b.ReportMetric(float64(after-before)/float64(per*clients), "wire-B/record")
	}
}
