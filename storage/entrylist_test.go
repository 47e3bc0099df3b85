package storage

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestEntryListIsASlice: pushes, truncations, drops from the front and
// clones, at random and across chunk boundaries, leave an entryList
// holding exactly what a plain slice holds, with its invariants kept.
func TestEntryListIsASlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var l entryList
		var model []Entry
		next := int64(0)
		check := func() {
			require.Equal(t, len(model), l.len())
			for i := range model {
				require.Equal(t, model[i], *l.at(i), "entry %d", i)
			}
			for i, c := range l.chunks {
				require.NotEmpty(t, c, "chunk %d is empty", i)
				if i < len(l.chunks)-1 {
					require.Len(t, c, memChunk, "chunk %d of %d is not full", i, len(l.chunks))
				}
			}
			require.True(t, l.head >= 0 && l.head < memChunk)
			if len(l.chunks) > 0 {
				last := l.chunks[len(l.chunks)-1]
				for _, e := range last[len(last):cap(last)] {
					require.Equal(t, Entry{}, e, "a truncated entry keeps its payload")
				}
				for _, e := range l.chunks[0][:l.head] {
					require.Equal(t, Entry{}, e, "a dropped entry keeps its payload")
				}
			}
			from := rapid.IntRange(0, len(model)).Draw(t, "from")
			var got []Entry
			l.from(from, func(e *Entry) bool { got = append(got, *e); return true })
			require.Equal(t, len(model)-from, len(got))
			if len(got) > 0 {
				require.Equal(t, model[from:], got)
			}
		}
		for _, op := range rapid.SliceOfN(rapid.IntRange(0, 3), 1, 40).Draw(t, "ops") {
			switch op {
			case 0: // push a run, often across a chunk boundary
				n := rapid.IntRange(1, 2*memChunk+3).Draw(t, "push")
				for i := 0; i < n; i++ {
					e := Entry{Offset: next, Epoch: 1, Data: []byte{byte(next)}}
					next++
					l.push(e)
					model = append(model, e)
				}
			case 1:
				n := rapid.IntRange(0, len(model)).Draw(t, "truncate")
				l.truncate(n)
				model = model[:n]
			case 2:
				k := rapid.IntRange(0, len(model)).Draw(t, "drop")
				l.dropFront(k)
				model = append([]Entry(nil), model[k:]...)
			case 3:
				l = l.clone()
			}
			check()
		}
	})
}

// TestEntryListGrowsWithoutMovingItsEntries: pushing many entries leaves
// the earlier ones where they were (a chunk is never copied once full),
// so growing a large log copies nothing.
func TestEntryListGrowsWithoutMovingItsEntries(t *testing.T) {
	var l entryList
	for i := 0; i < memChunk; i++ {
		l.push(Entry{Offset: int64(i)})
	}
	first, last := l.at(0), l.at(memChunk-1)
	for i := memChunk; i < 20*memChunk; i++ {
		l.push(Entry{Offset: int64(i)})
	}
	require.Same(t, first, l.at(0))
	require.Same(t, last, l.at(memChunk-1))
	require.Equal(t, int64(20*memChunk-1), l.at(20*memChunk-1).Offset)
}
