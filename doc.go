// Package kraft implements Apache Kafka's KRaft quorum protocol as a pure,
// deterministic state machine:
//
//	func Step(s State, e Event) (State, []Action)
//
// It covers KIP-595 elections and fetch-based replication, KIP-996 Pre-Vote,
// check-quorum (KAFKA-15489), KIP-853 replica directory ids in replica keys,
// graceful resignation with EndQuorumEpoch, and KIP-853 voter-set changes
// at run time (AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter): with
// kraft.version 1 the voter set follows the VotersRecords of the log, which
// the host reports (VotersAppended).
//
// kraft does no I/O. The host program owns the network, the disk, the clock
// and the log: it turns what happens into Events, calls Step, and carries out
// the returned Actions in order. A State is an immutable value: Step never
// changes the State it is given, so a host may keep old States to compare,
// replay or fork from them.
//
// # Starting a replica
//
// Describe the replica with a Config and build its first State with
// NewState:
//
//	cfg := kraft.Config{
//		Local:  kraft.ReplicaKey{ID: 1},
//		Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}},
//		Seed:   1, // a distinct seed per replica
//	}
//	s, acts, err := kraft.NewState(cfg, nil, kraft.LogState{})
//
// A nil record and an empty LogState mean "nothing was ever stored". Zero
// durations in Config mean Kafka's defaults (DefaultElectionTimeout,
// DefaultFetchTimeout, DefaultElectionBackoffMax). Node id 0 is valid, so a
// Config whose Local was never set is rejected by Config.Validate (which
// NewState calls) unless 0 is a voter; an invalid Config is an error, never
// a panic. NoNode (-1) names nobody: no leader, no vote, an observer without
// an id. The zero QuorumRecord names node 0; use EmptyRecord for "no
// record".
//
// The actions NewState returns are the replica's first work, to carry out
// like those of any step: a Persist of the (possibly rewritten) record, the
// role's timers, and the messages Kafka sends on its first poll. A fresh
// voter starts Unattached in epoch 0 with its election timer armed. A single
// voter elects itself at once, inside NewState.
//
// # Restarting
//
// On restart, pass the last record the host persisted and a description of
// the log that survived, synced (its end and the first offset of each
// epoch, Kafka's leader-epoch cache); all of it counts as flushed:
//
//	rec := kraft.QuorumRecord{Epoch: 5, LeaderID: 1, VotedKey: kraft.NoReplica}
//	log := kraft.LogState{
//		End:    kraft.LogEnd{Offset: 10, Epoch: 5},
//		Epochs: []kraft.EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 5, StartOffset: 4}},
//	}
//	s, acts, err := kraft.NewState(cfg, &rec, log)
//
// NewState applies Kafka's startup rules (QuorumState.initialize): a record
// whose epoch is behind the log's last epoch restarts Unattached in the
// log's epoch; a former leader restarts Resigned and sends EndQuorumEpoch
// with an empty successor list; a replica that voted for itself restarts
// Candidate and asks for votes again (unless the record also names the
// epoch's leader, which it then follows); a stored leader that is a voter is
// followed (the first Fetch goes out at once); anything else restarts
// Unattached, keeping the stored leader id and vote. A replica never
// restarts as Leader.
//
// A host that takes snapshots also passes the log start offset and the
// latest and earliest snapshot ids on disk (LogState.Start,
// LatestSnapshot, EarliestSnapshot); NewState rejects a log whose start,
// epochs and snapshots disagree. Records below the latest snapshot count
// as committed.
//
// # The host loop
//
// A host runs one loop per replica. Each turn it takes one input (a message,
// a timer, a completed append), makes it an Event, steps, and carries out
// the actions in the order given:
//
//	next, acts := kraft.Step(s, e)
//	s = next
//	for _, a := range acts {
//		switch a := a.(type) {
//		case kraft.Persist:
//			// write a.Record and fsync, before anything after it
//		case kraft.ResetTimer, kraft.StopTimer:
//			// arm or cancel the timer
//		case kraft.AppendLeaderChange, kraft.TruncateLog:
//			// change the local log; report writes with LogAppended
//			// at once, flushes with LogFlushed when they complete
//		case kraft.WriteSnapshotChunk, kraft.InstallSnapshot:
//			// write the FetchSnapshot response's bytes; install the
//			// downloaded snapshot and reset the log to it
//		case kraft.HighWatermarkChanged:
//			// records below a.HighWatermark are committed
//		case kraft.RoleChanged:
//			// note the new role; forget requests in flight
//		case kraft.Fault:
//			// the cluster is inconsistent: stop or alert
//		case kraft.LeaderRefused:
//			// the leader would remove committed records: report it;
//			// the replica goes on
//		default:
//			// a Send* action: a message to send
//		}
//	}
//
// StepInto is Step with the actions stored in a Buffer the host reuses
// from step to step, so that a running quorum's steps allocate nothing;
// the actions stay valid until the next StepInto with that Buffer.
// StepIn(b, &s, e) decides as StepInto does but makes the host's State the
// next one in place, so a step copies no State in or out (a leader's ack
// none at all; docs/design.md D300); an event StepInto drops or answers
// with a Fault or AppendFetched leaves the State as it was. The package
// examples contain a complete in-memory host.
//
// Events a host reports about its own log are events too. The state keeps
// the log as Kafka does, the written log apart from the flushed offset
// (docs/design.md D30): LogAppended when records are written, flushed or
// not (the leader's appends, including the LeaderChange record asked for by
// AppendLeaderChange, and a follower's appends of fetched records), at once
// and one per epoch when a write spans several epochs; LogFlushed when the
// log is durable up to an offset, whenever the host's flush completes.
// Votes, the epoch start and Fetch validation use the written log; a leader
// commits only what a majority has flushed, itself included, and a voter
// sends its Fetch only once its written log is flushed. Resign asks a
// leader to step down gracefully. A TruncateLog action is already
// reflected in the State when Step returns.
//
// Fetched records are the host's: it steps a Fetch response that carries
// records with Records set; when the state takes them it answers with
// AppendFetched alone, and the host appends them at AppendFetched.Offset
// (its log end), reports them with LogAppended (and VotersAppended), and
// then steps AppendFetched.Then (docs/design.md D240). The leader's host attaches records from its written
// log, flushed or not, to a SendFetchResponse whose Error is ErrNone and
// that has no Diverging point and no Snapshot, from the request's fetch
// offset up to State.LogEnd().
//
// # Snapshots
//
// The host owns snapshot bytes; the state owns the decisions (Kafka's
// KafkaRaftClient and KafkaMetadataLog rules, docs/design.md D42-D45). The
// host reports a snapshot it wrote with SnapshotCreated and the cleaning of
// the log before a snapshot with LogStartMoved; a leader then answers a
// follower that fell behind its log with the latest snapshot id. It serves
// FetchSnapshot requests after looking up the snapshot's size
// (ReceiveFetchSnapshot.Size). A follower told to fetch a snapshot sends
// SendFetchSnapshot requests; the host steps each response before writing
// its bytes, writes them when the state asks (WriteSnapshotChunk), and on
// InstallSnapshot makes the snapshot durable and resets its log to start
// and end at it.
//
// # Voter sets
//
// With kraft.version 1 (KIP-853; docs/design.md D50-D53) the voter set
// lives in the log. The host passes the sets it finds to NewState
// (LogState.VoterSets) and reports every VotersRecord it writes or fetches,
// and a snapshot's set after an install, with VotersAppended; the set in
// force is the latest, committed or not. A leader takes AddRaftVoter,
// RemoveRaftVoter and UpdateRaftVoter requests (ReceiveAddVoter,
// ReceiveRemoveVoter, ReceiveUpdateVoter), asks the host to append the new
// set (AppendVoters) and answers with SendVoterChangeResponse. Without
// sets in the log, Config.Voters is a static voter set (kraft.version 0).
//
// # Events and actions
//
// Event and Action are closed sets of plain structs. The events:
//
//   - ElectionTimeout: the election timer fired.
//   - FetchTimeout: the fetch timer fired.
//   - CheckQuorumTimeout: the leader's check-quorum timer fired.
//   - BeginQuorumEpochTimeout: the leader's BeginQuorumEpoch re-send timer fired.
//   - ReceiveVoteRequest: a Vote request (standard vote or pre-vote) arrived.
//   - ReceiveVoteResponse: a voter answered this replica's Vote request.
//   - ReceiveBeginQuorumEpoch: a leader announces its epoch.
//   - ReceiveEndQuorumEpoch: the leader of an epoch resigns.
//   - ReceiveFetch: a Fetch request from a follower or an observer arrived.
//   - ReceiveFetchSnapshot: a FetchSnapshot request arrived.
//   - ReceiveFetchResponse: the answer to this replica's Fetch.
//   - ReceiveFetchSnapshotResponse: the answer to this replica's
//     FetchSnapshot, stepped before its bytes are written.
//   - ReceiveQuorumResponse: the answer to a BeginQuorumEpoch or
//     EndQuorumEpoch request.
//   - ReceiveLeaderlessEpoch: a response named a newer epoch and no leader
//     (kept for older hosts; ReceiveQuorumResponse covers it).
//   - LogAppended: the host wrote records; the log now ends at End.
//   - LogFlushed: every record below Offset is durable.
//   - SnapshotCreated: the host wrote a snapshot of the committed records.
//   - LogStartMoved: the host deleted the log before a snapshot.
//   - Resign: the leader gives up leadership (Kafka's resign, not its shutdown).
//   - VotersAppended: the host wrote a VotersRecord (or installed a
//     snapshot's voter set).
//   - ReceiveAddVoter, ReceiveRemoveVoter, ReceiveUpdateVoter: a KIP-853
//     voter change request arrived.
//   - ReceiveAPIVersionsResponse: the kraft.version range of a voter being
//     added.
//   - VoterChangeTimeout: the voter-change timer fired.
//
// The actions:
//
//   - Persist: write the quorum-state record durably before anything after it.
//   - SendVoteRequest: ask one voter for a standard vote or a pre-vote.
//   - SendVoteResponse: answer a Vote request.
//   - SendBeginQuorumEpoch: tell a voter that this replica leads the epoch.
//   - SendBeginQuorumEpochResponse: answer a BeginQuorumEpoch request.
//   - SendEndQuorumEpoch: tell a voter that this replica resigns, naming the
//     preferred successors.
//   - SendEndQuorumEpochResponse: answer an EndQuorumEpoch request.
//   - SendFetch: fetch from the leader, or from any bootstrap voter (NoNode).
//   - SendFetchResponse: answer a Fetch; the host attaches the records (or
//     the answer names a diverging point or a snapshot to fetch instead).
//   - SendFetchSnapshot: ask the leader for the next bytes of a snapshot.
//   - SendFetchSnapshotResponse: answer a FetchSnapshot; the host attaches
//     the snapshot chunk.
//   - TruncateLog: remove every record at or after To from the local log.
//   - WriteSnapshotChunk: write the stepped FetchSnapshot response's bytes
//     into the snapshot being downloaded.
//   - InstallSnapshot: finish the downloaded snapshot and reset the log to
//     start and end at it.
//   - AppendLeaderChange: append the LeaderChange record at the log end
//     (and, when asked, a VotersRecord after it).
//   - AppendVoters: append a VotersRecord holding the new voter set.
//   - SendAPIVersions: ask a voter being added which kraft.version levels
//     it supports.
//   - SendVoterChangeResponse: answer a voter change request.
//   - SendVoterChange: an auto-joining observer's AddRaftVoter or
//     RemoveRaftVoter to the leader.
//   - HighWatermarkChanged: records below the new high watermark are
//     committed.
//   - ResetTimer: arm a timer, replacing any pending arming.
//   - StopTimer: cancel a timer.
//   - RoleChanged: the role, epoch or leader changed (for listeners and logs).
//   - Fault: an input proved the cluster inconsistent; the state is unchanged.
//   - LeaderRefused: the leader of the epoch asked to remove records below
//     the high watermark; the replica refuses to follow it and goes on
//     (for logs and readiness; docs/design.md D113).
//
// # The persistence rule
//
// A Persist action must be durable (written and fsynced) before the host
// carries out any later action of the same step: nothing after a Persist may
// leave the process first. Every step that changes the durable quorum state
// emits its Persist before the messages that depend on it (a granted vote,
// a new epoch), so following the action order is enough. The host keeps the
// last persisted record; it is what NewState needs after a crash.
// State.Record returns the record that matches a State.
//
// # Responses and round trips
//
// Step says what to send, once. Retries, correlation ids, connection
// backoff and long-poll parking of Fetch requests are the host's, as they
// are Kafka's RequestManager and fetch purgatory. A host drops every
// response to a request it sent before the latest RoleChanged action of that
// replica, as Kafka's resetConnections does. Responses to BeginQuorumEpoch
// and EndQuorumEpoch are stepped as ReceiveQuorumResponse, so a replica
// learns a newer epoch and its leader from them; the host re-sends
// an EndQuorumEpoch until the voter answers NONE or the role changes (the
// leader re-sends BeginQuorumEpoch on its own timer). Deliver turns any
// message action into the event its addressee steps.
// docs/wire-mapping.md maps every Kafka RPC field to an event or action
// field.
//
// # Timers and randomness
//
// A replica has four timers (ElectionTimer, FetchTimer, CheckQuorumTimer,
// BeginQuorumEpochTimer). ResetTimer arms a timer to fire After from now and
// replaces any pending arming of that timer; StopTimer cancels it. A timer
// fires at most once per arming, and the host delivers the timeout event
// (ElectionTimeout, FetchTimeout, CheckQuorumTimeout,
// BeginQuorumEpochTimeout) only for the latest arming. After may be 0: fire
// as soon as the current step's actions are done. A timer keeps running
// across a role change unless a StopTimer says otherwise (some transitions
// hand the remaining election time to the next role, as Kafka does). Step
// also ignores a timeout that does not belong to the current role.
//
// Election timeouts are T_e + U[0, T_e), drawn from a small PRNG kept in the
// State and seeded from Config.Seed. Step reads no clock and uses no global
// randomness, so a run replays exactly from its inputs. Give every replica
// a distinct seed: replicas that draw the same timeouts split votes.
//
// # Observers
//
// A replica whose Local key is not in Voters is an observer; set
// Config.Observer so that a forgotten Local is caught by Validate. An
// observer may have no id (Local.ID = NoNode). Observers never campaign,
// though one with an id answers Vote requests by the same rules as a voter
// and may persist a granted vote, as Kafka's do: they are Unattached or
// Follower, except that a former leader
// that has left the voter set restarts Resigned until its election timer
// fires, and a leader that removed itself from a dynamic voter set leads
// until the removal commits, then resigns. An Unattached observer looks for the leader with a SendFetch whose
// To is NoNode ("any bootstrap voter"), again on every FetchTimeout, and
// follows the leader a response names. A leader answers observers' fetches
// fully but does not track them, so the State does not grow with the number
// of observers.
//
// # Faults
//
// An input that proves the cluster inconsistent (such as two leaders in
// one epoch, or a message naming this replica leader when it is not) makes
// Step return the State unchanged and a single Fault action. Kafka throws in
// these cases; the host decides whether to stop. Malformed input never
// panics: it gets Kafka's error code in the response action, or is dropped.
//
// A leader asking a follower to remove records below its high watermark
// (a diverging epoch or a snapshot that ends there) was elected without
// committed records. Kafka throws there too; kraft's follower refuses that
// leader instead (LeaderRefused, State.RefusedLeader): it keeps its log,
// sends the leader no more Fetch requests and answers its BeginQuorumEpoch
// with NOT_LEADER_OR_FOLLOWER, grants pre-votes, and campaigns when its
// fetch timer runs out, so that the voters holding the records elect one
// of them (docs/design.md D113).
package kraft
