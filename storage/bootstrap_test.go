package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBootstrapCheckpoint: the bootstrap checkpoint round-trips, a missing
// one reads as nil, and a damaged one is ErrCorrupt.
func TestBootstrapCheckpoint(t *testing.T) {
	dir := t.TempDir()
	path := BootstrapPath(dir)
	require.Equal(t, filepath.Join(dir, "bootstrap.checkpoint"), path)
	got, err := ReadBootstrap(path)
	require.NoError(t, err)
	require.Nil(t, got)

	require.NoError(t, WriteBootstrap(path, []byte("voters")))
	got, err = ReadBootstrap(path)
	require.NoError(t, err)
	require.Equal(t, "voters", string(got))
	_, err = os.Stat(path + ".tmp")
	require.True(t, os.IsNotExist(err), "no temporary file left")

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	for name, bad := range map[string][]byte{
		"empty":     {},
		"short":     b[:5],
		"magic":     append([]byte("XRBS"), b[4:]...),
		"truncated": b[:len(b)-1],
		"flipped":   append(append([]byte{}, b[:len(b)-1]...), b[len(b)-1]^1),
	} {
		require.NoError(t, os.WriteFile(path, bad, 0o644))
		_, err := ReadBootstrap(path)
		require.ErrorIs(t, err, ErrCorrupt, name)
	}
}
