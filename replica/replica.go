package replica

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Kafka's defaults for the layer's knobs.
const (
	// DefaultRequestTimeout is controller.quorum.request.timeout.ms: a
	// request with no answer within it is sent again (Vote and
	// BeginQuorumEpoch after a quarter of the election timeout if that is
	// shorter, docs/design.md D95).
	DefaultRequestTimeout = 2 * time.Second
	// DefaultRetryBackoff is controller.quorum.retry.backoff.ms: the wait
	// before a request is sent again after a timeout or an error answer.
	DefaultRetryBackoff = 20 * time.Millisecond
	// DefaultFetchMaxWait is KafkaRaftClient's fetch max wait: how long a
	// leader holds a Fetch that has nothing new (long poll).
	DefaultFetchMaxWait = 500 * time.Millisecond
	// DefaultFetchMaxBytes is KafkaRaftClient's MAX_FETCH_SIZE_BYTES: the
	// most record bytes a leader attaches to one Fetch response (at least
	// one record is always sent).
	DefaultFetchMaxBytes = 8 << 20
	// DefaultSnapshotChunkBytes is the max_bytes a Kafka follower puts in
	// its FetchSnapshot requests: the most snapshot bytes one FetchSnapshot
	// response carries.
	DefaultSnapshotChunkBytes = 8 << 20
)

// Config says how to run one replica's protocol. Zero knobs take Kafka's
// defaults (see the Default constants).
type Config struct {
	// Kraft is the replica's configuration (its key, the voters, the
	// timeouts, the seed).
	Kraft kraft.Config
	// Log is the replica's log. The replica reads and writes it from its
	// own methods only; Sync is the host's (an Output asks for it).
	Log storage.Log
	// Records keeps the quorum-state record; Write is durable when it
	// returns.
	Records RecordStore
	// Snapshots, if set, keeps the replica's snapshots: the replica serves
	// FetchSnapshot requests from it, downloads the leader's snapshot into
	// it and installs it. Nil: no snapshots.
	Snapshots Snapshots

	RequestTimeout time.Duration
	RetryBackoff   time.Duration
	// FetchMaxWait is how long a leader holds a Fetch that has nothing new
	// (long poll); it must be below the fetch timeout (docs/design.md D60).
	FetchMaxWait       time.Duration
	FetchMaxBytes      int
	SnapshotChunkBytes int
	// SnapshotsKept is how many of its own snapshots the replica keeps
	// (the log starts at the oldest kept one, Kafka's deleteBeforeSnapshot);
	// 0 or 1: only the latest.
	SnapshotsKept int
	// SnapshotDownloadHold is how long a snapshot a follower may still be
	// downloading is kept past SnapshotsKept (docs/design.md D62): 0 is the
	// fetch timeout, negative is no hold.
	SnapshotDownloadHold time.Duration

	// Bootstrap is the voter set a dynamic quorum starts from (the
	// bootstrap checkpoint's, with endpoints), nil for none. Static says
	// the voter set is Kraft.Voters and never in the log.
	Bootstrap []Voter
	Static    bool
	// SnapshotVoters, if set, reads the voter set of a whole snapshot
	// (nil: none) in place of kraft's header (ReadSnapshotVoters): for
	// snapshots in another format that holds it, Kafka's control records
	// after the SnapshotHeader (docs/design.md D157).
	SnapshotVoters func(r io.Reader) ([]Voter, error)
	// BootstrapServers are replicas an observer that knows no voter yet
	// sends its first Fetch to, in turn.
	BootstrapServers []kraft.NodeID
	// Endpoint is this replica's endpoint as the others reach it: an
	// auto-joining observer sends it to the leader.
	Endpoint string

	// Logf, if set, receives the replica's log lines.
	Logf func(format string, args ...interface{})

	// Observer, if set, sees every step as it is carried out (a
	// simulator's invariant checks and traces); nil in production.
	Observer Observer
	// Step and Start, if set, replace kraft.Step and kraft.NewState: a
	// model checker plants protocol bugs through them to show that its
	// checks catch them. Nil in production.
	Step  func(kraft.State, kraft.Event) (kraft.State, []kraft.Action)
	Start func(kraft.Config, *kraft.QuorumRecord, kraft.LogState) (kraft.State, []kraft.Action, error)

	plant bug // a bug the project's tests plant (package internal/plant)
}

// Observer sees a replica's steps while they are carried out, so that a
// simulator checks its invariants against the layer its runtime runs
// (docs/design.md D75). Its methods run inside the replica's inputs, in
// this order for each step: Stepped (or Started), Carrying for each action
// before it is carried out, then Carried. They must not call the replica.
type Observer interface {
	// Started: kraft.NewState built st from the record rec and the log ls,
	// with its first actions acts.
	Started(rec *kraft.QuorumRecord, ls kraft.LogState, st kraft.State, acts []kraft.Action)
	// Stepped: Step took e from before to after with the actions acts.
	// A step with a kraft.Fault action stops the replica after Stepped.
	Stepped(e kraft.Event, before, after kraft.State, acts []kraft.Action)
	// Carrying: the action a of the step on e (nil at start) is about to
	// be carried out.
	Carrying(a kraft.Action, e kraft.Event)
	// Carried: every action of the step on e (nil at start) was carried
	// out; before is the state before the step.
	Carried(e kraft.Event, before kraft.State)
}

// RecordStore keeps a replica's quorum-state record durably.
type RecordStore interface {
	// Read returns the stored record, nil if none was ever stored.
	Read() (*kraft.QuorumRecord, error)
	// Write stores r durably (written and fsynced) before it returns.
	Write(r kraft.QuorumRecord) error
}

// Replica is one replica's protocol between kraft.State and the I/O:
// everything a host does that is neither a network, a clock nor a
// goroutine. It tracks requests as Kafka's RequestManager does (one in
// flight per destination and kind, correlation ids, timeouts and retries),
// drops stale responses, parks Fetch requests with nothing new (long poll),
// attaches records to Fetch answers and appends fetched ones, serves and
// downloads snapshots, and replays the voter sets of the log. Storage goes
// through the Log, RecordStore and Snapshots it was given; sending, time
// and syncing the log are the host's: each input takes the time, and the
// host carries out the Outputs in order (Take) before the next input.
//
// A Replica is deterministic: the same inputs at the same times give the
// same outputs. It is not safe for concurrent use.
type Replica struct {
	cfg   Config
	local kraft.ReplicaKey
	st    kraft.State
	buf   kraft.Buffer // the actions of the step being carried out
	err   error
	now   time.Duration

	out   []Output
	spare []Output  // the slice Take returned last, reused
	queue []inbound // events owed to the state, stepped before any input

	fetched []storage.Entry // the records of the Fetch response being stepped (AppendFetched)

	cur    *Message // the request being stepped, for its response
	noPark bool     // the request being stepped was parked: answer now
	corr   uint64

	timers    [kraft.VoterChangeTimer + 1]time.Duration // deadlines of kraft's timers; 0: not armed
	inflight  []*request
	retries   []retry
	lastFetch *Message // the latest Fetch sent, sent again on retries
	sentFetch bool     // a Fetch or FetchSnapshot went out during the step
	refusing  bool     // the step refused the leader (kraft.LeaderRefused)
	bootNext  int
	parked    []parkedFetch // at most MaxParkedFetches (D202)
	longPolls int
	// parkRefused counts the Fetches answered at once because
	// MaxParkedFetches were parked (D202).
	parkRefused uint64

	leaderHWM  int64 // LeaderHighWatermark; -1 after a role change
	syncing    bool  // a Sync output is not answered yet
	holdTimers bool  // HoldTimeouts: no election or fetch timeouts
	hwm        int64
	// slowFetch is one past the epoch in which a Fetch that could not be
	// parked timed out (0: none): the link is slow or lossy, and the
	// layer's Fetches wait the whole request timeout until the epoch
	// changes (timeoutOf, D100).
	slowFetch int64
	// leaderDown is one past the epoch in which the host reported the
	// leader's process gone (PeerDown; 0: none): a second report in the
	// epoch is ignored, so that it cannot cut a survivor's rank wait
	// short (D101).
	leaderDown int64

	snap snapshots

	voters voterState

	reads readState // linearizable reads (read.go)

	xfer transferState // a leadership transfer in progress (transfer.go)

	plant bug // a bug planted by the tests; noBug otherwise

	// The production check of the invariants (fault.go, D200): inputs
	// counted, and the role and epoch at the last check.
	inputs       uint64
	checkedRole  kraft.Role
	checkedEpoch kraft.Epoch
}

// inbound is a message or an event waiting to be stepped.
type inbound struct {
	msg    *Message
	ev     kraft.Event
	noPark bool // a parked Fetch stepped again: answer now
}

// New opens the replica: it completes what a crash interrupted in the log
// and snapshots, finds the voter sets, reads the quorum-state record and
// rebuilds the state from them with kraft.NewState (Kafka's startup
// rules), carrying out its first actions at time now. Take the outputs.
func New(cfg Config, now time.Duration) (*Replica, error) {
	cfg = cfg.withDefaults()
	rec, err := cfg.Records.Read()
	if err != nil {
		return nil, fmt.Errorf("replica: reading the quorum state: %w", err)
	}
	ls, err := recoverLog(cfg.Log, cfg.Snapshots)
	if err != nil {
		return nil, err
	}
	vsets, err := recoverVoters(cfg.Log, cfg.Snapshots, cfg.Bootstrap, cfg.Static, cfg.FetchMaxBytes, cfg.SnapshotVoters)
	if err != nil {
		return nil, err
	}
	ls.VoterSets = keySets(vsets)
	start := cfg.Start
	if start == nil {
		start = kraft.NewState
	}
	st, acts, err := start(cfg.Kraft, rec, ls)
	if err != nil {
		return nil, err
	}
	r := &Replica{cfg: cfg, local: cfg.Kraft.Local, st: st, hwm: -1, leaderHWM: -1, now: now, plant: cfg.plant}
	r.snap.served = map[kraft.LogEnd]time.Duration{}
	r.voters.init()
	for _, s := range vsets {
		r.addVoterSet(s.offset, s.voters)
	}
	if o := cfg.Observer; o != nil {
		o.Started(rec, ls, st, acts)
	}
	r.carry(acts, nil)
	if o := cfg.Observer; o != nil {
		o.Carried(nil, kraft.State{})
	}
	r.settle()
	return r, nil
}

func (c Config) withDefaults() Config {
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.FetchMaxWait == 0 {
		c.FetchMaxWait = DefaultFetchMaxWait
	}
	if c.FetchMaxBytes == 0 {
		c.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if c.SnapshotChunkBytes == 0 {
		c.SnapshotChunkBytes = DefaultSnapshotChunkBytes
	}
	if c.Logf == nil {
		c.Logf = func(string, ...interface{}) {}
	}
	return c
}

// State is the replica's kraft.State (a value: reading it is safe).
func (r *Replica) State() kraft.State { return r.st }

// Err is the error that stopped the replica (a Fault, a storage error), or
// nil. A stopped replica ignores every input.
func (r *Replica) Err() error { return r.err }

// LongPolls counts the parked Fetches answered when their wait was up.
func (r *Replica) LongPolls() int { return r.longPolls }

// Take returns the outputs of the inputs since the last Take, in the order
// to carry them out, and forgets them. The slice is the replica's: it is
// valid until the next Take.
func (r *Replica) Take() []Output {
	out := r.out
	r.out, r.spare = r.spare[:0], out
	return out
}

func (r *Replica) emit(o Output) { r.out = append(r.out, o) }

func (r *Replica) fail(err error) {
	if r.err == nil {
		r.err = err
		r.cfg.Logf("replica %d: stopping: %v", r.local.ID, err)
		r.emit(Stopped{Err: err})
	}
}

// input starts an input at time now; false: the replica is stopped.
func (r *Replica) input(now time.Duration) bool {
	if now > r.now {
		r.now = now
	}
	return r.err == nil
}

// settle steps what the input left owed to the state, then asks for a
// sync of what was written since the last one (group commit).
func (r *Replica) settle() {
	r.drain()
	r.checkTransfer()
	r.serveReads()
	if r.err == nil && !r.syncing && r.cfg.Log.Flushed() < r.cfg.Log.End().Offset {
		r.syncing = true
		r.emit(Sync{})
	}
	r.checkSettled()
}

// step feeds an event to the state and carries out the actions.
func (r *Replica) step(e kraft.Event) {
	if r.err != nil {
		return
	}
	before := r.st
	// carry never steps: it queues what it owes the state, so the
	// actions in r.buf stay valid while it runs.
	var next kraft.State
	var acts []kraft.Action
	if r.cfg.Step != nil {
		next, acts = r.cfg.Step(r.st, e)
	} else {
		next, acts = kraft.StepInto(&r.buf, r.st, e)
	}
	if o := r.cfg.Observer; o != nil {
		o.Stepped(e, before, next, acts)
	}
	for _, a := range acts {
		if f, ok := a.(kraft.Fault); ok {
			r.fail(fmt.Errorf("replica: fault on %T: %s", e, f.Reason))
			return
		}
	}
	if !r.checkStepped(next) {
		return
	}
	r.st = next
	r.carry(acts, e)
	if o := r.cfg.Observer; o != nil {
		o.Carried(e, before)
	}
	if r.st.Role() == kraft.Leader && (r.st.LogEnd() != before.LogEnd() || r.st.HighWatermark() != before.HighWatermark()) {
		r.wakeParked()
	}
}

// drain steps the events owed to the state (write reports, parked
// fetches): they go before any new input.
func (r *Replica) drain() {
	for len(r.queue) > 0 && r.err == nil {
		in := r.queue[0]
		r.queue = r.queue[1:]
		if in.msg != nil {
			r.onMessage(*in.msg, in.noPark)
			continue
		}
		r.step(in.ev)
	}
}

// carry carries out the actions of one step on e (nil at start) in order.
func (r *Replica) carry(acts []kraft.Action, e kraft.Event) {
	if r.planted(bugPersistLast) {
		acts = persistLast(acts)
	}
	for _, a := range acts {
		if r.err != nil {
			return
		}
		if o := r.cfg.Observer; o != nil {
			o.Carrying(a, e)
		}
		switch a := a.(type) {
		case kraft.Persist:
			if err := r.cfg.Records.Write(a.Record); err != nil {
				r.fail(fmt.Errorf("replica: persisting %+v: %w", a.Record, err))
				return
			}
		case kraft.SendFetchResponse:
			r.fetchResponse(a)
		case kraft.SendFetchSnapshotResponse:
			r.fetchSnapshotResponse(a)
		case kraft.WriteSnapshotChunk:
			if err := r.writeChunk(a); err != nil {
				r.fail(err)
				return
			}
		case kraft.InstallSnapshot:
			if err := r.install(a.Snapshot); err != nil {
				r.fail(err)
				return
			}
		case kraft.TruncateLog:
			if err := r.cfg.Log.Truncate(a.To); err != nil {
				r.fail(fmt.Errorf("replica: truncating to %d: %w", a.To, err))
				return
			}
			r.truncateVoterSets(a.To)
		case kraft.AppendLeaderChange:
			r.appendLeaderChange(a)
		case kraft.AppendFetched:
			r.appendFetched(a)
		case kraft.AppendVoters:
			r.appendVoters(a)
		case kraft.SendAPIVersions:
			r.sendRequest(Message{From: r.local.ID, To: a.To.ID, APIVersions: true}, kind(kraft.InFlightOf(a)))
		case kraft.SendVoterChangeResponse:
			r.emit(VoterChangeAnswer{Response: a})
		case kraft.SendVoterChange:
			r.sendVoterChange(a)
		case kraft.HighWatermarkChanged:
			r.hwm = a.HighWatermark
			r.emit(Commit{HighWatermark: a.HighWatermark})
		case kraft.ResetTimer:
			r.timers[a.Timer] = r.now + a.After
			if r.timers[a.Timer] == 0 {
				r.timers[a.Timer] = 1 // 0 means not armed
			}
		case kraft.StopTimer:
			r.timers[a.Timer] = 0
		case kraft.RoleChanged:
			r.onRoleChanged(a)
		case kraft.LeaderRefused:
			// The state dropped a download the refusal ended, if any.
			r.refusing = true
			if _, _, ok := r.st.SnapshotDownload(); !ok {
				r.abortDownload()
			}
			r.emit(LeaderRefused{LeaderRefused: a})
		case kraft.Fault:
			// step stops the replica before carrying out a faulted step.
		default:
			// Every other message, read from the catalogue (D230,
			// D280): a request goes out under its kind (one Fetch or
			// FetchSnapshot in flight, a FetchSnapshot taking a
			// Fetch's place with its retries), a response answers the
			// request being stepped.
			if kraft.IsRequest(a) {
				r.send(a, kind(kraft.InFlightOf(a)))
			} else if kraft.IsMessage(a) {
				r.respond(a, nil, nil)
			}
		}
	}
}

// appendLeaderChange writes the LeaderChange record of a new leader's
// epoch, then, when asked, Kafka's KRaftVersionRecord (kraft.version 1)
// and the bootstrap voter set (it is never replicated otherwise): Kafka's
// [LeaderChange, KRaftVersion, Voters] (docs/design.md D155).
func (r *Replica) appendLeaderChange(a kraft.AppendLeaderChange) {
	records := [][]byte{LeaderChangeRecord(a)}
	var vs []Voter
	if a.VotersRecord {
		vs = r.votersWithEndpoints(a.Voters, nil)
		records = append(records, KRaftVersionRecord(kraft.KRaftVersionReconfig), VotersRecord(vs))
	}
	end, err := r.write(a.Epoch, records...)
	if err != nil {
		return
	}
	if a.VotersRecord {
		r.queue = append(r.queue, inbound{ev: kraft.VotersAppended{Offset: end.Offset - 1, Voters: a.Voters}})
		r.addVoterSet(end.Offset-1, vs)
	}
}

// write appends records of one epoch to the log and queues their report.
// The records are the replica's own, made for the write and never touched
// again, so a log that can keep them without a copy
// (storage.OwningAppender) does.
func (r *Replica) write(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error) {
	before := r.cfg.Log.End()
	var end kraft.LogEnd
	var err error
	if oa, ok := r.cfg.Log.(storage.OwningAppender); ok {
		end, err = oa.AppendOwned(epoch, records...)
	} else {
		end, err = r.cfg.Log.Append(epoch, records...)
	}
	if err != nil {
		r.fail(fmt.Errorf("replica: appending to the log: %w", err))
		return before, err
	}
	r.queue = append(r.queue, inbound{ev: kraft.LogAppended{End: end}})
	return end, nil
}

func (r *Replica) onRoleChanged(a kraft.RoleChanged) {
	// Kafka's resetConnections: responses to earlier requests are dropped.
	r.inflight = r.inflight[:0]
	r.retries = r.retries[:0]
	r.leaderHWM = -1
	if a.From == kraft.Leader {
		r.wakeParked()
	}
	r.emit(RoleChange{RoleChanged: a})
}

// ErrNotLeader is Propose's answer on a replica that does not lead.
var ErrNotLeader = errors.New("replica: not the leader")

// Propose appends data records at the leader at time now (each gets the
// RecordData type byte in front: data must have room for it at data[i][0],
// see NewRecord) and returns the log end after them. The records are
// committed when a Commit output's high watermark reaches the end.
func (r *Replica) Propose(now time.Duration, records [][]byte) (kraft.LogEnd, error) {
	if !r.input(now) {
		return kraft.LogEnd{}, r.err
	}
	if r.st.Role() != kraft.Leader {
		return kraft.LogEnd{}, ErrNotLeader
	}
	if r.xfer.active {
		return kraft.LogEnd{}, ErrTransferring
	}
	end, err := r.write(r.st.Epoch(), records...)
	r.settle()
	return end, err
}

// Resign makes the leader give up leadership gracefully (kraft.Resign).
func (r *Replica) Resign(now time.Duration) {
	if !r.input(now) {
		return
	}
	r.step(kraft.Resign{})
	r.settle()
}

// HoldTimeouts stops delivering election and fetch timeouts (a leader
// that resigned to shut down waits for its successor, docs/design.md D27).
func (r *Replica) HoldTimeouts() { r.holdTimers = true }

// Synced reports that the Sync asked for completed at time now (the
// host read nothing: the replica reads the log's flushed offset itself).
func (r *Replica) Synced(now time.Duration) {
	r.syncing = false
	if !r.input(now) {
		return
	}
	// A truncation since the Sync started has already lowered it.
	if f := r.cfg.Log.Flushed(); f > r.st.FlushedOffset() {
		r.step(kraft.LogFlushed{Offset: f})
	}
	r.settle()
}

// PeerDown reports, at time now, that the process of replica id is gone
// while its host is up: the host's connection to it was closed or reset
// by the other side, and a new connection was refused at once (no process
// listens at its address). A machine that is gone, or a network that
// drops everything, refuses nothing, and is found by the fetch timeout
// as before.
//
// When id is the leader this replica follows, the replica takes it as its
// fetch timeout, at once rather than after T_f: a voter grants pre-votes
// from then on and campaigns at its rank (the first survivor at once), an
// observer looks for the new leader (D101). The wire does not change: the
// other voters grant those pre-votes only once they too have lost the
// leader, and a voter that still hears it refuses them (KIP-996), so a
// wrong report costs a refused pre-vote round, never a second leader. A
// report about any other replica, or a second one in the epoch, does
// nothing.
func (r *Replica) PeerDown(now time.Duration, id kraft.NodeID) {
	if !r.input(now) {
		return
	}
	if r.LeaderDownReportable() && r.st.Leader() == id {
		r.leaderDown = int64(r.st.Epoch()) + 1
		r.step(kraft.FetchTimeout{})
	}
	r.settle()
}

// LeaderDownReportable reports whether PeerDown about the leader would be
// taken now: the replica follows a leader, and no report was taken in the
// epoch (a model checker offers the report only then).
func (r *Replica) LeaderDownReportable() bool {
	return r.err == nil && r.st.Role() == kraft.Follower && r.st.Leader() != r.local.ID &&
		r.leaderDown != int64(r.st.Epoch())+1 && !r.holdTimers
}

// Receive takes a message from the network at time now.
func (r *Replica) Receive(now time.Duration, m Message) {
	if !r.input(now) {
		return
	}
	r.note(m)
	r.noteReadFetch(m)
	r.onMessage(m, false)
	r.settle()
}

// onMessage takes a message from the transport (or a parked Fetch).
func (r *Replica) onMessage(m Message, noPark bool) {
	if m.To != r.local.ID || m.Event == nil && !m.Response && !m.APIVersions {
		return
	}
	if m.Response {
		r.onResponse(m)
		return
	}
	if m.APIVersions {
		r.answerAPIVersions(m)
		return
	}
	if h, ok := kraft.MessageHeader(m.Event); !ok || h.Response {
		return // not a request
	}
	switch m.Event.(type) {
	case kraft.ReceiveAddVoter, kraft.ReceiveRemoveVoter:
		// An auto-joining observer's, stepped with a handle of the
		// layer's.
		r.onVoterRequest(m)
		return
	case kraft.ReceiveUpdateVoter:
		return // the host's client asks it (UpdateVoter), not a peer
	}
	if fs, ok := m.Event.(kraft.ReceiveFetchSnapshot); ok {
		// The size is the serving host's to look up (D44).
		fs.Size = r.snapshotSize(fs.Snapshot)
		m.Event = fs
	}
	r.cur = &m
	r.noPark = noPark
	r.step(m.Event)
	r.cur = nil
	r.noPark = false
}

// respond answers the request being stepped, with a Fetch response's
// records or a FetchSnapshot response's chunk.
func (r *Replica) respond(a kraft.Action, records []storage.Entry, chunk []byte) {
	to, ev, _ := kraft.Deliver(r.local, a)
	if r.cur == nil || r.cur.From != to {
		return
	}
	if sr, ok := ev.(kraft.ReceiveFetchSnapshotResponse); ok {
		sr.Bytes = int64(len(chunk))
		ev = sr
	}
	r.emit(Send{Message: Message{From: r.local.ID, To: to, Corr: r.cur.Corr, Response: true, Event: ev, Records: records, Chunk: chunk}})
}

// Parked is how many Fetch requests the leader holds (long poll).
func (r *Replica) Parked() int { return len(r.parked) }
