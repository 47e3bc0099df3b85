package node

import (
	"context"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// BenchmarkCommittedAppends measures committed appends per second on a
// three-voter cluster in one process, with clients appending 100-byte
// records (KRAFT_NODE_BENCH_RECORD bytes if set) concurrently at the
// leader: over the in-memory transport or TCP on loopback, with in-memory
// logs or file logs (every flush an fsync, group commit). b.N is the
// number of appends.
func BenchmarkCommittedAppends(b *testing.B) {
	for _, tr := range []string{"mem", "tcp"} {
		for _, lg := range []string{"memlog", "filelog"} {
			for _, clients := range []int{1, 64} {
				b.Run(fmt.Sprintf("transport=%s/log=%s/clients=%d", tr, lg, clients), func(b *testing.B) {
					benchAppends(b, tr, lg, clients)
				})
			}
		}
	}
}

func benchAppends(b *testing.B, tr, lg string, clients int) {
	voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
	mem := NewMemNetwork()
	tcps := map[kraft.NodeID]*TCPTransport{}
	if tr == "tcp" {
		for _, v := range voters {
			t, err := NewTCPTransport(TCPConfig{ID: v.ID, Listen: "127.0.0.1:0"})
			if err != nil {
				b.Fatal(err)
			}
			tcps[v.ID] = t
		}
		connectTCP(tcps)
	}
	var nodes []*Node
	for _, v := range voters {
		var log storage.Log = storage.NewMemLog()
		if lg == "filelog" {
			fl, _, err := storage.Open(filepath.Join(b.TempDir(), "log"), storage.Options{})
			if err != nil {
				b.Fatal(err)
			}
			log = fl
		}
		var t Transport = mem.EndpointBuffer(v.ID, 8192)
		if tr == "tcp" {
			t = tcps[v.ID]
		}
		n, err := Start(Config{Config: replica.Config{Kraft: kraft.Config{Local: v, Voters: voters, Seed: uint64(v.ID)},
			Log:     log,
			Records: &MemRecords{}}, Transport: t,
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
	leader := benchLeader(b, nodes)
	size := 100
	if s := os.Getenv("KRAFT_NODE_BENCH_RECORD"); s != "" {
		if _, err := fmt.Sscan(s, &size); err != nil || size < 1 {
			b.Fatalf("KRAFT_NODE_BENCH_RECORD=%q: want a size in bytes", s)
		}
	}
	rec := make([]byte, size)
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
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	b.ReportMetric(float64(per*clients)/time.Since(start).Seconds(), "appends/s")
}

func benchLeader(b *testing.B, nodes []*Node) *Node {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if _, err := n.Append(context.Background(), []byte("warm-up")); err == nil {
				return n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatal("no leader")
	return nil
}

// connectTCP tells each transport of trs the listening address of every
// other one.
func connectTCP(trs map[kraft.NodeID]*TCPTransport) {
	for id, tr := range trs {
		for peer, o := range trs {
			if peer != id {
				tr.SetPeer(peer, o.Addr().String())
			}
		}
	}
}

// BenchmarkReadsVersusWrites measures, in one run on three in-memory
// nodes (in-memory logs and transport), linearizable reads per second
// (ReadIndex) and committed appends per second (Append, 100-byte records),
// each with 16 concurrent callers at the leader for the same time, and
// reports their ratio. b.N scales the time: each phase runs b.N
// milliseconds (at least 200).
func BenchmarkReadsVersusWrites(b *testing.B) {
	const callers = 16
	voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
	mem := NewMemNetwork()
	var nodes []*Node
	for _, v := range voters {
		n, err := Start(Config{Config: replica.Config{Kraft: kraft.Config{Local: v, Voters: voters, Seed: uint64(v.ID)},
			Log:     storage.NewMemLog(),
			Records: &MemRecords{}}, Transport: mem.EndpointBuffer(v.ID, 8192),
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
	leader := benchLeader(b, nodes)
	phase := time.Duration(b.N) * time.Millisecond
	if phase < 200*time.Millisecond {
		phase = 200 * time.Millisecond
	}
	rec := make([]byte, 100)
	rate := func(op func() error) float64 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		var first error
		start := time.Now()
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				done := 0
				for time.Since(start) < phase {
					if err := op(); err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
						return
					}
					done++
				}
				mu.Lock()
				total += done
				mu.Unlock()
			}()
		}
		wg.Wait()
		if first != nil {
			b.Fatal(first)
		}
		return float64(total) / time.Since(start).Seconds()
	}
	b.ResetTimer()
	writes := rate(func() error {
		_, err := leader.Append(context.Background(), rec)
		return err
	})
	reads := rate(func() error {
		_, err := leader.ReadIndex(context.Background())
		return err
	})
	b.StopTimer()
	b.ReportMetric(writes, "writes/s")
	b.ReportMetric(reads, "reads/s")
	b.ReportMetric(reads/writes, "reads/writes")
}
