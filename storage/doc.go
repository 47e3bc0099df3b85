// Package storage is durable storage for a kraft replica: the quorum-state
// file in Kafka's format, and a log of records in segment files. It uses
// the standard library only and is safe to use as is; docs/storage.md
// describes both on-disk formats and the recovery and durability rules.
//
// # Restarting a replica
//
// A host keeps the quorum-state file and the log segments in one directory,
// as Kafka keeps them in its metadata partition's directory. At start it
// reads both and hands them to kraft.NewState:
//
//	rec, err := storage.ReadQuorumState(storage.QuorumStatePath(dir)) // nil: nothing stored
//	log, recovery, err := storage.Open(dir, storage.Options{})
//	// recovery.DroppedBytes > 0: a torn tail was cut (records never synced)
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
// ReadQuorumState reads both.
//
// # Logs
//
// Log is the interface of a replica's log. FileLog keeps it on disk; a
// torn tail left by a crash is dropped when it is opened, and the epoch
// history (Kafka's leader-epoch cache) is rebuilt from the records. MemLog
// keeps it in memory with the same durability model, and its Crash drops
// what was not synced, for simulations.
package storage
