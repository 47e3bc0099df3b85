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
	"github.com/kraftquorum/kraft/internal/plant"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
	"github.com/kraftquorum/kraft/storage/simdisk"
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
	// Messages sent, lost and dropped on the way (a partition, a crashed
	// or restarted receiver); the replica layer drops stale and duplicated
	// responses itself.
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
	// Damages counts the disk faults injected (OpDamage), DamagesByKind
	// the same by kind; DamagesSkipped those not injected: while an
	// earlier one was not over (one damaged replica at a time), or with
	// nothing to damage, or damage no local check can see (damage.go);
	// DamagesBusy counts the first of those.
	// Of the injected ones, DamagesReplaced were met by a replaced disk
	// (a dynamic voter set), DamagesRefused by a refusal to start (a
	// static one; DamagesRestored of those restored by the operator
	// since), and DamagesCut by a log cut at the damage (the planted bug
	// plant.TornTail).
	Damages, DamagesSkipped, DamagesBusy                         int
	DamagesByKind                                                map[Damage]int
	DamagesReplaced, DamagesRefused, DamagesRestored, DamagesCut int
	// ReplacesInterrupted counts the replacements of a damaged directory
	// (D91) the process died in the middle of (D111).
	ReplacesInterrupted int
	// Aimed counts the faults aimed at a replica right after a log
	// operation (Options.AimedFaults, aim.go; D130), AimedDamages those of
	// them that damaged a disk.
	Aimed, AimedDamages int
	// Reads counts the linearizable reads (replica.ReadIndex) answered,
	// each checked against the records committed before it was taken.
	Reads int
	// LeaderRefusals counts the answers of a leader that a replica refused
	// because they asked it to remove committed records
	// (kraft.LeaderRefused, docs/design.md D113).
	LeaderRefusals int
}

// node is one replica and its simulated host.
type node struct {
	id   kraft.NodeID
	cfg  kraft.Config
	up   bool
	inc  int // incarnation, bumped at every crash
	disk int // disk generation, bumped at every disk loss
	// rep runs the replica's protocol (nil while it is down); st is its
	// state, as the observer saw it last (the last one before a crash
	// while it is down); before is the state before a restart.
	rep    *replica.Replica
	st     kraft.State
	before kraft.State

	record *kraft.QuorumRecord // durable quorum-state record
	// history holds the last quorum-state records written and the files'
	// bytes after each, oldest first (a rollback's candidates); damage is a
	// disk fault that takes effect at the next start (damage.go).
	history []qsFiles
	damage  *diskDamage
	// dsk is the replica's simulated disk; flog its log on it (a
	// storage.FileLog, opened at each start, nil while it is down).
	dsk  *simdisk.Disk
	flog *storage.FileLog
	// log is what flog holds, as Records, indexed by offset; log[:flushed]
	// is what the replica was told is durable. The log starts at start: the
	// records below it were deleted (zero values), and the snapshot at
	// start holds them; startEpoch is the epoch of the record before start.
	log        []Record
	start      int
	startEpoch kraft.Epoch
	flushed    int
	flushAt    bool // a sync is under way (a Sync output, not yet Synced)
	// aim is the aimed fault on its way to this replica, nil if none: it
	// strikes at the replica's next sync, or at its time (aim.go).
	aim *Op

	// snaps are the snapshots on disk, oldest first (the first is at the
	// log start when start > 0); partial is the download in progress;
	// applied holds the records of the latest snapshot, and room after
	// them; hwm is the highest high watermark the replica reported in this
	// life (the latest snapshot's end after a restart).
	snaps     []*snapshot
	partial   *partial
	applied   []Record
	hwm       int64
	installed int // snapshots installed, over every life

	// bootstrap is the bootstrap checkpoint's voter set (Options.Dynamic),
	// nil without one (a static voter set, a broker, a lost disk).
	bootstrap []kraft.ReplicaKey
	// truncated: a TruncateLog was carried out in this step (the checker
	// compares the voter sets after it).
	truncated bool

	// The one timer item that fires the replica's next deadline
	// (NextDeadline): its generation (an item of another is ignored), and
	// whether it is armed, at timerAt.
	timerGen   uint64
	timerArmed bool
	timerAt    time.Duration
	// requests are the requests delivered to this incarnation and not
	// answered yet, by sender and correlation id: the response goes to the
	// sender's incarnation that sent it only (a connection does not
	// outlive a crash), and a Fetch must be answered within the fetch max
	// wait ("fetch-answered").
	requests map[reqKey]pending
	// reads are the linearizable reads taken at this incarnation and not
	// answered yet: for each, how many records were committed when it was
	// taken (clientReads).
	reads map[uint64]int
}

type pending struct {
	inc   int           // the sender's incarnation
	at    time.Duration // when it was delivered
	fetch bool
}

type reqKey struct {
	from kraft.NodeID
	corr uint64
}

// message is one message on the simulated network.
type message struct {
	// The incarnations of sender and receiver: a message to an earlier
	// incarnation is dropped (its connection is gone).
	fromInc, toInc int
	m              replica.Message
}

type itemKind uint8

const (
	itemMessage itemKind = iota + 1
	itemTimer
	itemFlush
	itemClient
	itemOp
	itemDown    // node learns that replica gone's process is gone (OpKill)
	itemRestore // the operator restores a damaged replica's directory
)

type item struct {
	at   time.Duration
	seq  uint64
	kind itemKind
	node kraft.NodeID
	inc  int
	msg  *message
	gone kraft.NodeID // itemDown
	gen  uint64
	op   Op
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

	// victim is the replica of the latest disk fault, NoNode once it is
	// over (damageOver); victimKey its key when the fault struck.
	victim    kraft.NodeID
	victimKey kraft.ReplicaKey
	// idleUntil: the clients append nothing before it (OpIdle).
	idleUntil time.Duration
	// slowDisk is a replica's own maximum flush delay (an OpDisk with a
	// Group), its flushes taking the longer of it and flushDelay.
	slowDisk map[kraft.NodeID]time.Duration
	// aimed counts the faults aimed so far (Options.AimedFaults);
	// aimStopped: StopFaults ended them (and the pending ones).
	aimed      int
	aimStopped bool
	// staticVoters is a static voter set, which every disk is formatted
	// with (nil in a dynamic quorum).
	staticVoters []kraft.ReplicaKey

	// changes are the voter-change requests handled, refs the pending
	// ones' handles by leader (see voters.go); history the committed
	// voter sets.
	changes []VoterChange
	refs    map[reqKey]int
	history []VoterSetChange
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

	// tolerate, if set, lets a test go on past a violation it made on
	// purpose (tolerated records them): a damage that loses a committed
	// record, whose consequence is the test's subject.
	tolerate  func(Violation) bool
	tolerated []Violation
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
		victim:     kraft.NoNode,
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
		n := &node{id: id, cfg: cfg, dsk: simdisk.New(int64(replicaSeed(opts.Seed, id)))}
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
	if !opts.Dynamic {
		c.staticVoters = c.voters
	}
	for _, n := range c.nodes {
		// Each disk formatted once, as kraftd format does (D108).
		if err := c.format(n, n.cfg.Local.DirectoryID, n.bootstrap); err != nil {
			return nil, fmt.Errorf("sim: formatting replica %d's disk: %w", n.id, err)
		}
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
		if c.tolerate != nil && c.tolerate(v) {
			c.tolerated = append(c.tolerated, v)
			return
		}
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
		if c.err == nil {
			c.check.fetchesAnswered()
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
		if !n.up || n.inc != it.inc || n.timerGen != it.gen {
			return
		}
		n.timerArmed = false
		n.rep.Tick(c.now)
		c.carry(n)
	case itemFlush:
		n := c.node(it.node)
		if n.up && n.inc == it.inc {
			n.flushAt = false
			c.flush(n)
		}
	case itemClient:
		c.clientAppend()
		c.push(&item{at: c.now + c.clientDelay(), kind: itemClient})
	case itemOp:
		c.Apply(it.op)
	case itemDown:
		n := c.node(it.node)
		if n.up && n.inc == it.inc {
			n.rep.PeerDown(c.now, it.gone)
			c.carry(n)
		}
	case itemRestore:
		c.restore(c.node(it.node))
	}
}

func (c *Cluster) clientDelay() time.Duration {
	m := int64(c.opts.ClientInterval)
	return time.Duration(m/2 + c.rng.Int63n(m+1))
}

// clientAppend appends 1-3 records at the leader of the highest epoch.
func (c *Cluster) clientAppend() {
	c.clientReads()
	if c.now < c.idleUntil {
		return
	}
	leader := c.highestLeader()
	if leader == nil {
		return
	}
	k := 1 + c.rng.Intn(3)
	records := make([][]byte, k)
	for i := range records {
		c.client++
		records[i] = []byte(fmt.Sprintf("c%d", c.client))
	}
	if _, err := leader.rep.Propose(c.now, replica.DataRecords(records)); err == nil {
		c.stats.Appends += k
	}
	c.carry(leader)
}

// clientReads takes a linearizable read (replica.ReadIndex) at every
// replica that believes it leads, a stale leader too: its answer must not
// miss a record committed before it was taken (readAnswered).
func (c *Cluster) clientReads() {
	for _, n := range c.nodes {
		if !n.up || n.st.Role() != kraft.Leader {
			continue
		}
		if ref, err := n.rep.ReadIndex(c.now); err == nil {
			n.reads[ref] = c.check.committedLen()
			c.carry(n)
		}
	}
}

// readAnswered checks a read's answer: a read point below a record
// committed before the read was taken is a stale read (docs/design.md
// D120).
func (c *Cluster) readAnswered(n *node, o replica.ReadReady) {
	committed, ok := n.reads[o.Ref]
	if !ok {
		return
	}
	delete(n.reads, o.Ref)
	c.stats.Reads++
	if o.Offset < int64(committed) {
		c.fail(Violation{Node: n.id, Rule: "stale-read", Detail: fmt.Sprintf(
			"read %d answered at offset %d, but %d records were committed when it was taken", o.Ref, o.Offset, committed)})
	}
}

// scheduleFlush answers a Sync output: the disk syncs after a delay drawn
// from [0, the current flush delay].
func (c *Cluster) scheduleFlush(n *node) {
	if n.flushAt {
		return
	}
	n.flushAt = true
	delay := c.flushDelay
	if s := c.slowDisk[n.id]; s > delay {
		delay = s
	}
	d := time.Duration(c.rng.Int63n(int64(delay) + 1))
	c.push(&item{at: c.now + d, kind: itemFlush, node: n.id, inc: n.inc})
}

// flush makes n's whole written log durable and reports it (Synced). The
// sync completes whatever happened since it began: a leadership change
// leaves it pending, a crash cancels it (the unflushed tail is lost).
func (c *Cluster) flush(n *node) {
	_ = hostLog{c, n}.Sync()
	n.rep.Synced(c.now)
	c.carry(n)
	c.aimAtSync(n)
}

// start (re)builds n's replica from its durable record, flushed log and
// snapshots (replica.New: Kafka's startup rules).
func (c *Cluster) start(n *node) {
	if n.flog == nil && !c.recoverLog(n) {
		return
	}
	n.partial = nil
	n.up = true
	n.flushAt = false
	n.requests = map[reqKey]pending{}
	n.reads = map[uint64]int{}
	n.hwm = -1
	n.applied = nil
	if s := n.latestSnapshot(); s != nil {
		n.hwm = s.id.Offset
		n.applied = s.recs
	}
	cfg := replica.Config{
		Kraft:                n.cfg,
		Log:                  hostLog{c, n},
		Records:              hostRecords{c, n},
		Snapshots:            hostSnapshots{c, n},
		RequestTimeout:       c.opts.RequestTimeout,
		RetryBackoff:         c.opts.FetchRetryBackoff,
		FetchMaxWait:         c.opts.FetchMaxWait,
		FetchMaxBytes:        replica.DefaultFetchMaxBytes,
		SnapshotChunkBytes:   c.opts.SnapshotChunkBytes,
		SnapshotsKept:        c.opts.SnapshotsKept,
		SnapshotDownloadHold: c.opts.SnapshotDownloadHold,
		Static:               !c.opts.Dynamic,
		Observer:             observer{c, n},
	}
	if n.bootstrap != nil {
		cfg.Bootstrap = make([]replica.Voter, len(n.bootstrap))
		for i, k := range n.bootstrap {
			cfg.Bootstrap[i] = replica.Voter{Key: k, KRaftVersions: replica.SupportedKRaftVersions}
		}
	}
	for i := 0; i < c.opts.Voters; i++ {
		if id := kraft.NodeID(i); id != n.id {
			cfg.BootstrapServers = append(cfg.BootstrapServers, id)
		}
	}
	if c.opts.plant != plant.None && !c.opts.plant.Host() {
		plant.Into(&cfg, c.opts.plant)
	}
	r, err := replica.New(cfg, c.now)
	if err != nil {
		if c.err == nil {
			c.fail(Violation{Node: n.id, Rule: "restart", Detail: err.Error()})
		}
		n.up = false
		return
	}
	n.rep = r
	c.carry(n)
}

// carry carries out n's replica's outputs: the host's I/O. Then it takes
// a snapshot if one is due and re-arms n's timer.
func (c *Cluster) carry(n *node) {
	for n.up && n.rep != nil {
		outs := n.rep.Take()
		for _, o := range outs {
			c.output(n, o)
		}
		if len(outs) == 0 && !c.maybeSnapshot(n) {
			break
		}
	}
	c.armTimer(n)
}

func (c *Cluster) output(n *node, o replica.Output) {
	switch o := o.(type) {
	case replica.Send:
		c.send(n, o.Message)
	case replica.Sync:
		c.scheduleFlush(n)
	case replica.Commit:
		if o.HighWatermark > n.hwm {
			n.hwm = o.HighWatermark
		}
	case replica.Installed:
		n.installed++
		c.stats.SnapshotsInstalled++
	case replica.VoterChangeAnswer:
		c.answered(n, o.Response)
	case replica.Stopped:
		c.fail(Violation{Node: n.id, Rule: "replica-stopped", Detail: o.Err.Error()})
	case replica.LeaderRefused:
		c.stats.LeaderRefusals++
	case replica.ReadReady:
		c.readAnswered(n, o)
	case replica.ReadFailed:
		delete(n.reads, o.Ref)
	case replica.RoleChange, replica.Peer, replica.ClusterIDRefused:
	}
}

// armTimer keeps one timer item at n's replica's next deadline: a
// deadline that moved gets a new item, and the old one is ignored.
func (c *Cluster) armTimer(n *node) {
	if !n.up || n.rep == nil {
		return
	}
	at, ok := n.rep.NextDeadline()
	if !ok {
		n.timerGen++
		n.timerArmed = false
		return
	}
	if at < c.now {
		at = c.now
	}
	if n.timerArmed && at == n.timerAt {
		return
	}
	n.timerGen++
	n.timerArmed, n.timerAt = true, at
	c.push(&item{at: at, kind: itemTimer, node: n.id, inc: n.inc, gen: n.timerGen})
}

// send puts a message of n's replica on the network: a response goes to
// the incarnation of its requester that sent the request.
func (c *Cluster) send(n *node, m replica.Message) {
	if m.To < 0 || int(m.To) >= len(c.nodes) {
		return
	}
	msg := &message{fromInc: n.inc, toInc: c.nodes[m.To].inc, m: m}
	if m.Response {
		k := reqKey{m.To, m.Corr}
		p, ok := n.requests[k]
		if !ok {
			return // answered already (a duplicate request)
		}
		delete(n.requests, k)
		msg.toInc = p.inc
	} else if f, ok := m.Event.(kraft.ReceiveFetch); ok {
		c.check.fetchSent(n, m.To, f.FetchOffset, f.CurrentLeaderEpoch)
	}
	c.transmit(msg)
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

// deliver hands a message to its receiver's replica.
func (c *Cluster) deliver(msg *message) {
	m := msg.m
	n := c.node(m.To)
	if !n.up || n.inc != msg.toInc || c.cut[[2]kraft.NodeID{m.From, m.To}] {
		c.stats.Dropped++
		return
	}
	if !m.Response {
		_, fetch := m.Event.(kraft.ReceiveFetch)
		n.requests[reqKey{m.From, m.Corr}] = pending{inc: msg.fromInc, at: c.now, fetch: fetch}
		if v, ok := m.Event.(kraft.ReceiveVoteRequest); ok && v.PreVote && c.preVoteUnsupported(n.id) {
			// A peer without Vote v2 (KIP-996): its client library answers
			// UNSUPPORTED_VERSION; the replica never sees the request.
			c.send(n, replica.Message{From: n.id, To: m.From, Corr: m.Corr, Response: true, Event: kraft.ReceiveVoteResponse{
				From: n.id, Error: kraft.ErrUnsupportedVersion, Epoch: v.CandidateEpoch, LeaderID: kraft.NoNode,
			}})
			return
		}
	}
	n.rep.Receive(c.now, m)
	c.carry(n)
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
