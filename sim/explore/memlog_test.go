package explore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft/internal/plant"
)

// TestWorldLogIsTheMemLog: the world's view of each replica's log (the
// records and the flushed offset the checker and the canonical encoding
// read) is what its storage.MemLog holds, in every world of a small bound
// with crashes, appends and damage (also with plant.TornTail, whose
// damage cuts the log), and stays so after the world's successors were
// taken: a transition changes a copy of a log, never the log of the world
// it was taken from (docs/design.md D126).
func TestWorldLogIsTheMemLog(t *testing.T) {
	b := Bounds{Voters: 2, MaxEpoch: 2, MaxMessages: 2, MaxCrashes: 1, MaxAppends: 1, MaxDamages: 1, MaxDepth: 12}
	if raceEnabled {
		b.MaxDepth = 9
	}
	for _, bug := range []plant.Bug{0, plant.TornTail} {
		m, err := New(Options{Bounds: b, plant: bug})
		require.NoError(t, err)
		g := m.engine(nil)
		w0, v := g.initial()
		require.Nil(t, v)
		var visited []*world
		records, flushedBelowEnd := 0, 0
		plainBFS(t, g, w0, b.MaxDepth, func(w *world) {
			visited = append(visited, w)
			for i := range w.reps {
				r := &w.reps[i]
				records += len(r.log)
				if r.flushed < len(r.log) {
					flushedBelowEnd++
				}
			}
		}, nil)
		for _, w := range visited {
			for i := range w.reps {
				r := &w.reps[i]
				require.Equal(t, int64(r.flushed), r.mem.Flushed(), "replica %d", i)
				es, err := r.mem.Read(0, 1<<20)
				require.NoError(t, err)
				got := make([]rec, 0, len(es))
				for _, e := range es {
					got = append(got, recordOf(e.Epoch, e.Data))
				}
				require.Equal(t, append([]rec{}, r.log...), got, "replica %d", i)
			}
		}
		t.Logf("plant %v: %d worlds, %d records, %d logs with an unflushed tail", bug, len(visited), records, flushedBelowEnd)
		require.Greater(t, records, 500)
		require.Greater(t, flushedBelowEnd, 100)
	}
}
