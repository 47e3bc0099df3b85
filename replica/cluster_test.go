package replica

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/plant"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// A deterministic cluster of Replicas for random schedules: a simulated
// clock, a network that delays, loses and duplicates messages, log syncs
// that take time, crashes that lose what was not synced, and a client
// that proposes at the leader. The host here is what a host of the layer
// is: it sends, syncs, sleeps until NextDeadline and restarts; it never
// looks inside a message. After every input it checks the replica's
// invariants and the cluster's safety: one leader per epoch, and a
// committed record never changes (what any replica reports committed at
// an offset is what every replica reports there). At the end the network
// heals and the cluster must commit a new record on every replica.

type clusterOpts struct {
	voters   int
	duration time.Duration // of the faulty phase
	loss     float64
	dup      float64
	crashes  bool
	// snapshotEvery, if positive, makes every host snapshot its
	// application every so many applied offsets (in memory; frozen
	// snapshots survive crashes), and the layer serve, download and
	// install them.
	snapshotEvery int64
	// reads, if set, has the client take linearizable reads at the
	// leader too (ReadIndex): a read ready at an offset below what was
	// committed when it was taken is a stale read.
	reads bool
}

type simHost struct {
	id        kraft.NodeID
	r         *Replica
	log       *storage.MemLog
	recs      *memRecords
	up        bool
	syncAt    time.Duration // when the Sync asked for completes; 0: none
	committed int64         // the highest Commit seen since the start
	// The application: the committed records applied in order (from the
	// installed or restored snapshot on), snapshotted every
	// snapshotEvery offsets.
	snaps    *memSnapshots
	app      []storage.Entry
	applied  int64 // the offset after the last record applied
	lastSnap int64
	// parked are the Fetches delivered to this replica as leader and not
	// answered yet, for the long-poll check.
	parked []pendingFetch
	// reads are this incarnation's reads waiting for their answer: the
	// committed end when each was taken, by Ref.
	reads map[uint64]int64
}

type pendingFetch struct {
	from     kraft.NodeID
	corr     uint64
	epoch    kraft.Epoch
	deadline time.Duration
}

type simMsg struct {
	at  time.Duration
	seq int
	m   Message
}

type msgQueue []simMsg

func (q msgQueue) Len() int { return len(q) }
func (q msgQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q msgQueue) Swap(i, j int)       { q[i], q[j] = q[j], q[i] }
func (q *msgQueue) Push(x interface{}) { *q = append(*q, x.(simMsg)) }
func (q *msgQueue) Pop() interface{} {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

type simCluster struct {
	opts      clusterOpts
	rng       *rand.Rand
	now       time.Duration
	hosts     []*simHost
	net       msgQueue
	seq       int
	leaders   map[kraft.Epoch]kraft.NodeID
	committed []storage.Entry // the committed records by offset
	installs  int
	faulty    bool
	nextOp    time.Duration
	proposed  int
	// readsReady counts the reads answered (clusterOpts.reads).
	readsReady int
	err        error
}

func (c *simCluster) config(id kraft.NodeID) Config {
	var voters []kraft.ReplicaKey
	for i := 0; i < c.opts.voters; i++ {
		voters = append(voters, kraft.ReplicaKey{ID: kraft.NodeID(i)})
	}
	cfg := Config{
		Kraft: kraft.Config{
			Local: kraft.ReplicaKey{ID: id}, Voters: voters, Seed: uint64(id)*7919 + uint64(c.rng.Int63()),
			ElectionTimeout: 100 * time.Millisecond, FetchTimeout: 200 * time.Millisecond, ElectionBackoffMax: 100 * time.Millisecond,
		},
		Log: c.hosts[id].log, Records: c.hosts[id].recs, Static: true,
		RequestTimeout: 100 * time.Millisecond, RetryBackoff: 20 * time.Millisecond, FetchMaxWait: 40 * time.Millisecond,
		FetchMaxBytes: 512, SnapshotChunkBytes: 2000,
	}
	if h := c.hosts[id]; h.snaps != nil {
		cfg.Snapshots = h.snaps
	}
	return cfg
}

func newSimCluster(seed int64, opts clusterOpts) *simCluster {
	c := &simCluster{opts: opts, rng: rand.New(rand.NewSource(seed)), leaders: map[kraft.Epoch]kraft.NodeID{}, faulty: true}
	for i := 0; i < opts.voters; i++ {
		h := &simHost{id: kraft.NodeID(i), log: storage.NewMemLog(), recs: &memRecords{}, committed: -1}
		if opts.snapshotEvery > 0 {
			h.snaps = newMemSnapshots()
		}
		c.hosts = append(c.hosts, h)
	}
	for _, h := range c.hosts {
		c.start(h)
	}
	return c
}

func (c *simCluster) start(h *simHost) {
	r, err := New(c.config(h.id), c.now)
	if err != nil {
		c.fail("replica %d: start: %v", h.id, err)
		return
	}
	r.plant = planted
	h.r, h.up, h.syncAt, h.parked, h.reads = r, true, 0, nil, map[uint64]int64{}
	h.app, h.applied, h.lastSnap = nil, 0, 0
	if id, ok := r.State().LatestSnapshot(); ok && id.Offset > 0 {
		c.restore(h, id)
	}
	c.carry(h)
}

// restore replaces h's application by the snapshot id, checking that it
// holds the committed records below its end.
func (c *simCluster) restore(h *simHost, id kraft.LogEnd) {
	rd, err := h.snaps.Open(id)
	if err != nil {
		c.fail("replica %d: opening snapshot %+v: %v", h.id, id, err)
		return
	}
	defer func() { _ = rd.Close() }()
	var app []storage.Entry
	if err := json.NewDecoder(rd).Decode(&app); err != nil {
		c.fail("replica %d: snapshot %+v: %v", h.id, id, err)
		return
	}
	if int64(len(app)) != id.Offset {
		c.fail("replica %d: snapshot %+v holds %d records", h.id, id, len(app))
		return
	}
	for _, e := range app {
		if e.Offset < int64(len(c.committed)) {
			if w := c.committed[e.Offset]; w.Epoch != e.Epoch || string(w.Data) != string(e.Data) {
				c.fail("replica %d: snapshot %+v holds record %d of epoch %d, committed was epoch %d", h.id, id, e.Offset, e.Epoch, w.Epoch)
				return
			}
		}
	}
	h.app, h.applied, h.lastSnap = app, id.Offset, id.Offset
}

// apply applies the committed records below hwm that h has not applied,
// and snapshots its application every snapshotEvery offsets.
func (c *simCluster) apply(h *simHost, hwm int64) {
	if h.snaps == nil {
		return
	}
	for h.applied < hwm {
		es, err := h.log.Read(h.applied, 1<<20)
		if err != nil {
			c.fail("replica %d: applying at %d: %v", h.id, h.applied, err)
			return
		}
		for _, e := range es {
			if e.Offset >= hwm {
				break
			}
			h.app = append(h.app, storage.Entry{Offset: e.Offset, Epoch: e.Epoch, Data: append([]byte(nil), e.Data...)})
			h.applied = e.Offset + 1
		}
	}
	if h.applied-h.lastSnap < c.opts.snapshotEvery {
		return
	}
	id := kraft.LogEnd{Offset: h.applied, Epoch: h.app[h.applied-1].Epoch}
	h.lastSnap = h.applied
	w, err := h.snaps.Create(id)
	if err != nil {
		return // installed or taken already
	}
	if err := json.NewEncoder(w.(*memSnapshotWriter)).Encode(h.app); err != nil {
		c.fail("replica %d: writing snapshot: %v", h.id, err)
		return
	}
	if err := w.Freeze(); err != nil {
		c.fail("replica %d: freezing snapshot: %v", h.id, err)
		return
	}
	h.r.SnapshotTaken(c.now, id)
}

func (c *simCluster) fail(format string, args ...interface{}) {
	if c.err == nil {
		c.err = fmt.Errorf("t=%v: %s", c.now, fmt.Sprintf(format, args...))
	}
}

// carry carries out h's outputs, then checks.
func (c *simCluster) carry(h *simHost) {
	// Applying commits may take a snapshot, an input with outputs of its
	// own: carry out until there are none.
	for outs := h.r.Take(); len(outs) > 0; outs = h.r.Take() {
		c.carryOuts(h, outs)
	}
	if err := h.r.checkInvariants(); err != nil {
		c.fail("replica %d: %v", h.id, err)
	}
	st := h.r.State()
	if err := st.CheckInvariants(); err != nil {
		c.fail("replica %d: state invariant: %v (%v)", h.id, err, st)
	}
	if st.Role() == kraft.Leader {
		if l, ok := c.leaders[st.Epoch()]; ok && l != h.id {
			c.fail("two leaders in epoch %d: %d and %d", st.Epoch(), l, h.id)
		}
		c.leaders[st.Epoch()] = h.id
	}
}

func (c *simCluster) carryOuts(h *simHost, outs []Output) {
	for _, o := range outs {
		switch o := o.(type) {
		case Send:
			c.sent(h, o.Message)
			c.send(o.Message)
		case Sync:
			h.syncAt = c.now + time.Duration(1+c.rng.Intn(5))*time.Millisecond
		case Commit:
			c.commit(h, o.HighWatermark)
			c.apply(h, o.HighWatermark)
		case Installed:
			c.installs++
			c.restore(h, o.Snapshot)
		case Stopped:
			c.fail("replica %d stopped: %v", h.id, o.Err)
		case ReadReady:
			at, ok := h.reads[o.Ref]
			delete(h.reads, o.Ref)
			switch {
			case !ok:
				c.fail("replica %d: read %d answered but never taken, or twice", h.id, o.Ref)
			case o.Offset < at:
				c.fail("stale read: replica %d answered read %d at %d, but %d was committed when it was taken", h.id, o.Ref, o.Offset, at)
			case o.Offset > h.committed:
				c.fail("replica %d answered read %d at %d, past its committed %d", h.id, o.Ref, o.Offset, h.committed)
			default:
				c.readsReady++
			}
		case ReadFailed:
			if _, ok := h.reads[o.Ref]; !ok {
				c.fail("replica %d: read %d failed but never taken, or answered twice", h.id, o.Ref)
			}
			delete(h.reads, o.Ref)
		}
	}
}

// sent notes the answers h sends to the Fetches it holds as leader.
func (c *simCluster) sent(h *simHost, m Message) {
	if !m.Response {
		return
	}
	for i, p := range h.parked {
		if p.from == m.To && p.corr == m.Corr {
			h.parked = append(h.parked[:i:i], h.parked[i+1:]...)
			return
		}
	}
}

// received notes a Fetch delivered to h as leader: it must answer it
// within the fetch max wait.
func (c *simCluster) received(h *simHost, m Message) {
	if _, ok := m.Event.(kraft.ReceiveFetch); ok && !m.Response && h.r.State().Role() == kraft.Leader {
		st := h.r.State()
		h.parked = append(h.parked, pendingFetch{from: m.From, corr: m.Corr, epoch: st.Epoch(), deadline: c.now + h.r.cfg.FetchMaxWait + time.Millisecond})
	}
}

// checkLongPolls: a leader answers every Fetch within the fetch max wait
// while it leads the epoch.
func (c *simCluster) checkLongPolls() {
	for _, h := range c.hosts {
		kept := h.parked[:0]
		for _, p := range h.parked {
			st := h.r.State()
			if !h.up || st.Role() != kraft.Leader || st.Epoch() != p.epoch {
				continue
			}
			if c.now > p.deadline {
				c.fail("leader %d left the Fetch of %d (corr %d) unanswered past the fetch max wait", h.id, p.from, p.corr)
			}
			kept = append(kept, p)
		}
		h.parked = kept
	}
}

// commit checks the records h reports committed against what the others
// reported at the same offsets.
func (c *simCluster) commit(h *simHost, hwm int64) {
	from := h.committed
	if from < h.log.StartOffset() {
		from = h.log.StartOffset()
	}
	if from < 0 {
		from = 0
	}
	for from < hwm {
		es, err := h.log.Read(from, 1<<20)
		if err != nil || len(es) == 0 {
			c.fail("replica %d: reading committed records at %d: %v", h.id, from, err)
			return
		}
		for _, e := range es {
			if e.Offset >= hwm {
				break
			}
			if e.Offset < int64(len(c.committed)) {
				if w := c.committed[e.Offset]; w.Epoch != e.Epoch || string(w.Data) != string(e.Data) {
					c.fail("committed record %d changed: replica %d has epoch %d %q, committed was epoch %d %q",
						e.Offset, h.id, e.Epoch, e.Data, w.Epoch, w.Data)
					return
				}
			} else if e.Offset == int64(len(c.committed)) {
				c.committed = append(c.committed, storage.Entry{Offset: e.Offset, Epoch: e.Epoch, Data: append([]byte(nil), e.Data...)})
			} else {
				c.fail("replica %d commits %d past the committed end %d", h.id, e.Offset, len(c.committed))
				return
			}
			from = e.Offset + 1
		}
	}
	if hwm > h.committed {
		h.committed = hwm
	}
}

func (c *simCluster) send(m Message) {
	if c.faulty && c.rng.Float64() < c.opts.loss {
		return
	}
	copies := 1
	if c.faulty && c.rng.Float64() < c.opts.dup {
		copies = 2
	}
	for i := 0; i < copies; i++ {
		c.seq++
		heap.Push(&c.net, simMsg{at: c.now + time.Duration(1+c.rng.Intn(10))*time.Millisecond, seq: c.seq, m: m})
	}
}

// next runs the earliest thing due: a message, a host's deadline or
// sync, or a client or fault operation.
func (c *simCluster) next() {
	at, what := c.nextOp, -1
	kind := "op"
	if len(c.net) > 0 && c.net[0].at < at {
		at, kind = c.net[0].at, "msg"
	}
	for i, h := range c.hosts {
		if !h.up {
			continue
		}
		if h.syncAt != 0 && h.syncAt < at {
			at, kind, what = h.syncAt, "sync", i
		}
		if d, ok := h.r.NextDeadline(); ok && d < at {
			at, kind, what = d, "tick", i
		}
	}
	if at > c.now {
		c.now = at
	}
	switch kind {
	case "msg":
		m := heap.Pop(&c.net).(simMsg).m
		if int(m.To) < 0 || int(m.To) >= len(c.hosts) || !c.hosts[m.To].up {
			return
		}
		h := c.hosts[m.To]
		c.received(h, m)
		h.r.Receive(c.now, m)
		c.carry(h)
	case "sync":
		h := c.hosts[what]
		h.syncAt = 0
		_ = h.log.Sync()
		h.r.Synced(c.now)
		c.carry(h)
	case "tick":
		h := c.hosts[what]
		h.r.Tick(c.now)
		c.carry(h)
	default:
		c.operate()
	}
	c.checkLongPolls()
}

// operate proposes at the leader and, in the faulty phase, crashes or
// restarts a replica now and then.
func (c *simCluster) operate() {
	c.nextOp = c.now + time.Duration(5+c.rng.Intn(20))*time.Millisecond
	if c.faulty && c.opts.crashes && c.rng.Intn(40) == 0 {
		h := c.hosts[c.rng.Intn(len(c.hosts))]
		if h.up {
			h.up = false
			h.r.Close() // a crash loses the download in progress
			h.log.Crash()
		} else {
			c.start(h)
		}
		return
	}
	for _, h := range c.hosts {
		if c.opts.reads && h.up && h.r.State().Role() == kraft.Leader && c.rng.Intn(2) == 0 {
			// A read at every replica that believes it leads: a stale
			// leader among them must not answer.
			ref, err := h.r.ReadIndex(c.now)
			if err == nil {
				h.reads[ref] = int64(len(c.committed))
			} else if err != ErrTooManyReads {
				c.fail("replica %d: read: %v", h.id, err)
			}
			c.carry(h)
		}
	}
	for _, h := range c.hosts {
		if h.up && h.r.State().Role() == kraft.Leader {
			c.proposed++
			if _, err := h.r.Propose(c.now, DataRecords([][]byte{[]byte(fmt.Sprintf("p%d", c.proposed))})); err != nil {
				c.fail("replica %d: propose: %v", h.id, err)
			}
			c.carry(h)
			return
		}
	}
}

// run runs the faulty phase, then heals everything and checks that every
// replica commits a record proposed after it.
func (c *simCluster) run() error {
	for c.err == nil && c.now < c.opts.duration {
		c.next()
	}
	c.faulty = false
	for _, h := range c.hosts {
		if !h.up {
			c.start(h)
		}
	}
	healed := c.now
	target := int64(-1)
	for c.err == nil && c.now < healed+20*time.Second {
		c.next()
		if target < 0 && c.now > healed+2*time.Second {
			target = int64(len(c.committed)) + 1
		}
		if target >= 0 {
			done := true
			for _, h := range c.hosts {
				done = done && h.committed >= target
			}
			if done {
				return c.err
			}
		}
	}
	if c.err != nil {
		return c.err
	}
	var ends []string
	for _, h := range c.hosts {
		ends = append(ends, fmt.Sprintf("%d: %v committed %d", h.id, h.r.State(), h.committed))
	}
	return fmt.Errorf("no progress within 20s of healing (want %d committed everywhere): %v", target, ends)
}

func runSchedules(t *testing.T, seeds int, opts clusterOpts) (failed int, first error) {
	t.Helper()
	for seed := int64(1); seed <= int64(seeds); seed++ {
		c := newSimCluster(seed, opts)
		err := c.run()
		installs += c.installs
		if err != nil {
			failed++
			if first == nil {
				first = fmt.Errorf("seed %d: %w", seed, err)
			}
		}
	}
	return failed, first
}

// planted is the bug every Replica the schedules start has planted.
var planted bug

// installs counts the snapshots installed over the schedules run.
var installs int

var scheduleOpts = clusterOpts{voters: 3, duration: 10 * time.Second, loss: 0.05, dup: 0.05, crashes: true}

// TestRandomSchedules runs the layer through random schedules of message
// delay, loss and duplication and crashes: no invariant or safety rule
// breaks, and every schedule commits once healed.
func TestRandomSchedules(t *testing.T) {
	seeds := 40
	if testing.Short() || raceEnabled {
		seeds = 10
	}
	for _, voters := range []int{3, 5} {
		opts := scheduleOpts
		opts.voters = voters
		failed, first := runSchedules(t, seeds, opts)
		require.Zero(t, failed, "%d voters: %d of %d schedules failed; first: %v", voters, failed, seeds, first)
	}
}

// TestRandomSchedulesCatchPlantedBugs: each bug planted in the layer's
// host logic makes some random schedule fail.
func TestRandomSchedulesCatchPlantedBugs(t *testing.T) {
	if !plant.Enabled {
		t.Skip("planted bugs need the build tag kraftbug (docs/design.md D201)")
	}
	for _, b := range []struct {
		bug  bug
		name string
	}{
		{bugKeepStale, "a stale response not dropped"},
		{bugParkForever, "a parked Fetch never answered"},
		{bugTwoFetches, "a retry that sends two Fetches in flight"},
		{bugWrongOffset, "fetched records appended at the wrong offset"},
	} {
		t.Run(b.name, func(t *testing.T) {
			planted = b.bug
			defer func() { planted = noBug }()
			failed, first := runSchedules(t, 10, scheduleOpts)
			require.NotZero(t, failed, "the planted bug went unnoticed in 10 schedules")
			t.Logf("%d of 10 schedules failed; first: %v", failed, first)
		})
	}
}

// TestRandomSchedulesWithSnapshots: the same schedules with every replica
// snapshotting its application every 20 offsets: replicas that fall
// behind the leader's log start download and install its snapshot, and
// what they restore is the committed prefix.
func TestRandomSchedulesWithSnapshots(t *testing.T) {
	seeds := 40
	if testing.Short() || raceEnabled {
		seeds = 10
	}
	for _, voters := range []int{3, 5} {
		opts := scheduleOpts
		opts.voters, opts.snapshotEvery = voters, 20
		installs = 0
		failed, first := runSchedules(t, seeds, opts)
		require.Zero(t, failed, "%d voters: %d of %d schedules failed; first: %v", voters, failed, seeds, first)
		require.NotZero(t, installs, "%d voters: no schedule installed a snapshot", voters)
		t.Logf("%d voters: %d snapshots installed over %d schedules", voters, installs, seeds)
	}
}
