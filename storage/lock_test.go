package storage

import (
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
)

// lockHelperEnv makes the test binary, run again, lock a directory and
// report the error, as a second process would.
const lockHelperEnv = "KRAFT_STORAGE_LOCK_HELPER_DIR"

func TestLockHelperProcess(t *testing.T) {
	dir := os.Getenv(lockHelperEnv)
	if dir == "" {
		t.Skip("run by TestLockDirOtherProcess")
	}
	if _, err := LockDir(dir); err != nil {
		_, _ = os.Stdout.WriteString("LOCK FAILED: " + err.Error() + "\n")
		return
	}
	_, _ = os.Stdout.WriteString("LOCKED\n")
}

// TestLockDir: a locked directory cannot be locked again, in this process
// or another, until it is unlocked; the error says what to do.
func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDir(dir)
	require.NoError(t, err)
	_, err = LockDir(dir)
	require.ErrorIs(t, err, ErrLocked)
	require.ErrorContains(t, err, dir+" is locked")
	require.ErrorContains(t, err, "stop the replica that uses it")

	helper := func() string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
		cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	require.Contains(t, helper(), "LOCK FAILED: storage: directory in use: "+dir+" is locked")

	require.NoError(t, l.Unlock())
	require.Contains(t, helper(), "LOCKED")
	l, err = LockDir(dir)
	require.NoError(t, err)
	require.NoError(t, l.Unlock())
}

// TestOpenLocksTheLog: a second Open of a log directory fails at once
// until the first log is closed.
func TestOpenLocksTheLog(t *testing.T) {
	dir := t.TempDir()
	l, _, err := Open(dir, Options{})
	require.NoError(t, err)
	_, _, err = Open(dir, Options{})
	require.ErrorIs(t, err, ErrLocked)
	require.NoError(t, l.Close())
	l, _, err = Open(dir, Options{})
	require.NoError(t, err)
	require.NoError(t, l.Close())
}
