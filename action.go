package kraft

import (
	"time"

	"github.com/google/uuid"
)

// Action is something Step asks the host to do. The host carries out the
// actions of one step in order; nothing after a Persist may leave the
// process before the Persist is durable. The set is closed.
type Action interface {
	isAction()
}

// Timer names one of a replica's timers. Each role owns some of them: on a
// role change, Step emits a StopTimer for every timer the old role owned and
// the new role does not.
type Timer uint8

// The timers.
const (
	// ElectionTimer: owned by Unattached voters, Prospective, Candidate and
	// Resigned. Fires ElectionTimeout.
	ElectionTimer Timer = iota + 1
	// FetchTimer: owned by Followers and Unattached observers. Fires
	// FetchTimeout.
	FetchTimer
	// CheckQuorumTimer: owned by the Leader. Fires CheckQuorumTimeout.
	CheckQuorumTimer
	// BeginQuorumEpochTimer: owned by the Leader. Fires
	// BeginQuorumEpochTimeout.
	BeginQuorumEpochTimer
	// VoterChangeTimer: armed by a Leader with a pending AddRaftVoter or
	// RemoveRaftVoter, and by an auto-joining observer between requests.
	// Fires VoterChangeTimeout.
	VoterChangeTimer
)

// Timeout is the event a host steps when the timer fires (nil for a value
// that is not a timer).
func (t Timer) Timeout() Event {
	switch t {
	case ElectionTimer:
		return ElectionTimeout{}
	case FetchTimer:
		return FetchTimeout{}
	case CheckQuorumTimer:
		return CheckQuorumTimeout{}
	case BeginQuorumEpochTimer:
		return BeginQuorumEpochTimeout{}
	case VoterChangeTimer:
		return VoterChangeTimeout{}
	}
	return nil
}

// String names the timer.
func (t Timer) String() string {
	switch t {
	case ElectionTimer:
		return "election"
	case FetchTimer:
		return "fetch"
	case CheckQuorumTimer:
		return "check-quorum"
	case BeginQuorumEpochTimer:
		return "begin-quorum-epoch"
	case VoterChangeTimer:
		return "voter-change"
	}
	return "timer?"
}

// Persist asks the host to write Record as the quorum-state record, durably (fsync), before
// carrying out any later action of the same step.
type Persist struct {
	Record QuorumRecord
}

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

// SendVoteResponse asks the host to answer a Vote request. INCONSISTENT_CLUSTER_ID goes in
// the top-level error_code; every other code is the partition error.
type SendVoteResponse struct {
	To          NodeID
	Error       ErrorCode
	Epoch       Epoch
	LeaderID    NodeID
	VoteGranted bool
}

// SendBeginQuorumEpoch asks the host to tell a voter that this replica leads
// Epoch.
type SendBeginQuorumEpoch struct {
	To        ReplicaKey
	ClusterID uuid.NullUUID
	Epoch     Epoch
	LeaderID  NodeID
}

// SendBeginQuorumEpochResponse asks the host to answer a BeginQuorumEpoch
// request.
type SendBeginQuorumEpochResponse struct {
	To       NodeID
	Error    ErrorCode
	Epoch    Epoch
	LeaderID NodeID
}

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

// SendEndQuorumEpochResponse asks the host to answer an EndQuorumEpoch
// request.
type SendEndQuorumEpochResponse struct {
	To       NodeID
	Error    ErrorCode
	Epoch    Epoch
	LeaderID NodeID
}

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

// WriteSnapshotChunk asks the host to write the bytes of the FetchSnapshot
// response being stepped at Position of the partial snapshot Snapshot it
// is downloading (Position 0 starts a new partial file, replacing any
// earlier partial download). The state already counts them as written.
type WriteSnapshotChunk struct {
	Snapshot LogEnd
	Position int64
}

// InstallSnapshot asks the host to finish a downloaded snapshot (Kafka's
// freeze, then truncateToLatestSnapshot): make the snapshot Snapshot
// durable and immutable, delete every record of the log and every older
// snapshot, restart the log empty at Snapshot.Offset (log start = log end =
// Snapshot.Offset, last epoch Snapshot.Epoch), and load the snapshot into
// the replicated state machine. The state already assumes it is done: its
// next Fetch starts at the snapshot end.
type InstallSnapshot struct {
	Snapshot LogEnd
}

// TruncateLog asks the host to remove every record at or after offset To
// from the local log.
// The state already assumes it is done.
type TruncateLog struct {
	To int64
}

// AppendLeaderChange asks the host to append Kafka's start-of-epoch
// LeaderChange control record at the log end, in Epoch, then report it with LogAppended.
type AppendLeaderChange struct {
	Epoch    Epoch
	LeaderID NodeID
	// Voters is the voter set; GrantingVoters the voters that granted the
	// election (the leader included).
	Voters         []ReplicaKey
	GrantingVoters []ReplicaKey
	// VotersRecord: also append a VotersRecord holding Voters (and Kafka's
	// KRaftVersionRecord) after the LeaderChange record, and report it with
	// VotersAppended. Set when the voter set in force is the bootstrap
	// checkpoint's, which is never replicated (Kafka's
	// LeaderState.appendStartOfEpochControlRecords).
	VotersRecord bool
}

// AppendFetched asks the host to append the records a Fetch response
// carried at Offset, the local log end (Kafka's KafkaRaftClient
// appendAsFollower, which handleFetchResponse calls once the response
// passed its checks), report them with LogAppended (and each VotersRecord
// among them with VotersAppended), and then step Then: the same response
// with Records false. Records that do not start at Offset (the log moved
// since the Fetch went out) are dropped, and the host re-sends the latest
// SendFetch instead of stepping Then. Step emits it alone, with the state
// unchanged, for a response with Records that it takes (docs/design.md
// D240).
type AppendFetched struct {
	Offset int64
	Then   ReceiveFetchResponse
}

// HighWatermarkChanged reports that the high watermark moved up to
// HighWatermark: records below it are committed. Successive values only
// rise, across role changes too.
type HighWatermarkChanged struct {
	HighWatermark int64
}

// ResetTimer asks the host to (re)arm Timer to fire After from now, replacing any pending
// arming.
type ResetTimer struct {
	Timer Timer
	After time.Duration
}

// StopTimer asks the host to cancel Timer.
type StopTimer struct {
	Timer Timer
}

// RoleChanged reports that the replica changed role, epoch or leader. For listeners and
// logs; nothing to carry out.
type RoleChanged struct {
	From     Role
	To       Role
	Epoch    Epoch
	LeaderID NodeID
	Reason   string
}

// Fault reports that an input proved the cluster inconsistent (two leaders in one epoch,
// a message naming this replica leader when it is not). The state did not
// change; the host decides whether to stop. Kafka throws in these cases (and
// for a truncation below the high watermark, which kraft refuses instead:
// LeaderRefused).
type Fault struct {
	Reason string
}

// LeaderRefused reports that this replica refuses to follow LeaderID, the
// leader of Epoch: the leader asked it to remove committed records, to
// truncate its log to TruncateTo (a diverging epoch) or to replace it with
// a snapshot that ends at TruncateTo, below HighWatermark, the highest high
// watermark this replica has known. Only a leader elected without those
// records asks that (a replica that lost data it had acknowledged, then
// led), so the replica keeps its log, sends that leader no more Fetch
// requests, answers its BeginQuorumEpoch with NOT_LEADER_OR_FOLLOWER, and
// grants pre-votes: its fetch timer runs out and it campaigns with the
// voters that hold the records. The refusal lasts until the replica is in
// another epoch (State.RefusedLeader). Kafka throws instead
// (KafkaRaftClient.handleFetchResponse, KafkaMetadataLog.truncateTo);
// docs/design.md D113. For logs and readiness; nothing to carry out.
type LeaderRefused struct {
	LeaderID      NodeID
	Epoch         Epoch
	TruncateTo    int64
	HighWatermark int64
	Reason        string
}

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

func (Persist) isAction()                      {}
func (SendVoteRequest) isAction()              {}
func (SendVoteResponse) isAction()             {}
func (SendBeginQuorumEpoch) isAction()         {}
func (SendBeginQuorumEpochResponse) isAction() {}
func (SendEndQuorumEpoch) isAction()           {}
func (SendEndQuorumEpochResponse) isAction()   {}
func (SendFetch) isAction()                    {}
func (SendFetchResponse) isAction()            {}
func (SendFetchSnapshotResponse) isAction()    {}
func (TruncateLog) isAction()                  {}
func (AppendLeaderChange) isAction()           {}
func (AppendFetched) isAction()                {}
func (HighWatermarkChanged) isAction()         {}
func (ResetTimer) isAction()                   {}
func (StopTimer) isAction()                    {}
func (RoleChanged) isAction()                  {}
func (Fault) isAction()                        {}
func (LeaderRefused) isAction()                {}

// Snapshots.
func (SendFetchSnapshot) isAction()  {}
func (WriteSnapshotChunk) isAction() {}
func (InstallSnapshot) isAction()    {}

// Dynamic voter sets (KIP-853).
func (SendAPIVersions) isAction()         {}
func (AppendVoters) isAction()            {}
func (SendVoterChangeResponse) isAction() {}
func (SendVoterChange) isAction()         {}
