package kraft_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft"
	"pgregory.net/rapid"
)

// TestPropertyArenaFallbackAgrees: on states reached by simulated runs and
// arbitrary events, the arena's fallback (every action boxed) and its
// pooled actions give the same next state and the same actions, through
// StepInto with a reused Buffer and through Step.
func TestPropertyArenaFallbackAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		was := kraft.SetArenaFallback(false)
		defer kraft.SetArenaFallback(was)
		var pooled, boxed kraft.Buffer
		for i, s := range reachableStates(t) {
			n := rapid.IntRange(1, 20).Draw(t, fmt.Sprintf("events for replica %d", i))
			for j := 0; j < n; j++ {
				e := genEvent.Draw(t, "event")
				kraft.SetArenaFallback(false)
				want, wantActs := kraft.StepInto(&pooled, s, e)
				_, stepActs := kraft.Step(s, e)
				kraft.SetArenaFallback(true)
				got, acts := kraft.StepInto(&boxed, s, e)
				_, boxedStepActs := kraft.Step(s, e)
				if !reflect.DeepEqual(want, got) || !reflect.DeepEqual(wantActs, acts) {
					t.Fatalf("StepInto on %T%+v: pooled %v %+v, boxed %v %+v", e, e, want, wantActs, got, acts)
				}
				if !reflect.DeepEqual(stepActs, boxedStepActs) {
					t.Fatalf("Step on %T%+v: pooled %+v, boxed %+v", e, e, stepActs, boxedStepActs)
				}
				s = want
			}
		}
	})
}
