package replica

import (
	"time"

	"github.com/kraftquorum/kraft"
)

// Requests, as Kafka's RequestManager keeps them: at most one request in
// flight per destination and kind, each with a correlation id; a response
// that matches none (stale, duplicated, from before the latest role
// change) is dropped; a request with no answer within its timeout
// (timeoutOf) is sent again after the retry backoff, one retry at most per
// destination and kind (D77). Time is an input: every deadline here fires
// from Tick.

// kind is a request kind: one of each in flight per destination.
type kind uint8

// The request kinds of the raft RPCs are kraft's catalogue's
// (kraft.RPC.InFlight, docs/design.md D230); carry takes a request's kind
// from it (kraft.InFlightOf).
const (
	kindVote        = kind(kraft.InFlightVote)
	kindBegin       = kind(kraft.InFlightBeginQuorumEpoch)
	kindEnd         = kind(kraft.InFlightEndQuorumEpoch)
	kindFetch       = kind(kraft.InFlightFetch) // Fetch and FetchSnapshot: a follower's one fetch request
	kindAPIVersions = kind(kraft.InFlightAPIVersions)
)

type request struct {
	kind     kind
	corr     uint64
	msg      Message
	deadline time.Duration
	short    bool   // waits less than the request timeout (timeoutOf)
	round    uint64 // kindRead: the read round it was sent for (read.go)
}

// retry sends msg again at at, if no request of its kind to its
// destination is in flight then and, for a fetch, it is still the latest
// Fetch (corr) and the role fetches.
type retry struct {
	at   time.Duration
	kind kind
	corr uint64
	msg  Message
}

// send sends a request made from a state action.
func (r *Replica) send(a kraft.Action, k kind) {
	to, ev, ok := kraft.Deliver(r.local, a)
	if !ok {
		return
	}
	m := Message{From: r.local.ID, To: to, Event: ev}
	if f, isFetch := a.(kraft.SendFetch); isFetch {
		m.HighWatermark = f.HighWatermark
		if to == kraft.NoNode {
			m.To = r.bootstrapVoter()
		}
	}
	r.sendRequest(m, k)
}

// bootstrapVoter picks the replica a Fetch to no one in particular goes
// to (an observer that knows no leader): the voters in turn, or
// Config.BootstrapServers while it knows no voter.
func (r *Replica) bootstrapVoter() kraft.NodeID {
	voters := r.st.Voters()
	if len(voters) == 0 {
		if len(r.cfg.BootstrapServers) == 0 {
			return kraft.NoNode
		}
		id := r.cfg.BootstrapServers[r.bootNext%len(r.cfg.BootstrapServers)]
		r.bootNext++
		return id
	}
	for range voters {
		v := voters[r.bootNext%len(voters)]
		r.bootNext++
		if v.ID != r.local.ID {
			return v.ID
		}
	}
	return voters[0].ID
}

// sendRequest sends m with a fresh correlation id and arms its timeout,
// replacing any request of its kind in flight to its destination.
func (r *Replica) sendRequest(m Message, k kind) {
	if !r.planted(bugTwoFetches) || k != kindFetch {
		r.dropRequest(m.To, k)
		r.dropRetry(m.To, k) // a newer request supersedes its backoff
	}
	r.corr++
	m.Corr = r.corr
	t := r.timeoutOf(m, k)
	r.inflight = append(r.inflight, &request{kind: k, corr: m.Corr, msg: m, deadline: r.now + t, short: t < r.cfg.RequestTimeout})
	if k == kindFetch {
		c := m
		r.lastFetch = &c
		r.sentFetch = true
	}
	r.emit(Send{Message: m})
}

// timeoutOf is how long request m, of kind k, waits for its answer. An
// election's requests (Vote, and BeginQuorumEpoch, which tells the voters
// who won) are answered at once, so they go again after a quarter of the
// election timeout when that is shorter than the request timeout: a lost
// vote then costs a fraction of an election rather than a whole request
// timeout (D95). A Fetch that the leader cannot park (atOnce) does the
// same, unless one already timed out in this epoch (D100); any other Fetch
// may be parked for FetchMaxWait, and keeps the request timeout.
func (r *Replica) timeoutOf(m Message, k kind) time.Duration {
	t := r.cfg.RequestTimeout
	short := k == kindVote || k == kindBegin
	if f, ok := m.Event.(kraft.ReceiveFetch); ok && k == kindFetch {
		short = atOnce(f, m.HighWatermark) && r.slowFetch != int64(r.st.Epoch())+1
	}
	if short {
		te := r.cfg.Kraft.ElectionTimeout
		if te == 0 {
			te = kraft.DefaultElectionTimeout
		}
		if q := te / 4; q < t {
			t = q
		}
	}
	return t
}

// atOnce reports whether a leader answers Fetch f, from a replica whose
// high watermark is hwm, without parking it (D100): f is the replica's
// first of the leader's epoch (its log ends in an older epoch, and the
// leader has at least the epoch's LeaderChange record for it), or it
// offers records past hwm (the leader's high watermark is above hwm, or
// moves past it with this very Fetch, and a Fetch whose answer would raise
// the sender's high watermark is answered at once: fetchResponse, as
// KIP-1166's Fetch v18 has Kafka's leader do). A voter that the leader
// does not need for its high watermark may still be parked: it then asks
// again sooner than it would have, which costs a request.
func atOnce(f kraft.ReceiveFetch, hwm int64) bool {
	return f.FetchEpoch < f.CurrentLeaderEpoch || f.FetchOffset > hwm
}

// dropRequest forgets the request of kind k in flight to to, if any.
func (r *Replica) dropRequest(to kraft.NodeID, k kind) {
	for i, q := range r.inflight {
		if q.msg.To == to && q.kind == k {
			r.inflight = append(r.inflight[:i:i], r.inflight[i+1:]...)
			return
		}
	}
}

// inFlight reports whether a request of kind k to to is in flight.
func (r *Replica) inFlight(to kraft.NodeID, k kind) bool {
	for _, q := range r.inflight {
		if q.msg.To == to && q.kind == k {
			return true
		}
	}
	return false
}

// match finds and forgets the request a response answers.
func (r *Replica) match(m Message) (*request, bool) {
	for i, q := range r.inflight {
		if q.msg.To == m.From && q.corr == m.Corr {
			r.inflight = append(r.inflight[:i:i], r.inflight[i+1:]...)
			return q, true
		}
	}
	return nil, false
}

// timedOut handles a request with no answer within its timeout
// (timeoutOf): an ApiVersions fails the voter change waiting for it, and
// the others go again after the retry backoff (a BeginQuorumEpoch too: a
// voter that granted its vote learns who won from it, D95).
func (r *Replica) timedOut(q *request) {
	switch q.kind {
	case kindAPIVersions:
		r.step(kraft.ReceiveAPIVersionsResponse{From: q.msg.To, Error: kraft.ErrRequestTimedOut})
	case kindRead:
		// A read round waits the request timeout, then fails; a request
		// of an earlier round gives way to the round in flight (read.go).
		r.onReadTimeout(q)
	default:
		if q.kind == kindFetch && q.short {
			// It waited less than the request timeout: the link is slower
			// than the short wait allows, or lossy; wait longer from now
			// on in this epoch (D100).
			r.slowFetch = int64(r.st.Epoch()) + 1
		}
		if r.planted(bugTwoFetches) && q.kind == kindFetch {
			r.sendRequest(q.msg, q.kind) // at once, and again after the backoff
			q.corr = r.corr
		}
		r.addRetry(retry{at: r.now + r.cfg.RetryBackoff, kind: q.kind, corr: q.corr, msg: q.msg})
	}
}

// addRetry arms q, in place of any retry of its kind to its destination:
// as in Kafka's RequestManager, a destination is in flight, backing off or
// ready for each kind of request, so one retry at most is pending.
func (r *Replica) addRetry(q retry) {
	r.dropRetry(q.msg.To, q.kind)
	r.retries = append(r.retries, q)
}

// dropRetry forgets the retry of kind k to to, if any.
func (r *Replica) dropRetry(to kraft.NodeID, k kind) {
	for i, q := range r.retries {
		if q.msg.To == to && q.kind == k {
			r.retries = append(r.retries[:i:i], r.retries[i+1:]...)
			return
		}
	}
}

// retryFetch sends the latest Fetch again after the retry backoff, unless
// a newer Fetch goes out first (D25: the state sends no new Fetch after an
// error answer).
func (r *Replica) retryFetch() {
	if last := r.lastFetch; last != nil {
		r.addRetry(retry{at: r.now + r.cfg.RetryBackoff, kind: kindFetch, corr: last.Corr, msg: *last})
	}
}

func (r *Replica) runRetry(q retry) {
	if r.inFlight(q.msg.To, q.kind) && !r.planted(bugTwoFetches) {
		return
	}
	if q.kind == kindFetch && (r.lastFetch == nil || r.lastFetch.Corr != q.corr || !r.fetching()) {
		return
	}
	r.sendRequest(q.msg, q.kind)
}

// fetching: the role fetches (a Follower, or an observer searching).
func (r *Replica) fetching() bool {
	role := r.st.Role()
	return role == kraft.Follower || (role == kraft.Unattached && !r.st.IsVoter())
}

// fire delivers a kraft timer's timeout.
func (r *Replica) fire(t kraft.Timer) {
	r.timers[t] = 0
	if r.holdTimers && (t == kraft.ElectionTimer || t == kraft.FetchTimer) {
		return
	}
	if e := t.Timeout(); e != nil {
		r.step(e)
	}
}

// NextDeadline is the earliest time at which Tick has something to do:
// a kraft timer, a request timeout, a retry, a parked Fetch's wait, a
// snapshot download's hold. ok is false when nothing is armed.
func (r *Replica) NextDeadline() (at time.Duration, ok bool) {
	r.eachDeadline(func(d Deadline) {
		if !ok || d.At < at {
			at, ok = d.At, true
		}
	})
	return at, ok
}

// Tick runs, at time now, everything whose deadline has come, earliest
// first (ties: kraft timers by kind, request timeouts, retries, parked
// Fetches, the snapshot hold, each in the order armed).
func (r *Replica) Tick(now time.Duration) {
	if !r.input(now) {
		return
	}
	for r.err == nil && r.tickOne() {
		r.drain()
	}
	r.settle()
}

// tickOne runs the earliest due deadline (the first listed of those due
// at the same time); false: none is due. It allocates nothing: Tick runs
// on every timer of the runtime.
func (r *Replica) tickOne() bool {
	var due Deadline
	found := false
	r.eachDeadline(func(d Deadline) {
		if d.At <= r.now && (!found || d.At < due.At) {
			due, found = d, true
		}
	})
	if found {
		r.expire(due)
	}
	return found
}
