package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
	if err := checkQuorumState(cfg); err != nil {
		return nil, err
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

// checkQuorumState refuses a quorum-state file that lost or rolled back
// a vote on disk (storage.ErrDamaged): the record must hold at least the
// highest epoch the log (or its latest snapshot) shows. Only Kafka's
// quorum-state file (FileRecords) is checked.
func checkQuorumState(cfg Config) error {
	f, ok := cfg.Records.(FileRecords)
	if !ok {
		return nil
	}
	// A vote lost or rolled back on disk (storage.ErrDamaged): the
	// record must hold at least the highest epoch the log (or its
	// latest snapshot) shows.
	rec, err := cfg.Records.Read()
	if err != nil {
		return fmt.Errorf("node: reading the quorum state: %w", err)
	}
	epoch := cfg.Log.End().Epoch
	if cfg.Snapshots != nil {
		if id, ok := cfg.Snapshots.Latest(); ok && id.Epoch > epoch {
			epoch = id.Epoch
		}
	}
	if err := storage.CheckQuorumState(f.Path, rec, epoch); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

// clock is the replica's time: the monotonic time since Start.
func (n *Node) clock() time.Duration { return n.now().Sub(n.epoch) }

// Err is the error that stopped the node (a Fault, an I/O error), or nil.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// Done is closed when the node has stopped (Close, or an error).
func (n *Node) Done() <-chan struct{} { return n.done }

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

// stopApplier in commitHWM tells the applier to stop.
const stopApplier = -2

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
