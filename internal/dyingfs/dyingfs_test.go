package dyingfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// TestDiesAfterLeftChanges: the changes before the death reach the disk,
// every call after it fails with ErrDied, and a read is no change.
func TestDiesAfterLeftChanges(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	fs := New(storage.OS(), 3)
	f, err := fs.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644) // 1
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("kept"), 0) // 2
	require.NoError(t, err)
	r, err := fs.OpenFile(name, os.O_RDONLY, 0) // a read: no change
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.NoError(t, f.Sync()) // 3
	_, err = f.WriteAt([]byte("lost"), 0)
	require.ErrorIs(t, err, ErrDied)
	require.ErrorIs(t, f.Sync(), ErrDied)
	require.ErrorIs(t, fs.Rename(name, name+"2"), ErrDied)
	require.ErrorIs(t, fs.Remove(name), ErrDied)
	require.ErrorIs(t, fs.MkdirAll(filepath.Join(dir, "d")), ErrDied)
	require.ErrorIs(t, fs.SyncDir(dir), ErrDied)
	_, err = fs.OpenFile(name, os.O_RDONLY, 0)
	require.ErrorIs(t, err, ErrDied)
	require.NoError(t, f.Close())
	got, err := os.ReadFile(name)
	require.NoError(t, err)
	require.Equal(t, "kept", string(got))
}
