package node_test

import (
	"context"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/storage"
)

// Example runs a three-voter quorum in one process, each replica with its
// own data directory (Kafka's quorum-state file and a segment log) and a
// TCP transport on loopback, appends a record at whichever replica leads,
// and prints the records every replica commits. A real deployment runs
// each replica in its own process (see cmd/kraftd); the code per replica is
// the same.
func Example() {
	base, _ := os.MkdirTemp("", "kraft-example")
	defer func() { _ = os.RemoveAll(base) }()

	addrs := map[kraft.NodeID]string{1: "127.0.0.1:0", 2: "127.0.0.1:0", 3: "127.0.0.1:0"}
	voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
	transports := map[kraft.NodeID]*node.TCPTransport{}
	for id := range addrs {
		t, err := node.NewTCPTransport(node.TCPConfig{ID: id, Listen: addrs[id]})
		if err != nil {
			panic(err)
		}
		transports[id] = t
	}
	for id, t := range transports { // tell each transport where the others listen
		for peer, other := range transports {
			if peer != id {
				t.SetPeer(peer, other.Addr().String())
			}
		}
	}

	committed := make(chan string, 3)
	var nodes []*node.Node
	for _, v := range voters {
		dir := filepath.Join(base, fmt.Sprint(v.ID))
		log, _, err := storage.Open(filepath.Join(dir, "log"), storage.Options{})
		if err != nil {
			panic(err)
		}
		id := v.ID
		n, err := node.Start(node.Config{Config: replica.Config{Kraft: kraft.Config{Local: v, Voters: voters, Seed: uint64(id)},
			Log:     log,
			Records: node.FileRecords{Path: storage.QuorumStatePath(dir)}}, Transport: transports[id],
			OnCommit: func(rs []node.Record) {
				for _, r := range rs {
					committed <- fmt.Sprintf("replica %d committed %q", id, r.Data)
				}
			},
		})
		if err != nil {
			panic(err)
		}
		defer func() { _ = n.Close() }()
		nodes = append(nodes, n)
	}

	// Append at the leader: any replica that is not answers with a
	// NotLeaderError; retry until the election is over.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for done := false; !done && ctx.Err() == nil; {
		for _, n := range nodes {
			if _, err := n.Append(ctx, []byte("hello")); err == nil {
				done = true
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := map[string]bool{}
	for len(got) < 3 {
		got[<-committed] = true
	}
	lines := make([]string, 0, len(got))
	for l := range got {
		lines = append(lines, l)
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// replica 1 committed "hello"
	// replica 2 committed "hello"
	// replica 3 committed "hello"
}
