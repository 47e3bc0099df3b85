// Package explore enumerates every reachable state of a small kraft
// cluster, breadth first, and checks package sim's safety invariants in
// each, plus "no Step returns a Fault" and, optionally, a liveness
// property.
//
// # The model
//
// A world is every replica's kraft.State, its durable quorum-state record,
// its written log (records are an epoch and an identity) with its flushed
// prefix, whether it is up, its armed timers and whether a Fetch of its
// current role is in flight; the network, a multiset of messages in flight
// (events made with kraft.Deliver from the send actions, responses
// included, Fetch responses with the records they carry); the counters the
// bounds limit; and the checker's history: the leader of each epoch and
// the committed log.
//
// The moves (Move) from a world:
//
//   - Deliver any message in flight to its addressee (an observer's Fetch
//     to any voter) and step it. The receiving host follows the README's
//     host contract: a Fetch response's records are appended (and reported
//     with LogAppended, one report per epoch run) only when
//     State.AcceptsRecords says so and the log still ends at the fetch
//     offset; otherwise the response is dropped whole (the follower fetches
//     again on its fetch timeout; request retries are not modelled).
//     Responses to requests sent before the replica's latest RoleChanged,
//     to a superseded Fetch or to an earlier incarnation are dropped (rule
//     6), and only the first answer to the Fetch in flight is taken.
//   - Drop any message (Options.Full only: by default a message is lost
//     only as part of a move that the in-flight bound would otherwise cut
//     off, Move.Drops); Duplicate any message (at most MaxDuplicates).
//   - Fire any armed timer. The model is untimed: ResetTimer arms a timer
//     whatever its duration, StopTimer disarms it, and an armed timer may
//     fire at any moment, once. This over-approximates every timing a real
//     host can produce (a timer that fires "too early" is a behaviour no
//     clock allows), so a violation needs a look at its path; it never
//     hides one.
//   - Flush a replica's whole unflushed tail and step LogFlushed (group
//     commit of everything written; partial flushes are not modelled).
//   - Crash a replica (at most MaxCrashes): its unflushed tail, its timers
//     and every message addressed to it are lost; messages it sent stay in
//     flight, and answers to its requests will be dropped by the host of
//     its next incarnation. Restart a down replica with kraft.NewState from
//     its durable record and flushed log.
//   - At a leader: Resign (kraft.Resign), or a client Append (at most
//     MaxAppends) that is written and reported with LogAppended, unflushed.
//
// A move whose result breaks a bound (an epoch past MaxEpoch, more than
// MaxMessages in flight) is not taken; Stats.Pruned counts them.
//
// Dead messages, whose delivery changes nothing now and in every world
// reachable while they are in flight (see dead), are taken off the
// network after each move (not with Options.Full). Both reductions keep
// every replica state, checker history and counter of the full model
// (docs/verification.md argues it; TestReductionsReachTheSameReplicas
// checks it at small bounds).
//
// # Deduplication
//
// Worlds are deduplicated by a 128-bit fingerprint of a canonical
// encoding: kraft.State.AppendCanonicalUntimed for each up replica, the
// host's data, the network sorted by each message's encoding, the counters
// and the checker's history. Run keeps each distinct replica, message and
// history once (store.go) and a world as a row of their indexes; its
// fingerprint hashes the fingerprints of its parts. Options.Workers
// goroutines expand a level, merged in level order: the result does not
// depend on their number or scheduling. The PRNG state and the fetch-timeout jitter
// drawn from it are left out: they feed only timer durations, which the
// untimed model ignores. Fingerprints
// can collide (about n²/2¹²⁹ for n worlds) and a collision would hide a
// world, as with TLC's fingerprints.
//
// There is no symmetry reduction: every replica has its own Config.Seed
// and the voters are ordered (preferred successors, tie breaks by key), so
// permuting replica ids does not map behaviours onto behaviours in
// general.
//
// # Checks
//
// After each action, before the host carries it out: persist-before-send
// (the durable record must justify every message), epoch-monotonic and the
// vote rules on each Persist (within one epoch a stored vote never
// changes, is never dropped except by the leader's own record, and a
// leader never votes for another afterwards), a leader's new high
// watermark held durably by a majority of the voters and ending in a
// record of its epoch (hwm-majority, hwm-own-epoch, committed-changed),
// and no Fault. After each step: epoch and high watermark monotonic within
// a life (the high watermark starts over when a replica becomes Leader or
// Resigned, docs/design.md D5), one leader per epoch, record-matches-state.
// After each move: committed-lost, log-matching and host-log on every
// replica. The rule names are package sim's.
//
// With Options.Liveness the fair moves (all but Drop, Duplicate and Crash)
// are kept as a graph; once the search is done, a backwards pass from the
// worlds with a leader, and from the worlds whose successors a bound or
// the search's end cut off, finds the worlds that can reach neither:
// stuck within the model for good, reported as a "liveness" violation.
//
// The first violation stops the search; breadth first, its path is a
// shortest one. Model.Describe prints a path with every Step it makes,
// and Model.WriteTrace writes it in package sim's trace format, which
// sim.Replay and kraftsim -replay play back.
package explore
