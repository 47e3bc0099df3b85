// Package node runs one kraft replica: the host around kraft.Step that
// every embedding otherwise writes by hand.
//
// A Node owns one goroutine that holds the replica's kraft.State and takes
// every input from channels: messages from a Transport, timer firings,
// completed log flushes and client calls. It steps each input and carries
// out the actions in order, keeping the host contract of the module's
// README: a Persist is written and fsynced (RecordStore) before anything
// after it; writes are reported to the state (LogAppended) before any
// other input and flushes when they complete (LogFlushed, group commit);
// timers are generation-counted; requests are tracked as Kafka's
// RequestManager does (correlation ids, one in flight per destination and
// kind, timeouts and retries with Kafka's defaults); a leader parks Fetch
// requests that have nothing new (long poll) and attaches records from its
// written log to the answers; a follower appends fetched records when
// kraft.State.AcceptsRecords says so.
//
// Clients call Append, which returns once the records are committed,
// Resign, Shutdown (a leader hands leadership over first) and Status; a
// state machine receives the committed records through Config.OnCommit.
//
// Storage comes from package storage (Kafka's quorum-state file through
// FileRecords, a segment log through storage.Open) or from memory
// (MemRecords, storage.NewMemLog). Transports: MemNetwork for tests and
// TCPTransport (length-prefixed frames, responses on the request's
// connection). cmd/kraftd runs a Node as a process. The decisions behind
// the runtime are D32-D37 in docs/design.md.
package node
