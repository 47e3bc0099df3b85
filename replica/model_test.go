package replica

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// The model checker's hooks are Model's, never Replica's: a host's view of
// the type (go doc replica.Replica) lists only what a host uses
// (docs/design.md D290). A hook added to Replica, or moved back, fails
// here.
func TestReplicaMethodSetHasNoModelHooks(t *testing.T) {
	hooks := []string{
		"Deadlines", "Expire", "Clone", "Correlations", "Canonicalize",
		"ParkedFrom", "RenameParked", "AppendCanonicalUntimed", "AppendCanonicalMessage",
	}
	model := reflect.TypeOf(Model{})
	for _, h := range hooks {
		_, ok := model.MethodByName(h)
		require.True(t, ok, "Model has no %s: the list above is out of date", h)
	}
	rep := reflect.TypeOf(&Replica{})
	for i := 0; i < model.NumMethod(); i++ {
		name := model.Method(i).Name
		_, ok := rep.MethodByName(name)
		require.False(t, ok, "*Replica has the model checker's hook %s: put it on Model (D290)", name)
	}
	require.Equal(t, model.NumMethod(), len(hooks), "Model's hooks are listed above")
}
