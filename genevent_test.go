package kraft_test

import (
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft/internal/catalogue"
	"github.com/stretchr/testify/require"
)

// TestGenEventCoversTheCatalogue: the property tests' event generator
// draws every event type of the package (read from its source), so a new
// event is stepped on random states once genEvent knows it.
func TestGenEventCoversTheCatalogue(t *testing.T) {
	cat, err := catalogue.Load(".")
	require.NoError(t, err)
	drawn := map[string]bool{}
	for i := 0; i < 3000 && len(drawn) < len(cat.Events); i++ {
		drawn[reflect.TypeOf(genEvent.Example(i)).Name()] = true
	}
	for _, name := range cat.Events {
		require.True(t, drawn[name], "genEvent (property_test.go) never draws kraft.%s", name)
	}
}
