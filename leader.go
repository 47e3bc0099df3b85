package kraft

import (
	"sort"

	"github.com/google/uuid"
)

// The leader: becoming leader, answering fetches, the high watermark,
// check-quorum, BeginQuorumEpoch re-sends and resignation (Kafka's
// onBecomeLeader, LeaderState, pollLeader and ResignedState).

// toLeader is Kafka's onBecomeLeader: the epoch starts at the log end; the
// record (epoch, self, no vote) is persisted; the LeaderChange record is
// appended; every other voter is told with BeginQuorumEpoch. The high
// watermark of the new epoch starts unknown.
func (t *stepper) toLeader() {
	var granting []ReplicaKey
	for i, v := range t.s.c.voters {
		if t.s.granted.has(i) {
			granting = append(granting, v)
		}
	}
	t.become(Leader, t.s.epoch, t.s.c.local.ID, NoReplica, true, "won election")
	n := len(t.s.c.voters)
	t.s.endpoints = true
	t.s.epochStart = t.s.log.end.Offset
	// A new leader's high watermark starts unknown, so that the one it
	// exposes never goes backwards (Kafka's transitionToLeader).
	t.s.hwm = -1
	t.s.ends = newVoterEnds(n)
	if n > 1 {
		t.emit(t.s.c.resetCheckQuorum)
		t.emit(t.s.c.resetBegin)
	}
	at, dynamic := t.s.log.lastVoters()
	t.emit(AppendLeaderChange{
		Epoch:          t.s.epoch,
		LeaderID:       t.s.c.local.ID,
		Voters:         t.s.Voters(),
		GrantingVoters: granting,
		VotersRecord:   dynamic && at.Offset < 0,
	})
	for i, v := range t.s.c.voters {
		if i != t.s.c.localIndex {
			t.emitBeginEpoch(t.beginQuorumEpoch(v))
		}
	}
}

func (t *stepper) beginQuorumEpoch(to ReplicaKey) SendBeginQuorumEpoch {
	return SendBeginQuorumEpoch{To: to, ClusterID: t.s.c.clusterID, Epoch: t.s.epoch, LeaderID: t.s.c.local.ID}
}

// onFetch is Kafka's KafkaRaftClient.handleFetchRequest. Every role answers;
// only the Leader answers with data. No role changes on an incoming Fetch,
// whatever its epoch.
func (t *stepper) onFetch(e *ReceiveFetch) {
	var code ErrorCode
	switch {
	case !t.clusterOK(&e.ClusterID):
		code = ErrInconsistentClusterID
	case e.FetchOffset < 0 || e.FetchEpoch < 0 || e.FetchEpoch > e.CurrentLeaderEpoch:
		code = ErrInvalidRequest
	default:
		code = t.validateLeaderOnly(e.CurrentLeaderEpoch)
	}
	if code != ErrNone {
		t.fetchResponse(e.From, code, -1, nil)
		return
	}
	// Kafka's tryCompleteFetchRequest: a follower with an empty log gets
	// the latest snapshot (unless it is the bootstrap one), every other
	// position is checked by validateOffsetAndEpoch (D44).
	check, id := t.s.log.validateOffsetAndEpoch(e.FetchOffset, e.FetchEpoch)
	if e.FetchOffset == 0 && t.s.log.hasSnapshots() && t.s.log.latest() != bootstrapSnapshot {
		check, id = fetchSnapshot, t.s.log.latest()
	}
	var diverging *LogOffsetMetadata
	switch check {
	case fetchDiverging:
		diverging = &LogOffsetMetadata{Offset: id.Offset, Epoch: id.Epoch}
	case fetchSnapshot:
		// No replica-state or check-quorum update for a snapshot answer.
		// (A copy: taking id's address would move it to the heap on every
		// fetch.)
		snapshot := id
		t.emit(SendFetchResponse{To: e.From, Error: ErrNone, Epoch: t.s.epoch, LeaderID: t.s.leader, HighWatermark: t.s.hwm, Snapshot: &snapshot})
		return
	case fetchValid:
	}
	if diverging == nil && e.From >= 0 {
		if e.From == t.s.c.local.ID {
			// Kafka's updateReplicaState throws for a fetch carrying the
			// leader's own id and the request gets UNKNOWN_SERVER_ERROR.
			t.fetchResponse(e.From, ErrUnknownServerError, -1, nil)
			return
		}
		// Only a valid fetch moves the voter's position and counts for
		// check-quorum: Kafka's tryCompleteFetchRequest calls updateReplicaState
		// only for a VALID one, not for a diverging or snapshot answer.
		t.fetchedBy(e.From, &e.FromDirectoryID, e.FetchOffset, true)
	}
	t.fetchResponse(e.From, ErrNone, t.s.hwm, diverging)
}

// onFetchSnapshot is Kafka's handleFetchSnapshotRequest: cluster id, epoch
// fencing (validateLeaderOnlyRequest), SNAPSHOT_NOT_FOUND for a snapshot the
// host does not have or the bootstrap snapshot, POSITION_OUT_OF_RANGE for a
// position outside the snapshot; a successful request counts for
// check-quorum (voters only) and moves no end offset. The host looked up
// the snapshot's size (docs/design.md D44).
func (t *stepper) onFetchSnapshot(e ReceiveFetchSnapshot) {
	code := ErrInconsistentClusterID
	if t.clusterOK(&e.ClusterID) {
		code = t.validateLeaderOnly(e.CurrentLeaderEpoch)
	}
	switch {
	case code != ErrNone:
	case e.Size < 0 || e.Snapshot == bootstrapSnapshot:
		code = ErrSnapshotNotFound
	case e.Position < 0 || e.Position >= e.Size:
		code = ErrPositionOutOfRange
	}
	if code != ErrNone {
		t.emit(SendFetchSnapshotResponse{To: e.From, Error: code, Epoch: t.s.epoch, LeaderID: t.s.leader, Snapshot: LogEnd{Offset: -1, Epoch: -1}, Size: -1, Position: -1})
		return
	}
	if e.From >= 0 {
		t.fetchedBy(e.From, &e.FromDirectoryID, -1, false)
	}
	t.emit(SendFetchSnapshotResponse{To: e.From, Error: ErrNone, Epoch: t.s.epoch, LeaderID: t.s.leader, Snapshot: e.Snapshot, Size: e.Size, Position: e.Position})
}

// fetchedBy records a voter's valid Fetch at offset (position true) or its
// FetchSnapshot (position false). Observers and keys that do not match the
// voter's key (KIP-853) are not tracked: Kafka's updateReplicaState keeps
// them as observers, kraft keeps no observers (docs/design.md, contract
// decision 5).
func (t *stepper) fetchedBy(id NodeID, dir *uuid.UUID, offset int64, position bool) {
	i := t.s.c.voterIndexOf(id, dir)
	if i < 0 || i == t.s.c.localIndex {
		if i < 0 && position && t.s.change != nil {
			t.observeJoiner(id, dir, offset)
		}
		return
	}
	t.s.fetchedCheck = t.s.fetchedCheck.with(i)
	if position {
		t.s.fetchedBegin = t.s.fetchedBegin.with(i)
		// The high watermark depends on the ends, the leader's flushed
		// offset and the epoch start; it was last computed when one of
		// them changed, so an unchanged end cannot move it.
		if t.s.ends.get(i) != offset {
			t.s.ends = t.s.ends.with(i, offset)
			t.maybeAdvanceHighWatermark()
		}
	}
	t.checkQuorum()
}

// maybeAdvanceHighWatermark is Kafka's LeaderState.maybeUpdateHighWatermark:
// the largest offset a majority of voters (the leader's own flushed end
// included) has reached, adopted only past the epoch start (so a leader
// never commits older epochs' records by counting replicas, Raft's figure
// 8) and never downwards.
func (t *stepper) maybeAdvanceHighWatermark() {
	var small [8]int64
	var ends []int64
	if n := len(t.s.c.voters); n <= len(small) {
		ends = small[:n]
	} else {
		var large [MaxVoters]int64
		ends = large[:n]
	}
	for i := range ends {
		ends[i] = t.endOf(i)
	}
	// The majority-th largest end: the largest offset that a majority has
	// reached (Kafka sorts; a selection is linear in the voters).
	if candidate := majorityEnd(ends); candidate > t.s.epochStart {
		t.raiseHighWatermark(candidate)
	}
}

// raiseHighWatermark moves the high watermark up to hwm (never down). The
// log's high watermark (committed) remembers the highest value across roles,
// a new leader's reset included; HighWatermarkChanged reports it, so the host
// sees a value that only ever rises.
func (t *stepper) raiseHighWatermark(hwm int64) {
	if hwm > t.s.hwm {
		t.s.hwm = hwm
	}
	if hwm > t.s.committed {
		t.s.committed = hwm
		t.emitHighWatermark(HighWatermarkChanged{HighWatermark: hwm})
	}
	if c := t.s.change; c != nil && c.stage == committing && t.s.hwm > c.offset {
		t.finishChange(ErrNone)
	}
	if t.s.role == Leader && !t.s.c.isVoter() {
		// A leader outside a committed voter set resigns, also when the
		// RemoveRaftVoter that removed it timed out before the commit
		// (Kafka resigns only when the pending removal commits; D51).
		if at, ok := t.s.log.lastVoters(); ok && t.s.hwm > at.Offset {
			t.resignDue = true
		}
	}
}

func (t *stepper) endOf(i int) int64 {
	if i == t.s.c.localIndex {
		// The leader counts what it has flushed, not what it has written
		// (Kafka's flushLeaderLog; docs/design.md D30).
		return t.s.log.flushed
	}
	return t.s.ends.get(i)
}

// onCheckQuorumTimeout: a leader that has not heard from a majority within
// the window resigns (KAFKA-15489). The only voter never does, and does
// not arm the timer again: a leader that a removal left alone lets it fire
// once more (docs/design.md D51).
func (t *stepper) onCheckQuorumTimeout() {
	if t.s.role == Leader && !t.s.c.leaderAlone() {
		t.toResigned("check quorum failed")
	}
}

// onBeginQuorumEpochTimeout re-sends BeginQuorumEpoch to the voters that
// have not fetched since the last round (KAFKA-16926). The only voter
// stops re-arming it (Kafka's timer goes on firing to no one; D51).
func (t *stepper) onBeginQuorumEpochTimeout() {
	if t.s.role != Leader || t.s.c.leaderAlone() {
		return
	}
	for i, v := range t.s.c.voters {
		if i != t.s.c.localIndex && !t.s.fetchedBegin.has(i) {
			t.emitBeginEpoch(t.beginQuorumEpoch(v))
		}
	}
	t.s.fetchedBegin = 0
	t.emit(t.s.c.resetBegin)
}

// onResign: the leader gives up leadership (Kafka's resign, not its
// shutdown: docs/design.md D27).
// A Successor is ranked first (a leadership transfer, D135).
func (t *stepper) onResign(e Resign) {
	if t.s.role == Leader {
		t.resignTo(e.Successor, "resigned")
	}
}

// toResigned is Kafka's transitionToResigned: memory only, the election
// timer armed, EndQuorumEpoch to every other voter naming the preferred
// successors.
func (t *stepper) toResigned(reason string) { t.resignTo(nil, reason) }

// resignTo is toResigned with first, if it names another voter, ranked
// first among the preferred successors (D135).
func (t *stepper) resignTo(first *ReplicaKey, reason string) {
	successors := t.preferredSuccessors()
	if first != nil {
		for i, k := range successors {
			if k == *first {
				copy(successors[1:i+1], successors[:i])
				successors[0] = k
				break
			}
		}
	}
	t.become(Resigned, t.s.epoch, t.s.c.local.ID, NoReplica, false, reason)
	t.s.endpoints = true
	// Kafka's ResignedState has no high watermark, and the role after it
	// inherits none: it is unknown until a leader reports one (D5). The
	// log's high watermark (committed) is kept.
	t.s.hwm = -1
	t.armElection(timerRandom)
	t.sendEndQuorumEpoch(successors)
}

// preferredSuccessors is every other voter by last known fetch position,
// highest first, unknown last, ties by replica key (Kafka's
// LeaderState.nonLeaderVotersByDescendingFetchOffset).
func (t *stepper) preferredSuccessors() []ReplicaKey {
	type entry struct {
		key ReplicaKey
		end int64
	}
	entries := make([]entry, 0, len(t.s.c.voters))
	for i, v := range t.s.c.voters {
		if i != t.s.c.localIndex {
			entries = append(entries, entry{key: v, end: t.s.ends.get(i)})
		}
	}
	sort.SliceStable(entries, func(a, b int) bool {
		if entries[a].end != entries[b].end {
			return entries[a].end > entries[b].end
		}
		return entries[a].key.Compare(entries[b].key) < 0
	})
	keys := make([]ReplicaKey, len(entries))
	for i, e := range entries {
		keys[i] = e.key
	}
	return keys
}

func (t *stepper) sendEndQuorumEpoch(successors []ReplicaKey) {
	for i, v := range t.s.c.voters {
		if i != t.s.c.localIndex {
			t.emit(SendEndQuorumEpoch{To: v, ClusterID: t.s.c.clusterID, Epoch: t.s.epoch, LeaderID: t.s.c.local.ID, PreferredSuccessors: successors})
		}
	}
}

// fetchResponse emits a SendFetchResponse written in place: the leader's
// Fetch path, the hottest in a running quorum.
func (t *stepper) fetchResponse(to NodeID, code ErrorCode, hwm int64, diverging *LogOffsetMetadata) {
	b := t.buffer()
	// Every field, as next requires.
	p := b.arena.fetchResponse.next()
	p.To, p.Error, p.Epoch, p.LeaderID, p.HighWatermark = to, code, t.s.epoch, t.s.leader, hwm
	p.Diverging, p.Snapshot = diverging, nil
	b.acts = append(b.acts, referTo(tabFetchResponse, p))
}
