package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"strings"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/kafkawire"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/storage"
)

// TestDescribe runs three kraft replicas in Kafka's protocol and describes
// their quorum, asking a follower first (it answers NOT_LEADER_OR_FOLLOWER)
// and then the rest.
func TestDescribe(t *testing.T) {
	voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
	trs := map[kraft.NodeID]*kafkawire.Transport{}
	for _, v := range voters {
		tr, err := kafkawire.NewTransport(kafkawire.TransportConfig{ID: v.ID, Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		trs[v.ID] = tr
	}
	for id, tr := range trs {
		for other, o := range trs {
			if other != id {
				tr.SetPeer(other, o.Addr().String())
			}
		}
	}
	var nodes []*node.Node
	for _, v := range voters {
		n, err := node.Start(node.Config{Config: replica.Config{Kraft: kraft.Config{Local: v, Voters: voters, Seed: uint64(v.ID),
			ElectionTimeout: 150 * time.Millisecond, FetchTimeout: 300 * time.Millisecond},
			Log: storage.NewMemLog(), Records: &node.MemRecords{}, FetchMaxWait: 50 * time.Millisecond}, Transport: trs[v.ID],
		})
		if err != nil {
			t.Fatal(err)
		}
		trs[v.ID].ServeDescribeQuorum(n)
		nodes = append(nodes, n)
		defer n.Close()
	}
	var leader kraft.NodeID = kraft.NoNode
	for deadline := time.Now().Add(10 * time.Second); leader == kraft.NoNode && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for i, n := range nodes {
			if _, err := n.Append(context.Background(), []byte("x")); err == nil {
				leader = voters[i].ID
			}
		}
	}
	if leader == kraft.NoNode {
		t.Fatal("no leader")
	}
	follower := leader%3 + 1
	// Every follower has fetched once more since the append.
	time.Sleep(300 * time.Millisecond)
	addrs := trs[follower].Addr().String()
	for id, tr := range trs {
		if id != follower {
			addrs += "," + tr.Addr().String()
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-bootstrap-controller", addrs, "describe", "-status"}, &out, &errb, time.Now); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{"LeaderId:               " + fmt.Sprint(leader), "MaxFollowerLag:         0", `"endpoints":["CONTROLLER://127.0.0.1:`, "CurrentObservers:       []"} {
		if !strings.Contains(s, want) {
			t.Errorf("status lacks %q:\n%s", want, s)
		}
	}
	out.Reset()
	if code := run([]string{"-bootstrap-controller", addrs, "describe", "-replication"}, &out, &errb, time.Now); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], fmt.Sprint(leader)+" ") || !strings.HasSuffix(strings.TrimSpace(lines[1]), "Leader") ||
		!strings.HasSuffix(strings.TrimSpace(lines[3]), "Follower") {
		t.Fatalf("replication:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
	// Only a follower: no leader answers.
	if code := run([]string{"-bootstrap-controller", trs[follower].Addr().String(), "describe", "-status"}, &out, &errb, time.Now); code != 1 ||
		!strings.Contains(errb.String(), "NOT_LEADER_OR_FOLLOWER") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
