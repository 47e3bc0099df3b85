package kafkawire

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BeginQuorumEpoch v0 is not flexible: request header v1 (no tagged
// fields), response header v0; v1 is: header v2 and v1.
func TestHeaderVersions(t *testing.T) {
	client := "c"
	for _, tc := range []struct {
		version         int16
		reqHdr, respHdr int16
	}{{0, 1, 0}, {1, 2, 1}} {
		m := Msg{Event: kraft.ReceiveBeginQuorumEpoch{LeaderID: 1, LeaderEpoch: 3, VoterID: 2}}
		req, err := EncodeRequest(m, tc.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := RequestHeaderVersion(req); got != tc.reqHdr {
			t.Errorf("v%d: request header v%d, want v%d", tc.version, got, tc.reqHdr)
		}
		frame := AppendRequest(nil, 5, &client, req)
		// size, key, version, correlation id, client id (2+1), tags?
		body := req.AppendTo(nil)
		if want := 4 + 2 + 2 + 4 + 3 + int(tc.reqHdr-1) + len(body); len(frame) != want {
			t.Errorf("v%d: request frame of %d bytes, want %d", tc.version, len(frame), want)
		}
		resp, err := EncodeResponse(Msg{API: BeginQuorumEpoch, Event: kraft.ReceiveQuorumResponse{Epoch: 3, LeaderID: 1}}, tc.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := ResponseHeaderVersion(resp); got != tc.respHdr {
			t.Errorf("v%d: response header v%d, want v%d", tc.version, got, tc.respHdr)
		}
		rframe := AppendResponse(nil, 5, resp)
		if want := 4 + 4 + int(tc.respHdr) + len(resp.AppendTo(nil)); len(rframe) != want {
			t.Errorf("v%d: response frame of %d bytes, want %d", tc.version, len(rframe), want)
		}
	}
	// ApiVersions v3+ is flexible, but its response header stays v0.
	av := APIVersionsAnswer(3, nil)
	if !av.IsFlexible() || ResponseHeaderVersion(av) != 0 {
		t.Fatal("ApiVersions v3 response header is not v0")
	}
}

func TestReadFrame(t *testing.T) {
	client := "x"
	frame := AppendRequest(nil, 1, &client, APIVersionsRequest(4, "1"))
	two := append(append([]byte(nil), frame...), frame...)
	r := bytes.NewReader(two)
	for i := 0; i < 2; i++ {
		got, err := ReadFrame(r, 0)
		if err != nil || !bytes.Equal(got, frame) {
			t.Fatalf("frame %d: %x, %v", i, got, err)
		}
	}
	if _, err := ReadFrame(r, 0); err != io.EOF {
		t.Fatalf("after the frames: %v, want EOF", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame[:len(frame)-1]), 0); err != io.ErrUnexpectedEOF {
		t.Fatalf("a cut frame: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(frame), 10); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("a frame over the limit: %v", err)
	}
	if _, _, err := ReadRequest(frame[:len(frame)-1]); err == nil {
		t.Fatal("a frame whose size prefix does not match was read")
	}
}

// An ApiVersions request above kraft's v4 gets a v0 UNSUPPORTED_VERSION
// answer with kraft's table; one kmsg does not know at all is reported
// with its header, so the server can answer it (KIP-511).
func TestAPIVersionsTooNew(t *testing.T) {
	client := "x"
	r := APIVersionsRequest(4, "1")
	r.Version = 5
	_, req, err := ReadRequest(AppendRequest(nil, 9, &client, r))
	if err != nil {
		t.Fatal(err)
	}
	ans := APIVersionsAnswer(req.GetVersion(), &kraft.VersionRange{Min: 0, Max: 1})
	if ans.Version != 0 || ans.ErrorCode != int16(kraft.ErrUnsupportedVersion) || !reflect.DeepEqual(VersionsOf(ans), Supported) {
		t.Fatalf("answer %+v", ans)
	}
	if ans.SupportedFeatures != nil {
		t.Fatal("a v0 answer carries features")
	}
	frame := AppendRequest(nil, 9, &client, r)
	frame[7] = 99 // version 99
	h, _, err := ReadRequest(frame)
	var uv *UnsupportedVersionError
	if !errors.As(err, &uv) || uv.Header.APIVersion != 99 || uv.Header.CorrelationID != 9 || h.APIKey != APIVersions {
		t.Fatalf("%v, %+v", err, h)
	}
	// The client side: retry at the highest version the answer allows.
	if v, retry, err := APIVersionsRetry(ans); !retry || err != nil || v != 4 {
		t.Fatalf("retry %d %v %v", v, retry, err)
	}
	old := apiVersionsAnswer(Versions{APIVersions: {0, 2}}, 7, nil)
	if v, retry, err := APIVersionsRetry(old); !retry || err != nil || v != 2 {
		t.Fatalf("retry toward an older server %d %v %v", v, retry, err)
	}
	if _, _, err := APIVersionsRetry(apiVersionsAnswer(Versions{APIVersions: {5, 6}}, 9, nil)); err == nil {
		t.Fatal("no common ApiVersions version was accepted")
	}
	ok := APIVersionsAnswer(4, &kraft.VersionRange{Min: 0, Max: 1})
	if _, retry, _ := APIVersionsRetry(ok); retry {
		t.Fatal("retry after a good answer")
	}
	if ok.Version != 4 || ok.ErrorCode != 0 || KRaftVersionsOf(ok) == nil {
		t.Fatalf("v4 answer %+v", ok)
	}
}

func TestNegotiate(t *testing.T) {
	old := Versions{Vote: {0, 1}, Fetch: {4, 13}, BeginQuorumEpoch: {0, 0}, FetchSnapshot: {2, 3}}
	got := Negotiate(Supported, old)
	want := map[int16]int16{Vote: 1, Fetch: 13, BeginQuorumEpoch: 0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("negotiated %v, want %v", got, want)
	}
	if PreVote(got) {
		t.Fatal("pre-vote toward a peer without Vote v2")
	}
	if !PreVote(Negotiate(Supported, Supported)) {
		t.Fatal("no pre-vote between two kraft replicas")
	}
	if _, err := EncodeRequest(Msg{Event: kraft.ReceiveVoteRequest{PreVote: true}}, got[Vote]); !errors.Is(err, ErrNotRepresentable) {
		t.Fatalf("a pre-vote at Vote v1: %v", err)
	}
}

func TestClusterID(t *testing.T) {
	u := uuid.MustParse("01234567-89ab-cdef-0123-456789abcdef")
	s := ClusterIDString(uuid.NullUUID{UUID: u, Valid: true})
	if len(*s) != 22 {
		t.Fatalf("%q is not 22 characters", *s)
	}
	back, err := ParseClusterID(s)
	if err != nil || back.UUID != u || !back.Valid {
		t.Fatalf("%v %v", back, err)
	}
	if ClusterIDString(uuid.NullUUID{}) != nil {
		t.Fatal("an unset cluster id is not null")
	}
	bad := "not-a-uuid"
	req, _ := EncodeRequest(Msg{Event: kraft.ReceiveFetch{}}, 17)
	req.(*kmsg.FetchRequest).ClusterID = &bad
	if _, err := DecodeRequest(req, kraft.ReplicaKey{}); !errors.Is(err, ErrInvalidClusterID) {
		t.Fatalf("a bad cluster id: %v", err)
	}
	if got := UuidString(mustUuid("AAAAAAAAAAAAAAAAAAAAAQ")); got != "AAAAAAAAAAAAAAAAAAAAAQ" || mustUuid(got) != uuid.UUID(MetadataTopicID) {
		t.Fatal("metadata topic id")
	}
}

func TestNotMetadataPartition(t *testing.T) {
	req, _ := EncodeRequest(Msg{Event: kraft.ReceiveVoteRequest{}}, 2)
	req.(*kmsg.VoteRequest).Topics[0].Topic = "other"
	if _, err := DecodeRequest(req, kraft.ReplicaKey{}); !errors.Is(err, ErrNotMetadataPartition) {
		t.Fatalf("another topic: %v", err)
	}
	freq, _ := EncodeRequest(Msg{Event: kraft.ReceiveFetch{}}, 17)
	freq.(*kmsg.FetchRequest).Topics[0].TopicID[0] = 1
	if _, err := DecodeRequest(freq, kraft.ReplicaKey{}); !errors.Is(err, ErrNotMetadataPartition) {
		t.Fatalf("another topic id: %v", err)
	}
	freq.(*kmsg.FetchRequest).Topics[0].TopicID = MetadataTopicID
	freq.(*kmsg.FetchRequest).Topics[0].Partitions[0].Partition = 1
	if _, err := DecodeRequest(freq, kraft.ReplicaKey{}); !errors.Is(err, ErrNotMetadataPartition) {
		t.Fatalf("another partition: %v", err)
	}
}

func TestEntriesBatching(t *testing.T) {
	data := func(off int64, epoch kraft.Epoch, s string) storage.Entry {
		return storage.Entry{Offset: off, Epoch: epoch, Data: append([]byte{replica.RecordData}, s...)}
	}
	lc := leaderChange(2)
	lc.Epoch = 1
	entries := []storage.Entry{data(0, 1, "a"), data(1, 1, "b"), lc, data(3, 1, "c"), data(4, 2, "d")}
	raw, err := AppendEntries(nil, entries, 42)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := ReadBatches(raw)
	if err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, b := range batches {
		s := "data"
		if b.Control() {
			s = "control"
		}
		shape = append(shape, s)
	}
	// A batch per entry: every offset is a batch boundary.
	if want := []string{"data", "data", "control", "data", "data"}; !reflect.DeepEqual(shape, want) {
		t.Fatalf("batches %v, want %v", shape, want)
	}
	got, ts, err := ReadEntries(raw)
	if err != nil || ts != 42 || !reflect.DeepEqual(got, entries) {
		t.Fatalf("%v %d %v", got, ts, err)
	}
	// A trailing partial batch is dropped; a gap in the offsets and an
	// unmapped kind are refused.
	if got, _, err := ReadEntries(raw[:len(raw)-3]); err != nil || len(got) != 4 {
		t.Fatalf("cut: %d entries, %v", len(got), err)
	}
	if _, err := AppendEntries(nil, []storage.Entry{data(0, 1, "a"), data(2, 1, "b")}, 0); err == nil {
		t.Fatal("a gap was accepted")
	}
	if _, err := AppendEntries(nil, []storage.Entry{{Offset: 0, Epoch: 1, Data: []byte{replica.RecordVoters}}}, 0); err == nil {
		t.Fatal("a VotersRecord was encoded")
	}
	// The CRC covers the records.
	raw[len(raw)-2] ^= 0x40
	if _, _, err := ReadEntries(raw); !errors.Is(err, ErrCorruptBatch) {
		t.Fatalf("corrupt: %v", err)
	}
}

// PreferredFor's list gives the addressee the rank it was made from,
// whatever its directory id, on both sides of the wire.
func TestPreferredFor(t *testing.T) {
	dir := uuid.MustParse("01234567-89ab-cdef-0123-456789abcdef")
	local := kraft.ReplicaKey{ID: 3, DirectoryID: dir}
	for of := 0; of <= 4; of++ {
		for pos := 0; pos <= of; pos++ {
			rank := kraft.SuccessorRank{Position: pos, Of: of}
			list := PreferredFor(rank, 3, 1)
			if got := kraft.RankOf(local, list); got != rank {
				t.Fatalf("%+v: list %v gives %+v", rank, list, got)
			}
			for _, v := range []int16{0, 1} {
				req, err := EncodeRequest(Msg{Event: kraft.ReceiveEndQuorumEpoch{LeaderID: 1, LeaderEpoch: 2}, Preferred: list}, v)
				if err != nil {
					t.Fatal(err)
				}
				m, err := DecodeRequest(req, local)
				if err != nil {
					t.Fatal(err)
				}
				if got := m.Event.(kraft.ReceiveEndQuorumEpoch).SuccessorRank; got != rank {
					t.Fatalf("v%d %+v: decoded %+v", v, rank, got)
				}
			}
		}
	}
}
