package kraft

import (
	"errors"
	"fmt"
)

// Dynamic voter sets (KIP-853): the values the voter-set events and
// actions (messages.go, event.go, action.go) carry, and the checks on a voter set. The voter set in
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
