package kraft

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCheckInvariantsNamesTheRuleBroken: a State corrupted on purpose
// fails CheckInvariants with an *InvariantError naming the rule.
func TestCheckInvariantsNamesTheRuleBroken(t *testing.T) {
	st, _, err := NewState(Config{Local: ReplicaKey{ID: 1}, Voters: []ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}}, nil, LogState{})
	require.NoError(t, err)
	require.NoError(t, st.CheckInvariants())
	for _, tc := range []struct {
		rule    string
		corrupt func(*State)
	}{
		{"epoch", func(s *State) { s.epoch = -1 }},
		{"high-watermark", func(s *State) { s.hwm = s.committed + 1 }},
		{"tally", func(s *State) { s.granted = 1 }},
		{"follower-fields", func(s *State) { s.joinWait = true }},
	} {
		bad := st
		tc.corrupt(&bad)
		var ie *InvariantError
		require.True(t, errors.As(bad.CheckInvariants(), &ie), tc.rule)
		require.Equal(t, tc.rule, ie.Rule)
	}
}
