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

// TestPersistBeforeSendKnowsEveryAction: PersistBeforeSend's switch
// names exactly the actions of kraft's catalogue of messages (kraft.RPCs,
// D230), the actions Outbound says leave the replica; every other action
// of package kraft (read from its source) is local. A new message fails
// here until PersistBeforeSend has a rule for it, so a new message cannot
// leave the replica unchecked (docs/design.md D115).
func TestPersistBeforeSendKnowsEveryAction(t *testing.T) {
	cat, err := catalogue.Load("..")
	require.NoError(t, err)
	checked := switchTypes(t, "PersistBeforeSend")
	messages := map[string]bool{}
	for _, r := range kraft.RPCs() {
		for _, a := range []kraft.Action{r.Request, r.Response} {
			if a != nil {
				messages[reflect.TypeOf(a).Name()] = true
			}
		}
	}
	actions := map[string]bool{}
	for _, name := range cat.Actions {
		actions[name] = true
		require.Equal(t, messages[name], checked[name], "kraft.%s: a message of the catalogue %v, checked by PersistBeforeSend %v", name, messages[name], checked[name])
		require.Equal(t, messages[name], Outbound(newAction(t, name)), "Outbound(%s)", name)
	}
	for name := range checked {
		require.True(t, actions[name], "PersistBeforeSend lists %s, not an action", name)
	}
	// The review-4 count: thirteen outbound actions, the three of
	// snapshots and voter changes among them.
	require.Len(t, checked, 13)
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
