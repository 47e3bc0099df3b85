package kafkawire

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
)

// TestTransportReportsAPeerWhoseProcessIsGone: once a peer that answered
// closes its connections and its port, it is reported on PeerDowns
// (docs/design.md D101); with NoPeerDown it is not.
func TestTransportReportsAPeerWhoseProcessIsGone(t *testing.T) {
	for _, off := range []bool{false, true} {
		b, err := NewTransport(TransportConfig{ID: 2, Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		a, err := NewTransport(TransportConfig{ID: 1, Listen: "127.0.0.1:0", NoPeerDown: off,
			Peers: map[kraft.NodeID]string{2: b.Addr().String()}})
		if err != nil {
			t.Fatal(err)
		}
		vote := node.Message{From: 1, To: 2, Corr: 1, Event: kraft.ReceiveVoteRequest{
			From: 1, VoterID: 2, CandidateEpoch: 1, Candidate: 1, PreVote: true}}
		got := false
		for deadline := time.Now().Add(5 * time.Second); !got && time.Now().Before(deadline); {
			a.Send(vote)
			select {
			case <-b.Inbox():
				got = true
			case <-time.After(50 * time.Millisecond):
			}
		}
		if !got {
			t.Fatal("node 2 never received the request")
		}
		_ = b.Close()
		select {
		case id := <-a.PeerDowns():
			if off {
				t.Fatalf("node %d reported with NoPeerDown", id)
			}
			if id != 2 {
				t.Fatalf("reported node %d, want 2", id)
			}
		case <-time.After(time.Second):
			if !off {
				t.Fatal("node 2 closed its connection and its port, and was not reported")
			}
		}
		_ = a.Close()
	}
}
