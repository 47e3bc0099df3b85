package kafkawire

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawClient is a hand-driven Kafka client connection to a Transport.
type rawClient struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawClient {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return &rawClient{t: t, c: c, r: bufio.NewReader(c), corr: 100}
}

// call sends req and reads the answer, at version readAs.
func (rc *rawClient) call(req kmsg.Request, readAs int16) kmsg.Response {
	rc.t.Helper()
	rc.corr++
	client := "raw"
	if _, err := rc.c.Write(AppendRequest(nil, rc.corr, &client, req)); err != nil {
		rc.t.Fatal(err)
	}
	frame, err := ReadFrame(rc.r, 0)
	if err != nil {
		rc.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	corr, resp, err := ReadResponse(frame, req.Key(), readAs)
	if err != nil || corr != rc.corr {
		rc.t.Fatalf("%s: correlation id %d (sent %d): %v", kmsg.NameForKey(req.Key()), corr, rc.corr, err)
	}
	return resp
}

func voteRequest(version int16, cluster *string, topic string) *kmsg.VoteRequest {
	r := kmsg.NewPtrVoteRequest()
	r.Version = version
	r.ClusterID = cluster
	r.VoterID = 1
	p := kmsg.NewVoteRequestTopicPartition()
	p.CandidateEpoch, p.CandidateID, p.LastOffset, p.LastOffsetEpoch = 4, 2, 10, 3
	t := kmsg.NewVoteRequestTopic()
	t.Topic = topic
	t.Partitions = []kmsg.VoteRequestTopicPartition{p}
	r.Topics = []kmsg.VoteRequestTopic{t}
	return r
}

// TestTransportServes drives a Transport's server side by hand, as a Kafka
// client would: ApiVersions of an unknown version gets a v0
// UNSUPPORTED_VERSION answer with the table; the raft requests it refuses
// without stepping get their top-level errors; DescribeQuorum without a
// runtime gets NOT_LEADER_OR_FOLLOWER; a Vote reaches Inbox with a
// correlation id of the transport's, and the runtime's answer goes back
// with the request's correlation id, at its version.
func TestTransportServes(t *testing.T) {
	tr, err := NewTransport(TransportConfig{ID: 1, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	rc := dialRaw(t, tr.Addr().String())

	av := rc.call(APIVersionsRequest(9, "x"), 9).(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != int16(kraft.ErrUnsupportedVersion) || VersionsOf(av)[APIVersions] != (VersionRange{0, 4}) {
		t.Fatalf("ApiVersions v9: %+v", av)
	}
	av = rc.call(APIVersionsRequest(4, "x"), 4).(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 || VersionsOf(av)[Fetch] != (VersionRange{12, 17}) || KRaftVersionsOf(av) == nil {
		t.Fatalf("ApiVersions v4: %+v", av)
	}
	if _, ok := VersionsOf(av)[AddRaftVoter]; ok {
		t.Fatalf("AddRaftVoter advertised but not served: %+v", av)
	}

	bad := "not a uuid"
	if r := rc.call(voteRequest(2, &bad, MetadataTopic), 2).(*kmsg.VoteResponse); r.ErrorCode != int16(kraft.ErrInconsistentClusterID) || len(r.Topics) != 0 {
		t.Fatalf("bad cluster id: %+v", r)
	}
	if r := rc.call(voteRequest(2, nil, "other"), 2).(*kmsg.VoteResponse); r.ErrorCode != int16(kraft.ErrInvalidRequest) {
		t.Fatalf("other topic: %+v", r)
	}
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dq.Version = 2
	dq.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{}}}}
	if r := rc.call(dq, 2).(*kmsg.DescribeQuorumResponse); r.Topics[0].Partitions[0].ErrorCode != int16(kraft.ErrNotLeaderOrFollower) {
		t.Fatalf("describe: %+v", r)
	}
	select {
	case m := <-tr.Inbox():
		t.Fatalf("a refused request reached the runtime: %+v", m)
	default:
	}

	// A Vote v1 (no pre-vote field) is stepped; the answer goes back at v1.
	done := make(chan kmsg.Response)
	go func() { done <- rc.call(voteRequest(1, nil, MetadataTopic), 1) }()
	var m node.Message
	select {
	case m = <-tr.Inbox():
	case <-time.After(5 * time.Second):
		t.Fatal("the Vote did not reach Inbox")
	}
	e, ok := m.Event.(kraft.ReceiveVoteRequest)
	if !ok || m.From != 2 || m.To != 1 || m.Response || e.CandidateEpoch != 4 || e.VoterID != 1 || e.CandidateLogEnd != (kraft.LogEnd{Offset: 10, Epoch: 3}) {
		t.Fatalf("inbox: %+v", m)
	}
	tr.Send(node.Message{From: 1, To: 2, Corr: m.Corr, Response: true,
		Event: kraft.ReceiveVoteResponse{From: 1, Epoch: 4, VoteGranted: true, LeaderID: kraft.NoNode}})
	r := (<-done).(*kmsg.VoteResponse)
	if r.Version != 1 || r.ErrorCode != 0 || !r.Topics[0].Partitions[0].VoteGranted || r.Topics[0].Partitions[0].LeaderID != -1 {
		t.Fatalf("vote response: %+v", r)
	}
	// A response whose request is not waiting is dropped.
	before := tr.Dropped()
	tr.Send(node.Message{From: 1, To: 2, Corr: m.Corr, Response: true, Event: kraft.ReceiveVoteResponse{From: 1, Epoch: 4, LeaderID: kraft.NoNode}})
	if tr.Dropped() != before+1 {
		t.Fatal("a second response to one request was not dropped")
	}
}

// TestTransportRanksByDirectoryID: an EndQuorumEpoch's preferred
// candidates name replicas with their directory ids (KIP-853); the
// transport finds the local replica's place by its configured directory
// id, and an entry with its id but another directory id is not its.
func TestTransportRanksByDirectoryID(t *testing.T) {
	dir := mustUuid("a3JhZnQAAAAAAAAAAAAQAQ")
	other := mustUuid("a3JhZnQAAAAAAAAAAAAQBA")
	for _, tc := range []struct {
		local uuid.UUID
		want  kraft.SuccessorRank
	}{{dir, kraft.SuccessorRank{Position: 1, Of: 3}}, {other, kraft.SuccessorRank{Position: 3, Of: 3}}} {
		tr, err := NewTransport(TransportConfig{ID: 1, DirectoryID: tc.local, Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		rc := dialRaw(t, tr.Addr().String())
		req, err := EncodeRequest(Msg{Event: kraft.ReceiveEndQuorumEpoch{LeaderID: 2, LeaderEpoch: 5},
			Preferred: []kraft.ReplicaKey{{ID: 3}, {ID: 1, DirectoryID: dir}, {ID: 4}}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		client := "raw"
		if _, err := rc.c.Write(AppendRequest(nil, 7, &client, req)); err != nil {
			t.Fatal(err)
		}
		select {
		case m := <-tr.Inbox():
			if e, ok := m.Event.(kraft.ReceiveEndQuorumEpoch); !ok || e.SuccessorRank != tc.want || m.From != 2 {
				t.Errorf("local directory %v: %+v, want rank %+v", tc.local, m, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no EndQuorumEpoch in Inbox")
		}
		tr.Close()
	}
}
