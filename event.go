package kraft

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

// VoterChangeTimeout reports that the voter-change timer fired: the
// leader's pending AddRaftVoter or RemoveRaftVoter ran out of time, or an
// auto-joining observer may ask again.
type VoterChangeTimeout struct{}

func (ElectionTimeout) isEvent()         {}
func (FetchTimeout) isEvent()            {}
func (CheckQuorumTimeout) isEvent()      {}
func (BeginQuorumEpochTimeout) isEvent() {}
func (LogAppended) isEvent()             {}
func (LogFlushed) isEvent()              {}
func (Resign) isEvent()                  {}

// Snapshots.
func (SnapshotCreated) isEvent() {}
func (LogStartMoved) isEvent()   {}

// Dynamic voter sets (KIP-853).
func (VotersAppended) isEvent()     {}
func (VoterChangeTimeout) isEvent() {}
