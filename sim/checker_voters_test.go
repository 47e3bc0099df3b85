package sim

// Negative tests for the reconfiguration rules of the checker: each forges
// one broken situation on a cluster whose voter set lives in the log, and
// expects the rule.

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// dynamicLeader is the leader of a dynamic cluster (see dynamicCluster)
// and the cluster.
func dynamicLeader(t *testing.T, voters, bootstrap int) (*Cluster, *node) {
	t.Helper()
	c := dynamicCluster(t, voters, bootstrap, 5, false)
	l := leaderNode(c)
	require.NotNil(t, l)
	require.NoError(t, c.Err())
	return c, l
}

// without is voters less the voter with id.
func without(voters []kraft.ReplicaKey, id kraft.NodeID) []kraft.ReplicaKey {
	var out []kraft.ReplicaKey
	for _, v := range voters {
		if v.ID != id {
			out = append(out, v)
		}
	}
	return out
}

// Two VotersRecords past the leader's high watermark: one uncommitted
// change passes, the second is caught.
func TestForgedCheckerCatchesTwoUncommittedVoterChanges(t *testing.T) {
	c, l := dynamicLeader(t, 3, 3)
	E := l.st.Epoch()
	voters := l.st.Voters()
	l.log = append(l.log, Record{Epoch: E, Payload: "c-forged"}, Record{Epoch: E, Payload: votersPayload(without(voters, 2))})
	c.check.afterStep(l, l.st, nil)
	require.NoError(t, c.Err(), "one uncommitted change is allowed")
	l.log = append(l.log, Record{Epoch: E, Payload: votersPayload(without(voters, 1))})
	c.check.afterStep(l, l.st, nil)
	require.Equal(t, "one-voter-change", violationRule(t, c.Err()))
}

// A quorum grown from one voter to three: a high watermark held by the
// leader alone is a majority of the bootstrap set, not of the set in force.
func TestForgedCheckerCountsTheVoterSetInForce(t *testing.T) {
	c := dynamicCluster(t, 3, 1, 5, false)
	addCommitted(t, c, kraft.AddVoter, 1)
	addCommitted(t, c, kraft.AddVoter, 2)
	l := leaderNode(c)
	require.Len(t, l.st.Voters(), 3)
	E := l.st.Epoch()
	l.log = append(l.log, Record{Epoch: E, Payload: "c-forged"})
	l.flushed = len(l.log)
	c.check.leaderHighWatermark(l, int64(len(l.log)))
	require.Equal(t, "hwm-majority", violationRule(t, c.Err()))
}

// A VotersRecord that removes two of three voters at once, held by every
// voter: committing it is caught.
func TestForgedCheckerCatchesNonOverlappingVoterChange(t *testing.T) {
	c, l := dynamicLeader(t, 3, 3)
	E := l.st.Epoch()
	var others []kraft.NodeID
	for _, v := range l.st.Voters() {
		if v.ID != l.id {
			others = append(others, v.ID)
		}
	}
	forged := Record{Epoch: E, Payload: votersPayload(without(without(l.st.Voters(), others[0]), others[1]))}
	same := func() bool {
		for _, n := range c.nodes {
			if n.flushed != len(l.log) || len(n.log) != len(l.log) {
				return false
			}
		}
		return true
	}
	require.NoError(t, c.RunUntil(c.Now()+time.Minute, same))
	require.True(t, same(), "every replica holds the leader's log durably")
	require.Equal(t, kraft.Leader, l.st.Role())
	E = l.st.Epoch()
	forged.Epoch = E
	for _, n := range c.nodes {
		n.log = append(n.log, forged)
		n.flushed = len(n.log)
	}
	c.check.leaderHighWatermark(l, int64(len(l.log)))
	require.Equal(t, "voter-change-overlap", violationRule(t, c.Err()))
}

// A leader that removed itself (a real RemoveRaftVoter, not yet
// committed) while its host's log shows the removal below the high
// watermark: still Leader is caught.
func TestForgedCheckerCatchesRemovedLeaderStillLeading(t *testing.T) {
	c, l := dynamicLeader(t, 3, 3)
	c.RemoveVoter(l.id)
	require.NoError(t, c.Err())
	require.Equal(t, kraft.Leader, l.st.Role())
	require.False(t, l.st.IsVoter(), "the removal is in force, uncommitted")
	c.check.afterStep(l, l.st, nil)
	require.NoError(t, c.Err(), "uncommitted, the leader may lead")
	h := int(l.st.HighWatermark())
	require.Positive(t, h)
	l.log[h-1] = Record{Epoch: l.log[h-1].Epoch, Payload: votersPayload(l.st.Voters())}
	c.check.afterStep(l, l.st, nil)
	require.Equal(t, "removed-leader-resigns", violationRule(t, c.Err()))
}

// A replica whose voter set is itself alone (another set than the
// leader's: a change it alone saw) leads the leader's epoch: caught
// across the change.
func TestForgedCheckerCatchesSecondLeaderAcrossVoterChange(t *testing.T) {
	c, l := dynamicLeader(t, 3, 3)
	f := follower(c)
	E := l.st.Epoch()
	rec := kraft.QuorumRecord{Epoch: E - 1, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}
	cfg := f.cfg
	s, _, err := kraft.NewState(cfg, &rec, kraft.LogState{VoterSets: []kraft.VoterSetAt{{Offset: -1, Voters: []kraft.ReplicaKey{cfg.Local}}}})
	require.NoError(t, err)
	for i := 0; i < 3 && s.Role() != kraft.Leader; i++ {
		s, _ = kraft.Step(s, kraft.ElectionTimeout{})
	}
	require.Equal(t, kraft.Leader, s.Role())
	require.Equal(t, E, s.Epoch())
	forgeState(c, f, s, true)
	require.Equal(t, "one-leader-per-epoch", violationRule(t, c.Err()))
}

// A host whose log says another voter set than its state (a VotersRecord
// changed behind the state's back): caught at the next check.
func TestForgedCheckerCatchesHostVoterSetMismatch(t *testing.T) {
	c, _ := dynamicLeader(t, 3, 3)
	f := follower(c)
	c.check.afterStep(f, f.st, nil)
	require.NoError(t, c.Err(), "the host's set and the state's agree")
	last := -1
	for i := f.start; i < int(f.st.LogEnd().Offset); i++ {
		if isVoters(f.log[i]) {
			last = i
		}
	}
	require.GreaterOrEqual(t, last, 0, "the follower's log holds the first leader's VotersRecord")
	f.log[last].Payload = votersPayload(without(f.st.Voters(), 2))
	c.check.afterStep(f, f.st, nil)
	require.Equal(t, "host-voters", violationRule(t, c.Err()))
}
