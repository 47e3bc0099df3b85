package kraft

import (
	"fmt"
	"reflect"
	"testing"
)

// Benchmarks for the hot paths of Step (results in docs/performance.md).
// States are built by stepping real events through a
// minimal in-benchmark host (bnCluster); the measured step then starts from
// a fixed State every iteration, which purity allows, unless the benchmark
// says it carries the state forward.
//
// Jobs that benchmarks/etcd36 and benchmarks/etcd37 also do through etcd
// raft's RawNode share their names (LeaderAck, RoundTrip, Election);
// benchmarks/compare.sh pairs them.

// bnMsg is one message in flight in a bnCluster: the event to deliver, kept
// as a concrete value (converting it to an Event only at the Step call does
// not allocate, since Step does not let its Event escape).
type bnMsg struct {
	to   NodeID
	kind uint8

	vreq  ReceiveVoteRequest
	vresp ReceiveVoteResponse
	bqe   ReceiveBeginQuorumEpoch
	fetch ReceiveFetch
	fresp ReceiveFetchResponse

	// For a fetch response: the records the leader held when it answered,
	// [fetchAt, leaderEnd) of its log.
	fetchAt   int64
	leaderEnd int64
}

const (
	bnVoteRequest uint8 = iota + 1
	bnVoteResponse
	bnBeginQuorumEpoch
	bnFetch
	bnFetchResponse
)

// bnCluster is a minimal synchronous host for n voters with ids 1..n: one
// FIFO queue, logs as slices of record epochs, timers that fire only when a
// benchmark fires them. It allocates little, so that an election costs
// mostly what Step costs.
type bnCluster struct {
	states []State   // by id-1
	logs   [][]Epoch // by id-1
	queue  []bnMsg
	head   int
	buf    Buffer
	self   []LogEnd // LogAppended events a node owes itself (AppendLeaderChange)
	faults int
	// alloc: step with Step (a new action slice every step) instead of
	// StepInto into one reused buffer; inPlace: with StepIn, into the
	// buffer.
	alloc, inPlace bool
}

func bnConfig(local NodeID, n int) Config {
	voters := make([]ReplicaKey, n)
	for i := range voters {
		voters[i] = ReplicaKey{ID: NodeID(i + 1)}
	}
	return Config{Local: ReplicaKey{ID: local}, Voters: voters, Seed: uint64(local) + 1}
}

// bnNewCluster starts n fresh voters (no record, empty logs).
func bnNewCluster(tb testing.TB, n int) *bnCluster {
	c := &bnCluster{
		states: make([]State, n),
		logs:   make([][]Epoch, n),
		queue:  make([]bnMsg, 0, 4*n*n),
	}
	for i := 0; i < n; i++ {
		s, acts, err := NewState(bnConfig(NodeID(i+1), n), nil, LogState{})
		if err != nil {
			tb.Fatal(err)
		}
		c.states[i] = s
		c.logs[i] = make([]Epoch, 0, 16)
		c.apply(NodeID(i+1), acts)
	}
	return c
}

func (c *bnCluster) state(id NodeID) State { return c.states[id-1] }

// step steps node id with e and carries out its actions.
func (c *bnCluster) step(id NodeID, e Event) {
	var s State
	var acts []Action
	switch {
	case c.inPlace:
		acts = StepIn(&c.buf, &c.states[id-1], e)
	case c.alloc:
		s, acts = Step(c.states[id-1], e)
		c.states[id-1] = s
	default:
		// apply is done with acts before the next step reuses c.buf.
		s, acts = StepInto(&c.buf, c.states[id-1], e)
		c.states[id-1] = s
	}
	c.apply(id, acts)
	for len(c.self) > 0 {
		end := c.self[0]
		c.self = c.self[:copy(c.self, c.self[1:])]
		c.step(id, LogAppended{End: end})
		c.step(id, LogFlushed{Offset: end.Offset})
	}
}

// apply carries out the actions of node id as the host contract says.
func (c *bnCluster) apply(id NodeID, acts []Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case SendVoteRequest:
			c.queue = append(c.queue, bnMsg{to: a.To.ID, kind: bnVoteRequest, vreq: ReceiveVoteRequest{
				From: id, ClusterID: a.ClusterID, VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
				CandidateEpoch: a.CandidateEpoch, Candidate: a.Candidate.ID, CandidateDirectoryID: a.Candidate.DirectoryID,
				CandidateLogEnd: a.CandidateLogEnd, PreVote: a.PreVote,
			}})
		case SendVoteResponse:
			c.queue = append(c.queue, bnMsg{to: a.To, kind: bnVoteResponse, vresp: ReceiveVoteResponse{
				From: id, Error: a.Error, Epoch: a.Epoch, VoteGranted: a.VoteGranted, LeaderID: a.LeaderID,
			}})
		case SendBeginQuorumEpoch:
			c.queue = append(c.queue, bnMsg{to: a.To.ID, kind: bnBeginQuorumEpoch, bqe: ReceiveBeginQuorumEpoch{
				From: id, ClusterID: a.ClusterID, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
				VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
			}})
		case SendFetch:
			if a.To == NoNode {
				continue // voters only here; nobody bootstrap-fetches
			}
			c.queue = append(c.queue, bnMsg{to: a.To, kind: bnFetch, fetch: ReceiveFetch{
				From: id, ClusterID: a.ClusterID, CurrentLeaderEpoch: a.CurrentLeaderEpoch,
				FetchEpoch: a.FetchEpoch, FetchOffset: a.FetchOffset,
			}})
		case SendFetchResponse:
			m := bnMsg{to: a.To, kind: bnFetchResponse, fresp: ReceiveFetchResponse{
				From: id, Error: a.Error, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
				HighWatermark: a.HighWatermark, Diverging: a.Diverging,
			}, fetchAt: -1}
			if a.Error == ErrNone && a.Diverging == nil {
				m.fetchAt = int64(len(c.logs[a.To-1]))
				m.leaderEnd = int64(len(c.logs[id-1]))
			}
			c.queue = append(c.queue, m)
		case TruncateLog:
			c.logs[id-1] = c.logs[id-1][:a.To]
		case AppendLeaderChange:
			c.logs[id-1] = append(c.logs[id-1], a.Epoch)
			c.self = append(c.self, LogEnd{Offset: int64(len(c.logs[id-1])), Epoch: a.Epoch})
		case Fault:
			c.faults++
		case Persist, SendBeginQuorumEpochResponse, SendEndQuorumEpoch, SendEndQuorumEpochResponse,
			SendFetchSnapshotResponse, HighWatermarkChanged, ResetTimer, StopTimer, RoleChanged:
		}
	}
}

// deliver delivers the next message; false when the queue is empty.
func (c *bnCluster) deliver() bool {
	if c.head == len(c.queue) {
		c.queue, c.head = c.queue[:0], 0
		return false
	}
	m := &c.queue[c.head]
	c.head++
	switch m.kind {
	case bnVoteRequest:
		c.step(m.to, m.vreq)
	case bnVoteResponse:
		c.step(m.to, m.vresp)
	case bnBeginQuorumEpoch:
		c.step(m.to, m.bqe)
	case bnFetch:
		c.step(m.to, m.fetch)
	case bnFetchResponse:
		c.appendFetched(m)
		c.step(m.to, m.fresp)
	}
	return true
}

// appendFetched appends the records a fetch response carried (if the
// follower's log still ends where its fetch started) and reports them, one
// LogAppended per epoch, before the response is delivered.
func (c *bnCluster) appendFetched(m *bnMsg) {
	if m.fetchAt < 0 || m.leaderEnd <= m.fetchAt {
		return
	}
	from := c.logs[m.fresp.From-1]
	log := c.logs[m.to-1]
	if int64(len(log)) != m.fetchAt || int64(len(from)) < m.leaderEnd {
		return
	}
	log = append(log, from[m.fetchAt:m.leaderEnd]...)
	c.logs[m.to-1] = log
	for i := m.fetchAt; i < m.leaderEnd; i++ {
		if i == m.leaderEnd-1 || log[i+1] != log[i] {
			c.step(m.to, LogAppended{End: LogEnd{Offset: i + 1, Epoch: log[i]}})
		}
	}
	c.step(m.to, LogFlushed{Offset: m.leaderEnd})
}

// committedEverywhere: a leader exists and every voter knows a high
// watermark covering the leader's LeaderChange record.
func (c *bnCluster) committedEverywhere() bool {
	leader := NoNode
	for i := range c.states {
		if c.states[i].Role() == Leader {
			leader = NodeID(i + 1)
		}
	}
	if leader == NoNode {
		return false
	}
	for i := range c.states {
		if c.states[i].HighWatermark() < 1 {
			return false
		}
	}
	return true
}

// bnElect fires node 1's election timer and delivers messages until the
// first fetch round is acknowledged everywhere (the leader committed its
// LeaderChange record and every follower learned it).
func (c *bnCluster) bnElect(tb testing.TB) {
	c.step(1, ElectionTimeout{})
	for !c.committedEverywhere() {
		if !c.deliver() {
			tb.Fatalf("the election stalled: %v", c.states)
		}
	}
	c.queue, c.head = c.queue[:0], 0
	if c.faults > 0 {
		tb.Fatalf("%d faults", c.faults)
	}
}

// bnSteady is an n-voter cluster with leader 1 in epoch 1, every voter at
// log end 1 with high watermark 1, and one fetch from every follower (ids 2
// to n, in order) answered since, as in a round-robin steady state.
func bnSteady(tb testing.TB, n int) *bnCluster {
	c := bnNewCluster(tb, n)
	c.bnElect(tb)
	for id := 2; id <= n; id++ {
		c.step(1, bnFetchAt(NodeID(id), 1))
	}
	c.queue, c.head = c.queue[:0], 0
	if r := c.state(1); r.Role() != Leader || r.Epoch() != 1 || r.HighWatermark() != 1 {
		tb.Fatalf("not steady: %v", r)
	}
	for id := 2; id <= n; id++ {
		if f := c.state(NodeID(id)); f.Role() != Follower || f.LogEnd() != (LogEnd{Offset: 1, Epoch: 1}) || f.HighWatermark() != 1 {
			tb.Fatalf("not steady: %v", f)
		}
	}
	return c
}

// bnFetchAt is voter from's Fetch in epoch 1 at offset.
func bnFetchAt(from NodeID, offset int64) ReceiveFetch {
	return ReceiveFetch{From: from, CurrentLeaderEpoch: 1, FetchEpoch: 1, FetchOffset: offset}
}

// bnMust steps s with e and fails unless the result satisfies ok.
func bnMust(tb testing.TB, s State, e Event, ok func(State, []Action) bool) State {
	tb.Helper()
	n, acts := Step(s, e)
	if !ok(n, acts) {
		tb.Fatalf("unexpected step %T on %v: %v -> %v", e, s, acts, n)
	}
	return n
}

// bnCount counts the actions of type T.
func bnCount[T Action](acts []Action) int {
	n := 0
	for _, a := range acts {
		if _, ok := a.(T); ok {
			n++
		}
	}
	return n
}

// bnRun benchmarks one step of e on s, from the same s every iteration,
// through Step, StepInto (reusing one buffer) or StepIn (reusing one buffer;
// see below for its State). check runs once first.
func bnRun(b *testing.B, api string, s State, e Event, check func(State, []Action) bool) {
	b.Helper()
	if check != nil {
		bnMust(b, s, e, check)
	}
	b.ReportAllocs()
	// The results go to locals, as a host's loop keeps them, and to the
	// sinks once at the end.
	var next State
	var acts []Action
	switch api {
	case "Step":
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			next, acts = Step(s, e)
		}
	case "StepInto":
		var buf Buffer
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			next, acts = StepInto(&buf, s, e)
		}
	case "StepIn":
		// The State is the host's and StepIn updates it in place: when
		// the state after one step is a fixed point of the step and the
		// step from it still passes check (the leader's ack of an offset
		// it already had), the loop carries it forward, as a host does;
		// otherwise every iteration starts from a copy of s, and pays
		// for the copy.
		var buf Buffer
		next = s
		StepIn(&buf, &next, e)
		again, againActs := StepInto(&buf, next, e)
		fixed := reflect.DeepEqual(next, again) && (check == nil || check(again, againActs))
		if !fixed {
			next = s
		}
		b.ResetTimer()
		if fixed {
			for i := 0; i < b.N; i++ {
				acts = StepIn(&buf, &next, e)
			}
		} else {
			for i := 0; i < b.N; i++ {
				next = s
				acts = StepIn(&buf, &next, e)
			}
		}
	default:
		b.Fatalf("unknown api %q", api)
	}
	bnSinkState, bnSinkActs = next, acts
}

var (
	bnSinkState State
	bnSinkActs  []Action
	bnAPIs      = []string{"Step", "StepInto", "StepIn"}
)

// BenchmarkLeaderAck: a leader handles a voter's Fetch in steady state.
// hwm=same: the voter fetches at the offset it already had (nothing new to
// acknowledge, etcd's no-op MsgAppResp); hwm=advance: the leader appended
// 1000 records and this Fetch is the one that gives them a majority. With
// 3, 5, 7 and 64 voters: the cost curve in voters (docs/design.md D47).
func BenchmarkLeaderAck(b *testing.B) {
	for _, n := range []int{3, 5, 7, 64} {
		c := bnSteady(b, n)
		same := c.state(1)
		// The leader appends 1000 records; voters 3..majority already
		// fetched them, so voter 2's Fetch completes the majority.
		const end = 1001
		adv := bnMust(b, same, LogAppended{End: LogEnd{Offset: end, Epoch: 1}}, func(s State, _ []Action) bool { return s.LogEnd().Offset == end })
		adv = bnMust(b, adv, LogFlushed{Offset: end}, func(s State, _ []Action) bool { return s.FlushedOffset() == end })
		for id := 3; id <= n/2+1; id++ {
			adv = bnMust(b, adv, bnFetchAt(NodeID(id), end), func(s State, _ []Action) bool { return s.HighWatermark() == 1 })
		}
		for _, api := range bnAPIs {
			b.Run(fmt.Sprintf("voters=%d/hwm=same/api=%s", n, api), func(b *testing.B) {
				bnRun(b, api, same, bnFetchAt(2, 1), func(s State, acts []Action) bool {
					return s.HighWatermark() == 1 && bnCount[SendFetchResponse](acts) == 1 && bnCount[HighWatermarkChanged](acts) == 0
				})
			})
			b.Run(fmt.Sprintf("voters=%d/hwm=advance/api=%s", n, api), func(b *testing.B) {
				bnRun(b, api, adv, bnFetchAt(2, end), func(s State, acts []Action) bool {
					return s.HighWatermark() == end && bnCount[SendFetchResponse](acts) == 1 && bnCount[HighWatermarkChanged](acts) == 1
				})
			})
		}
	}
}

// BenchmarkRoundTrip: a full fetch round trip in steady state, state carried
// forward: the leader handles voter 2's Fetch, voter 2 handles the
// FetchResponse and emits its next Fetch, which the next iteration sends.
// The host work is only turning actions into events.
func BenchmarkRoundTrip(b *testing.B) {
	for _, n := range []int{3, 5, 7, 64} {
		for _, api := range bnAPIs {
			b.Run(fmt.Sprintf("voters=%d/api=%s", n, api), func(b *testing.B) {
				c := bnSteady(b, n)
				leader, follower := c.state(1), c.state(2)
				fetch := bnFetchAt(2, 1)
				into, in := api == "StepInto", api == "StepIn"
				var buf Buffer
				var acts []Action
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					switch {
					case in:
						acts = StepIn(&buf, &leader, fetch)
					case into:
						leader, acts = StepInto(&buf, leader, fetch)
					default:
						leader, acts = Step(leader, fetch)
					}
					var resp ReceiveFetchResponse
					for _, a := range acts {
						if r, ok := a.(SendFetchResponse); ok {
							resp = ReceiveFetchResponse{From: 1, Error: r.Error, LeaderID: r.LeaderID, LeaderEpoch: r.Epoch, HighWatermark: r.HighWatermark, Diverging: r.Diverging}
						}
					}
					switch {
					case in:
						acts = StepIn(&buf, &follower, resp)
					case into:
						follower, acts = StepInto(&buf, follower, resp)
					default:
						follower, acts = Step(follower, resp)
					}
					fetch.From = -1
					for _, a := range acts {
						if f, ok := a.(SendFetch); ok {
							fetch = ReceiveFetch{From: 2, ClusterID: f.ClusterID, CurrentLeaderEpoch: f.CurrentLeaderEpoch, FetchEpoch: f.FetchEpoch, FetchOffset: f.FetchOffset}
						}
					}
					if fetch.From != 2 {
						b.Fatalf("the follower did not fetch again: %v", acts)
					}
				}
				bnSinkState = follower
			})
		}
	}
}

// BenchmarkObserverFetch: a 3-voter leader handles an observer's Fetch,
// with no observer having fetched before, or after 10,000 distinct
// observers fetched (the fetching observer cycles through them). Observers
// are not tracked (docs/design.md, contract decision 5), so the two should
// cost the same.
// BenchmarkVoterFetchObservers is a voter's Fetch on the same two leaders.
func BenchmarkObserverFetch(b *testing.B) {
	for _, k := range []int{0, 10000} {
		leader := bnWithObservers(b, k)
		for _, api := range bnAPIs {
			b.Run(fmt.Sprintf("observers=%d/api=%s", k, api), func(b *testing.B) {
				bnMust(b, leader, bnFetchAt(1000, 1), func(_ State, acts []Action) bool { return bnCount[SendFetchResponse](acts) == 1 })
				into, in := api == "StepInto", api == "StepIn"
				// StepIn's leader is carried forward: observers' Fetches
				// leave it as it is (bnWithObservers).
				cur := leader
				var buf Buffer
				mod := k
				if mod == 0 {
					mod = 1
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					e := bnFetchAt(NodeID(1000+i%mod), 1)
					switch {
					case in:
						bnSinkActs = StepIn(&buf, &cur, e)
					case into:
						bnSinkState, bnSinkActs = StepInto(&buf, leader, e)
					default:
						bnSinkState, bnSinkActs = Step(leader, e)
					}
				}
			})
		}
	}
}

func BenchmarkVoterFetchObservers(b *testing.B) {
	for _, k := range []int{0, 10000} {
		leader := bnWithObservers(b, k)
		for _, api := range bnAPIs {
			b.Run(fmt.Sprintf("observers=%d/api=%s", k, api), func(b *testing.B) {
				bnRun(b, api, leader, bnFetchAt(2, 1), func(_ State, acts []Action) bool { return bnCount[SendFetchResponse](acts) == 1 })
			})
		}
	}
}

// bnWithObservers is a steady 3-voter leader after k distinct observers
// (ids 1000 on) fetched from it, state carried forward. Observers are not
// stored (docs/design.md, contract decision 5): it fails unless the state is
// exactly the one before.
func bnWithObservers(tb testing.TB, k int) State {
	before := bnSteady(tb, 3).state(1)
	s := before
	for i := 0; i < k; i++ {
		s, _ = Step(s, bnFetchAt(NodeID(1000+i), 1))
	}
	if !reflect.DeepEqual(s, before) {
		tb.Fatalf("%d observer fetches changed the leader's state", k)
	}
	return s
}

// BenchmarkVote: a voter answers a Vote request.
// standard-granted: a steady Follower (voter 3) grants voter 2's standard
// vote for epoch 2 (moves to Unattached in epoch 2, persists the vote).
// prevote-granted: voter 3, whose fetch timer fired (Prospective in epoch
// 1, after its rank's wait), grants voter 2's pre-vote. prevote-rejected: a steady Follower that
// has fetched rejects it (KIP-996).
func BenchmarkVote(b *testing.B) {
	c := bnSteady(b, 3)
	follower := c.state(3)
	// Its fetch timer fires: T_f passed (voter 3 then waits its rank's
	// offset after voter 2, D78), then the offset.
	waiting := bnMust(b, follower, FetchTimeout{}, func(s State, _ []Action) bool { return s.Role() == Follower })
	prospective := bnMust(b, waiting, FetchTimeout{}, func(s State, _ []Action) bool { return s.Role() == Prospective })
	standard := ReceiveVoteRequest{From: 2, VoterID: 3, CandidateEpoch: 2, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 1, Epoch: 1}}
	pre := ReceiveVoteRequest{From: 2, VoterID: 3, CandidateEpoch: 1, Candidate: 2, CandidateLogEnd: LogEnd{Offset: 1, Epoch: 1}, PreVote: true}
	granted := func(want bool) func(State, []Action) bool {
		return func(_ State, acts []Action) bool {
			for _, a := range acts {
				if r, ok := a.(SendVoteResponse); ok {
					return r.Error == ErrNone && r.VoteGranted == want
				}
			}
			return false
		}
	}
	for _, api := range bnAPIs {
		b.Run("kind=standard-granted/api="+api, func(b *testing.B) {
			bnRun(b, api, follower, standard, func(s State, acts []Action) bool {
				v, ok := s.VotedKey()
				return ok && v.ID == 2 && s.Epoch() == 2 && granted(true)(s, acts)
			})
		})
		b.Run("kind=prevote-granted/api="+api, func(b *testing.B) {
			bnRun(b, api, prospective, pre, granted(true))
		})
		b.Run("kind=prevote-rejected/api="+api, func(b *testing.B) {
			bnRun(b, api, follower, pre, granted(false))
		})
	}
}

// BenchmarkBeginQuorumEpoch: a steady Follower handles BeginQuorumEpoch.
// same-leader: its leader re-sends it (answer only); new-epoch: voter 2
// announces epoch 2 (persist, follow, first fetch, answer).
func BenchmarkBeginQuorumEpoch(b *testing.B) {
	c := bnSteady(b, 3)
	follower := c.state(3)
	same := ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 3}
	next := ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 2, VoterID: 3}
	for _, api := range bnAPIs {
		b.Run("kind=same-leader/api="+api, func(b *testing.B) {
			bnRun(b, api, follower, same, func(s State, acts []Action) bool {
				return s.Leader() == 1 && len(acts) == 1 && bnCount[SendBeginQuorumEpochResponse](acts) == 1
			})
		})
		b.Run("kind=new-epoch/api="+api, func(b *testing.B) {
			bnRun(b, api, follower, next, func(s State, acts []Action) bool {
				return s.Leader() == 2 && s.Epoch() == 2 && bnCount[SendFetch](acts) == 1 && bnCount[Persist](acts) == 1
			})
		})
	}
}

// BenchmarkIdleTimeout: timeout events that change nothing (a timer the
// role does not own). Budget: 0 allocations.
func BenchmarkIdleTimeout(b *testing.B) {
	c := bnSteady(b, 3)
	leader, follower := c.state(1), c.state(2)
	cases := []struct {
		name string
		s    State
		e    Event
	}{
		{"ElectionTimeout/role=Leader", leader, ElectionTimeout{}},
		{"ElectionTimeout/role=Follower", follower, ElectionTimeout{}},
		{"FetchTimeout/role=Leader", leader, FetchTimeout{}},
		{"CheckQuorumTimeout/role=Follower", follower, CheckQuorumTimeout{}},
		{"BeginQuorumEpochTimeout/role=Follower", follower, BeginQuorumEpochTimeout{}},
	}
	for _, tc := range cases {
		for _, api := range bnAPIs {
			tc := tc
			b.Run(tc.name+"/api="+api, func(b *testing.B) {
				bnRun(b, api, tc.s, tc.e, func(_ State, acts []Action) bool { return len(acts) == 0 })
			})
		}
	}
}

// BenchmarkLogAppended: a steady 3-voter leader's log grows by 10 records
// in its epoch (no high-watermark change: the followers have not fetched).
func BenchmarkLogAppended(b *testing.B) {
	leader := bnSteady(b, 3).state(1)
	for _, api := range bnAPIs {
		b.Run("role=Leader/api="+api, func(b *testing.B) {
			bnRun(b, api, leader, LogAppended{End: LogEnd{Offset: 11, Epoch: 1}}, func(s State, acts []Action) bool {
				return s.LogEnd().Offset == 11 && len(acts) == 0
			})
		})
	}
}

// BenchmarkElection: a fresh n-voter cluster (NewState for every voter,
// empty logs) elects voter 1 when its election timer fires: pre-vote, vote,
// BeginQuorumEpoch, the LeaderChange record fetched and committed, and
// every follower told the high watermark. Everything runs in the
// bnCluster message loop; the cluster's construction is timed too.
func BenchmarkElection(b *testing.B) {
	for _, n := range []int{3, 5} {
		for _, api := range bnAPIs {
			b.Run(fmt.Sprintf("voters=%d/api=%s", n, api), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					c := bnNewCluster(b, n)
					c.alloc, c.inPlace = api == "Step", api == "StepIn"
					c.bnElect(b)
				}
			})
		}
	}
}
