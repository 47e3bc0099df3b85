package kraft

import "github.com/google/uuid"

// Event is something that happened to a replica: a message arrived, a timer
// fired, or the host did something the state must know about. Step takes one
// Event at a time. The set is closed: only this package's types implement it.
type Event interface {
	isEvent()
}

// ElectionTimeout reports that the election timer armed by the latest
// ResetTimer{Timer: ElectionTimer} fired. Kafka checks this timer in pollUnattached,
// pollProspective, pollCandidate and pollResigned.
type ElectionTimeout struct{}

// FetchTimeout reports that the fetch timer fired. A Follower has not had a successful
// Fetch response within T_f (Kafka's pollFollower), or an Unattached observer
// is due to look for the leader again (docs/design.md, contract decision 6).
type FetchTimeout struct{}

// CheckQuorumTimeout reports that the leader's check-quorum timer fired: a majority of
// voters has not fetched within 1.5*T_f (Kafka's
// LeaderState.timeUntilCheckQuorumExpires, KAFKA-15489).
type CheckQuorumTimeout struct{}

// BeginQuorumEpochTimeout reports that the leader's BeginQuorumEpoch re-send
// timer fired
// (Kafka re-sends BeginQuorumEpoch every T_f/2 to voters that have not
// fetched, KAFKA-16926).
type BeginQuorumEpochTimeout struct{}

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

// SnapshotCreated reports that the host wrote and froze a snapshot of the
// replicated state up to Snapshot.Offset (exclusive), whose last record is
// of epoch Snapshot.Epoch (Kafka's createSnapshot and onSnapshotFrozen).
// Kafka's rules (KafkaMetadataLog.createNewSnapshot): the snapshot ends at
// or below the log's high watermark, in an epoch not above the current one,
// and agrees with the log (validateOffsetAndEpoch finds it valid); anything
// else is a Fault with the state unchanged, except a snapshot that ends
// below the log start, which Kafka declines and kraft drops (an installed
// snapshot overtook it). A report of a snapshot already known changes
// nothing (D45).
type SnapshotCreated struct {
	Snapshot LogEnd
}

// LogStartMoved reports that the host deleted every record of the log
// before Snapshot.Offset and every snapshot older than Snapshot (Kafka's
// deleteBeforeSnapshot): the log now starts at the end of the snapshot
// Snapshot, a snapshot the state knows or one that agrees with the log, at
// most the latest. A start at or below the current one is stale and
// changes nothing; a start past the latest snapshot, or a snapshot that
// does not agree with the log, is a Fault (D45).
type LogStartMoved struct {
	Snapshot LogEnd
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

// LogAppended reports that the host wrote records to its local log, which
// now ends at End: written, not necessarily flushed (Kafka's log end offset).
// Leader appends, follower appends of fetched records and the LeaderChange
// record all come through here, reported as soon as they are written and
// before the host steps any other event. A write that spans several epochs
// is reported as one LogAppended per epoch, in order; a new epoch starts at
// the previous log end. Votes, a new leader's epoch start, Fetch validation
// and divergence use the written log (docs/design.md D30).
type LogAppended struct {
	End LogEnd
}

// LogFlushed reports that every record of the local log below Offset is
// durable (fsync done). Flushes may complete late and in batches (group
// commit); a report at or below an earlier one changes nothing. A leader
// counts its own flushed offset toward the high watermark, and a voter
// sends its Fetch (which tells the leader what it holds) only once its
// whole written log is flushed (Kafka's flushLeaderLog and
// appendAsFollower; docs/design.md D30).
type LogFlushed struct {
	Offset int64
}

// Resign asks the leader to give up leadership (Kafka's KafkaRaftClient.resign,
// not its shutdown): it becomes Resigned and sends EndQuorumEpoch, and its
// election timer later starts a new election, which it may win again. A
// graceful shutdown is Resign plus the host's part: stop delivering
// ElectionTimeout and FetchTimeout, and finish when a RoleChanged names
// another leader or the shutdown timeout passes (docs/design.md D27). Other
// roles ignore it.
//
// Successor, if set, is ranked first in EndQuorumEpoch's preferred
// successors, so that it campaigns at once (a leadership transfer to a
// chosen voter, docs/design.md D135); the others follow by their logs as
// always. A key that names no other voter is ignored.
type Resign struct {
	Successor *ReplicaKey `json:",omitempty"`
}

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

func (ElectionTimeout) isEvent()         {}
func (FetchTimeout) isEvent()            {}
func (CheckQuorumTimeout) isEvent()      {}
func (BeginQuorumEpochTimeout) isEvent() {}
func (ReceiveVoteRequest) isEvent()      {}
func (ReceiveVoteResponse) isEvent()     {}
func (ReceiveBeginQuorumEpoch) isEvent() {}
func (ReceiveEndQuorumEpoch) isEvent()   {}
func (ReceiveFetch) isEvent()            {}
func (ReceiveFetchSnapshot) isEvent()    {}
func (ReceiveFetchResponse) isEvent()    {}
func (ReceiveLeaderlessEpoch) isEvent()  {}
func (ReceiveQuorumResponse) isEvent()   {}
func (LogAppended) isEvent()             {}
func (LogFlushed) isEvent()              {}
func (Resign) isEvent()                  {}

// Snapshots.
func (ReceiveFetchSnapshotResponse) isEvent() {}
func (SnapshotCreated) isEvent()              {}
func (LogStartMoved) isEvent()                {}

// Dynamic voter sets (KIP-853).
func (VotersAppended) isEvent()             {}
func (ReceiveAddVoter) isEvent()            {}
func (ReceiveRemoveVoter) isEvent()         {}
func (ReceiveUpdateVoter) isEvent()         {}
func (ReceiveAPIVersionsResponse) isEvent() {}
func (VoterChangeTimeout) isEvent()         {}
