package kraft

import (
	"fmt"

	"github.com/google/uuid"
)

// Reconfiguration (KIP-853): the voter set follows the log, and the leader
// adds, removes and updates one voter at a time (Kafka's
// KRaftControlRecordStateMachine, AddVoterHandler, RemoveVoterHandler,
// UpdateVoterHandler; docs/design.md D50-D53).

// changeStage is where a leader's pending AddRaftVoter or RemoveRaftVoter
// is.
type changeStage uint8

const (
	// awaitingVersions: AddRaftVoter sent ApiVersions to the new voter.
	awaitingVersions changeStage = iota + 1
	// awaitingCatchUp: the new voter supports kraft.version 1; the leader
	// waits for a Fetch that shows it caught up (D51).
	awaitingCatchUp
	// appending: AppendVoters went out; VotersAppended has not come.
	appending
	// committing: the VotersRecord is at offset; the answer goes out when
	// the high watermark passes it.
	committing
)

// voterChange is a leader's pending AddRaftVoter or RemoveRaftVoter
// (Kafka's AddVoterHandlerState and RemoveVoterHandlerState). It is shared
// between states and never written: a change makes a new one.
type voterChange struct {
	kind     VoterChangeKind
	ref      uint64
	from     NodeID
	key      ReplicaKey
	versions VersionRange
	stage    changeStage
	// offset is the VotersRecord's offset once written (-1 before).
	offset int64
	// AddRaftVoter: a Fetch from the new voter showed it caught up, and
	// the leader's log end at its previous Fetch (-1 before its first;
	// Kafka's ReplicaState.lastFetchLeaderLogEndOffset).
	caughtUp bool
	lastEnd  int64
}

// respondChange answers the request with handle ref.
func (t *stepper) respondChange(ref uint64, to NodeID, kind VoterChangeKind, code ErrorCode) {
	t.emit(SendVoterChangeResponse{Ref: ref, To: to, Kind: kind, Error: code, Epoch: t.s.epoch, LeaderID: t.s.leader})
}

// changeRefused is the part of Kafka's three handlers they share, in
// their order: no pending change (isOperationPending), a high watermark in
// this epoch (the previous leaders' changes are fenced), kraft.version 1,
// and the latest VotersRecord committed.
func (t *stepper) changeRefused() ErrorCode {
	switch {
	case t.s.change != nil, t.s.hwm < 0:
		return ErrRequestTimedOut
	case !t.s.c.dynamic:
		return ErrUnsupportedVersion
	}
	if at, _ := t.s.log.lastVoters(); at.Offset >= t.s.hwm {
		return ErrRequestTimedOut
	}
	return ErrNone
}

// requestChecks are KafkaRaftClient's checks of a voter-change request
// before its handler: the cluster id, leadership of epoch, and a voter key
// with a directory id.
func (t *stepper) requestChecks(cluster *uuid.NullUUID, epoch Epoch, voter ReplicaKey) ErrorCode {
	if !t.clusterOK(cluster) {
		return ErrInconsistentClusterID
	}
	if code := t.validateLeaderOnly(epoch); code != ErrNone {
		return code
	}
	if voter.ID < 0 || voter.DirectoryID == uuid.Nil {
		return ErrInvalidRequest
	}
	return ErrNone
}

// onAddVoter is Kafka's handleAddVoterRequest and
// AddVoterHandler.handleAddVoterRequest.
func (t *stepper) onAddVoter(e ReceiveAddVoter) {
	code := t.requestChecks(&e.ClusterID, t.s.epoch, e.Voter)
	if code == ErrNone && !e.Listener {
		code = ErrInvalidRequest
	}
	if code == ErrNone {
		code = t.changeRefused()
	}
	if code == ErrNone && VoterByID(t.s.c.voters, e.Voter.ID) >= 0 {
		code = ErrDuplicateVoter
	}
	if code == ErrNone && len(t.s.c.voters) >= MaxVoters {
		// kraft's hard limit (a set of voters is one machine word); Kafka
		// has none (D51).
		code = ErrInvalidRequest
	}
	if code != ErrNone {
		t.respondChange(e.Ref, e.From, AddVoter, code)
		return
	}
	t.s.change = &voterChange{kind: AddVoter, ref: e.Ref, from: e.From, key: e.Voter, stage: awaitingVersions, offset: -1, lastEnd: -1}
	t.emit(SendAPIVersions{To: e.Voter})
	t.emit(ResetTimer{Timer: VoterChangeTimer, After: t.s.c.requestTimeout})
}

// onAPIVersionsResponse is Kafka's AddVoterHandler.handleApiVersionsResponse:
// an error aborts with REQUEST_TIMED_OUT, a kraft.version range without
// level 1 with INVALID_REQUEST. A new voter not yet caught up is waited
// for until the request times out, where Kafka answers REQUEST_TIMED_OUT
// at once (D51).
func (t *stepper) onAPIVersionsResponse(e ReceiveAPIVersionsResponse) {
	c := t.s.change
	if t.s.role != Leader || c == nil || c.kind != AddVoter || c.stage != awaitingVersions || e.From != c.key.ID {
		return
	}
	switch {
	case e.Error != ErrNone:
		t.finishChange(ErrRequestTimedOut)
	case e.KRaftVersions == nil || !e.KRaftVersions.Has(KRaftVersionReconfig):
		t.finishChange(ErrInvalidRequest)
	default:
		n := *c
		n.versions, n.stage = *e.KRaftVersions, awaitingCatchUp
		t.s.change = &n
		if n.caughtUp {
			t.appendChange()
		}
	}
}

// observeJoiner watches the Fetches of a voter being added (it is still an
// observer): caught up when a Fetch reaches the leader's log end, or the
// end the leader had at its previous Fetch (Kafka's
// ReplicaState.updateFollowerState, lastCaughtUpTimestamp).
func (t *stepper) observeJoiner(id NodeID, dir *uuid.UUID, offset int64) {
	c := t.s.change
	if c.kind != AddVoter || (c.stage != awaitingVersions && c.stage != awaitingCatchUp) || c.key.ID != id || c.key.DirectoryID != *dir {
		return
	}
	n := *c
	if offset >= t.s.log.end.Offset || (c.lastEnd > 0 && offset >= c.lastEnd) {
		n.caughtUp = true
	}
	n.lastEnd = t.s.log.end.Offset
	t.s.change = &n
	if n.caughtUp && n.stage == awaitingCatchUp {
		t.appendChange()
	}
}

// onRemoveVoter is Kafka's handleRemoveVoterRequest and
// RemoveVoterHandler.handleRemoveVoterRequest: the key must be a voter's
// exactly, and the last voter cannot be removed.
func (t *stepper) onRemoveVoter(e ReceiveRemoveVoter) {
	code := t.requestChecks(&e.ClusterID, t.s.epoch, e.Voter)
	if code == ErrNone {
		code = t.changeRefused()
	}
	if code == ErrNone {
		if i := VoterByID(t.s.c.voters, e.Voter.ID); i < 0 || t.s.c.voters[i] != e.Voter || len(t.s.c.voters) < 2 {
			code = ErrVoterNotFound
		}
	}
	if code != ErrNone {
		t.respondChange(e.Ref, e.From, RemoveVoter, code)
		return
	}
	t.s.change = &voterChange{kind: RemoveVoter, ref: e.Ref, from: e.From, key: e.Voter, offset: -1, lastEnd: -1}
	t.emit(ResetTimer{Timer: VoterChangeTimer, After: t.s.c.requestTimeout})
	t.appendChange()
}

// onUpdateVoter is Kafka's handleUpdateVoterRequest and
// UpdateVoterHandler.handleUpdateVoterRequest: the VotersRecord is
// appended and the request answered at once, without waiting for the
// commit.
func (t *stepper) onUpdateVoter(e ReceiveUpdateVoter) {
	r := e.KRaftVersions
	code := t.requestChecks(&e.ClusterID, e.CurrentLeaderEpoch, e.Voter)
	if code == ErrNone && (!e.Listener || r.Min < 0 || r.Max < 0 || r.Max < r.Min) {
		code = ErrInvalidRequest
	}
	if code == ErrNone {
		code = t.changeRefused()
	}
	if code == ErrNone && !r.Has(KRaftVersionReconfig) {
		code = ErrInvalidRequest
	}
	i := VoterByID(t.s.c.voters, e.Voter.ID)
	if code == ErrNone && (i < 0 || !t.s.c.voters[i].Matches(e.Voter)) {
		code = ErrVoterNotFound
	}
	if code == ErrNone {
		t.emit(AppendVoters{Epoch: t.s.epoch, Voters: t.changedVoters(UpdateVoter, e.Voter), Change: VoterChange{Kind: UpdateVoter, Voter: e.Voter, KRaftVersions: r}})
	}
	t.respondChange(e.Ref, e.From, UpdateVoter, code)
}

// changedVoters is the voter set in force with key added, removed or
// updated (Kafka's VoterSet.addVoter, removeVoter, updateVoter); a new
// slice.
func (t *stepper) changedVoters(kind VoterChangeKind, key ReplicaKey) []ReplicaKey {
	old := t.s.c.voters
	out := make([]ReplicaKey, 0, len(old)+1)
	for _, v := range old {
		switch {
		case v.ID != key.ID:
			out = append(out, v)
		case kind == UpdateVoter:
			out = append(out, key)
		}
	}
	if kind == AddVoter {
		out = append(out, key)
	}
	return out
}

// appendChange asks the host to append the pending change's VotersRecord.
func (t *stepper) appendChange() {
	c := *t.s.change
	t.emit(AppendVoters{Epoch: t.s.epoch, Voters: t.changedVoters(c.kind, c.key), Change: VoterChange{Kind: c.kind, Voter: c.key, KRaftVersions: c.versions}})
	c.stage = appending
	t.s.change = &c
}

// finishChange answers the pending change with code and drops it: NONE
// when its VotersRecord committed (Kafka's highWatermarkUpdated in both
// handlers), an error when it failed.
func (t *stepper) finishChange(code ErrorCode) {
	c := t.s.change
	t.s.change = nil
	t.emit(StopTimer{Timer: VoterChangeTimer})
	t.respondChange(c.ref, c.from, c.kind, code)
}

// onVoterChangeTimeout: a leader's pending change ran out of time (Kafka's
// maybeExpirePendingOperation; a written VotersRecord stays and may still
// commit), or an auto-joining observer may ask again.
func (t *stepper) onVoterChangeTimeout() {
	switch {
	case t.s.role == Leader && t.s.change != nil:
		t.finishChange(ErrRequestTimedOut)
	case t.s.joinWait:
		t.s.joinWait = false
	}
}

// onVotersAppended takes a VotersRecord the host wrote (or a snapshot's
// set): Kafka's KRaftControlRecordStateMachine reads it into
// VoterSetHistory, which fails on a record out of order or one whose
// majorities do not overlap the previous set's.
func (t *stepper) onVotersAppended(e VotersAppended) {
	log := t.s.log
	last, has := log.lastVoters()
	snapshot := e.Offset == log.start()-1 && e.Offset >= 0
	if err := validVoterSet(e.Voters); err != nil {
		t.failf(fmt.Sprintf("the host reports a VotersRecord at %d: %v", e.Offset, err))
		return
	}
	switch {
	case e.Offset < 0 || e.Offset < log.start()-1 || e.Offset >= log.end.Offset:
		t.failf(fmt.Sprintf("the host reports a VotersRecord at %d outside the log [%d, %d)", e.Offset, log.start(), log.end.Offset))
		return
	case snapshot:
	case has && e.Offset == last.Offset && sameKeys(e.Voters, last.Voters):
		// A repeated report.
		return
	case has && e.Offset <= last.Offset:
		t.failf(fmt.Sprintf("the host reports a VotersRecord at %d, not after the one at %d", e.Offset, last.Offset))
		return
	case has && last.Offset >= 0 && !overlappingMajority(last.Voters, e.Voters):
		t.failf(fmt.Sprintf("the VotersRecord at %d (%v) has no majority in common with the one at %d (%v)", e.Offset, e.Voters, last.Offset, last.Voters))
		return
	}
	t.s.log = log.withVoters(VoterSetAt{Offset: e.Offset, Voters: append([]ReplicaKey(nil), e.Voters...)})
	if c := t.s.change; c != nil && t.s.role == Leader && c.stage == appending && e.Offset >= t.s.epochStart {
		n := *c
		n.stage, n.offset = committing, e.Offset
		t.s.change = &n
	}
	t.syncVoters()
}

// syncVoters makes the voter set in force the log's latest (the static one
// when the log has never held one; none when a truncation removed every
// set the log held, D56) after the log changed, and carries the
// per-voter fields over to the new voter indexes: a voter that stays keeps
// its tally, end offset and fetch marks, a new one starts unknown (Kafka's
// LeaderState.updateVoterAndObserverStates).
func (t *stepper) syncVoters() {
	at, has := t.s.log.lastVoters()
	dynamic := has || t.s.c.dynamic
	voters := t.s.c.static
	if dynamic {
		voters = at.Voters
	}
	old := t.s.c
	c := old.withVoters(voters, dynamic)
	if c == old {
		return
	}
	t.s.c = c
	// The rival is known by its index in the old set (D59).
	t.s.forgetRival()
	s := t.s
	var granted, rejected, check, begin voterSet
	ends := newVoterEnds(len(c.voters))
	for j, v := range c.voters {
		// Kafka's getReplicaState: a voter keeps its state when its
		// old key matches the new one (an old key without a directory id
		// matches any). A new voter starts unknown: Kafka carries its
		// observer state over, kraft keeps none (D51), so the high
		// watermark waits for its next Fetch.
		i := -1
		for k, w := range old.voters {
			if w.Matches(v) {
				i = k
				break
			}
		}
		if i < 0 {
			continue
		}
		granted, rejected = moveBit(granted, s.granted, i, j), moveBit(rejected, s.rejected, i, j)
		// A removed voter's Fetch in the check-quorum window no longer
		// counts (Kafka's fetchedVoters keeps it; D51).
		check, begin = moveBit(check, s.fetchedCheck, i, j), moveBit(begin, s.fetchedBegin, i, j)
		if s.role == Leader {
			ends.set(j, s.ends.get(i))
		}
	}
	s.granted, s.rejected, s.fetchedCheck, s.fetchedBegin = granted, rejected, check, begin
	if old.isVoter() != c.isVoter() {
		t.voterStatusChanged()
	}
	if s.role != Leader {
		return
	}
	s.ends = ends
	if old.leaderAlone() && !c.leaderAlone() {
		// A leader that was the only voter starts check-quorum and the
		// BeginQuorumEpoch re-sends once it has company.
		t.emit(c.resetCheckQuorum)
		t.emit(c.resetBegin)
	}
	t.maybeAdvanceHighWatermark()
	t.checkQuorum()
}

// voterStatusChanged: the local replica joined or left the voter set in
// force. A Leader keeps leading (counted or not); a Follower keeps
// following (its Fetch rules follow IsVoter); a Prospective or Candidate,
// which only a voter may be, stops campaigning (Unattached in its epoch,
// D50); an Unattached replica swaps a voter's election timer for an
// observer's search, or the reverse.
func (t *stepper) voterStatusChanged() {
	switch t.s.role {
	case Prospective, Candidate:
		if !t.s.c.isVoter() {
			t.toUnattached(t.s.epoch, t.s.leader, timerRandom, "left the voter set")
		}
	case Unattached:
		if t.s.c.isVoter() {
			t.s.fetchPending = false // an observer's search waiting for a flush
			t.emit(StopTimer{Timer: FetchTimer})
			t.armElection(timerRandom)
			return
		}
		t.emit(StopTimer{Timer: ElectionTimer})
		t.enterUnattached(timerRandom)
	case Leader, Follower, Resigned:
	}
}

// moveBit is to with bit j set when bit i of from is.
func moveBit(to, from voterSet, i, j int) voterSet {
	if from.has(i) {
		return to.with(j)
	}
	return to
}

// leaderAlone: the voter set is this replica alone, so check-quorum and
// BeginQuorumEpoch have no one to wait for.
func (c *settings) leaderAlone() bool { return len(c.voters) == 1 && c.isVoter() }

// maybeAutoJoin is Kafka's pollFollowerAsObserver with
// controller.quorum.auto.join.enable: an observer that has fetched from the
// leader asks it to remove the voter with its id and another directory id,
// or else to add it; once per voter-change timer period (T_f), which starts
// with the Follower role (Kafka's updateVoterSetPeriodTimer; D53).
func (t *stepper) maybeAutoJoin() {
	c := t.s.c
	if !t.joins() || t.s.role != Follower || !t.s.fetched || t.s.joinWait {
		return
	}
	req := SendVoterChange{To: t.s.leader, ClusterID: c.clusterID, Kind: AddVoter, Voter: c.local}
	if i := VoterByID(c.voters, c.local.ID); i >= 0 {
		req.Kind, req.Voter = RemoveVoter, c.voters[i]
	}
	t.emit(req)
	t.waitToJoin()
}

// joins: this replica auto-joins (an observer with an id and a directory
// id, AutoJoin, a dynamic voter set).
func (t *stepper) joins() bool {
	c := t.s.c
	return c.autoJoin && c.dynamic && !c.isVoter() && c.local.ID >= 0 && c.local.DirectoryID != uuid.Nil
}

// waitToJoin starts a voter-change timer period before the next join
// request.
func (t *stepper) waitToJoin() {
	t.s.joinWait = true
	t.emit(ResetTimer{Timer: VoterChangeTimer, After: t.s.c.fetchTimeout})
}

// KRaftVersion is the kraft.version in force: 1 when the log holds the
// voter set (it can change), 0 for a static voter set.
func (s State) KRaftVersion() int16 {
	if s.c != nil && s.c.dynamic {
		return KRaftVersionReconfig
	}
	return 0
}

// VoterSets are the voter sets the state knows in the log (a copy), the
// last one in force; empty for a static voter set. A host checks them
// against its log, and passes them to NewState as LogState.VoterSets.
func (s State) VoterSets() []VoterSetAt {
	vs := s.log.voterSets()
	if len(vs) == 0 {
		return nil
	}
	return append([]VoterSetAt(nil), vs...)
}

// PendingVoterChange is a leader's AddRaftVoter or RemoveRaftVoter in
// progress, and the offset of its VotersRecord (-1 until written); ok is
// false when there is none.
func (s State) PendingVoterChange() (change VoterChange, offset int64, ok bool) {
	c := s.change
	if c == nil {
		return VoterChange{}, -1, false
	}
	return VoterChange{Kind: c.kind, Voter: c.key, KRaftVersions: c.versions}, c.offset, true
}
