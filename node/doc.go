// Package node runs one kraft replica: the host around kraft.Step that
// every embedding otherwise writes by hand.
//
// A Node owns one goroutine that runs the replica's protocol layer
// (package replica: request tracking as Kafka's RequestManager, long-poll
// parking, the records decision, snapshots, voter sets) and feeds it every
// input: messages from a Transport, its one timer (the replica's next
// deadline), completed log syncs and client calls. It carries out the
// layer's outputs: sends go to the Transport, syncs run on a goroutine of
// their own (group commit), commits go to the applier.
//
// Clients call Append, which returns once the records are committed,
// Resign, Shutdown (a leader hands leadership over first) and Status; a
// state machine receives the committed records through Config.OnCommit.
// WaitApplied waits until this replica's state machine holds a committed
// record, and ReadIndex (ReadBarrier) gives linearizable reads at the
// leader without writing to the log: a round of BeginQuorumEpoch requests
// confirms the leadership (docs/design.md D120-D122).
// Metrics returns Kafka's raft metrics (KafkaRaftMetrics) as values, with
// fsync latency and each voter's lag (docs/design.md D68).
//
// The node logs through Config.Logger (log/slog) a record for every
// incident an operator must know of, each with an "event" attribute (the
// Event constants), its cause as attributes and, where an operator acts,
// an "advice" attribute: role changes, voter-set changes, snapshots, cluster
// id refusals at both ends, peers the TCP transport cannot reach (DNS
// failures named as such), connections that do not speak kraft's
// protocol, dropped messages, voters lagging past Config.LagThreshold and
// syncs slower than Config.SlowSyncThreshold. Repeats are rate-limited
// (docs/design.md D67, D85).
//
// With Config.Snapshots, the node also carries out kraft's snapshot
// actions: it answers FetchSnapshot requests with chunks of its snapshot
// files; as a follower too far behind the leader's log start, it
// downloads the leader's snapshot, installs it (the log restarts at the
// snapshot's end) and hands it to Config.Restore before any later record;
// every Config.SnapshotEvery offsets it has Config.Snapshot write the
// state machine's snapshot (from OnCommit's goroutine, off the loop),
// reports it and deletes the log before it; and Start passes the log start
// and the snapshot ids to kraft.NewState and restores the latest snapshot
// first. The snapshot file work that kraft's state must see done before
// its next step (serving chunks, writing downloaded chunks, the install's
// freeze and log reset, the log deletion, removing old snapshots) runs on
// the loop.
//
// A dynamic voter set (KIP-853, kraft.version 1) starts from
// Config.InitialVoters, kept in a bootstrap checkpoint (Config.BootstrapPath)
// and written into the log as a VotersRecord by the first leader. The node
// writes the leader's VotersRecords (with each voter's endpoint), reports
// every VotersRecord it writes or fetches and the voter set of every
// snapshot it installs (VotersAppended), keeps the voter set in force in
// the snapshots it takes, finds the voter sets again at Start, and points
// the transport at the voters' endpoints. AddVoter, RemoveVoter and
// UpdateVoter change the set at the leader; it answers ApiVersions
// requests, and an observer with kraft.Config.AutoJoin asks to join.
//
// The bootstrap checkpoint is written by Start when Config.InitialVoters
// is given and Config.BootstrapPath holds none yet, into an empty log
// only. That is a hazard for a host that passes the same InitialVoters at
// every start: a replica whose data directory was wiped starts again as a
// first voter under its old key, bootstraps a second history, can elect
// itself alone in a new epoch and make the quorum lose records it
// acknowledged. Write the checkpoint once instead, when the directory is
// formatted (storage.WriteBootstrap, or package datadir's Format), and
// start with InitialVoters nil: Start then only reads it. cmd/kraftd does
// so (kraftd format, docs/design.md D108).
//
// Storage comes from package storage (Kafka's quorum-state file through
// FileRecords, a segment log through storage.Open) or from memory
// (MemRecords, storage.NewMemLog). Transports: MemNetwork for tests and
// TCPTransport (length-prefixed frames, responses on the request's
// connection; its connections are the layer it shares with package
// kafkawire's transport, internal/stream, docs/design.md D220). cmd/kraftd runs a Node as a process. The decisions behind
// the runtime are D32-D37 and D60 in docs/design.md.
package node
