package node

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// soakEnv runs TestNodeSoak for the duration it holds, for example
//
//	KRAFT_NODE_SOAK=3m go test ./node -run TestNodeSoak -v -timeout 30m
//
// KRAFT_NODE_SOAK_EVERY sets the sampling interval (default 5s) and
// KRAFT_NODE_SOAK_CLIENTS the number of appending clients (default 16).
const soakEnv = "KRAFT_NODE_SOAK"

// soakSample is what TestNodeSoak measures at the end of an interval.
type soakSample struct {
	at         time.Duration
	goroutines int
	heap       uint64 // HeapAlloc after a GC
	fds        int    // open files, segment files of the logs excluded
	segments   int    // segment files of the three logs
	appends    int
	p50, p99   time.Duration
	max        time.Duration
}

// TestNodeSoak runs three replicas (TCP on loopback, file logs with group
// commit, Kafka's default timeouts) in this process under continuous
// appends from many clients for KRAFT_NODE_SOAK, sampling goroutines, the
// heap after a GC and the open files every few seconds, and the append
// latencies of each interval. After a warm-up it requires the goroutines,
// the heap and the open files to stay flat (bounded growth), and at the
// end every acknowledged append to be at its offset in every replica's
// log.
func TestNodeSoak(t *testing.T) {
	env := os.Getenv(soakEnv)
	if env == "" {
		t.Skipf("set %s to a duration to run the soak test", soakEnv)
	}
	dur, err := time.ParseDuration(env)
	require.NoError(t, err, soakEnv)
	every := 5 * time.Second
	if s := os.Getenv(soakEnv + "_EVERY"); s != "" {
		every, err = time.ParseDuration(s)
		require.NoError(t, err)
	}
	clients := 16
	if s := os.Getenv(soakEnv + "_CLIENTS"); s != "" {
		_, err = fmt.Sscan(s, &clients)
		require.NoError(t, err)
	}

	voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
	dirs := map[kraft.NodeID]string{}
	trs := map[kraft.NodeID]*TCPTransport{}
	for _, v := range voters {
		dirs[v.ID] = t.TempDir()
		tr, err := NewTCPTransport(TCPConfig{ID: v.ID, Listen: "127.0.0.1:0", Logf: t.Logf})
		require.NoError(t, err)
		trs[v.ID] = tr
	}
	connectTCP(trs)
	var nodes []*Node
	closed := false
	closeAll := func() {
		if closed {
			return
		}
		closed = true
		for _, n := range nodes {
			require.NoError(t, n.Close())
		}
	}
	defer closeAll()
	for _, v := range voters {
		lg, _, err := storage.Open(filepath.Join(dirs[v.ID], "log"), storage.Options{})
		require.NoError(t, err)
		n, err := Start(Config{Config: replica.Config{Kraft: kraft.Config{Local: v, Voters: voters, Seed: uint64(v.ID) * 104729},
			Log:     lg,
			Records: FileRecords{Path: storage.QuorumStatePath(dirs[v.ID])}}, Transport: trs[v.ID],
			Logf: t.Logf,
		})
		require.NoError(t, err)
		nodes = append(nodes, n)
	}

	// The leader, found again whenever an append names another.
	var leader atomic.Value
	findLeader := func() *Node {
		for {
			for _, n := range nodes {
				if st, err := n.Status(); err == nil && st.Role == "Leader" {
					leader.Store(n)
					return n
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	findLeader()

	// Latencies of the current interval.
	var latMu sync.Mutex
	var lats []time.Duration

	// Each client writes its acknowledged appends (offset, sequence
	// number) to a file of its own, not to the heap being measured.
	ackDir := t.TempDir()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failed int64
	for c := 0; c < clients; c++ {
		f, err := os.Create(filepath.Join(ackDir, fmt.Sprintf("acks-%02d", c)))
		require.NoError(t, err)
		wg.Add(1)
		go func(c int, f *os.File) {
			defer wg.Done()
			w := bufio.NewWriter(f)
			defer func() {
				if err := w.Flush(); err != nil {
					panic(err)
				}
				if err := f.Close(); err != nil {
					panic(err)
				}
			}()
			var rec [16]byte
			for seq := uint64(0); ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				l := leader.Load().(*Node)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				start := time.Now()
				off, err := l.Append(ctx, soakPayload(c, seq))
				took := time.Since(start)
				cancel()
				if err != nil {
					// Not appended (not the leader) or outcome unknown:
					// the sequence number is not used again either way.
					atomic.AddInt64(&failed, 1)
					if errors.Is(err, ErrNotLeader) || errors.Is(err, ErrLeadershipLost) {
						findLeader()
					}
					continue
				}
				latMu.Lock()
				lats = append(lats, took)
				latMu.Unlock()
				binary.BigEndian.PutUint64(rec[:8], uint64(off))
				binary.BigEndian.PutUint64(rec[8:], seq)
				if _, err := w.Write(rec[:]); err != nil {
					panic(err)
				}
			}
		}(c, f)
	}

	var samples []soakSample
	began := time.Now()
	tick := time.NewTicker(every)
	for time.Since(began) < dur {
		<-tick.C
		latMu.Lock()
		cur := lats
		lats = make([]time.Duration, 0, len(cur))
		latMu.Unlock()
		s := soakSample{at: time.Since(began).Round(time.Second), appends: len(cur), goroutines: runtime.NumGoroutine()}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s.heap = ms.HeapAlloc
		s.segments = soakSegments(t, dirs)
		s.fds = soakOpenFiles(t) - s.segments
		if len(cur) > 0 {
			sort.Slice(cur, func(i, j int) bool { return cur[i] < cur[j] })
			s.p50, s.p99, s.max = cur[len(cur)/2], cur[len(cur)*99/100], cur[len(cur)-1]
		}
		samples = append(samples, s)
		t.Logf("soak %4s: %6d appends (%6.0f/s), latency p50 %-9v p99 %-9v max %-9v; %4d goroutines, heap %6.1f MB, %3d open files + %d segments",
			s.at, s.appends, float64(s.appends)/every.Seconds(), s.p50.Round(10*time.Microsecond), s.p99.Round(10*time.Microsecond),
			s.max.Round(10*time.Microsecond), s.goroutines, float64(s.heap)/(1<<20), s.fds, s.segments)
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	t.Logf("soak: %d appends failed or were refused (leader changes, not counted as acknowledged)", atomic.LoadInt64(&failed))

	// After the warm-up (a fifth of the run, at least two samples) the
	// figures stay flat: goroutines within a few, the heap within a
	// quarter and 16 MB of its early level, the open files the same.
	require.GreaterOrEqual(t, len(samples), 4, "run the soak for at least four intervals")
	warm := len(samples) / 5
	if warm < 2 {
		warm = 2
	}
	steady := samples[warm:]
	third := (len(steady) + 2) / 3
	var minG, maxG, minF, maxF int
	var earlyHeap, lateHeap uint64
	for i, s := range steady {
		if i == 0 || s.goroutines < minG {
			minG = s.goroutines
		}
		if s.goroutines > maxG {
			maxG = s.goroutines
		}
		if i == 0 || s.fds < minF {
			minF = s.fds
		}
		if s.fds > maxF {
			maxF = s.fds
		}
		if i < third && s.heap > earlyHeap {
			earlyHeap = s.heap
		}
		if i >= len(steady)-third && s.heap > lateHeap {
			lateHeap = s.heap
		}
		require.NotZero(t, s.appends, "no append acknowledged in the interval ending at %v", s.at)
	}
	t.Logf("soak steady state: goroutines %d-%d, open files %d-%d, heap %.1f MB early, %.1f MB late",
		minG, maxG, minF, maxF, float64(earlyHeap)/(1<<20), float64(lateHeap)/(1<<20))
	require.LessOrEqual(t, maxG-minG, 2*clients+16, "goroutines grow")
	require.LessOrEqual(t, maxF-minF, 8, "open files grow")
	require.LessOrEqual(t, lateHeap, earlyHeap+earlyHeap/4+16<<20, "the heap grows")

	// Every acknowledged append is at its offset on every replica.
	acks := soakAcks(t, ackDir, clients)
	require.NotEmpty(t, acks)
	last := acks[len(acks)-1].off
	for _, n := range nodes {
		require.Eventually(t, func() bool {
			st, err := n.Status()
			return err == nil && st.HighWatermark > last
		}, 30*time.Second, 10*time.Millisecond, "node %d did not commit offset %d", n.local.ID, last)
	}
	closeAll()
	for _, v := range voters {
		lg, _, err := storage.Open(filepath.Join(dirs[v.ID], "log"), storage.Options{})
		require.NoError(t, err)
		i := 0
		for from := acks[0].off; i < len(acks); {
			es, err := lg.Read(from, 8<<20)
			require.NoError(t, err)
			require.NotEmpty(t, es)
			for _, e := range es {
				for i < len(acks) && acks[i].off == e.Offset {
					want := append([]byte{recordData}, soakPayload(acks[i].client, acks[i].seq)...)
					require.Equal(t, want, e.Data, "node %d offset %d", v.ID, e.Offset)
					i++
				}
			}
			from = es[len(es)-1].Offset + 1
		}
		require.NoError(t, lg.Close())
	}
	t.Logf("soak: %d acknowledged appends over %v, each found at its offset on all 3 replicas", len(acks), dur)
}

// soakPayload is client c's record seq: 100 bytes.
func soakPayload(c int, seq uint64) []byte {
	b := make([]byte, 100)
	copy(b, fmt.Sprintf("client %02d record %012d ", c, seq))
	for i := 32; i < len(b); i++ {
		b[i] = byte(uint64(c)*31 + seq + uint64(i))
	}
	return b
}

type soakAck struct {
	off    int64
	client int
	seq    uint64
}

// soakAcks reads the clients' acknowledgement files, sorted by offset; an
// offset acknowledged twice fails the test.
func soakAcks(t *testing.T, dir string, clients int) []soakAck {
	var acks []soakAck
	for c := 0; c < clients; c++ {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("acks-%02d", c)))
		require.NoError(t, err)
		r := bufio.NewReader(f)
		var rec [16]byte
		for {
			if _, err := io.ReadFull(r, rec[:]); err != nil {
				require.ErrorIs(t, err, io.EOF)
				break
			}
			acks = append(acks, soakAck{off: int64(binary.BigEndian.Uint64(rec[:8])), client: c, seq: binary.BigEndian.Uint64(rec[8:])})
		}
		require.NoError(t, f.Close())
	}
	sort.Slice(acks, func(i, j int) bool { return acks[i].off < acks[j].off })
	for i := 1; i < len(acks); i++ {
		require.NotEqual(t, acks[i-1].off, acks[i].off, "offset acknowledged twice")
	}
	return acks
}

// soakOpenFiles counts this process's open file descriptors.
func soakOpenFiles(t *testing.T) int {
	des, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(des)
}

// soakSegments counts the segment files of the logs: a FileLog keeps each
// open, so they grow with the data, not with time.
func soakSegments(t *testing.T, dirs map[kraft.NodeID]string) int {
	n := 0
	for _, d := range dirs {
		m, err := filepath.Glob(filepath.Join(d, "log", "*.log"))
		require.NoError(t, err)
		n += len(m)
	}
	return n
}
