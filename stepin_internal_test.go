package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStepInLeavesStateOnFaultAndDrop: a Fault (a log end reported below
// the high watermark, a fetch response from the wrong leader), a response
// whose records are to be appended first, a dropped event (nil, a zero
// State, a nil State) leave the caller's State exactly as it was: also
// when the step had changed the state before it failed (an Unattached
// replica that attaches to the leader a response names, then finds the
// high watermark lowered).
func TestStepInLeavesStateOnFaultAndDrop(t *testing.T) {
	follower := bnSteady(t, 3).state(2)
	require.Equal(t, Follower, follower.Role())
	require.Positive(t, follower.HighWatermark())

	unattached, _ := step(t, follower, ReceiveLeaderlessEpoch{From: 3, Epoch: follower.Epoch() + 1})
	require.Equal(t, Unattached, unattached.Role())
	require.Equal(t, follower.HighWatermark(), unattached.HighWatermark())
	for _, tc := range []struct {
		name string
		s    State
		e    Event
		want func([]Action) bool
	}{
		{"log end below the high watermark", follower, LogAppended{End: LogEnd{Offset: 0, Epoch: 1}}, isFault},
		{"a second leader of the epoch", follower, ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: follower.Epoch(), VoterID: NoNode}, isFault},
		{"attached to a leader, then a lowered high watermark", unattached, ReceiveFetchResponse{From: 3, LeaderID: 3, LeaderEpoch: unattached.Epoch(), HighWatermark: 0}, isFault},
		{"attached to a leader, then records to append first", unattached, ReceiveFetchResponse{From: 3, LeaderID: 3, LeaderEpoch: unattached.Epoch(), HighWatermark: unattached.HighWatermark(), Records: true},
			func(acts []Action) bool { _, ok := only(acts).(AppendFetched); return ok }},
		{"records to append first", follower, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: follower.Epoch(), HighWatermark: follower.HighWatermark(), Records: true},
			func(acts []Action) bool { _, ok := only(acts).(AppendFetched); return ok }},
		{"a nil event", follower, nil, func(acts []Action) bool { return len(acts) == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, buf := range []*Buffer{nil, {}} {
				before := deepCopy(tc.s)
				s := tc.s
				acts := StepIn(buf, &s, tc.e)
				require.True(t, tc.want(acts), "%v", acts)
				require.Equal(t, before, s)
			}
		})
	}
	var zero State
	require.Empty(t, StepIn(nil, &zero, ElectionTimeout{}))
	require.Equal(t, State{}, zero)
	require.Empty(t, StepIn(&Buffer{}, nil, ElectionTimeout{}))
}

func only(acts []Action) Action {
	if len(acts) != 1 {
		return nil
	}
	return acts[0]
}

func isFault(acts []Action) bool { _, ok := only(acts).(Fault); return ok }
