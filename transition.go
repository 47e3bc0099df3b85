package kraft

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Step applies one event to a state and returns the next state and the
// actions the host must carry out, in order. Step is pure: it never changes
// s or anything reachable from it, reads no clock, does no I/O and draws
// randomness only from the PRNG kept in s. It is deterministic and total:
// every event, including zero values and nonsense, gets Kafka's answer or is
// dropped, and an event that proves the cluster inconsistent yields a single
// Fault action and s unchanged.
//
// The actions are the caller's: Step allocates them (at most once per step)
// and never touches them again.
func Step(s State, e Event) (next State, acts []Action) {
	// next is built in place; s, untouched, is the state a Fault or
	// AppendFetched returns to (D300).
	next = s
	acts = stepIn(nil, &next, e, &s)
	return next, acts
}

// StepInto is Step with the actions stored in b, which a host reuses from
// step to step: once b has grown to fit the largest step, a step allocates
// nothing. The returned slice and the actions in it stay valid until the
// next StepInto with b (see Buffer). A nil b is Step.
func StepInto(b *Buffer, s State, e Event) (next State, acts []Action) {
	// Small enough to be inlined, so that the State is not copied through
	// temporaries on its way in and out (a State is copied on every step).
	// As in Step, s is the state to return to (D300).
	next = s
	acts = stepIn(b, &next, e, &s)
	return next, acts
}

// StepIn is StepInto on the caller's State: it makes *s the next state in
// place and returns the actions, so that no State is copied into or out of
// the step (docs/design.md D300); a leader's ack of a voter's Fetch, the
// most frequent step, copies none at all. Its decisions are StepInto's: *s
// ends as the state StepInto would return and the actions are the same. An
// event that StepInto drops, or answers with a Fault or AppendFetched,
// leaves *s exactly as it was. Besides b, *s is all StepIn changes, and it
// keeps no reference to s. A nil s is a dropped event. The actions stay
// valid until the next step with b, as with StepInto; a nil b allocates
// them, as Step does.
func StepIn(b *Buffer, s *State, e Event) []Action {
	if s == nil {
		return nil
	}
	return stepIn(b, s, e, nil)
}

// stepIn is Step, StepInto and StepIn: a nil b is Step, otherwise b is
// reset for this step. old is nil (StepIn) or the state to return to (see
// stepTo).
func stepIn(b *Buffer, s *State, e Event, old *State) []Action {
	var acts []Action
	if b == nil {
		o := Buffer{oneShot: oneShotFor(e)}
		acts = stepTo(&o, s, e, old)
	} else {
		b.acts = b.acts[:0]
		b.arena.reset()
		acts = stepTo(b, s, e, old)
	}
	if checkStep != nil {
		runCheckStep(s)
	}
	return acts
}

// runCheckStep calls checkStep out of line, so that stepIn's frame does
// not grow by the State copy the call takes.
//
//go:noinline
func runCheckStep(s *State) { checkStep(*s) }

// stepTo builds the next state in *s, in place, and returns the actions
// (D300). old is *s as it was before the step, or nil: a step that ends
// with a Fault or AppendFetched (appendFirst) restores *s from old. Step
// and StepInto step a copy of their input and pass the input as old, so
// they copy the State as they always did. StepIn passes nil: the events
// whose handlers may end the step with a Fault or AppendFetched first keep
// a copy of the state (stepSaved); the others change *s as they go, with
// no copy of the State at all, since they can neither fail nor ask to
// append first (TestStepInPlaceCasesCannotUndo checks it on the handlers'
// code).
func stepTo(b *Buffer, s *State, e Event, old *State) []Action {
	if s.c == nil || e == nil {
		return nil
	}
	t := stepper{s: s, buf: b}
	if f := receivedFetch(e); f != nil {
		// A Fetch, without the type switch and the copy of the event
		// (D340). Its handler can neither fault nor append first, as
		// the switch's ReceiveFetch case, which runs it when
		// receivedFetch cannot, shows TestStepInPlaceCasesCannotUndo.
		t.onFetch(f)
		return t.endInPlace()
	}
	switch e := e.(type) {
	case ElectionTimeout:
		t.onElectionTimeout()
	case FetchTimeout:
		t.onFetchTimeout()
	case CheckQuorumTimeout:
		t.onCheckQuorumTimeout()
	case BeginQuorumEpochTimeout:
		t.onBeginQuorumEpochTimeout()
	case ReceiveVoteRequest:
		t.onVoteRequest(e)
	case ReceiveVoteResponse:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onVoteResponse(e)
	case ReceiveBeginQuorumEpoch:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onBeginQuorumEpoch(e)
	case ReceiveEndQuorumEpoch:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onEndQuorumEpoch(e)
	case ReceiveFetch:
		t.onFetch(&e)
	case ReceiveFetchSnapshot:
		t.onFetchSnapshot(e)
	case ReceiveFetchResponse:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onFetchResponse(&e)
	case ReceiveFetchSnapshotResponse:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onFetchSnapshotResponse(e)
	case ReceiveLeaderlessEpoch:
		t.onLeaderlessEpoch(e)
	case ReceiveQuorumResponse:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.commonResponse(e.Epoch, e.LeaderID, e.Error)
	case LogAppended:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onLogAppended(e)
	case LogFlushed:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onLogFlushed(e)
	case SnapshotCreated:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onSnapshotCreated(e)
	case LogStartMoved:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onLogStartMoved(e)
	case Resign:
		t.onResign(e)
	case VotersAppended:
		if old == nil {
			return stepSaved(b, s, e)
		}
		t.onVotersAppended(e)
	case ReceiveAddVoter:
		t.onAddVoter(e)
	case ReceiveRemoveVoter:
		t.onRemoveVoter(e)
	case ReceiveUpdateVoter:
		t.onUpdateVoter(e)
	case ReceiveAPIVersionsResponse:
		t.onAPIVersionsResponse(e)
	case VoterChangeTimeout:
		t.onVoterChangeTimeout()
	}
	if old == nil {
		// An in-place step: no fault and no appendFirst can be pending
		// (TestStepInPlaceCasesCannotUndo).
		return t.endInPlace()
	}
	if t.appendFirst && t.fault == "" {
		r, _ := e.(ReceiveFetchResponse)
		return t.appendFetched(old, s, r)
	}
	if t.resignDue && t.fault == "" {
		t.resignRemoved()
	}
	if t.fault != "" {
		b := t.buffer()
		// A copy of the reason: nothing of the stepper, which points at
		// s, may reach the heap, or the caller's State would have to
		// live there.
		b.acts = append(b.acts[:0], Fault{Reason: string([]byte(t.fault))})
		*s = *old
		return b.acts
	}
	return t.actions()
}

// endInPlace ends a step that can neither fault nor append first: a
// leader whose removal from the voter set committed resigns.
func (t *stepper) endInPlace() []Action {
	if t.resignDue {
		t.resignRemoved()
	}
	return t.actions()
}

// resignRemoved: a leader whose removal from the voter set committed
// during the step resigns at its end (Kafka's requestResign, acted on by
// pollLeader). Rare: out of line, so that endInPlace is inlined.
//
//go:noinline
func (t *stepper) resignRemoved() {
	if t.s.role == Leader {
		t.toResigned("removed from the voter set")
	}
}

// stepSaved steps an event whose handler may end the step with a Fault or
// with AppendFetched: it keeps *s as it was, in its own frame (so that the
// in-place steps' frames do not carry the copy), for stepTo to restore.
//
//go:noinline
func stepSaved(b *Buffer, s *State, e Event) []Action {
	old := *s
	return stepTo(b, s, e, &old)
}

// stepper carries one step: the state being built and the actions so far.
// A fault discards both (Step returns the input state and the Fault alone).
type stepper struct {
	s *State // the state being built
	// buf holds the step's actions: the caller's Buffer (StepInto) or
	// Step's one-shot Buffer.
	buf   *Buffer
	fault string

	// Fetch responses: a Follower entered during the step defers its first
	// Fetch to the end of the step (deferFetch); the timer reset and the
	// Fetch still due; whether the response's records were taken;
	// appendFirst: they are to be appended before the response is stepped
	// (AppendFetched, D240).
	deferFetch    bool
	fetchTimerDue bool
	fetchDue      bool
	accepted      bool
	appendFirst   bool
	// resignDue: a leader whose removal from the voter set committed
	// resigns at the end of the step (Kafka's requestResign, acted on by
	// pollLeader).
	resignDue bool
}

// emit appends an action that is boxed already (the ones settings keeps)
// or rare; the frequent ones go through the typed emitters of arena.go
// (and fetch and fetchResponse, in follower.go and leader.go).
func (t *stepper) emit(a Action) {
	b := t.buffer()
	b.acts = append(b.acts, a)
}

// actions is the step's action list.
func (t *stepper) actions() []Action {
	if t.buf == nil {
		return nil
	}
	return t.buf.acts
}

// persist emits a Persist of the current record. When a Persist of this
// step has no message after it yet, it is rewritten in place instead: the
// intermediate record was never relied on, so one fsync serves both (a voter
// that moves to a newer epoch and grants a vote in it; D1).
func (t *stepper) persist() {
	p := Persist{Record: t.s.Record()}
	acts := t.actions()
	for i := len(acts) - 1; i >= 0; i-- {
		switch acts[i].(type) {
		case Persist:
			acts[i] = t.pooledPersist(p)
			return
		case Fault, HighWatermarkChanged, LeaderRefused, ResetTimer, RoleChanged, StopTimer:
			// Reports and timers rely on nothing durable.
		default:
			// A message (every RPC of the catalogue, with no list to
			// keep) or a write to the log or a snapshot: the Persist
			// before it stays (docs/design.md D281).
			t.emitPersist(p)
			return
		}
	}
	t.emitPersist(p)
}

// failf records that the input proved the cluster inconsistent.
func (t *stepper) failf(reason string) { t.fault = reason }

// randomElectionTimeout draws T_e + U[0, T_e) from the state's PRNG (Kafka's
// QuorumState.randomElectionTimeoutMs; 0 when T_e is 0).
func (t *stepper) randomElectionTimeout() time.Duration {
	te := t.s.c.electionTimeout
	if te <= 0 {
		return 0
	}
	var r uint64
	t.s.rng, r = nextRand(t.s.rng)
	return te + time.Duration(r%uint64(te))
}

// maxEpoch is the largest epoch; a replica never bumps past it.
const maxEpoch = Epoch(1<<31 - 1)

// Timers each role owns. A transition stops the old role's timers that the
// new role does not own.
func timersOf(r Role, voter bool) (owned [2]Timer) {
	switch r {
	case Unattached:
		if voter {
			return [2]Timer{ElectionTimer}
		}
		return [2]Timer{FetchTimer}
	case Prospective, Candidate, Resigned:
		return [2]Timer{ElectionTimer}
	case Follower:
		return [2]Timer{FetchTimer}
	case Leader:
		return [2]Timer{CheckQuorumTimer, BeginQuorumEpochTimer}
	}
	return owned
}

func owns(set [2]Timer, t Timer) bool { return t != 0 && (set[0] == t || set[1] == t) }

// electionTimer says how a transition arms the election timer of a role
// that owns one.
type electionTimer int

const (
	timerRandom electionTimer = iota // a fresh T_e + U[0, T_e)
	timerKeep                        // keep the running timer (Kafka: "remaining time")
	timerZero                        // fire at once
)

// become moves to role in epoch with leader and vote, emitting, in this
// order: Persist (when durable and the record changes), RoleChanged, and
// StopTimer for timers the old role owned and the new one does not.
// Role-specific data is reset. The caller arms the new role's timers and
// sends its messages.
func (t *stepper) become(role Role, epoch Epoch, leader NodeID, voted ReplicaKey, durable bool, reason string) {
	old := *t.s
	n := old
	n.role, n.epoch, n.leader, n.voted = role, epoch, leader, voted
	n.endpoints = false
	n.fetched, n.leaderResigned, n.fetchPending, n.lowerAsked = false, false, false, false
	n.download = nil
	n.granted, n.rejected = 0, 0
	if epoch != old.epoch {
		n.forgetRival()
		n.rivalHeld = 0 // the rival's bound is per epoch (D105)
	}
	if epoch != old.epoch || leader != old.leader {
		n.refused = false
	}
	n.epochStart, n.ends, n.fetchedCheck, n.fetchedBegin = 0, voterEnds{}, 0, 0
	n.change, n.joinWait = nil, false
	*t.s = n
	if durable && n.Record() != old.Record() {
		t.persist()
	}
	t.emitRoleChanged(RoleChanged{From: old.role, To: role, Epoch: epoch, LeaderID: leader, Reason: reason})
	voter := n.c.isVoter()
	was, now := timersOf(old.role, voter), timersOf(role, voter)
	for _, tm := range was {
		if tm != 0 && !owns(now, tm) {
			t.emit(StopTimer{Timer: tm})
		}
	}
	if old.change != nil || old.joinWait {
		t.emit(StopTimer{Timer: VoterChangeTimer})
	}
	if c := old.change; c != nil {
		// Kafka's LeaderState.close fails the pending change.
		t.respondChange(c.ref, c.from, c.kind, ErrNotLeaderOrFollower)
	}
}

// voteIn is the vote a transition to epoch keeps: the current one within
// the same epoch, none in a newer one (Kafka's
// QuorumState.transitionToUnattached and transitionToFollower).
func (t *stepper) voteIn(epoch Epoch) ReplicaKey {
	if epoch == t.s.epoch {
		return t.s.voted
	}
	return NoReplica
}

// toUnattached moves to Unattached in epoch (Kafka's
// transitionToUnattached). The vote is kept within the same epoch. timer
// says how a voter's election timer is armed (docs/design.md D2); an observer
// searches for the leader at once and then on every fetch timeout.
func (t *stepper) toUnattached(epoch Epoch, leader NodeID, timer electionTimer, reason string) {
	t.become(Unattached, epoch, leader, t.voteIn(epoch), true, reason)
	t.enterUnattached(timer)
}

func (t *stepper) enterUnattached(timer electionTimer) {
	if !t.s.c.isVoter() {
		t.emit(t.s.c.resetFetch)
		t.searchFetch()
		return
	}
	t.armElection(timer)
}

// fetchWaitsForFlush: a Fetch would tell the leader of records not yet
// durable here, and the leader counts (or may come to count) this
// replica's Fetch toward the high watermark: a voter's (D30), or, with a
// dynamic voter set, an observer's, which may become a voter while its
// Fetch is in flight (D52). The rule does not follow the replica's view of
// the voter set, which a truncation can change: only an observer of a
// static quorum fetches ahead of its flush (settings.fetchAhead, D56).
func (t *stepper) fetchWaitsForFlush() bool {
	return !t.s.c.fetchAhead && t.s.log.flushed < t.s.log.end.Offset
}

// searchFetch is an Unattached observer's Fetch to any voter. With a
// dynamic voter set it waits for the written log to be flushed, as a
// Follower's does (D52): the leader that answers may already count this
// replica as a voter.
func (t *stepper) searchFetch() {
	if t.fetchWaitsForFlush() {
		t.s.fetchPending = true
		return
	}
	t.s.fetchPending = false
	t.fetch(NoNode)
}

// leaveUnattachedTimer is the election timer rule for entering Unattached
// from the current role (Kafka's QuorumState.transitionToUnattached):
// Candidate, Unattached, a Prospective that has not lost, and Resigned hand
// over their remaining time; anything else draws a fresh timeout.
func (t *stepper) leaveUnattachedTimer() electionTimer {
	switch t.s.role {
	case Candidate, Unattached, Resigned:
		return timerKeep
	case Prospective:
		if !t.electionLost() {
			return timerKeep
		}
	case Leader, Follower:
	}
	return timerRandom
}

func (t *stepper) armElection(timer electionTimer) {
	switch timer {
	case timerRandom:
		t.emitResetTimer(ResetTimer{Timer: ElectionTimer, After: t.randomElectionTimeout()})
	case timerZero:
		t.emitResetTimer(ResetTimer{Timer: ElectionTimer, After: 0})
	case timerKeep:
		// Only roles that own a running election timer hand it over
		// (leaveUnattachedTimer), so there is nothing to arm.
	}
}

// clusterOK is Kafka's hasValidClusterId: a request without a cluster id is
// accepted, otherwise it must be ours. A replica configured without one
// accepts any.
//
// It takes a pointer: copying a NullUUID (17 bytes) costs more than the
// comparison on the leader's Fetch path.
func (t *stepper) clusterOK(id *uuid.NullUUID) bool {
	return !id.Valid || !t.s.c.clusterID.Valid || id.UUID == t.s.c.clusterID.UUID
}

// validateVoterOnly is Kafka's validateVoterOnlyRequest (Vote,
// BeginQuorumEpoch, EndQuorumEpoch).
func (t *stepper) validateVoterOnly(remote NodeID, epoch Epoch) ErrorCode {
	switch {
	case epoch < t.s.epoch:
		return ErrFencedLeaderEpoch
	case remote < 0:
		return ErrInvalidRequest
	}
	return ErrNone
}

// validateLeaderOnly is Kafka's validateLeaderOnlyRequest (Fetch,
// FetchSnapshot).
func (t *stepper) validateLeaderOnly(epoch Epoch) ErrorCode {
	switch {
	case epoch < t.s.epoch:
		return ErrFencedLeaderEpoch
	case epoch > t.s.epoch:
		return ErrUnknownLeaderEpoch
	case t.s.role != Leader:
		return ErrNotLeaderOrFollower
	}
	return ErrNone
}

// validVoterKey is Kafka's isValidVoterKey: a request addressed to a voter
// key must be addressed to us.
func (t *stepper) validVoterKey(id NodeID, dir uuid.UUID) bool {
	if id < 0 {
		return true
	}
	l := t.s.c.local
	return l.ID >= 0 && id == l.ID && (dir == uuid.Nil || dir == l.DirectoryID)
}

// consistentLeader is Kafka's hasConsistentLeader: a message may not name
// us leader unless we lead that epoch, nor name a second leader for our
// epoch. A message that names us leader of an epoch older than ours is
// read as stale, not inconsistent: it reports the past (this replica may
// have led that epoch, and a peer that lost its disk may answer with what
// it learned of it since) and decides nothing now; Kafka fails on it
// (docs/design.md D49).
func (t *stepper) consistentLeader(epoch Epoch, leader NodeID) bool {
	if leader != NoNode && leader == t.s.c.local.ID {
		return t.s.role == Leader || epoch < t.s.epoch
	}
	return epoch != t.s.epoch || leader == NoNode || t.s.leader == NoNode || leader == t.s.leader
}

// namedLeader reads a leader id from a message: a negative id is no
// leader, and so is the local id on a replica that is not a voter. An
// observer never leads, so a message naming its id names another replica
// key with that id: the voter this replica was before its disk was replaced
// and it came back with a new directory id (KIP-853). Kafka fails on such a
// message; kraft treats the epoch as leaderless, so the observer keeps
// looking for the leader the voters elect next (docs/design.md D31).
func (t *stepper) namedLeader(id NodeID) NodeID {
	if id < 0 || (id == t.s.c.local.ID && !t.s.c.isVoter()) {
		return NoNode
	}
	return id
}

func (t *stepper) inconsistentLeader(epoch Epoch, leader NodeID) {
	t.failf(fmt.Sprintf("inconsistent leader: a message names %d leader of epoch %d, but this replica is %v", leader, epoch, *t.s))
}

// reconcile is Kafka's maybeTransition: check the named leader for
// consistency, then follow a newer epoch (or the leader of ours that we did
// not know or could not reach). A fault is recorded in t.
func (t *stepper) reconcile(epoch Epoch, leader NodeID, reason string) {
	leader = t.namedLeader(leader)
	if !t.consistentLeader(epoch, leader) {
		t.inconsistentLeader(epoch, leader)
		return
	}
	switch {
	case leader != NoNode && leader == t.s.c.local.ID:
		if epoch != t.s.epoch {
			// A Leader told it leads another epoch: Kafka's
			// transitionToFollower refuses to follow itself.
			t.inconsistentLeader(epoch, leader)
			return
		}
	case epoch > t.s.epoch && leader != NoNode:
		t.toFollower(epoch, leader, reason)
	case epoch > t.s.epoch:
		t.toUnattached(epoch, NoNode, t.leaveUnattachedTimer(), reason)
	case epoch == t.s.epoch && leader != NoNode && (t.s.leader == NoNode || !t.s.endpoints):
		t.toFollower(epoch, leader, reason)
	}
}

func (t *stepper) onLeaderlessEpoch(e ReceiveLeaderlessEpoch) {
	if e.Epoch > t.s.epoch {
		t.toUnattached(e.Epoch, NoNode, t.leaveUnattachedTimer(), "leaderless epoch")
	}
}
