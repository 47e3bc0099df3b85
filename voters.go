package kraft

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Dynamic voter sets (KIP-853): the types a host sees. The voter set in
// force is the latest one in the log, committed or not (Kafka's
// KRaftControlRecordStateMachine and VoterSetHistory); the leader changes
// it one voter at a time through AddRaftVoter, RemoveRaftVoter and
// UpdateRaftVoter (Kafka's AddVoterHandler, RemoveVoterHandler and
// UpdateVoterHandler). docs/design.md D50-D53.

// VersionRange is a range of kraft.version feature levels a replica
// supports (Kafka's SupportedVersionRange for kraft.version).
type VersionRange struct {
	Min, Max int16
}

// Has reports whether v is in the range.
func (r VersionRange) Has(v int16) bool { return r.Min <= v && v <= r.Max }

// VoterSetAt is a voter set found in the log: the VotersRecord at Offset
// (Kafka's LogHistory.Entry of a VoterSet). Offset -1 is the bootstrap
// checkpoint's set, and a snapshot's set is at the snapshot's end offset
// minus one. Voters are keys with distinct ids, in the record's order.
type VoterSetAt struct {
	Offset int64
	Voters []ReplicaKey
}

// VoterChangeKind names the three KIP-853 requests.
type VoterChangeKind uint8

// The voter changes.
const (
	AddVoter    VoterChangeKind = iota + 1 // AddRaftVoter
	RemoveVoter                            // RemoveRaftVoter
	UpdateVoter                            // UpdateRaftVoter
)

// String names the request as Kafka's API does.
func (k VoterChangeKind) String() string {
	switch k {
	case AddVoter:
		return "AddRaftVoter"
	case RemoveVoter:
		return "RemoveRaftVoter"
	case UpdateVoter:
		return "UpdateRaftVoter"
	}
	return "VoterChange?"
}

// KRaftVersionReconfig is the kraft.version feature level from which the
// voter set is kept in the log and can change (Kafka's
// KRaftVersion.KRAFT_VERSION_1).
const KRaftVersionReconfig int16 = 1

// VotersAppended reports a VotersRecord the host wrote to its log at
// Offset: the leader's own (after AppendVoters, or the start-of-epoch one of
// AppendLeaderChange), a fetched one, or, at the snapshot's end offset minus
// one, the set held by a snapshot the host installed (InstallSnapshot). The
// host steps it right after the LogAppended that covers the record (for a
// snapshot, right after installing it), before any other event, one event
// per record in log order. The set is in force from then on, committed or
// not; a truncation below Offset reverts to the set before it.
//
// A record that is not past the previous one, outside the log, or whose
// voters are not a valid set, is a Fault (Kafka's VoterSetHistory.addAt
// throws); so is a set whose majorities do not overlap those of the
// previous set in the log (more than one voter added or removed).
type VotersAppended struct {
	Offset int64
	Voters []ReplicaKey
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

// ReceiveRemoveVoter is a RemoveRaftVoter request (KIP-853); see
// ReceiveAddVoter for Ref and From.
type ReceiveRemoveVoter struct {
	Ref       uint64
	From      NodeID
	ClusterID uuid.NullUUID
	Voter     ReplicaKey
}

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

// ReceiveAPIVersionsResponse is the answer to a SendAPIVersions: the
// kraft.version levels the replica From supports (nil when its answer
// names none), or the error that came instead.
type ReceiveAPIVersionsResponse struct {
	From          NodeID
	Error         ErrorCode
	KRaftVersions *VersionRange
}

// VoterChangeTimeout reports that the voter-change timer fired: the
// leader's pending AddRaftVoter or RemoveRaftVoter ran out of time, or an
// auto-joining observer may ask again.
type VoterChangeTimeout struct{}

// SendAPIVersions asks the host to send an ApiVersions request to To, a
// replica the leader is about to add, and to step its answer as
// ReceiveAPIVersionsResponse (Kafka's AddVoterHandler learns the new voter's
// kraft.version range this way). No answer within the request timeout
// fails the AddRaftVoter.
type SendAPIVersions struct {
	To ReplicaKey
}

// VoterChange is one change to the voter set: the voter added, removed or
// updated, and for an added or updated voter the kraft.version levels it
// supports (which the VotersRecord holds).
type VoterChange struct {
	Kind          VoterChangeKind
	Voter         ReplicaKey
	KRaftVersions VersionRange
}

// AppendVoters asks the leader's host to append a VotersRecord holding
// Voters at the log end, in Epoch, and then report it with LogAppended and
// VotersAppended. Change says what differs from the set in force, so the
// host can put the endpoints of an added or updated voter (from the
// request) in the record.
type AppendVoters struct {
	Epoch  Epoch
	Voters []ReplicaKey
	Change VoterChange
}

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

func (VotersAppended) isEvent()             {}
func (ReceiveAddVoter) isEvent()            {}
func (ReceiveRemoveVoter) isEvent()         {}
func (ReceiveUpdateVoter) isEvent()         {}
func (ReceiveAPIVersionsResponse) isEvent() {}
func (VoterChangeTimeout) isEvent()         {}

func (SendAPIVersions) isAction()         {}
func (AppendVoters) isAction()            {}
func (SendVoterChangeResponse) isAction() {}
func (SendVoterChange) isAction()         {}

// validVoterSet reports what is wrong with a voter set, or nil: 1 to
// MaxVoters voters with distinct non-negative ids.
func validVoterSet(voters []ReplicaKey) error {
	if len(voters) == 0 {
		return errors.New("kraft: empty voter set")
	}
	if errs := voterSetErrors(voters); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// voterSetErrors lists what is wrong with a voter set's keys: more than
// MaxVoters of them, negative ids, an id twice (Config.Validate reports
// them all, validVoterSet the first).
func voterSetErrors(voters []ReplicaKey) []error {
	var errs []error
	if len(voters) > MaxVoters {
		errs = append(errs, fmt.Errorf("kraft: %d voters, at most %d are supported", len(voters), MaxVoters))
	}
	for i, v := range voters {
		if v.ID < 0 {
			errs = append(errs, fmt.Errorf("kraft: voter %d has negative id %d", i, v.ID))
		}
		for _, w := range voters[:i] {
			if w.ID == v.ID {
				errs = append(errs, fmt.Errorf("kraft: voter id %d appears twice", v.ID))
			}
		}
	}
	return errs
}

// overlappingMajority is Kafka's VoterSet.hasOverlappingMajority: every
// majority of a meets every majority of b, which holds when at most one
// voter was added and at most one removed (keys compared exactly).
func overlappingMajority(a, b []ReplicaKey) bool {
	return keysMissing(a, b) <= 1 && keysMissing(b, a) <= 1
}

// keysMissing counts the keys of a that b lacks.
func keysMissing(a, b []ReplicaKey) int {
	n := 0
	for _, k := range a {
		found := false
		for _, l := range b {
			if k == l {
				found = true
				break
			}
		}
		if !found {
			n++
		}
	}
	return n
}
