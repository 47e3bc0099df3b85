// Package replica runs one KRaft replica's protocol between a pure
// kraft.State and a host's I/O, as etcd raft's RawNode does for Raft: the
// host owns the network, the clock, the goroutines and the fsync; the
// package owns everything else (requests, retries, long polls, fetched
// records, snapshots, voter sets, reads, transfers).
//
// # What the host gives
//
// A Config: the kraft.Config (key, voters, timeouts, seed), the
// storage.Log, a RecordStore for the quorum-state record, and, if it keeps
// snapshots, a Snapshots (StorageSnapshots wraps a storage.Snapshots). Zero
// knobs take Kafka's defaults (DefaultRequestTimeout and the other Default
// constants). There is no clock in the Config: every input takes the time,
// now, as a time.Duration from any fixed origin that never goes backwards.
// New opens the replica from its storage (Kafka's startup rules).
//
// # The calls
//
// A Replica is not safe for concurrent use: the host makes one call at a
// time, from one goroutine (its loop). The inputs are Receive (a message
// from the network), Tick (at or after NextDeadline), Synced (the Sync
// asked for is done), Propose, ReadIndex, AddVoter, RemoveVoter,
// UpdateVoter, TransferLeadership, AbortTransfer, Resign, SnapshotTaken and
// PeerDown. Propose, ReadIndex, the voter changes and TransferLeadership
// are the leader's: elsewhere they return ErrNotLeader (ErrTransferring
// during a transfer). After each input, and before the next, the host calls
// Take and carries out the Outputs in order. The queries (State, Err,
// NextDeadline, CurrentVoters, ...) are safe between inputs; State is a
// value. A replica that stopped (Err is not nil) ignores every input.
// Close drops a partial snapshot download; the host closes its storage.
// A model checker's hooks (firing any deadline, cloning, canonical
// encodings) are not Replica's methods but a Model's (ModelOf;
// docs/design.md D290): a host never needs them.
//
// # What the host does with each Output
//
//   - Send: hand Message to the transport for Message.To; a message that
//     cannot be sent is dropped (timeouts and retries make up for it). Its
//     byte slices may be the log's memory: encode or copy them before the
//     next input.
//   - Sync: make the log durable (storage.Log.Sync), then call Synced;
//     one is outstanding at a time, and it may run off the loop while other
//     inputs go on (group commit). A Sync error stops the host.
//   - Commit: records below HighWatermark are committed; apply them.
//   - Installed: replace the application's state with the snapshot before
//     it takes any record at or after its offset.
//   - Peer: point the transport for ID at Endpoint.
//   - RoleChange: fail the client calls that waited on the old role.
//   - VoterChangeAnswer, ReadReady, ReadFailed, TransferEnded: answer the
//     client call with that Ref (or the transfer).
//   - LeaderRefused, ClusterIDRefused: report them (the replica goes on).
//   - Stopped: the replica takes no further input; stop the host with Err.
//
// # What is checked, and what a Fault means
//
// The replica checks the State every step returns against its invariants
// (kraft.State.CheckInvariants) and its own invariants after every 16th
// input and after every change of role or epoch (docs/design.md D200). A
// broken one stops the replica with a *Fault (Stopped, Err): Layer says
// whose invariant ("state" or "replica"), Rule names it. A Fault is a bug,
// in the protocol or in the storage the host gave, never a condition to
// retry: stop the process, keep the log, the snapshots and the Fault's
// State for the report, and restart it from its storage only once the
// cause is understood (the durable state is as the last Sync left it).
package replica
