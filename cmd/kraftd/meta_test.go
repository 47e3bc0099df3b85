//go:build unix

package main

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft/datadir"
	"github.com/stretchr/testify/require"
)

// startOnce runs kraftd with args until it has committed an append, and
// stops it; or returns its exit status and log if it exits by itself.
func startOnce(t *testing.T, args []string, web string) (int, string) {
	t.Helper()
	sigs := make(chan os.Signal, 1)
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(args, os.Stdout, &stderr, sigs) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case c := <-code:
			return c, stderr.String()
		default:
		}
		if c, _ := httpPost(t, "http://"+web+"/append", "x"); c == 200 {
			sigs <- os.Interrupt
			return <-code, stderr.String()
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("kraftd neither served nor exited:\n%s", stderr.String())
	return 0, ""
}

// TestRunChecksMetaProperties: kraftd format writes the cluster id, the
// node id and the static voter set into DIR/meta.properties; a later start
// with another -cluster-id, -id or -voters is refused, saying which
// cluster, node or voters the directory belongs to and what to do, and
// the right ones start.
func TestRunChecksMetaProperties(t *testing.T) {
	dir := t.TempDir()
	raft, web := freeAddr(t), freeAddr(t)
	start := func(cluster, id, voters string) (int, string) {
		return startOnce(t, []string{"-cluster-id", cluster, "-id", id, "-voters", voters, "-dir", dir, "-http", web,
			"-election-timeout", "50ms", "-fetch-timeout", "100ms"}, web)
	}
	formatFor(t, []string{"-cluster-id", testClusterID, "-id", "1", "-voters", "1@" + raft, "-dir", dir})
	code, out := start(testClusterID, "1", "1@"+raft)
	require.Equal(t, exitOK, code, out)
	b, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	require.NoError(t, err)
	for _, line := range []string{"version=1", "cluster.id=" + testClusterID, "node.id=1", "kraftd.quorum=static", "kraftd.voters=1"} {
		require.Contains(t, string(b), line+"\n")
	}

	other := "AAECAwQFBgcICQoLDA0ODw"
	code, out = start(other, "1", "1@"+raft)
	require.Equal(t, exitFail, code, out)
	require.Contains(t, out, "belongs to cluster "+testClusterID+", not to -cluster-id "+other)
	require.Contains(t, out, "level=ERROR")

	code, out = start(testClusterID, "2", "2@"+raft)
	require.Equal(t, exitFail, code, out)
	require.Contains(t, out, "belongs to node 1, not to -id 2")

	code, out = start(testClusterID, "1", "1@"+raft+",2@127.0.0.1:1")
	require.Equal(t, exitFail, code, out)
	out = logText(out)
	require.Contains(t, out, "was formatted for the static voter set 1, not 1,2 (-voters 1@"+raft+",2@127.0.0.1:1)")
	require.Contains(t, out, "kraftd format -update-voters -cluster-id "+testClusterID+" -id N -dir DIR -voters NEWLIST")

	code, out = start(testClusterID, "1", "1@"+raft)
	require.Equal(t, exitOK, code, out)
	require.NotContains(t, out, "migrated")
}

// legacyMetaText is DIR/meta.properties as kraftd wrote it before D108:
// the cluster and node ids only.
func legacyMetaText(nodeID int) string {
	body := fmt.Sprintf("#kraftd: the cluster and node this data directory belongs to\nversion=1\ncluster.id=%s\nnode.id=%d\n", testClusterID, nodeID)
	return body + fmt.Sprintf("#crc32c=%08x\n", crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
}

// TestRunMigratesAnEarlierKraftdsDirectory: a directory as an earlier
// kraftd left it (its meta.properties without the directory id and the
// quorum kind, a dynamic replica's id in directory.id or in its
// -initial-voters entry, the bootstrap checkpoint node wrote at the first
// start) starts with the new version under the key it ran under, with its
// records, and is migrated durably: meta.properties holds the identity,
// directory.id is gone, and later starts read meta.properties alone.
func TestRunMigratesAnEarlierKraftdsDirectory(t *testing.T) {
	t.Run("initial voter", func(t *testing.T) {
		dir := t.TempDir()
		args, web := dynamicOne(t, dir)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "meta.properties"), []byte(legacyMetaText(1)), 0o644))
		code, out := startOnce(t, args, web)
		require.Equal(t, exitOK, code, out)
		require.Contains(t, out, "migrated "+dir+", written by an earlier kraftd: meta.properties now holds the directory id "+oneDirID+" (from the replica's entry in -initial-voters)")
		b, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
		require.NoError(t, err)
		require.Contains(t, string(b), "kraftd.quorum=dynamic\n")
		require.Contains(t, string(b), "directory.id="+kafkaUUID(mustUUID(t, oneDirID))+"\n")
		code, out = startOnce(t, args, web)
		require.Equal(t, exitOK, code, out)
		require.NotContains(t, out, "migrated")
		require.Regexp(t, "kraftd: log "+filepath.Join(dir, "log")+": (2[1-9]|[3-9][0-9]) records", out, "the 20 appends and more: nothing lost")
	})
	t.Run("directory.id", func(t *testing.T) {
		dir := t.TempDir()
		args, web := dynamicOne(t, dir)
		// A replica that had replaced its disk (D91) under an earlier
		// kraftd: its id was in directory.id, not in -initial-voters.
		replaced := uuid.New()
		line := replaced.String()
		require.NoError(t, os.WriteFile(filepath.Join(dir, datadir.LegacyDirectoryIDFile),
			[]byte(fmt.Sprintf("%s\ncrc32c %08x\n", line, crc32.Checksum([]byte(line), crc32.MakeTable(crc32.Castagnoli)))), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "meta.properties"), []byte(legacyMetaText(1)), 0o644))
		sigs := make(chan os.Signal, 1)
		var stderr syncBuffer
		code := make(chan int, 1)
		go func() { code <- run(args, os.Stdout, &stderr, sigs) }()
		var vb votersBody
		require.Eventually(t, func() bool { return getJSON(web+"/voters", &vb) == nil }, 10*time.Second, 10*time.Millisecond, stderr.String())
		sigs <- os.Interrupt
		require.Equal(t, exitOK, <-code, stderr.String())
		require.Equal(t, replaced, vb.Local.DirectoryID, "the id of directory.id, not the -initial-voters entry's")
		_, err := os.Stat(filepath.Join(dir, datadir.LegacyDirectoryIDFile))
		require.ErrorIs(t, err, os.ErrNotExist)
		id, err := datadir.Load(storageOS(), dir, datadir.Expect{ClusterID: mustUUID(t, testClusterID), NodeID: 1, Dynamic: true})
		require.NoError(t, err)
		require.Equal(t, [16]byte(replaced), id.DirectoryID)
	})
	t.Run("static", func(t *testing.T) {
		dir := t.TempDir()
		raft, web := freeAddr(t), freeAddr(t)
		args := formatted(t, []string{"-cluster-id", testClusterID, "-id", "1", "-voters", "1@" + raft, "-dir", dir, "-http", web,
			"-election-timeout", "50ms", "-fetch-timeout", "100ms"})
		code, out := startOnce(t, args, web)
		require.Equal(t, exitOK, code, out)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "meta.properties"), []byte(legacyMetaText(1)), 0o644))
		code, out = startOnce(t, args, web)
		require.Equal(t, exitOK, code, out)
		require.Contains(t, out, "and voters 1")
		b, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
		require.NoError(t, err)
		require.Contains(t, string(b), "kraftd.voters=1\n")
		require.True(t, strings.Contains(string(b), "\n#crc32c="), "checksummed")
	})
}
