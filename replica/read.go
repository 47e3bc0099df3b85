package replica

import (
	"errors"
	"time"

	"github.com/kraftquorum/kraft"
)

// Linearizable reads that write nothing (etcd's ReadIndex, the Raft
// thesis's section 6.4; docs/design.md D120-D122). A leader takes a read
// with ReadIndex: the read's point is its high watermark then. It then
// confirms that it still leads by a round of BeginQuorumEpoch requests to
// the other voters, sent after the read arrived; once the leader and the
// voters that answered NONE in its epoch are a majority of the voter set,
// every read taken before the round began is ready at its point (a
// ReadReady output), as soon as the high watermark covers it. Reads taken
// while a round is in flight wait for the next one, which starts when it
// ends: one round serves every read that arrived during the one before.
// A voter has at most one read request in flight: one still unanswered
// when its round ended (a slower voter) stays in flight, and the voter is
// asked for the round in flight when it answers or times out, so the
// rounds go at the pace of the majority without piling requests on the
// slower voters (docs/design.md D150).

// MaxPendingReads is the most reads a leader holds waiting for their
// round; ReadIndex refuses one more with ErrTooManyReads. A round serves
// every read that waits for it, so the bound is on memory, not on
// throughput: a host whose callers block until their read is answered
// never reaches it with fewer callers (docs/design.md D121).
const MaxPendingReads = 4096

var (
	// ErrTooManyReads is ReadIndex's answer when MaxPendingReads reads
	// wait already.
	ErrTooManyReads = errors.New("replica: too many reads waiting")
	// ErrReadTimedOut fails the reads of a round that did not reach a
	// majority within the request timeout: the leader may have lost
	// contact with the majority. Retry: at the same leader, or at a new
	// one.
	ErrReadTimedOut = errors.New("replica: the read's leadership round timed out")
	// ErrReadNotConfirmed fails the reads of a round that every voter
	// answered without a majority confirming (an error answer in the
	// leader's epoch). Retry.
	ErrReadNotConfirmed = errors.New("replica: the voters did not confirm the leadership")
	// ErrReadLeadershipLost fails the reads of a leader that lost its
	// leadership (a newer epoch, a resignation) before they were ready.
	ErrReadLeadershipLost = errors.New("replica: leadership lost before the read was ready")
)

// ReadReady answers the ReadIndex call Ref: every record committed
// anywhere before the call is below Offset, and Offset is committed (the
// replica's high watermark covers it). Serve the read from the
// application once it has applied every record below Offset.
type ReadReady struct {
	Ref    uint64
	Offset int64
}

// ReadFailed answers the ReadIndex call Ref with an error (one of the
// ErrRead errors, or the replica's): the leader could not confirm its
// leadership. The read may be tried again.
type ReadFailed struct {
	Ref uint64
	Err error
}

func (ReadReady) isOutput()  {}
func (ReadFailed) isOutput() {}

// kindRead is a read round's BeginQuorumEpoch: a request of the layer's,
// not of the state, so one is in flight per voter besides the state's own
// BeginQuorumEpoch.
const kindRead = kindAPIVersions + 1

// pendingRead is a read waiting for its round and its point.
type pendingRead struct {
	ref   uint64
	epoch kraft.Epoch
	round uint64 // the round that must confirm the leadership
	point int64  // the high watermark when it arrived; -1: not known yet
}

// readState is the leader's reads and rounds.
type readState struct {
	nextRef uint64
	pending []pendingRead
	// round is the latest round started (0: none); active says it is in
	// flight, in roundEpoch, with the voters that confirmed it in acks.
	round      uint64
	active     bool
	roundEpoch kraft.Epoch
	acks       []kraft.NodeID
	confirmed  uint64 // the latest round confirmed
}

func (s readState) clone() readState {
	s.pending = append([]pendingRead(nil), s.pending...)
	s.acks = append([]kraft.NodeID(nil), s.acks...)
	return s
}

// appendCanonical encodes what decides the reads' outputs: the pending
// reads relative to the rounds, and the round in flight.
func (s readState) appendCanonical(dst []byte) []byte {
	dst = putUvarint(dst, uint64(len(s.pending)))
	for _, p := range s.pending {
		dst = putUvarint(dst, p.ref)
		dst = putVarint(dst, int64(p.epoch))
		dst = putVarint(dst, int64(p.round)-int64(s.confirmed))
		dst = putVarint(dst, p.point)
	}
	if !s.active {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	dst = putVarint(dst, int64(s.roundEpoch))
	dst = putVarint(dst, int64(s.round)-int64(s.confirmed))
	dst = putUvarint(dst, uint64(len(s.acks)))
	for _, id := range s.acks {
		dst = putVarint(dst, int64(id))
	}
	return dst
}

// ReadIndex takes a linearizable read at the leader at time now and
// returns its Ref: a ReadReady or a ReadFailed output with it follows, in
// this input's outputs or a later one's. The read's point is the leader's
// high watermark now; a leader that has not yet committed a record of its
// own epoch (its high watermark is unknown) takes the first one it knows,
// which covers every record committed before it led (Raft's rule that a
// leader reads only once it has committed an entry of its term). The read
// is ready once a round of BeginQuorumEpoch requests started after now
// has been answered NONE in the leader's epoch by enough voters to make a
// majority with the leader (at once for the only voter): no leader of a
// newer epoch had been elected when the read arrived, so nothing was
// committed past the point then (docs/design.md D120). ErrNotLeader off a
// leader, ErrTooManyReads when MaxPendingReads reads wait.
func (r *Replica) ReadIndex(now time.Duration) (uint64, error) {
	if !r.input(now) {
		return 0, r.err
	}
	if r.st.Role() != kraft.Leader {
		return 0, ErrNotLeader
	}
	s := &r.reads
	if len(s.pending) >= MaxPendingReads {
		return 0, ErrTooManyReads
	}
	s.nextRef++
	p := pendingRead{ref: s.nextRef, epoch: r.st.Epoch(), round: s.round + 1, point: r.st.HighWatermark()}
	if s.active && r.planted(bugReadJoinsRound) {
		p.round = s.round // joins the round in flight, which began before it
	}
	s.pending = append(s.pending, p)
	if !s.active {
		r.startRound()
	}
	r.settle()
	return p.ref, nil
}

// PendingReads is how many reads wait for their round or their point.
func (r *Replica) PendingReads() int { return len(r.reads.pending) }

// startRound sends a round's BeginQuorumEpoch to every other voter that
// has no read request in flight; the others are asked when theirs is
// answered or times out (askForRound).
func (r *Replica) startRound() {
	s := &r.reads
	s.round++
	s.active, s.roundEpoch, s.acks = true, r.st.Epoch(), s.acks[:0]
	for _, v := range r.st.Voters() {
		if v.ID == r.local.ID || r.inFlight(v.ID, kindRead) {
			continue
		}
		r.askForRound(v)
	}
	r.checkRound()
}

// askForRound sends voter v the BeginQuorumEpoch of the round in flight.
func (r *Replica) askForRound(v kraft.ReplicaKey) {
	_, ev, _ := kraft.Deliver(r.local, kraft.SendBeginQuorumEpoch{
		To: v, ClusterID: r.cfg.Kraft.ClusterID, Epoch: r.st.Epoch(), LeaderID: r.local.ID,
	})
	r.sendRequest(Message{From: r.local.ID, To: v.ID, Event: ev}, kindRead)
	r.inflight[len(r.inflight)-1].round = r.reads.round
}

// askLater asks voter id for the round in flight, if it is a voter the
// round has not asked: its request of an earlier round was answered or
// timed out.
func (r *Replica) askLater(id kraft.NodeID) {
	s := &r.reads
	if !s.active || r.st.Role() != kraft.Leader || r.st.Epoch() != s.roundEpoch || r.inFlight(id, kindRead) {
		return
	}
	for _, v := range r.st.Voters() {
		if v.ID == id && id != r.local.ID {
			r.askForRound(v)
			return
		}
	}
}

// checkRound ends the round in flight once the leader and the voters that
// confirmed it are a majority of the voter set in force.
func (r *Replica) checkRound() {
	s := &r.reads
	if !s.active || r.st.Role() != kraft.Leader || r.st.Epoch() != s.roundEpoch {
		return
	}
	voters := r.st.Voters()
	n := 0
	for _, v := range voters {
		if v.ID == r.local.ID || containsID(s.acks, v.ID) {
			n++
		}
	}
	if 2*n <= len(voters) {
		return
	}
	s.confirmed = s.round
	r.endRound()
}

// endRound ends the round in flight, and starts the next one for the
// reads that arrived while it ran. Its requests still unanswered stay in
// flight (D150): their answers confirm nothing after it, and the voter is
// asked for the next round once it answers.
//
// Only a leader starts a round, and only for reads of its epoch: a round
// ends also when an answer deposes the leader, and a BeginQuorumEpoch sent
// then would name it leader of an epoch another voter may lead. Its
// waiting reads fail at the end of the input (serveReads).
func (r *Replica) endRound() {
	s := &r.reads
	s.active = false
	if r.st.Role() != kraft.Leader {
		return
	}
	for _, p := range s.pending {
		if p.round > s.round && p.epoch == r.st.Epoch() {
			r.startRound()
			return
		}
	}
}

// failRound fails the reads of the round in flight with err and starts
// the next round for the reads that arrived while it ran.
func (r *Replica) failRound(err error) {
	s := &r.reads
	kept := s.pending[:0]
	for _, p := range s.pending {
		if p.round <= s.round {
			r.emit(ReadFailed{Ref: p.ref, Err: err})
			continue
		}
		kept = append(kept, p)
	}
	s.pending = kept
	r.endRound()
}

// onReadAnswer takes the answer m to read request q (the state has
// stepped it). An answer to a request of an earlier round confirms
// nothing: the voter is asked for the round in flight. Of the round in
// flight, NONE in the leader's epoch from its own leader confirms the
// voter. A round that every voter it asked has answered without a
// majority fails.
func (r *Replica) onReadAnswer(q *request, m Message) {
	s := &r.reads
	if !s.active {
		return
	}
	if q.round != s.round {
		r.askLater(m.From)
		return
	}
	resp, ok := m.Event.(kraft.ReceiveQuorumResponse)
	if ok && resp.Error == kraft.ErrNone && resp.Epoch == s.roundEpoch && resp.LeaderID == r.local.ID &&
		r.st.Role() == kraft.Leader && r.st.Epoch() == s.roundEpoch {
		if !containsID(s.acks, m.From) {
			s.acks = append(s.acks, m.From)
		}
		r.checkRound()
		return
	}
	for _, q := range r.inflight {
		if q.kind == kindRead {
			return // answers still to come
		}
	}
	r.failRound(ErrReadNotConfirmed)
}

// onReadTimeout handles read request q with no answer within the request
// timeout: the round in flight fails if q is one of its own; a request of
// an earlier round makes way for the round in flight.
func (r *Replica) onReadTimeout(q *request) {
	s := &r.reads
	if !s.active {
		return
	}
	if q.round == s.round {
		r.failRound(ErrReadTimedOut)
		return
	}
	r.askLater(q.msg.To)
}

// noteReadFetch is a planted bug's (bugReadCountsFetches): a Fetch of
// the leader's epoch that arrives while a round is in flight confirms its
// sender, as if it had been sent after the reads (a delayed retry was
// not).
func (r *Replica) noteReadFetch(m Message) {
	f, ok := m.Event.(kraft.ReceiveFetch)
	s := &r.reads
	if !r.planted(bugReadCountsFetches) || m.Response || !ok || !s.active || f.CurrentLeaderEpoch != s.roundEpoch ||
		r.st.Role() != kraft.Leader || r.st.Epoch() != s.roundEpoch {
		return
	}
	if !containsID(s.acks, m.From) {
		s.acks = append(s.acks, m.From)
	}
	r.checkRound()
}

// serveReads, at the end of every input, answers the reads that are
// ready, and fails them all once the replica no longer leads their epoch.
func (r *Replica) serveReads() {
	s := &r.reads
	leads := r.err == nil && r.st.Role() == kraft.Leader
	if s.active && (!leads || r.st.Epoch() != s.roundEpoch) {
		s.active = false // the role change dropped its requests
	}
	if len(s.pending) == 0 {
		return
	}
	hwm := r.st.HighWatermark()
	kept := s.pending[:0]
	for _, p := range s.pending {
		switch {
		case !leads || p.epoch != r.st.Epoch():
			err := error(ErrReadLeadershipLost)
			if r.err != nil {
				err = r.err
			}
			r.emit(ReadFailed{Ref: p.ref, Err: err})
			continue
		case p.point < 0 && hwm >= 0:
			p.point = hwm
		}
		if p.round <= s.confirmed && p.point >= 0 {
			r.emit(ReadReady{Ref: p.ref, Offset: p.point})
			continue
		}
		kept = append(kept, p)
	}
	s.pending = kept
}

// checkReads checks the reads between inputs: reads wait only at a
// leader of their epoch, for the round in flight or the next one; a
// read round's requests are in flight only with the round, at a leader
// of the epoch they name.
func (r *Replica) checkReads() error {
	s := &r.reads
	for _, p := range s.pending {
		if r.st.Role() != kraft.Leader || p.epoch != r.st.Epoch() {
			return broken("read-at-leader", "read %d of epoch %d waits at a %v of epoch %d", p.ref, p.epoch, r.st.Role(), r.st.Epoch())
		}
		if p.round <= s.confirmed && p.point >= 0 {
			return broken("read-ready", "read %d is ready and waits", p.ref)
		}
		if p.round > s.round+1 || p.round > s.round && !s.active {
			return broken("read-round", "read %d waits for round %d with no round to start it (latest %d, in flight %v)", p.ref, p.round, s.round, s.active)
		}
	}
	for _, q := range r.inflight {
		if q.kind != kindRead {
			continue
		}
		if q.round == 0 || q.round > s.round {
			return broken("read-request-round", "a read request to %d of round %d in flight (latest round %d, in flight %v)", q.msg.To, q.round, s.round, s.active)
		}
		if b, ok := q.msg.Event.(kraft.ReceiveBeginQuorumEpoch); !ok || r.st.Role() != kraft.Leader || b.LeaderEpoch != r.st.Epoch() {
			return broken("read-request-epoch", "a read request to %d (%T) in flight at a %v of epoch %d", q.msg.To, q.msg.Event, r.st.Role(), r.st.Epoch())
		}
	}
	return nil
}

func containsID(ids []kraft.NodeID, id kraft.NodeID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
