// Package sim is a deterministic simulator for kraft clusters.
//
// A Cluster holds N voters and M observers. Each replica runs package
// replica's layer, as the runtime (package node) does: a replica.Replica
// tracks its requests, retries them, drops stale responses, parks Fetches
// at a leader, attaches and appends records, serves and downloads
// snapshots and replays voter sets (docs/design.md D63, D75). The
// simulated host (host.go, cluster.go) does only I/O, as the README's
// contract for a host of the replica layer says:
//
//   - A simulated disk per replica (package storage/simdisk: a page cache
//     over a media, power loss and process death, faults made in the bytes)
//     holding a data directory as kraftd keeps it, through the code kraftd
//     runs: formatted once (package datadir), loaded and opened at every
//     start, the log a storage.FileLog, the quorum state in package
//     storage's store, a damaged directory replaced by datadir.Replace
//     (docs/design.md D118). The host keeps a readable copy of the log for
//     the checker, read back from the disk at every start. A Sync output
//     syncs the log after a random delay (Options.FlushDelayMax, OpDisk for
//     slow disk phases of up to three election timeouts), then Synced
//     reports it, whatever role the replica holds by then. Reads hand out
//     at most Options.MaxFetchRecords records. Snapshots are kept in memory.
//   - Every host takes snapshots (Options.SnapshotEvery, see snapshot.go):
//     once its replica's committed offset is SnapshotEvery records past its
//     latest snapshot it writes one there and reports it (SnapshotTaken);
//     the layer cleans the log behind the Options.SnapshotsKept it keeps,
//     holding one being downloaded for Options.SnapshotDownloadHold, and
//     serves chunks of Options.SnapshotChunkBytes. A crash loses a partial
//     download.
//   - One virtual clock; each replica's next deadline (NextDeadline) is one
//     timer item, which fires Tick.
//   - The network delays every message independently (so it reorders),
//     loses and duplicates messages with configurable probabilities, and
//     honours symmetric and one-way partitions. A response goes to the
//     incarnation of its requester that sent the request (a connection does
//     not outlive a crash). A peer listed in Options.PreVoteUnsupported
//     answers pre-votes with UNSUPPORTED_VERSION, as a Kafka client library
//     without Vote v2 does.
//   - An observer that knows no leader fetches from the other controllers in
//     turn (replica.Config.BootstrapServers).
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
// Faults are crashes (a power loss of the replica's machine) and restarts
// (the replica is rebuilt by replica.New from what its disk kept), kills
// (a process death the page cache survives, which the other replicas
// notice a round trip later, as a runtime notices a process whose port
// refuses connections: OpKill, replica.PeerDown, docs/design.md D101),
// disk damage (OpDamage), quiet phases without client appends (OpIdle),
// graceful resignation
// (kraft.Resign), the loss of one replica's disk (a restart with no record,
// an empty log and no snapshot),
// partitions and a lossy network. A client appends records at whoever leads.
//
// Everything is driven by one seed: the same Options and the same operations
// give the same run, event for event, and the optional trace (JSON lines)
// can be replayed with Replay, which steps every recorded event again and
// compares the states and actions (the layer's observer writes it).
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
// state's voter set is the one its host's log holds. Every Fetch a running
// replica receives is answered within the fetch max wait, and the layer
// never stops on an error of its own.
//
// Disk loss makes a replica forget its votes, epoch and log, which KRaft does
// not tolerate in general (KIP-853's directory ids exist because of it). The
// checker forgets the history of the replica whose disk was lost: its earlier
// votes and epochs no longer count for the vote and epoch rules, and what it
// held no longer counts for "held committed records", and it counts as a
// holder in the majority rule for a leader's high watermark (the leader may
// still count the position it fetched before the loss). The other rules still
// apply to it. Kafka's own simulation runs its data-loss test the same way.
//
// Disk faults (OpDamage, RandomDiskFaults: flipped bits and lost writes in
// synced records, lost or rolled-back quorum-state records, one damaged
// replica at a time) take effect at the replica's next start, where the host
// detects them as package storage does and applies the recovery rule of
// docs/design.md D91: a replaced disk in a dynamic voter set, a refusal and
// the operator's restore in a static one (damage.go).
package sim
