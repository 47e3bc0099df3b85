package explore

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompactRoundTrip: a world rebuilt from its compact row has the
// canonical encoding of the world stored, and the fingerprint of a row does
// not depend on which replicas were marked changed.
func TestCompactRoundTrip(t *testing.T) {
	b := Bounds{Voters: 2, Observers: 1, MaxEpoch: 1, MaxMessages: 2, MaxCrashes: 1, MaxAppends: 1, MaxDepth: 7}
	if raceEnabled {
		b.MaxDepth = 5
	}
	m, err := New(Options{Bounds: b})
	require.NoError(t, err)
	g := m.engine(nil)
	in := newInterner()
	l := layout{nreps: len(m.cfgs), maxNet: b.MaxMessages}
	c := in.compactor(l)
	w0, _ := g.initial()
	row, _ := c.compact(w0, nil)
	worlds := plainBFS(t, g, in.world(l, row), b.MaxDepth, nil, func(mv Move, nw *world) *world {
		row, fp1 := c.compact(nw, nil)
		all := nw.clone()
		all.ids = nil
		_, fp2 := c.compact(all, nil)
		require.Equal(t, fp1, fp2, "after %v", mv)
		rb := in.world(l, row)
		require.True(t, bytes.Equal(rb.encode(), nw.encode()), "after %v:\n%s\n%s", mv, describeWorld(nw), describeWorld(rb))
		return rb
	})
	t.Logf("%d worlds, %d replicas, %d messages, %d histories interned", worlds, len(in.reps), len(in.msgs), len(in.hists))
}

// TestWorkersDoNotChangeTheResult: one worker and several find the same
// counts, witnesses and shortest counterexample, and the counts are those
// of a plain breadth-first search over whole worlds.
func TestWorkersDoNotChangeTheResult(t *testing.T) {
	b := Bounds{Voters: 2, MaxEpoch: 1, MaxMessages: 1, MaxAppends: 1}
	if raceEnabled {
		b.MaxAppends = 0
	}
	var rs []Result
	for _, n := range []int{1, 3} {
		m, err := New(Options{Bounds: b, Workers: n, Liveness: true})
		require.NoError(t, err)
		rs = append(rs, m.Run())
	}
	require.Nil(t, rs[0].Violation)
	require.True(t, rs[0].Complete)
	for _, r := range rs[1:] {
		require.Equal(t, rs[0].Distinct, r.Distinct)
		require.Equal(t, rs[0].Transitions, r.Transitions)
		require.Equal(t, rs[0].Pruned, r.Pruned)
		require.Equal(t, rs[0].Depth, r.Depth)
		require.Equal(t, rs[0].Witness, r.Witness)
		require.Equal(t, rs[0].Leaderless, r.Leaderless)
	}
	ref := reachable(t, b)
	require.Equal(t, ref, rs[0].Distinct)

	var paths [][]Move
	for _, n := range []int{1, 3} {
		m, err := New(Options{Bounds: Bounds{Voters: 3, MaxEpoch: 1, MaxMessages: 4, MaxDepth: 12}, Step: bindingPreVote, Workers: n})
		require.NoError(t, err)
		r := m.Run()
		require.NotNil(t, r.Violation)
		paths = append(paths, r.Path)
		if n > 1 {
			require.Equal(t, paths[0], r.Path)
		}
	}
}

// reachable counts the worlds of b by a plain breadth-first search.
func reachable(t *testing.T, b Bounds) int {
	m, err := New(Options{Bounds: b})
	require.NoError(t, err)
	g := m.engine(nil)
	w0, _ := g.initial()
	return plainBFS(t, g, w0, 0, nil, nil)
}
