package sim

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
)

// Record is one log record.
type Record struct {
	Epoch   kraft.Epoch `json:"epoch"`
	Payload string      `json:"payload"`
}

// Stats counts what a run did.
type Stats struct {
	// Events is the number of Step calls (every one checked).
	Events int
	// Messages sent, lost and dropped (partition, crashed receiver,
	// unexpected response).
	Messages, Lost, Dropped int
	// Appends is the number of client records appended at a leader.
	Appends int
	// SnapshotsTaken counts the snapshots the hosts wrote (SnapshotCreated),
	// SnapshotsInstalled the downloaded ones they installed
	// (InstallSnapshot).
	SnapshotsTaken, SnapshotsInstalled int
	// VoterChangesCommitted counts the VotersRecords that entered the
	// committed log (with Options.Dynamic; the first leader's copy of the
	// bootstrap set included).
	VoterChangesCommitted int
}

// node is one replica and its simulated host.
type node struct {
	id   kraft.NodeID
	cfg  kraft.Config
	up   bool
	inc  int // incarnation, bumped at every crash
	disk int // disk generation, bumped at every disk loss
	st   kraft.State

	record *kraft.QuorumRecord // durable quorum-state record
	// log is the host's written log, indexed by offset; log[:flushed] is
	// durable and log[:reported] has been reported with LogAppended. The
	// log starts at start: the records below it were deleted (zero
	// values), and the snapshot at start holds them.
	log      []Record
	start    int
	flushed  int
	reported int
	flushAt  bool // a flush is scheduled

	// snaps are the snapshots on disk, oldest first (the first is at the
	// log start when start > 0); partial is the download in progress;
	// hwm is the highest high watermark the state reported in this life
	// (the latest snapshot's end after a restart); snapshotting guards
	// maybeSnapshot against its own steps.
	snaps        []*snapshot
	partial      *partial
	applied      []Record // the records of the latest snapshot, and room after them
	hwm          int64
	snapshotting bool
	installed    int // snapshots installed, over every life

	// bootstrap is the bootstrap checkpoint's voter set (Options.Dynamic),
	// nil without one (a static voter set, a broker, a lost disk);
	// snapVoters is the set of a snapshot just installed, to report.
	bootstrap  []kraft.ReplicaKey
	snapVoters *kraft.VoterSetAt
	// truncated: a TruncateLog was carried out in this step (the checker
	// compares the voter sets after it).
	truncated bool

	timerGen [6]uint64
	// Requests in flight (Vote requests) by correlation id, and the one
	// Fetch in flight.
	inflight  map[uint64]bool
	fetchCorr uint64
	lastFetch kraft.Action // the latest SendFetch or SendFetchSnapshot
	parked    []parked
}

// parked is a Fetch a leader holds (long poll).
type parked struct {
	id   uint64
	req  *message
	resp *message
}

// message is one message on the simulated network.
type message struct {
	from, to kraft.NodeID
	// The incarnations of sender and receiver: a message to an earlier
	// incarnation is dropped (its connection is gone).
	fromInc, toInc int
	event          kraft.Event
	corr           uint64 // request: its id; response: the request's id
	response       bool
	// Fetch requests: the request's high watermark; Fetch responses: the
	// offset the request fetched from and the records carried.
	reqHWM      int64
	fetchOffset int64
	records     []Record
	noPark      bool
	// FetchSnapshot responses: the bytes carried.
	snapData []byte
	// apiVersions: an ApiVersions request, which the addressee's host
	// answers without its state (event is nil).
	apiVersions bool
}

type itemKind uint8

const (
	itemMessage itemKind = iota + 1
	itemTimer
	itemFlush
	itemFetchRetry
	itemParkExpire
	itemClient
	itemOp
)

type item struct {
	at    time.Duration
	seq   uint64
	kind  itemKind
	node  kraft.NodeID
	inc   int
	msg   *message
	timer kraft.Timer
	gen   uint64
	op    Op
}

type queue []*item

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int)       { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x interface{}) { *q = append(*q, x.(*item)) }
func (q *queue) Pop() interface{} {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// Cluster is a simulated KRaft cluster. It is not safe for concurrent use.
type Cluster struct {
	opts   Options
	rng    *rand.Rand
	now    time.Duration
	seq    uint64
	corr   uint64
	q      queue
	nodes  []*node
	voters []kraft.ReplicaKey
	cut    map[[2]kraft.NodeID]bool // blocked directions (from, to)
	// flushDelay is the current maximum flush delay (OpDisk), net the
	// current network (OpNetwork); Options keeps the configured ones,
	// which StopFaults brings back.
	flushDelay time.Duration
	net        Network
	stats      Stats
	check      *Checker
	trace      *json.Encoder
	// traceStarts and traceSteps count the start and step lines written;
	// traceEnded: EndTrace wrote the end record.
	traceStarts, traceSteps int
	traceEnded              bool
	err                     error
	client                  uint64

	// changes are the voter-change requests handled, refs the pending
	// ones' handles (see voters.go); history the committed voter sets.
	changes []VoterChange
	refs    map[uint64]int
	history []VoterSetChange

	// ctx is the message being delivered, for matching responses.
	ctx *message
	// OnStep, if set, is called after every Step with the replica, the
	// event, and the states and actions.
	OnStep func(id kraft.NodeID, e kraft.Event, before, after kraft.State, acts []kraft.Action)
	// OnOp, if set, is called after Apply has carried out an operation
	// (one scheduled with Schedule, or called directly, including those
	// that Apply ignores as meaningless), with At set to the virtual time.
	// Read Up and State to see its effect: a restarted replica's state is
	// the one kraft.NewState built. It is not called once the run has
	// stopped at a violation.
	OnOp func(op Op)
}

// New builds a cluster and starts every replica from an empty disk. If
// trace is not nil, the run is written to it as JSON lines (see Replay).
func New(opts Options, trace io.Writer) (*Cluster, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Cluster{
		opts:       opts,
		rng:        rand.New(rand.NewSource(opts.Seed)),
		cut:        map[[2]kraft.NodeID]bool{},
		flushDelay: opts.FlushDelayMax,
		net:        opts.Network,
	}
	if trace != nil {
		c.trace = json.NewEncoder(trace)
	}
	c.check = newChecker(c)
	inSet := opts.Voters
	if opts.Dynamic {
		inSet = opts.BootstrapVoters
	}
	for i := 0; i < inSet; i++ {
		c.voters = append(c.voters, kraft.ReplicaKey{ID: kraft.NodeID(i), DirectoryID: directoryID(opts, kraft.NodeID(i), 0)})
	}
	if opts.Dynamic {
		c.history = append(c.history, VoterSetChange{Offset: -1, Voters: c.Voters()})
	}
	c.check.committedVoters = c.voters
	c.writeTrace(TraceLine{Kind: "header", Seed: opts.Seed, Options: &opts})
	for i := 0; i < opts.Voters+opts.Observers; i++ {
		id := kraft.NodeID(i)
		cfg := kraft.Config{
			Local:              kraft.ReplicaKey{ID: id, DirectoryID: directoryID(opts, id, 0)},
			ClusterID:          clusterID(opts),
			KafkaFailover:      opts.KafkaFailover,
			Observer:           i >= opts.Voters,
			Voters:             c.voters,
			ElectionTimeout:    opts.ElectionTimeout,
			FetchTimeout:       opts.FetchTimeout,
			ElectionBackoffMax: opts.ElectionBackoffMax,
			Seed:               replicaSeed(opts.Seed, id),
		}
		n := &node{id: id, cfg: cfg}
		if opts.Dynamic {
			// The voter set is in the log: controllers start from the
			// bootstrap checkpoint, brokers with none.
			n.cfg.Voters = nil
			if i < opts.Voters {
				n.bootstrap = c.Voters()
				n.cfg.AutoJoin = opts.AutoJoin
			}
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		c.start(n)
	}
	if opts.ClientInterval > 0 {
		c.push(&item{at: c.clientDelay(), kind: itemClient})
	}
	return c, c.err
}

// directoryID is the KIP-853 directory id of replica id on its disk
// generation disk, or none without Options.DirectoryIDs.
func directoryID(o Options, id kraft.NodeID, disk int) uuid.UUID {
	if !o.DirectoryIDs {
		return uuid.Nil
	}
	var u uuid.UUID
	u[0], u[1], u[2], u[3], u[15] = 0xd1, byte(id>>8), byte(id), byte(disk), 1
	return u
}

// clusterID is the cluster id every replica has with Options.ClusterID.
func clusterID(o Options) uuid.NullUUID {
	if !o.ClusterID {
		return uuid.NullUUID{}
	}
	return uuid.NullUUID{UUID: uuid.UUID{0xc1, 0xc1, 0xc1, 0xc1, 15: 1}, Valid: true}
}

// replicaSeed derives a distinct kraft.Config.Seed per replica.
func replicaSeed(seed int64, id kraft.NodeID) uint64 {
	x := uint64(seed)*0x9e3779b97f4a7c15 + uint64(id+1)*0xbf58476d1ce4e5b9
	x ^= x >> 31
	return x
}

// Options returns the options the cluster was built with (defaults
// filled in); OpNetwork and OpDisk phases do not change them.
func (c *Cluster) Options() Options { return c.opts }

// Now is the virtual time.
func (c *Cluster) Now() time.Duration { return c.now }

// Err is the first invariant violation, or nil.
func (c *Cluster) Err() error { return c.err }

// Stats reports what the run did so far.
func (c *Cluster) Stats() Stats { return c.stats }

// Checker is the invariant checker of the run.
func (c *Cluster) Checker() *Checker { return c.check }

// IDs lists every replica's id, voters first.
func (c *Cluster) IDs() []kraft.NodeID {
	out := make([]kraft.NodeID, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.id
	}
	return out
}

// VoterIDs lists the voters' ids: with Options.Dynamic, those of the
// committed voter set (Voters).
func (c *Cluster) VoterIDs() []kraft.NodeID {
	out := make([]kraft.NodeID, len(c.voters))
	for i, v := range c.voters {
		out[i] = v.ID
	}
	return out
}

// State is the current state of replica id (the last one before a crash
// while it is down).
func (c *Cluster) State(id kraft.NodeID) kraft.State { return c.node(id).st }

// Up reports whether replica id is running.
func (c *Cluster) Up(id kraft.NodeID) bool { return c.node(id).up }

// Log returns a copy of the records replica id holds, from offset 0: the
// content of its snapshot at the log start below the start, then its log;
// and the length of its flushed prefix.
func (c *Cluster) Log(id kraft.NodeID) ([]Record, int) {
	n := c.node(id)
	return n.records(), n.flushed
}

// LogStart returns replica id's log start offset, the ids of its
// snapshots (oldest first), and how many downloaded snapshots it has
// installed since the run began.
func (c *Cluster) LogStart(id kraft.NodeID) (start int64, snapshots []kraft.LogEnd, installed int) {
	n := c.node(id)
	ids := make([]kraft.LogEnd, len(n.snaps))
	for i, s := range n.snaps {
		ids[i] = s.id
	}
	return int64(n.start), ids, n.installed
}

// DurableRecord returns replica id's stored quorum-state record, nil if none.
func (c *Cluster) DurableRecord(id kraft.NodeID) *kraft.QuorumRecord {
	if r := c.node(id).record; r != nil {
		cp := *r
		return &cp
	}
	return nil
}

func (c *Cluster) node(id kraft.NodeID) *node {
	if id < 0 || int(id) >= len(c.nodes) {
		panic(fmt.Sprintf("sim: no replica %d", id))
	}
	return c.nodes[id]
}

func (c *Cluster) push(it *item) {
	c.seq++
	it.seq = c.seq
	heap.Push(&c.q, it)
}

func (c *Cluster) fail(v Violation) {
	if c.err == nil {
		v.At = c.now
		c.err = v
	}
}

// RunFor runs the simulation for d of virtual time, or until the first
// violation, which it returns.
func (c *Cluster) RunFor(d time.Duration) error {
	return c.RunUntil(c.now+d, nil)
}

// RunUntil runs until virtual time end, until done (checked after every
// event) returns true, or until the first violation, which it returns.
func (c *Cluster) RunUntil(end time.Duration, done func() bool) error {
	for c.err == nil {
		if done != nil && done() {
			return nil
		}
		if len(c.q) == 0 || c.q[0].at > end {
			break
		}
		it := heap.Pop(&c.q).(*item)
		c.now = it.at
		c.handle(it)
		if c.err == nil {
			c.check.afterEvent()
		}
	}
	if c.err == nil && c.now < end {
		c.now = end
	}
	return c.err
}

func (c *Cluster) handle(it *item) {
	switch it.kind {
	case itemMessage:
		c.deliver(it.msg)
	case itemTimer:
		n := c.node(it.node)
		if !n.up || n.inc != it.inc || n.timerGen[it.timer] != it.gen {
			return
		}
		if e := it.timer.Timeout(); e != nil {
			c.step(n, e)
		}
	case itemFlush:
		n := c.node(it.node)
		if n.up && n.inc == it.inc {
			n.flushAt = false
			c.flush(n)
		}
	case itemFetchRetry:
		n := c.node(it.node)
		if n.up && n.inc == it.inc && n.fetchCorr == it.gen {
			c.resendFetch(n)
		}
	case itemParkExpire:
		n := c.node(it.node)
		if !n.up || n.inc != it.inc {
			return
		}
		for i, p := range n.parked {
			if p.id == it.gen {
				n.parked = append(n.parked[:i:i], n.parked[i+1:]...)
				c.transmit(p.resp)
				return
			}
		}
	case itemClient:
		c.clientAppend()
		c.push(&item{at: c.now + c.clientDelay(), kind: itemClient})
	case itemOp:
		c.Apply(it.op)
	}
}

func (c *Cluster) clientDelay() time.Duration {
	m := int64(c.opts.ClientInterval)
	return time.Duration(m/2 + c.rng.Int63n(m+1))
}

// clientAppend appends 1-3 records at the leader of the highest epoch.
func (c *Cluster) clientAppend() {
	leader := c.highestLeader()
	if leader == nil {
		return
	}
	k := 1 + c.rng.Intn(3)
	for i := 0; i < k; i++ {
		c.client++
		leader.log = append(leader.log, Record{Epoch: leader.st.Epoch(), Payload: fmt.Sprintf("c%d", c.client)})
		c.stats.Appends++
	}

	c.check.logChangedFrom(leader, len(leader.log))
	c.reportWrites(leader)
}

func (c *Cluster) scheduleFlush(n *node) {
	if n.flushAt {
		return
	}
	n.flushAt = true
	d := time.Duration(c.rng.Int63n(int64(c.flushDelay) + 1))
	c.push(&item{at: c.now + d, kind: itemFlush, node: n.id, inc: n.inc})
}

// flush makes n's whole written log durable and reports it with
// LogFlushed. The flush was scheduled when the records were written and
// completes whatever happened since: a leadership change leaves it pending,
// a crash cancels it (the unflushed tail is lost).
func (c *Cluster) flush(n *node) {
	if n.flushed == len(n.log) {
		return
	}
	n.flushed = len(n.log)
	c.check.logChangedFrom(n, len(n.log))
	c.step(n, kraft.LogFlushed{Offset: int64(n.flushed)})
}

// reportWrites reports the records written since the last report, one
// LogAppended per epoch run, and schedules their flush (the host contract:
// a write is reported before any other event is stepped).
func (c *Cluster) reportWrites(n *node) {
	from, to := n.reported, len(n.log)
	if from >= to {
		return
	}
	n.reported = to
	run := from
	for i := from; i < to && n.up; i++ {
		if i == to-1 || n.log[i+1].Epoch != n.log[i].Epoch {
			c.step(n, kraft.LogAppended{End: kraft.LogEnd{Offset: int64(i + 1), Epoch: n.log[i].Epoch}})
			c.reportVoters(n, run, i+1)
			run = i + 1
		}
	}
	c.scheduleFlush(n)
}

// step applies e to n and carries out the actions.
func (c *Cluster) step(n *node, e kraft.Event) {
	if c.err != nil || !n.up {
		return
	}
	before := n.st
	next, acts := kraft.Step(before, e)
	c.stats.Events++
	n.st = next
	if c.trace != nil {
		c.writeTrace(TraceLine{Kind: "step", T: c.now, Node: n.id, Event: encodeEvent(e), Actions: encodeActions(acts), State: summarize(next)})
	}
	if c.OnStep != nil {
		c.OnStep(n.id, e, before, next, acts)
	}
	c.check.stepFrom = before
	c.carryOut(n, acts, e)
	c.check.afterStep(n, before, e)
	if v := n.snapVoters; v != nil && n.up {
		// The host contract: after InstallSnapshot, the snapshot's set.
		n.snapVoters = nil
		c.step(n, kraft.VotersAppended{Offset: v.Offset, Voters: v.Voters})
	}
	c.reportWrites(n)
	if n.up && n.st.Role() == kraft.Leader && (next.LogEnd() != before.LogEnd() || next.HighWatermark() != before.HighWatermark()) {
		c.wakeParked(n)
	}
	c.maybeSnapshot(n)
}

// start (re)builds n from its durable record, flushed log and snapshots.
func (c *Cluster) start(n *node) {
	n.log = n.log[:n.flushed:n.flushed]
	n.reported = n.flushed
	c.recover(n)
	n.up = true
	n.inflight = map[uint64]bool{}
	n.fetchCorr = 0
	n.parked = nil
	n.flushAt = false
	n.hwm = -1
	if s := n.latestSnapshot(); s != nil {
		n.hwm = s.id.Offset
	}
	ls := n.logState()
	var rec *kraft.QuorumRecord
	if n.record != nil {
		r := *n.record
		rec = &r
	}
	st, acts, err := kraft.NewState(n.cfg, rec, ls)
	if err != nil {
		c.fail(Violation{Node: n.id, Rule: "restart", Detail: err.Error()})
		return
	}
	before := n.st
	n.st = st
	c.stats.Events++
	if c.trace != nil {
		cfg := n.cfg
		c.writeTrace(TraceLine{Kind: "start", T: c.now, Node: n.id, Config: &cfg, Record: rec, Log: &ls, Actions: encodeActions(acts), State: summarize(st)})
	}
	c.check.afterStart(n, before)
	c.check.stepFrom = kraft.State{}
	c.carryOut(n, acts, nil)
	c.check.afterStep(n, before, nil)
	c.reportWrites(n)
}

// logState describes a log that starts at 0 for kraft.NewState.
func logState(log []Record) kraft.LogState {
	var ls kraft.LogState
	for i, r := range log {
		if i == 0 || r.Epoch != log[i-1].Epoch {
			ls.Epochs = append(ls.Epochs, kraft.EpochStart{Epoch: r.Epoch, StartOffset: int64(i)})
		}
	}
	if len(log) > 0 {
		ls.End = kraft.LogEnd{Offset: int64(len(log)), Epoch: log[len(log)-1].Epoch}
	}
	return ls
}

// carryOut carries out a step's actions in order. e is the event the
// actions answer (nil at start).
func (c *Cluster) carryOut(n *node, acts []kraft.Action, e kraft.Event) {
	ctx := c.ctx
	for _, a := range acts {
		if c.err != nil {
			return
		}
		c.check.beforeAction(n, a, e)
		switch a := a.(type) {
		case kraft.Persist:
			r := a.Record
			n.record = &r
		case kraft.SendVoteRequest, kraft.SendBeginQuorumEpoch, kraft.SendEndQuorumEpoch:
			// Requests: kraft.Deliver gives the addressee's event.
			to, ev, _ := kraft.Deliver(n.cfg.Local, a)
			c.corr++
			n.inflight[c.corr] = true
			c.send(&message{from: n.id, to: to, corr: c.corr, event: ev})
		case kraft.SendVoteResponse:
			if ctx == nil || ctx.from != a.To {
				continue
			}
			_, ev, _ := kraft.Deliver(n.cfg.Local, a)
			c.send(&message{from: n.id, to: a.To, corr: ctx.corr, response: true, event: ev})
		case kraft.SendBeginQuorumEpochResponse, kraft.SendEndQuorumEpochResponse:
			// kraft.Deliver makes these ReceiveQuorumResponse (D28).
			to, ev, ok := kraft.Deliver(n.cfg.Local, a)
			if ok && ctx != nil && ctx.from == to {
				c.send(&message{from: n.id, to: to, corr: ctx.corr, response: true, event: ev})
			}
		case kraft.SendFetchSnapshotResponse:
			if ctx == nil || ctx.from != a.To {
				continue
			}
			c.serveSnapshot(n, ctx, a)
		case kraft.SendFetch, kraft.SendFetchSnapshot:
			c.sendFetch(n, a)
		case kraft.WriteSnapshotChunk:
			if ctx == nil {
				c.fail(Violation{Node: n.id, Rule: "host-snapshot", Detail: fmt.Sprintf("asked to write %+v with no FetchSnapshot response being stepped", a)})
				return
			}
			c.writeChunk(n, ctx, a)
		case kraft.InstallSnapshot:
			c.install(n, a)
		case kraft.SendFetchResponse:
			if ctx == nil || ctx.from != a.To {
				continue
			}
			c.fetchResponse(n, ctx, a)
		case kraft.TruncateLog:
			if a.To < int64(n.start) {
				c.fail(Violation{Node: n.id, Rule: "host-log", Detail: fmt.Sprintf("asked to truncate to %d, below the log start %d", a.To, n.start)})
				return
			}
			if a.To < int64(len(n.log)) {
				n.truncated = true
				n.log = n.log[:a.To:a.To]
				if n.flushed > len(n.log) {
					n.flushed = len(n.log)
				}
				if n.reported > len(n.log) {
					n.reported = len(n.log)
				}
				c.check.logChangedFrom(n, len(n.log))
			}
		case kraft.AppendLeaderChange:
			// Written at the log end, which is where the state put the
			// epoch start; reported once the step's actions are done.
			n.log = append(n.log, Record{Epoch: a.Epoch, Payload: fmt.Sprintf("LeaderChange(epoch=%d,leader=%d)", a.Epoch, a.LeaderID)})
			if a.VotersRecord {
				// Then a VotersRecord with the set in force (the bootstrap
				// checkpoint's, which is never replicated).
				n.log = append(n.log, Record{Epoch: a.Epoch, Payload: votersPayload(a.Voters)})
			}
			c.check.logChangedFrom(n, len(n.log))
		case kraft.AppendVoters:
			if n.st.Role() != kraft.Leader || n.st.Epoch() != a.Epoch {
				c.fail(Violation{Node: n.id, Rule: "host-log", Detail: fmt.Sprintf("asked to append %+v as %v", a, n.st)})
				return
			}
			n.log = append(n.log, Record{Epoch: a.Epoch, Payload: votersPayload(a.Voters)})
			c.check.logChangedFrom(n, len(n.log))
		case kraft.SendAPIVersions:
			c.corr++
			n.inflight[c.corr] = true
			c.send(&message{from: n.id, to: a.To.ID, corr: c.corr, apiVersions: true})
		case kraft.SendVoterChange:
			// An auto-joining observer's request; its answer is not
			// delivered (the state takes none), so nothing waits for it.
			if to, ev, ok := kraft.Deliver(n.cfg.Local, a); ok {
				c.corr++
				c.send(&message{from: n.id, to: to, corr: c.corr, event: ev})
			}
		case kraft.SendVoterChangeResponse:
			c.answered(a)
		case kraft.ResetTimer:
			n.timerGen[a.Timer]++
			c.push(&item{at: c.now + a.After, kind: itemTimer, node: n.id, inc: n.inc, timer: a.Timer, gen: n.timerGen[a.Timer]})
		case kraft.StopTimer:
			n.timerGen[a.Timer]++
		case kraft.RoleChanged:
			// Kafka's resetConnections: late responses are dropped.
			n.inflight = map[uint64]bool{}
			n.fetchCorr = 0
			if a.From == kraft.Leader {
				c.failParked(n)
			}
		case kraft.HighWatermarkChanged:
			if a.HighWatermark > n.hwm {
				n.hwm = a.HighWatermark
			}
		case kraft.Fault:
			// The checker looks at it.
		}
	}
}

// sendFetch sends a Fetch or a FetchSnapshot (a follower's one fetch
// request); it supersedes any fetch request in flight.
func (c *Cluster) sendFetch(n *node, a kraft.Action) {
	to, ev, _ := kraft.Deliver(n.cfg.Local, a)
	if to == kraft.NoNode {
		if c.opts.Dynamic {
			to = c.bootstrapServer(n)
		} else {
			to = c.voters[c.rng.Intn(len(c.voters))].ID
		}
	}
	c.corr++
	n.fetchCorr = c.corr
	n.lastFetch = a
	m := &message{from: n.id, to: to, corr: c.corr, event: ev}
	if f, ok := a.(kraft.SendFetch); ok {
		m.reqHWM = f.HighWatermark
		c.check.fetchSent(n, to, f)
	}
	c.send(m)
	c.push(&item{at: c.now + c.opts.RequestTimeout, kind: itemFetchRetry, node: n.id, inc: n.inc, gen: c.corr})
}

// resendFetch sends the latest SendFetch (or SendFetchSnapshot) again, as
// the host contract says.
// (Rebuilding it from the state's log end would report records a voter has
// not flushed yet; the state sends a Fetch only once they are.)
func (c *Cluster) resendFetch(n *node) {
	c.sendFetch(n, n.lastFetch)
}

// fetchResponse builds the response to req, attaches records, and parks it
// if it is an empty answer to a caught-up follower.
func (c *Cluster) fetchResponse(n *node, req *message, a kraft.SendFetchResponse) {
	f, _ := req.event.(kraft.ReceiveFetch)
	_, ev, _ := kraft.Deliver(n.cfg.Local, a)
	m := &message{
		from: n.id, to: req.from, toInc: req.fromInc, fromInc: n.inc, corr: req.corr, response: true, fetchOffset: f.FetchOffset,
		event: ev,
	}
	served := n.st.LogEnd().Offset
	if served > int64(len(n.log)) {
		served = int64(len(n.log))
	}
	if a.Error == kraft.ErrNone && a.Diverging == nil && a.Snapshot == nil && f.FetchOffset >= 0 && f.FetchOffset < served {
		if f.FetchOffset < int64(n.start) {
			c.fail(Violation{Node: n.id, Rule: "host-log", Detail: fmt.Sprintf("asked to serve records from %d, below the log start %d", f.FetchOffset, n.start)})
			return
		}
		end := f.FetchOffset + int64(c.opts.MaxFetchRecords)
		if end > served {
			end = served
		}
		m.records = append([]Record(nil), n.log[f.FetchOffset:end]...)
	}
	if a.Error == kraft.ErrNone && a.Diverging == nil && a.Snapshot == nil && len(m.records) == 0 && a.HighWatermark <= req.reqHWM && !req.noPark && n.st.Role() == kraft.Leader {
		c.corr++
		n.parked = append(n.parked, parked{id: c.corr, req: req, resp: m})
		c.push(&item{at: c.now + c.opts.FetchMaxWait, kind: itemParkExpire, node: n.id, inc: n.inc, gen: c.corr})
		return
	}
	c.transmit(m)
}

// wakeParked re-evaluates every parked Fetch (the leader's log end or high
// watermark moved).
func (c *Cluster) wakeParked(n *node) {
	ps := n.parked
	n.parked = nil
	for _, p := range ps {
		req := *p.req
		c.push(&item{at: c.now, kind: itemMessage, msg: &req})
	}
}

// failParked answers every parked Fetch with NOT_LEADER_OR_FOLLOWER (the
// leader resigned or lost its epoch).
func (c *Cluster) failParked(n *node) {
	ps := n.parked
	n.parked = nil
	for _, p := range ps {
		m := *p.resp
		r := m.event.(kraft.ReceiveFetchResponse)
		r.Error, r.LeaderID, r.LeaderEpoch, r.HighWatermark = kraft.ErrNotLeaderOrFollower, n.st.Leader(), n.st.Epoch(), -1
		m.event = r
		c.transmit(&m)
	}
}

// send puts a new message on the network.
func (c *Cluster) send(m *message) {
	if m.to < 0 || int(m.to) >= len(c.nodes) {
		return
	}
	m.fromInc = c.nodes[m.from].inc
	if m.response {
		m.toInc = c.ctx.fromInc
	} else {
		m.toInc = c.nodes[m.to].inc
	}
	c.transmit(m)
}

// transmit applies loss, duplication and delay.
func (c *Cluster) transmit(m *message) {
	c.stats.Messages++
	net := c.net
	if net.Loss > 0 && c.rng.Float64() < net.Loss {
		c.stats.Lost++
		return
	}
	copies := 1
	if net.Duplicate > 0 && c.rng.Float64() < net.Duplicate {
		copies = 2
	}
	for i := 0; i < copies; i++ {
		d := net.MinDelay
		if net.MaxDelay > net.MinDelay {
			d += time.Duration(c.rng.Int63n(int64(net.MaxDelay-net.MinDelay) + 1))
		}
		c.push(&item{at: c.now + d, kind: itemMessage, msg: m})
	}
}

// deliver hands a message to its receiver's host.
func (c *Cluster) deliver(m *message) {
	n := c.node(m.to)
	if !n.up || n.inc != m.toInc || c.cut[[2]kraft.NodeID{m.from, m.to}] {
		c.stats.Dropped++
		return
	}
	if m.response {
		if resp, isFetch := m.event.(kraft.ReceiveFetchResponse); isFetch {
			if m.corr != n.fetchCorr || n.fetchCorr == 0 {
				c.stats.Dropped++
				return
			}
			n.fetchCorr = 0
			if len(m.records) > 0 && !n.st.AcceptsRecords(resp) {
				// The host contract: append a response's records only when
				// the state will take them (it never refuses the answer to
				// the fetch in flight, but a host must not assume so).
				c.stats.Dropped++
				m.records = nil
			}
			if len(m.records) > 0 {
				if int64(len(n.log)) != m.fetchOffset {
					// The log moved since the fetch was sent (an unflushed
					// tail from a former leadership was flushed or not yet):
					// fetch again from the current position.
					c.stats.Dropped++
					n.fetchCorr = m.corr
					c.push(&item{at: c.now + c.opts.FetchRetryBackoff, kind: itemFetchRetry, node: n.id, inc: n.inc, gen: m.corr})
					return
				}
				from := len(n.log)
				n.log = append(n.log, m.records...)
				c.check.logChangedFrom(n, from)
				c.reportWrites(n)
				if c.err != nil || !n.up {
					return
				}
			}
		} else if _, isSnap := m.event.(kraft.ReceiveFetchSnapshotResponse); isSnap {
			if m.corr != n.fetchCorr || n.fetchCorr == 0 {
				c.stats.Dropped++
				return
			}
			n.fetchCorr = 0
		} else {
			if !n.inflight[m.corr] {
				c.stats.Dropped++
				return
			}
			delete(n.inflight, m.corr)
		}
	}
	if m.apiVersions {
		// The host answers ApiVersions; the state never sees it.
		c.ctx = m
		c.send(&message{from: n.id, to: m.from, corr: m.corr, response: true, event: kraft.ReceiveAPIVersionsResponse{
			From: n.id, KRaftVersions: &kraft.VersionRange{Min: apiVersionsRange.Min, Max: apiVersionsRange.Max},
		}})
		c.ctx = nil
		return
	}
	switch m.event.(type) {
	case kraft.ReceiveAddVoter, kraft.ReceiveRemoveVoter:
		m = c.withRef(n, m)
	}
	if r, ok := m.event.(kraft.ReceiveFetchSnapshot); ok {
		// The host looks up the snapshot's size (-1: it has none).
		r.Size = -1
		if s := n.findSnapshot(r.Snapshot); s != nil {
			r.Size = int64(len(s.bytes()))
		}
		cp := *m
		cp.event = r
		m = &cp
	}
	if v, ok := m.event.(kraft.ReceiveVoteRequest); ok && v.PreVote && c.preVoteUnsupported(n.id) {
		// A peer without Vote v2 (KIP-996): its client library answers
		// UNSUPPORTED_VERSION; the replica never sees the request.
		c.ctx = m
		c.send(&message{from: n.id, to: m.from, corr: m.corr, response: true, event: kraft.ReceiveVoteResponse{
			From: n.id, Error: kraft.ErrUnsupportedVersion, Epoch: v.CandidateEpoch, LeaderID: kraft.NoNode,
		}})
		c.ctx = nil
		return
	}
	c.ctx = m
	c.step(n, m.event)
	c.ctx = nil
}

func (c *Cluster) preVoteUnsupported(id kraft.NodeID) bool {
	for _, x := range c.opts.PreVoteUnsupported {
		if x == id {
			return true
		}
	}
	return false
}

// TraceLine is one line of a trace.
type TraceLine struct {
	// Kind is "header", "start" (NewState at start or restart), "step",
	// "op" (a fault or schedule operation) or "end" (the last line, written
	// by EndTrace).
	Kind    string              `json:"kind"`
	T       time.Duration       `json:"t"`
	Node    kraft.NodeID        `json:"node"`
	Seed    int64               `json:"seed,omitempty"`
	Options *Options            `json:"options,omitempty"`
	Config  *kraft.Config       `json:"config,omitempty"`
	Record  *kraft.QuorumRecord `json:"record,omitempty"`
	Log     *kraft.LogState     `json:"log,omitempty"`
	Event   *Tagged             `json:"event,omitempty"`
	Actions []Tagged            `json:"actions,omitempty"`
	State   *StateSummary       `json:"state,omitempty"`
	Op      *Op                 `json:"op,omitempty"`
	// Starts and Steps, in the "end" record, count the start and step
	// lines of the whole trace.
	Starts int `json:"starts,omitempty"`
	Steps  int `json:"steps,omitempty"`
}

func (c *Cluster) writeTrace(l TraceLine) {
	if c.trace == nil || c.traceEnded {
		return
	}
	switch l.Kind {
	case "start":
		c.traceStarts++
	case "step":
		c.traceSteps++
	}
	if err := c.trace.Encode(l); err != nil {
		c.fail(Violation{Rule: "trace", Detail: err.Error()})
	}
}

// EndTrace writes the trace's end record, with the number of start and
// step lines before it, and writes nothing after it. Replay refuses a
// trace without one, so a trace cut short (a full disk, a killed run) is
// never taken for a whole run. A run that writes a trace calls it once
// when it is done.
func (c *Cluster) EndTrace() {
	if c.trace == nil || c.traceEnded {
		return
	}
	c.writeTrace(TraceLine{Kind: "end", T: c.now, Starts: c.traceStarts, Steps: c.traceSteps})
	c.traceEnded = true
}
