package explore

import (
	"testing"

	"github.com/kraftquorum/kraft/internal/plant"
	"github.com/stretchr/testify/require"
)

// damageBounds: the CI bound (2 voters, epochs up to 1, 2 messages in
// flight, one crash) and one disk fault.
var damageBounds = Bounds{Voters: 2, MaxEpoch: 1, MaxMessages: 2, MaxCrashes: 1, MaxDamages: 1}

// TestNoViolationWithADiskFault: with one disk fault (a replica restarts on
// a log whose synced records are damaged) and the recovery rule of a static
// voter set (refuse, the operator restores the directory), the whole
// bound is explored without a violation.
func TestNoViolationWithADiskFault(t *testing.T) {
	b := damageBounds
	if raceEnabled {
		b.MaxMessages = 1
	}
	m, r := run(t, Options{Bounds: b})
	if r.Violation != nil {
		t.Fatalf("%v\n%s", r.Violation, describe(t, m, r))
	}
	require.True(t, r.Complete)
	require.Positive(t, r.Witness.Damaged, "no world after a disk fault")
	t.Logf("%d worlds after a disk fault", r.Witness.Damaged)
}

// TestPlantedTornTail: the planted bug plant.TornTail (damage taken for a
// torn tail: the log cut at the damage, the replica back under its old
// identity and vote, as storage.Open did before docs/design.md D70) is
// found at the same bound, with a shortest counterexample of 13 moves: a
// follower acknowledges the leader's first record, crashes, restarts on a
// log damaged at that record and cut there, and the Fetch it sent before
// the crash, which says it holds the record, moves the leader's high
// watermark onto a record that only the leader holds.
func TestPlantedTornTail(t *testing.T) {
	m, r := planted(t, "damage taken for a torn tail", Options{Bounds: damageBounds, plant: plant.TornTail}, "hwm-majority", "leader-complete", "committed-changed")
	damaged := false
	for _, mv := range r.Path {
		damaged = damaged || mv.Kind == Damage
	}
	require.True(t, damaged, "a counterexample without a disk fault:\n%s", describe(t, m, r))
	require.Len(t, r.Path, 13, "%s", describe(t, m, r))
}
