package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/dyingfs"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// damagedDir makes a formatted dynamic replica's directory with a log
// file, a quorum state, snapshots and a bootstrap checkpoint, as a start
// that found them damaged sees them.
func damagedDir(t *testing.T) (string, []string) {
	dir := t.TempDir()
	require.NoError(t, Format(storage.OS(), dir, dynamicID(otherDirID), []byte("bootstrap")))
	require.NoError(t, os.MkdirAll(LogDir(dir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(LogDir(dir), "00000000000000000000.log"), []byte("records"), 0o644))
	require.NoError(t, os.MkdirAll(SnapshotDir(dir), 0o755))
	require.NoError(t, storage.WriteQuorumState(storage.QuorumStatePath(dir), kraft.QuorumRecord{Epoch: 3, LeaderID: 1, VotedKey: kraft.NoReplica}))
	require.NoError(t, os.WriteFile(filepath.Join(dir, storage.LockFileName), nil, 0o644))
	var data []string
	for _, n := range names(t, dir) {
		if n != MetaFileName && n != storage.LockFileName {
			data = append(data, n)
		}
	}
	return dir, data
}

const aside = DamagedPrefix + "20261205T000000.000000000Z"

// checkNeverOldKeyWithoutItsData: after whatever a replacement did, the
// next start (Load) presents either the old key with all its data where it
// was, or the new key with none of it left in the directory (all of it in
// the aside directory).
func checkNeverOldKeyWithoutItsData(t *testing.T, dir string, data []string, what string) (replaced bool) {
	t.Helper()
	id, err := Load(storage.OS(), dir, Expect{ClusterID: testCluster, NodeID: 1, Dynamic: true})
	require.NoError(t, err, what)
	left := names(t, dir)
	switch id.DirectoryID {
	case otherDirID:
		for _, n := range data {
			require.Contains(t, left, n, "%s: the OLD key %v is presented without its %s", what, id.Key(), n)
		}
		return false
	case newDirID:
		var want []string
		for _, n := range left {
			if n != MetaFileName && n != storage.LockFileName && n != aside {
				want = append(want, n)
			}
		}
		require.Empty(t, want, "%s: the replaced directory still holds old data", what)
		moved := names(t, filepath.Join(dir, aside))
		sort.Strings(data)
		require.Equal(t, data, moved, "%s: everything was moved aside", what)
		m, _, err := readMeta(storage.OS(), dir)
		require.NoError(t, err)
		require.Empty(t, m.replacing, "%s: the marker is cleared", what)
		return true
	default:
		t.Fatalf("%s: directory id %v, neither the old nor the new one", what, id.DirectoryID)
		return false
	}
}

// TestReplaceSurvivesACrashAtEveryStep runs Replace with the process
// dying after each of its changes to the disk in turn, and starts again.
func TestReplaceSurvivesACrashAtEveryStep(t *testing.T) {
	for n := 0; ; n++ {
		dir, data := damagedDir(t)
		fsys := dyingfs.New(storage.OS(), n)
		err := Replace(fsys, dir, dynamicID(newDirID), aside)
		replaced := checkNeverOldKeyWithoutItsData(t, dir, data, fmt.Sprintf("died after %d changes", n))
		if err == nil {
			require.True(t, replaced)
			t.Logf("Replace makes %d changes to the disk; a crash after each of them is safe", n)
			require.Greater(t, n, 8)
			return
		}
		require.ErrorIs(t, err, dyingfs.ErrDied)
		require.Less(t, n, 100)
	}
}

// TestReplaceFinishesWhateverRenamesReachedTheDisk: a power loss after the
// marker is durable may keep any subset of the renames that were not yet
// fsynced; the next start finishes the move from each.
func TestReplaceFinishesWhateverRenamesReachedTheDisk(t *testing.T) {
	_, data := damagedDir(t)
	for mask := 0; mask < 1<<len(data); mask++ {
		dir, _ := damagedDir(t)
		require.NoError(t, writeMeta(storage.OS(), dir, meta{Identity: dynamicID(newDirID), replacing: aside}))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, aside), 0o755))
		for i, n := range data {
			if mask&(1<<i) != 0 {
				require.NoError(t, os.Rename(filepath.Join(dir, n), filepath.Join(dir, aside, n)))
			}
		}
		require.True(t, checkNeverOldKeyWithoutItsData(t, dir, data, "renamed subset"))
	}
}

func TestOpenFindsDamage(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, Format(storage.OS(), dir, dynamicID(otherDirID), []byte("bootstrap")))
	d, err := Open(storage.OS(), dir, storage.Options{})
	require.NoError(t, err)
	require.Equal(t, []byte("bootstrap"), d.Bootstrap)
	d.Close()
	b, err := os.ReadFile(storage.BootstrapPath(dir))
	require.NoError(t, err)
	b[len(b)-1] ^= 1
	require.NoError(t, os.WriteFile(storage.BootstrapPath(dir), b, 0o644))
	_, err = Open(storage.OS(), dir, storage.Options{})
	require.True(t, IsDamage(err), "%v", err)
}
