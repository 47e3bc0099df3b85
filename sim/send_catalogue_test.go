package sim

import (
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/catalogue"
	"github.com/stretchr/testify/require"
)

// switchTypes is the set of kraft types the type switch of fn (package
// sim) lists.
func switchTypes(t *testing.T, fn string) map[string]bool {
	t.Helper()
	cases, err := catalogue.TypeSwitchIn(".", "sim", fn)
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, c := range cases {
		for _, name := range c.Types {
			require.False(t, listed[name], "%s lists %s twice", fn, name)
			listed[name] = true
		}
	}
	return listed
}

// TestPersistBeforeSendKnowsEveryAction: every action of package kraft
// (read from its source) is either local (Outbound's switch) or checked by
// PersistBeforeSend's switch, never both, and both name only actions; and
// Outbound says so of a value of each type. A new action fails here until
// one of the two lists it, so a new message cannot leave the replica
// unchecked (docs/design.md D115).
func TestPersistBeforeSendKnowsEveryAction(t *testing.T) {
	cat, err := catalogue.Load("..")
	require.NoError(t, err)
	local := switchTypes(t, "Outbound")
	checked := switchTypes(t, "PersistBeforeSend")
	actions := map[string]bool{}
	for _, name := range cat.Actions {
		actions[name] = true
		require.True(t, local[name] != checked[name], "kraft.%s: local %v, checked by PersistBeforeSend %v; exactly one", name, local[name], checked[name])
		v := newAction(t, name)
		require.Equal(t, checked[name], Outbound(v), "Outbound(%s)", name)
	}
	for name := range local {
		require.True(t, actions[name], "Outbound lists %s, not an action", name)
	}
	for name := range checked {
		require.True(t, actions[name], "PersistBeforeSend lists %s, not an action", name)
	}
	// The review-4 count: thirteen outbound actions, the three of
	// snapshots and voter changes among them.
	for _, name := range []string{"SendFetchSnapshot", "SendVoterChange", "SendAPIVersions", "SendVoterChangeResponse"} {
		require.True(t, checked[name], name)
	}
}

// newAction is a zero value of the action type named name.
func newAction(t *testing.T, name string) kraft.Action {
	t.Helper()
	rt, ok := actionTypes[name]
	require.True(t, ok, name)
	return reflect.New(rt).Elem().Interface().(kraft.Action)
}
