package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// The runtime's log records: each incident names its cause in the
// record's attributes (docs/design.md D85).

// logRecord is one record a recorder kept: its level, message and
// attributes (with the logger's, such as "node").
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]interface{}
}

func (r logRecord) String() string { return fmt.Sprintf("%v %q %v", r.level, r.msg, r.attrs) }

// recorder is a slog.Handler that keeps every record, for tests.
type recorder struct {
	mu      *sync.Mutex // shared with the recorders WithAttrs makes
	records *[]logRecord
	attrs   []slog.Attr
}

func newRecorder() *recorder { return &recorder{mu: &sync.Mutex{}, records: &[]logRecord{}} }

func (r *recorder) logger() *slog.Logger { return slog.New(r) }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	lr := logRecord{level: rec.Level, msg: rec.Message, attrs: map[string]interface{}{}}
	for _, a := range r.attrs {
		lr.attrs[a.Key] = a.Value.Any()
	}
	rec.Attrs(func(a slog.Attr) bool {
		lr.attrs[a.Key] = a.Value.Any()
		return true
	})
	r.mu.Lock()
	*r.records = append(*r.records, lr)
	r.mu.Unlock()
	return nil
}

func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &recorder{mu: r.mu, records: r.records, attrs: append(append([]slog.Attr(nil), r.attrs...), as...)}
}

func (r *recorder) WithGroup(string) slog.Handler { return r }

// events returns the records of event, in order.
func (r *recorder) events(event string) []logRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logRecord
	for _, lr := range *r.records {
		if lr.attrs["event"] == event {
			out = append(out, lr)
		}
	}
	return out
}

// waitEvent waits until a record of event satisfies ok, and returns it.
func (r *recorder) waitEvent(t *testing.T, event string, ok func(logRecord) bool) logRecord {
	t.Helper()
	var found logRecord
	require.Eventually(t, func() bool {
		for _, lr := range r.events(event) {
			if ok(lr) {
				found = lr
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "no %s record as wanted; got %v", event, r.events(event))
	return found
}

// slowLog is a log whose syncs take delay more: a slow disk.
type slowLog struct {
	storage.Log
	delay time.Duration
}

func (l slowLog) Sync() error {
	time.Sleep(l.delay)
	return l.Log.Sync()
}

// TestLogSlowSync: a log whose syncs take longer than the threshold is
// reported as a slow disk, with the sync's time, the role and the advice;
// the next slow syncs within the interval are held back. Under the
// threshold nothing is reported.
func TestLogSlowSync(t *testing.T) {
	for _, tc := range []struct {
		threshold time.Duration
		want      bool
	}{{20 * time.Millisecond, true}, {time.Second, false}} {
		rec := newRecorder()
		c := newTunedCluster(t, 1, nil, func(cfg *Config) {
			cfg.Log = slowLog{Log: cfg.Log, delay: 50 * time.Millisecond}
			cfg.Logger = rec.logger()
			cfg.SlowSyncThreshold = tc.threshold
		})
		for i := 0; i < 3; i++ {
			c.appendCommitted(fmt.Sprint(i))
		}
		got := rec.events(EventSlowSync)
		if !tc.want {
			require.Empty(t, got)
			continue
		}
		require.Len(t, got, 1, "the first is logged, the next ones held back: %v", got)
		r := got[0]
		require.Equal(t, slog.LevelWarn, r.level)
		require.Contains(t, r.msg, "slow disk: a sync of the log took")
		require.GreaterOrEqual(t, r.attrs["took"], 50*time.Millisecond)
		require.Equal(t, tc.threshold, r.attrs["threshold"])
		require.Equal(t, int64(1), r.attrs["node"])
		require.Contains(t, r.attrs["advice"], "the disk is slow")
		require.Contains(t, r.attrs["advice"], "hand leadership to a replica with a healthy disk")
	}
}

// TestLogClusterIDRefusedNamesBothIDs: the refusal records of a replica
// with another cluster id name the peer, the request and both cluster
// ids, on both sides, with the advice.
func TestLogClusterIDRefusedNamesBothIDs(t *testing.T) {
	a, b := uuid.New(), uuid.New()
	recs := map[kraft.NodeID]*recorder{1: newRecorder(), 2: newRecorder()}
	newTunedCluster(t, 2, nil, func(cfg *Config) {
		id := cfg.Kraft.Local.ID
		cfg.Kraft.ClusterID = uuid.NullUUID{UUID: a, Valid: true}
		if id == 2 {
			cfg.Kraft.ClusterID.UUID = b
		}
		cfg.Logger = recs[id].logger()
	})
	in := recs[1].waitEvent(t, EventClusterIDRefused, func(r logRecord) bool { return r.attrs["direction"] == "inbound" })
	require.Equal(t, slog.LevelWarn, in.level)
	require.Equal(t, int64(2), in.attrs["peer"])
	require.Equal(t, b.String(), in.attrs["peer_cluster_id"])
	require.Equal(t, a.String(), in.attrs["cluster_id"])
	require.Contains(t, in.msg, "INCONSISTENT_CLUSTER_ID")
	require.Equal(t, adviceClusterID, in.attrs["advice"])
	out := recs[2].waitEvent(t, EventClusterIDRefused, func(r logRecord) bool { return r.attrs["direction"] == "outbound" })
	require.Equal(t, int64(1), out.attrs["peer"])
	require.Equal(t, b.String(), out.attrs["cluster_id"])
	require.Contains(t, out.msg, "node 1 refused this replica's")
}

// TestLogVoterReplacement: a voter whose disk was wiped comes back with a
// new directory id and auto-join; the leader replaces it (removes the old
// key, adds the new one), and its log says so: the changes it started and
// the voter sets, with the keys.
func TestLogVoterReplacement(t *testing.T) {
	c := newDynamicCluster(t, 3, 1, 0, nil)
	c.autoJoin = true
	recs := map[kraft.NodeID]*recorder{1: newRecorder(), 2: newRecorder(), 3: newRecorder()}
	c.tune = func(cfg *Config) { cfg.Logger = recs[cfg.Kraft.Local.ID].logger() }
	for _, id := range []kraft.NodeID{1, 2, 3} {
		c.start(id)
	}
	for _, id := range []kraft.NodeID{1, 2, 3} {
		c.waitStatus(id, "three voters", func(st Status) bool { return len(st.VoterSet) == 3 })
	}
	c.appendCommitted("a")
	if c.leader().local.ID == 3 {
		require.NoError(t, c.nodes[3].Resign())
		c.waitStatus(3, "another leader", func(st Status) bool { return st.Leader != 3 && st.Leader != kraft.NoNode })
	}
	leader := c.leader().local.ID
	old := c.key(3)
	c.wipe(3)
	recs[3] = newRecorder()
	c.start(3)
	neu := c.key(3)
	lr := recs[leader]
	lr.waitEvent(t, EventVoterChangeStarted, func(r logRecord) bool {
		return r.attrs["kind"] == "RemoveRaftVoter" && r.attrs["voter"] == keyString(old)
	})
	removed := lr.waitEvent(t, EventVoterSetChanged, func(r logRecord) bool { return r.attrs["removed"] == keysString([]kraft.ReplicaKey{old}) })
	require.Contains(t, removed.msg, "removed "+keyString(old))
	require.Equal(t, slog.LevelInfo, removed.level)
	lr.waitEvent(t, EventVoterChangeStarted, func(r logRecord) bool {
		return r.attrs["kind"] == "AddRaftVoter" && r.attrs["voter"] == keyString(neu)
	})
	added := lr.waitEvent(t, EventVoterSetChanged, func(r logRecord) bool { return r.attrs["added"] == keysString([]kraft.ReplicaKey{neu}) })
	require.Contains(t, added.msg, fmt.Sprintf("added %s at %s", keyString(neu), dynEndpoint(3)))
	// The other voter sees the same changes in the log it fetches.
	other := kraft.NodeID(3 - leader%3)
	if other == 3 {
		other = 1
	}
	require.NotEqual(t, leader, other)
	recs[other].waitEvent(t, EventVoterSetChanged, func(r logRecord) bool { return r.attrs["added"] == keysString([]kraft.ReplicaKey{neu}) })
}

// TestLogRemovedVoterIsWarned: a voter removed from the set logs, at Warn,
// that it was removed and what that means.
func TestLogRemovedVoterIsWarned(t *testing.T) {
	c := newDynamicCluster(t, 2, 1, 0, nil)
	recs := map[kraft.NodeID]*recorder{1: newRecorder(), 2: newRecorder()}
	c.tune = func(cfg *Config) { cfg.Logger = recs[cfg.Kraft.Local.ID].logger() }
	c.start(1)
	c.start(2)
	c.leader()
	voterChange(t, "add 2", func(ctx context.Context) error { return c.leader().AddVoter(ctx, dynKey(2), dynEndpoint(2)) })
	c.waitVoters(2, 1, 2)
	voterChange(t, "remove 2", func(ctx context.Context) error { return c.leader().RemoveVoter(ctx, dynKey(2)) })
	r := recs[2].waitEvent(t, EventVoterSetChanged, func(r logRecord) bool { return r.attrs["removed"] == keysString([]kraft.ReplicaKey{dynKey(2)}) })
	require.Equal(t, slog.LevelWarn, r.level)
	require.Contains(t, r.msg, "this replica was removed")
	require.Equal(t, adviceRemoved, r.attrs["advice"])
	// The leader's own record of it is Info: it was not removed.
	lr := recs[1].waitEvent(t, EventVoterSetChanged, func(r logRecord) bool { return r.attrs["removed"] == keysString([]kraft.ReplicaKey{dynKey(2)}) })
	require.Equal(t, slog.LevelInfo, lr.level)
}

// TestLogFollowerLag: the leader reports a voter that falls more than
// the threshold behind its log end, and again when it has caught up.
func TestLogFollowerLag(t *testing.T) {
	recs := map[kraft.NodeID]*recorder{1: newRecorder(), 2: newRecorder(), 3: newRecorder()}
	c := newTunedCluster(t, 3, nil, func(cfg *Config) {
		cfg.Logger = recs[cfg.Kraft.Local.ID].logger()
		cfg.LagThreshold = 5
	})
	c.appendCommitted("a")
	leader := c.leader().local.ID
	f := leader%3 + 1
	c.crash(f)
	for i := 0; i < 10; i++ {
		c.appendCommitted(fmt.Sprint(i))
	}
	r := recs[leader].waitEvent(t, EventFollowerLagging, func(r logRecord) bool { return r.attrs["voter"] == int64(f) })
	require.Equal(t, slog.LevelWarn, r.level)
	require.Greater(t, r.attrs["lag"], int64(5))
	require.Equal(t, int64(5), r.attrs["threshold"])
	require.Contains(t, r.msg, fmt.Sprintf("voter %d lags", f))
	require.Equal(t, adviceLag, r.attrs["advice"])
	for id, rec := range recs {
		if id != leader {
			require.Empty(t, rec.events(EventFollowerLagging), "only the leader reports lag")
		}
	}
	require.Len(t, recs[leader].events(EventFollowerLagging), 1, "one record while it lags (rate-limited)")
	c.start(f)
	recs[leader].waitEvent(t, EventFollowerCaughtUp, func(r logRecord) bool { return r.attrs["voter"] == int64(f) })
}

// TestTCPLogsPeersAndGarbage: the TCP transport reports a peer it cannot
// connect to (a closed port; a name that does not resolve, as DNS), the
// connection once it comes, and connections that do not speak kraft's
// protocol, rate-limited per remote host.
func TestTCPLogsPeersAndGarbage(t *testing.T) {
	rec := newRecorder()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr2 := closed.Addr().String()
	require.NoError(t, closed.Close())
	tr, err := NewTCPTransport(TCPConfig{
		ID: 1, Listen: "127.0.0.1:0", Logger: rec.logger(),
		Peers:            map[kraft.NodeID]string{2: addr2, 3: "no-such-host.invalid:9093"},
		ReconnectBackoff: 10 * time.Millisecond, MaxReconnectBackoff: 20 * time.Millisecond,
	})
	require.NoError(t, err)
	defer func() { _ = tr.Close() }()
	ping := func(to kraft.NodeID) {
		tr.Send(Message{From: 1, To: to, Corr: 1, Event: kraft.ReceiveFetch{From: 1}})
	}
	ping(2)
	ping(3)
	r2 := rec.waitEvent(t, EventPeerUnreachable, func(r logRecord) bool { return r.attrs["peer"] == int64(2) })
	require.Equal(t, slog.LevelWarn, r2.level)
	require.False(t, r2.attrs["dns"].(bool))
	require.Equal(t, addr2, r2.attrs["addr"])
	require.Contains(t, r2.msg, "cannot connect to node 2 at "+addr2)
	require.Equal(t, adviceUnreachable, r2.attrs["advice"])
	r3 := rec.waitEvent(t, EventPeerUnreachable, func(r logRecord) bool { return r.attrs["peer"] == int64(3) })
	require.True(t, r3.attrs["dns"].(bool), "%v", r3)
	require.Equal(t, adviceDNS, r3.attrs["advice"])

	// More failed attempts are held back; then the peer comes up.
	for i := 0; i < 5; i++ {
		ping(2)
		time.Sleep(15 * time.Millisecond)
	}
	n2 := 0
	for _, r := range rec.events(EventPeerUnreachable) {
		if r.attrs["peer"] == int64(2) {
			n2++
		}
	}
	require.Equal(t, 1, n2, "rate-limited")
	peer, err := NewTCPTransport(TCPConfig{ID: 2, Listen: addr2})
	require.NoError(t, err)
	defer func() { _ = peer.Close() }()
	require.Eventually(t, func() bool {
		ping(2)
		return len(rec.events(EventPeerConnected)) > 0
	}, 10*time.Second, 20*time.Millisecond)
	up := rec.events(EventPeerConnected)[0]
	require.Equal(t, int64(2), up.attrs["peer"])
	require.GreaterOrEqual(t, up.attrs["attempts"], int64(2))

	// Garbage: an HTTP request on the raft port.
	garbage := func(payload string) {
		c, err := net.Dial("tcp", tr.Addr().String())
		require.NoError(t, err)
		if payload != "" {
			_, err = c.Write([]byte(payload))
			require.NoError(t, err)
			buf := make([]byte, 1)
			_, _ = c.Read(buf) // until the transport closes it
		}
		require.NoError(t, c.Close())
	}
	garbage("GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
	g := rec.waitEvent(t, EventGarbageConnection, func(logRecord) bool { return true })
	require.Equal(t, slog.LevelWarn, g.level)
	require.Contains(t, g.msg, `does not speak kraft's protocol: it sent "GET "`)
	require.True(t, strings.HasPrefix(g.attrs["remote"].(string), "127.0.0.1:"))
	require.Equal(t, adviceGarbage, g.attrs["advice"])
	garbage("\x00\x00\x00\x09XXXX\x01\x00\x00\x00\x01")
	garbage("")
	time.Sleep(100 * time.Millisecond)
	var warns, debugs int
	for _, r := range rec.events(EventGarbageConnection) {
		switch r.level {
		case slog.LevelWarn:
			warns++
		case slog.LevelDebug:
			debugs++
			require.Contains(t, r.msg, "without sending anything")
		}
	}
	require.Equal(t, 1, warns, "one Warn per host per interval: %v", rec.events(EventGarbageConnection))
	require.Equal(t, 1, debugs, "a connection that sends nothing (a health check) is Debug")
}

// TestNodeVotersFetching: the leader counts the voters that fetched
// within the fetch timeout, itself included; a crashed follower drops out
// of the count once the fetch timeout has passed. Other roles count 0.
func TestNodeVotersFetching(t *testing.T) {
	c := newTestCluster(t, 3)
	c.appendCommitted("a")
	l := c.leader()
	fetching := func() int {
		m, err := l.Metrics()
		require.NoError(t, err)
		require.Equal(t, "Leader", m.Role)
		return m.VotersFetching
	}
	require.Eventually(t, func() bool { return fetching() == 3 }, 5*time.Second, 5*time.Millisecond)
	for id, nd := range c.nodes {
		if id != l.local.ID {
			m, err := nd.Metrics()
			require.NoError(t, err)
			require.Zero(t, m.VotersFetching, "node %d", id)
		}
	}
	f := l.local.ID%3 + 1
	c.crash(f)
	crashed := time.Now()
	require.Eventually(t, func() bool { return fetching() == 2 }, 5*time.Second, 5*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(crashed), 150*time.Millisecond, "counted until the fetch timeout (200ms) passed")
	c.appendCommitted("b")
	require.Equal(t, 2, fetching())
}

// switchLog is a log whose syncs can be made slow at any time.
type switchLog struct {
	storage.Log
	delay *int64 // nanoseconds, atomic
}

func (l switchLog) Sync() error {
	time.Sleep(time.Duration(atomic.LoadInt64(l.delay)))
	return l.Log.Sync()
}

// TestSlowLeaderResigns: with SlowSyncResign, a leader whose syncs turn
// slow resigns after that many slow syncs in a row, and says why; another
// voter leads. Without it, the slow leader only logs.
func TestSlowLeaderResigns(t *testing.T) {
	for _, resign := range []int{3, 0} {
		recs := map[kraft.NodeID]*recorder{1: newRecorder(), 2: newRecorder(), 3: newRecorder()}
		delays := map[kraft.NodeID]*int64{1: new(int64), 2: new(int64), 3: new(int64)}
		c := newTunedCluster(t, 3, nil, func(cfg *Config) {
			id := cfg.Kraft.Local.ID
			cfg.Log = switchLog{Log: cfg.Log, delay: delays[id]}
			cfg.Logger = recs[id].logger()
			cfg.SlowSyncThreshold = 20 * time.Millisecond
			cfg.SlowSyncResign = resign
		})
		c.appendCommitted("a")
		l := c.leader()
		id := l.local.ID
		atomic.StoreInt64(delays[id], int64(40*time.Millisecond))
		// Appends commit on the followers' syncs; the leader's slow ones
		// follow, one per 40 ms (group commit).
		for i := 0; i < 15; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = l.Append(ctx, []byte(fmt.Sprint(i))) // fails once it resigned
			cancel()
			time.Sleep(20 * time.Millisecond)
		}
		if resign == 0 {
			require.Empty(t, recs[id].events(EventSlowSyncResign))
			require.NotEmpty(t, recs[id].events(EventSlowSync))
			st, err := l.Status()
			require.NoError(t, err)
			require.Equal(t, "Leader", st.Role, "a slow leader only logs")
			continue
		}
		r := recs[id].waitEvent(t, EventSlowSyncResign, func(logRecord) bool { return true })
		require.Equal(t, slog.LevelWarn, r.level)
		require.Contains(t, r.msg, "resigning leadership: the last 3 syncs of the log each took longer than 20ms")
		require.Equal(t, adviceSlowResign, r.attrs["advice"])
		require.Eventually(t, func() bool {
			m, err := l.Metrics()
			require.NoError(t, err)
			return m.CurrentLeader != kraft.NoNode && m.CurrentLeader != id
		}, 10*time.Second, 5*time.Millisecond, "another voter leads")
		require.Len(t, recs[id].events(EventSlowSyncResign), 1)
	}
}

// TestLogLeaderRefusedOncePerLeaderAndEpoch: a refused leader is logged at
// ERROR with its id and epoch, once per leader and epoch, and every
// refusal is counted (docs/design.md D113, D114).
func TestLogLeaderRefusedOncePerLeaderAndEpoch(t *testing.T) {
	rec := newRecorder()
	n := &Node{log: rec.logger()}
	r := kraft.LeaderRefused{LeaderID: 3, Epoch: 7, TruncateTo: 40, HighWatermark: 52, Reason: "the leader asks to truncate below the high watermark"}
	n.leaderRefused(r)
	n.leaderRefused(r)
	got := rec.events(EventLeaderRefused)
	require.Len(t, got, 1)
	require.Equal(t, slog.LevelError, got[0].level)
	require.Equal(t, int64(3), got[0].attrs["leader"])
	require.Equal(t, int64(7), got[0].attrs["epoch"])
	require.Equal(t, int64(40), got[0].attrs["truncate_to"])
	require.Equal(t, int64(52), got[0].attrs["high_watermark"])
	require.Equal(t, adviceRefused, got[0].attrs["advice"])
	require.Contains(t, got[0].msg, "refusing to follow leader 3 of epoch 7")
	r.Epoch = 8
	n.leaderRefused(r)
	require.Len(t, rec.events(EventLeaderRefused), 2)
	require.Equal(t, uint64(3), n.met.leaderRefusals)
}

// TestLogVoterChangeAnswered: the leader logs its answer to a client's
// voter change, Info when done and Warn with Kafka's error when refused.
func TestLogVoterChangeAnswered(t *testing.T) {
	c := newDynamicCluster(t, 2, 1, 0, nil)
	recs := map[kraft.NodeID]*recorder{1: newRecorder(), 2: newRecorder()}
	c.tune = func(cfg *Config) { cfg.Logger = recs[cfg.Kraft.Local.ID].logger() }
	c.start(1)
	c.start(2)
	c.leader()
	voterChange(t, "add 2", func(ctx context.Context) error { return c.leader().AddVoter(ctx, dynKey(2), dynEndpoint(2)) })
	done := recs[1].waitEvent(t, EventVoterChangeAnswered, func(r logRecord) bool { return r.attrs["kind"] == "AddRaftVoter" })
	require.Equal(t, slog.LevelInfo, done.level)
	require.Equal(t, kraft.ErrNone.String(), done.attrs["error"])
	c.waitVoters(2, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var vce *VoterChangeError
	require.ErrorAs(t, c.leader().AddVoter(ctx, dynKey(2), dynEndpoint(2)), &vce)
	refused := recs[1].waitEvent(t, EventVoterChangeAnswered, func(r logRecord) bool { return r.level == slog.LevelWarn })
	require.Equal(t, vce.Code.String(), refused.attrs["error"])
	require.Contains(t, refused.msg, "refused")
}
