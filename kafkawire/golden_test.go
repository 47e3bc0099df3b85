package kafkawire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readGolden reads a frame of testdata/golden: hex lines, '#' comments.
func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatal(err)
	}
	var h strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		h.WriteString(strings.TrimSpace(line))
	}
	b, err := hex.DecodeString(h.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// The capture's cluster id and directory ids (Uuid(0x6b72616674000000,
// 0x1000+n) for node n).
var (
	goldenCluster = uuid.NullUUID{UUID: mustUuid("MkU3OEVBNTcwNTJENDM2Qg"), Valid: true}
	dir2          = mustUuid("a3JhZnQAAAAAAAAAAAAQAg")
	dir4          = mustUuid("a3JhZnQAAAAAAAAAAAAQBA")
)

func mustUuid(s string) uuid.UUID {
	u, err := ParseUuid(s)
	if err != nil {
		panic(err)
	}
	return u
}

func endpoint(id kraft.NodeID, port uint16) Endpoint {
	return Endpoint{NodeID: id, Host: "127.0.0.1", Port: port}
}

type goldenRequest struct {
	file     string
	key, ver int16
	corr     int32
	client   string
	local    kraft.ReplicaKey
	want     Msg
}

func goldenRequests() []goldenRequest {
	vote := func(voter kraft.NodeID, epoch kraft.Epoch, pre bool) Msg {
		return Msg{API: Vote, Event: kraft.ReceiveVoteRequest{
			From: 2, ClusterID: goldenCluster, VoterID: voter, CandidateEpoch: epoch, Candidate: 2,
			CandidateDirectoryID: dir2, CandidateLogEnd: kraft.LogEnd{Offset: 4, Epoch: 1}, PreVote: pre,
		}}
	}
	fetch := func(from kraft.NodeID, dir uuid.UUID, leaderEpoch kraft.Epoch, offset int64, epoch kraft.Epoch) Msg {
		return Msg{API: Fetch, MaxWaitMs: 500, MaxBytes: 8 << 20, Event: kraft.ReceiveFetch{
			From: from, FromDirectoryID: dir, ClusterID: goldenCluster,
			CurrentLeaderEpoch: leaderEpoch, FetchOffset: offset, FetchEpoch: epoch,
		}}
	}
	return []goldenRequest{
		{file: "vote-v2-prevote-granted", key: Vote, ver: 2, corr: 22, client: "raft-client-2", want: vote(1, 1, true)},
		{file: "vote-v2-prevote-rejected", key: Vote, ver: 2, corr: 23, client: "raft-client-2", want: vote(3, 1, true)},
		{file: "vote-v2-standard-granted", key: Vote, ver: 2, corr: 25, client: "raft-client-2", want: vote(1, 2, false)},
		{file: "begin_quorum_epoch-v1", key: BeginQuorumEpoch, ver: 1, corr: 27, client: "raft-client-2", want: Msg{
			API: BeginQuorumEpoch,
			Event: kraft.ReceiveBeginQuorumEpoch{
				From: 2, ClusterID: goldenCluster, LeaderID: 2, LeaderEpoch: 2, VoterID: 1,
			},
			Endpoints: []Endpoint{{NodeID: 2, Name: ListenerName, Host: "127.0.0.1", Port: 39192}},
		}},
		{file: "end_quorum_epoch-v1", key: EndQuorumEpoch, ver: 1, corr: 90, client: "raft-client-1",
			local: kraft.ReplicaKey{ID: 2, DirectoryID: dir2}, want: Msg{
				API: EndQuorumEpoch,
				Event: kraft.ReceiveEndQuorumEpoch{
					From: 1, ClusterID: goldenCluster, LeaderID: 1, LeaderEpoch: 1,
					SuccessorRank: kraft.SuccessorRank{Position: 0, Of: 2},
				},
				Preferred: []kraft.ReplicaKey{{ID: 2}, {ID: 3}},
			}},
		{file: "fetch-v17-control", key: Fetch, ver: 17, corr: 11, client: "raft-client-2", want: fetch(2, dir2, 1, 0, 0)},
		{file: "fetch-v17-data", key: Fetch, ver: 17, corr: 14, client: "raft-client-2", want: fetch(2, dir2, 1, 1, 1)},
		{file: "fetch-v17-empty", key: Fetch, ver: 17, corr: 13, client: "raft-client-2", want: fetch(2, dir2, 1, 1, 1)},
		{file: "fetch-v17-empty-FENCED_LEADER_EPOCH", key: Fetch, ver: 17, corr: 8, client: "raft-client-2", want: fetch(2, dir2, 0, 0, 0)},
		{file: "fetch-v17-empty-NOT_LEADER_OR_FOLLOWER", key: Fetch, ver: 17, corr: 0, client: "raft-client-1",
			want: fetch(1, mustUuid("a3JhZnQAAAAAAAAAAAAQAQ"), 0, 0, 0)},
		{file: "fetch-v17-empty-snapshot", key: Fetch, ver: 17, corr: 2, client: "raft-client-4", want: fetch(4, dir4, 1, 0, 0)},
		{file: "fetch_snapshot-v1", key: FetchSnapshot, ver: 1, corr: 4, client: "raft-client-4", want: Msg{
			API: FetchSnapshot, MaxBytes: 8 << 20,
			Event: kraft.ReceiveFetchSnapshot{
				From: 4, FromDirectoryID: dir4, ClusterID: goldenCluster, CurrentLeaderEpoch: 1,
				Snapshot: kraft.LogEnd{Offset: 4, Epoch: 1}, Position: 0, Size: -1,
			},
		}},
	}
}

// TestGoldenRequests decodes every raft request Kafka's KafkaRaftClient
// sent in the golden capture into kraft's event, checks it against the
// decoded body, and re-encodes the event to the same bytes.
func TestGoldenRequests(t *testing.T) {
	for _, g := range goldenRequests() {
		t.Run(g.file, func(t *testing.T) {
			frame := readGolden(t, g.file+".request.hex")
			h, req, err := ReadRequest(frame)
			if err != nil {
				t.Fatal(err)
			}
			if h.APIKey != g.key || h.APIVersion != g.ver || h.CorrelationID != g.corr || h.ClientID == nil || *h.ClientID != g.client {
				t.Fatalf("header %+v (client %v)", h, h.ClientID)
			}
			got, err := DecodeRequest(req, g.local)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, g.want) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, g.want)
			}
			enc, err := EncodeRequest(got, g.ver)
			if err != nil {
				t.Fatal(err)
			}
			if out := AppendRequest(nil, h.CorrelationID, h.ClientID, enc); !bytes.Equal(out, frame) {
				t.Fatalf("re-encoded\n%x\nwant\n%x", out, frame)
			}
		})
	}
}

type goldenResponse struct {
	file     string
	key, ver int16
	corr     int32
	from     kraft.NodeID
	want     Msg
}

func leaderChange(offset int64) storage.Entry {
	a := kraft.AppendLeaderChange{
		Epoch: 1, LeaderID: 1,
		Voters:         []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}},
		GrantingVoters: []kraft.ReplicaKey{{ID: 2}, {ID: 1}},
	}
	data, err := jsonMarshal(a)
	if err != nil {
		panic(err)
	}
	return storage.Entry{Offset: offset, Epoch: 1, Data: append([]byte{replica.RecordLeaderChange}, data...)}
}

func goldenResponses() []goldenResponse {
	leader1 := []Endpoint{endpoint(1, 39191)}
	vote := func(granted bool, leader kraft.NodeID, epoch kraft.Epoch, eps []Endpoint) Msg {
		return Msg{API: Vote, Endpoints: eps, Event: kraft.ReceiveVoteResponse{From: 1, Epoch: epoch, VoteGranted: granted, LeaderID: leader}}
	}
	fetch := func(code kraft.ErrorCode, leader kraft.NodeID, epoch kraft.Epoch, hw, start int64, eps []Endpoint) Msg {
		return Msg{API: Fetch, LogStartOffset: start, Endpoints: eps, Event: kraft.ReceiveFetchResponse{
			From: 1, Error: code, LeaderID: leader, LeaderEpoch: epoch, HighWatermark: hw,
		}}
	}
	control := fetch(kraft.ErrNone, 1, 1, -1, 0, leader1)
	control.Records, control.RecordTimestamp = []storage.Entry{leaderChange(0)}, 0x1a23ad8b1f6
	data := fetch(kraft.ErrNone, 1, 1, 1, 0, leader1)
	data.Records = []storage.Entry{{Offset: 1, Epoch: 1, Data: append([]byte{replica.RecordData}, "golden-0"...)}}
	data.RecordTimestamp = 0x1a23ad8b7ed
	snap := fetch(kraft.ErrNone, 1, 1, 4, 4, leader1)
	snap.Event = func() kraft.Event {
		e := snap.Event.(kraft.ReceiveFetchResponse)
		e.Snapshot = &kraft.LogEnd{Offset: 4, Epoch: 1}
		return e
	}()
	prevoteRejected := vote(false, 1, 1, leader1)
	prevoteRejected.Event = func() kraft.Event {
		e := prevoteRejected.Event.(kraft.ReceiveVoteResponse)
		e.From = 3
		return e
	}()
	return []goldenResponse{
		{file: "vote-v2-prevote-granted", key: Vote, ver: 2, corr: 22, from: 1, want: vote(true, 1, 1, leader1)},
		{file: "vote-v2-prevote-rejected", key: Vote, ver: 2, corr: 23, from: 3, want: prevoteRejected},
		{file: "vote-v2-standard-granted", key: Vote, ver: 2, corr: 25, from: 1, want: vote(true, kraft.NoNode, 2, nil)},
		{file: "begin_quorum_epoch-v1", key: BeginQuorumEpoch, ver: 1, corr: 27, from: 1, want: Msg{
			API: BeginQuorumEpoch, Endpoints: []Endpoint{endpoint(2, 39192)},
			Event: kraft.ReceiveQuorumResponse{From: 1, Epoch: 2, LeaderID: 2},
		}},
		{file: "end_quorum_epoch-v1", key: EndQuorumEpoch, ver: 1, corr: 90, from: 2, want: Msg{
			API: EndQuorumEpoch, Endpoints: leader1,
			Event: kraft.ReceiveQuorumResponse{From: 2, Epoch: 1, LeaderID: 1},
		}},
		{file: "fetch-v17-control", key: Fetch, ver: 17, corr: 11, from: 1, want: control},
		{file: "fetch-v17-data", key: Fetch, ver: 17, corr: 14, from: 1, want: data},
		{file: "fetch-v17-empty", key: Fetch, ver: 17, corr: 13, from: 1, want: fetch(kraft.ErrNone, 1, 1, 1, 0, leader1)},
		{file: "fetch-v17-empty-FENCED_LEADER_EPOCH", key: Fetch, ver: 17, corr: 8, from: 1,
			want: fetch(kraft.ErrFencedLeaderEpoch, kraft.NoNode, 1, -1, 0, nil)},
		{file: "fetch-v17-empty-NOT_LEADER_OR_FOLLOWER", key: Fetch, ver: 17, corr: 0, from: 1,
			want: fetch(kraft.ErrNotLeaderOrFollower, kraft.NoNode, 0, -1, 0, nil)},
		{file: "fetch-v17-empty-snapshot", key: Fetch, ver: 17, corr: 2, from: 1, want: snap},
		{file: "fetch_snapshot-v1", key: FetchSnapshot, ver: 1, corr: 4, from: 1, want: Msg{
			API: FetchSnapshot, Endpoints: leader1,
			Event: kraft.ReceiveFetchSnapshotResponse{
				From: 1, LeaderID: 1, LeaderEpoch: 1, Snapshot: kraft.LogEnd{Offset: 4, Epoch: 1},
				Size: 360, Position: 0, Bytes: 360,
			},
		}},
	}
}

// TestGoldenResponses decodes every raft response Kafka's KafkaRaftClient
// answered in the golden capture into kraft's event (and records, chunk,
// endpoints), checks it against the decoded body, and re-encodes it to the
// same bytes.
func TestGoldenResponses(t *testing.T) {
	for _, g := range goldenResponses() {
		t.Run(g.file, func(t *testing.T) {
			frame := readGolden(t, g.file+".response.hex")
			corr, resp, err := ReadResponse(frame, g.key, g.ver)
			if err != nil {
				t.Fatal(err)
			}
			if corr != g.corr {
				t.Fatalf("correlation id %d, want %d", corr, g.corr)
			}
			got, err := DecodeResponse(resp, g.from)
			if err != nil {
				t.Fatal(err)
			}
			chunk := got.Chunk
			got.Chunk = nil // checked below
			if !reflect.DeepEqual(got, g.want) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, g.want)
			}
			got.Chunk = chunk
			enc, err := EncodeResponse(got, g.ver)
			if err != nil {
				t.Fatal(err)
			}
			if out := AppendResponse(nil, corr, enc); !bytes.Equal(out, frame) {
				t.Fatalf("re-encoded\n%x\nwant\n%x", out, frame)
			}
		})
	}
}

// TestGoldenSnapshotChunk reads the batches of the FetchSnapshot answer:
// the whole snapshot, a SnapshotHeader control batch, a data batch of three
// records and a SnapshotFooter control batch, each with a valid CRC-32C,
// and re-encodes each batch to the same bytes.
func TestGoldenSnapshotChunk(t *testing.T) {
	_, resp, err := ReadResponse(readGolden(t, "fetch_snapshot-v1.response.hex"), FetchSnapshot, 1)
	if err != nil {
		t.Fatal(err)
	}
	chunk := resp.(*kmsg.FetchSnapshotResponse).Topics[0].Partitions[0].Bytes
	batches, err := ReadBatches(chunk)
	if err != nil {
		t.Fatal(err)
	}
	type shape struct {
		base     int64
		last     int32
		control  bool
		firstKey string
	}
	want := []shape{{0, 0, true, "\x00\x00\x00\x03"}, {1, 2, false, ""}, {4, 0, true, "\x00\x00\x00\x04"}}
	if len(batches) != len(want) {
		t.Fatalf("%d batches, want %d", len(batches), len(want))
	}
	var out []byte
	for i, b := range batches {
		got := shape{b.BaseOffset, b.LastOffsetDelta, b.Control(), string(b.Records[0].Key)}
		if got != want[i] || b.PartitionLeaderEpoch != 1 {
			t.Errorf("batch %d: %+v epoch %d, want %+v epoch 1", i, got, b.PartitionLeaderEpoch, want[i])
		}
		out = AppendBatch(out, &b)
	}
	if v := string(batches[1].Records[2].Value); v != `{"offset":3,"epoch":1,"text":"golden-2"}` {
		t.Errorf("third data record %q", v)
	}
	if !bytes.Equal(out, chunk) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", out, chunk)
	}
	// A flipped bit anywhere after the CRC field fails the check.
	bad := append([]byte(nil), chunk...)
	bad[30] ^= 1
	if _, err := ReadBatches(bad); err == nil {
		t.Fatal("a corrupt batch was accepted")
	}
}

// TestGoldenAPIVersions reads the ApiVersions exchange: the request (v4,
// header v2) and the answer (header v0 whatever the version) with Kafka's
// raft API ranges and kraft.version, and re-encodes both to the same bytes;
// then negotiates kraft's table against that peer.
func TestGoldenAPIVersions(t *testing.T) {
	reqFrame := readGolden(t, "api_versions-v4.request.hex")
	h, req, err := ReadRequest(reqFrame)
	if err != nil {
		t.Fatal(err)
	}
	r := req.(*kmsg.ApiVersionsRequest)
	if h.APIKey != APIVersions || h.APIVersion != 4 || r.ClientSoftwareName != "apache-kafka-java" || r.ClientSoftwareVersion != "4.1.0-SNAPSHOT" {
		t.Fatalf("request %+v %+v", h, r)
	}
	if out := AppendRequest(nil, h.CorrelationID, h.ClientID, r); !bytes.Equal(out, reqFrame) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", out, reqFrame)
	}
	respFrame := readGolden(t, "api_versions-v4.response.hex")
	corr, resp, err := ReadResponse(respFrame, APIVersions, 4)
	if err != nil {
		t.Fatal(err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	peer := VersionsOf(av)
	wantPeer := Versions{Fetch: {0, 17}, APIVersions: {0, 4}, Vote: {0, 2}, BeginQuorumEpoch: {0, 1}, EndQuorumEpoch: {0, 1},
		DescribeQuorum: {0, 2}, FetchSnapshot: {0, 1}, AddRaftVoter: {0, 0}, RemoveRaftVoter: {0, 0}, UpdateRaftVoter: {0, 0}}
	if !reflect.DeepEqual(peer, wantPeer) {
		t.Fatalf("peer versions %v", peer)
	}
	if kv := KRaftVersionsOf(av); kv == nil || *kv != (kraft.VersionRange{Min: 0, Max: 1}) {
		t.Fatalf("kraft.version %v", kv)
	}
	if out := AppendResponse(nil, corr, av); !bytes.Equal(out, respFrame) {
		t.Fatalf("re-encoded\n%x\nwant\n%x", out, respFrame)
	}
	// kraft's answer, built from Kafka's node's table, is Kafka's node's
	// answer byte for byte (API order, throttle, features, header v0).
	if out := AppendResponse(nil, corr, apiVersionsAnswer(peer, 4, KRaftVersionsOf(av))); !bytes.Equal(out, respFrame) {
		t.Fatalf("kraft's answer\n%x\nwant\n%x", out, respFrame)
	}
	ours := APIVersionsAnswer(4, &kraft.VersionRange{Min: 0, Max: 1})
	if len(ours.ApiKeys) != len(av.ApiKeys) {
		t.Fatalf("kraft answers %d APIs, Kafka's node %d", len(ours.ApiKeys), len(av.ApiKeys))
	}
	neg := Negotiate(Supported, peer)
	want := map[int16]int16{Fetch: 17, APIVersions: 4, Vote: 2, BeginQuorumEpoch: 1, EndQuorumEpoch: 1,
		DescribeQuorum: 2, FetchSnapshot: 1, AddRaftVoter: 0, RemoveRaftVoter: 0, UpdateRaftVoter: 0}
	if !reflect.DeepEqual(neg, want) || !PreVote(neg) {
		t.Fatalf("negotiated %v", neg)
	}
}

// TestGoldenDescribeQuorum frames DescribeQuorum (no kraft event yet: the
// answer is the transport's): both frames read and re-encode to the same
// bytes through kmsg.
func TestGoldenDescribeQuorum(t *testing.T) {
	reqFrame := readGolden(t, "describe_quorum-v2.request.hex")
	h, req, err := ReadRequest(reqFrame)
	if err != nil {
		t.Fatal(err)
	}
	if out := AppendRequest(nil, h.CorrelationID, h.ClientID, req); !bytes.Equal(out, reqFrame) {
		t.Fatalf("re-encoded request\n%x\nwant\n%x", out, reqFrame)
	}
	respFrame := readGolden(t, "describe_quorum-v2.response.hex")
	corr, resp, err := ReadResponse(respFrame, DescribeQuorum, 2)
	if err != nil {
		t.Fatal(err)
	}
	dq := resp.(*kmsg.DescribeQuorumResponse)
	if p := dq.Topics[0].Partitions[0]; p.LeaderID != 1 || p.LeaderEpoch != 1 || p.HighWatermark != 4 || len(p.CurrentVoters) != 3 {
		t.Fatalf("partition %+v", p)
	}
	if out := AppendResponse(nil, corr, resp); !bytes.Equal(out, respFrame) {
		t.Fatalf("re-encoded response\n%x\nwant\n%x", out, respFrame)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
