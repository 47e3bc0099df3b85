package kraft

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// NodeID is a Kafka replica id. Node ids are non-negative; 0 is a valid id.
// NoNode (-1, as on Kafka's wire) means "no node": no leader, no vote, no id.
type NodeID int32

// NoNode is the NodeID that names nobody.
const NoNode NodeID = -1

// Epoch is a KRaft leader epoch (Kafka's "leader epoch", the Raft term).
type Epoch int32

// ReplicaKey identifies a replica by node id and, since KIP-853, by the id of
// its metadata log directory. uuid.Nil means "no directory id".
type ReplicaKey struct {
	ID          NodeID
	DirectoryID uuid.UUID
}

// NoReplica is the key that names nobody (for example "no vote").
var NoReplica = ReplicaKey{ID: NoNode}

// Matches reports whether a key received in a message matches k, the key
// stored locally (in the voter set or the vote record). KIP-853's rule: the
// ids are equal and, if k has a directory id, the other key carries the same
// one; a stored key without a directory id matches any directory id.
func (k ReplicaKey) Matches(other ReplicaKey) bool {
	return k.ID == other.ID && (k.DirectoryID == uuid.Nil || k.DirectoryID == other.DirectoryID)
}

// Compare orders keys by id, then by directory id, with "no directory id"
// sorting as the zero UUID (Kafka's ReplicaKey.compareTo).
func (k ReplicaKey) Compare(other ReplicaKey) int {
	switch {
	case k.ID < other.ID:
		return -1
	case k.ID > other.ID:
		return 1
	}
	for i := range k.DirectoryID {
		if k.DirectoryID[i] != other.DirectoryID[i] {
			if k.DirectoryID[i] < other.DirectoryID[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// String prints the key as "id" or "id/directory".
func (k ReplicaKey) String() string {
	if k.DirectoryID == uuid.Nil {
		return fmt.Sprintf("%d", k.ID)
	}
	return fmt.Sprintf("%d/%s", k.ID, k.DirectoryID)
}

// LogEnd is the tip of a log: the end offset (exclusive, the offset the next
// record gets) and the epoch of the last record (0 for an empty log). Kafka's
// OffsetAndEpoch as used for "log end offset" and "last fetched epoch".
type LogEnd struct {
	Offset int64
	Epoch  Epoch
}

// Compare orders log tips the way Kafka decides whether a candidate's log is
// up to date: by epoch first, then by offset (OffsetAndEpoch.compareTo).
func (e LogEnd) Compare(other LogEnd) int {
	switch {
	case e.Epoch < other.Epoch:
		return -1
	case e.Epoch > other.Epoch:
		return 1
	case e.Offset < other.Offset:
		return -1
	case e.Offset > other.Offset:
		return 1
	}
	return 0
}

// LogOffsetMetadata is a diverging point sent by a leader in a Fetch
// response: the largest epoch the leader has that is not greater than the
// follower's last fetched epoch, and the offset at which that epoch ends in
// the leader's log (Kafka's FetchResponse DivergingEpoch).
type LogOffsetMetadata struct {
	Offset int64
	Epoch  Epoch
}

// EpochStart records that the records of Epoch start at StartOffset in a log:
// one entry of Kafka's leader-epoch cache.
type EpochStart struct {
	Epoch       Epoch
	StartOffset int64
}

// SuccessorRank is where this replica stands in a resigning leader's list of
// preferred successors, a list of length Of. Position 0 campaigns at once
// (also for an empty list, which a leader restarted as Resigned sends);
// Position >= Of, or a negative Position, means "not listed" and waits the
// longest backoff (Kafka's KafkaRaftClient.endEpochElectionBackoff).
type SuccessorRank struct {
	Position int
	Of       int
}

// ErrorCode is a Kafka protocol error code, with Kafka's numeric values.
type ErrorCode int16

// The Kafka error codes KRaft's quorum RPCs use.
const (
	ErrUnknownServerError         ErrorCode = -1
	ErrNone                       ErrorCode = 0
	ErrUnknownTopicOrPartition    ErrorCode = 3
	ErrNotLeaderOrFollower        ErrorCode = 6
	ErrRequestTimedOut            ErrorCode = 7
	ErrBrokerNotAvailable         ErrorCode = 8
	ErrClusterAuthorizationFailed ErrorCode = 31
	ErrUnsupportedVersion         ErrorCode = 35
	ErrInvalidRequest             ErrorCode = 42
	ErrFencedLeaderEpoch          ErrorCode = 74
	ErrUnknownLeaderEpoch         ErrorCode = 75
	ErrSnapshotNotFound           ErrorCode = 98
	ErrPositionOutOfRange         ErrorCode = 99
	ErrInconsistentClusterID      ErrorCode = 104
	ErrInvalidVoterKey            ErrorCode = 125
	ErrDuplicateVoter             ErrorCode = 126
	ErrVoterNotFound              ErrorCode = 127
)

var errorNames = map[ErrorCode]string{
	ErrUnknownServerError:         "UNKNOWN_SERVER_ERROR",
	ErrNone:                       "NONE",
	ErrUnknownTopicOrPartition:    "UNKNOWN_TOPIC_OR_PARTITION",
	ErrNotLeaderOrFollower:        "NOT_LEADER_OR_FOLLOWER",
	ErrRequestTimedOut:            "REQUEST_TIMED_OUT",
	ErrBrokerNotAvailable:         "BROKER_NOT_AVAILABLE",
	ErrClusterAuthorizationFailed: "CLUSTER_AUTHORIZATION_FAILED",
	ErrUnsupportedVersion:         "UNSUPPORTED_VERSION",
	ErrInvalidRequest:             "INVALID_REQUEST",
	ErrFencedLeaderEpoch:          "FENCED_LEADER_EPOCH",
	ErrUnknownLeaderEpoch:         "UNKNOWN_LEADER_EPOCH",
	ErrSnapshotNotFound:           "SNAPSHOT_NOT_FOUND",
	ErrPositionOutOfRange:         "POSITION_OUT_OF_RANGE",
	ErrInconsistentClusterID:      "INCONSISTENT_CLUSTER_ID",
	ErrInvalidVoterKey:            "INVALID_VOTER_KEY",
	ErrDuplicateVoter:             "DUPLICATE_VOTER",
	ErrVoterNotFound:              "VOTER_NOT_FOUND",
}

// String returns Kafka's name for the code.
func (c ErrorCode) String() string {
	if n, ok := errorNames[c]; ok {
		return n
	}
	return fmt.Sprintf("ERROR(%d)", int16(c))
}

// QuorumRecord is the durable quorum state, Kafka's quorum-state file: the
// epoch, the leader of that epoch if known, and the standard vote granted in
// that epoch if any. LeaderID and VotedKey.ID are NoNode when absent.
//
// The zero value is not "nothing stored" (it names node 0); use EmptyRecord.
type QuorumRecord struct {
	Epoch    Epoch
	LeaderID NodeID
	VotedKey ReplicaKey
}

// EmptyRecord is what a replica that has never persisted anything starts
// from: epoch 0, no leader, no vote (Kafka's missing quorum-state file).
func EmptyRecord() QuorumRecord {
	return QuorumRecord{Epoch: 0, LeaderID: NoNode, VotedKey: NoReplica}
}

// HasVote reports whether the record holds a granted standard vote.
func (r QuorumRecord) HasVote() bool { return r.VotedKey.ID != NoNode }

// Default durations (Kafka's QuorumConfig defaults).
const (
	DefaultElectionTimeout    = 1000 * time.Millisecond // controller.quorum.election.timeout.ms
	DefaultFetchTimeout       = 2000 * time.Millisecond // controller.quorum.fetch.timeout.ms
	DefaultElectionBackoffMax = 1000 * time.Millisecond // controller.quorum.election.backoff.max.ms
	DefaultRequestTimeout     = 2000 * time.Millisecond // controller.quorum.request.timeout.ms
)

// MaxVoters is the largest voter set kraft supports (KRaft quorums have 3
// or 5 voters; the state keeps sets of voters in one machine word).
const MaxVoters = 64

// Config is a replica's static configuration.
//
// A zero duration means "Kafka's default". Local.ID is NoNode for an observer
// without a node id; it is the only field whose value 0 is meaningful, so
// NewState rejects a Config whose Local.ID was never set when 0 is not in the
// voter set and Observer is false (see Validate).
type Config struct {
	// Local is this replica's id and metadata directory id.
	Local ReplicaKey
	// Observer says this replica is meant to be an observer. It only guards
	// against a forgotten Local (see Validate); voter or observer is decided
	// by whether Local matches a key in Voters.
	Observer bool
	// ClusterID is the cluster id; requests that carry a different one are
	// refused with INCONSISTENT_CLUSTER_ID. Unset: any cluster id is accepted.
	ClusterID uuid.NullUUID
	// Voters is the static voter set (controller.quorum.voters): the set
	// in force while the log holds none (kraft.version 0). Keys must have
	// distinct ids. It may be empty when the log holds the voter set
	// (LogState.VoterSets; a quorum bootstrapped with kraft.version 1), and
	// it is ignored once the log holds one, and stays ignored if a
	// truncation later removes every set the log held (docs/design.md D50,
	// D56).
	Voters []ReplicaKey
	// ElectionTimeout is T_e (default 1 s); election timers draw from
	// [T_e, 2*T_e).
	ElectionTimeout time.Duration
	// FetchTimeout is T_f (default 2 s): the follower fetch timer; the
	// leader's check-quorum window is 1.5*T_f and its BeginQuorumEpoch
	// re-send period T_f/2.
	FetchTimeout time.Duration
	// ElectionBackoffMax is B_max (default 1 s), the cap of the
	// EndQuorumEpoch backoff.
	ElectionBackoffMax time.Duration
	// Seed seeds the state's PRNG for election timeouts. Give each replica a
	// distinct seed.
	Seed uint64
	// KafkaFailover runs elections after a leader failure exactly as Kafka
	// does. By default kraft goes beyond Kafka in ways that change only
	// timing and which replica campaigns, never the wire protocol or
	// safety (docs/design.md D59): campaigners are ranked by log, then
	// replica key; a voter Follower's fetch timeout is staggered by its
	// rank; pre-votes are granted only up the ranking and a Prospective
	// that has heard of a higher-ranked campaigner waits for it; a
	// Prospective asks a lower-ranked campaigner again; and a Follower
	// that lost its pre-vote campaigns again when a lower-ranked voter
	// does. Split votes after a leader crash fall from 30-60% to none in
	// the simulator, and the median failover stays within 1.06 T_f.
	KafkaFailover bool
	// RequestTimeout is how long the leader waits for a pending
	// AddRaftVoter or RemoveRaftVoter to finish before it answers
	// REQUEST_TIMED_OUT (default 2 s; Kafka's
	// controller.quorum.request.timeout.ms).
	RequestTimeout time.Duration
	// AutoJoin makes an observer with an id and a directory id ask the
	// leader to add it as a voter, after removing the voter with its id
	// and another directory id if there is one (Kafka's
	// controller.quorum.auto.join.enable; docs/design.md D53).
	AutoJoin bool
}

// Validate reports what is wrong with c, or nil.
func (c Config) Validate() error {
	errs := voterSetErrors(c.Voters)
	switch {
	case c.Local.ID < NoNode:
		errs = append(errs, fmt.Errorf("kraft: local id %d is negative (use NoNode for an observer without id)", c.Local.ID))
	case c.Local.ID == NoNode && !c.Observer:
		errs = append(errs, errors.New("kraft: local id is NoNode but Observer is false"))
	case c.Local.ID == 0 && !c.Observer && len(c.Voters) > 0 && voterIndex(c.Voters, c.Local) < 0:
		errs = append(errs, errors.New("kraft: local id 0 is not a voter and Observer is false (was Local set?)"))
	case c.Observer && c.Local.ID != NoNode && voterIndex(c.Voters, c.Local) >= 0:
		errs = append(errs, fmt.Errorf("kraft: Observer is true but local key %v is in the voter set", c.Local))
	}
	if c.ElectionTimeout < 0 || c.FetchTimeout < 0 || c.ElectionBackoffMax < 0 || c.RequestTimeout < 0 {
		errs = append(errs, errors.New("kraft: negative duration"))
	}
	return joinErrors(errs)
}

// joinErrors folds errs into one error (errors.Join needs Go 1.20).
func joinErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msg := errs[0].Error()
	for _, e := range errs[1:] {
		msg += "; " + e.Error()
	}
	return errors.New(msg)
}

// voterIndex returns the index of the voter that key matches, or -1.
func voterIndex(voters []ReplicaKey, key ReplicaKey) int {
	if key.ID < 0 {
		return -1
	}
	for i, v := range voters {
		if v.Matches(key) {
			return i
		}
	}
	return -1
}

// VoterByID returns the index in voters of the voter with node id id, or
// -1 (also for a negative id). Messages that carry no directory id (Vote
// responses, a stored leader id) are matched by id alone, as Kafka's
// EpochElection and voter-set lookups do; the replica and node packages
// look up voters by id with it too (docs/design.md D250).
func VoterByID(voters []ReplicaKey, id NodeID) int {
	if id < 0 {
		return -1
	}
	for i, v := range voters {
		if v.ID == id {
			return i
		}
	}
	return -1
}
