package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kraftquorum/kraft/sim/explore"
	"github.com/stretchr/testify/require"
)

func TestExploreSmallBoundPasses(t *testing.T) {
	args := []string{"-explore", "-voters", "2", "-max-epoch", "1", "-max-messages", "2", "-max-crashes", "1", "-max-appends", "0", "-liveness", "-wall=false"}
	code, out, errOut := runArgs(t, args...)
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "PASS: every invariant held in every reachable state within the bounds")
	require.Contains(t, out, "stuck without leader   0")
	require.Contains(t, out, "distinct states")
	_, again, _ := runArgs(t, args...)
	require.Equal(t, out, again, "the output depends only on the flags with -wall=false")
}

func TestExploreIncompleteSaysSo(t *testing.T) {
	code, out, _ := runArgs(t, "-explore", "-max-depth", "4", "-q")
	require.Equal(t, exitOK, code, out)
	require.Contains(t, out, "PASS (incomplete)")
}

// TestExploreDamagesAndReports: -max-damages and -peer-downs reach the
// explorer's bounds, and say so in the header; a depth-limited search
// with them still holds every invariant.
func TestExploreDamagesAndReports(t *testing.T) {
	code, out, errOut := runArgs(t, "-explore", "-voters", "2", "-max-epoch", "1", "-max-messages", "1", "-max-crashes", "1",
		"-max-appends", "0", "-max-damages", "1", "-peer-downs", "-max-depth", "12", "-q", "-wall=false")
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "<= 1 disk damages, leader-down reports")
	require.Contains(t, out, "every invariant held")
}

func TestExploreBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-explore", "-max-damages", "-1"},
		{"-max-damages", "1"},
		{"-peer-downs"},
		{"-explore", "-voters", "9"},
		{"-explore", "-max-epoch", "-1"},
		{"-explore", "-scenario", "story"},
		{"-explore", "-max-states", "-3"},
		{"-max-epoch", "2"},
		{"-liveness"},
	} {
		code, _, errOut := runArgs(t, args...)
		require.Equal(t, exitBad, code, "%v", args)
		require.Contains(t, errOut, "kraftsim: ", "%v", args)
	}
}

// TestExploreTraceReplays writes an explored path (a shortest one to a
// committed client record after a crash and a restart) as a trace and
// plays it back with -replay.
func TestExploreTraceReplays(t *testing.T) {
	m, err := explore.New(explore.Options{Bounds: explore.Bounds{Voters: 2, MaxEpoch: 1, MaxMessages: 2, MaxCrashes: 1, MaxAppends: 1}})
	require.NoError(t, err)
	path, ok := m.ShortestPath(func(v explore.View) bool { return v.Committed() >= 2 && v.Crashes() == 1 && v.AllUp() })
	require.True(t, ok)
	file := filepath.Join(t.TempDir(), "explored.jsonl")
	var buf bytes.Buffer
	require.NoError(t, m.WriteTrace(&buf, path))
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
	code, out, errOut := runArgs(t, "-replay", file)
	require.Equal(t, exitOK, code, out+errOut)
	require.Contains(t, out, "reproduces exactly: 3 starts")
}
