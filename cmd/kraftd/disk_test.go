package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// TestRunLocksTheDataDirectory: a second kraftd on a data directory in use
// fails at once, saying so, and the first goes on.
func TestRunLocksTheDataDirectory(t *testing.T) {
	ports := []string{freeAddr(t), freeAddr(t)}
	dir := t.TempDir()
	sigs := make(chan os.Signal, 1)
	var stderr syncBuffer
	code := make(chan int, 1)
	args := formatted(t, []string{
		"-cluster-id", testClusterID, "-id", "1", "-voters", "1@" + ports[0], "-dir", dir, "-http", ports[1],
		"-election-timeout", "50ms", "-fetch-timeout", "100ms",
	})
	go func() { code <- run(args, os.Stdout, &stderr, sigs) }()
	require.Eventually(t, func() bool {
		c, _ := httpPost(t, "http://"+ports[1]+"/append", "x")
		return c == 200
	}, 10*time.Second, 10*time.Millisecond)

	var second syncBuffer
	start := time.Now()
	got := run([]string{"-cluster-id", testClusterID, "-id", "1", "-voters", "1@" + freeAddr(t), "-dir", dir}, os.Stdout, &second, nil)
	require.Equal(t, exitFail, got)
	require.Less(t, time.Since(start), 5*time.Second, "at once")
	require.Contains(t, second.String(), "kraftd: storage: directory in use: "+dir+" is locked")
	require.Contains(t, second.String(), "stop the replica that uses it")

	c, _ := httpPost(t, "http://"+ports[1]+"/append", "y")
	require.Equal(t, 200, c, "the first still serves")
	sigs <- os.Interrupt
	require.Equal(t, exitOK, <-code, stderr.String())
}

// TestRunRefusesDamage: kraftd refuses to start on a log that lost synced
// records, or on a quorum state that lost its vote, and says what to do.
func TestRunRefusesDamage(t *testing.T) {
	args := func(dir string) []string {
		return []string{"-cluster-id", testClusterID, "-id", "1", "-voters", "1@" + freeAddr(t), "-dir", dir}
	}
	writeLog := func(dir string) {
		l, _, err := storage.Open(filepath.Join(dir, "log"), storage.Options{})
		require.NoError(t, err)
		for i := 0; i < 20; i++ {
			_, err := l.Append(3, make([]byte, 100))
			require.NoError(t, err)
		}
		require.NoError(t, l.Sync())
		require.NoError(t, l.Close())
	}

	dir := t.TempDir()
	formatFor(t, args(dir))
	require.NoError(t, storage.WriteQuorumState(storage.QuorumStatePath(dir), kraft.QuorumRecord{Epoch: 3, LeaderID: 1, VotedKey: kraft.NoReplica}))
	writeLog(dir)
	seg := filepath.Join(dir, "log", "00000000000000000000.log")
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	b[1000] ^= 1
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	var stderr syncBuffer
	require.Equal(t, exitFail, run(args(dir), os.Stdout, &stderr, nil))
	require.Contains(t, stderr.String(), "records 8 to 20 (excluded) were synced and are lost")
	require.Contains(t, stderr.String(), "Restore the directory")

	dir = t.TempDir()
	formatFor(t, args(dir))
	writeLog(dir) // epoch 3, and no quorum-state file
	var stderr2 syncBuffer
	require.Equal(t, exitFail, run(args(dir), os.Stdout, &stderr2, nil))
	require.Contains(t, stderr2.String(), "there is no quorum record, but the log holds records of epoch 3")
	require.Contains(t, stderr2.String(), "Restore the directory")
}
