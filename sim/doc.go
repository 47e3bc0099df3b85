// Package sim is a deterministic simulator for kraft clusters.
//
// A Cluster holds N voters and M observers. Each replica is a kraft.State
// driven by a simulated host that carries out the actions of every Step in
// order, as the host contract in the README says:
//
//   - Persist writes the quorum-state record to a durable store at once; the
//     messages of the same step are sent only after it.
//   - Each replica has a written log of records (epoch, offset, payload) with
//     a flushed prefix, and follows the README's rules for it. Every write (a
//     leader's client records and LeaderChange record, a follower's fetched
//     records) is reported at once with one LogAppended per epoch run, a
//     follower's before it delivers the ReceiveFetchResponse; the flush
//     completes after a random delay (Options.FlushDelayMax, OpDisk for slow
//     disk phases of up to three election timeouts) and is reported with
//     LogFlushed, whatever role the replica holds by then. A leader serves
//     records from its written log up to the state's log end. A crash loses
//     the unflushed tail.
//   - Every host takes snapshots and cleans its log (Options.SnapshotEvery,
//     SnapshotsKept, SnapshotChunkBytes; see snapshot.go): once its
//     replica's committed offset is SnapshotEvery records past its latest
//     snapshot it writes one there and steps SnapshotCreated, deletes the
//     log before the oldest snapshot it keeps and steps LogStartMoved
//     (Kafka's KafkaMetadataLog.deleteBeforeSnapshot). A leader's host
//     fills ReceiveFetchSnapshot.Size and serves chunks of its snapshots; a
//     follower's host writes WriteSnapshotChunk into a partial snapshot and
//     on InstallSnapshot restarts its log empty at the snapshot's end. A
//     crash loses the partial download; a restart passes the log start and
//     snapshot ids, after resetting the log to a snapshot past its end.
//   - Timers run on a virtual clock; only the latest arming of a timer fires.
//   - The network delays every message independently (so it reorders),
//     loses and duplicates messages with configurable probabilities, and
//     honours symmetric and one-way partitions.
//   - Requests carry correlation ids. A replica drops responses that do not
//     answer a request it still waits for, and forgets every request in
//     flight on each RoleChanged action (Kafka's resetConnections). At most
//     one Fetch (or FetchSnapshot) is in flight per replica; a newer
//     SendFetch or SendFetchSnapshot supersedes it, and an unanswered one is
//     sent again after the request timeout.
//   - A leader parks a Fetch that is caught up and has nothing new (Kafka's
//     long poll) and answers it when its log end or high watermark moves,
//     when it stops leading (NOT_LEADER_OR_FOLLOWER), or after FetchMaxWait.
//     A leader serves only records it has flushed and reported, which is the
//     log its State validates fetch positions against.
//   - SendFetch{To: NoNode} goes to a voter drawn from the simulation's RNG;
//     SendEndQuorumEpoch becomes ReceiveEndQuorumEpoch with the recipient's
//     SuccessorRank.
//
// With Options.Dynamic the voter set lives in the log (KIP-853, kraft.version
// 1; see voters.go): controllers start from a bootstrap checkpoint, hosts
// write, replicate, snapshot and report VotersRecords as the README's rule
// 11 says, OpAddVoter and OpRemoveVoter are an operator's AddRaftVoter and
// RemoveRaftVoter at the leader (answers in Cluster.VoterChanges), the
// addressee's host answers ApiVersions, Options.AutoJoin lets controllers
// join by themselves, and a disk loss gives the replica a new directory id.
// Cluster.Voters and VoterHistory follow the committed voter set.
//
// Faults are crashes and restarts (the replica is rebuilt with kraft.NewState
// from its record, its flushed log and its snapshots), graceful resignation
// (kraft.Resign), the loss of one replica's disk (a restart with no record,
// an empty log and no snapshot),
// partitions and a lossy network. A client appends records at whoever leads.
//
// Everything is driven by one seed: the same Options and the same operations
// give the same run, event for event, and the optional trace (JSON lines)
// can be replayed with Replay, which steps every recorded event again and
// compares the states and actions.
//
// A Checker runs after every event and stops the run at the first violation
// of a safety invariant (see Violation and docs/verification.md):
// one leader per epoch; one granted standard vote per (voter, epoch), across
// restarts, and every later record of that epoch keeps it; epochs never decrease, in memory or persisted; a replica's high
// watermark never decreases; a leader's high watermark is held by a majority
// of the voters' durable logs and ends in the leader's own epoch; committed
// records are never lost or changed on a replica that holds them durably;
// every log matches the committed log up to its high watermark; every message
// that depends on a persisted decision is sent after the Persist; the state's
// record equals the durable record after every step; no Fault action; a
// new leader holds every committed record; every
// snapshot ends at or below its replica's committed offset when created and
// equals the committed log up to its end (created or installed); a log never
// starts past its earliest snapshot. Records below a log start are the
// snapshot's, checked when it was created or installed. With a voter set in
// the log, the majority rule counts the voters of the set in force at the
// leader (the latest VotersRecord in its log), a leader's log holds at most
// one uncommitted voter change, every voter change that commits overlaps
// the previous committed set (one voter added, one removed at most), a
// leader resigns once its removal commits, one leader per epoch holds
// across keys (a replica back from a disk loss is another), and each
// state's voter set is the one its host's log holds.
//
// Disk loss makes a replica forget its votes, epoch and log, which KRaft does
// not tolerate in general (KIP-853's directory ids exist because of it). The
// checker forgets the history of the replica whose disk was lost: its earlier
// votes and epochs no longer count for the vote and epoch rules, and what it
// held no longer counts for "held committed records", and it counts as a
// holder in the majority rule for a leader's high watermark (the leader may
// still count the position it fetched before the loss). The other rules still
// apply to it. Kafka's own simulation runs its data-loss test the same way.
package sim
