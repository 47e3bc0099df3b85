package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft/datadir"
	"github.com/kraftquorum/kraft/storage"
)

// oneDirID is the directory id of dynamicOne's voter.
const oneDirID = "0d1e2f30-4152-4637-8899-aabbccddeeff"

// dynamicOne runs a one-voter dynamic quorum in dir until it has committed
// 20 appends, and stops it; it returns its flags and HTTP address.
func dynamicOne(t *testing.T, dir string, extra ...string) ([]string, string) {
	t.Helper()
	raft, web := freeAddr(t), freeAddr(t)
	args := append([]string{
		"-cluster-id", testClusterID, "-id", "1", "-initial-voters", "1:" + oneDirID + "@" + raft,
		"-dir", dir, "-http", web, "-election-timeout", "50ms", "-fetch-timeout", "100ms",
	}, extra...)
	formatFor(t, args)
	sigs := make(chan os.Signal, 1)
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(args, os.Stdout, &stderr, sigs) }()
	for i := 0; i < 20; i++ {
		require.Eventually(t, func() bool {
			c, _ := httpPost(t, "http://"+web+"/append", strings.Repeat("x", 100))
			return c == 200
		}, 10*time.Second, 10*time.Millisecond, stderr.String())
	}
	sigs <- os.Interrupt
	require.Equal(t, exitOK, <-code, stderr.String())
	return args, web
}

// flipSegment flips a byte well inside the first segment of dir's log:
// below the recovery point after a clean stop.
func flipSegment(t *testing.T, dir string) {
	t.Helper()
	seg := filepath.Join(dir, "log", "00000000000000000000.log")
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	b[len(b)/2] ^= 0x10
	require.NoError(t, os.WriteFile(seg, b, 0o644))
}

// TestRunReplacesDamageInADynamicQuorum: in a dynamic quorum kraftd moves
// a damaged directory's data aside and starts empty with a new directory
// id, as an observer, saying so; a restart keeps the new id.
func TestRunReplacesDamageInADynamicQuorum(t *testing.T) {
	dir := t.TempDir()
	args, web := dynamicOne(t, dir)
	flipSegment(t, dir)
	sigs := make(chan os.Signal, 1)
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(args, os.Stdout, &stderr, sigs) }()
	var vb votersBody
	require.Eventually(t, func() bool { return getJSON(web+"/voters", &vb) == nil }, 10*time.Second, 10*time.Millisecond, stderr.String())
	sigs <- os.Interrupt
	require.Equal(t, exitOK, <-code, stderr.String())

	out := logText(stderr.String())
	require.Contains(t, out, "were synced and are lost")
	require.Regexp(t, `level=ERROR msg="kraftd: damaged: [^\n]*were synced and are lost`, out, "the cause is an error, not news")
	require.Regexp(t, `level=ERROR msg="kraftd: the data directory [^\n]* is damaged: moved the damaged data aside`, out)
	require.Contains(t, out, "moved the damaged data aside to "+filepath.Join(dir, damagedPrefix))
	require.Contains(t, out, "starting empty as a replaced disk (KIP-853) with the new directory id "+vb.Local.DirectoryID.String())
	require.Contains(t, out, "(the old one was "+oneDirID+")")
	require.Contains(t, out, "POST /voters/remove {\"id\": 1, \"directory_id\": \""+oneDirID+"\"}", "without -auto-join it says what to do")
	require.NotEqual(t, oneDirID, vb.Local.DirectoryID.String())
	require.Empty(t, vb.Voters, "a replaced disk keeps no bootstrap checkpoint: it learns the voters from a leader, as a disk formatted -no-initial-controllers")

	aside, err := filepath.Glob(filepath.Join(dir, damagedPrefix+"*"))
	require.NoError(t, err)
	require.Len(t, aside, 1)
	for _, name := range []string{"log", "quorum-state", "bootstrap.checkpoint"} {
		_, err := os.Stat(filepath.Join(aside[0], name))
		require.NoError(t, err, "%s moved aside", name)
	}
	id, err := datadir.Load(storage.OS(), dir, datadir.Expect{ClusterID: mustUUID(t, testClusterID), NodeID: 1, Dynamic: true})
	require.NoError(t, err)
	require.Equal(t, vb.Local.DirectoryID, uuid.UUID(id.DirectoryID), "meta.properties holds the new id")

	// Restarted with the same flags, it keeps its new id and its new data.
	var again syncBuffer
	sigs = make(chan os.Signal, 1) // the first run's stop still reads the old one
	go func() { code <- run(args, os.Stdout, &again, sigs) }()
	var vb2 votersBody
	require.Eventually(t, func() bool { return getJSON(web+"/voters", &vb2) == nil }, 10*time.Second, 10*time.Millisecond, again.String())
	sigs <- os.Interrupt
	require.Equal(t, exitOK, <-code, again.String())
	require.Equal(t, vb.Local, vb2.Local)
	require.NotContains(t, again.String(), "damaged")
	aside, _ = filepath.Glob(filepath.Join(dir, damagedPrefix+"*"))
	require.Len(t, aside, 1)
}

// TestRunRefusesDamageWhenTold: -on-damage refuse, or a fixed
// -directory-id, makes a replica of a dynamic quorum refuse a damaged
// directory as a static one does, saying what to do; nothing is moved.
func TestRunRefusesDamageWhenTold(t *testing.T) {
	for _, extra := range [][]string{{"-on-damage", "refuse"}, {"-directory-id", oneDirID}} {
		dir := t.TempDir()
		args, _ := dynamicOne(t, dir, extra...)
		flipSegment(t, dir)
		var stderr syncBuffer
		require.Equal(t, exitFail, run(args, os.Stdout, &stderr, nil))
		out := logText(stderr.String())
		require.Contains(t, out, "were synced and are lost", extra)
		require.Contains(t, out, "must not rejoin with it as it is", extra)
		require.Contains(t, out, "let it rejoin as a replaced disk", extra)
		aside, _ := filepath.Glob(filepath.Join(dir, damagedPrefix+"*"))
		require.Empty(t, aside, extra)
	}
}

// TestOnDamageFlag: replace is a dynamic quorum's default and refused for
// a static one.
func TestOnDamageFlag(t *testing.T) {
	c, err := parseConfig([]string{"-cluster-id", testClusterID, "-id", "1", "-voters", "1@127.0.0.1:9091", "-dir", "d"})
	require.NoError(t, err)
	require.Equal(t, onDamageRefuse, c.onDamage)
	c, err = parseConfig([]string{"-cluster-id", testClusterID, "-id", "1", "-initial-voters", "1:" + oneDirID + "@127.0.0.1:9091", "-dir", "d"})
	require.NoError(t, err)
	require.Equal(t, onDamageReplace, c.onDamage)
	_, err = parseConfig([]string{"-cluster-id", testClusterID, "-id", "1", "-voters", "1@127.0.0.1:9091", "-dir", "d", "-on-damage", "replace"})
	require.ErrorContains(t, err, "-on-damage replace needs a dynamic quorum")
	_, err = parseConfig([]string{"-cluster-id", testClusterID, "-id", "1", "-voters", "1@127.0.0.1:9091", "-dir", "d", "-on-damage", "ignore"})
	require.ErrorContains(t, err, `-on-damage "ignore": want replace or refuse`)
}

// TestRunReplacesADamagedMetaProperties: a meta.properties that does not
// read back is damage too; the old key is then unknown, and the advice
// says so.
func TestRunReplacesADamagedMetaProperties(t *testing.T) {
	dir := t.TempDir()
	args, web := dynamicOne(t, dir)
	path := filepath.Join(dir, datadir.MetaFileName)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	i := strings.Index(string(b), "directory.id=") + len("directory.id=") + 3
	b[i] ^= 0x01 // another id that still parses: only the checksum tells
	require.NoError(t, os.WriteFile(path, b, 0o644))
	sigs := make(chan os.Signal, 1)
	var stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(args, os.Stdout, &stderr, sigs) }()
	var vb votersBody
	require.Eventually(t, func() bool { return getJSON(web+"/voters", &vb) == nil }, 10*time.Second, 10*time.Millisecond, stderr.String())
	sigs <- os.Interrupt
	require.Equal(t, exitOK, <-code, stderr.String())
	out := logText(stderr.String())
	require.Contains(t, out, "level=ERROR msg=\"kraftd: damaged: storage: damaged: "+path+": checksum")
	require.Contains(t, out, "(the old one was unknown: the voter with id 1 in GET /voters)")
	require.Contains(t, out, "POST /voters/remove {\"id\": 1, \"directory_id\": OLD}")
	require.NotEqual(t, oneDirID, vb.Local.DirectoryID.String())
}

// logText is kraftd's text log with the quotes of its records' values
// unescaped, so that the tests can look for the words an operator reads.
func logText(s string) string { return strings.ReplaceAll(s, `\"`, `"`) }

// TestStaticDamageAdviceWarnsAgainstReformatting: a static voter cannot
// come back with a new directory id, and an empty directory is refused
// at start, so the one wrong step left to warn against is formatting a
// new directory for it.
func TestStaticDamageAdviceWarnsAgainstReformatting(t *testing.T) {
	out := damageAdvice(config{dir: "/data/1"})
	require.Contains(t, out, "Restore the directory from a copy")
	require.Contains(t, out, "Do not format a new, empty directory for it (kraftd format)")
	require.NotContains(t, out, "-on-damage replace")
}
