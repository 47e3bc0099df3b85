package sim

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// Reconfiguration (KIP-853) in the simulator: clusters whose voter set
// lives in the log and changes one voter at a time under faults, every
// invariant checked after every event.

// dynamicCluster is a cluster of controllers r0..r(voters-1), the first
// bootstrap of them in the bootstrap voter set, run until a leader is
// followed by a majority and 5 records are committed.
func dynamicCluster(t *testing.T, voters, bootstrap int, seed int64, autoJoin bool) *Cluster {
	t.Helper()
	opts := DefaultOptions()
	opts.Voters, opts.Seed = voters, seed
	opts.Dynamic, opts.BootstrapVoters, opts.AutoJoin = true, bootstrap, autoJoin
	c, err := New(opts, nil)
	require.NoError(t, err)
	_, err = c.WaitForLeader(20 * time.Second)
	require.NoError(t, err)
	require.NoError(t, c.WaitForHighWatermark(5, 20*time.Second, c.VoterIDs()...))
	return c
}

// waitVoters runs until the committed voter set has exactly the ids want
// (each with the key its replica has now), for at most limit.
func waitVoters(t *testing.T, c *Cluster, limit time.Duration, want ...kraft.NodeID) {
	t.Helper()
	done := func() bool {
		vs := c.Voters()
		if len(vs) != len(want) {
			return false
		}
		for _, id := range want {
			if !hasKey(vs, c.Key(id)) {
				return false
			}
		}
		return true
	}
	require.NoError(t, c.RunUntil(c.Now()+limit, done))
	require.True(t, done(), "committed voters %v, want ids %v; changes %v%s", c.Voters(), want, c.VoterChanges(), c.Describe())
}

// lastChange is the answer to the latest voter-change request.
func lastChange(t *testing.T, c *Cluster) VoterChange {
	t.Helper()
	vc := c.VoterChanges()
	require.NotEmpty(t, vc)
	return vc[len(vc)-1]
}

// addCommitted asks the leader to add id and runs until the answer comes:
// NONE.
func addCommitted(t *testing.T, c *Cluster, kind kraft.VoterChangeKind, id kraft.NodeID) {
	t.Helper()
	l, err := c.WaitForLeader(20 * time.Second)
	require.NoError(t, err)
	if kind == kraft.AddVoter {
		// An operator adds a replica that runs and follows the leader.
		follows := func() bool { s := c.State(id); return s.Role() == kraft.Follower && s.Leader() == l }
		require.NoError(t, c.RunUntil(c.Now()+10*time.Second, follows))
		require.True(t, follows(), "r%d does not follow r%d: %s", id, l, c.Describe())
	}
	if kind == kraft.AddVoter {
		c.AddVoter(id)
	} else {
		c.RemoveVoter(id)
	}
	n := len(c.VoterChanges())
	require.NoError(t, c.RunUntil(c.Now()+10*time.Second, func() bool { return c.VoterChanges()[n-1].Answered }))
	v := c.VoterChanges()[n-1]
	require.True(t, v.Answered, "%v", v)
	require.Equal(t, kraft.ErrNone, v.Error, "%v (all: %v)%s", v, c.VoterChanges(), c.Describe())
}

// TestReconfigGrowFromOneToThree: a quorum bootstrapped with r0 alone
// adds r1, then r2 (each AddRaftVoter answered NONE once its VotersRecord
// commits); the three then survive the leader's crash.
func TestReconfigGrowFromOneToThree(t *testing.T) {
	c := dynamicCluster(t, 3, 1, 1, false)
	require.Equal(t, []kraft.NodeID{0}, c.VoterIDs())
	addCommitted(t, c, kraft.AddVoter, 1)
	waitVoters(t, c, 5*time.Second, 0, 1)
	addCommitted(t, c, kraft.AddVoter, 2)
	waitVoters(t, c, 5*time.Second, 0, 1, 2)
	for _, id := range c.IDs() {
		require.True(t, c.State(id).IsVoter(), "r%d", id)
	}
	l, err := c.WaitForLeader(20 * time.Second)
	require.NoError(t, err)
	c.Crash(l)
	_, err = c.WaitForLeader(20 * time.Second)
	require.NoError(t, err)
	_, err = c.CheckLiveness()
	require.NoError(t, err)
	t.Logf("history %v, %d events", c.VoterHistory(), c.Stats().Events)
}
