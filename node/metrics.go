package node

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
)

// Metrics is a snapshot of a replica's metrics: Kafka's KafkaRaftMetrics
// (metric group raft-metrics) as values, and a few of kraft's own. The
// loop keeps them, so they are exact and deterministic: counters and
// latencies are cumulative since Start (a sum, a count, the maximum and a
// fixed histogram, Latency) rather than Kafka's windowed averages and
// rates; a monitoring system derives the rates (docs/kraftd.md says how
// kraftd's /metrics maps them).
//
// Kafka's metrics that are here, under its names:
//
//   - current-leader, current-epoch, current-vote, current-state,
//     high-watermark, log-end-offset, log-end-epoch: gauges, read from the
//     state (CurrentLeader ... LogEndEpoch).
//   - number-unknown-voter-connections: UnknownVoterConnections.
//   - append-records-rate, fetch-records-rate: the counts AppendRecords and
//     FetchRecords; the rate is their derivative.
//   - commit-latency-avg and -max: CommitLatency.
//   - election-latency-avg and -max: ElectionLatency.
//   - poll-idle-ratio-avg: PollIdle and PollBusy; the ratio is
//     PollIdle / (PollIdle + PollBusy) over an interval.
//
// Kafka's current-vote-directory-id is left out: it is the directory id
// of current-vote, which a string-valued metric would carry (Prometheus
// values are numbers); Status.VoterSet has the directory ids.
type Metrics struct {
	// CurrentLeader is current-leader: the leader's id, -1 if unknown.
	CurrentLeader kraft.NodeID
	// CurrentEpoch is current-epoch.
	CurrentEpoch kraft.Epoch
	// CurrentVote is current-vote, as Kafka computes it: this replica's id
	// on a Leader or Candidate, the id voted for by an Unattached replica
	// that voted in the epoch, -1 otherwise.
	CurrentVote kraft.NodeID
	// CurrentState is current-state, Kafka's name of the role: "leader",
	// "candidate", "voted" (Unattached with a vote), "follower",
	// "observer" (a Follower that is not a voter) or "unattached" (every
	// other role: Unattached without a vote, Prospective and Resigned, as
	// Kafka's KafkaRaftMetrics reports them). Role is kraft's name.
	CurrentState string
	// Role is the replica's kraft.Role ("Leader", "Prospective", ...).
	Role string
	// HighWatermark is high-watermark: -1 if unknown.
	HighWatermark int64
	// LogEndOffset and LogEndEpoch are log-end-offset and log-end-epoch:
	// the written log's end (not necessarily flushed).
	LogEndOffset int64
	LogEndEpoch  kraft.Epoch
	// UnknownVoterConnections is number-unknown-voter-connections: the
	// voters other than this replica whose address the transport does not
	// know (a TCPTransport; 0 with a transport that needs no addresses).
	// Kafka reports 0 for its static voter sets.
	UnknownVoterConnections int

	// AppendRecords counts the records this replica appended as the
	// leader (data and control records: append-records-rate's records),
	// FetchRecords the records it appended as a follower or observer
	// from Fetch responses (fetch-records-rate's). Both are the growth of
	// the log end across each input; a snapshot installed is not counted.
	AppendRecords, FetchRecords uint64
	// CommitLatency is commit-latency: for each write of the leader to its
	// log (an Append's records, a control record), the time from the write
	// until the high watermark passes it. Kafka divides each batch's time
	// by its number of records; kraft records one sample per write.
	CommitLatency Latency
	// ElectionLatency is election-latency: from becoming Candidate to
	// becoming Leader or Follower (Kafka's updateElectionStartMs and
	// maybeUpdateElectionLatency; the KIP-996 pre-vote before it is not
	// counted, as in Kafka).
	ElectionLatency Latency
	// PollIdle is the time the loop waited for input and PollBusy the time
	// it spent handling inputs and carrying out the replica's outputs
	// (poll-idle-ratio-avg: Kafka's TimeRatio of its poll).
	PollIdle, PollBusy time.Duration

	// Fsync is the latency of the log's syncs (storage.Log.Sync), each
	// timed around the call off the loop.
	Fsync Latency
	// Voters, on the leader, is each voter's end offset and lag behind the
	// leader's log end, as in Status.
	Voters []VoterStatus
	// LeaderHighWatermark, on a Follower, is the highest high watermark
	// the current leader sent in a Fetch response in this epoch, -1 if
	// none: HighWatermark, which is at most the follower's log end, lags
	// behind it by the records the follower has yet to fetch.
	LeaderHighWatermark int64
	// ClusterIDRefused counts the requests this replica refused because
	// they carry another cluster id (INCONSISTENT_CLUSTER_ID);
	// ClusterIDRefusedByPeers the responses of that error to this
	// replica's requests. Both are logged (refusalLogEvery).
	ClusterIDRefused, ClusterIDRefusedByPeers uint64
	// RefusingLeader: this replica refuses to follow RefusedLeader, the
	// leader of the current epoch, which asked it to remove committed
	// records (docs/design.md D113); RefusedLeader is -1 otherwise. The
	// refusal lasts until the replica is in another epoch. LeaderRefusals
	// counts the refusals (one per refused answer of a leader).
	RefusingLeader bool
	RefusedLeader  kraft.NodeID
	LeaderRefusals uint64
	// ParkedFetchesRefused, on the leader, counts the Fetches answered at
	// once because replica.MaxParkedFetches were parked (docs/design.md
	// D202).
	ParkedFetchesRefused uint64
	// AppendsRefused, on the leader, counts the appends refused with
	// ErrTooManyAppends because MaxPendingAppends waited (D203).
	AppendsRefused uint64
	// TransportDropped is Status.TransportDropped.
	TransportDropped uint64
	// VotersFetching, on the leader, counts the voters in contact: itself
	// (if a voter) and each other voter that sent a Fetch or FetchSnapshot
	// within the last fetch timeout (a caught-up voter fetches at least
	// every fetch max wait, a quarter of it by default). At most half of
	// the voters is a leader that lost its quorum, which check-quorum
	// resigns once 1.5 fetch timeouts have passed (docs/design.md D89).
	// 0 on every other role.
	VotersFetching int
}

// LatencyBounds are the upper bounds of Latency's histogram buckets.
var LatencyBounds = [...]time.Duration{
	time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 500 * time.Millisecond, time.Second, 5 * time.Second, 10 * time.Second,
}

// Latency is a cumulative latency distribution: the number of samples,
// their sum and maximum, and a histogram. Buckets[i] counts the samples
// at most LatencyBounds[i] (and above the bound before it); the last one
// counts the samples above every bound. Kafka's -avg is Sum/Count over an
// interval, its -max (over Kafka's sample window) is Max here (since
// Start).
type Latency struct {
	Count   uint64
	Sum     time.Duration
	Max     time.Duration
	Buckets [len(LatencyBounds) + 1]uint64
}

func (l *Latency) observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	l.Count++
	l.Sum += d
	if d > l.Max {
		l.Max = d
	}
	i := 0
	for i < len(LatencyBounds) && d > LatencyBounds[i] {
		i++
	}
	l.Buckets[i]++
}

// refusalLogEvery is how often, at most, a cluster id refusal is logged
// again for one peer and direction; the line says how many were not.
const refusalLogEvery = DefaultLogEvery

// loopMetrics is what the loop keeps for Metrics.
type loopMetrics struct {
	appendRecords, fetchRecords uint64
	commit, election, fsync     Latency
	electionStart               time.Duration
	electing                    bool
	pending                     []pendingWrite // the leader's writes not yet committed
	installed                   bool           // a snapshot was installed in this input
	logEnd                      int64          // the log end after the latest input
	pollStart                   time.Duration
	polling                     bool
	idle, busy                  time.Duration
	refused, refusedBy          uint64
	leaderRefusals              uint64
	appendsRefused              uint64                         // ErrTooManyAppends answers (D203)
	refusedLogged               refusalOf                      // the refusal logged last
	fetchedAt                   map[kraft.NodeID]time.Duration // the latest Fetch or FetchSnapshot from each peer
	slowRun                     int                            // slow syncs in a row
	slowResigned                bool                           // resigned for slow syncs, at slowResignAt
	slowResignAt                time.Duration
}

type pendingWrite struct {
	end int64 // the log end after the write
	at  time.Duration
}

// refusalOf is a refused leader and its epoch.
type refusalOf struct {
	leader kraft.NodeID
	epoch  kraft.Epoch
}

type refusalKey struct {
	peer kraft.NodeID
	by   bool // the peer refused this replica's request
}

// pollStart marks the start of the loop's wait for input.
func (n *Node) pollStart() { n.met.pollStart, n.met.polling = n.clock(), true }

// pollEnd marks its end: an input arrived.
func (n *Node) pollEnd() {
	now := n.clock()
	if n.met.polling {
		n.met.idle += now - n.met.pollStart
		n.met.polling = false
	}
	n.met.pollStart = now // the busy time starts
}

// observe notes an output of the replica for the metrics (carry).
func (n *Node) observe(o replica.Output) {
	switch o := o.(type) {
	case replica.RoleChange:
		now := n.clock()
		switch o.To {
		case kraft.Candidate:
			n.met.electionStart, n.met.electing = now, true
		case kraft.Leader, kraft.Follower:
			if n.met.electing {
				n.met.election.observe(now - n.met.electionStart)
				n.met.electing = false
			}
		}
	case replica.ClusterIDRefused:
		n.refusal(o)
	case replica.LeaderRefused:
		n.leaderRefused(o.LeaderRefused)
	case replica.Installed:
		n.met.installed = true
	}
}

// observeState notes the state after an input (carry): the records
// appended, the writes committed, and the loop's busy time.
func (n *Node) observeState(next kraft.State) {
	now := n.clock()
	if grown := next.LogEnd().Offset - n.met.logEnd; grown > 0 && !n.met.installed {
		if next.Role() == kraft.Leader {
			n.met.appendRecords += uint64(grown)
			n.met.pending = append(n.met.pending, pendingWrite{end: next.LogEnd().Offset, at: now})
		} else {
			n.met.fetchRecords += uint64(grown)
		}
	}
	n.met.installed, n.met.logEnd = false, next.LogEnd().Offset
	if next.Role() != kraft.Leader {
		n.met.pending = n.met.pending[:0]
	}
	i := 0
	for ; i < len(n.met.pending) && n.met.pending[i].end <= next.HighWatermark(); i++ {
		n.met.commit.observe(now - n.met.pending[i].at)
	}
	n.met.pending = append(n.met.pending[:0], n.met.pending[i:]...)
	if !n.met.polling {
		n.met.busy += now - n.met.pollStart
		n.met.pollStart = now
	}
}

// noteFetch notes when a peer's Fetch or FetchSnapshot request arrived
// (run), for Metrics.VotersFetching.
func (n *Node) noteFetch(m Message) {
	if m.Response {
		return
	}
	switch m.Event.(type) {
	case kraft.ReceiveFetch, kraft.ReceiveFetchSnapshot:
		if n.met.fetchedAt == nil {
			n.met.fetchedAt = map[kraft.NodeID]time.Duration{}
		}
		n.met.fetchedAt[m.From] = n.clock()
	}
}

// votersFetching is Metrics.VotersFetching.
func (n *Node) votersFetching(s kraft.State) int {
	if s.Role() != kraft.Leader {
		return 0
	}
	window := n.cfg.Kraft.FetchTimeout
	if window == 0 {
		window = kraft.DefaultFetchTimeout
	}
	now, count := n.clock(), 0
	for _, v := range s.Voters() {
		if at, ok := n.met.fetchedAt[v.ID]; v.ID == n.local.ID || (ok && now-at <= window) {
			count++
		}
	}
	return count
}

// syncLog syncs the log, off the loop, and hands its latency to the loop.
func (n *Node) syncLog() error {
	start := time.Now()
	err := n.cfg.Log.Sync()
	took := time.Since(start)
	n.internalCall(func() {
		n.met.fsync.observe(took)
		n.slowSync(took)
	})
	return err
}

// refusal counts and logs a cluster id refusal the replica noted.
func (n *Node) refusal(o replica.ClusterIDRefused) {
	ours := n.cfg.Kraft.ClusterID
	if o.Inbound {
		n.met.refused++
		n.logRefusal(refusalKey{peer: o.Peer}, fmt.Sprintf("refused a %s request from node %d: INCONSISTENT_CLUSTER_ID: it has cluster id %s, this replica %s",
			o.Request, o.Peer, o.Theirs.UUID, ours.UUID),
			"peer", int32(o.Peer), "request", o.Request, "direction", "inbound", "peer_cluster_id", o.Theirs.UUID.String(), "cluster_id", ours.UUID.String())
		return
	}
	n.met.refusedBy++
	id := "none"
	if ours.Valid {
		id = ours.UUID.String()
	}
	n.logRefusal(refusalKey{peer: o.Peer, by: true}, fmt.Sprintf("node %d refused this replica's %s request: INCONSISTENT_CLUSTER_ID: it has another cluster id than this replica's (%s)",
		o.Peer, o.Request, id),
		"peer", int32(o.Peer), "request", o.Request, "direction", "outbound", "cluster_id", id)
}

// leaderRefused counts a refused leader and logs it at ERROR, once per
// leader and epoch (docs/design.md D113).
func (n *Node) leaderRefused(o kraft.LeaderRefused) {
	n.met.leaderRefusals++
	k := refusalOf{leader: o.LeaderID, epoch: o.Epoch}
	if n.met.refusedLogged == k {
		return
	}
	n.met.refusedLogged = k
	n.logEvent(slog.LevelError, EventLeaderRefused, adviceRefused,
		fmt.Sprintf("refusing to follow leader %d of epoch %d: %s (it asks to truncate to %d, below the high watermark %d); keeping the log and campaigning",
			o.LeaderID, o.Epoch, o.Reason, o.TruncateTo, o.HighWatermark),
		"leader", int32(o.LeaderID), "epoch", int32(o.Epoch), "truncate_to", o.TruncateTo, "high_watermark", o.HighWatermark)
}

// logRefusal logs a cluster id refusal, at most once per refusalLogEvery
// for each peer and direction, with the number left out since.
func (n *Node) logRefusal(k refusalKey, msg string, attrs ...interface{}) {
	ok, suppressed := n.limits.allow(k, n.clock())
	if !ok {
		return
	}
	if suppressed > 0 {
		msg += fmt.Sprintf(" (%d more since the last report)", suppressed)
		attrs = append(attrs, "suppressed", suppressed)
	}
	n.logEvent(slog.LevelWarn, EventClusterIDRefused, adviceClusterID, msg, attrs...)
}

// slowSync logs a log sync that took longer than the threshold, at most
// once per DefaultLogEvery, with the number left out since.
func (n *Node) slowSync(took time.Duration) {
	if n.cfg.SlowSyncThreshold < 0 {
		return
	}
	if took <= n.cfg.SlowSyncThreshold {
		n.met.slowRun = 0
		return
	}
	n.met.slowRun++
	n.maybeResignSlow(took)
	ok, suppressed := n.limits.allow(EventSlowSync, n.clock())
	if !ok {
		return
	}
	msg := fmt.Sprintf("slow disk: a sync of the log took %v (threshold %v)", took.Round(time.Millisecond), n.cfg.SlowSyncThreshold)
	if suppressed > 0 {
		msg += fmt.Sprintf(" (%d more slow syncs since the last report)", suppressed)
	}
	n.logEvent(slog.LevelWarn, EventSlowSync, adviceSlowSync, msg,
		"took", took, "threshold", n.cfg.SlowSyncThreshold, "suppressed", suppressed, "role", n.st.Role().String())
}

// slowResignEvery is how often, at most, a leader resigns for its slow
// syncs (Config.SlowSyncResign).
const slowResignEvery = 10 * time.Minute

// maybeResignSlow makes a leader whose last Config.SlowSyncResign syncs
// were all slow resign, if a majority of the voters is in contact (a
// successor can be elected) and it did not resign so within
// slowResignEvery (docs/design.md D93).
func (n *Node) maybeResignSlow(took time.Duration) {
	s := n.st
	if n.cfg.SlowSyncResign <= 0 || n.met.slowRun < n.cfg.SlowSyncResign || s.Role() != kraft.Leader {
		return
	}
	voters := len(s.Voters())
	fetching := n.votersFetching(s)
	now := n.clock()
	if voters < 2 || 2*fetching <= voters || (n.met.slowResigned && now-n.met.slowResignAt < slowResignEvery) {
		return
	}
	n.met.slowResigned, n.met.slowResignAt, n.met.slowRun = true, now, 0
	n.logEvent(slog.LevelWarn, EventSlowSyncResign, adviceSlowResign,
		fmt.Sprintf("resigning leadership: the last %d syncs of the log each took longer than %v (the last %v): a slow disk slows every commit",
			n.cfg.SlowSyncResign, n.cfg.SlowSyncThreshold, took.Round(time.Millisecond)),
		"syncs", n.cfg.SlowSyncResign, "threshold", n.cfg.SlowSyncThreshold, "took", took, "epoch", int32(s.Epoch()))
	n.r.Resign(now)
}

// peerAddresses is a Transport that knows which peers it has an address
// for (TCPTransport).
type peerAddresses interface {
	HasPeer(id kraft.NodeID) bool
}

// HasPeer says whether the transport has an address for peer id.
func (t *TCPTransport) HasPeer(id kraft.NodeID) bool {
	_, ok := t.l.PeerAddr(id)
	return ok
}

// Metrics returns the replica's metrics (Metrics).
func (n *Node) Metrics() (Metrics, error) {
	var m Metrics
	err := n.call(func() {
		s := n.st
		m = Metrics{
			CurrentLeader: s.Leader(), CurrentEpoch: s.Epoch(), CurrentVote: currentVote(s),
			CurrentState: currentState(s), Role: s.Role().String(), HighWatermark: s.HighWatermark(),
			LogEndOffset: s.LogEnd().Offset, LogEndEpoch: s.LogEnd().Epoch,
			AppendRecords: n.met.appendRecords, FetchRecords: n.met.fetchRecords,
			CommitLatency: n.met.commit, ElectionLatency: n.met.election, Fsync: n.met.fsync,
			PollIdle: n.met.idle, PollBusy: n.met.busy,
			LeaderHighWatermark: n.r.LeaderHighWatermark(),
			ClusterIDRefused:    n.met.refused, ClusterIDRefusedByPeers: n.met.refusedBy,
			LeaderRefusals: n.met.leaderRefusals, ParkedFetchesRefused: n.r.ParkRefused(),
			AppendsRefused: n.met.appendsRefused,
		}
		m.RefusedLeader, m.RefusingLeader = s.RefusedLeader()
		if pa, ok := n.cfg.Transport.(peerAddresses); ok {
			for _, v := range s.Voters() {
				if v.ID != n.local.ID && !pa.HasPeer(v.ID) {
					m.UnknownVoterConnections++
				}
			}
		}
		if dc, ok := n.cfg.Transport.(DropCounter); ok {
			m.TransportDropped = dc.Dropped()
		}
		m.Voters = voterProgress(s)
		m.VotersFetching = n.votersFetching(s)
	})
	return m, err
}

// currentVote is Kafka's current-vote.
func currentVote(s kraft.State) kraft.NodeID {
	switch s.Role() {
	case kraft.Leader, kraft.Candidate:
		return s.Local().ID
	case kraft.Unattached:
		if k, ok := s.VotedKey(); ok {
			return k.ID
		}
	}
	return kraft.NoNode
}

// currentState is Kafka's current-state.
func currentState(s kraft.State) string {
	switch s.Role() {
	case kraft.Leader:
		return "leader"
	case kraft.Candidate:
		return "candidate"
	case kraft.Follower:
		if !s.IsVoter() {
			return "observer"
		}
		return "follower"
	case kraft.Unattached:
		if _, ok := s.VotedKey(); ok {
			return "voted"
		}
	}
	return "unattached"
}
