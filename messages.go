package kraft

import (
	"reflect"

	"github.com/google/uuid"
)

// This file is the catalogue of messages (docs/design.md D230) and the
// types of every RPC it names: each RPC's request and response actions and
// the events they are delivered as, with their methods, grouped per RPC in
// the catalogue's order. event.go and action.go keep the local events and
// actions (timers, the host's reports and requests, Persist, the log's and
// snapshots' actions).

// InFlight is a request's kind for a host's bookkeeping: a host keeps one
// request of each kind in flight per destination (Kafka's
// RequestManager keeps one per destination; docs/design.md D77) and
// forgets it when the answer comes.
type InFlight uint8

const (
	// NotTracked is a message no answer is waited for under a kind: a
	// response, or a request the host does not retry (a voter change).
	NotTracked InFlight = iota
	InFlightVote
	InFlightBeginQuorumEpoch
	InFlightEndQuorumEpoch
	// InFlightFetch is a follower's one fetch request: Fetch and
	// FetchSnapshot share it (Kafka's FollowerState keeps one).
	InFlightFetch
	InFlightAPIVersions
)

// RPC is one of Kafka's APIs that a KRaft replica speaks, with the types
// that carry it in this package: the action a replica sends it with and
// the events its addressee receives. A nil type is one this package does
// not have: the host carries that side itself (ApiVersions' request and
// response are the host's; DescribeQuorum is the host's altogether).
type RPC struct {
	// Name is Kafka's name of the API (Kafka's ApiKeys).
	Name string
	// APIKey is Kafka's API key; MinVersion and MaxVersion are the
	// versions kraft sends and accepts (package kafkawire's Supported).
	APIKey                 int16
	MinVersion, MaxVersion int16
	// Request is a zero value of the action that sends the request, and
	// RequestEvent one of the event its addressee's Step receives.
	Request      Action
	RequestEvent Event
	// Response is a zero value of the action that answers the request,
	// and ResponseEvents the events the asker's Step receives for it.
	Response       Action
	ResponseEvents []Event
	// InFlight is the request's kind in a host's bookkeeping.
	InFlight InFlight
	// LeaderOnly says only the leader of the epoch serves the request
	// (Kafka's validateLeaderOnlyRequest); any other answers
	// NOT_LEADER_OR_FOLLOWER.
	LeaderOnly bool
}

// rpcs is the catalogue of messages (docs/design.md D230): the one list
// of the raft APIs that the simulator's checks, the replica layer, the
// trace and the completeness tests read (TestRPCsNameEveryMessage).
var rpcs = [...]RPC{
	{Name: "Vote", APIKey: 52, MinVersion: 0, MaxVersion: 2,
		Request: SendVoteRequest{}, RequestEvent: ReceiveVoteRequest{},
		Response: SendVoteResponse{}, ResponseEvents: []Event{ReceiveVoteResponse{}},
		InFlight: InFlightVote},
	{Name: "BeginQuorumEpoch", APIKey: 53, MinVersion: 0, MaxVersion: 1,
		Request: SendBeginQuorumEpoch{}, RequestEvent: ReceiveBeginQuorumEpoch{},
		Response: SendBeginQuorumEpochResponse{}, ResponseEvents: []Event{ReceiveQuorumResponse{}, ReceiveLeaderlessEpoch{}},
		InFlight: InFlightBeginQuorumEpoch},
	{Name: "EndQuorumEpoch", APIKey: 54, MinVersion: 0, MaxVersion: 1,
		Request: SendEndQuorumEpoch{}, RequestEvent: ReceiveEndQuorumEpoch{},
		Response: SendEndQuorumEpochResponse{}, ResponseEvents: []Event{ReceiveQuorumResponse{}, ReceiveLeaderlessEpoch{}},
		InFlight: InFlightEndQuorumEpoch},
	{Name: "Fetch", APIKey: 1, MinVersion: 12, MaxVersion: 17,
		Request: SendFetch{}, RequestEvent: ReceiveFetch{},
		Response: SendFetchResponse{}, ResponseEvents: []Event{ReceiveFetchResponse{}},
		InFlight: InFlightFetch, LeaderOnly: true},
	{Name: "FetchSnapshot", APIKey: 59, MinVersion: 0, MaxVersion: 1,
		Request: SendFetchSnapshot{}, RequestEvent: ReceiveFetchSnapshot{},
		Response: SendFetchSnapshotResponse{}, ResponseEvents: []Event{ReceiveFetchSnapshotResponse{}},
		InFlight: InFlightFetch, LeaderOnly: true},
	{Name: "DescribeQuorum", APIKey: 55, MinVersion: 0, MaxVersion: 2, LeaderOnly: true},
	{Name: "AddRaftVoter", APIKey: 80, MinVersion: 0, MaxVersion: 0,
		Request: SendVoterChange{}, RequestEvent: ReceiveAddVoter{},
		Response: SendVoterChangeResponse{}, LeaderOnly: true},
	{Name: "RemoveRaftVoter", APIKey: 81, MinVersion: 0, MaxVersion: 0,
		Request: SendVoterChange{}, RequestEvent: ReceiveRemoveVoter{},
		Response: SendVoterChangeResponse{}, LeaderOnly: true},
	{Name: "UpdateRaftVoter", APIKey: 82, MinVersion: 0, MaxVersion: 0,
		RequestEvent: ReceiveUpdateVoter{},
		Response:     SendVoterChangeResponse{}, LeaderOnly: true},
	{Name: "ApiVersions", APIKey: 18, MinVersion: 0, MaxVersion: 4,
		Request: SendAPIVersions{}, ResponseEvents: []Event{ReceiveAPIVersionsResponse{}},
		InFlight: InFlightAPIVersions},
}

// RPCs returns the catalogue of messages, one row per Kafka API, in a copy
// the caller may keep.
func RPCs() []RPC {
	out := make([]RPC, len(rpcs))
	for i, r := range rpcs {
		r.ResponseEvents = append([]Event(nil), r.ResponseEvents...)
		out[i] = r
	}
	return out
}

// sent is a message action: each one says, beside its type, what event
// its addressee steps (Deliver; nil for an action no state receives) and
// what it relies on in its sender's durable record (RelianceOf).
type sent interface {
	Action
	deliver(from ReplicaKey) (to NodeID, e Event)
	reliance(self ReplicaKey, e Event) Reliance
}

// received is a message event: each one gives, beside its type, the
// fields of its Header that it carries (MessageHeader).
type received interface {
	Event
	header() Header
}

// outbound maps each action type that leaves the replica, read from rpcs,
// to the kind of request it is (NotTracked for a response) and whether it
// is a request.
var outbound = func() map[reflect.Type]sending {
	m := map[reflect.Type]sending{}
	for _, r := range rpcs {
		if r.Response != nil {
			m[reflect.TypeOf(r.Response)] = sending{}
		}
		if r.Request != nil {
			m[reflect.TypeOf(r.Request)] = sending{inFlight: r.InFlight, request: true}
		}
	}
	return m
}()

// sending is an outbound action's entry.
type sending struct {
	inFlight InFlight
	request  bool
}

// IsMessage reports whether action a leaves the replica: a request or a
// response of one of the catalogue's RPCs. Every other action is local to
// the replica's host (its record, its log and snapshots, its timers, its
// reports).
func IsMessage(a Action) bool {
	_, ok := outbound[reflect.TypeOf(a)]
	return ok
}

// IsRequest reports whether action a is the request of one of the
// catalogue's RPCs (docs/design.md D280).
func IsRequest(a Action) bool { return outbound[reflect.TypeOf(a)].request }

// InFlightOf is the kind of request action a is in a host's bookkeeping,
// from the catalogue: NotTracked for a response, a local action, or a
// request the host does not track by kind.
func InFlightOf(a Action) InFlight { return outbound[reflect.TypeOf(a)].inFlight }

// Header is what a message event says beside its body, the same for
// every RPC, so that a host can route, count and log messages without a
// list of their types (docs/design.md D280).
type Header struct {
	// API is Kafka's name of the message's API (the catalogue row's
	// Name); an event that answers two APIs (ReceiveQuorumResponse,
	// ReceiveLeaderlessEpoch) names both, joined by " or ".
	API string
	// APIKey is the row's Kafka API key, -1 for an event of two rows.
	APIKey int16
	// Response says the event is a response; otherwise it is a request.
	Response bool
	// From is the sender (NoNode when the event does not name one).
	From NodeID
	// ClusterID is a request's cluster id (unset for a response).
	ClusterID uuid.NullUUID
	// Error is a response's error code (ErrNone for a request).
	Error ErrorCode
	// LeaderID is the leader a response names, NoNode if none (and for a
	// request).
	LeaderID NodeID
}

// inbound maps each message event type, read from rpcs, to the part of
// its Header the catalogue gives.
var inbound = func() map[reflect.Type]Header {
	m := map[reflect.Type]Header{}
	add := func(e Event, r RPC, response bool) {
		t := reflect.TypeOf(e)
		if h, ok := m[t]; ok {
			h.API += " or " + r.Name
			h.APIKey = -1
			m[t] = h
			return
		}
		m[t] = Header{API: r.Name, APIKey: r.APIKey, Response: response}
	}
	for _, r := range rpcs {
		if r.RequestEvent != nil {
			add(r.RequestEvent, r, false)
		}
		for _, e := range r.ResponseEvents {
			add(e, r, true)
		}
	}
	return m
}()

// MessageHeader is the Header of message event e, read from the
// catalogue and from e; ok is false for an event that is no message.
func MessageHeader(e Event) (h Header, ok bool) {
	m, isMsg := e.(received)
	if !isMsg {
		return Header{}, false
	}
	c, ok := inbound[reflect.TypeOf(e)]
	if !ok {
		return Header{}, false
	}
	h = m.header()
	h.API, h.APIKey, h.Response = c.API, c.APIKey, c.Response
	if !h.Response {
		h.LeaderID = NoNode
	}
	return h, true
}

// Reliance is what a message relies on in its sender's durable
// quorum-state record: the host contract's rule 1 (README) says nothing
// leaves before the Persist before it is durable, and this says which
// part of the record each message needs. The simulator and the explorer
// check every message against it (sim.PersistBeforeSend, docs/design.md
// D115, D282).
type Reliance struct {
	// What names the message in a report.
	What string
	// HasEpoch: the message carries Epoch, which the record must have
	// reached; InEpoch: the record must be of Epoch itself.
	HasEpoch, InEpoch bool
	Epoch             Epoch
	// NamesLeader: the record must name Leader the leader.
	NamesLeader bool
	Leader      NodeID
	// Vote: the record must hold a vote for Voted.
	Vote  bool
	Voted ReplicaKey
}

// carries is the reliance of a message that carries epoch and needs
// nothing else of the record.
func carries(what string, epoch Epoch) Reliance {
	return Reliance{What: what, HasEpoch: true, Epoch: epoch}
}

// leads is the reliance of a message that needs the record naming leader
// the leader of epoch.
func leads(what string, epoch Epoch, leader NodeID) Reliance {
	return Reliance{What: what, HasEpoch: true, InEpoch: true, Epoch: epoch, NamesLeader: true, Leader: leader}
}

// RelianceOf is what message action a of replica self, made by a step on
// event e (nil at start), relies on in self's durable record; ok is false
// for an action that is no message.
func RelianceOf(self ReplicaKey, a Action, e Event) (r Reliance, ok bool) {
	m, ok := a.(sent)
	if !ok {
		return Reliance{}, false
	}
	return m.reliance(self, e), true
}

// The Vote messages.

// SendVoteRequest asks the host to send a Vote request to one voter.
type SendVoteRequest struct {
	// To is the addressee's key (voter_id, voter_directory_id).
	To        ReplicaKey
	ClusterID uuid.NullUUID
	// CandidateEpoch is replica_epoch; Candidate is (replica_id,
	// replica_directory_id); CandidateLogEnd is (last_offset,
	// last_offset_epoch).
	CandidateEpoch  Epoch
	Candidate       ReplicaKey
	CandidateLogEnd LogEnd
	PreVote         bool
}

func (SendVoteRequest) isAction() {}

func (a SendVoteRequest) deliver(from ReplicaKey) (NodeID, Event) {
	return a.To.ID, ReceiveVoteRequest{
		From: from.ID, ClusterID: a.ClusterID, VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
		CandidateEpoch: a.CandidateEpoch, Candidate: a.Candidate.ID, CandidateDirectoryID: a.Candidate.DirectoryID,
		CandidateLogEnd: a.CandidateLogEnd, PreVote: a.PreVote,
	}
}

// reliance: a pre-vote binds nobody; a standard vote request needs the
// candidate's vote for itself in its epoch durable.
func (a SendVoteRequest) reliance(self ReplicaKey, _ Event) Reliance {
	if a.PreVote {
		return carries("pre-vote request", a.CandidateEpoch)
	}
	r := carries("vote request", a.CandidateEpoch)
	r.InEpoch, r.Vote, r.Voted = true, true, self
	return r
}

// ReceiveVoteRequest is a Vote request that arrived (Kafka VoteRequest v2,
// KIP-996).
type ReceiveVoteRequest struct {
	// From is the network source. Kafka identifies the candidate by the
	// request body (Candidate), not by the source; From is informational.
	From NodeID
	// ClusterID is the request's cluster_id; unset means "not sent".
	ClusterID uuid.NullUUID
	// VoterID and VoterDirectoryID are the addressee (voter_id,
	// voter_directory_id). A negative VoterID means "no addressee" (older
	// RPC versions).
	VoterID          NodeID
	VoterDirectoryID uuid.UUID
	// CandidateEpoch is replica_epoch: the candidate's epoch (for a
	// pre-vote, the requester's current epoch, not yet bumped).
	CandidateEpoch Epoch
	// Candidate and CandidateDirectoryID are replica_id and
	// replica_directory_id.
	Candidate            NodeID
	CandidateDirectoryID uuid.UUID
	// CandidateLogEnd is (last_offset, last_offset_epoch).
	CandidateLogEnd LogEnd
	// PreVote is pre_vote: a KIP-996 pre-vote that binds nobody.
	PreVote bool
}

func (ReceiveVoteRequest) isEvent() {}

func (e ReceiveVoteRequest) header() Header { return Header{From: e.From, ClusterID: e.ClusterID} }

// SendVoteResponse asks the host to answer a Vote request. INCONSISTENT_CLUSTER_ID goes in
// the top-level error_code; every other code is the partition error.
type SendVoteResponse struct {
	To          NodeID
	Error       ErrorCode
	Epoch       Epoch
	LeaderID    NodeID
	VoteGranted bool
}

func (SendVoteResponse) isAction() {}

func (a SendVoteResponse) deliver(from ReplicaKey) (NodeID, Event) {
	return a.To, ReceiveVoteResponse{From: from.ID, Error: a.Error, Epoch: a.Epoch, VoteGranted: a.VoteGranted, LeaderID: a.LeaderID}
}

// reliance: a granted standard vote needs the vote durable in its epoch.
func (a SendVoteResponse) reliance(_ ReplicaKey, e Event) Reliance {
	r := carries("vote response", a.Epoch)
	if req, ok := e.(ReceiveVoteRequest); a.VoteGranted && ok && !req.PreVote {
		r.InEpoch, r.Vote = true, true
		r.Voted = ReplicaKey{ID: req.Candidate, DirectoryID: req.CandidateDirectoryID}
	}
	return r
}

// ReceiveVoteResponse is a response to a Vote request this replica sent.
type ReceiveVoteResponse struct {
	// From is the responding voter.
	From NodeID
	// Error is the partition error_code. A response with a top-level error
	// is not stepped (the host backs off and retries), except
	// UNSUPPORTED_VERSION: the responder does not know Vote v2 (Pre-Vote),
	// and a Prospective then skips the pre-vote (docs/wire-mapping.md).
	Error ErrorCode
	// Epoch is the responder's leader_epoch.
	Epoch Epoch
	// VoteGranted is vote_granted.
	VoteGranted bool
	// LeaderID is the responder's leader_id, NoNode if it knows none. A
	// Prospective that missed BeginQuorumEpoch finds the leader this way.
	LeaderID NodeID
}

func (ReceiveVoteResponse) isEvent() {}

func (e ReceiveVoteResponse) header() Header {
	return Header{From: e.From, Error: e.Error, LeaderID: e.LeaderID}
}

// The BeginQuorumEpoch messages.

// SendBeginQuorumEpoch asks the host to tell a voter that this replica leads
// Epoch.
type SendBeginQuorumEpoch struct {
	To        ReplicaKey
	ClusterID uuid.NullUUID
	Epoch     Epoch
	LeaderID  NodeID
}

func (SendBeginQuorumEpoch) isAction() {}

func (a SendBeginQuorumEpoch) deliver(from ReplicaKey) (NodeID, Event) {
	return a.To.ID, ReceiveBeginQuorumEpoch{
		From: from.ID, ClusterID: a.ClusterID, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
		VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
	}
}

// reliance: the record names the sender leader of the epoch.
func (a SendBeginQuorumEpoch) reliance(self ReplicaKey, _ Event) Reliance {
	return leads("BeginQuorumEpoch", a.Epoch, self.ID)
}

// ReceiveBeginQuorumEpoch is a BeginQuorumEpoch request that arrived: a new
// leader announces its epoch (KIP-595).
type ReceiveBeginQuorumEpoch struct {
	From      NodeID
	ClusterID uuid.NullUUID
	// LeaderID and LeaderEpoch are leader_id and leader_epoch.
	LeaderID    NodeID
	LeaderEpoch Epoch
	// VoterID and VoterDirectoryID are the addressee (voter_id,
	// voter_directory_id, KIP-853); a negative VoterID means "not sent".
	VoterID          NodeID
	VoterDirectoryID uuid.UUID
}

func (ReceiveBeginQuorumEpoch) isEvent() {}

func (e ReceiveBeginQuorumEpoch) header() Header { return Header{From: e.From, ClusterID: e.ClusterID} }

// SendBeginQuorumEpochResponse asks the host to answer a BeginQuorumEpoch
// request.
type SendBeginQuorumEpochResponse struct {
	To       NodeID
	Error    ErrorCode
	Epoch    Epoch
	LeaderID NodeID
}

func (SendBeginQuorumEpochResponse) isAction() {}

func (a SendBeginQuorumEpochResponse) deliver(from ReplicaKey) (NodeID, Event) {
	return a.To, ReceiveQuorumResponse{From: from.ID, Error: a.Error, Epoch: a.Epoch, LeaderID: a.LeaderID}
}

// reliance: a response carries the epoch only.
func (a SendBeginQuorumEpochResponse) reliance(ReplicaKey, Event) Reliance {
	return carries("BeginQuorumEpoch response", a.Epoch)
}

// ReceiveQuorumResponse is a response to a BeginQuorumEpoch or
// EndQuorumEpoch request this replica sent: the responses that carry no
// decision of their own beyond their epoch and leader. A
// replica moves as Kafka's maybeHandleCommonResponse says: a newer epoch
// with a leader makes it that leader's Follower, a newer epoch without one
// Unattached, and a leader of its own epoch that it did not know is
// followed; an INVALID_REQUEST answer in its epoch that names no new leader
// is a Fault (D13). kraft.Deliver maps the two responses to this event.
type ReceiveQuorumResponse struct {
	From NodeID
	// Error is the partition error_code.
	Error ErrorCode
	// Epoch and LeaderID are the response's leader_epoch and leader_id
	// (NoNode if the responder knows no leader).
	Epoch    Epoch
	LeaderID NodeID
}

func (ReceiveQuorumResponse) isEvent() {}

func (e ReceiveQuorumResponse) header() Header {
	return Header{From: e.From, Error: e.Error, LeaderID: e.LeaderID}
}

// ReceiveLeaderlessEpoch reports a response that named a higher epoch than
// ours and no leader for it. It is the leaderless case of
// ReceiveQuorumResponse, kept for hosts written before that event
// (docs/design.md D28).
// Every role moves to Unattached in that epoch (Kafka's
// KafkaRaftClient.maybeHandleCommonResponse).
type ReceiveLeaderlessEpoch struct {
	From  NodeID
	Epoch Epoch
}

func (ReceiveLeaderlessEpoch) isEvent() {}

func (e ReceiveLeaderlessEpoch) header() Header { return Header{From: e.From, LeaderID: NoNode} }

// The EndQuorumEpoch messages.

// SendEndQuorumEpoch asks the host to tell a voter that this replica resigns
// the leadership of Epoch. PreferredSuccessors is the same ordered list for every
// addressee; the host puts it in preferred_successors (ids) and
// preferred_candidates (keys).
type SendEndQuorumEpoch struct {
	To                  ReplicaKey
	ClusterID           uuid.NullUUID
	Epoch               Epoch
	LeaderID            NodeID
	PreferredSuccessors []ReplicaKey
}

func (SendEndQuorumEpoch) isAction() {}

func (a SendEndQuorumEpoch) deliver(from ReplicaKey) (NodeID, Event) {
	return a.To.ID, ReceiveEndQuorumEpoch{
		From: from.ID, ClusterID: a.ClusterID, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
		SuccessorRank: RankOf(a.To, a.PreferredSuccessors),
	}
}

// reliance: the record names the sender leader of the epoch.
func (a SendEndQuorumEpoch) reliance(self ReplicaKey, _ Event) Reliance {
	return leads("EndQuorumEpoch", a.Epoch, self.ID)
}

// ReceiveEndQuorumEpoch is an EndQuorumEpoch request that arrived: the leader
// of LeaderEpoch is resigning (KIP-595, graceful shutdown).
type ReceiveEndQuorumEpoch struct {
	From        NodeID
	ClusterID   uuid.NullUUID
	LeaderID    NodeID
	LeaderEpoch Epoch
	// SuccessorRank is this replica's position in the request's
	// preferred_candidates list (first entry with the local id and, if
	// present, the local directory id) and the list's length.
	SuccessorRank SuccessorRank
}

func (ReceiveEndQuorumEpoch) isEvent() {}

func (e ReceiveEndQuorumEpoch) header() Header { return Header{From: e.From, ClusterID: e.ClusterID} }

// SendEndQuorumEpochResponse asks the host to answer an EndQuorumEpoch
// request.
type SendEndQuorumEpochResponse struct {
	To       NodeID
	Error    ErrorCode
	Epoch    Epoch
	LeaderID NodeID
}

func (SendEndQuorumEpochResponse) isAction() {}

func (a SendEndQuorumEpochResponse) deliver(from ReplicaKey) (NodeID, Event) {
	return a.To, ReceiveQuorumResponse{From: from.ID, Error: a.Error, Epoch: a.Epoch, LeaderID: a.LeaderID}
}

// reliance: a response carries the epoch only.
func (a SendEndQuorumEpochResponse) reliance(ReplicaKey, Event) Reliance {
	return carries("EndQuorumEpoch response", a.Epoch)
}

// The Fetch messages.

// SendFetch asks the host to send a Fetch request. To is the leader, or NoNode for "any
// bootstrap voter" (an observer looking for the leader).
type SendFetch struct {
	To        NodeID
	ClusterID uuid.NullUUID
	// CurrentLeaderEpoch is the local epoch; FetchOffset and FetchEpoch
	// are the local log end offset and last fetched epoch; HighWatermark is
	// the local high watermark (-1 if unknown).
	CurrentLeaderEpoch Epoch
	FetchOffset        int64
	FetchEpoch         Epoch
	HighWatermark      int64
}

func (SendFetch) isAction() {}

func (a SendFetch) deliver(from ReplicaKey) (NodeID, Event) {
	return a.To, ReceiveFetch{
		From: from.ID, FromDirectoryID: from.DirectoryID, ClusterID: a.ClusterID,
		CurrentLeaderEpoch: a.CurrentLeaderEpoch, FetchEpoch: a.FetchEpoch, FetchOffset: a.FetchOffset,
	}
}

// reliance: a Fetch to a leader needs the record naming that leader of
// the epoch; an observer's search for the leader (To NoNode) does not.
func (a SendFetch) reliance(ReplicaKey, Event) Reliance {
	if a.To == NoNode {
		return carries("fetch", a.CurrentLeaderEpoch)
	}
	return leads("fetch", a.CurrentLeaderEpoch, a.To)
}

// ReceiveFetch is a Fetch request for the metadata partition from a follower
// or an observer.
type ReceiveFetch struct {
	// From and FromDirectoryID are replica_id and replica_directory_id; a
	// negative From is a non-replica consumer.
	From            NodeID
	FromDirectoryID uuid.UUID
	ClusterID       uuid.NullUUID
	// CurrentLeaderEpoch is current_leader_epoch, used for fencing.
	CurrentLeaderEpoch Epoch
	// FetchEpoch is last_fetched_epoch and FetchOffset is fetch_offset: the
	// follower's log position.
	FetchEpoch  Epoch
	FetchOffset int64
}

func (ReceiveFetch) isEvent() {}

func (e ReceiveFetch) header() Header { return Header{From: e.From, ClusterID: e.ClusterID} }

// SendFetchResponse asks the host to answer a Fetch request. When Error is
// NONE and Diverging and Snapshot are nil, the host attaches records from
// the request's fetch offset.
type SendFetchResponse struct {
	To NodeID
	// Error, Epoch and LeaderID: error_code and current_leader.
	Error    ErrorCode
	Epoch    Epoch
	LeaderID NodeID
	// HighWatermark is the leader's high watermark, -1 if unknown or on
	// error.
	HighWatermark int64
	// Diverging is set when the follower's log diverges from the leader's.
	Diverging *LogOffsetMetadata
	// Snapshot is set when the follower must fetch this snapshot instead
	// (snapshot_id): the leader's log no longer holds what it lacks (D44).
	// The host attaches no records then.
	Snapshot *LogEnd
}

func (SendFetchResponse) isAction() {}

func (a SendFetchResponse) deliver(from ReplicaKey) (NodeID, Event) {
	return a.To, ReceiveFetchResponse{
		From: from.ID, Error: a.Error, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
		HighWatermark: a.HighWatermark, Diverging: a.Diverging, Snapshot: a.Snapshot,
	}
}

// reliance: a response carries the epoch only.
func (a SendFetchResponse) reliance(ReplicaKey, Event) Reliance {
	return carries("fetch response", a.Epoch)
}

// ReceiveFetchResponse is a response to a Fetch this replica sent. The
// host sets Records when the response carries records; the state answers a
// response whose records it takes with AppendFetched alone, and the host
// appends them and then steps AppendFetched.Then (docs/design.md D240).
type ReceiveFetchResponse struct {
	From NodeID
	// Error is the partition error_code. A response with a top-level error
	// is not stepped (the host backs off and retries).
	Error ErrorCode
	// LeaderID and LeaderEpoch are current_leader.leader_id and
	// leader_epoch; LeaderID is NoNode if the responder knows no leader.
	LeaderID    NodeID
	LeaderEpoch Epoch
	// HighWatermark is the leader's high_watermark, -1 if unknown.
	HighWatermark int64
	// Diverging is diverging_epoch (epoch, end_offset); nil when absent.
	Diverging *LogOffsetMetadata
	// Snapshot is snapshot_id (end offset, epoch) when the leader wants the
	// follower to fetch a snapshot instead; nil when absent.
	Snapshot *LogEnd
	// Records: the response carries records (the wire's records field is
	// not empty) that are not in the local log yet. The host sets it;
	// kraft.Deliver leaves it false. A response with Records that the
	// state takes as a successful fetch is answered with AppendFetched
	// alone, the state unchanged; one without is processed as one whose
	// records (if any) the host has appended already (D240).
	Records bool
}

func (ReceiveFetchResponse) isEvent() {}

func (e ReceiveFetchResponse) header() Header {
	return Header{From: e.From, Error: e.Error, LeaderID: e.LeaderID}
}

// The FetchSnapshot messages.

// SendFetchSnapshot asks the host to send a FetchSnapshot request to the
// leader for the bytes of Snapshot from Position on (a Follower that
// downloads a snapshot sends it instead of a Fetch; D43).
type SendFetchSnapshot struct {
	To                 NodeID
	ClusterID          uuid.NullUUID
	CurrentLeaderEpoch Epoch
	Snapshot           LogEnd
	Position           int64
}

func (SendFetchSnapshot) isAction() {}

func (a SendFetchSnapshot) deliver(from ReplicaKey) (NodeID, Event) {
	return a.To, ReceiveFetchSnapshot{
		From: from.ID, FromDirectoryID: from.DirectoryID, ClusterID: a.ClusterID,
		CurrentLeaderEpoch: a.CurrentLeaderEpoch, Snapshot: a.Snapshot, Position: a.Position, Size: -1,
	}
}

// reliance: the record names the addressee leader of the epoch.
func (a SendFetchSnapshot) reliance(ReplicaKey, Event) Reliance {
	if a.To == NoNode {
		return carries("FetchSnapshot", a.CurrentLeaderEpoch)
	}
	return leads("FetchSnapshot", a.CurrentLeaderEpoch, a.To)
}

// ReceiveFetchSnapshot is a FetchSnapshot request that arrived: a follower
// downloads a snapshot from the leader (KIP-630). The leader answers with
// Kafka's checks in Kafka's order (handleFetchSnapshotRequest): cluster id,
// epoch fencing, SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE; a successful one
// counts as contact for check-quorum (D44).
type ReceiveFetchSnapshot struct {
	From               NodeID
	FromDirectoryID    uuid.UUID
	ClusterID          uuid.NullUUID
	CurrentLeaderEpoch Epoch
	// Snapshot is snapshot_id (end_offset, epoch) and Position is position:
	// the byte the follower wants next.
	Snapshot LogEnd
	Position int64
	// Size is the size in bytes of the snapshot Snapshot on the
	// receiving host's disk, looked up by that host before it steps the
	// event; -1 when it has no such snapshot (the state knows only the
	// snapshot ids, not what is on disk between them, nor their sizes).
	// kraft.Deliver sets -1: the addressee's host fills it in.
	Size int64
}

func (ReceiveFetchSnapshot) isEvent() {}

func (e ReceiveFetchSnapshot) header() Header { return Header{From: e.From, ClusterID: e.ClusterID} }

// SendFetchSnapshotResponse asks the host to answer a FetchSnapshot request.
// On NONE the host attaches the bytes of Snapshot from Position on, at most
// its configured maximum, and sends Size and Position as the response's
// size and position. On an error, Snapshot is (-1, -1) and Size and
// Position are -1 (D44).
type SendFetchSnapshotResponse struct {
	To       NodeID
	Error    ErrorCode
	Epoch    Epoch
	LeaderID NodeID
	Snapshot LogEnd
	Size     int64
	Position int64
}

func (SendFetchSnapshotResponse) isAction() {}

func (a SendFetchSnapshotResponse) deliver(from ReplicaKey) (NodeID, Event) {
	var n int64
	if a.Error == ErrNone && a.Position >= 0 && a.Size >= a.Position {
		n = a.Size - a.Position
	}
	return a.To, ReceiveFetchSnapshotResponse{
		From: from.ID, Error: a.Error, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
		Snapshot: a.Snapshot, Size: a.Size, Position: a.Position, Bytes: n,
	}
}

// reliance: a response carries the epoch only.
func (a SendFetchSnapshotResponse) reliance(ReplicaKey, Event) Reliance {
	return carries("FetchSnapshot response", a.Epoch)
}

// ReceiveFetchSnapshotResponse is a response to a FetchSnapshot request
// this replica sent (Kafka's handleFetchSnapshotResponse, D43). The host
// steps it before it writes the response's bytes anywhere: the state
// checks the response and, when it takes the chunk, asks for the write with
// WriteSnapshotChunk (and, once the snapshot is complete, InstallSnapshot).
type ReceiveFetchSnapshotResponse struct {
	From NodeID
	// Error is the partition error_code. A response with a top-level error
	// is not stepped (the host backs off and retries).
	Error ErrorCode
	// LeaderID and LeaderEpoch are current_leader.
	LeaderID    NodeID
	LeaderEpoch Epoch
	// Snapshot is snapshot_id; Size the snapshot's total size and Position
	// where the response's bytes start in it (size, position).
	Snapshot LogEnd
	Size     int64
	Position int64
	// Bytes is how many bytes of the snapshot the response carries (the
	// length of its unaligned_records).
	Bytes int64
}

func (ReceiveFetchSnapshotResponse) isEvent() {}

func (e ReceiveFetchSnapshotResponse) header() Header {
	return Header{From: e.From, Error: e.Error, LeaderID: e.LeaderID}
}

// The AddRaftVoter and RemoveRaftVoter messages.

// SendVoterChange asks the host to send an AddRaftVoter or RemoveRaftVoter
// request to the leader To: an observer with Config.AutoJoin asks to join
// (or to remove the voter with its id and an older directory id; Kafka's
// controller.quorum.auto.join.enable). The answer changes nothing in the
// state; the host may drop it.
type SendVoterChange struct {
	To        NodeID
	ClusterID uuid.NullUUID
	Kind      VoterChangeKind
	Voter     ReplicaKey
}

func (SendVoterChange) isAction() {}

func (a SendVoterChange) deliver(from ReplicaKey) (NodeID, Event) {
	if a.Kind == RemoveVoter {
		return a.To, ReceiveRemoveVoter{From: from.ID, ClusterID: a.ClusterID, Voter: a.Voter}
	}
	return a.To, ReceiveAddVoter{From: from.ID, ClusterID: a.ClusterID, Voter: a.Voter, Listener: true}
}

// reliance: an auto-joining observer asks the leader it follows (Kafka's
// pollFollowerAsObserver); the request carries no epoch.
func (a SendVoterChange) reliance(ReplicaKey, Event) Reliance {
	return Reliance{What: a.Kind.String() + " request", NamesLeader: true, Leader: a.To}
}

// ReceiveAddVoter is an AddRaftVoter request (KIP-853). Ref is the host's
// handle for the request: the answer, SendVoterChangeResponse, carries it
// back, at once or when the change commits, times out or fails. From is
// the requester's node id, NoNode for an admin client. Listener says that
// the request names an endpoint on the listener the replicas use (Kafka:
// the default listener); the endpoints themselves are the host's.
type ReceiveAddVoter struct {
	Ref       uint64
	From      NodeID
	ClusterID uuid.NullUUID
	Voter     ReplicaKey
	Listener  bool
}

func (ReceiveAddVoter) isEvent() {}

func (e ReceiveAddVoter) header() Header { return Header{From: e.From, ClusterID: e.ClusterID} }

// SendVoterChangeResponse asks the host to answer the request with handle
// Ref. Epoch and LeaderID are the replica's; Kafka's UpdateRaftVoter
// response carries them.
type SendVoterChangeResponse struct {
	Ref      uint64
	To       NodeID
	Kind     VoterChangeKind
	Error    ErrorCode
	Epoch    Epoch
	LeaderID NodeID
}

func (SendVoterChangeResponse) isAction() {}

// deliver: none, the host routes the answer by Ref.
func (SendVoterChangeResponse) deliver(ReplicaKey) (NodeID, Event) { return NoNode, nil }

// ReceiveRemoveVoter is a RemoveRaftVoter request (KIP-853); see
// ReceiveAddVoter for Ref and From.
type ReceiveRemoveVoter struct {
	Ref       uint64
	From      NodeID
	ClusterID uuid.NullUUID
	Voter     ReplicaKey
}

func (ReceiveRemoveVoter) isEvent() {}

func (e ReceiveRemoveVoter) header() Header { return Header{From: e.From, ClusterID: e.ClusterID} }

// The UpdateRaftVoter messages.

// ReceiveUpdateVoter is an UpdateRaftVoter request (KIP-853): a voter
// reports new endpoints or supported kraft.version levels. See
// ReceiveAddVoter for Ref, From and Listener.
type ReceiveUpdateVoter struct {
	Ref                uint64
	From               NodeID
	ClusterID          uuid.NullUUID
	CurrentLeaderEpoch Epoch
	Voter              ReplicaKey
	Listener           bool
	KRaftVersions      VersionRange
}

func (ReceiveUpdateVoter) isEvent() {}

func (e ReceiveUpdateVoter) header() Header { return Header{From: e.From, ClusterID: e.ClusterID} }

// The ApiVersions messages.

// SendAPIVersions asks the host to send an ApiVersions request to To, a
// replica the leader is about to add, and to step its answer as
// ReceiveAPIVersionsResponse (Kafka's AddVoterHandler learns the new voter's
// kraft.version range this way). No answer within the request timeout
// fails the AddRaftVoter.
type SendAPIVersions struct {
	To ReplicaKey
}

func (SendAPIVersions) isAction() {}

// deliver: none, the addressee's host answers it, not its state.
func (SendAPIVersions) deliver(ReplicaKey) (NodeID, Event) { return NoNode, nil }

// ReceiveAPIVersionsResponse is the answer to a SendAPIVersions: the
// kraft.version levels the replica From supports (nil when its answer
// names none), or the error that came instead.
type ReceiveAPIVersionsResponse struct {
	From          NodeID
	Error         ErrorCode
	KRaftVersions *VersionRange
}

func (ReceiveAPIVersionsResponse) isEvent() {}

func (e ReceiveAPIVersionsResponse) header() Header {
	return Header{From: e.From, Error: e.Error, LeaderID: NoNode}
}

// reliance: a leader's, for a voter it is about to add (Kafka's
// AddVoterHandler); the request carries no epoch.
func (SendAPIVersions) reliance(self ReplicaKey, _ Event) Reliance {
	return Reliance{What: "ApiVersions request", NamesLeader: true, Leader: self.ID}
}

// reliance: a response carries the epoch only.
func (a SendVoterChangeResponse) reliance(ReplicaKey, Event) Reliance {
	return carries(a.Kind.String()+" response", a.Epoch)
}
