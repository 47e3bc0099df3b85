package replica

import (
	"errors"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

func newFaultReplica(t *testing.T) *Replica {
	r, err := New(Config{
		Kraft: kraft.Config{
			Local: kraft.ReplicaKey{ID: 2}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}},
			ElectionTimeout: time.Second, FetchTimeout: 10 * time.Second,
		},
		Log: storage.NewMemLog(), Records: &memRecords{}, Static: true,
	}, 0)
	require.NoError(t, err)
	r.Take()
	return r
}

// stoppedFault is the Fault r stopped with, announced by a Stopped output.
func stoppedFault(t *testing.T, r *Replica) *Fault {
	var f *Fault
	require.True(t, errors.As(r.Err(), &f), "err %v", r.Err())
	var stopped bool
	for _, o := range r.Take() {
		if s, ok := o.(Stopped); ok {
			stopped = true
			require.ErrorAs(t, s.Err, &f)
		}
	}
	require.True(t, stopped, "no Stopped output")
	return f
}

// TestStateInvariantBrokenStopsWithFault: a State that fails
// kraft.State.CheckInvariants after a step stops the replica with a Fault
// naming the rule, and the broken State is not adopted (D200).
func TestStateInvariantBrokenStopsWithFault(t *testing.T) {
	r := newFaultReplica(t)
	before := r.State()
	saved := checkState
	t.Cleanup(func() { checkState = saved })
	checkState = func(kraft.State) error { return &kraft.InvariantError{Rule: "tally", Detail: "corrupted on purpose"} }
	r.Receive(time.Millisecond, Message{From: 1, To: 2, Corr: 7, Event: kraft.ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 2}})
	f := stoppedFault(t, r)
	require.Equal(t, "state", f.Layer)
	require.Equal(t, "tally", f.Rule)
	require.Contains(t, f.Error(), "state/tally")
	require.Equal(t, before.Epoch(), r.State().Epoch(), "the broken State was adopted")
	r.Receive(2*time.Millisecond, Message{From: 1, To: 2, Corr: 8, Event: kraft.ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 2, VoterID: 2}})
	require.Empty(t, r.Take(), "a stopped replica acts")
}

// TestReplicaInvariantBrokenStopsWithFault: a Replica corrupted on purpose
// (a Fetch parked at a follower) stops with a Fault naming the rule
// "parked-at-leader" at its next input, the role change being checked at
// once rather than sampled (D200).
func TestReplicaInvariantBrokenStopsWithFault(t *testing.T) {
	r := newFaultReplica(t)
	r.Receive(time.Millisecond, Message{From: 1, To: 2, Corr: 7, Event: kraft.ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 2}})
	r.Take()
	require.NoError(t, r.Err())
	r.parked = append(r.parked, parkedFetch{deadline: time.Hour})
	r.checkedRole = kraft.Leader // as if the last check saw another role
	r.Tick(2 * time.Millisecond)
	f := stoppedFault(t, r)
	require.Equal(t, "replica", f.Layer)
	require.Equal(t, "parked-at-leader", f.Rule)
	require.Contains(t, f.State, "Follower")
}

// TestReplicaInvariantSampled: between role changes this layer's
// invariants are checked every replicaCheckEvery inputs, so a corruption
// is found within that many inputs.
func TestReplicaInvariantSampled(t *testing.T) {
	r := newFaultReplica(t)
	r.parked = append(r.parked, parkedFetch{deadline: time.Hour})
	n := 0
	for ; n < 2*replicaCheckEvery && r.Err() == nil; n++ {
		r.Tick(time.Duration(n+1) * time.Microsecond)
	}
	require.Error(t, r.Err())
	require.LessOrEqual(t, n, replicaCheckEvery)
	require.Equal(t, "parked-at-leader", stoppedFault(t, r).Rule)
}
