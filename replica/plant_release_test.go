package replica

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/kraftquorum/kraft/internal/plant"
	"github.com/stretchr/testify/require"
)

// TestReleaseHasNoPlantedBugs: package replica built without the tag
// kraftbug does not import package internal/plant, whose bugs it could
// then not hold, and planting a bug in it panics rather than running a
// replica without it; built with the tag, it imports it (D201).
func TestReleaseHasNoPlantedBugs(t *testing.T) {
	deps := func(tags string) string {
		args := []string{"list", "-deps"}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		out, err := exec.Command("go", append(args, "github.com/kraftquorum/kraft/replica")...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	const pkg = "github.com/kraftquorum/kraft/internal/plant\n"
	require.NotContains(t, deps(""), pkg, "the release build imports the planted bugs")
	require.Contains(t, deps("kraftbug"), pkg)

	var cfg Config
	if plant.Enabled {
		plant.Into(&cfg, plant.KeepStale)
		require.Equal(t, bugKeepStale, cfg.plant)
		return
	}
	require.Panics(t, func() { plant.Into(&cfg, plant.KeepStale) })
	require.Equal(t, noBug, cfg.plant)
	require.False(t, (&Replica{plant: bugKeepStale}).planted(bugKeepStale), "a release build holds a planted bug")
	require.False(t, strings.Contains(deps(""), "internal/plant"))
}
