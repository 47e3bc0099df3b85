package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// Node runs one replica: one goroutine owns its replica.Replica (the
// protocol between kraft.State and the I/O), feeds it every input
// (messages, the clock, completed log syncs, client calls) and carries out
// its outputs: sends, syncs, commits for the applier. Its methods are safe
// for concurrent use.
type Node struct {
	// timersLive counts the timers the node made (its one timer, re-armed
	// with Reset); timersMax is the most there were (tests read them).
	// First in the struct: atomic 64-bit words must be aligned.
	timersLive, timersMax int64

	cfg   Config
	local kraft.ReplicaKey

	calls    chan func()   // client calls, run by the loop
	done     chan struct{} // closed when the loop has stopped
	stopOnce sync.Once
	stop     chan struct{}

	mu  sync.Mutex // guards err
	err error

	// Internal wake-ups (the timer, completed syncs, snapshots taken) go
	// to the loop apart from calls: a callback appends its function to
	// internal and signals wake, which holds one signal, so it never waits
	// and never takes a slot a client call needs.
	internalMu sync.Mutex
	internal   []func()
	wake       chan struct{}

	// Loop-owned.
	r        *replica.Replica
	st       kraft.State // the replica's state after the latest input
	epoch    time.Time   // the replica's time 0
	now      func() time.Time
	timer    *time.Timer   // the one timer: the replica's next deadline
	timerAt  time.Duration // when timer fires, if armed
	armed    bool
	waiters  []*waiter
	hwm      int64
	leaderCh []chan Handover            // Shutdowns waiting for a successor
	xferCh   chan replica.TransferEnded // TransferLeadership waiting for its end (transfer.go)

	// syncOnLoop: the log syncs without I/O (storage.MemLog), so a Sync
	// runs on the loop at the end of carry, not in a goroutine (D146);
	// syncDue says one is asked for. Loop-owned.
	syncOnLoop, syncDue bool

	voterCalls map[uint64]*voterCall // client voter changes by Ref
	boot       []Voter               // the bootstrap checkpoint's set; read-only after Start
	static     bool                  // a static voter set: no VotersRecords, no voter set in snapshots
	met        loopMetrics           // for Metrics (metrics.go)

	// reads are the ReadIndex callers waiting for the replica, by Ref;
	// readBatch those waiting for the loop to take their read (read.go).
	reads     map[uint64][]chan<- readAnswer
	readMu    sync.Mutex
	readBatch []chan<- readAnswer

	// The log (logging.go): the logger with the node's id, the rate limits
	// of repeating events, and what the loop watches to log changes
	// (watch.go).
	log    *slog.Logger
	limits limiter
	watch  watchState

	// Applier.
	commitMu   sync.Mutex
	commitCond *sync.Cond
	commitHWM  int64
	restore    *kraft.LogEnd // a snapshot to hand to Restore before any later record
	applierOut chan struct{}

	// Applied progress, for WaitApplied: applied is the offset after the
	// last record OnCommit was handed (or a restored snapshot covers);
	// appliedWait are the callers waiting for an offset below it.
	appliedMu   sync.Mutex
	applied     int64
	appliedWait []appliedWaiter
}

type appliedWaiter struct {
	offset int64
	ch     chan struct{}
}

type waiter struct {
	end   int64 // the offset after the last appended record
	epoch kraft.Epoch
	ch    chan error
}

// Record payloads carry a one-byte type (replica.RecordData and the
// control records); OnCommit leaves the control records out.
const (
	recordData         = replica.RecordData
	recordLeaderChange = replica.RecordLeaderChange
	recordVoters       = replica.RecordVoters
)

// Start opens the replica: it reads the quorum-state record, rebuilds the
// state from it and the log with kraft.NewState (Kafka's startup rules),
// restores the latest snapshot and starts the loop. The node owns
// cfg.Log and cfg.Transport from now on.
func Start(cfg Config) (*Node, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if f, ok := cfg.Records.(FileRecords); ok {
		// A vote lost or rolled back on disk (storage.ErrDamaged): the
		// record must hold at least the highest epoch the log (or its
		// latest snapshot) shows.
		rec, err := cfg.Records.Read()
		if err != nil {
			return nil, fmt.Errorf("node: reading the quorum state: %w", err)
		}
		epoch := cfg.Log.End().Epoch
		if cfg.Snapshots != nil {
			if id, ok := cfg.Snapshots.Latest(); ok && id.Epoch > epoch {
				epoch = id.Epoch
			}
		}
		if err := storage.CheckQuorumState(f.Path, rec, epoch); err != nil {
			return nil, fmt.Errorf("node: %w", err)
		}
	}
	boot, err := bootstrapVoters(cfg)
	if err != nil {
		return nil, err
	}
	static := len(cfg.Kraft.Voters) > 0 && boot == nil
	n := &Node{
		cfg:        cfg,
		local:      cfg.Kraft.Local,
		calls:      make(chan func(), 64),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		stop:       make(chan struct{}),
		hwm:        -1,
		commitHWM:  -1,
		applierOut: make(chan struct{}),
		now:        time.Now,
		voterCalls: map[uint64]*voterCall{},
		boot:       boot,
		static:     static,
		log:        cfg.Logger.With("node", int32(cfg.Kraft.Local.ID)),
		limits:     limiter{every: DefaultLogEvery},
	}
	n.epoch = n.now()
	rlog := cfg.Log
	if ml, ok := cfg.Log.(*storage.MemLog); ok {
		if _, ok := cfg.Transport.(*MemEndpoint); ok {
			rlog = keepingMemLog{ml} // D147
		}
	}
	rcfg := cfg.Config // D241
	rcfg.Log, rcfg.Bootstrap, rcfg.Static, rcfg.Logf, rcfg.Snapshots = rlog, boot, static, n.replicaLogf, nil
	if cfg.Snapshots != nil {
		rcfg.Snapshots = replica.StorageSnapshots(cfg.Snapshots)
	}
	n.met.logEnd = cfg.Log.End().Offset // before the replica writes (metrics.go)
	r, err := replica.New(rcfg, 0)
	if err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.r, n.st = r, r.State()
	_, n.syncOnLoop = cfg.Log.(*storage.MemLog) // D146
	n.commitCond = sync.NewCond(&n.commitMu)
	// The application starts from the latest snapshot, then takes the
	// records after it. The applier restores it before anything else
	// runs: a snapshot installed from the leader, which deletes the older
	// snapshots, comes after it, as Restore's contract says.
	var latest *kraft.LogEnd
	if id, ok := n.st.LatestSnapshot(); ok && id.Offset > 0 {
		latest = &id
	}
	restored := make(chan error, 1)
	go n.applier(latest, restored)
	if err := <-restored; err != nil {
		return nil, err
	}
	n.logEvent(slog.LevelInfo, EventStarted, "", fmt.Sprintf("started: %v", n.st), "state", n.st.String())
	n.watchStart()
	n.carry()
	go n.run()
	return n, nil
}

// clock is the replica's time: the monotonic time since Start.
func (n *Node) clock() time.Duration { return n.now().Sub(n.epoch) }

// run is the loop.
func (n *Node) run() {
	defer close(n.done)
	inbox := n.cfg.Transport.Inbox()
	var downs <-chan kraft.NodeID
	if pd, ok := n.cfg.Transport.(PeerDownReporter); ok {
		downs = pd.PeerDowns()
	}
	for {
		if n.Err() != nil {
			return
		}
		n.pollStart()
		select {
		case <-n.stop:
			return
		case m, ok := <-inbox:
			if !ok {
				n.fail(errors.New("node: transport closed"))
				return
			}
			n.pollEnd()
			n.noteFetch(m)
			n.r.Receive(n.clock(), m)
		case id := <-downs:
			n.pollEnd()
			n.r.PeerDown(n.clock(), id)
		case f := <-n.calls:
			n.pollEnd()
			f()
		case <-n.wake:
			n.pollEnd()
			n.runInternal()
		}
		n.carry()
	}
}

// internalCall runs f on the loop, after the input being handled. It
// never blocks (the timer, the syncer and the applier call it); after the
// loop stopped, f never runs.
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
		n.carry()
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
		return fmt.Errorf("%w: %w", ErrStopped, err)
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
		n.logEvent(slog.LevelError, EventStopped, adviceStopped, fmt.Sprintf("stopping: %v", err), "err", err.Error())
	}
	n.mu.Unlock()
	n.stopOnce.Do(func() { close(n.stop) })
}

// carry carries out the replica's outputs in order, then arms the one
// timer at the replica's next deadline.
func (n *Node) carry() {
	for {
		n.carryOutputs()
		if !n.syncDue || n.Err() != nil {
			break
		}
		n.syncDue = false
		n.syncHere()
	}
	n.observeState(n.r.State())
	n.st = n.r.State()
	n.watchState()
	n.armTimer()
}

// carryOutputs carries out the outputs the replica has.
func (n *Node) carryOutputs() {
	for _, o := range n.r.Take() {
		if n.Err() != nil {
			return
		}
		n.observe(o)
		switch o := o.(type) {
		case replica.Send:
			n.cfg.Transport.Send(o.Message)
		case replica.Sync:
			if n.syncOnLoop {
				n.syncDue = true
				continue
			}
			n.sync()
		case replica.Commit:
			n.hwm = o.HighWatermark
			n.completeWaiters()
			n.commitMu.Lock()
			n.commitHWM = o.HighWatermark
			n.commitCond.Broadcast()
			n.commitMu.Unlock()
		case replica.Installed:
			// After the log reset: the applier reads the log from the
			// snapshot on.
			n.commitMu.Lock()
			n.restore = &o.Snapshot
			n.commitCond.Broadcast()
			n.commitMu.Unlock()
		case replica.RoleChange:
			n.onRoleChanged(o.RoleChanged)
		case replica.VoterChangeAnswer:
			n.voterChangeResponse(o.Response)
		case replica.ReadReady:
			n.readAnswered(o.Ref, o.Offset, nil)
		case replica.ReadFailed:
			n.readAnswered(o.Ref, 0, o.Err)
		case replica.TransferEnded:
			if n.xferCh != nil {
				n.xferCh <- o
				n.xferCh = nil
			}
		case replica.Peer:
			if pb, ok := n.cfg.Transport.(peerBook); ok {
				pb.SetPeer(o.ID, o.Endpoint)
			}
		case replica.Stopped:
			n.fail(fmt.Errorf("node: %w", o.Err))
			return
		}
	}
}

// armTimer arms the one timer at the replica's next deadline, unless it
// is armed there already. The timer is made once and re-armed with Reset,
// so arming allocates nothing.
func (n *Node) armTimer() {
	at, ok := n.r.NextDeadline()
	if !ok || (n.armed && at == n.timerAt) {
		return
	}
	d := at - n.clock()
	if d < 0 {
		d = 0
	}
	n.timerAt, n.armed = at, true
	if n.timer == nil {
		atomic.AddInt64(&n.timersLive, 1)
		atomic.StoreInt64(&n.timersMax, atomic.LoadInt64(&n.timersLive))
		tick := func() {
			// A firing of an earlier arming may come late: Tick with
			// nothing due does nothing, and the timer is armed again.
			n.armed = false
			n.r.Tick(n.clock())
		}
		n.timer = time.AfterFunc(d, func() { n.internalCall(tick) })
		return
	}
	n.timer.Reset(d)
}

// sync makes the log durable off the loop and reports it (group commit:
// one Sync for every write made while the previous one ran).
func (n *Node) sync() {
	go func() {
		err := n.syncLog()
		n.internalCall(func() {
			if err != nil {
				n.fail(fmt.Errorf("node: syncing the log: %w", err))
				return
			}
			n.r.Synced(n.clock())
		})
	}()
}

// syncHere syncs a log that syncs without I/O on the loop and reports it
// at once: the goroutine and the two wake-ups of sync would cost more than
// the Sync (D146).
func (n *Node) syncHere() {
	start := time.Now()
	err := n.cfg.Log.Sync()
	took := time.Since(start)
	n.met.fsync.observe(took)
	n.slowSync(took)
	if err != nil {
		n.fail(fmt.Errorf("node: syncing the log: %w", err))
		return
	}
	n.r.Synced(n.clock())
}

func (n *Node) onRoleChanged(a kraft.RoleChanged) {
	n.logEvent(slog.LevelInfo, EventRoleChanged, "", fmt.Sprintf("%v -> %v in epoch %d, leader %d (%s)", a.From, a.To, a.Epoch, a.LeaderID, a.Reason),
		"from", a.From.String(), "to", a.To.String(), "epoch", int32(a.Epoch), "leader", int32(a.LeaderID), "reason", a.Reason)
	if a.From == kraft.Leader {
		for _, w := range n.waiters {
			w.ch <- ErrLeadershipLost
		}
		n.waiters = nil
	}
	if a.LeaderID != kraft.NoNode && a.LeaderID != n.local.ID {
		for _, ch := range n.leaderCh {
			ch <- Handover{WasLeader: true, Successor: a.LeaderID, Epoch: a.Epoch}
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
// A committed record may not be applied yet on this replica when Append
// returns: WaitApplied waits for that.
func (n *Node) Append(ctx context.Context, records ...[]byte) (int64, error) {
	if len(records) == 0 {
		return 0, errors.New("node: no records")
	}
	// The one copy of the caller's records: with their type bytes, in one
	// block (the log may keep it, OwningAppender).
	return n.propose(ctx, replica.DataRecords(records))
}

// propose appends log payloads at the leader and waits for their commit.
func (n *Node) propose(ctx context.Context, data [][]byte) (int64, error) {
	ch := make(chan error, 1)
	var last int64
	var notLeader error
	err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			notLeader = &NotLeaderError{Leader: leaderOrNone(n.st), Epoch: n.st.Epoch()}
			return
		}
		if len(n.waiters) >= maxPendingAppends {
			n.met.appendsRefused++
			notLeader = ErrTooManyAppends
			return
		}
		end, err := n.r.Propose(n.clock(), data)
		if err != nil {
			notLeader = transferRefusal(n.st, err)
			return
		}
		last = end.Offset - 1
		n.waiters = append(n.waiters, &waiter{end: end.Offset, epoch: end.Epoch, ch: ch})
		n.carry()
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

// WaitApplied returns once every committed record up to offset has been
// handed to OnCommit on this replica (or is covered by a snapshot given
// to Restore): after Append returned offset, the application of this
// replica holds the record. It fails with ctx's error, or ErrStopped.
func (n *Node) WaitApplied(ctx context.Context, offset int64) error {
	n.appliedMu.Lock()
	if n.applied > offset {
		n.appliedMu.Unlock()
		return nil
	}
	w := appliedWaiter{offset: offset, ch: make(chan struct{})}
	n.appliedWait = append(n.appliedWait, w)
	n.appliedMu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stoppedErr()
	}
}

// appliedTo records that the records below next are applied, and wakes
// the WaitApplied callers it satisfies.
func (n *Node) appliedTo(next int64) {
	n.appliedMu.Lock()
	defer n.appliedMu.Unlock()
	if next <= n.applied {
		return
	}
	n.applied = next
	kept := n.appliedWait[:0]
	for _, w := range n.appliedWait {
		if w.offset < next {
			close(w.ch)
			continue
		}
		kept = append(kept, w)
	}
	n.appliedWait = kept
}

// ReadBarrier makes reads of this replica's application linearizable:
// it returns once every record committed before the call is applied here,
// and returns the offset below which they all are. It is ReadIndex, which
// writes nothing: the leader confirms its leadership with a round of
// messages to the voters (docs/design.md D120). A replica that does not
// lead fails with a *NotLeaderError naming the leader if known: ask it.
// (Before D120 each call appended a barrier record and waited for its
// commit, D65; logs may still hold such records, which OnCommit never
// sees.)
func (n *Node) ReadBarrier(ctx context.Context) (int64, error) {
	return n.ReadIndex(ctx)
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
		n.r.Resign(n.clock())
	}); err != nil {
		return err
	}
	return res
}

// Handover says how Shutdown left leadership.
type Handover struct {
	// WasLeader: the node led when Shutdown was called.
	WasLeader bool
	// Successor is the replica that led after it, in Epoch; kraft.NoNode
	// when Shutdown closed the node before another replica led.
	Successor kraft.NodeID
	Epoch     kraft.Epoch
}

// HandedOver reports whether another replica took over the leadership
// the node had.
func (h Handover) HandedOver() bool { return h.WasLeader && h.Successor != kraft.NoNode }

// Shutdown stops the node gracefully and says how it left leadership. A
// leader first hands leadership over (docs/design.md D27, D64): it
// resigns, stops taking election and fetch timeouts, and waits until
// another replica leads, ctx is done, or no handover can happen: it is the
// only voter, or no successor appeared within the handover bound (twice
// the fetch timeout plus the election timeout: a majority of the voters is
// then likely gone). Then it closes the node; the error is Close's.
func (n *Node) Shutdown(ctx context.Context) (Handover, error) {
	ch := make(chan Handover, 1)
	h := Handover{Successor: kraft.NoNode}
	alone := false
	if err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			return
		}
		h.WasLeader, h.Epoch = true, n.st.Epoch()
		alone = true
		for _, v := range n.st.Voters() {
			if v.ID != n.local.ID {
				alone = false
			}
		}
		if alone {
			return // nobody to hand over to
		}
		n.r.HoldTimeouts()
		n.leaderCh = append(n.leaderCh, ch)
		n.r.Resign(n.clock())
	}); err != nil {
		return h, n.Close()
	}
	if h.WasLeader && !alone {
		bound := time.NewTimer(n.handoverBound())
		defer bound.Stop()
		select {
		case got := <-ch:
			h = got
		case <-ctx.Done():
		case <-bound.C:
			n.logEvent(slog.LevelWarn, EventNoSuccessor, adviceNoSuccessor,
				fmt.Sprintf("no successor within %v of resigning: closing without a handover", n.handoverBound()))
		case <-n.done:
		}
	}
	return h, n.Close()
}

// handoverBound is how long Shutdown waits for a successor at most: twice
// the fetch timeout plus the election timeout. A follower that got the
// EndQuorumEpoch campaigns within an election timeout, or, had it missed
// it, after its fetch timeout; an election takes round trips on top.
func (n *Node) handoverBound() time.Duration {
	ft, et := n.cfg.Kraft.FetchTimeout, n.cfg.Kraft.ElectionTimeout
	if ft == 0 {
		ft = kraft.DefaultFetchTimeout
	}
	if et == 0 {
		et = kraft.DefaultElectionTimeout
	}
	return 2*ft + et
}

// Close stops the node at once, syncs and closes the log and closes the
// transport. It returns the error that stopped the node, if any.
func (n *Node) Close() error {
	n.stopOnce.Do(func() { close(n.stop) })
	<-n.done
	if n.timer != nil {
		n.timer.Stop()
	}
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
		n.r.Close()
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
		n.appliedTo(next)
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
			n.appliedTo(next)
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
				if shared && !n.cfg.ShareCommitted && n.cfg.OnCommit != nil {
					// D148: a copy only for an OnCommit that may modify it.
					data = make([]byte, len(e.Data)-1)
					copy(data, e.Data[1:])
				}
				out = append(out, Record{Offset: e.Offset, Epoch: e.Epoch, Data: data})
			}
			if replica.IsVotersRecord(e.Data) {
				vs, err := replica.DecodeVoters(e.Data[1:])
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
		n.appliedTo(next)
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
		}
		st.SnapshotsTaken, st.SnapshotsInstalled = n.r.SnapshotCounts()
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
		st.Voters = voterProgress(s)
	})
	return st, err
}

// voterProgress is, on a leader, each voter's end offset as the leader
// counts it (-1 before its first Fetch) and its lag behind the leader's
// log end; nil on any other role.
func voterProgress(s kraft.State) []VoterStatus {
	ends := s.VoterEndOffsets()
	if ends == nil {
		return nil
	}
	var out []VoterStatus
	for i, v := range s.Voters() {
		lag := s.LogEnd().Offset - ends[i]
		if ends[i] < 0 {
			lag = s.LogEnd().Offset
		}
		out = append(out, VoterStatus{ID: v.ID, EndOffset: ends[i], Lag: lag})
	}
	return out
}

// keepingMemLog is a MemLog that keeps the records a follower fetched
// rather than copying them: on a MemNetwork they are the leader's own
// records, handed over by reference (D145), which no log changes in place,
// so the replicas of an in-memory cluster share one copy of each record,
// as hashicorp/raft's in-memory replicas do (D147). Every other method is
// the MemLog's.
type keepingMemLog struct{ *storage.MemLog }

// AppendEntries appends fetched records without copying them.
func (l keepingMemLog) AppendEntries(entries ...storage.Entry) (kraft.LogEnd, error) {
	return l.MemLog.AppendEntriesOwned(entries...)
}
