package kafkawire

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Endpoint is a replica's network endpoint as Kafka's quorum RPCs carry it:
// leader_endpoints of BeginQuorumEpoch and EndQuorumEpoch requests (Name,
// Host, Port; NodeID is the request's leader), node_endpoints of Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot responses
// (NodeID, Host, Port; Name is not on the wire there). Rack is a Fetch
// response's; nil is null.
type Endpoint struct {
	NodeID kraft.NodeID
	Name   string
	Host   string
	Port   uint16
	Rack   *string
}

// Msg is one raft RPC in kraft's terms: the event its addressee steps
// (what kraft.Deliver makes of the sender's action) and what the wire
// carries besides.
type Msg struct {
	// Event is one of kraft's ReceiveVoteRequest, ReceiveVoteResponse,
	// ReceiveBeginQuorumEpoch, ReceiveEndQuorumEpoch, ReceiveQuorumResponse
	// (a BeginQuorumEpoch or EndQuorumEpoch response, API says which),
	// ReceiveFetch, ReceiveFetchResponse, ReceiveFetchSnapshot and
	// ReceiveFetchSnapshotResponse; or a KIP-853 voter-change request,
	// ReceiveAddVoter, ReceiveRemoveVoter or ReceiveUpdateVoter (their
	// answers are VoterAnswer, DecodeVoterAnswer).
	Event kraft.Event
	// API is the message's API key. Encoding needs it only for a
	// ReceiveQuorumResponse; decoding sets it.
	API int16
	// Records are a Fetch response's records (kraft log entries, in v2
	// record batches on the wire: AppendEntries), and RecordTimestamp the
	// timestamp its batches carry.
	Records         []storage.Entry
	RecordTimestamp int64
	// LogStartOffset is a Fetch response's log_start_offset.
	LogStartOffset int64
	// Chunk is a FetchSnapshot response's bytes (unaligned_records); the
	// event's Bytes is their length.
	Chunk []byte
	// Preferred is an EndQuorumEpoch request's list of preferred
	// successors (preferred_candidates; v0's preferred_successors has ids
	// only). The event's SuccessorRank is the addressee's place in it,
	// which the decoder computes from the local key (kraft.RankOf); the
	// encoder sends this list and ignores SuccessorRank (PreferredFor makes
	// a list from a rank).
	Preferred []kraft.ReplicaKey
	// Endpoints are the message's endpoints (see Endpoint).
	Endpoints []Endpoint
	// MaxWaitMs and MaxBytes are a Fetch request's max_wait_ms and
	// max_bytes, and a FetchSnapshot request's max_bytes.
	MaxWaitMs, MaxBytes int32
	// TimeoutMs is an AddRaftVoter request's timeout_ms.
	TimeoutMs int32
}

// ErrNotMetadataPartition is returned for a message about any partition but
// __cluster_metadata-0, or about several: Kafka answers such Vote,
// BeginQuorumEpoch, EndQuorumEpoch and Fetch requests with a top-level
// INVALID_REQUEST and FetchSnapshot with UNKNOWN_TOPIC_OR_PARTITION.
var ErrNotMetadataPartition = errors.New("kafkawire: not a request for __cluster_metadata-0")

// ErrNotRepresentable is returned when an event cannot be sent at a
// version: a pre-vote below Vote v2 (KIP-996), a Fetch below v12.
var ErrNotRepresentable = errors.New("kafkawire: not representable at this version")

// TopLevelError is a response whose top-level error_code is not NONE: it
// carries no partition data and is not stepped (the host backs off and
// retries; a Vote answered UNSUPPORTED_VERSION is the exception,
// docs/wire-mapping.md).
type TopLevelError struct {
	API  int16
	Code kraft.ErrorCode
}

func (e *TopLevelError) Error() string {
	return fmt.Sprintf("kafkawire: %s response with top-level error %v", kmsg.NameForKey(e.API), e.Code)
}

// topLevel reports whether a response event's error goes in the top-level
// error_code: INCONSISTENT_CLUSTER_ID always does, with no partition data.
func topLevel(code kraft.ErrorCode) bool { return code == kraft.ErrInconsistentClusterID }

// mapper converts one API between kraft's events and kmsg's messages;
// a nil function is a side kraft does not map this way (a voter change's
// answer is VoterAnswer's; ApiVersions is the transport's).
type mapper struct {
	encodeRequest  func(m Msg, version int16) (kmsg.Request, error)
	decodeRequest  func(r kmsg.Request, local kraft.ReplicaKey) (Msg, error)
	encodeResponse func(f Format, m Msg, version int16) (kmsg.Response, error)
	decodeResponse func(f Format, r kmsg.Response, from kraft.NodeID) (Msg, error)
}

// mappers holds each API's conversions by API key (docs/design.md D272).
// The wrappers check the event's or the message's type, so each function
// gets the one type it converts.
var mappers = map[int16]mapper{
	Vote: {
		encodeReq(encodeVoteRequest), decodeReq(decodeVoteRequest),
		encodeResp(encodeVoteResponse), decodeResp(decodeVoteResponse),
	},
	BeginQuorumEpoch: {
		encodeReq(encodeBeginQuorumEpoch), decodeReq(decodeBeginQuorumEpoch),
		encodeResp(encodeBeginQuorumEpochResponse), decodeResp(decodeBeginQuorumEpochResponse),
	},
	EndQuorumEpoch: {
		encodeReq(encodeEndQuorumEpoch), decodeReq(decodeEndQuorumEpoch),
		encodeResp(encodeEndQuorumEpochResponse), decodeResp(decodeEndQuorumEpochResponse),
	},
	Fetch: {
		encodeReq(encodeFetch), decodeReq(decodeFetch),
		encodeResp(encodeFetchResponse), decodeResp(decodeFetchResponse),
	},
	FetchSnapshot: {
		encodeReq(encodeFetchSnapshot), decodeReq(decodeFetchSnapshot),
		encodeResp(encodeFetchSnapshotResponse), decodeResp(decodeFetchSnapshotResponse),
	},
	// A voter change's answer is VoterAnswer's (voterchange.go).
	AddRaftVoter:    {encodeRequest: encodeVoterRequest, decodeRequest: decodeVoterRequestFor},
	RemoveRaftVoter: {encodeRequest: encodeVoterRequest, decodeRequest: decodeVoterRequestFor},
	UpdateRaftVoter: {encodeRequest: encodeVoterRequest, decodeRequest: decodeVoterRequestFor},
}

// encodeReq makes a mapper's encodeRequest of f, for events of type E.
func encodeReq[E kraft.Event](f func(Msg, E, int16) (kmsg.Request, error)) func(Msg, int16) (kmsg.Request, error) {
	return func(m Msg, version int16) (kmsg.Request, error) {
		e, ok := m.Event.(E)
		if !ok {
			return nil, fmt.Errorf("kafkawire: %T is not a request event", m.Event)
		}
		return f(m, e, version)
	}
}

// encodeResp makes a mapper's encodeResponse of f, for events of type E.
func encodeResp[E kraft.Event](f func(Format, Msg, E, int16) (kmsg.Response, error)) func(Format, Msg, int16) (kmsg.Response, error) {
	return func(form Format, m Msg, version int16) (kmsg.Response, error) {
		e, ok := m.Event.(E)
		if !ok {
			return nil, fmt.Errorf("kafkawire: %T is not a response event", m.Event)
		}
		return f(form, m, e, version)
	}
}

// decodeReq makes a mapper's decodeRequest of f, for requests of type R.
func decodeReq[R kmsg.Request](f func(R, kraft.ReplicaKey) (Msg, error)) func(kmsg.Request, kraft.ReplicaKey) (Msg, error) {
	return func(req kmsg.Request, local kraft.ReplicaKey) (Msg, error) {
		r, ok := req.(R)
		if !ok {
			return Msg{API: req.Key()}, fmt.Errorf("kafkawire: %T is not a raft request kraft maps", req)
		}
		return f(r, local)
	}
}

// decodeResp makes a mapper's decodeResponse of f, for responses of type R.
func decodeResp[R kmsg.Response](f func(Format, R, kraft.NodeID) (Msg, error)) func(Format, kmsg.Response, kraft.NodeID) (Msg, error) {
	return func(form Format, resp kmsg.Response, from kraft.NodeID) (Msg, error) {
		r, ok := resp.(R)
		if !ok {
			return Msg{API: resp.Key()}, fmt.Errorf("kafkawire: %T is not a raft response kraft maps", resp)
		}
		return f(form, r, from)
	}
}

// requestAPI and responseAPIs are the API keys of each request event and
// response event, read from kraft's catalogue of messages (kraft.RPCs,
// D230). A response event may answer several APIs (ReceiveQuorumResponse
// answers BeginQuorumEpoch and EndQuorumEpoch); the Msg's API picks one.
var requestAPI, responseAPIs = func() (map[reflect.Type]int16, map[reflect.Type][]int16) {
	req, resp := map[reflect.Type]int16{}, map[reflect.Type][]int16{}
	for _, r := range kraft.RPCs() {
		if r.RequestEvent != nil {
			req[reflect.TypeOf(r.RequestEvent)] = r.APIKey
		}
		for _, e := range r.ResponseEvents {
			resp[reflect.TypeOf(e)] = append(resp[reflect.TypeOf(e)], r.APIKey)
		}
	}
	return req, resp
}()

// responseAPI is the API key of response m: its event's one API, or m.API
// if the event answers several and m.API is one of them.
func responseAPI(m Msg) (int16, bool) {
	keys := responseAPIs[reflect.TypeOf(m.Event)]
	if len(keys) == 1 {
		return keys[0], true
	}
	for _, k := range keys {
		if k == m.API {
			return k, true
		}
	}
	return 0, false
}

// EncodeRequest makes the kmsg request of a request Msg at version.
func EncodeRequest(m Msg, version int16) (kmsg.Request, error) {
	if f := mappers[requestAPI[reflect.TypeOf(m.Event)]].encodeRequest; f != nil {
		return f(m, version)
	}
	return nil, fmt.Errorf("kafkawire: %T is not a request event", m.Event)
}

// DecodeRequest makes a request Msg of a kmsg request received by the
// replica with key local. The event's From is the requester as the body
// names it (Vote's replica_id, BeginQuorumEpoch's and EndQuorumEpoch's
// leader_id, Fetch's and FetchSnapshot's replica_id); a FetchSnapshot's Size
// is -1 (the receiving host looks it up); an EndQuorumEpoch's SuccessorRank
// is local's place in its preferred successors. A malformed cluster id
// gives ErrInvalidClusterID, another partition ErrNotMetadataPartition.
func DecodeRequest(r kmsg.Request, local kraft.ReplicaKey) (Msg, error) {
	if f := mappers[r.Key()].decodeRequest; f != nil {
		return f(r, local)
	}
	return Msg{API: r.Key()}, fmt.Errorf("kafkawire: %s is not a raft request kraft maps", kmsg.NameForKey(r.Key()))
}

// EncodeResponse makes the kmsg response of a response Msg at version.
// INCONSISTENT_CLUSTER_ID goes in the top-level error_code with no
// partition data; every other code in the partition's. A Fetch
// response's VotersRecords name the listeners under CONTROLLER
// (Format.EncodeResponse).
func EncodeResponse(m Msg, version int16) (kmsg.Response, error) {
	return Format{}.EncodeResponse(m, version)
}

// EncodeResponse is the package's EncodeResponse with a Fetch response's
// VotersRecords under f's listener name (docs/design.md D310).
func (f Format) EncodeResponse(m Msg, version int16) (kmsg.Response, error) {
	if _, ok := m.Event.(kraft.ReceiveQuorumResponse); ok && m.API != BeginQuorumEpoch && m.API != EndQuorumEpoch {
		return nil, fmt.Errorf("kafkawire: a ReceiveQuorumResponse needs API BeginQuorumEpoch or EndQuorumEpoch, not %d", m.API)
	}
	if key, ok := responseAPI(m); ok {
		if enc := mappers[key].encodeResponse; enc != nil {
			return enc(f, m, version)
		}
	}
	return nil, fmt.Errorf("kafkawire: %T is not a response event", m.Event)
}

// DecodeResponse makes a response Msg of a kmsg response that replica from
// sent. A top-level error gives a *TopLevelError and no event; a response
// about another partition ErrNotMetadataPartition; a Fetch response's
// records are decoded (CRC-checked) into Records, VotersRecords under the
// listener name CONTROLLER (Format.DecodeResponse).
func DecodeResponse(r kmsg.Response, from kraft.NodeID) (Msg, error) {
	return Format{}.DecodeResponse(r, from)
}

// DecodeResponse is the package's DecodeResponse with a Fetch response's
// VotersRecords read under f's listener name (docs/design.md D310).
func (f Format) DecodeResponse(r kmsg.Response, from kraft.NodeID) (Msg, error) {
	if dec := mappers[r.Key()].decodeResponse; dec != nil {
		return dec(f, r, from)
	}
	return Msg{API: r.Key()}, fmt.Errorf("kafkawire: %s is not a raft response kraft maps", kmsg.NameForKey(r.Key()))
}

// topError is a response's top-level error_code as an error: nil for NONE.
func topError(api, code int16) error {
	if code != 0 {
		return &TopLevelError{API: api, Code: kraft.ErrorCode(code)}
	}
	return nil
}

// only is a pointer to the one element of s; nil unless s has exactly one.
func only[T any](s []T) *T {
	if len(s) != 1 {
		return nil
	}
	return &s[0]
}

// onlyPartition is the one partition of the one topic named name, if it is
// __cluster_metadata-0; nil otherwise. partitions and partition read a
// topic's partitions and a partition's index.
func onlyPartition[T, P any](topics []T, name func(*T) bool, partitions func(*T) []P, partition func(*P) int32) *P {
	t := only(topics)
	if t == nil || !name(t) {
		return nil
	}
	p := only(partitions(t))
	if p == nil || partition(p) != MetadataPartition {
		return nil
	}
	return p
}

// encodeVoteRequest is Vote's request: a pre-vote needs v2 (KIP-996).
func encodeVoteRequest(m Msg, e kraft.ReceiveVoteRequest, version int16) (kmsg.Request, error) {
	if e.PreVote && version < 2 {
		return nil, fmt.Errorf("%w: a pre-vote needs Vote v2", ErrNotRepresentable)
	}
	r := kmsg.NewPtrVoteRequest()
	r.Version = version
	r.ClusterID = ClusterIDString(e.ClusterID)
	r.VoterID = int32(e.VoterID)
	p := kmsg.NewVoteRequestTopicPartition()
	p.Partition = MetadataPartition
	p.CandidateEpoch = int32(e.CandidateEpoch)
	p.CandidateID = int32(e.Candidate)
	p.CandidateDirectoryID = e.CandidateDirectoryID
	p.VoterDirectoryID = e.VoterDirectoryID
	p.LastOffsetEpoch = int32(e.CandidateLogEnd.Epoch)
	p.LastOffset = e.CandidateLogEnd.Offset
	p.PreVote = e.PreVote
	t := kmsg.NewVoteRequestTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.VoteRequestTopicPartition{p}
	r.Topics = []kmsg.VoteRequestTopic{t}
	return r, nil
}

func decodeVoteRequest(r *kmsg.VoteRequest, _ kraft.ReplicaKey) (Msg, error) {
	m := Msg{API: Vote}
	cid, err := ParseClusterID(r.ClusterID)
	if err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.VoteRequestTopic) bool { return t.Topic == MetadataTopic },
		func(t *kmsg.VoteRequestTopic) []kmsg.VoteRequestTopicPartition { return t.Partitions },
		func(p *kmsg.VoteRequestTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	voter := kraft.NodeID(r.VoterID)
	if r.Version < 1 {
		voter = kraft.NoNode
	}
	m.Event = kraft.ReceiveVoteRequest{
		From: kraft.NodeID(p.CandidateID), ClusterID: cid,
		VoterID: voter, VoterDirectoryID: p.VoterDirectoryID,
		CandidateEpoch: kraft.Epoch(p.CandidateEpoch), Candidate: kraft.NodeID(p.CandidateID),
		CandidateDirectoryID: p.CandidateDirectoryID,
		CandidateLogEnd:      kraft.LogEnd{Offset: p.LastOffset, Epoch: kraft.Epoch(p.LastOffsetEpoch)},
		PreVote:              p.PreVote,
	}
	return m, nil
}

func encodeVoteResponse(_ Format, m Msg, e kraft.ReceiveVoteResponse, version int16) (kmsg.Response, error) {
	r := kmsg.NewPtrVoteResponse()
	r.Version = version
	if topLevel(e.Error) {
		r.ErrorCode = int16(e.Error)
		return r, nil
	}
	p := kmsg.NewVoteResponseTopicPartition()
	p.Partition = MetadataPartition
	p.ErrorCode = int16(e.Error)
	p.LeaderID = int32(e.LeaderID)
	p.LeaderEpoch = int32(e.Epoch)
	p.VoteGranted = e.VoteGranted
	t := kmsg.NewVoteResponseTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.VoteResponseTopicPartition{p}
	r.Topics = []kmsg.VoteResponseTopic{t}
	if version >= 1 {
		for _, ep := range m.Endpoints {
			r.NodeEndpoints = append(r.NodeEndpoints, kmsg.VoteResponseNodeEndpoint{NodeID: int32(ep.NodeID), Host: ep.Host, Port: ep.Port})
		}
	}
	return r, nil
}

func decodeVoteResponse(_ Format, r *kmsg.VoteResponse, from kraft.NodeID) (Msg, error) {
	m := Msg{API: Vote}
	if err := topError(Vote, r.ErrorCode); err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.VoteResponseTopic) bool { return t.Topic == MetadataTopic },
		func(t *kmsg.VoteResponseTopic) []kmsg.VoteResponseTopicPartition { return t.Partitions },
		func(p *kmsg.VoteResponseTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	m.Event = kraft.ReceiveVoteResponse{
		From: from, Error: kraft.ErrorCode(p.ErrorCode), Epoch: kraft.Epoch(p.LeaderEpoch),
		VoteGranted: p.VoteGranted, LeaderID: kraft.NodeID(p.LeaderID),
	}
	for _, ep := range r.NodeEndpoints {
		m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(ep.NodeID), Host: ep.Host, Port: ep.Port})
	}
	return m, nil
}

func encodeBeginQuorumEpoch(m Msg, e kraft.ReceiveBeginQuorumEpoch, version int16) (kmsg.Request, error) {
	r := kmsg.NewPtrBeginQuorumEpochRequest()
	r.Version = version
	r.ClusterID = ClusterIDString(e.ClusterID)
	r.VoterID = int32(e.VoterID)
	p := kmsg.NewBeginQuorumEpochRequestTopicPartition()
	p.Partition = MetadataPartition
	p.VoterDirectoryID = e.VoterDirectoryID
	p.LeaderID = int32(e.LeaderID)
	p.LeaderEpoch = int32(e.LeaderEpoch)
	t := kmsg.NewBeginQuorumEpochRequestTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.BeginQuorumEpochRequestTopicPartition{p}
	r.Topics = []kmsg.BeginQuorumEpochRequestTopic{t}
	if version >= 1 {
		r.LeaderEndpoints = []kmsg.BeginQuorumEpochRequestLeaderEndpoint{}
		for _, ep := range m.Endpoints {
			r.LeaderEndpoints = append(r.LeaderEndpoints, kmsg.BeginQuorumEpochRequestLeaderEndpoint{Name: ep.Name, Host: ep.Host, Port: ep.Port})
		}
	}
	return r, nil
}

func decodeBeginQuorumEpoch(r *kmsg.BeginQuorumEpochRequest, _ kraft.ReplicaKey) (Msg, error) {
	m := Msg{API: BeginQuorumEpoch}
	cid, err := ParseClusterID(r.ClusterID)
	if err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.BeginQuorumEpochRequestTopic) bool { return t.Topic == MetadataTopic },
		func(t *kmsg.BeginQuorumEpochRequestTopic) []kmsg.BeginQuorumEpochRequestTopicPartition {
			return t.Partitions
		},
		func(p *kmsg.BeginQuorumEpochRequestTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	voter := kraft.NodeID(r.VoterID)
	if r.Version < 1 {
		voter = kraft.NoNode
	}
	m.Event = kraft.ReceiveBeginQuorumEpoch{
		From: kraft.NodeID(p.LeaderID), ClusterID: cid,
		LeaderID: kraft.NodeID(p.LeaderID), LeaderEpoch: kraft.Epoch(p.LeaderEpoch),
		VoterID: voter, VoterDirectoryID: p.VoterDirectoryID,
	}
	for _, ep := range r.LeaderEndpoints {
		m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(p.LeaderID), Name: ep.Name, Host: ep.Host, Port: ep.Port})
	}
	return m, nil
}

func encodeBeginQuorumEpochResponse(_ Format, m Msg, e kraft.ReceiveQuorumResponse, version int16) (kmsg.Response, error) {
	r := kmsg.NewPtrBeginQuorumEpochResponse()
	r.Version = version
	if topLevel(e.Error) {
		r.ErrorCode = int16(e.Error)
		return r, nil
	}
	p := kmsg.NewBeginQuorumEpochResponseTopicPartition()
	p.Partition = MetadataPartition
	p.ErrorCode = int16(e.Error)
	p.LeaderID = int32(e.LeaderID)
	p.LeaderEpoch = int32(e.Epoch)
	t := kmsg.NewBeginQuorumEpochResponseTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.BeginQuorumEpochResponseTopicPartition{p}
	r.Topics = []kmsg.BeginQuorumEpochResponseTopic{t}
	if version >= 1 {
		for _, ep := range m.Endpoints {
			r.NodeEndpoints = append(r.NodeEndpoints, kmsg.BeginQuorumEpochResponseNodeEndpoint{NodeID: int32(ep.NodeID), Host: ep.Host, Port: ep.Port})
		}
	}
	return r, nil
}

func decodeBeginQuorumEpochResponse(_ Format, r *kmsg.BeginQuorumEpochResponse, from kraft.NodeID) (Msg, error) {
	m := Msg{API: BeginQuorumEpoch}
	if err := topError(BeginQuorumEpoch, r.ErrorCode); err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.BeginQuorumEpochResponseTopic) bool { return t.Topic == MetadataTopic },
		func(t *kmsg.BeginQuorumEpochResponseTopic) []kmsg.BeginQuorumEpochResponseTopicPartition {
			return t.Partitions
		},
		func(p *kmsg.BeginQuorumEpochResponseTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	m.Event = kraft.ReceiveQuorumResponse{From: from, Error: kraft.ErrorCode(p.ErrorCode), Epoch: kraft.Epoch(p.LeaderEpoch), LeaderID: kraft.NodeID(p.LeaderID)}
	for _, ep := range r.NodeEndpoints {
		m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(ep.NodeID), Host: ep.Host, Port: ep.Port})
	}
	return m, nil
}

// encodeEndQuorumEpoch sends m.Preferred: ids only in v0's
// preferred_successors, keys in v1's preferred_candidates.
func encodeEndQuorumEpoch(m Msg, e kraft.ReceiveEndQuorumEpoch, version int16) (kmsg.Request, error) {
	r := kmsg.NewPtrEndQuorumEpochRequest()
	r.Version = version
	r.ClusterID = ClusterIDString(e.ClusterID)
	p := kmsg.NewEndQuorumEpochRequestTopicPartition()
	p.Partition = MetadataPartition
	p.LeaderID = int32(e.LeaderID)
	p.LeaderEpoch = int32(e.LeaderEpoch)
	if version == 0 {
		p.PreferredSuccessors = []int32{}
		for _, k := range m.Preferred {
			p.PreferredSuccessors = append(p.PreferredSuccessors, int32(k.ID))
		}
	} else {
		p.PreferredCandidates = []kmsg.EndQuorumEpochRequestTopicPartitionPreferredCandidate{}
		for _, k := range m.Preferred {
			p.PreferredCandidates = append(p.PreferredCandidates,
				kmsg.EndQuorumEpochRequestTopicPartitionPreferredCandidate{CandidateID: int32(k.ID), CandidateDirectoryID: k.DirectoryID})
		}
		r.LeaderEndpoints = []kmsg.EndQuorumEpochRequestLeaderEndpoint{}
		for _, ep := range m.Endpoints {
			r.LeaderEndpoints = append(r.LeaderEndpoints, kmsg.EndQuorumEpochRequestLeaderEndpoint{Name: ep.Name, Host: ep.Host, Port: ep.Port})
		}
	}
	t := kmsg.NewEndQuorumEpochRequestTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.EndQuorumEpochRequestTopicPartition{p}
	r.Topics = []kmsg.EndQuorumEpochRequestTopic{t}
	return r, nil
}

func decodeEndQuorumEpoch(r *kmsg.EndQuorumEpochRequest, local kraft.ReplicaKey) (Msg, error) {
	m := Msg{API: EndQuorumEpoch}
	cid, err := ParseClusterID(r.ClusterID)
	if err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.EndQuorumEpochRequestTopic) bool { return t.Topic == MetadataTopic },
		func(t *kmsg.EndQuorumEpochRequestTopic) []kmsg.EndQuorumEpochRequestTopicPartition {
			return t.Partitions
		},
		func(p *kmsg.EndQuorumEpochRequestTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	m.Preferred = []kraft.ReplicaKey{}
	if r.Version == 0 {
		for _, id := range p.PreferredSuccessors {
			m.Preferred = append(m.Preferred, kraft.ReplicaKey{ID: kraft.NodeID(id)})
		}
	} else {
		for _, c := range p.PreferredCandidates {
			m.Preferred = append(m.Preferred, kraft.ReplicaKey{ID: kraft.NodeID(c.CandidateID), DirectoryID: c.CandidateDirectoryID})
		}
	}
	for _, ep := range r.LeaderEndpoints {
		m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(p.LeaderID), Name: ep.Name, Host: ep.Host, Port: ep.Port})
	}
	m.Event = kraft.ReceiveEndQuorumEpoch{
		From: kraft.NodeID(p.LeaderID), ClusterID: cid,
		LeaderID: kraft.NodeID(p.LeaderID), LeaderEpoch: kraft.Epoch(p.LeaderEpoch),
		SuccessorRank: rankOf(local, m.Preferred),
	}
	return m, nil
}

func encodeEndQuorumEpochResponse(_ Format, m Msg, e kraft.ReceiveQuorumResponse, version int16) (kmsg.Response, error) {
	r := kmsg.NewPtrEndQuorumEpochResponse()
	r.Version = version
	if topLevel(e.Error) {
		r.ErrorCode = int16(e.Error)
		return r, nil
	}
	p := kmsg.NewEndQuorumEpochResponseTopicPartition()
	p.Partition = MetadataPartition
	p.ErrorCode = int16(e.Error)
	p.LeaderID = int32(e.LeaderID)
	p.LeaderEpoch = int32(e.Epoch)
	t := kmsg.NewEndQuorumEpochResponseTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.EndQuorumEpochResponseTopicPartition{p}
	r.Topics = []kmsg.EndQuorumEpochResponseTopic{t}
	if version >= 1 {
		for _, ep := range m.Endpoints {
			r.NodeEndpoints = append(r.NodeEndpoints, kmsg.EndQuorumEpochResponseNodeEndpoint{NodeID: int32(ep.NodeID), Host: ep.Host, Port: ep.Port})
		}
	}
	return r, nil
}

func decodeEndQuorumEpochResponse(_ Format, r *kmsg.EndQuorumEpochResponse, from kraft.NodeID) (Msg, error) {
	m := Msg{API: EndQuorumEpoch}
	if err := topError(EndQuorumEpoch, r.ErrorCode); err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.EndQuorumEpochResponseTopic) bool { return t.Topic == MetadataTopic },
		func(t *kmsg.EndQuorumEpochResponseTopic) []kmsg.EndQuorumEpochResponseTopicPartition {
			return t.Partitions
		},
		func(p *kmsg.EndQuorumEpochResponseTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	m.Event = kraft.ReceiveQuorumResponse{From: from, Error: kraft.ErrorCode(p.ErrorCode), Epoch: kraft.Epoch(p.LeaderEpoch), LeaderID: kraft.NodeID(p.LeaderID)}
	for _, ep := range r.NodeEndpoints {
		m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(ep.NodeID), Host: ep.Host, Port: ep.Port})
	}
	return m, nil
}

// encodeFetch is the quorum's Fetch, v12 at least; v15 moves the replica
// id into ReplicaState, v17 adds the directory id.
func encodeFetch(m Msg, e kraft.ReceiveFetch, version int16) (kmsg.Request, error) {
	if version < 12 {
		return nil, fmt.Errorf("%w: the quorum's Fetch needs v12", ErrNotRepresentable)
	}
	r := kmsg.NewPtrFetchRequest()
	r.Version = version
	r.ClusterID = ClusterIDString(e.ClusterID)
	if version >= 15 {
		r.ReplicaState.ID = int32(e.From)
		r.ReplicaState.Epoch = -1
	} else {
		r.ReplicaID = int32(e.From)
	}
	r.MaxWaitMillis = m.MaxWaitMs
	r.MinBytes = 0
	r.MaxBytes = m.MaxBytes
	r.IsolationLevel = 0
	r.SessionID = 0
	r.SessionEpoch = -1
	r.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{}
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = MetadataPartition
	p.CurrentLeaderEpoch = int32(e.CurrentLeaderEpoch)
	p.FetchOffset = e.FetchOffset
	p.LastFetchedEpoch = int32(e.FetchEpoch)
	p.LogStartOffset = -1
	p.PartitionMaxBytes = 0
	if version >= 17 {
		p.ReplicaDirectoryID = e.FromDirectoryID
	}
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = topicOf(version)
	t.Partitions = []kmsg.FetchRequestTopicPartition{p}
	r.Topics = []kmsg.FetchRequestTopic{t}
	return r, nil
}

func decodeFetch(r *kmsg.FetchRequest, _ kraft.ReplicaKey) (Msg, error) {
	m := Msg{API: Fetch}
	if r.Version < 12 {
		return m, fmt.Errorf("%w: Fetch v%d has no last fetched epoch", ErrNotRepresentable, r.Version)
	}
	cid, err := ParseClusterID(r.ClusterID)
	if err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.FetchRequestTopic) bool { return isMetadataTopic(r.Version, t.Topic, t.TopicID) },
		func(t *kmsg.FetchRequestTopic) []kmsg.FetchRequestTopicPartition { return t.Partitions },
		func(p *kmsg.FetchRequestTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	from := r.ReplicaID
	if r.Version >= 15 {
		from = r.ReplicaState.ID
	}
	var dir uuid.UUID
	if r.Version >= 17 {
		dir = p.ReplicaDirectoryID
	}
	m.MaxWaitMs, m.MaxBytes = r.MaxWaitMillis, r.MaxBytes
	m.Event = kraft.ReceiveFetch{
		From: kraft.NodeID(from), FromDirectoryID: dir, ClusterID: cid,
		CurrentLeaderEpoch: kraft.Epoch(p.CurrentLeaderEpoch),
		FetchEpoch:         kraft.Epoch(p.LastFetchedEpoch), FetchOffset: p.FetchOffset,
	}
	return m, nil
}

func encodeFetchResponse(f Format, m Msg, e kraft.ReceiveFetchResponse, version int16) (kmsg.Response, error) {
	if version < 12 {
		return nil, fmt.Errorf("%w: the quorum's Fetch needs v12", ErrNotRepresentable)
	}
	r := kmsg.NewPtrFetchResponse()
	r.Version = version
	if topLevel(e.Error) {
		r.ErrorCode = int16(e.Error)
		r.Topics = []kmsg.FetchResponseTopic{}
		return r, nil
	}
	p, err := fetchResponsePartition(f, m, e)
	if err != nil {
		return nil, err
	}
	t := kmsg.NewFetchResponseTopic()
	t.Topic, t.TopicID = topicOf(version)
	t.Partitions = []kmsg.FetchResponseTopicPartition{p}
	r.Topics = []kmsg.FetchResponseTopic{t}
	if version >= 16 {
		for _, ep := range m.Endpoints {
			r.Brokers = append(r.Brokers, kmsg.FetchResponseBroker{NodeID: int32(ep.NodeID), Host: ep.Host, Port: int32(ep.Port), Rack: ep.Rack})
		}
	}
	return r, nil
}

// fetchResponsePartition is a Fetch response's partition data: e's
// fields and m's records, log start and timestamp.
func fetchResponsePartition(f Format, m Msg, e kraft.ReceiveFetchResponse) (kmsg.FetchResponseTopicPartition, error) {
	p := kmsg.NewFetchResponseTopicPartition()
	p.Partition = MetadataPartition
	p.ErrorCode = int16(e.Error)
	p.HighWatermark = e.HighWatermark
	p.LastStableOffset = -1
	p.LogStartOffset = m.LogStartOffset
	if e.Diverging != nil {
		p.DivergingEpoch.Epoch = int32(e.Diverging.Epoch)
		p.DivergingEpoch.EndOffset = e.Diverging.Offset
	}
	p.CurrentLeader.LeaderID = int32(e.LeaderID)
	p.CurrentLeader.LeaderEpoch = int32(e.LeaderEpoch)
	if e.Snapshot != nil {
		p.SnapshotID.EndOffset = e.Snapshot.Offset
		p.SnapshotID.Epoch = int32(e.Snapshot.Epoch)
	}
	p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	p.PreferredReadReplica = -1
	p.RecordBatches = []byte{}
	if len(m.Records) > 0 {
		recs, err := f.AppendEntries(nil, m.Records, m.RecordTimestamp)
		if err != nil {
			return p, err
		}
		p.RecordBatches = recs
	}
	return p, nil
}

func decodeFetchResponse(f Format, r *kmsg.FetchResponse, from kraft.NodeID) (Msg, error) {
	m := Msg{API: Fetch}
	if r.Version < 12 {
		return m, fmt.Errorf("%w: Fetch v%d", ErrNotRepresentable, r.Version)
	}
	if err := topError(Fetch, r.ErrorCode); err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.FetchResponseTopic) bool { return isMetadataTopic(r.Version, t.Topic, t.TopicID) },
		func(t *kmsg.FetchResponseTopic) []kmsg.FetchResponseTopicPartition { return t.Partitions },
		func(p *kmsg.FetchResponseTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	e := kraft.ReceiveFetchResponse{
		From: from, Error: kraft.ErrorCode(p.ErrorCode),
		LeaderID: kraft.NodeID(p.CurrentLeader.LeaderID), LeaderEpoch: kraft.Epoch(p.CurrentLeader.LeaderEpoch),
		HighWatermark: p.HighWatermark,
	}
	if p.DivergingEpoch.Epoch != -1 {
		e.Diverging = &kraft.LogOffsetMetadata{Offset: p.DivergingEpoch.EndOffset, Epoch: kraft.Epoch(p.DivergingEpoch.Epoch)}
	}
	if p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 {
		e.Snapshot = &kraft.LogEnd{Offset: p.SnapshotID.EndOffset, Epoch: kraft.Epoch(p.SnapshotID.Epoch)}
	}
	m.Event = e
	m.LogStartOffset = p.LogStartOffset
	var err error
	if m.Records, m.RecordTimestamp, err = f.ReadEntries(p.RecordBatches); err != nil {
		return m, err
	}
	for _, b := range r.Brokers {
		m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(b.NodeID), Host: b.Host, Port: uint16(b.Port), Rack: b.Rack})
	}
	return m, nil
}

func encodeFetchSnapshot(m Msg, e kraft.ReceiveFetchSnapshot, version int16) (kmsg.Request, error) {
	r := kmsg.NewPtrFetchSnapshotRequest()
	r.Version = version
	r.ClusterID = ClusterIDString(e.ClusterID)
	r.ReplicaID = int32(e.From)
	r.MaxBytes = m.MaxBytes
	p := kmsg.NewFetchSnapshotRequestTopicPartition()
	p.Partition = MetadataPartition
	p.CurrentLeaderEpoch = int32(e.CurrentLeaderEpoch)
	p.SnapshotID.EndOffset = e.Snapshot.Offset
	p.SnapshotID.Epoch = int32(e.Snapshot.Epoch)
	p.Position = e.Position
	if version >= 1 {
		p.ReplicaDirectoryID = e.FromDirectoryID
	}
	t := kmsg.NewFetchSnapshotRequestTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.FetchSnapshotRequestTopicPartition{p}
	r.Topics = []kmsg.FetchSnapshotRequestTopic{t}
	return r, nil
}

func decodeFetchSnapshot(r *kmsg.FetchSnapshotRequest, _ kraft.ReplicaKey) (Msg, error) {
	m := Msg{API: FetchSnapshot}
	cid, err := ParseClusterID(r.ClusterID)
	if err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.FetchSnapshotRequestTopic) bool { return t.Topic == MetadataTopic },
		func(t *kmsg.FetchSnapshotRequestTopic) []kmsg.FetchSnapshotRequestTopicPartition { return t.Partitions },
		func(p *kmsg.FetchSnapshotRequestTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	var dir uuid.UUID
	if r.Version >= 1 {
		dir = p.ReplicaDirectoryID
	}
	m.MaxBytes = r.MaxBytes
	m.Event = kraft.ReceiveFetchSnapshot{
		From: kraft.NodeID(r.ReplicaID), FromDirectoryID: dir, ClusterID: cid,
		CurrentLeaderEpoch: kraft.Epoch(p.CurrentLeaderEpoch),
		Snapshot:           kraft.LogEnd{Offset: p.SnapshotID.EndOffset, Epoch: kraft.Epoch(p.SnapshotID.Epoch)},
		Position:           p.Position, Size: -1,
	}
	return m, nil
}

func encodeFetchSnapshotResponse(_ Format, m Msg, e kraft.ReceiveFetchSnapshotResponse, version int16) (kmsg.Response, error) {
	r := kmsg.NewPtrFetchSnapshotResponse()
	r.Version = version
	if topLevel(e.Error) {
		r.ErrorCode = int16(e.Error)
		return r, nil
	}
	p := kmsg.NewFetchSnapshotResponseTopicPartition()
	p.Partition = MetadataPartition
	p.ErrorCode = int16(e.Error)
	p.SnapshotID.EndOffset = e.Snapshot.Offset
	p.SnapshotID.Epoch = int32(e.Snapshot.Epoch)
	p.CurrentLeader.LeaderID = int32(e.LeaderID)
	p.CurrentLeader.LeaderEpoch = int32(e.LeaderEpoch)
	p.Size = e.Size
	p.Position = e.Position
	p.Bytes = m.Chunk
	if p.Bytes == nil {
		p.Bytes = []byte{}
	}
	t := kmsg.NewFetchSnapshotResponseTopic()
	t.Topic = MetadataTopic
	t.Partitions = []kmsg.FetchSnapshotResponseTopicPartition{p}
	r.Topics = []kmsg.FetchSnapshotResponseTopic{t}
	if version >= 1 {
		for _, ep := range m.Endpoints {
			r.NodeEndpoints = append(r.NodeEndpoints, kmsg.FetchSnapshotResponseNodeEndpoint{NodeID: int32(ep.NodeID), Host: ep.Host, Port: ep.Port})
		}
	}
	return r, nil
}

func decodeFetchSnapshotResponse(_ Format, r *kmsg.FetchSnapshotResponse, from kraft.NodeID) (Msg, error) {
	m := Msg{API: FetchSnapshot}
	if err := topError(FetchSnapshot, r.ErrorCode); err != nil {
		return m, err
	}
	p := onlyPartition(r.Topics, func(t *kmsg.FetchSnapshotResponseTopic) bool { return t.Topic == MetadataTopic },
		func(t *kmsg.FetchSnapshotResponseTopic) []kmsg.FetchSnapshotResponseTopicPartition {
			return t.Partitions
		},
		func(p *kmsg.FetchSnapshotResponseTopicPartition) int32 { return p.Partition })
	if p == nil {
		return m, ErrNotMetadataPartition
	}
	m.Chunk = p.Bytes
	m.Event = kraft.ReceiveFetchSnapshotResponse{
		From: from, Error: kraft.ErrorCode(p.ErrorCode),
		LeaderID: kraft.NodeID(p.CurrentLeader.LeaderID), LeaderEpoch: kraft.Epoch(p.CurrentLeader.LeaderEpoch),
		Snapshot: kraft.LogEnd{Offset: p.SnapshotID.EndOffset, Epoch: kraft.Epoch(p.SnapshotID.Epoch)},
		Size:     p.Size, Position: p.Position, Bytes: int64(len(p.Bytes)),
	}
	for _, ep := range r.NodeEndpoints {
		m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(ep.NodeID), Host: ep.Host, Port: ep.Port})
	}
	return m, nil
}

// decodeVoterRequestFor is decodeVoterRequest as a mapper's decodeRequest.
func decodeVoterRequestFor(r kmsg.Request, _ kraft.ReplicaKey) (Msg, error) {
	return decodeVoterRequest(r)
}

// topicOf names the metadata topic in a Fetch of version: by name below
// v13, by topic id from v13 (KIP-516).
func topicOf(version int16) (string, [16]byte) {
	if version >= 13 {
		return "", MetadataTopicID
	}
	return MetadataTopic, [16]byte{}
}

func isMetadataTopic(version int16, name string, id [16]byte) bool {
	if version >= 13 {
		return id == MetadataTopicID
	}
	return name == MetadataTopic
}

// rankOf is kraft.RankOf: local's place in the preferred successors.
func rankOf(local kraft.ReplicaKey, preferred []kraft.ReplicaKey) kraft.SuccessorRank {
	return kraft.RankOf(local, preferred)
}

// PreferredFor makes an EndQuorumEpoch request's preferred successors for
// an addressee when only its rank is known (kraft.Deliver's
// ReceiveEndQuorumEpoch holds the addressee's SuccessorRank, not the
// leader's list): a list of rank.Of entries with the addressee's id at
// rank.Position (no directory id, which matches any) and filler, an id
// other than the addressee's (the resigning leader's), everywhere else.
// The addressee computes the same rank from it; Kafka's KafkaRaftClient
// uses the list for nothing but the receiver's own place in it
// (endEpochElectionBackoff). A position outside [0, Of) lists the
// addressee nowhere.
func PreferredFor(rank kraft.SuccessorRank, addressee, filler kraft.NodeID) []kraft.ReplicaKey {
	list := make([]kraft.ReplicaKey, max(rank.Of, 0))
	for i := range list {
		list[i] = kraft.ReplicaKey{ID: filler}
		if i == rank.Position {
			list[i].ID = addressee
		}
	}
	return list
}
