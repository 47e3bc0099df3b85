package kraft

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Followers and observers: BeginQuorumEpoch, EndQuorumEpoch, the fetch
// timer and Fetch responses (Kafka's pollFollower, handleEndQuorumEpochRequest
// and handleFetchResponse).

// onBeginQuorumEpoch is Kafka's KafkaRaftClient.handleBeginQuorumEpochRequest.
func (t *stepper) onBeginQuorumEpoch(e ReceiveBeginQuorumEpoch) {
	code := t.leaderAnnouncement(e.ClusterID, e.LeaderID, e.LeaderEpoch, "BeginQuorumEpoch")
	if t.fault != "" {
		return
	}
	if code == ErrNone && !t.validVoterKey(e.VoterID, e.VoterDirectoryID) {
		// After the transition, which stays.
		code = ErrInvalidVoterKey
	}
	if code == ErrNone && t.s.refused && e.LeaderID == t.s.leader && e.LeaderEpoch == t.s.epoch {
		// D113: this replica does not follow the leader it refused.
		code = ErrNotLeaderOrFollower
	}
	t.emitBeginResponse(SendBeginQuorumEpochResponse{To: e.From, Error: code, Epoch: t.s.epoch, LeaderID: t.s.leader})
}

// onEndQuorumEpoch is Kafka's KafkaRaftClient.handleEndQuorumEpochRequest.
func (t *stepper) onEndQuorumEpoch(e ReceiveEndQuorumEpoch) {
	// A replica that attaches to the resigning leader here sends its
	// first Fetch, if any, after the answer (below).
	t.deferFetch = true
	code := t.leaderAnnouncement(e.ClusterID, e.LeaderID, e.LeaderEpoch, "EndQuorumEpoch")
	if t.fault != "" {
		return
	}
	fetch := false
	if code == ErrNone && t.s.role == Follower && t.s.leader == e.LeaderID {
		// Our leader resigns: campaign after a backoff that follows our
		// rank among its preferred successors, and grant pre-votes again
		// (the fix proposed in KAFKA-20895; docs/design.md, contract
		// decision 3) so that the preferred successor can win.
		t.s.leaderResigned = true
		if t.s.lowerAsked && !t.s.c.kafkaFailover && !t.s.outranked() {
			// D79: a voter that ranks below this one has campaigned (its
			// pre-vote arrived before this EndQuorumEpoch), so the
			// election is on and this replica is the better candidate:
			// D66's rule, for a pre-vote that came first.
			t.emit(SendEndQuorumEpochResponse{To: e.From, Error: code, Epoch: t.s.epoch, LeaderID: t.s.leader})
			t.toProspective("a voter that ranks below campaigned and the leader resigned")
			return
		}
		backoff := t.endQuorumBackoff(e.SuccessorRank)
		t.emitResetTimer(ResetTimer{Timer: FetchTimer, After: backoff})
		// Kafka's pollFollowerAsVoter on the next poll: at rank 0 the
		// expired timer makes the replica Prospective; otherwise a replica
		// that became Follower here fetches from its leader like any new
		// Follower until the backoff runs out (the resigned leader answers
		// NOT_LEADER_OR_FOLLOWER, which changes nothing). A Follower that
		// was already following has its Fetch in flight.
		fetch = t.fetchDue && backoff > 0
	}
	t.emit(SendEndQuorumEpochResponse{To: e.From, Error: code, Epoch: t.s.epoch, LeaderID: t.s.leader})
	if fetch {
		t.sendFetch()
	}
}

// leaderAnnouncement validates a BeginQuorumEpoch or EndQuorumEpoch request
// and reconciles with the leader and epoch it names (Kafka's
// validateVoterOnlyRequest and maybeTransition). It returns the error code
// to answer with.
func (t *stepper) leaderAnnouncement(cluster uuid.NullUUID, leader NodeID, epoch Epoch, what string) ErrorCode {
	if !t.clusterOK(&cluster) {
		return ErrInconsistentClusterID
	}
	if code := t.validateVoterOnly(leader, epoch); code != ErrNone {
		return code
	}
	t.reconcile(epoch, leader, what)
	return ErrNone
}

// endQuorumBackoff is Kafka's strictExponentialElectionBackoffMs: rank 0
// campaigns at once, the listed rank p of n waits
// min(B_max, (B_max >> (n-1)) << (p-1)), and an unlisted replica waits
// B_max. kraft differs (docs/design.md, contract decision 4): the base
// never underflows to 0, so ranks stay ordered
// in long lists. Kafka computes in whole milliseconds; so do we when B_max
// is at least one.
func (t *stepper) endQuorumBackoff(rank SuccessorRank) time.Duration {
	p, n := rank.Position, rank.Of
	limit := t.s.c.backoffMax
	switch {
	case p == 0:
		return 0
	case p < 0 || p >= n:
		return limit
	}
	unit := time.Millisecond
	if limit < unit {
		unit = 1
	}
	b := int64(limit / unit)
	var base int64
	if n-1 < 63 {
		base = b >> uint(n-1)
	}
	if base < 1 {
		base = 1
	}
	backoff := b
	if p-1 < 62 && base <= b>>uint(p-1) {
		backoff = base << uint(p-1)
	}
	if backoff > b {
		backoff = b
	}
	return time.Duration(backoff) * unit
}

// onFetchTimeout: a voter Follower that has not heard from its leader runs
// a pre-vote; an observer Follower goes back to Unattached in the same
// epoch, keeping the leader id; an Unattached observer searches again
// (docs/design.md, contract decision 6).
func (t *stepper) onFetchTimeout() {
	switch t.s.role {
	case Follower:
		if t.s.c.isVoter() {
			if r := t.survivorRank(); r > 0 && t.s.fetched && !t.s.leaderResigned && !t.s.c.kafkaFailover {
				// D78: the leader has been silent for T_f (a leader that
				// resigned ranked its successors itself: EndQuorumEpoch's
				// backoff). This Follower
				// grants pre-votes from now on (KIP-996 rejects them only
				// while the leader is heard from), and campaigns itself
				// after its rank's offset unless a higher-ranked voter
				// does first (D59).
				t.s.fetched = false
				t.emit(t.s.c.rankWait[r])
				return
			}
			t.toProspective("fetch timeout")
			return
		}
		t.toUnattached(t.s.epoch, t.s.leader, timerRandom, "fetch timeout")
	case Unattached:
		if !t.s.c.isVoter() {
			t.enterUnattached(timerRandom)
		}
	case Prospective, Candidate, Leader, Resigned:
	}
}

// onFetchResponse is Kafka's KafkaRaftClient.handleFetchResponse. A response
// without Records has no records or carries ones the host has already
// appended (after AppendFetched) and reported with LogAppended; one with
// Records that passes the checks stops at appendFirst (D240).
//
// The next Fetch is sent once, at the end of the step, from the final
// position: a transition to Follower on the way (an Unattached replica
// attaching to the leader the response names) does not send its own, so at
// most one Fetch is in flight (as Kafka's RequestManager keeps it).
func (t *stepper) onFetchResponse(e *ReceiveFetchResponse) {
	t.deferFetch = true
	t.processFetchResponse(e)
	t.finishFetching()
}

// finishFetching ends a step that handled a response to a fetch-type
// request: a Follower resets its fetch timer and sends its next request,
// if the response called for them.
func (t *stepper) finishFetching() {
	if t.fault == "" && t.s.role == Follower {
		if t.fetchTimerDue {
			t.emit(t.followerFetchReset())
		}
		if t.fetchDue {
			t.sendFetch()
		}
	}
}

func (t *stepper) processFetchResponse(e *ReceiveFetchResponse) {
	leader := t.namedLeader(e.LeaderID)
	// maybeSwitchObserverFetchToLeader: an Unattached replica that learns
	// (or already knew) the leader of its epoch attaches to it.
	if !t.consistentLeader(e.LeaderEpoch, leader) {
		t.inconsistentLeader(e.LeaderEpoch, leader)
		return
	}
	if e.LeaderEpoch == t.s.epoch && t.s.role == Unattached && leader != NoNode {
		t.toFollower(e.LeaderEpoch, leader, "fetch response names the leader")
	}
	if !t.commonResponse(e.LeaderEpoch, leader, e.Error) {
		return
	}
	if t.s.role != Follower || leader != t.s.leader {
		return
	}
	switch {
	case e.Diverging != nil && e.Diverging.Epoch >= 0:
		d := *e.Diverging
		if d.Offset < 0 {
			return
		}
		to := t.s.log.truncationPoint(d)
		// Kafka checks the diverging end offset against the quorum's high
		// watermark (handleFetchResponse) and the truncation point against
		// the log's (KafkaMetadataLog.truncateTo), which leading an epoch
		// does not reset.
		if d.Offset < t.s.hwm || to < t.s.committed {
			// Kafka throws; kraft refuses the leader (D113).
			t.refuse(to, "the leader asks to truncate below the high watermark")
			return
		}
		if to < t.s.log.end.Offset {
			t.s.log = t.s.log.truncated(to)
			t.emit(TruncateLog{To: to})
			// A VotersRecord truncated away is no longer in force.
			t.syncVoters()
		}
	case e.Snapshot != nil && (e.Snapshot.Offset >= 0 || e.Snapshot.Epoch >= 0):
		id := *e.Snapshot
		if id.Offset < 0 || id.Epoch < 0 {
			// Kafka's handleFetchResponse: a failure, no timer reset.
			return
		}
		// Start downloading the snapshot (Kafka: setFetchingSnapshot with
		// createNewSnapshotUnchecked); the next request is a FetchSnapshot.
		// A snapshot the log already covers (one on disk, or one inside
		// the log that ends in the epoch of the record before its end) is
		// not downloaded, and fetching goes on (D43, D57).
		if !t.s.log.covers(id) {
			t.s.download = &snapshotDownload{id: id}
		}
	default:
		if e.HighWatermark >= 0 && min64(t.s.log.end.Offset, e.HighWatermark) < t.s.hwm {
			// Kafka's FollowerState.updateHighWatermark throws
			// ("Non-monotonic update of high watermark"): a leader never
			// lowers the high watermark it published, and a host that
			// keeps one Fetch in flight and drops stale responses never
			// delivers an older answer (D58).
			t.failf(fmt.Sprintf("the leader lowers the high watermark from %d to %d", t.s.hwm, e.HighWatermark))
			return
		}
		t.accepted = true
		if e.Records {
			// D240: the records go into the log first, as Kafka's
			// appendAsFollower does before the rest of
			// handleFetchResponse; the step ends with AppendFetched.
			t.appendFirst = true
			return
		}
		// A leader whose log holds this one's is followed again (D113).
		t.s.refused = false
		if e.HighWatermark >= 0 {
			t.raiseHighWatermark(min64(t.s.log.end.Offset, e.HighWatermark))
		}
	}
	t.s.fetched = true
	t.fetchTimerDue, t.fetchDue = true, true
	if t.accepted {
		t.maybeAutoJoin()
	}
}

// onFetchSnapshotResponse is Kafka's handleFetchSnapshotResponse (D43).
// Like a Fetch response, it sends the next request once, at the end of the
// step.
func (t *stepper) onFetchSnapshotResponse(e ReceiveFetchSnapshotResponse) {
	t.deferFetch = true
	t.processFetchSnapshotResponse(e)
	t.finishFetching()
}

func (t *stepper) processFetchSnapshotResponse(e ReceiveFetchSnapshotResponse) {
	// Kafka's maybeHandleCommonResponse handles fencing, newer epochs and
	// new leaders; the snapshot errors (and any other partition error it
	// does not know) reach the snapshot handling, unless the response made
	// this replica a Follower of a leader it had not known (then only NONE
	// goes on). INCONSISTENT_CLUSTER_ID is a top-level error: dropped.
	code := e.Error
	switch code {
	case ErrNone, ErrFencedLeaderEpoch, ErrNotLeaderOrFollower, ErrUnknownLeaderEpoch, ErrInvalidRequest,
		ErrBrokerNotAvailable, ErrInconsistentClusterID:
	default:
		leader := t.namedLeader(e.LeaderID)
		if e.LeaderEpoch == t.s.epoch && leader != NoNode && t.s.leader == NoNode {
			break
		}
		code = ErrNone
	}
	if !t.commonResponse(e.LeaderEpoch, e.LeaderID, code) {
		return
	}
	if t.s.role != Follower || t.namedLeader(e.LeaderID) != t.s.leader {
		return
	}
	if e.Error == ErrSnapshotNotFound || e.Snapshot.Offset < 0 || e.Snapshot.Epoch < 0 {
		// "The leader deleted the snapshot before the follower could
		// download it": start over with a Fetch.
		t.s.download = nil
		t.s.fetched = true
		t.fetchTimerDue, t.fetchDue = true, true
		return
	}
	switch {
	case t.s.download == nil:
		t.failf(fmt.Sprintf("a FetchSnapshot response for %+v, but no snapshot is being fetched", e.Snapshot))
		return
	case e.Snapshot != t.s.download.id:
		t.failf(fmt.Sprintf("a FetchSnapshot response for %+v while fetching %+v", e.Snapshot, t.s.download.id))
		return
	case e.Position != t.s.download.written:
		t.failf(fmt.Sprintf("a FetchSnapshot response at position %d of %+v, but %d bytes are written", e.Position, e.Snapshot, t.s.download.written))
		return
	case e.Bytes < 0 || e.Size < 0 || e.Bytes > e.Size-e.Position:
		// A chunk that does not fit the snapshot's size: dropped, the
		// host retries the request (D43).
		return
	}
	id := e.Snapshot
	written := e.Position + e.Bytes
	// Complete: the snapshot replaces the whole log (Kafka's
	// truncateToLatestSnapshot, but also when the snapshot is not past the
	// log end: D57). The leader of this epoch answered this log's Fetch
	// with it, so the log either ends before the snapshot or diverges from
	// the leader's at or before the snapshot's last record: every record
	// of the snapshot is committed, and none of this log's records from
	// the divergence on is. Only a high watermark past the snapshot (a
	// committed record it would remove) is wrong: Kafka throws, kraft
	// refuses the leader and drops the download, its last chunk unwritten
	// (D113).
	if written >= e.Size && id.Offset < t.s.committed {
		t.s.download = nil
		t.refuse(id.Offset, "the leader's snapshot ends below the high watermark")
		return
	}
	t.emit(WriteSnapshotChunk{Snapshot: id, Position: e.Position})
	t.s.download = &snapshotDownload{id: id, written: written}
	t.s.fetched = true
	t.fetchTimerDue, t.fetchDue = true, true
	if written < e.Size {
		return
	}
	t.s.download = nil
	t.s.log = t.s.log.resetTo(id)
	t.emit(InstallSnapshot{Snapshot: id})
	// Kafka's updateFollowerHighWatermark with the log's high watermark,
	// which the truncation moved to the snapshot end.
	t.raiseHighWatermark(id.Offset)
}

// refuse is docs/design.md D113: the leader of the current epoch asked
// this Follower to remove committed records, to truncate its log to (or
// reset it to a snapshot ending at) to. Kafka throws
// (KafkaRaftClient.handleFetchResponse, KafkaMetadataLog.truncateTo);
// kraft keeps the log and refuses the leader: no next Fetch and no fetch
// timer reset (a refused answer is no success), so the timer runs out and
// the replica campaigns; pre-votes are granted again (KIP-996 rejects them
// only while the leader is heard from), so that the voters holding the
// records elect one of them. A Follower entered in this step still arms
// its timer (finishFetching).
func (t *stepper) refuse(to int64, reason string) {
	t.s.refused = true
	t.s.fetched = false
	t.fetchDue = false
	t.emit(LeaderRefused{LeaderID: t.s.leader, Epoch: t.s.epoch, TruncateTo: to, HighWatermark: t.s.committed, Reason: reason})
}

// appendFetched ends a step on a Fetch response with Records that the
// state takes (appendFirst): the state stays as it was (s) and the one
// action is AppendFetched, whose Then is the same response without
// Records. The host appends the records at the log end and reports them,
// then steps Then, which processes the response with its records in the
// log, the order of Kafka's handleFetchResponse (appendAsFollower before
// the high watermark update and the next Fetch): every decision is the
// one Kafka takes (docs/design.md D240).
func (t *stepper) appendFetched(s, next *State, r ReceiveFetchResponse) []Action {
	*next = *s
	b := t.buffer()
	b.acts = b.acts[:0]
	p := b.arena.appendFetched.slot()
	r.Records = false
	p.Offset, p.Then = s.log.end.Offset, r
	b.acts = append(b.acts, referTo(tabAppendFetched, p))
	return b.acts
}

// toFollower moves to Follower of leader in epoch (Kafka's
// transitionToFollower): durable, vote kept within the same epoch, fetch
// timer T_f, and the first Fetch goes out at once.
func (t *stepper) toFollower(epoch Epoch, leader NodeID, reason string) {
	t.become(Follower, epoch, leader, t.voteIn(epoch), true, reason)
	t.enterFollower()
}

func (t *stepper) enterFollower() {
	t.s.endpoints = true
	if t.joins() {
		// The first join request waits a period (D53).
		t.waitToJoin()
	}
	if t.deferFetch {
		t.fetchTimerDue, t.fetchDue = true, !t.s.refused
		return
	}
	t.emit(t.followerFetchReset())
	if !t.s.refused {
		// A refused leader (D113: back from a lost pre-vote) is not asked
		// again: its log cannot change below the refused point.
		t.sendFetch()
	}
}

// followerFetchReset arms a Follower's fetch timer: T_f (Kafka's). A
// voter whose leader stays silent waits its rank's offset more before it
// campaigns (onFetchTimeout, D59, D78).
func (t *stepper) followerFetchReset() Action {
	return t.s.c.resetFetch
}

// survivorRank is a voter Follower's rank among the voters but its
// leader, capped at rankSteps: when its fetch timer fires, the leader is
// the one presumed gone, and the survivors' order is what matters (D78).
func (t *stepper) survivorRank() int {
	c := t.s.c
	r := c.rankBelow
	if r > 0 {
		for i, id := range c.voterIDs {
			if id == t.s.leader && c.voters[i].Compare(c.local) < 0 {
				r--
				break
			}
		}
	}
	if r > rankSteps {
		r = rankSteps
	}
	return r
}

// sendFetch sends a Follower's next Fetch to its leader. The Fetch tells
// the leader what this replica holds, and the leader counts a voter's
// position toward the high watermark, so a voter sends it only once its
// whole written log is flushed (Kafka's appendAsFollower: "the leader only
// requires that voters have flushed their log before sending a Fetch
// request"); until then it waits for LogFlushed (docs/design.md D30).
// Observers are never counted and fetch at once.
//
// A Follower downloading a snapshot sends a FetchSnapshot for the next
// bytes instead (Kafka's maybeSendFetchToBestNode); it tells the leader
// nothing about the log, so it does not wait for a flush (D43).
func (t *stepper) sendFetch() {
	if d := t.s.download; d != nil {
		t.s.fetchPending = false
		t.emit(SendFetchSnapshot{To: t.s.leader, ClusterID: t.s.c.clusterID, CurrentLeaderEpoch: t.s.epoch, Snapshot: d.id, Position: d.written})
		return
	}
	if t.fetchWaitsForFlush() {
		t.s.fetchPending = true
		return
	}
	t.s.fetchPending = false
	t.fetch(t.s.leader)
}

// fetch emits a Fetch to the leader (or to NoNode: any bootstrap voter)
// from the local log end, written in place: a follower's Fetch path.
func (t *stepper) fetch(to NodeID) {
	b := t.buffer()
	p := b.arena.fetch.slot()
	// The cluster id field by field: a 17-byte struct copy stalls.
	p.To, p.ClusterID.UUID, p.ClusterID.Valid, p.CurrentLeaderEpoch = to, t.s.c.clusterID.UUID, t.s.c.clusterID.Valid, t.s.epoch
	p.FetchOffset, p.FetchEpoch, p.HighWatermark = t.s.log.end.Offset, t.s.log.end.Epoch, t.s.hwm
	b.acts = append(b.acts, referTo(tabFetch, p))
}
