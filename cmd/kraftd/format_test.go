package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft/datadir"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// formatArgs are the kraftd format flags that format the directory of
// the replica a start with args runs: -voters for a static replica, the
// -initial-voters of a replica in them, -no-initial-controllers for any
// other replica of a dynamic quorum.
func formatArgs(args []string) []string {
	flags := map[string]string{}
	for i := 0; i+1 < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			flags[strings.TrimLeft(args[i], "-")] = args[i+1]
		}
	}
	out := []string{"-cluster-id", flags["cluster-id"], "-id", flags["id"], "-dir", flags["dir"]}
	switch iv := flags["initial-voters"]; {
	case flags["voters"] != "":
		out = append(out, "-voters", flags["voters"])
	case iv != "" && (strings.HasPrefix(iv, flags["id"]+":") || strings.Contains(iv, ","+flags["id"]+":")):
		out = append(out, "-initial-voters", iv)
	default:
		out = append(out, "-no-initial-controllers")
	}
	if d := flags["directory-id"]; d != "" {
		out = append(out, "-directory-id", d)
	}
	return out
}

// formatFor formats the directory of the replica a start with args runs,
// as kraftd format does, and returns what format printed.
func formatFor(t *testing.T, args []string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"format"}, formatArgs(args)...), &stdout, &stderr, nil)
	require.Equal(t, exitOK, code, "kraftd format %v: %s", formatArgs(args), stderr.String())
	return stdout.String()
}

func TestFormatWritesTheIdentityOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	format := func(extra ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"format", "-cluster-id", testClusterID, "-id", "1", "-dir", dir}, extra...), &stdout, &stderr, nil)
		return code, stdout.String() + stderr.String()
	}
	code, out := format("-initial-voters", "1:"+oneDirID+"@127.0.0.1:9091,2:"+oneDirID[:35]+"0@127.0.0.1:9092")
	require.Equal(t, exitOK, code, out)
	require.Contains(t, out, "directory id "+oneDirID+", a dynamic quorum bootstrapped with the voters")
	id, err := datadir.Load(storage.OS(), dir, datadir.Expect{ClusterID: mustUUID(t, testClusterID), NodeID: 1, Dynamic: true})
	require.NoError(t, err)
	require.Equal(t, oneDirID, uuid.UUID(id.DirectoryID).String())
	b, err := storage.ReadBootstrap(storage.BootstrapPath(dir))
	require.NoError(t, err)
	require.NotNil(t, b)

	// Formatted once: a second format, whatever it asks, is refused and
	// changes nothing.
	before, err := os.ReadFile(filepath.Join(dir, datadir.MetaFileName))
	require.NoError(t, err)
	code, out = format("-standalone", "-listen", "127.0.0.1:9091")
	require.Equal(t, exitFail, code, out)
	require.Contains(t, out, "formatted already")
	require.Contains(t, out, "a replica that lost its data is formatted as a new one in an empty directory (-no-initial-controllers)")
	after, err := os.ReadFile(filepath.Join(dir, datadir.MetaFileName))
	require.NoError(t, err)
	require.Equal(t, before, after)

	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "want one of -voters"},
		{[]string{"-standalone"}, "-standalone needs -listen"},
		{[]string{"-voters", "1@127.0.0.1:1", "-no-initial-controllers"}, "want one of -voters"},
		{[]string{"-initial-voters", "2:" + oneDirID + "@127.0.0.1:9092"}, "-initial-voters has no entry for -id 1"},
		{[]string{"-update-voters"}, "-update-voters needs the new -voters"},
	} {
		code, out := format(c.args...)
		require.Equal(t, exitBad, code, "%v: %s", c.args, out)
		require.Contains(t, out, c.want)
	}
}

func TestFormatHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"format", "-h"}, &stdout, &stderr, nil))
	require.Contains(t, stdout.String(), "Usage: kraftd format -cluster-id UUID -id N -dir PATH -voters LIST")
	require.Contains(t, stdout.String(), "-no-initial-controllers")
}

func TestFormatStandaloneAndLaterReplicas(t *testing.T) {
	base := t.TempDir()
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"format", "-cluster-id", testClusterID, "-id", "1", "-dir", filepath.Join(base, "1"),
		"-standalone", "-listen", "127.0.0.1:9091"}, &stdout, &stderr, nil), stderr.String())
	b, err := storage.ReadBootstrap(storage.BootstrapPath(filepath.Join(base, "1")))
	require.NoError(t, err)
	require.Contains(t, bootstrapString(b), "@127.0.0.1:9091")

	require.Equal(t, exitOK, run([]string{"format", "-cluster-id", testClusterID, "-id", "2", "-dir", filepath.Join(base, "2"),
		"-no-initial-controllers"}, &stdout, &stderr, nil), stderr.String())
	b, err = storage.ReadBootstrap(storage.BootstrapPath(filepath.Join(base, "2")))
	require.NoError(t, err)
	require.Nil(t, b, "a replica that joins later has no bootstrap checkpoint")
	require.Contains(t, stdout.String(), "a dynamic quorum's replica that joins later")
}

// TestRunRefusesAnUnformattedDirectory: a start never formats; it exits
// with status 1 saying what to run, and leaves the directory as it was.
func TestRunRefusesAnUnformattedDirectory(t *testing.T) {
	for _, dir := range []string{filepath.Join(t.TempDir(), "absent"), t.TempDir()} {
		var stderr bytes.Buffer
		code := run([]string{"-cluster-id", testClusterID, "-id", "1", "-initial-voters", "1:" + oneDirID + "@" + freeAddr(t), "-dir", dir},
			os.Stdout, &stderr, nil)
		require.Equal(t, exitFail, code, stderr.String())
		out := stderr.String()
		require.Contains(t, out, "is not formatted (it has no meta.properties)")
		require.Contains(t, out, "kraftd format -cluster-id "+testClusterID+" -id 1 -dir "+dir)
		require.Contains(t, out, "must not be formatted with -initial-voters or -standalone again")
		require.Contains(t, out, "level=ERROR")
		_, err := os.Stat(filepath.Join(dir, datadir.MetaFileName))
		require.ErrorIs(t, err, os.ErrNotExist)
		_, err = os.Stat(storage.BootstrapPath(dir))
		require.ErrorIs(t, err, os.ErrNotExist, "no bootstrap checkpoint was written")
	}
}

func mustUUID(t *testing.T, s string) [16]byte {
	u, err := parseUUID(s)
	require.NoError(t, err)
	return u
}

// formatted formats the directory of the replica a start with args runs,
// and returns args.
func formatted(t *testing.T, args []string) []string {
	t.Helper()
	formatFor(t, args)
	return args
}

func storageOS() storage.FS { return storage.OS() }
