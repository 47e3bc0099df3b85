package sim

import (
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft/internal/catalogue"
	"github.com/stretchr/testify/require"
)

// TestTraceKnowsEveryType: the trace format decodes every event and
// action type of package kraft (read from its source), so a trace of a run
// that steps a new type replays. A new type fails here until eventTypes or
// actionTypes has it.
func TestTraceKnowsEveryType(t *testing.T) {
	cat, err := catalogue.Load("..")
	require.NoError(t, err)
	check := func(names []string, types map[string]reflect.Type, decode func(Tagged) (interface{}, error)) {
		for _, name := range names {
			rt, ok := types[name]
			require.True(t, ok, "kraft.%s is missing from the trace format (sim/trace.go)", name)
			require.Equal(t, name, rt.Name())
			v := reflect.New(rt).Elem().Interface()
			got, err := decode(tag(v))
			require.NoError(t, err, name)
			require.Equal(t, v, got, name)
		}
		require.Len(t, types, len(names), "the trace format names types that are not in the catalogue")
	}
	check(cat.Events, eventTypes, func(tg Tagged) (interface{}, error) { return DecodeEvent(tg) })
	check(cat.Actions, actionTypes, func(tg Tagged) (interface{}, error) { return DecodeAction(tg) })
}
