package sim

// Negative tests for the checker rules that sim_test.go does not
// exercise: each forges one broken situation and expects the rule.

import (
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

func leaderNode(c *Cluster) *node {
	for _, n := range c.nodes {
		if n.st.Role() == kraft.Leader {
			return n
		}
	}
	return nil
}

// A second replica that becomes Leader of the same epoch (built with real
// kraft steps from a record of the previous epoch).
func TestForgedCheckerCatchesSecondLeaderInEpoch(t *testing.T) {
	c := committedCluster(t)
	l := leaderNode(c)
	f := follower(c)
	E := l.st.Epoch()
	rec := kraft.QuorumRecord{Epoch: E - 1, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}
	s, _, err := kraft.NewState(f.cfg, &rec, kraft.LogState{}) // a forged replica with an empty log
	require.NoError(t, err)
	s, _ = kraft.Step(s, kraft.ElectionTimeout{})
	var other kraft.NodeID
	for _, v := range c.voters {
		if v.ID != f.id && v.ID != l.id {
			other = v.ID
		}
	}
	s, _ = kraft.Step(s, kraft.ReceiveVoteResponse{From: other, Epoch: E - 1, VoteGranted: true, LeaderID: kraft.NoNode})
	s, _ = kraft.Step(s, kraft.ReceiveVoteResponse{From: other, Epoch: E, VoteGranted: true, LeaderID: kraft.NoNode})
	require.Equal(t, kraft.Leader, s.Role())
	require.Equal(t, E, s.Epoch())
	forgeState(c, f, s, true)
	require.Equal(t, "one-leader-per-epoch", violationRule(t, c.Err()))
}

func TestForgedCheckerCatchesEpochGoingDown(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	rec := kraft.QuorumRecord{Epoch: 0, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}
	s, _, err := kraft.NewState(f.cfg, &rec, kraft.LogState{})
	require.NoError(t, err)
	forgeState(c, f, s, false)
	require.Equal(t, "epoch-monotonic", violationRule(t, c.Err()))
}

func TestForgedCheckerCatchesPersistedEpochGoingDown(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	c.check.beforeAction(f, kraft.Persist{Record: kraft.QuorumRecord{Epoch: 0, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}}, nil)
	require.Equal(t, "epoch-monotonic", violationRule(t, c.Err()))
}

func TestForgedCheckerCatchesHighWatermarkGoingDown(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	require.Positive(t, f.st.HighWatermark())
	// Same record and log, but a state that forgot its high watermark,
	// handed to afterStep (not a restart).
	s, _, err := kraft.NewState(f.cfg, f.record, logState(f.log[:f.flushed]))
	require.NoError(t, err)
	forgeState(c, f, s, false)
	require.Equal(t, "hwm-monotonic", violationRule(t, c.Err()))
}

func TestForgedCheckerCatchesForgottenVote(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	v, ok := f.st.VotedKey()
	require.True(t, ok, "the follower voted for the leader")
	_ = v
	c.check.beforeAction(f, kraft.Persist{Record: kraft.QuorumRecord{Epoch: f.st.Epoch(), LeaderID: f.st.Leader(), VotedKey: kraft.NoReplica}}, nil)
	require.Equal(t, "vote-durable", violationRule(t, c.Err()))
}

func TestForgedCheckerCatchesBeginQuorumEpochBeforePersist(t *testing.T) {
	c := committedCluster(t)
	l := leaderNode(c)
	c.check.beforeAction(l, kraft.SendBeginQuorumEpoch{To: kraft.ReplicaKey{ID: 1}, Epoch: l.st.Epoch() + 1, LeaderID: l.id}, nil)
	require.Equal(t, "persist-before-send", violationRule(t, c.Err()))
}

func TestForgedCheckerCatchesFetchToUnpersistedLeader(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	to := kraft.NodeID(0)
	for to == f.id || to == f.st.Leader() {
		to++
	}
	c.check.beforeAction(f, kraft.SendFetch{To: to, CurrentLeaderEpoch: f.st.Epoch()}, nil)
	require.Equal(t, "persist-before-send", violationRule(t, c.Err()))
}

func TestForgedCheckerCatchesHostLogMismatch(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	f.log = append(f.log, Record{Epoch: f.st.Epoch(), Payload: "unreported"})
	f.flushed = len(f.log)
	c.check.logChangedFrom(f, len(f.log)-1)
	c.check.afterEvent()
	require.Equal(t, "host-log", violationRule(t, c.Err()))
}

// A state whose durable record was changed behind its back.
func TestForgedCheckerCatchesRecordMismatch(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	r := *f.record
	r.LeaderID = 77
	f.record = &r
	c.check.afterStep(f, f.st, nil)
	require.Equal(t, "record-matches-state", violationRule(t, c.Err()))
}

// forgeState puts the forged state s on f, with its record as the one
// persisted when persisted is set, and runs the checker's after-step
// checks on it, as if f had stepped to s.
func forgeState(c *Cluster, f *node, s kraft.State, persisted bool) {
	before := f.st
	f.st = s
	if persisted {
		r := s.Record()
		f.record = &r
	}
	c.check.afterStep(f, before, nil)
}

// A Fetch to the leader from a voter whose log is durable up to its
// flushed offset only: from that offset it passes, one record further it
// breaks fetch-flushed (the leader would count a record a crash can take
// back).
func TestForgedCheckerCatchesFetchPastDurableLog(t *testing.T) {
	c := committedCluster(t)
	l := leaderNode(c)
	f := follower(c)
	c.check.fetchSent(f, l.id, int64(f.flushed), l.st.Epoch())
	require.NoError(t, c.Err())
	c.check.fetchSent(f, l.id, int64(f.flushed)+1, l.st.Epoch())
	require.Equal(t, "fetch-flushed", violationRule(t, c.Err()))
}

// logState describes a log that starts at 0 for kraft.NewState.
func logState(log []Record) kraft.LogState {
	var ls kraft.LogState
	for i, r := range log {
		if i == 0 || r.Epoch != log[i-1].Epoch {
			ls.Epochs = append(ls.Epochs, kraft.EpochStart{Epoch: r.Epoch, StartOffset: int64(i)})
		}
	}
	if len(log) > 0 {
		ls.End = kraft.LogEnd{Offset: int64(len(log)), Epoch: log[len(log)-1].Epoch}
	}
	return ls
}

// logState describes n's log, snapshots and voter sets for kraft.NewState.
func (n *node) logState() kraft.LogState {
	ls := hostLog{n: n}.State()
	if len(n.snaps) > 0 {
		latest, earliest := n.snaps[len(n.snaps)-1].id, n.snaps[0].id
		ls.LatestSnapshot, ls.EarliestSnapshot = &latest, &earliest
	}
	ls.VoterSets = n.voterSets()
	return ls
}

// The outbound actions of snapshots and voter changes are checked against
// the durable record too (docs/design.md D115): each forged one that the
// record does not back is a persist-before-send violation, and the same
// action that it backs is none.
func TestForgedCheckerCatchesUnbackedSnapshotAndVoterChangeMessages(t *testing.T) {
	type forged struct {
		name string
		send func(c *Cluster, l, f *node) (*node, kraft.Action)
	}
	E := func(n *node) kraft.Epoch { return n.st.Epoch() }
	backed := []forged{
		{"FetchSnapshot to the leader", func(c *Cluster, l, f *node) (*node, kraft.Action) {
			return f, kraft.SendFetchSnapshot{To: l.id, CurrentLeaderEpoch: E(l)}
		}},
		{"AddRaftVoter to the leader", func(c *Cluster, l, f *node) (*node, kraft.Action) {
			return f, kraft.SendVoterChange{To: l.id, Kind: kraft.AddVoter, Voter: f.cfg.Local}
		}},
		{"ApiVersions from the leader", func(c *Cluster, l, f *node) (*node, kraft.Action) {
			return l, kraft.SendAPIVersions{To: f.cfg.Local}
		}},
		{"a voter change response in the epoch", func(c *Cluster, l, f *node) (*node, kraft.Action) {
			return l, kraft.SendVoterChangeResponse{To: f.id, Epoch: E(l), LeaderID: l.id}
		}},
	}
	unbacked := []forged{
		{"FetchSnapshot to a follower", func(c *Cluster, l, f *node) (*node, kraft.Action) {
			return f, kraft.SendFetchSnapshot{To: f.id, CurrentLeaderEpoch: E(l)}
		}},
		{"FetchSnapshot in a later epoch", func(c *Cluster, l, f *node) (*node, kraft.Action) {
			return f, kraft.SendFetchSnapshot{To: l.id, CurrentLeaderEpoch: E(l) + 1}
		}},
		{"AddRaftVoter to a follower", func(c *Cluster, l, f *node) (*node, kraft.Action) {
			return f, kraft.SendVoterChange{To: f.id, Kind: kraft.AddVoter, Voter: f.cfg.Local}
		}},
		{"ApiVersions from a follower", func(c *Cluster, l, f *node) (*node, kraft.Action) {
			return f, kraft.SendAPIVersions{To: l.cfg.Local}
		}},
		{"a voter change response in a later epoch", func(c *Cluster, l, f *node) (*node, kraft.Action) {
			return l, kraft.SendVoterChangeResponse{To: f.id, Epoch: E(l) + 1, LeaderID: l.id}
		}},
	}
	c := committedCluster(t)
	l, f := leaderNode(c), follower(c)
	for _, b := range backed {
		n, a := b.send(c, l, f)
		c.check.beforeAction(n, a, nil)
		require.NoError(t, c.Err(), b.name)
	}
	for _, u := range unbacked {
		c := committedCluster(t)
		l, f := leaderNode(c), follower(c)
		n, a := u.send(c, l, f)
		c.check.beforeAction(n, a, nil)
		require.Equal(t, "persist-before-send", violationRule(t, c.Err()), u.name)
	}
}
