package kafkawire

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"
)

// Generators of kraft's values as the wire can carry them.

func genNode(t *rapid.T, label string) kraft.NodeID {
	return kraft.NodeID(rapid.Int32Range(-1, 1<<20).Draw(t, label))
}

func genEpoch(t *rapid.T, label string) kraft.Epoch {
	return kraft.Epoch(rapid.Int32Range(0, 1<<30).Draw(t, label))
}

func genUUID(t *rapid.T, label string) uuid.UUID {
	if rapid.Bool().Draw(t, label+"Nil") {
		return uuid.Nil
	}
	var u uuid.UUID
	copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, label))
	return u
}

func genCluster(t *rapid.T) uuid.NullUUID {
	if rapid.Bool().Draw(t, "clusterUnset") {
		return uuid.NullUUID{}
	}
	return uuid.NullUUID{UUID: genUUID(t, "cluster"), Valid: true}
}

func genOffset(t *rapid.T, label string) int64 { return rapid.Int64Range(-1, 1<<40).Draw(t, label) }

func genError(t *rapid.T) kraft.ErrorCode {
	return rapid.SampledFrom([]kraft.ErrorCode{
		kraft.ErrNone, kraft.ErrUnknownServerError, kraft.ErrNotLeaderOrFollower, kraft.ErrBrokerNotAvailable,
		kraft.ErrInvalidRequest, kraft.ErrFencedLeaderEpoch, kraft.ErrUnknownLeaderEpoch, kraft.ErrSnapshotNotFound,
		kraft.ErrPositionOutOfRange, kraft.ErrInvalidVoterKey, kraft.ErrUnsupportedVersion,
		kraft.ErrInconsistentClusterID,
	}).Draw(t, "error")
}

func genEndpoints(t *rapid.T, node kraft.NodeID, named, rack bool) []Endpoint {
	n := rapid.IntRange(0, 2).Draw(t, "endpoints")
	var eps []Endpoint
	for i := 0; i < n; i++ {
		ep := Endpoint{NodeID: node, Host: rapid.StringMatching(`[a-z0-9.]{1,15}`).Draw(t, "host"), Port: rapid.Uint16().Draw(t, "port")}
		if named {
			ep.Name = rapid.SampledFrom([]string{ListenerName, "PLAINTEXT", ""}).Draw(t, "listener")
		}
		if rack && rapid.Bool().Draw(t, "hasRack") {
			r := rapid.StringMatching(`[a-z]{0,4}`).Draw(t, "rack")
			ep.Rack = &r
		}
		eps = append(eps, ep)
	}
	return eps
}

// raftAPIs are the APIs whose events kraft maps.
var raftAPIs = []int16{Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot}

// forEveryVersion runs a property for each raft API at each version kraft
// supports.
func forEveryVersion(t *testing.T, prop func(t *rapid.T, api, version int16)) {
	for _, api := range raftAPIs {
		r := Supported[api]
		for v := r.Min; v <= r.Max; v++ {
			t.Run(fmt.Sprintf("%s-v%d", kmsg.NameForKey(api), v), func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) { prop(rt, api, v) })
			})
		}
	}
}

// genEntries makes a Fetch response's records: consecutive offsets from a
// base, non-decreasing epochs, data records and LeaderChange records in the
// form Kafka's LeaderChangeMessage v0 carries back (ids only).
func genEntries(t *rapid.T) []storage.Entry {
	n := rapid.IntRange(0, 6).Draw(t, "entries")
	if n == 0 {
		return nil
	}
	off := rapid.Int64Range(0, 1<<40).Draw(t, "base")
	epoch := genEpoch(t, "firstEpoch")
	var out []storage.Entry
	for i := 0; i < n; i++ {
		epoch += kraft.Epoch(rapid.IntRange(0, 1).Draw(t, "epochStep"))
		e := storage.Entry{Offset: off + int64(i), Epoch: epoch}
		switch rapid.IntRange(0, 5).Draw(t, "kind") {
		case 0:
			// A leader writes a LeaderChange naming itself.
			a := kraft.AppendLeaderChange{Epoch: epoch, LeaderID: kraft.NodeID(rapid.Int32Range(0, 1<<20).Draw(t, "lcLeader"))}
			for _, id := range rapid.SliceOfN(rapid.Int32Range(0, 100), 0, 4).Draw(t, "voters") {
				a.Voters = append(a.Voters, kraft.ReplicaKey{ID: kraft.NodeID(id)})
			}
			for _, id := range rapid.SliceOfN(rapid.Int32Range(0, 100), 0, 4).Draw(t, "granting") {
				a.GrantingVoters = append(a.GrantingVoters, kraft.ReplicaKey{ID: kraft.NodeID(id)})
			}
			data, err := jsonMarshal(a)
			if err != nil {
				t.Fatal(err)
			}
			e.Data = append([]byte{replica.RecordLeaderChange}, data...)
		case 1:
			e.Data = []byte{replica.RecordBarrier}
		default:
			e.Data = append([]byte{replica.RecordData}, rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "value")...)
		}
		out = append(out, e)
	}
	return out
}

// genRequest draws a request Msg, the replica key it is addressed to, and
// a version; want is what the addressee decodes at that version (the fields
// the version does not carry take their defaults), or ok false when the
// event cannot be sent at that version.
func genRequest(t *rapid.T, api, version int16) (m Msg, local kraft.ReplicaKey, want Msg, ok bool) {
	local = kraft.ReplicaKey{ID: genNode(t, "local"), DirectoryID: genUUID(t, "localDir")}
	switch api {
	case Vote:
		cand := genNode(t, "candidate")
		e := kraft.ReceiveVoteRequest{
			From: cand, ClusterID: genCluster(t), VoterID: genNode(t, "voter"), VoterDirectoryID: genUUID(t, "voterDir"),
			CandidateEpoch: genEpoch(t, "epoch"), Candidate: cand, CandidateDirectoryID: genUUID(t, "candDir"),
			CandidateLogEnd: kraft.LogEnd{Offset: genOffset(t, "lastOffset"), Epoch: genEpoch(t, "lastEpoch")},
			PreVote:         rapid.Bool().Draw(t, "preVote"),
		}
		m = Msg{API: Vote, Event: e}
		if e.PreVote && version < 2 {
			return m, local, Msg{}, false
		}
		if version < 1 {
			e.VoterID, e.VoterDirectoryID, e.CandidateDirectoryID = kraft.NoNode, uuid.Nil, uuid.Nil
		}
		want = Msg{API: Vote, Event: e}
	case BeginQuorumEpoch:
		leader := genNode(t, "leader")
		e := kraft.ReceiveBeginQuorumEpoch{
			From: leader, ClusterID: genCluster(t), LeaderID: leader, LeaderEpoch: genEpoch(t, "epoch"),
			VoterID: genNode(t, "voter"), VoterDirectoryID: genUUID(t, "voterDir"),
		}
		m = Msg{API: BeginQuorumEpoch, Event: e, Endpoints: genEndpoints(t, leader, true, false)}
		want = Msg{API: BeginQuorumEpoch, Event: e, Endpoints: m.Endpoints}
		if version < 1 {
			e.VoterID, e.VoterDirectoryID = kraft.NoNode, uuid.Nil
			want = Msg{API: BeginQuorumEpoch, Event: e}
		}
	case EndQuorumEpoch:
		leader := genNode(t, "leader")
		var pref []kraft.ReplicaKey
		for i := rapid.IntRange(0, 4).Draw(t, "preferred"); i > 0; i-- {
			k := kraft.ReplicaKey{ID: genNode(t, "successor"), DirectoryID: genUUID(t, "successorDir")}
			if rapid.Bool().Draw(t, "isLocal") {
				k.ID = local.ID
			}
			pref = append(pref, k)
		}
		e := kraft.ReceiveEndQuorumEpoch{From: leader, ClusterID: genCluster(t), LeaderID: leader, LeaderEpoch: genEpoch(t, "epoch")}
		m = Msg{API: EndQuorumEpoch, Event: e, Preferred: pref, Endpoints: genEndpoints(t, leader, true, false)}
		wantPref := []kraft.ReplicaKey{}
		for _, k := range pref {
			if version < 1 {
				k.DirectoryID = uuid.Nil
			}
			wantPref = append(wantPref, k)
		}
		e.SuccessorRank = kraft.RankOf(local, wantPref)
		want = Msg{API: EndQuorumEpoch, Event: e, Preferred: wantPref, Endpoints: m.Endpoints}
		if version < 1 {
			want.Endpoints = nil
		}
	case Fetch:
		e := kraft.ReceiveFetch{
			From: genNode(t, "from"), FromDirectoryID: genUUID(t, "fromDir"), ClusterID: genCluster(t),
			CurrentLeaderEpoch: genEpoch(t, "leaderEpoch"), FetchEpoch: genEpoch(t, "fetchEpoch"), FetchOffset: genOffset(t, "fetchOffset"),
		}
		m = Msg{API: Fetch, Event: e, MaxWaitMs: rapid.Int32Range(0, 10000).Draw(t, "maxWait"), MaxBytes: rapid.Int32Range(0, 1<<30).Draw(t, "maxBytes")}
		if version < 17 {
			e.FromDirectoryID = uuid.Nil
		}
		want = Msg{API: Fetch, Event: e, MaxWaitMs: m.MaxWaitMs, MaxBytes: m.MaxBytes}
	case FetchSnapshot:
		e := kraft.ReceiveFetchSnapshot{
			From: genNode(t, "from"), FromDirectoryID: genUUID(t, "fromDir"), ClusterID: genCluster(t),
			CurrentLeaderEpoch: genEpoch(t, "leaderEpoch"),
			Snapshot:           kraft.LogEnd{Offset: genOffset(t, "snapOffset"), Epoch: genEpoch(t, "snapEpoch")},
			Position:           genOffset(t, "position"), Size: rapid.Int64Range(-1, 1<<40).Draw(t, "size"),
		}
		m = Msg{API: FetchSnapshot, Event: e, MaxBytes: rapid.Int32Range(0, 1<<30).Draw(t, "maxBytes")}
		e.Size = -1 // the addressee's host looks it up
		if version < 1 {
			e.FromDirectoryID = uuid.Nil
		}
		want = Msg{API: FetchSnapshot, Event: e, MaxBytes: m.MaxBytes}
	}
	return m, local, want, true
}

// TestRequestRoundTrip: every request event, at every supported version,
// through EncodeRequest, a whole frame, ReadRequest and DecodeRequest, comes
// back as the addressee should step it.
func TestRequestRoundTrip(t *testing.T) {
	forEveryVersion(t, func(t *rapid.T, api, version int16) {
		m, local, want, ok := genRequest(t, api, version)
		req, err := EncodeRequest(m, version)
		if !ok {
			if !errors.Is(err, ErrNotRepresentable) {
				t.Fatalf("encoding %+v at v%d: %v, want ErrNotRepresentable", m.Event, version, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		client := "raft-client-7"
		corr := rapid.Int32().Draw(t, "corr")
		frame := AppendRequest(nil, corr, &client, req)
		h, back, err := ReadRequest(frame)
		if err != nil {
			t.Fatal(err)
		}
		if h.APIKey != m.API || h.APIVersion != version || h.CorrelationID != corr || *h.ClientID != client {
			t.Fatalf("header %+v", h)
		}
		got, err := DecodeRequest(back, local)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("v%d:\ngot  %+v\nwant %+v", version, got, want)
		}
	})
}

// genResponse draws a response Msg and a version; want is what the
// requester decodes, or topErr the top-level error it gets instead.
func genResponse(t *rapid.T, api, version int16) (m Msg, from kraft.NodeID, want Msg, topErr kraft.ErrorCode) {
	from = genNode(t, "from")
	code := genError(t)
	leader := genNode(t, "leader")
	switch api {
	case Vote:
		e := kraft.ReceiveVoteResponse{From: from, Error: code, Epoch: genEpoch(t, "epoch"), VoteGranted: rapid.Bool().Draw(t, "granted"), LeaderID: leader}
		m = Msg{API: Vote, Event: e, Endpoints: genEndpoints(t, leader, false, false)}
		want = m
		if version < 1 {
			want.Endpoints = nil
		}
	case BeginQuorumEpoch, EndQuorumEpoch:
		e := kraft.ReceiveQuorumResponse{From: from, Error: code, Epoch: genEpoch(t, "epoch"), LeaderID: leader}
		m = Msg{API: api, Event: e, Endpoints: genEndpoints(t, leader, false, false)}
		want = m
		if version < 1 {
			want.Endpoints = nil
		}
	case Fetch:
		e := kraft.ReceiveFetchResponse{From: from, Error: code, LeaderID: leader, LeaderEpoch: genEpoch(t, "epoch"), HighWatermark: genOffset(t, "hw")}
		if rapid.Bool().Draw(t, "diverging") {
			e.Diverging = &kraft.LogOffsetMetadata{Offset: genOffset(t, "divOffset"), Epoch: genEpoch(t, "divEpoch")}
		}
		if rapid.Bool().Draw(t, "snapshot") {
			e.Snapshot = &kraft.LogEnd{Offset: rapid.Int64Range(0, 1<<40).Draw(t, "snapOffset"), Epoch: genEpoch(t, "snapEpoch")}
		}
		m = Msg{API: Fetch, Event: e, LogStartOffset: genOffset(t, "logStart"), Records: genEntries(t), Endpoints: genEndpoints(t, leader, false, true)}
		if len(m.Records) > 0 {
			m.RecordTimestamp = rapid.Int64Range(0, 1<<45).Draw(t, "ts")
		}
		want = m
		if version < 16 {
			want.Endpoints = nil
		}
	case FetchSnapshot:
		chunk := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "chunk")
		e := kraft.ReceiveFetchSnapshotResponse{
			From: from, Error: code, LeaderID: leader, LeaderEpoch: genEpoch(t, "epoch"),
			Snapshot: kraft.LogEnd{Offset: genOffset(t, "snapOffset"), Epoch: genEpoch(t, "snapEpoch")},
			Size:     genOffset(t, "size"), Position: genOffset(t, "position"), Bytes: int64(len(chunk)),
		}
		m = Msg{API: FetchSnapshot, Event: e, Chunk: chunk, Endpoints: genEndpoints(t, leader, false, false)}
		want = m
		if version < 1 {
			want.Endpoints = nil
		}
	}
	if code == kraft.ErrInconsistentClusterID {
		return m, from, Msg{}, code
	}
	return m, from, want, kraft.ErrNone
}

// TestResponseRoundTrip: every response event, at every supported
// version, with its records or chunk and endpoints, through EncodeResponse,
// a whole frame, ReadResponse and DecodeResponse, comes back as the
// requester should step it; INCONSISTENT_CLUSTER_ID comes back as a
// top-level error.
func TestResponseRoundTrip(t *testing.T) {
	forEveryVersion(t, func(t *rapid.T, api, version int16) {
		m, from, want, topErr := genResponse(t, api, version)
		resp, err := EncodeResponse(m, version)
		if err != nil {
			t.Fatal(err)
		}
		corr := rapid.Int32().Draw(t, "corr")
		frame := AppendResponse(nil, corr, resp)
		gotCorr, back, err := ReadResponse(frame, m.API, version)
		if err != nil {
			t.Fatal(err)
		}
		if gotCorr != corr {
			t.Fatalf("correlation id %d, want %d", gotCorr, corr)
		}
		got, err := DecodeResponse(back, from)
		if topErr != kraft.ErrNone {
			var te *TopLevelError
			if !errors.As(err, &te) || te.Code != topErr || te.API != m.API {
				t.Fatalf("got %v, want a top-level %v", err, topErr)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Chunk, want.Chunk) {
			t.Fatalf("chunk %x, want %x", got.Chunk, want.Chunk)
		}
		got.Chunk, want.Chunk = nil, nil
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("v%d:\ngot  %+v\nwant %+v", version, got, want)
		}
	})
}
