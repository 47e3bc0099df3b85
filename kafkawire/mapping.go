package kafkawire

import (
	"errors"
	"fmt"

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

// EncodeRequest makes the kmsg request of a request Msg at version.
func EncodeRequest(m Msg, version int16) (kmsg.Request, error) {
	switch e := m.Event.(type) {
	case kraft.ReceiveVoteRequest:
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
	case kraft.ReceiveBeginQuorumEpoch:
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
	case kraft.ReceiveEndQuorumEpoch:
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
	case kraft.ReceiveFetch:
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
	case kraft.ReceiveFetchSnapshot:
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
	case kraft.ReceiveAddVoter, kraft.ReceiveRemoveVoter, kraft.ReceiveUpdateVoter:
		return encodeVoterRequest(m, version)
	}
	return nil, fmt.Errorf("kafkawire: %T is not a request event", m.Event)
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

// DecodeRequest makes a request Msg of a kmsg request received by the
// replica with key local. The event's From is the requester as the body
// names it (Vote's replica_id, BeginQuorumEpoch's and EndQuorumEpoch's
// leader_id, Fetch's and FetchSnapshot's replica_id); a FetchSnapshot's Size
// is -1 (the receiving host looks it up); an EndQuorumEpoch's SuccessorRank
// is local's place in its preferred successors. A malformed cluster id
// gives ErrInvalidClusterID, another partition ErrNotMetadataPartition.
func DecodeRequest(r kmsg.Request, local kraft.ReplicaKey) (Msg, error) {
	m := Msg{API: r.Key()}
	switch r := r.(type) {
	case *kmsg.VoteRequest:
		cid, err := ParseClusterID(r.ClusterID)
		if err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 ||
			r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
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
	case *kmsg.BeginQuorumEpochRequest:
		cid, err := ParseClusterID(r.ClusterID)
		if err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 ||
			r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
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
	case *kmsg.EndQuorumEpochRequest:
		cid, err := ParseClusterID(r.ClusterID)
		if err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 ||
			r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
		if r.Version == 0 {
			m.Preferred = []kraft.ReplicaKey{}
			for _, id := range p.PreferredSuccessors {
				m.Preferred = append(m.Preferred, kraft.ReplicaKey{ID: kraft.NodeID(id)})
			}
		} else {
			m.Preferred = []kraft.ReplicaKey{}
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
	case *kmsg.FetchRequest:
		if r.Version < 12 {
			return m, fmt.Errorf("%w: Fetch v%d has no last fetched epoch", ErrNotRepresentable, r.Version)
		}
		cid, err := ParseClusterID(r.ClusterID)
		if err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || !isMetadataTopic(r.Version, r.Topics[0].Topic, r.Topics[0].TopicID) ||
			len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
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
	case *kmsg.FetchSnapshotRequest:
		cid, err := ParseClusterID(r.ClusterID)
		if err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 ||
			r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
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
	case *kmsg.AddRaftVoterRequest, *kmsg.RemoveRaftVoterRequest, *kmsg.UpdateRaftVoterRequest:
		return decodeVoterRequest(r)
	default:
		return m, fmt.Errorf("kafkawire: %s is not a raft request kraft maps", kmsg.NameForKey(r.Key()))
	}
	return m, nil
}

// rankOf is kraft.RankOf: local's place in the preferred successors.
func rankOf(local kraft.ReplicaKey, preferred []kraft.ReplicaKey) kraft.SuccessorRank {
	return kraft.RankOf(local, preferred)
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
	switch e := m.Event.(type) {
	case kraft.ReceiveVoteResponse:
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
	case kraft.ReceiveQuorumResponse:
		switch m.API {
		case BeginQuorumEpoch:
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
		case EndQuorumEpoch:
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
		return nil, fmt.Errorf("kafkawire: a ReceiveQuorumResponse needs API BeginQuorumEpoch or EndQuorumEpoch, not %d", m.API)
	case kraft.ReceiveFetchResponse:
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
		if len(m.Records) > 0 {
			recs, err := f.AppendEntries(nil, m.Records, m.RecordTimestamp)
			if err != nil {
				return nil, err
			}
			p.RecordBatches = recs
		} else {
			p.RecordBatches = []byte{}
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
	case kraft.ReceiveFetchSnapshotResponse:
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
	m := Msg{API: r.Key()}
	top := func(code int16) error {
		if code != 0 {
			return &TopLevelError{API: r.Key(), Code: kraft.ErrorCode(code)}
		}
		return nil
	}
	switch r := r.(type) {
	case *kmsg.VoteResponse:
		if err := top(r.ErrorCode); err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 ||
			r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
		m.Event = kraft.ReceiveVoteResponse{
			From: from, Error: kraft.ErrorCode(p.ErrorCode), Epoch: kraft.Epoch(p.LeaderEpoch),
			VoteGranted: p.VoteGranted, LeaderID: kraft.NodeID(p.LeaderID),
		}
		for _, ep := range r.NodeEndpoints {
			m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(ep.NodeID), Host: ep.Host, Port: ep.Port})
		}
	case *kmsg.BeginQuorumEpochResponse:
		if err := top(r.ErrorCode); err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 ||
			r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
		m.Event = kraft.ReceiveQuorumResponse{From: from, Error: kraft.ErrorCode(p.ErrorCode), Epoch: kraft.Epoch(p.LeaderEpoch), LeaderID: kraft.NodeID(p.LeaderID)}
		for _, ep := range r.NodeEndpoints {
			m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(ep.NodeID), Host: ep.Host, Port: ep.Port})
		}
	case *kmsg.EndQuorumEpochResponse:
		if err := top(r.ErrorCode); err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 ||
			r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
		m.Event = kraft.ReceiveQuorumResponse{From: from, Error: kraft.ErrorCode(p.ErrorCode), Epoch: kraft.Epoch(p.LeaderEpoch), LeaderID: kraft.NodeID(p.LeaderID)}
		for _, ep := range r.NodeEndpoints {
			m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(ep.NodeID), Host: ep.Host, Port: ep.Port})
		}
	case *kmsg.FetchResponse:
		if r.Version < 12 {
			return m, fmt.Errorf("%w: Fetch v%d", ErrNotRepresentable, r.Version)
		}
		if err := top(r.ErrorCode); err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || !isMetadataTopic(r.Version, r.Topics[0].Topic, r.Topics[0].TopicID) ||
			len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
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
	case *kmsg.FetchSnapshotResponse:
		if err := top(r.ErrorCode); err != nil {
			return m, err
		}
		if len(r.Topics) != 1 || r.Topics[0].Topic != MetadataTopic || len(r.Topics[0].Partitions) != 1 ||
			r.Topics[0].Partitions[0].Partition != MetadataPartition {
			return m, ErrNotMetadataPartition
		}
		p := &r.Topics[0].Partitions[0]
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
	default:
		return m, fmt.Errorf("kafkawire: %s is not a raft response kraft maps", kmsg.NameForKey(r.Key()))
	}
	return m, nil
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
