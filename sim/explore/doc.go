// Package explore enumerates every reachable state of a small kraft
// cluster, breadth first, and checks package sim's safety invariants in
// each, plus "no Step returns a Fault" and, optionally, a liveness
// property.
//
// # The model
//
// Each replica runs package replica's layer, as the runtime and the
// simulator do (docs/design.md D75, D76). A world is every replica's layer
// (its kraft.State, its requests in flight, retries, latest Fetch, parked
// Fetches and armed deadlines), its durable quorum-state record, its
// written log with its flushed prefix (package storage's MemLog, copied on
// write when a move changes it, docs/design.md D126; the checker reads it
// as records of an epoch and an identity), and whether it is up; the network, a multiset of the layer's
// messages in flight (Fetch responses with the records they carry); the
// counters the bounds limit; and the checker's history: the leader of each
// epoch and the committed log.
//
// The moves (Move) from a world:
//
//   - Deliver any message in flight to its addressee (Replica.Receive): the
//     layer drops a response to a request it no longer waits for, appends a
//     Fetch response's records when the state takes them and its log still
//     ends at the fetch offset, parks a caught-up Fetch at a leader.
//   - Drop any message (Options.Full only: by default a message is lost
//     only as part of a move that the in-flight bound would otherwise cut
//     off, Move.Drops); Duplicate any message (at most MaxDuplicates).
//   - Fire any armed deadline of a replica (replica.Model's Deadlines and
//     Expire, docs/design.md D290): a kraft timer, a request's timeout, a
//     retry, a parked Fetch's wait. The
//     model is untimed: an armed deadline may fire at any moment, once. This
//     over-approximates every timing a real host can produce (a deadline
//     that fires "too early" is a behaviour no clock allows), so a violation
//     needs a look at its path; it never hides one.
//   - Flush a replica's whole unflushed tail (Replica.Synced: group commit
//     of everything written; partial flushes are not modelled).
//   - Crash a replica (at most MaxCrashes): its unflushed tail, its layer
//     and every message addressed to it are lost; messages it sent stay in
//     flight, and answers to its requests match nothing in its next
//     incarnation. Restart a down replica with replica.New from its durable
//     record and flushed log.
//   - At a leader: Resign, or a client Append (at most MaxAppends),
//     proposed (Replica.Propose: written and reported, unflushed).
//   - With Bounds.PeerDowns, at a Follower: its host reports its leader's
//     process gone (Replica.PeerDown, docs/design.md D101), true or not;
//     the replica takes one report per epoch.
//   - Damage (at most MaxDamages): restart a down replica on a log whose
//     synced records are damaged from a chosen offset on (a flipped bit or
//     a lost write). The voter set is static, so the host refuses to start
//     on it, as storage.Open does (docs/design.md D71), and the operator
//     restores the directory as it was (D91): the replica starts on its
//     log as it was. The dynamic rule (a replaced disk) and the
//     quorum-state faults are package sim's random schedules'. The
//     planted bug plant.TornTail (tests only) cuts the log at the damage
//     instead, and starts the replica under its old identity and vote.
//
// After every move the correlation ids are renamed after what they name
// (replica.Model's Canonicalize, RenameParked): ids only need to be equal or not,
// and the layer issues new ones forever. A response whose id its requester
// no longer matches is lost at once. A Fetch parked at a leader counts as
// a message in flight for MaxMessages.
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
// encoding: replica.Model.AppendCanonicalUntimed for each up replica
// (kraft.State.AppendCanonicalUntimed, and the layer's state without its
// times), the host's data, the network sorted by each message's encoding,
// the counters and the checker's history. Run keeps each distinct replica, message and
// history once (store.go) and a world as a row of their indexes; its
// fingerprint hashes the fingerprints of its parts. Options.Workers
// goroutines expand a level, merged in level order: the result does not
// depend on their number or scheduling. The PRNG state, the fetch-timeout
// jitter drawn from it and every deadline's time are left out: they feed
// only deadlines, which the untimed model fires in any order. Fingerprints
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
// Resigned, docs/design.md D5), one leader per epoch, a new leader holding
// the whole committed log (leader-complete), record-matches-state.
// After each move: committed-lost, log-matching and host-log on every
// replica. The layer's observer (replica.Observer) hands the checks every
// step and action. The rule names are package sim's, plus
// "replica-stopped" for a layer that stopped on an error.
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
