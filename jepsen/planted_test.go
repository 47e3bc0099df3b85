package jepsen

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// TestPlantedBugsAreFound runs kraftd built with the tag kraftdbug and
// each planted bug of cmd/kraftd/bug_planted.go switched on (D141), and
// requires Porcupine to find the history not linearizable within a
// minute (KRAFT_JEPSEN_BUG_SECONDS): checking the history so far every 500 ms, it reports how long
// that took. KRAFT_JEPSEN_SEED sets the seed (default 1),
// KRAFT_JEPSEN_BUGS the bugs (default stale-read,ack-unapplied; the
// subtler stale-read-leader is not among them: it is seldom caught).
func TestPlantedBugsAreFound(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	bin := buildKraftd(t, t.TempDir(), "kraftdbug")
	seed := envInt(t, "KRAFT_JEPSEN_SEED", 1)
	bugs := []string{"stale-read", "ack-unapplied"}
	if v := os.Getenv("KRAFT_JEPSEN_BUGS"); v != "" {
		bugs = strings.Split(v, ",") // stale-read-leader too
	}
	for _, bug := range bugs {
		t.Run(bug, func(t *testing.T) {
			res := run(t, runConfig{
				name: "bug-" + bug, bin: bin, env: []string{"KRAFTD_BUG=" + bug},
				seed: seed, nodes: 3, workers: 6,
				duration: time.Duration(envInt(t, "KRAFT_JEPSEN_BUG_SECONDS", 60)) * time.Second, checkEvery: 500 * time.Millisecond,
			})
			require.Equal(t, porcupine.Illegal, res.result,
				"KRAFTD_BUG=%s: %d operations and no violation found\nnemesis:\n%s", bug, res.ops, strings.Join(res.nemesis, "\n"))
			t.Logf("KRAFTD_BUG=%s: not linearizable, found after %v (%d operations, seed %d); visualisation: %s\nnemesis:\n%s",
				bug, res.caught.Round(100*time.Millisecond), res.ops, seed, res.viz, strings.Join(res.nemesis, "\n"))
		})
	}
}

// TestReleaseHasNoPlantedBugs builds kraftd as released and with the
// tag kraftdbug: only the latter holds the planted bugs' switch (D141).
func TestReleaseHasNoPlantedBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kraftd twice: skipped with -short")
	}
	dir := t.TempDir()
	for tags, want := range map[string]bool{"": false, "kraftdbug": true} {
		b, err := os.ReadFile(buildKraftd(t, dir, tags))
		require.NoError(t, err)
		require.Equal(t, want, bytes.Contains(b, []byte("KRAFTD_BUG")), "tags %q", tags)
		require.Equal(t, want, bytes.Contains(b, []byte("main.plantedEarlyAck")), "tags %q", tags)
	}
}
