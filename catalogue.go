package kraft

import "reflect"

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

// outbound maps each action type that leaves the replica, read from rpcs,
// to the kind of request it is (NotTracked for a response).
var outbound = func() map[reflect.Type]InFlight {
	m := map[reflect.Type]InFlight{}
	for _, r := range rpcs {
		if r.Response != nil {
			m[reflect.TypeOf(r.Response)] = NotTracked
		}
		if r.Request != nil {
			m[reflect.TypeOf(r.Request)] = r.InFlight
		}
	}
	return m
}()

// IsMessage reports whether action a leaves the replica: a request or a
// response of one of the catalogue's RPCs. Every other action is local to
// the replica's host (its record, its log and snapshots, its timers, its
// reports).
func IsMessage(a Action) bool {
	_, ok := outbound[reflect.TypeOf(a)]
	return ok
}

// InFlightOf is the kind of request action a is in a host's bookkeeping,
// from the catalogue: NotTracked for a response, a local action, or a
// request the host does not track by kind.
func InFlightOf(a Action) InFlight { return outbound[reflect.TypeOf(a)] }
