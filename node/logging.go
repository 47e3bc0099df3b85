package node

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// The runtime's log (docs/design.md D85): records of log/slog, each with
// an "event" attribute naming what happened (the Event constants) and, for
// the events an operator must act on, an "advice" attribute saying what to
// do. Events that repeat are rate-limited: the first is logged, the
// following ones at most once per interval per key, with the number left
// out ("suppressed").

// The events the runtime logs, as the "event" attribute of its records.
const (
	// EventStarted: Start opened the replica (Info).
	EventStarted = "started"
	// EventRoleChanged: a role change, with kraft's reason (Info).
	EventRoleChanged = "role_changed"
	// EventVoterSetChanged: the voter set in force changed: a VotersRecord
	// was written, fetched or truncated, or a snapshot with another set
	// was installed (Info; Warn when this replica left the set).
	EventVoterSetChanged = "voter_set_changed"
	// EventVoterChangeStarted: the leader started an AddRaftVoter or
	// RemoveRaftVoter (a client's call or an observer's auto-join) (Info).
	EventVoterChangeStarted = "voter_change_started"
	// EventVoterChangeAnswered: the leader answered a client's voter
	// change (Info when done, Warn when refused).
	EventVoterChangeAnswered = "voter_change_answered"
	// EventSnapshotTaken: the application's snapshot was written, and the
	// log before it may be deleted (Info).
	EventSnapshotTaken = "snapshot_taken"
	// EventSnapshotFailed: Config.Snapshot failed; the snapshot is dropped
	// (Warn).
	EventSnapshotFailed = "snapshot_failed"
	// EventClusterIDRefused: a request refused for its cluster id, here or
	// by the peer (Warn, rate-limited per peer and direction).
	EventClusterIDRefused = "cluster_id_refused"
	// EventPeerUnreachable: the transport cannot connect to a peer
	// (refused, timed out, a name that does not resolve: "dns" is true)
	// (Warn, then rate-limited while it lasts).
	EventPeerUnreachable = "peer_unreachable"
	// EventPeerConnected: the transport connected to a peer it could not
	// reach before (Info).
	EventPeerConnected = "peer_connected"
	// EventPeerDown: a peer closed its connection and refuses new ones:
	// its process is gone while its host is up (Info). A follower whose
	// leader it is campaigns at once (docs/design.md D101).
	EventPeerDown = "peer_down"
	// EventGarbageConnection: a connection to the raft port that does not
	// speak kraft's protocol: no hello, or a message that does not decode
	// (Warn, rate-limited per remote host).
	EventGarbageConnection = "garbage_connection"
	// EventMessageDropped: the transport dropped a message (Warn for one
	// it cannot encode; Info at the 1st, 2nd, 4th, 8th... other drop).
	EventMessageDropped = "message_dropped"
	// EventFollowerLagging: on the leader, a voter fell more than
	// Config.LagThreshold records behind the leader's log end (Warn, again
	// at most once per interval while it lasts).
	EventFollowerLagging = "follower_lagging"
	// EventFollowerCaughtUp: a lagging voter is back within the threshold
	// (Info).
	EventFollowerCaughtUp = "follower_caught_up"
	// EventSlowSync: a log sync (fsync) took longer than
	// Config.SlowSyncThreshold (Warn, rate-limited).
	EventSlowSync = "slow_sync"
	// EventSlowSyncResign: a leader resigned because its last
	// Config.SlowSyncResign syncs were slow (Warn).
	EventSlowSyncResign = "slow_sync_resign"
	// EventNoSuccessor: Shutdown closed a leader before another replica
	// led (Warn).
	EventNoSuccessor = "no_successor"
	// EventLeaderRefused: this replica refuses to follow the leader of its
	// epoch, which asked it to remove committed records (Error, once per
	// leader and epoch; docs/design.md D113). The replica goes on and
	// campaigns; Metrics.RefusedLeader says while it lasts.
	EventLeaderRefused = "leader_refused"
	// EventStopped: the node stopped on an error (Error).
	EventStopped = "stopped"
	// EventReplica: a line of the replica layer (package replica), at the
	// level its kind calls for.
	EventReplica = "replica"
)

// Defaults of the logging thresholds.
const (
	// DefaultLagThreshold is Config.LagThreshold's default: a voter this
	// many records behind the leader's log end is reported.
	DefaultLagThreshold = 10000
	// DefaultSlowSyncThreshold is Config.SlowSyncThreshold's default: a
	// log sync that takes longer is reported. A healthy disk syncs in
	// milliseconds; every commit waits for the leader's sync and a
	// majority's.
	DefaultSlowSyncThreshold = 500 * time.Millisecond
	// DefaultLogEvery is how often, at most, a repeating event is logged
	// again for one key.
	DefaultLogEvery = time.Minute
)

// Advice of the events an operator acts on.
const (
	adviceClusterID   = "give every replica of the cluster the same cluster id (or stop the stray one)"
	adviceUnreachable = "check that the peer is running and listens at that address, and the address in the voter set (-voters, -bootstrap-servers, the voters' endpoints); the runtime keeps retrying"
	adviceDNS         = "the host name does not resolve: fix the address in the voter set or the DNS record; the runtime keeps retrying"
	adviceGarbage     = "something that is not a kraft replica connects to the raft port (a Kafka client, a health check, a port scanner): point it at the right port, or firewall the raft port"
	adviceDropped     = "requests are sent again after the retry backoff; many drops mean a peer is down, unreachable or too slow to read"
	adviceEncode      = "a message the wire format cannot carry: a bug in the sender; report it"
	adviceLag         = "check that voter's disk, network and CPU: while it lags, the quorum has one voter less to lose"
	adviceSlowSync    = "the disk is slow and every commit waits for syncs: check the disk (iostat, a full or failing device, a noisy neighbour); on the leader, hand leadership to a replica with a healthy disk (Resign, kraftd's POST /resign)"
	adviceSlowResign  = "another voter leads now; this replica keeps following: fix or replace its disk (move the data directory to a healthy one), or it may lead again"
	adviceRemoved     = "this replica is no longer a voter: it goes on as an observer; with auto-join it asks to be added back, so stop it or restart it without auto-join to remove it for good"
	adviceNoSuccessor = "no other replica led within the handover bound: a majority of the voters may be down"
	adviceSnapshot    = "the snapshot is dropped and tried again later; the log is not deleted behind it meanwhile"
	adviceRefused     = "that leader was elected without records this replica holds as committed (a replica that lost data it had acknowledged, then led): this replica keeps its log and campaigns with the voters that hold them; check that leader's disk and restore or replace it, and if no other leader is elected, a majority lost the records"
	adviceStopped     = "the replica stopped: see the error; a damaged disk or an inconsistent cluster needs an operator before a restart"
)

// newLogger is the node's logger: cfg.Logger, or Logf lines, or nothing.
func newLogger(logger *slog.Logger, logf func(string, ...interface{})) *slog.Logger {
	switch {
	case logger != nil:
		return logger
	case logf != nil:
		return slog.New(&logfHandler{logf: logf})
	}
	return slog.New(discardHandler{})
}

// discardHandler drops every record.
type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (d discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return d }
func (d discardHandler) WithGroup(string) slog.Handler           { return d }

// logfHandler writes each record as one line to a Logf function: the
// level, the message and the attributes as key=value (Config.Logf, for
// callers without a slog.Logger).
type logfHandler struct {
	logf  func(string, ...interface{})
	attrs []slog.Attr
}

func (h *logfHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *logfHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String())
	b.WriteByte(' ')
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Any())
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	h.logf("%s", b.String())
	return nil
}

func (h *logfHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logfHandler{logf: h.logf, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *logfHandler) WithGroup(string) slog.Handler { return h }

// limiter rate-limits repeated events by key: the first is let through,
// the next ones at most once per every; it counts the ones it held back.
// Safe for concurrent use.
type limiter struct {
	every time.Duration
	mu    sync.Mutex
	keys  map[interface{}]*rateLimit
}

type rateLimit struct {
	last       time.Duration
	suppressed int
}

// allow says whether the event of key at now is logged, and how many of
// key were held back since the last one logged.
func (l *limiter) allow(key interface{}, now time.Duration) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[interface{}]*rateLimit{}
	}
	rl := l.keys[key]
	if rl == nil {
		l.keys[key] = &rateLimit{last: now}
		return true, 0
	}
	if now-rl.last < l.every {
		rl.suppressed++
		return false, 0
	}
	n := rl.suppressed
	rl.last, rl.suppressed = now, 0
	return true, n
}

// forget drops key: its next event is logged at once.
func (l *limiter) forget(key interface{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, key)
}

// logEvent logs one event of the node at level: the message, the event's
// name, the advice (if any) and attrs.
func (n *Node) logEvent(level slog.Level, event, advice, msg string, attrs ...interface{}) {
	logEvent(n.log, level, event, advice, msg, attrs...)
}

func logEvent(l *slog.Logger, level slog.Level, event, advice, msg string, attrs ...interface{}) {
	if l == nil || !l.Enabled(context.Background(), level) {
		return
	}
	args := make([]interface{}, 0, len(attrs)+4)
	args = append(args, "event", event)
	args = append(args, attrs...)
	if advice != "" {
		args = append(args, "advice", advice)
	}
	l.Log(context.Background(), level, msg, args...)
}

// replicaLogf is the replica layer's Logf (replica.Config.Logf): each of
// its lines becomes a record at the level its format calls for.
func (n *Node) replicaLogf(format string, args ...interface{}) {
	level := slog.LevelInfo
	switch {
	case strings.Contains(format, "stopping"):
		level = slog.LevelError
	case strings.Contains(format, "cannot"):
		level = slog.LevelWarn
	}
	logEvent(n.log, level, EventReplica, "", fmt.Sprintf(format, args...))
}
