package node

import (
	"bufio"
	"github.com/kraftquorum/kraft/replica"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// TestTCPReportsAPeerWhoseProcessIsGone: a peer that closes its
// connections and no longer listens is reported on PeerDowns; a peer
// that closes a connection but still accepts new ones is not (D101).
func TestTCPReportsAPeerWhoseProcessIsGone(t *testing.T) {
	// A peer that hangs up on every connection but keeps listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(c).Peek(1)
			_ = c.Close()
		}
	}()
	b := newTCP(t, 2, nil)
	a := newTCP(t, 1, map[kraft.NodeID]string{2: b.Addr().String(), 3: ln.Addr().String()})

	a.Send(tcpRequest(1, 3, 1))
	select {
	case id := <-a.PeerDowns():
		t.Fatalf("node %d reported down while it still listens", id)
	case <-time.After(300 * time.Millisecond):
	}

	a.Send(tcpRequest(1, 2, 2))
	require.Equal(t, uint64(2), recv(t, b).Corr)
	require.NoError(t, b.Close())
	select {
	case id := <-a.PeerDowns():
		require.Equal(t, kraft.NodeID(2), id)
	case <-time.After(tcpWait):
		t.Fatal("node 2 closed its connection and its port, and was not reported")
	}
}

// TestNodeCampaignsWhenTheLeaderProcessIsGone: three runtimes over TCP,
// with a fetch timeout far longer than the test; the leader's process
// stops (its transport closes, as the kernel closes a killed process's
// sockets), and another leader is elected anyway: only the report of the
// closed connection and refused port can have started the election
// (D101). With the reports off, no leader within the same wait.
func TestNodeCampaignsWhenTheLeaderProcessIsGone(t *testing.T) {
	for _, off := range []bool{false, true} {
		voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
		trs := map[kraft.NodeID]*TCPTransport{}
		for _, v := range voters {
			tr, err := NewTCPTransport(TCPConfig{ID: v.ID, Listen: "127.0.0.1:0", NoPeerDown: off,
				ReconnectBackoff: 10 * time.Millisecond, MaxReconnectBackoff: 50 * time.Millisecond})
			require.NoError(t, err)
			trs[v.ID] = tr
		}
		connectTCP(trs)
		nodes := map[kraft.NodeID]*Node{}
		for _, v := range voters {
			lg, _, err := storage.Open(filepath.Join(t.TempDir(), "log"), storage.Options{})
			require.NoError(t, err)
			n, err := Start(Config{Config: replica.Config{Kraft: kraft.Config{Local: v, Voters: voters, Seed: uint64(v.ID),
				ElectionTimeout: 100 * time.Millisecond, FetchTimeout: time.Minute},
				Log: lg, Records: FileRecords{Path: filepath.Join(t.TempDir(), "quorum-state")}}, Transport: trs[v.ID],
			})
			require.NoError(t, err)
			nodes[v.ID] = n
			defer n.Close()
		}
		leader := func(not kraft.NodeID, wait time.Duration) (kraft.NodeID, kraft.Epoch) {
			deadline := time.Now().Add(wait)
			for time.Now().Before(deadline) {
				for id, n := range nodes {
					if st, err := n.Status(); err == nil && st.Role == "Leader" && id != not {
						return id, st.Epoch
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			return kraft.NoNode, 0
		}
		// The first election has no leader to wait for: the election
		// timeout starts it.
		old, epoch := leader(kraft.NoNode, 10*time.Second)
		require.NotEqual(t, kraft.NoNode, old)
		// Every follower has fetched from it.
		require.Eventually(t, func() bool {
			for id, n := range nodes {
				if st, err := n.Status(); id != old && (err != nil || st.Leader != old || st.HighWatermark < 1) {
					return false
				}
			}
			return true
		}, 10*time.Second, 5*time.Millisecond)

		require.NoError(t, nodes[old].Close())
		delete(nodes, old)
		next, nextEpoch := leader(old, 3*time.Second)
		if off {
			require.Equal(t, kraft.NoNode, next, "with the reports off only the fetch timeout (a minute) ends the epoch")
			continue
		}
		require.NotEqual(t, kraft.NoNode, next, "no new leader after the leader's process went")
		require.Greater(t, nextEpoch, epoch)
	}
}
