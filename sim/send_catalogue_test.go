package sim

import (
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/catalogue"
	"github.com/stretchr/testify/require"
)

// TestPersistBeforeSendKnowsEveryAction: every message action of kraft's
// catalogue of messages (kraft.RPCs, D230), the actions Outbound says
// leave the replica, says what it relies on in the durable record
// (kraft.RelianceOf, D282), which PersistBeforeSend checks; every other
// action of package kraft (read from its source) is local and has none. A
// new message fails here until it has its reliance, so a new message
// cannot leave the replica unchecked (docs/design.md D115).
func TestPersistBeforeSendKnowsEveryAction(t *testing.T) {
	cat, err := catalogue.Load("..")
	require.NoError(t, err)
	messages := map[string]bool{}
	for _, r := range kraft.RPCs() {
		for _, a := range []kraft.Action{r.Request, r.Response} {
			if a != nil {
				messages[reflect.TypeOf(a).Name()] = true
			}
		}
	}
	checked := map[string]bool{}
	for _, name := range cat.Actions {
		a := newAction(t, name)
		_, ok := kraft.RelianceOf(kraft.ReplicaKey{ID: 1}, a, nil)
		checked[name] = ok
		require.Equal(t, messages[name], ok, "kraft.%s: a message of the catalogue %v, with a reliance %v", name, messages[name], ok)
		require.Equal(t, messages[name], Outbound(a), "Outbound(%s)", name)
	}
	// The review-4 count: thirteen outbound actions, the three of
	// snapshots and voter changes among them.
	require.Len(t, messages, 13)
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
