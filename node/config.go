package node

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// Kafka's defaults for the runtime's knobs: the replica layer's (see
// package replica for what each means).
const (
	DefaultRequestTimeout     = replica.DefaultRequestTimeout
	DefaultRetryBackoff       = replica.DefaultRetryBackoff
	DefaultFetchMaxWait       = replica.DefaultFetchMaxWait
	DefaultFetchMaxBytes      = replica.DefaultFetchMaxBytes
	DefaultSnapshotChunkBytes = replica.DefaultSnapshotChunkBytes
)

// Config says how to run one replica.
type Config struct {
	// Config is the replica layer's configuration (docs/design.md D241):
	// Kraft (the replica's key, voters, timeouts and seed), Log (opened
	// with storage.Open or storage.NewMemLog; the node owns it from Start
	// on and closes it in Close), Records (FileRecords for Kafka's
	// quorum-state file, &MemRecords{} in memory), the knobs below, and
	// SnapshotVoters, BootstrapServers and Endpoint as described there.
	// Start sets its Bootstrap, Static, Snapshots and Logf from the
	// node's own fields (InitialVoters, BootstrapPath, Snapshots, Logger)
	// and passes the rest as given.
	//
	// RequestTimeout, RetryBackoff, FetchMaxBytes and SnapshotChunkBytes
	// default to Kafka's values when zero. FetchMaxWait zero is
	// DefaultFetchMaxWait (Kafka's 500 ms), or a quarter of the fetch
	// timeout (Kraft.FetchTimeout, kraft's default when zero) if that is
	// shorter, the ratio of Kafka's defaults (2 s and 500 ms). Set, it
	// must be below the fetch timeout: Start refuses a longer wait, with
	// which a caught-up follower's fetch timer fires while its Fetch is
	// parked at the leader and an idle cluster churns through elections
	// (docs/design.md D60). SnapshotChunkBytes is the most snapshot bytes
	// one FetchSnapshot response carries. SnapshotVoters, if set, says
	// that the application's snapshots hold the voter set themselves, in
	// a format of their own (Kafka's: KRaftVersion and Voters control
	// records after the SnapshotHeader), and reads it from a whole
	// snapshot: the runtime then writes no voter set header of its own
	// (replica.WriteSnapshotVoters), Snapshot finds the voter set in force
	// with SnapshotVotersOf(w) and writes it, and Restore gets the
	// snapshot's bytes as they are stored (docs/design.md D157).
	// BootstrapServers (Kafka's controller.quorum.bootstrap.servers) must
	// be addresses the transport knows. Endpoint is the transport's listen
	// address as the others reach it.
	replica.Config
	// Transport carries messages to and from the other replicas. The node
	// owns it from Start on and closes it in Close.
	Transport Transport

	// OnCommit, if set, receives the committed records in order, each
	// exactly once per node life, from one goroutine of its own (Kafka's
	// RaftClient.Listener.handleCommit). Control records (LeaderChange) are
	// left out. A slow OnCommit delays only later OnCommit calls.
	OnCommit func(records []Record)
	// ShareCommitted hands OnCommit the log's own memory rather than
	// copies, when the log can share it (storage.SharedReader: MemLog):
	// OnCommit must then not modify a record's Data, which the log never
	// changes in place, so it may keep it. hashicorp/raft's FSM.Apply
	// gets its log's records so (docs/design.md D148). Other logs
	// (FileLog) read fresh copies either way.
	ShareCommitted bool

	// Snapshots, if set, keeps the replica's snapshots (storage.OpenSnapshots;
	// a directory beside the log's). With it the node serves FetchSnapshot
	// requests from it, downloads and installs the leader's snapshot when
	// its log is too far behind, takes snapshots with Snapshot, and passes
	// the snapshot ids and the log start to kraft.NewState at Start. The
	// node owns it from Start on and closes it in Close. It hides the
	// embedded replica.Config.Snapshots, which Start sets from it.
	Snapshots *storage.Snapshots
	// Snapshot, if set, writes the application's state to w: the state
	// after every committed record below upTo.Offset (upTo.Epoch is the
	// epoch of the record before it) and none after. It is called from
	// OnCommit's goroutine, between two OnCommit calls, whenever
	// SnapshotEvery offsets were applied since the last snapshot; the node
	// then freezes the file, reports it to the state (SnapshotCreated),
	// deletes the log before it (DeleteBefore, LogStartMoved) and the
	// older snapshots, but for one a follower is downloading (kept until
	// its download ends; docs/design.md D62). An error drops the
	// snapshot; the next one is tried SnapshotEvery offsets later. It
	// needs Snapshots, Restore and a positive SnapshotEvery.
	Snapshot func(upTo kraft.LogEnd, w io.Writer) error
	// SnapshotEvery is how many offsets (records, control records
	// included) are applied between two snapshots.
	SnapshotEvery int64
	// Restore, if set, replaces the application's state by the snapshot id
	// read from r (the state after every committed record below id.Offset).
	// It is called from OnCommit's goroutine before any OnCommit of a
	// record at or after id.Offset: at Start with the latest snapshot
	// (Start returns once it is done, and fails with its error), and when
	// a follower installs a snapshot downloaded from the leader (records
	// below it are never handed to OnCommit then; an error stops the
	// node). The snapshot of Start always comes before an installed one.
	// It needs Snapshots, and is required with Snapshots and OnCommit.
	Restore func(id kraft.LogEnd, r io.Reader) error
	// InitialVoters, if set, bootstraps a dynamic quorum (KIP-853,
	// kraft.version 1; Kafka's kafka-storage format --initial-controllers):
	// the voter set the log starts with, each voter with a directory id and
	// the endpoint the others reach it at. Give it, the same on every
	// replica, to the replicas that start the quorum; a replica added later
	// starts without it (and with Kraft.Observer) and learns the voter set
	// from the leader's log. Kraft.Voters must then be empty. With
	// BootstrapPath, it is written there durably at the first Start (into
	// an empty log only) and read back from there afterwards: a host that
	// formats its data directories writes the checkpoint then and leaves
	// InitialVoters nil, so that a wiped directory is not bootstrapped
	// again (see the package doc).
	InitialVoters []Voter
	// BootstrapPath is the bootstrap checkpoint file that keeps
	// InitialVoters (storage.BootstrapPath(dir) for a data directory). A
	// replica with a checkpoint there is bootstrapped even when
	// InitialVoters is nil. Empty: InitialVoters are used as given at every
	// Start (tests, in memory).
	BootstrapPath string
	// Logger receives the runtime's log records (log/slog): role changes
	// with kraft's reasons, voter-set changes, snapshots, cluster id
	// refusals, lagging voters, slow syncs, faults and I/O errors, each
	// with an "event" attribute (the Event constants) and, where an
	// operator should act, an "advice" attribute (docs/design.md D85).
	// Repeating events are rate-limited. The node adds a "node" attribute
	// (its id).
	Logger *slog.Logger
	// Logf, if set and Logger is nil, receives each record of Info level
	// and above as one line: the level, the message, then the attributes
	// as key=value. It hides the embedded replica.Config.Logf, which
	// Start points at the node's logger.
	Logf func(format string, args ...interface{})
	// LagThreshold is how many records a voter may lag behind the leader's
	// log end before the leader logs it (EventFollowerLagging);
	// DefaultLagThreshold when zero, never when negative.
	LagThreshold int64
	// SlowSyncThreshold is how long a log sync may take before it is
	// logged (EventSlowSync); DefaultSlowSyncThreshold when zero, never
	// when negative.
	SlowSyncThreshold time.Duration
	// SlowSyncResign, if positive, makes a leader resign (as Resign does)
	// once this many syncs of its log in a row took longer than
	// SlowSyncThreshold, so that a voter whose disk may be healthy leads:
	// only while a majority of the voters fetched within the fetch timeout
	// (a successor can be elected), and at most once every ten minutes
	// (EventSlowSyncResign; docs/design.md D93). Zero: a slow leader only
	// logs (EventSlowSync).
	SlowSyncResign int
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.Log == nil:
		return c, errors.New("node: Config.Log is nil")
	case c.Records == nil:
		return c, errors.New("node: Config.Records is nil")
	case c.Transport == nil:
		return c, errors.New("node: Config.Transport is nil")
	case c.RequestTimeout < 0 || c.RetryBackoff < 0 || c.FetchMaxWait < 0 || c.FetchMaxBytes < 0 ||
		c.SnapshotChunkBytes < 0 || c.SnapshotEvery < 0 || c.SlowSyncResign < 0:
		return c, errors.New("node: negative timeout, backoff, size or snapshot interval")
	case c.SnapshotChunkBytes > MaxFrameSize-1024:
		return c, fmt.Errorf("node: SnapshotChunkBytes %d does not fit in a frame of %d bytes", c.SnapshotChunkBytes, MaxFrameSize)
	case c.Snapshots == nil && (c.Snapshot != nil || c.Restore != nil):
		return c, errors.New("node: Config.Snapshot or Config.Restore without Config.Snapshots")
	case c.Snapshots != nil && c.OnCommit != nil && c.Restore == nil:
		return c, errors.New("node: Config.OnCommit with Config.Snapshots needs Config.Restore: records below a snapshot are not handed to OnCommit")
	case c.Snapshot != nil && c.Restore == nil:
		return c, errors.New("node: Config.Snapshot needs Config.Restore to load its snapshots")
	case c.Snapshot != nil && c.SnapshotEvery == 0:
		return c, errors.New("node: Config.Snapshot needs a positive Config.SnapshotEvery")
	case c.InitialVoters != nil && len(c.Kraft.Voters) > 0:
		return c, errors.New("node: Config.InitialVoters with a static voter set (Config.Kraft.Voters)")
	}
	if c.InitialVoters != nil {
		keys := keysOf(c.InitialVoters)
		for i, k := range keys {
			if k.DirectoryID == ([16]byte{}) {
				return c, fmt.Errorf("node: initial voter %d has no directory id", k.ID)
			}
			if k.ID < 0 || kraft.VoterByID(keys[:i], k.ID) >= 0 {
				return c, fmt.Errorf("node: initial voter id %d is negative or appears twice", k.ID)
			}
		}
		if len(keys) == 0 || len(keys) > kraft.MaxVoters {
			return c, fmt.Errorf("node: %d initial voters, want 1 to %d", len(keys), kraft.MaxVoters)
		}
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	fetchTimeout := c.Kraft.FetchTimeout
	if fetchTimeout == 0 {
		fetchTimeout = kraft.DefaultFetchTimeout
	}
	switch {
	case c.FetchMaxWait == 0:
		c.FetchMaxWait = DefaultFetchMaxWait
		if fetchTimeout/4 < c.FetchMaxWait {
			c.FetchMaxWait = fetchTimeout / 4
		}
	case c.FetchMaxWait >= fetchTimeout:
		return c, fmt.Errorf("node: Config.FetchMaxWait %v is not below the fetch timeout %v: "+
			"a caught-up follower's fetch timer would fire while its Fetch is parked at the leader "+
			"(leave FetchMaxWait zero for a quarter of the fetch timeout, at most %v)",
			c.FetchMaxWait, fetchTimeout, DefaultFetchMaxWait)
	}
	if c.FetchMaxBytes == 0 {
		c.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if c.SnapshotChunkBytes == 0 {
		c.SnapshotChunkBytes = DefaultSnapshotChunkBytes
	}
	c.Logger = newLogger(c.Logger, c.Logf)
	if c.LagThreshold == 0 {
		c.LagThreshold = DefaultLagThreshold
	}
	if c.SlowSyncThreshold == 0 {
		c.SlowSyncThreshold = DefaultSlowSyncThreshold
	}
	return c, nil
}

// RecordStore keeps a replica's quorum-state record durably
// (replica.RecordStore: Read, and a Write that is durable on return).
type RecordStore = replica.RecordStore

// FileRecords keeps the record in Kafka's quorum-state file at Path
// (storage.QuorumStatePath(dir) for a data directory).
type FileRecords struct{ Path string }

// Read reads the file; a missing file is nil.
func (f FileRecords) Read() (*kraft.QuorumRecord, error) { return storage.ReadQuorumState(f.Path) }

// Write replaces the file atomically and durably.
func (f FileRecords) Write(r kraft.QuorumRecord) error { return storage.WriteQuorumState(f.Path, r) }

// MemRecords keeps the record in memory, for tests. Its zero value holds
// no record.
type MemRecords struct {
	mu  sync.Mutex
	rec *kraft.QuorumRecord
}

// Read returns the last record written.
func (m *MemRecords) Read() (*kraft.QuorumRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rec == nil {
		return nil, nil
	}
	r := *m.rec
	return &r, nil
}

// Write keeps r.
func (m *MemRecords) Write(r kraft.QuorumRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rec = &r
	return nil
}

// Record is one committed record as OnCommit sees it.
type Record struct {
	Offset int64
	Epoch  kraft.Epoch
	Data   []byte
}

// Errors of the client API.
var (
	// ErrNotLeader: the replica is not the leader; NotLeaderError says
	// which replica is, if known.
	ErrNotLeader = errors.New("node: not the leader")
	// ErrLeadershipLost: the replica lost leadership (or the record was
	// truncated) before the record committed. The record may still commit
	// under the next leader, or may be gone: the outcome is unknown, as
	// with Kafka's NotLeaderException after an append. ReadIndex fails
	// with it too when leadership is lost before the read was confirmed.
	ErrLeadershipLost = errors.New("node: leadership lost before the record committed")
	// ErrStopped: the node is closed or stopped on an error (Err says
	// which).
	ErrStopped = errors.New("node: stopped")
	// ErrTooManyAppends: MaxPendingAppends appends wait for their commit
	// at the leader; nothing was appended, and the caller may retry
	// (docs/design.md D203).
	ErrTooManyAppends = errors.New("node: too many appends waiting for their commit")
)

// MaxPendingAppends is the most appends (Append, AppendMany, voter
// changes' records) the leader holds waiting for their commit; one more
// is refused with ErrTooManyAppends before anything is written, and
// Metrics.AppendsRefused counts it. Each waits in its caller's goroutine,
// so the bound caps the memory a leader without a quorum holds for its
// callers: 65536 is far above the 64 concurrent clients of the
// benchmarks (docs/design.md D203).
const MaxPendingAppends = 65536

// maxPendingAppends is MaxPendingAppends; a test lowers it.
var maxPendingAppends = MaxPendingAppends

// NotLeaderError is ErrNotLeader with the leader this replica knows of.
type NotLeaderError struct {
	Leader kraft.NodeID // kraft.NoNode if unknown
	Epoch  kraft.Epoch
}

func (e *NotLeaderError) Error() string {
	if e.Leader == kraft.NoNode {
		return fmt.Sprintf("node: not the leader (no leader known in epoch %d)", e.Epoch)
	}
	return fmt.Sprintf("node: not the leader (the leader of epoch %d is %d)", e.Epoch, e.Leader)
}

// Unwrap makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }
