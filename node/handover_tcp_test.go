package node

import (
	"context"
	"github.com/kraftquorum/kraft/replica"
	"net"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// openMemLog is a MemLog whose Close leaves it open, so that a node
// restarted on it finds its records (a restart of a process whose log
// survived).
type openMemLog struct{ *storage.MemLog }

func (openMemLog) Close() error { return nil }

// TestMeasureShutdownHandovers measures graceful handovers as kraftd makes
// them on SIGTERM: three voters over TCP on loopback with kraftd's
// timeouts (T_e 1 s, T_f 2 s); the leader's Shutdown is timed until it
// returns, the node is started again, and the next leader is stopped.
// It runs only with KRAFT_HANDOVERS=N (N handovers) and prints the
// distribution: a measurement, not a check.
func TestMeasureShutdownHandovers(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("KRAFT_HANDOVERS"))
	if rounds <= 0 {
		t.Skip("set KRAFT_HANDOVERS=N to measure N handovers")
	}
	voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
	addrs := map[kraft.NodeID]string{}
	for _, v := range voters {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addrs[v.ID] = ln.Addr().String()
		require.NoError(t, ln.Close())
	}
	logs := map[kraft.NodeID]*storage.MemLog{}
	recs := map[kraft.NodeID]*MemRecords{}
	nodes := map[kraft.NodeID]*Node{}
	start := func(id kraft.NodeID) {
		peers := map[kraft.NodeID]string{}
		for pid, a := range addrs {
			if pid != id {
				peers[pid] = a
			}
		}
		var tr *TCPTransport
		var err error
		for i := 0; i < 50; i++ {
			if tr, err = NewTCPTransport(TCPConfig{ID: id, Listen: addrs[id], Peers: peers}); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		require.NoError(t, err)
		nd, err := Start(Config{Config: replica.Config{Kraft: kraft.Config{Local: kraft.ReplicaKey{ID: id}, Voters: voters, Seed: uint64(time.Now().UnixNano())},
			Log:     openMemLog{logs[id]},
			Records: recs[id]}, Transport: tr,
		})
		require.NoError(t, err)
		nodes[id] = nd
	}
	for _, v := range voters {
		logs[v.ID], recs[v.ID] = storage.NewMemLog(), &MemRecords{}
		start(v.ID)
	}
	defer func() {
		for _, nd := range nodes {
			_ = nd.Close()
		}
	}()
	// settled waits for one leader that every voter follows, caught up.
	settled := func() *Node {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			var l *Node
			ok := true
			var sts []Status
			for _, nd := range nodes {
				st, err := nd.Status()
				if err != nil {
					ok = false
					break
				}
				sts = append(sts, st)
				if st.Role == "Leader" {
					l = nd
				}
			}
			for _, st := range sts {
				ok = ok && l != nil && st.Epoch == sts[0].Epoch && st.HighWatermark == st.LogEnd && st.LogEnd == sts[0].LogEnd && (st.Role == "Leader" || st.Role == "Follower")
			}
			if ok && l != nil {
				return l
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("no settled leader within 20s")
		return nil
	}
	var took []time.Duration
	failed := 0
	for i := 0; i < rounds; i++ {
		l := settled()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := l.Append(ctx, []byte("x"))
		cancel()
		require.NoError(t, err)
		l = settled()
		id := l.local.ID
		t0 := time.Now()
		h, err := l.Shutdown(context.Background())
		d := time.Since(t0)
		require.NoError(t, err)
		delete(nodes, id)
		took = append(took, d)
		if !h.HandedOver() {
			failed++
		}
		if d > time.Second {
			t.Logf("round %d: handover from %d to %d took %v", i, id, h.Successor, d)
		}
		start(id)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	slow := 0
	for _, d := range took {
		if d > time.Second {
			slow++
		}
	}
	t.Logf("%d handovers: p50 %v p99 %v max %v; over 1s: %d; no successor: %d",
		len(took), took[len(took)/2], took[len(took)*99/100], took[len(took)-1], slow, failed)
}
