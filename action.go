package kraft

import "time"

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

func (Persist) isAction()              {}
func (TruncateLog) isAction()          {}
func (AppendLeaderChange) isAction()   {}
func (AppendFetched) isAction()        {}
func (HighWatermarkChanged) isAction() {}
func (ResetTimer) isAction()           {}
func (StopTimer) isAction()            {}
func (RoleChanged) isAction()          {}
func (Fault) isAction()                {}
func (LeaderRefused) isAction()        {}

// Snapshots.
func (WriteSnapshotChunk) isAction() {}
func (InstallSnapshot) isAction()    {}

// Dynamic voter sets (KIP-853).
func (AppendVoters) isAction() {}
