// Package storage is durable storage for a kraft replica: the quorum-state
// file in Kafka's format, a log of records in segment files, and snapshot
// files. It uses the standard library and github.com/google/uuid (for
// directory ids) only, and is safe to use as is;
// docs/storage.md describes the on-disk formats and the recovery and
// durability rules.
//
// # Restarting a replica
//
// A host keeps a replica's files in one data directory. cmd/kraftd and
// package node's example lay it out so: the quorum-state file
// (QuorumStatePath) and a dynamic quorum's bootstrap checkpoint
// (BootstrapPath) in the directory itself, the log (its segments and its
// log-start-offset-checkpoint) in its log subdirectory, and the snapshots
// in its snapshots subdirectory. (The log, the snapshots and the
// quorum-state file ignore each other's files, so they may also share one
// directory; docs/storage.md.) At start the host reads the quorum-state
// file and the log and hands them to kraft.NewState:
//
//	lock, err := storage.LockDir(dir) // a second process on dir fails here
//	log, recovery, err := storage.Open(filepath.Join(dir, "log"), storage.Options{})
//	// recovery.DroppedBytes > 0: a torn tail was cut (records never synced)
//	// errors.Is(err, storage.ErrDamaged): synced records are lost (*DamageError)
//	rec, err := storage.ReadQuorumState(storage.QuorumStatePath(dir)) // nil: nothing stored
//	err = storage.CheckQuorumState(storage.QuorumStatePath(dir), rec, recovery.SyncedEpoch)
//	s, acts, err := kraft.NewState(cfg, rec, log.State())
//
// Then, while it carries out actions:
//
//	case kraft.Persist:
//		err = storage.WriteQuorumState(storage.QuorumStatePath(dir), a.Record)
//	case kraft.TruncateLog:
//		err = log.Truncate(a.To)
//
// and when it appends records (a leader's own, a LeaderChange record, or
// records fetched from the leader) it reports them at once, and reports the
// flush when a Sync completes, possibly much later and for many appends:
//
//	end, err := log.Append(epoch, records...)         // step kraft.LogAppended{End: end}
//	end, err = log.AppendEntries(fetched...)          // step each of storage.AppendedEvents(fetched)
//	flushed, err := storage.Flush(log)                // step flushed (a kraft.LogFlushed)
//
// WriteQuorumState writes version 1 of Kafka's file, which keeps the voted
// directory id (KIP-853); WriteQuorumStateData writes either version.
// ReadQuorumState reads both. Each write also goes, first, to a checked
// copy (QuorumStateCopySuffix), against which ReadQuorumState checks the
// file: a flipped byte, a record rolled back or a deleted file is a
// *QuorumStateDamageError, not a replica that never voted.
//
// # Crashes and damage
//
// A crash loses only what was never synced; a damaged disk can change what
// was. The log keeps a recovery point (RecoveryPointFileName), written and
// fsynced at every Sync after the segment's fsync and before the records
// count as durable (Flushed), so that every record ever reported durable
// is below it after any crash. Open cuts a bad tail past it as torn,
// silently, and reports anything bad below it as damage: a *DamageError
// with the offsets lost. Damage to records below the log start (deleted,
// still on disk) is skipped, no loss. Open refuses such a log, or with
// Options.TruncateDamage opens it cut at the damage and reports the loss in
// Recovery.Damage, on every Open until the records are back. A replica that
// lost synced records or its vote must not vote, or be counted as holding
// them, until it has them again; errors.Is(err, ErrDamaged) tells such
// errors from others. docs/storage.md has the formats and the write order,
// docs/design.md D70 to D74 the reasons.
//
// # Logs
//
// Log is the interface of a replica's log. FileLog keeps it on disk; a
// torn tail left by a crash (past the recovery point) is dropped when it is
// opened, and the epoch
// history (Kafka's leader-epoch cache) is rebuilt from the records. MemLog
// keeps it in memory with the same durability model, and its Crash drops
// what was not synced, for simulations.
//
// # Snapshots and the log start
//
// Snapshots keeps snapshot files named as Kafka names them
// (00000000000000001500-0000000007.checkpoint: end offset and epoch), the
// host's bytes behind a checksummed header. A snapshot is written with
// Create, Append and Freeze, which makes it visible only once it is whole
// and durable; Size and Read serve it in FetchSnapshot chunks, Open reads it
// whole. Once a snapshot ending at offset x is durable, a host drops the
// records it covers, and older snapshots:
//
//	err = log.DeleteBefore(x)      // the log start is x, durably; Read below it is ErrBelowStart
//	err = snaps.DeleteBefore(id)   // keeps the latest
//
// A follower that fetched a snapshot it must install instead of its log
// restarts the log at the snapshot's end:
//
//	err = w.Freeze()               // the snapshot written from FetchSnapshot chunks
//	err = log.ResetTo(w.ID())      // empty, Start() == End() == the snapshot's id
//
// The log start survives a restart (Open reads it back from
// log-start-offset-checkpoint); a host that finds its latest snapshot past
// its log end at start calls ResetTo again.
package storage
