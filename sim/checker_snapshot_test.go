package sim

// Negative tests for the snapshot rules of the checker: each forges one
// broken situation on a cluster whose hosts took snapshots and cleaned
// their logs, and expects the rule.

import (
	"fmt"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/stretchr/testify/require"
)

// cleanedCluster is a 3-voter cluster whose hosts snapshot every 8
// committed records and keep one snapshot, run until 40 records are
// committed: every replica's log starts past 0.
func cleanedCluster(t *testing.T) *Cluster {
	t.Helper()
	c, err := New(Options{Voters: 3, Seed: 11, SnapshotEvery: 8, SnapshotsKept: 1}, nil)
	require.NoError(t, err)
	_, err = c.WaitForLeader(20 * time.Second)
	require.NoError(t, err)
	require.NoError(t, c.WaitForHighWatermark(40, 20*time.Second))
	for _, n := range c.nodes {
		require.Positive(t, n.start, "replica %d cleaned its log", n.id)
		require.Len(t, n.snaps, 1)
		require.Equal(t, n.st.LogStart(), int64(n.start))
	}
	return c
}

// forgedSnapshot is a snapshot of the first off committed records.
func forgedSnapshot(c *Cluster, off int) *snapshot {
	recs := c.check.Committed()[:off]
	return &snapshot{id: kraft.LogEnd{Offset: int64(off), Epoch: recs[off-1].Epoch}, recs: recs, data: encodeSnapshot(recs)}
}

func TestForgedCheckerCatchesSnapshotBeyondHighWatermark(t *testing.T) {
	c := cleanedCluster(t)
	f := follower(c)
	p := c.check.of(f)
	require.Positive(t, p.committed)
	// A correct snapshot of the committed records up to the replica's
	// committed offset passes.
	c.check.snapshotCreated(f, forgedSnapshot(c, int(p.committed)))
	require.NoError(t, c.Err())
	// One record further, the content still matches the committed log
	// (another replica committed it), but not this replica's high
	// watermark.
	p.committed--
	c.check.snapshotCreated(f, forgedSnapshot(c, int(p.committed)+1))
	require.Equal(t, "snapshot-beyond-hwm", violationRule(t, c.Err()))
}

func TestForgedCheckerCatchesSnapshotContent(t *testing.T) {
	for name, forge := range map[string]func(s *snapshot){
		"a changed record": func(s *snapshot) {
			s.recs = append([]Record(nil), s.recs...)
			s.recs[3].Payload = "changed"
		},
		"a record missing": func(s *snapshot) { s.recs = s.recs[:len(s.recs)-1] },
		"another epoch":    func(s *snapshot) { s.id.Epoch++ },
	} {
		for _, installed := range []bool{false, true} {
			c := cleanedCluster(t)
			f := follower(c)
			s := forgedSnapshot(c, int(c.check.of(f).committed))
			forge(s)
			if installed {
				c.check.snapshotInstalled(f, s)
			} else {
				c.check.snapshotCreated(f, s)
			}
			require.Equal(t, "snapshot-content", violationRule(t, c.Err()), "%s, installed %v", name, installed)
		}
	}
	// A snapshot past the committed log.
	c := cleanedCluster(t)
	l := leaderNode(c)
	s := forgedSnapshot(c, c.CommittedLen())
	s.id.Offset++
	c.check.snapshotInstalled(l, s)
	require.Equal(t, "snapshot-content", violationRule(t, c.Err()))
}

func TestForgedCheckerCatchesLogStartPastEarliestSnapshot(t *testing.T) {
	for name, forge := range map[string]func(n *node){
		"start past the earliest snapshot": func(n *node) { n.start++ },
		"no snapshot at all":               func(n *node) { n.snaps = nil },
		"the snapshot at the start deleted": func(n *node) {
			s := *n.snaps[0]
			s.id.Offset++
			n.snaps = []*snapshot{&s}
		},
	} {
		c := cleanedCluster(t)
		f := follower(c)
		forge(f)
		c.check.logChanged(f)
		c.check.afterEvent()
		require.Equal(t, "log-start", violationRule(t, c.Err()), name)
	}
}

// The host and the state disagree on the snapshots: a snapshot the state
// was not told about, or one the host lost.
func TestForgedCheckerCatchesSnapshotIDMismatch(t *testing.T) {
	c := cleanedCluster(t)
	f := follower(c)
	f.snaps = append(f.snaps, forgedSnapshot(c, int(c.check.of(f).committed)))
	c.check.logChanged(f)
	c.check.afterEvent()
	require.Equal(t, "host-log", violationRule(t, c.Err()))
}

// Committed records above a log start are still checked: losing one, or
// changing one, is caught.
func TestForgedCheckerCatchesLossAboveLogStart(t *testing.T) {
	c := cleanedCluster(t)
	f := follower(c)
	require.Greater(t, f.flushed, f.start+1)
	f.log, f.flushed = f.log[:f.start+1], f.start+1
	c.check.logChanged(f)
	c.check.afterEvent()
	require.Equal(t, "committed-lost", violationRule(t, c.Err()))

	c = cleanedCluster(t)
	f = follower(c)
	f.log[f.start].Payload = "changed"
	c.check.logChanged(f)
	c.check.afterEvent()
	require.Contains(t, []string{"committed-lost", "log-matching"}, violationRule(t, c.Err()))
}

// The state asks the host for what it cannot do: serve a snapshot it does
// not have, write a chunk out of place, install an incomplete download,
// serve records below the log start, truncate below it.
func TestForgedCheckerCatchesImpossibleSnapshotRequests(t *testing.T) {
	id := kraft.LogEnd{Offset: 5, Epoch: 1}
	cases := map[string]func(c *Cluster, n *node) string{
		"serve a snapshot the host does not have": func(c *Cluster, n *node) string {
			_, _ = hostSnapshots{c, n}.Read(id, 0, 10)
			return "host-snapshot"
		},
		"serve a snapshot past its end": func(c *Cluster, n *node) string {
			s := n.latestSnapshot()
			_, _ = hostSnapshots{c, n}.Read(s.id, int64(len(s.bytes()))+1, 10)
			return "host-snapshot"
		},
		"install an incomplete download": func(c *Cluster, n *node) string {
			w, _ := hostSnapshots{c, n}.Create(id)
			_ = w.Append([]byte("1 c1\n"))
			_ = w.Freeze()
			return "host-snapshot"
		},
		"install a download that does not decode": func(c *Cluster, n *node) string {
			w, _ := hostSnapshots{c, n}.Create(id)
			_ = w.Append([]byte("1 c1"))
			_ = w.Freeze()
			return "host-snapshot"
		},
		"serve records below the log start": func(c *Cluster, n *node) string {
			_, _ = hostLog{c, n}.Read(int64(n.start-1), 100)
			return "host-log"
		},
		"truncate below the log start": func(c *Cluster, n *node) string {
			_ = hostLog{c, n}.Truncate(int64(n.start - 1))
			return "host-log"
		},
		"a replica that stops": func(c *Cluster, n *node) string {
			c.output(n, replica.Stopped{Err: fmt.Errorf("replica: a storage error")})
			return "replica-stopped"
		},
	}
	for name, forge := range cases {
		c := cleanedCluster(t)
		rule := forge(c, leaderNode(c))
		require.Equal(t, rule, violationRule(t, c.Err()), name)
	}
}

// forgeLeader makes replica f Leader of the epoch after the current
// leader's, with real kraft steps (a pre-vote and a vote granted by
// another voter), and hands the step to the checker.
func forgeLeader(t *testing.T, c *Cluster, f *node) {
	t.Helper()
	l := leaderNode(c)
	E := l.st.Epoch()
	var other kraft.NodeID
	for _, v := range c.voters {
		if v.ID != f.id && v.ID != l.id {
			other = v.ID
		}
	}
	rec := kraft.QuorumRecord{Epoch: E, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}
	s, _, err := kraft.NewState(f.cfg, &rec, f.logState())
	require.NoError(t, err)
	s, _ = kraft.Step(s, kraft.ElectionTimeout{})
	s, _ = kraft.Step(s, kraft.ReceiveVoteResponse{From: other, Epoch: E, VoteGranted: true, LeaderID: kraft.NoNode})
	s, _ = kraft.Step(s, kraft.ReceiveVoteResponse{From: other, Epoch: E + 1, VoteGranted: true, LeaderID: kraft.NoNode})
	require.Equal(t, kraft.Leader, s.Role())
	require.Equal(t, E+1, s.Epoch())
	forgeState(c, f, s, true)
}

// A replica that becomes leader without every committed record, with its
// log starting at 0 or past it; the same replica with its whole log is a
// complete leader.
func TestForgedCheckerCatchesIncompleteLeader(t *testing.T) {
	c := cleanedCluster(t)
	forgeLeader(t, c, follower(c))
	require.NoError(t, c.Err(), "a follower with the committed log may lead")

	c = cleanedCluster(t)
	f := follower(c)
	f.log, f.flushed = f.log[:f.start+1], f.start+1
	c.check.logChanged(f)
	forgeLeader(t, c, f)
	require.Equal(t, "leader-complete", violationRule(t, c.Err()))

	c = committedCluster(t)
	f = follower(c)
	require.Zero(t, f.start)
	f.log, f.flushed = f.log[:3], 3
	c.check.logChanged(f)
	forgeLeader(t, c, f)
	require.Equal(t, "leader-complete", violationRule(t, c.Err()))
}
