package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Node runs one replica: one goroutine owns its kraft.State, takes every
// input (messages, timer firings, completed flushes, client calls) from
// channels, steps it, and carries out the actions in order as the README's
// host contract says. Its methods are safe for concurrent use.
type Node struct {
	// timersLive counts the timers armed and neither fired nor stopped;
	// timersMax is the most there were at once (tests read them). First in
	// the struct: atomic 64-bit words must be aligned.
	timersLive, timersMax int64

	cfg   Config
	local kraft.ReplicaKey

	calls    chan func()   // client calls, run by the loop
	done     chan struct{} // closed when the loop has stopped
	stopOnce sync.Once
	stop     chan struct{}

	mu  sync.Mutex // guards err and commit progress for the applier
	err error

	// Internal wake-ups (timer firings, completed flushes, snapshots
	// taken) go to the loop apart from calls: a callback appends its
	// function to internal and signals wake, which holds one signal, so
	// it never waits and never takes a slot a client call needs.
	internalMu sync.Mutex
	internal   []func()
	wake       chan struct{}

	// Loop-owned.
	st        kraft.State
	buf       kraft.Buffer // the actions of the step being carried out
	queue     []inbound    // host events owed to the state, stepped before any input
	cur       *Message     // the request being stepped, for its response
	noPark    bool         // the request being stepped was parked: answer now
	corr      uint64
	timerGen  [kraft.VoterChangeTimer + 1]uint64
	timers    [kraft.VoterChangeTimer + 1]*time.Timer // the latest arming of each kraft timer
	inflight  map[reqKey]*request
	lastFetch *Message // the latest Fetch request sent, re-sent on retries
	bootNext  int      // round robin over bootstrap voters for To: NoNode
	parked    []*parkedFetch
	longPolls int // parked Fetches answered when their wait was up
	flushing  bool
	waiters   []*waiter
	hwm       int64
	resigned  bool // Shutdown: no election or fetch timeouts delivered
	leaderCh  []chan struct{}
	sentFetch bool                    // a Fetch or FetchSnapshot went out during the step
	chunk     []byte                  // the snapshot bytes of the response being stepped
	partial   *storage.SnapshotWriter // the snapshot being downloaded
	installed int                     // snapshots installed from the leader
	taken     int                     // snapshots taken and reported
	// served is when the loop last served a FetchSnapshot chunk of each
	// snapshot: one served within the fetch timeout is kept while newer
	// ones are taken (snapshotTaken). Entries go with their snapshot.
	served map[kraft.LogEnd]time.Time
	now    func() time.Time // the clock of served; time.Now but in tests
	// cleanTimer runs clean again when a download's hold on the log start
	// lapses; nil when none is armed.
	cleanTimer *time.Timer

	// Dynamic voter sets (voters.go).
	vsets           []voterSetAt                // the voter sets in the log, as the state's VoterSets
	boot            []Voter                     // the bootstrap checkpoint's set; read-only after Start
	static          bool                        // a static voter set: no VotersRecords, no voter set in snapshots
	peerAddrs       map[kraft.NodeID]string     // the addresses given to the transport
	changeEndpoints map[kraft.ReplicaKey]string // the endpoints of voters being added or updated
	voterCalls      map[uint64]*voterCall       // client voter changes by Ref
	nextRef         uint64

	// Applier.
	commitMu   sync.Mutex
	commitCond *sync.Cond
	commitHWM  int64
	restore    *kraft.LogEnd // a snapshot to hand to Restore before any later record
	applierOut chan struct{}
}

// inbound is a message or a host event waiting to be stepped.
type inbound struct {
	msg    *Message
	ev     kraft.Event
	noPark bool // a parked Fetch stepped again: answer now
}

// parkedFetch is a Fetch held until the leader has news or its timer
// (FetchMaxWait) fires.
type parkedFetch struct {
	msg   Message
	timer *time.Timer
}

type reqKey struct {
	to   kraft.NodeID
	kind string
}

type request struct {
	corr  uint64
	msg   Message
	timer *time.Timer
}

type waiter struct {
	end   int64 // the offset after the last appended record
	epoch kraft.Epoch
	ch    chan error
}

// Record payloads carry a one-byte type: data records from Append, and
// the control records kraft asks for (LeaderChange, VotersRecord: its
// voter set as encodeVoters writes it). Kafka keeps control records in the
// same log; OnCommit leaves them out.
const (
	recordData         byte = 0
	recordLeaderChange byte = 1
	recordVoters       byte = 2
)

// Start opens the replica: it reads the quorum-state record, rebuilds the
// state from it and the log with kraft.NewState (Kafka's startup rules),
// and starts the loop. The node owns cfg.Log and cfg.Transport from now on.
func Start(cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rec, err := cfg.Records.Read()
	if err != nil {
		return nil, fmt.Errorf("node: reading the quorum state: %w", err)
	}
	ls, err := recoverLog(cfg.Log, cfg.Snapshots)
	if err != nil {
		return nil, err
	}
	boot, err := bootstrapVoters(cfg)
	if err != nil {
		return nil, err
	}
	static := len(cfg.Kraft.Voters) > 0 && boot == nil
	vsets, err := recoverVoters(cfg.Log, cfg.Snapshots, boot, static, cfg.FetchMaxBytes)
	if err != nil {
		return nil, err
	}
	ls.VoterSets = keySets(vsets)
	st, acts, err := kraft.NewState(cfg.Kraft, rec, ls)
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg:        cfg,
		local:      cfg.Kraft.Local,
		calls:      make(chan func(), 64),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		stop:       make(chan struct{}),
		st:         st,
		inflight:   map[reqKey]*request{},
		hwm:        -1,
		commitHWM:  -1,
		applierOut: make(chan struct{}),
		served:     map[kraft.LogEnd]time.Time{},
		now:        time.Now,

		boot:            boot,
		static:          static,
		peerAddrs:       map[kraft.NodeID]string{},
		changeEndpoints: map[kraft.ReplicaKey]string{},
		voterCalls:      map[uint64]*voterCall{},
	}
	for _, s := range vsets {
		n.addVoterSet(s.offset, s.voters)
	}
	n.commitCond = sync.NewCond(&n.commitMu)
	// The application starts from the latest snapshot, then takes the
	// records after it. The applier restores it before anything else
	// runs: a snapshot installed from the leader, which deletes the older
	// snapshots, comes after it, as Restore's contract says.
	var latest *kraft.LogEnd
	if id, ok := st.LatestSnapshot(); ok && id.Offset > 0 {
		latest = &id
	}
	restored := make(chan error, 1)
	go n.applier(latest, restored)
	if err := <-restored; err != nil {
		return nil, err
	}
	cfg.Logf("node %d: started %v", n.local.ID, st)
	n.carry(acts)
	n.drain()
	n.maybeFlush()
	go n.run()
	return n, nil
}

// run is the loop.
func (n *Node) run() {
	defer close(n.done)
	inbox := n.cfg.Transport.Inbox()
	for {
		if n.Err() != nil {
			return
		}
		select {
		case <-n.stop:
			return
		case m, ok := <-inbox:
			if !ok {
				n.fail(errors.New("node: transport closed"))
				return
			}
			n.onMessage(m, false)
		case f := <-n.calls:
			f()
		case <-n.wake:
			n.runInternal()
		}
		n.drain()
		n.maybeFlush()
	}
}

// internalCall runs f on the loop, after the input being handled. It
// never blocks (timer callbacks, the flusher and the applier call it);
// after the loop stopped, f never runs.
func (n *Node) internalCall(f func()) {
	n.internalMu.Lock()
	n.internal = append(n.internal, f)
	n.internalMu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default: // a wake-up is pending: it runs f too
	}
}

// runInternal runs the functions internalCall queued.
func (n *Node) runInternal() {
	n.internalMu.Lock()
	fs := n.internal
	n.internal = nil
	n.internalMu.Unlock()
	for _, f := range fs {
		if n.Err() != nil {
			return
		}
		f()
		n.drain()
	}
}

// post runs f on the loop; it gives up when the node has stopped.
func (n *Node) post(f func()) bool {
	select {
	case n.calls <- f:
		return true
	case <-n.done:
		return false
	}
}

// call runs f on the loop and waits for it.
func (n *Node) call(f func()) error {
	ran := make(chan struct{})
	if !n.post(func() { f(); close(ran) }) {
		return n.stoppedErr()
	}
	select {
	case <-ran:
		return nil
	case <-n.done:
		return n.stoppedErr()
	}
}

func (n *Node) stoppedErr() error {
	if err := n.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrStopped, err) //nolint:errorlint // Go 1.18 takes one %w; callers test ErrStopped
	}
	return ErrStopped
}

// Err is the error that stopped the node (a Fault, an I/O error), or nil.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Done is closed when the node has stopped (Close, or an error).
func (n *Node) Done() <-chan struct{} { return n.done }

func (n *Node) fail(err error) {
	n.mu.Lock()
	if n.err == nil {
		n.err = err
		n.cfg.Logf("node %d: stopping: %v", n.local.ID, err)
	}
	n.mu.Unlock()
	n.stopOnce.Do(func() { close(n.stop) })
}

// step feeds an event to the state and carries out the actions.
func (n *Node) step(e kraft.Event) {
	if n.Err() != nil {
		return
	}
	before := n.st
	// carry never steps: it queues what it owes the state, so the
	// actions in n.buf stay valid while it runs.
	next, acts := kraft.StepInto(&n.buf, n.st, e)
	for _, a := range acts {
		if f, ok := a.(kraft.Fault); ok {
			n.fail(fmt.Errorf("node: fault on %T: %s", e, f.Reason))
			return
		}
	}
	n.st = next
	n.carry(acts)
	if n.st.Role() == kraft.Leader && (n.st.LogEnd() != before.LogEnd() || n.st.HighWatermark() != before.HighWatermark()) {
		n.wakeParked()
	}
}

// drain steps the host events owed to the state (write reports, parked
// fetches): they go before any new input.
func (n *Node) drain() {
	for len(n.queue) > 0 && n.Err() == nil {
		in := n.queue[0]
		n.queue = n.queue[1:]
		if in.msg != nil {
			n.onMessage(*in.msg, in.noPark)
			continue
		}
		n.step(in.ev)
	}
}

// onMessage takes a message from the transport (or a parked Fetch).
func (n *Node) onMessage(m Message, noPark bool) {
	if m.To != n.local.ID || m.Event == nil && !m.Response && !m.APIVersions {
		return
	}
	if m.Response {
		n.onResponse(m)
		return
	}
	if m.APIVersions {
		n.answerAPIVersions(m)
		return
	}
	switch m.Event.(type) {
	case kraft.ReceiveVoteRequest, kraft.ReceiveBeginQuorumEpoch, kraft.ReceiveEndQuorumEpoch,
		kraft.ReceiveFetch, kraft.ReceiveFetchSnapshot:
	case kraft.ReceiveAddVoter, kraft.ReceiveRemoveVoter:
		n.onVoterRequest(m)
		return
	default:
		return // not a request
	}
	if fs, ok := m.Event.(kraft.ReceiveFetchSnapshot); ok {
		// The size is the serving host's to look up (D44).
		fs.Size = n.snapshotSize(fs.Snapshot)
		m.Event = fs
	}
	n.cur = &m
	n.noPark = noPark
	n.step(m.Event)
	n.cur = nil
	n.noPark = false
}

// onResponse matches a response with the request in flight and steps it;
// a response to no request in flight (stale, duplicated, from before the
// latest role change) is dropped.
func (n *Node) onResponse(m Message) {
	var key reqKey
	var found *request
	for k, r := range n.inflight {
		if k.to == m.From && r.corr == m.Corr {
			key, found = k, r
			break
		}
	}
	if found == nil {
		return
	}
	n.stopTimer(found.timer)
	delete(n.inflight, key)
	if m.Event == nil {
		return // an answer without an event (D28)
	}
	if sr, ok := m.Event.(kraft.ReceiveFetchSnapshotResponse); ok {
		n.onFetchSnapshotResponse(sr, m.Chunk)
		return
	}
	resp, isFetch := m.Event.(kraft.ReceiveFetchResponse)
	if !isFetch {
		n.step(m.Event)
		return
	}
	if len(m.Records) > 0 && n.st.AcceptsRecords(resp) {
		if m.Records[0].Offset != n.cfg.Log.End().Offset {
			// The log moved since the fetch was sent: fetch again.
			n.retryFetch()
			return
		}
		if _, err := n.cfg.Log.AppendEntries(m.Records...); err != nil {
			n.fail(fmt.Errorf("node: appending fetched records: %w", err))
			return
		}
		n.stepFetched(m.Records)
	}
	n.step(resp)
	if resp.Error != kraft.ErrNone {
		// D25: the state sends no new Fetch after an error answer; the
		// host re-sends the latest one after its backoff.
		n.retryFetch()
	}
}

// retryFetch re-sends the latest Fetch after the retry backoff, unless a
// newer Fetch goes out first.
func (n *Node) retryFetch() {
	last := n.lastFetch
	if last == nil {
		return
	}
	n.afterFunc(n.cfg.RetryBackoff, func() {
		if n.lastFetch == last && n.inflight[reqKey{last.To, "fetch"}] == nil && n.fetching() {
			n.sendRequest(*last, "fetch")
		}
	})
}

// fetching: the role fetches (a Follower, or an observer searching).
func (n *Node) fetching() bool {
	r := n.st.Role()
	return r == kraft.Follower || (r == kraft.Unattached && !n.st.IsVoter())
}

// afterFunc runs f on the loop after d, unless the timer is stopped
// first with stopTimer.
func (n *Node) afterFunc(d time.Duration, f func()) *time.Timer {
	live := atomic.AddInt64(&n.timersLive, 1)
	for {
		max := atomic.LoadInt64(&n.timersMax)
		if live <= max || atomic.CompareAndSwapInt64(&n.timersMax, max, live) {
			break
		}
	}
	return time.AfterFunc(d, func() {
		atomic.AddInt64(&n.timersLive, -1)
		n.internalCall(f)
	})
}

// stopTimer stops a timer afterFunc armed (nil: none). One that fired
// already may still run its function: each checks that it is current.
func (n *Node) stopTimer(t *time.Timer) {
	if t != nil && t.Stop() {
		atomic.AddInt64(&n.timersLive, -1)
	}
}

// carry carries out one step's actions in order.
func (n *Node) carry(acts []kraft.Action) {
	for _, a := range acts {
		if n.Err() != nil {
			return
		}
		switch a := a.(type) {
		case kraft.Persist:
			if err := n.cfg.Records.Write(a.Record); err != nil {
				n.fail(fmt.Errorf("node: persisting %+v: %w", a.Record, err))
				return
			}
		case kraft.SendVoteRequest:
			n.send(a, "vote")
		case kraft.SendBeginQuorumEpoch:
			n.send(a, "begin")
		case kraft.SendEndQuorumEpoch:
			n.send(a, "end")
		case kraft.SendFetch:
			n.send(a, "fetch")
		case kraft.SendFetchSnapshot:
			// One request of the two kinds in flight: a FetchSnapshot
			// takes a Fetch's place, with its retries.
			n.send(a, "fetch")
		case kraft.SendVoteResponse, kraft.SendBeginQuorumEpochResponse, kraft.SendEndQuorumEpochResponse:
			n.respond(a, nil, nil)
		case kraft.SendFetchResponse:
			n.fetchResponse(a)
		case kraft.SendFetchSnapshotResponse:
			n.fetchSnapshotResponse(a)
		case kraft.WriteSnapshotChunk:
			if err := n.writeChunk(a); err != nil {
				n.fail(err)
				return
			}
		case kraft.InstallSnapshot:
			if err := n.install(a.Snapshot); err != nil {
				n.fail(err)
				return
			}
			if err := n.installedVoters(a.Snapshot); err != nil {
				n.fail(err)
				return
			}
		case kraft.TruncateLog:
			if err := n.cfg.Log.Truncate(a.To); err != nil {
				n.fail(fmt.Errorf("node: truncating to %d: %w", a.To, err))
				return
			}
			n.truncateVoterSets(a.To)
		case kraft.AppendLeaderChange:
			data, _ := json.Marshal(a)
			records := [][]byte{append([]byte{recordLeaderChange}, data...)}
			var vs []Voter
			if a.VotersRecord {
				// The bootstrap set is never replicated: the leader writes
				// it after the LeaderChange record.
				vs = n.votersWithEndpoints(a.Voters, nil)
				records = append(records, votersRecord(vs))
			}
			end, err := n.write(a.Epoch, records...)
			if err != nil {
				return // write stopped the node
			}
			if a.VotersRecord {
				n.queue = append(n.queue, inbound{ev: kraft.VotersAppended{Offset: end.Offset - 1, Voters: a.Voters}})
				n.addVoterSet(end.Offset-1, vs)
			}
		case kraft.AppendVoters:
			n.appendVoters(a)
		case kraft.SendAPIVersions:
			n.sendAPIVersions(a.To)
		case kraft.SendVoterChangeResponse:
			n.voterChangeResponse(a)
		case kraft.SendVoterChange:
			n.sendVoterChange(a)
		case kraft.HighWatermarkChanged:
			n.hwm = a.HighWatermark
			n.completeWaiters()
			n.commitMu.Lock()
			n.commitHWM = a.HighWatermark
			n.commitCond.Broadcast()
			n.commitMu.Unlock()
		case kraft.ResetTimer:
			// One timer per kind: the new arming replaces the pending one,
			// which is stopped (a firing already on its way is dropped by
			// its generation).
			n.timerGen[a.Timer]++
			gen, t := n.timerGen[a.Timer], a.Timer
			n.stopTimer(n.timers[t])
			n.timers[t] = n.afterFunc(a.After, func() { n.fire(t, gen) })
		case kraft.StopTimer:
			n.timerGen[a.Timer]++
			n.stopTimer(n.timers[a.Timer])
			n.timers[a.Timer] = nil
		case kraft.RoleChanged:
			n.onRoleChanged(a)
		case kraft.Fault:
			// step stops the node before carrying out a faulted step.
		}
	}
}

// fire delivers a timer's timeout if it is the latest arming.
func (n *Node) fire(t kraft.Timer, gen uint64) {
	if n.timerGen[t] != gen {
		return
	}
	if n.resigned && (t == kraft.ElectionTimer || t == kraft.FetchTimer) {
		return // Shutdown: a resigned leader waits for its successor (D27)
	}
	if e := t.Timeout(); e != nil {
		n.step(e)
	}
}

// send sends a request, replacing any request of the same kind in flight
// to the same replica (at most one per destination and kind, as Kafka's
// RequestManager keeps).
func (n *Node) send(a kraft.Action, kind string) {
	to, ev, ok := kraft.Deliver(n.local, a)
	if !ok {
		return
	}
	m := Message{From: n.local.ID, To: to, Event: ev}
	if f, isFetch := a.(kraft.SendFetch); isFetch {
		m.HighWatermark = f.HighWatermark
		if to == kraft.NoNode {
			m.To = n.bootstrapVoter()
		}
	}
	n.sendRequest(m, kind)
}

func (n *Node) bootstrapVoter() kraft.NodeID {
	voters := n.st.Voters()
	if len(voters) == 0 {
		// An observer that knows no voter yet (a new replica of a dynamic
		// quorum): Config.BootstrapServers.
		if len(n.cfg.BootstrapServers) == 0 {
			return kraft.NoNode
		}
		id := n.cfg.BootstrapServers[n.bootNext%len(n.cfg.BootstrapServers)]
		n.bootNext++
		return id
	}
	for range voters {
		v := voters[n.bootNext%len(voters)]
		n.bootNext++
		if v.ID != n.local.ID {
			return v.ID
		}
	}
	return voters[0].ID
}

// sendRequest sends m with a fresh correlation id and arms its timeout:
// without an answer in time, it goes again after the retry backoff
// (BeginQuorumEpoch is re-sent by the leader's own timer instead).
func (n *Node) sendRequest(m Message, kind string) {
	key := reqKey{m.To, kind}
	if old := n.inflight[key]; old != nil {
		n.stopTimer(old.timer)
	}
	n.corr++
	m.Corr = n.corr
	r := &request{corr: m.Corr, msg: m}
	r.timer = n.afterFunc(n.cfg.RequestTimeout, func() {
		if n.inflight[key] != r {
			return
		}
		delete(n.inflight, key)
		if kind == "begin" {
			return
		}
		if kind == "apiversions" {
			// No answer in time fails the AddRaftVoter waiting for it.
			n.step(kraft.ReceiveAPIVersionsResponse{From: m.To, Error: kraft.ErrRequestTimedOut})
			return
		}
		n.afterFunc(n.cfg.RetryBackoff, func() {
			if n.inflight[key] == nil && (kind != "fetch" || (n.lastFetch != nil && n.lastFetch.Corr == r.corr && n.fetching())) {
				n.sendRequest(r.msg, kind)
			}
		})
	})
	n.inflight[key] = r
	if kind == "fetch" {
		c := m
		n.lastFetch = &c
		n.sentFetch = true
	}
	n.cfg.Transport.Send(m)
}

// respond answers the request being stepped, with a Fetch response's
// records or a FetchSnapshot response's chunk.
func (n *Node) respond(a kraft.Action, records []storage.Entry, chunk []byte) {
	to, ev, _ := kraft.Deliver(n.local, a)
	if n.cur == nil || n.cur.From != to {
		return
	}
	if sr, ok := ev.(kraft.ReceiveFetchSnapshotResponse); ok {
		sr.Bytes = int64(len(chunk))
		ev = sr
	}
	n.cfg.Transport.Send(Message{From: n.local.ID, To: to, Corr: n.cur.Corr, Response: true, Event: ev, Records: records, Chunk: chunk})
}

// fetchResponse answers a Fetch: records from the written log at the fetch
// offset, up to the state's log end and FetchMaxBytes; a caught-up Fetch
// with nothing new is parked up to FetchMaxWait (Kafka's long poll).
func (n *Node) fetchResponse(a kraft.SendFetchResponse) {
	req := n.cur
	if req == nil || req.From != a.To {
		return
	}
	f, _ := req.Event.(kraft.ReceiveFetch)
	var records []storage.Entry
	// Records only with a valid position: a diverging or snapshot answer
	// carries none (and a snapshot answer's fetch offset may be below the
	// log start).
	valid := a.Error == kraft.ErrNone && a.Diverging == nil && a.Snapshot == nil
	if valid && f.FetchOffset < n.st.LogEnd().Offset {
		rs, err := n.readShared(f.FetchOffset, n.cfg.FetchMaxBytes)
		if err != nil {
			n.fail(fmt.Errorf("node: reading the log at %d: %w", f.FetchOffset, err))
			return
		}
		records = rs
	}
	if len(records) == 0 && valid && a.HighWatermark <= req.HighWatermark &&
		!n.noPark && n.st.Role() == kraft.Leader {
		p := &parkedFetch{msg: *req}
		n.parked = append(n.parked, p)
		p.timer = n.afterFunc(n.cfg.FetchMaxWait, func() { n.unpark(p) })
		return
	}
	n.respond(a, records, nil)
}

// readShared reads the log for a Fetch response, without copying the
// payloads when the log can share them (storage.SharedReader): the
// transport encodes the response in Send and never modifies them.
func (n *Node) readShared(from int64, maxBytes int) ([]storage.Entry, error) {
	if sr, ok := n.cfg.Log.(storage.SharedReader); ok {
		return sr.ReadShared(from, maxBytes)
	}
	return n.cfg.Log.Read(from, maxBytes)
}

// unpark steps a parked Fetch again and answers it now (its timer
// fired).
func (n *Node) unpark(pf *parkedFetch) {
	for i, p := range n.parked {
		if p == pf {
			n.parked = append(n.parked[:i:i], n.parked[i+1:]...)
			n.queue = append(n.queue, inbound{msg: &pf.msg, noPark: true})
			n.longPolls++
			return
		}
	}
}

// wakeParked steps every parked Fetch again (the leader's log end or high
// watermark moved, or it stopped leading), and stops their timers.
func (n *Node) wakeParked() {
	for _, p := range n.parked {
		n.stopTimer(p.timer)
		n.queue = append(n.queue, inbound{msg: &p.msg, noPark: true})
	}
	n.parked = nil
}

// write appends records of one epoch to the log and reports them. The
// records are the node's own, made for the write and never touched again,
// so a log that can keep them without a copy (storage.OwningAppender)
// does.
func (n *Node) write(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error) {
	before := n.cfg.Log.End()
	var end kraft.LogEnd
	var err error
	if oa, ok := n.cfg.Log.(storage.OwningAppender); ok {
		end, err = oa.AppendOwned(epoch, records...)
	} else {
		end, err = n.cfg.Log.Append(epoch, records...)
	}
	if err != nil {
		n.fail(fmt.Errorf("node: appending to the log: %w", err))
		return before, err
	}
	n.queue = append(n.queue, inbound{ev: kraft.LogAppended{End: end}})
	return end, nil
}

// maybeFlush starts a flush of what was written since the last one (group
// commit: one Sync for every write made while the previous one ran).
func (n *Node) maybeFlush() {
	if n.flushing || n.Err() != nil || n.cfg.Log.Flushed() >= n.cfg.Log.End().Offset {
		return
	}
	n.flushing = true
	go func() {
		err := n.cfg.Log.Sync()
		n.internalCall(func() {
			n.flushing = false
			if err != nil {
				n.fail(fmt.Errorf("node: syncing the log: %w", err))
				return
			}
			// Read here, on the loop: a truncation since the Sync has
			// already lowered it.
			if f := n.cfg.Log.Flushed(); f > n.st.FlushedOffset() {
				n.queue = append(n.queue, inbound{ev: kraft.LogFlushed{Offset: f}})
			}
		})
	}()
}

func (n *Node) onRoleChanged(a kraft.RoleChanged) {
	n.cfg.Logf("node %d: %v -> %v in epoch %d, leader %d (%s)", n.local.ID, a.From, a.To, a.Epoch, a.LeaderID, a.Reason)
	// Kafka's resetConnections: responses to earlier requests are dropped.
	for k, r := range n.inflight {
		n.stopTimer(r.timer)
		delete(n.inflight, k)
	}
	if a.From == kraft.Leader {
		n.wakeParked()
		for _, w := range n.waiters {
			w.ch <- ErrLeadershipLost
		}
		n.waiters = nil
	}
	if a.LeaderID != kraft.NoNode && a.LeaderID != n.local.ID {
		for _, ch := range n.leaderCh {
			close(ch)
		}
		n.leaderCh = nil
	}
}

// completeWaiters answers the appends the high watermark now covers.
func (n *Node) completeWaiters() {
	kept := n.waiters[:0]
	for _, w := range n.waiters {
		if w.end > n.hwm {
			kept = append(kept, w)
			continue
		}
		if e, ok := n.cfg.Log.EpochFor(w.end - 1); ok && e == w.epoch {
			w.ch <- nil
		} else {
			w.ch <- ErrLeadershipLost
		}
	}
	n.waiters = kept
}

// Append appends records at the leader and returns the offset of the last
// one once it is committed (the high watermark passed it). It fails with a
// *NotLeaderError when the replica is not the leader, with
// ErrLeadershipLost when leadership is lost first, and with ctx's error.
func (n *Node) Append(ctx context.Context, records ...[]byte) (int64, error) {
	if len(records) == 0 {
		return 0, errors.New("node: no records")
	}
	ch := make(chan error, 1)
	var last int64
	var notLeader error
	err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			notLeader = &NotLeaderError{Leader: leaderOrNone(n.st), Epoch: n.st.Epoch()}
			return
		}
		// The one copy of the caller's records: with their type bytes, in
		// one block (the log may keep it, OwningAppender).
		size := len(records)
		for _, r := range records {
			size += len(r)
		}
		block := make([]byte, 0, size)
		data := make([][]byte, len(records))
		for i, r := range records {
			start := len(block)
			block = append(append(block, recordData), r...)
			data[i] = block[start:len(block):len(block)]
		}
		end, err := n.write(n.st.Epoch(), data...)
		if err != nil {
			notLeader = err
			return
		}
		last = end.Offset - 1
		n.waiters = append(n.waiters, &waiter{end: end.Offset, epoch: end.Epoch, ch: ch})
		n.drain()
		n.maybeFlush()
	})
	if err != nil {
		return 0, err
	}
	if notLeader != nil {
		return 0, notLeader
	}
	select {
	case err := <-ch:
		return last, err
	case <-ctx.Done():
		return last, ctx.Err()
	case <-n.done:
		return last, n.stoppedErr()
	}
}

func leaderOrNone(s kraft.State) kraft.NodeID {
	if l := s.Leader(); l != s.Local().ID {
		return l
	}
	return kraft.NoNode
}

// Resign makes the leader give up leadership gracefully (kraft.Resign);
// it fails with a *NotLeaderError on any other role.
func (n *Node) Resign() error {
	var res error
	if err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			res = &NotLeaderError{Leader: leaderOrNone(n.st), Epoch: n.st.Epoch()}
			return
		}
		n.step(kraft.Resign{})
	}); err != nil {
		return err
	}
	return res
}

// Shutdown stops the node gracefully. A leader first hands leadership
// over (docs/design.md D27): it resigns, stops taking election and fetch
// timeouts, and waits until another replica leads or ctx is done. Then it
// closes the node.
func (n *Node) Shutdown(ctx context.Context) error {
	ch := make(chan struct{})
	leading := false
	if err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			return
		}
		leading = true
		n.resigned = true
		n.leaderCh = append(n.leaderCh, ch)
		n.step(kraft.Resign{})
	}); err != nil {
		return n.Close()
	}
	if leading {
		select {
		case <-ch:
		case <-ctx.Done():
		case <-n.done:
		}
	}
	return n.Close()
}

// Close stops the node at once, syncs and closes the log and closes the
// transport. It returns the error that stopped the node, if any.
func (n *Node) Close() error {
	n.stopOnce.Do(func() { close(n.stop) })
	<-n.done
	n.commitMu.Lock()
	n.commitHWM = stopApplier
	n.commitCond.Broadcast()
	n.commitMu.Unlock()
	<-n.applierOut
	serr := n.cfg.Log.Sync()
	cerr := n.cfg.Log.Close()
	terr := n.cfg.Transport.Close()
	var snerr error
	if n.cfg.Snapshots != nil {
		n.abortDownload()
		snerr = n.cfg.Snapshots.Close()
	}
	if err := n.Err(); err != nil {
		return err
	}
	for _, err := range []error{serr, cerr, terr, snerr} {
		if err != nil && !errors.Is(err, storage.ErrClosed) {
			return err
		}
	}
	return nil
}

// applier hands committed records to OnCommit, in order, from its own
// goroutine so the loop never waits for it. It first restores latest (the
// latest snapshot at Start, if any) and reports on restored, where Start
// waits before it starts the loop: an error there fails Start. A snapshot
// installed later goes to Restore the same way, and the records follow
// from its end; every SnapshotEvery offsets it has the application write
// a snapshot (takeSnapshot).
func (n *Node) applier(latest *kraft.LogEnd, restored chan<- error) {
	defer close(n.applierOut)
	var next, lastSnap int64
	var lastEpoch kraft.Epoch
	blocked := false // the log was reset under the reader: wait for its restore
	// voters is the voter set in force after the records applied, which
	// the snapshots hold (nil: a static voter set).
	voters := n.boot
	if latest != nil {
		vs, err := n.restoreSnapshot(*latest)
		if err != nil {
			restored <- err
			return
		}
		if vs != nil {
			voters = vs
		}
		next, lastEpoch, lastSnap = latest.Offset, latest.Epoch, latest.Offset
	}
	restored <- nil
	for {
		n.commitMu.Lock()
		for n.commitHWM != stopApplier && n.restore == nil && (blocked || n.commitHWM <= next) {
			n.commitCond.Wait()
		}
		hwm, restore := n.commitHWM, n.restore
		n.restore = nil
		n.commitMu.Unlock()
		if hwm == stopApplier {
			return
		}
		if restore != nil {
			vs, err := n.restoreSnapshot(*restore)
			if err != nil {
				n.fail(err)
				return
			}
			if vs != nil {
				voters = vs
			}
			next, lastEpoch, lastSnap, blocked = restore.Offset, restore.Epoch, restore.Offset, false
			continue
		}
		entries, shared, err := n.readCommitted(next)
		if errors.Is(err, storage.ErrBelowStart) {
			// An installed snapshot reset the log; its restore follows.
			blocked = true
			continue
		}
		if err != nil {
			if errors.Is(err, storage.ErrClosed) {
				return
			}
			n.fail(fmt.Errorf("node: reading committed records: %w", err))
			return
		}
		var out []Record
		for _, e := range entries {
			if e.Offset >= hwm {
				break
			}
			next, lastEpoch = e.Offset+1, e.Epoch
			if len(e.Data) > 0 && e.Data[0] == recordData {
				data := e.Data[1:]
				if shared {
					data = make([]byte, len(e.Data)-1)
					copy(data, e.Data[1:])
				}
				out = append(out, Record{Offset: e.Offset, Epoch: e.Epoch, Data: data})
			}
			if isVotersRecord(e.Data) {
				vs, err := decodeVoters(e.Data[1:])
				if err != nil {
					n.fail(fmt.Errorf("node: the committed VotersRecord at %d: %w", e.Offset, err))
					return
				}
				voters = vs
			}
		}
		if len(out) > 0 && n.cfg.OnCommit != nil {
			n.cfg.OnCommit(out)
		}
		if n.cfg.Snapshot != nil && next-lastSnap >= n.cfg.SnapshotEvery {
			lastSnap = next
			n.takeSnapshot(kraft.LogEnd{Offset: next, Epoch: lastEpoch}, voters)
		}
	}
}

// readCommitted reads the log from next on for the applier; shared says
// that the entries' Data are the log's own (storage.SharedReader), so the
// applier copies the payloads it hands to OnCommit and no others. A
// copying Read would also copy the records past the high watermark, which
// the applier reads again once they commit: under many concurrent appends
// the log end runs tens of records ahead of the high watermark, and most
// of the bytes copied were thrown away.
func (n *Node) readCommitted(next int64) (entries []storage.Entry, shared bool, err error) {
	if sr, ok := n.cfg.Log.(storage.SharedReader); ok {
		entries, err = sr.ReadShared(next, n.cfg.FetchMaxBytes)
		return entries, true, err
	}
	entries, err = n.cfg.Log.Read(next, n.cfg.FetchMaxBytes)
	return entries, false, err
}

// stopApplier in commitHWM tells the applier to stop.
const stopApplier = -2

// Status is a replica's view of the quorum (Kafka's DescribeQuorum, as
// far as one replica knows it).
type Status struct {
	ID            kraft.NodeID `json:"id"`
	Role          string       `json:"role"`
	Epoch         kraft.Epoch  `json:"epoch"`
	Leader        kraft.NodeID `json:"leader"`
	HighWatermark int64        `json:"high_watermark"`
	LogEnd        int64        `json:"log_end"`
	LogEndEpoch   kraft.Epoch  `json:"log_end_epoch"`
	Flushed       int64        `json:"flushed"`
	// LogStart is the offset of the first record the log holds (0 until a
	// snapshot lets the node delete the records before it).
	LogStart int64 `json:"log_start"`
	// LatestSnapshot is the newest snapshot on disk (its end offset and
	// epoch), nil if none.
	LatestSnapshot *SnapshotID `json:"latest_snapshot,omitempty"`
	// SnapshotsTaken and SnapshotsInstalled count, since Start, the
	// snapshots this node took and the ones it installed from the leader.
	SnapshotsTaken     int `json:"snapshots_taken,omitempty"`
	SnapshotsInstalled int `json:"snapshots_installed,omitempty"`
	// Voters, on the leader: each voter's end offset as the leader counts
	// it (-1 before its first Fetch) and its lag behind the leader's log
	// end.
	Voters []VoterStatus `json:"voters,omitempty"`
	// KRaftVersion is 1 when the voter set lives in the log and can change
	// (KIP-853), 0 for a static voter set.
	KRaftVersion int16 `json:"kraft_version"`
	// VoterSet is the voter set in force as this replica knows it
	// (committed or not), with the endpoints the log holds.
	VoterSet []VoterInfo `json:"voter_set,omitempty"`
	// PendingVoterChange, on the leader, is the AddRaftVoter or
	// RemoveRaftVoter in progress, if any.
	PendingVoterChange string `json:"pending_voter_change,omitempty"`
	// TransportDropped is how many messages the transport dropped since it
	// was made (not encodable, no connection, a full queue), if it counts
	// them (a DropCounter: MemEndpoint, TCPTransport).
	TransportDropped uint64 `json:"transport_dropped,omitempty"`
}

// SnapshotID is a snapshot's id in a Status: its end offset and the epoch
// of the record before it (a kraft.LogEnd).
type SnapshotID struct {
	Offset int64       `json:"offset"`
	Epoch  kraft.Epoch `json:"epoch"`
}

// VoterStatus is one voter's replication progress, as the leader sees it.
type VoterStatus struct {
	ID        kraft.NodeID `json:"id"`
	EndOffset int64        `json:"end_offset"`
	Lag       int64        `json:"lag"`
}

// Status reports the replica's role, epoch, leader, high watermark and
// log, and on the leader each voter's progress.
func (n *Node) Status() (Status, error) {
	var st Status
	err := n.call(func() {
		s := n.st
		st = Status{
			ID: n.local.ID, Role: s.Role().String(), Epoch: s.Epoch(), Leader: s.Leader(),
			HighWatermark: s.HighWatermark(), LogEnd: s.LogEnd().Offset, LogEndEpoch: s.LogEnd().Epoch,
			Flushed: s.FlushedOffset(), LogStart: s.LogStart(),
			SnapshotsTaken: n.taken, SnapshotsInstalled: n.installed,
		}
		if id, ok := s.LatestSnapshot(); ok {
			st.LatestSnapshot = &SnapshotID{Offset: id.Offset, Epoch: id.Epoch}
		}
		st.KRaftVersion, st.VoterSet = s.KRaftVersion(), n.voterInfos()
		if dc, ok := n.cfg.Transport.(DropCounter); ok {
			st.TransportDropped = dc.Dropped()
		}
		if c, _, ok := s.PendingVoterChange(); ok {
			st.PendingVoterChange = fmt.Sprintf("%v %v", c.Kind, c.Voter)
		}
		ends := s.VoterEndOffsets()
		for i, v := range s.Voters() {
			if ends == nil {
				break
			}
			lag := s.LogEnd().Offset - ends[i]
			if ends[i] < 0 {
				lag = s.LogEnd().Offset
			}
			st.Voters = append(st.Voters, VoterStatus{ID: v.ID, EndOffset: ends[i], Lag: lag})
		}
	})
	return st, err
}
