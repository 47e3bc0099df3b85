package main

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft/datadir"
	"github.com/kraftquorum/kraft/internal/dyingfs"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// Review 4, finding K1: D91's recovery was not crash-safe. It renamed the
// entries of the data directory one at a time, fsynced nothing until the
// end and wrote the new directory id last: a process that died after the
// log was moved and before the quorum state was left a directory whose
// log was gone while nothing else said so, and the next start came back
// as a voter under the OLD key with an empty log, able to vote for a
// laggard and elect a leader without a committed record (the schedule of
// D90, TestDamagedReplicaRejoiningAsItWasLosesRecords).
//
// The recovery is now datadir.Replace (D111). The test builds the
// damaged directory with kraftd itself (dynamicOne and a flipped byte),
// starts it with the process dying after each change to the disk in turn
// (the first start finds the damage and replaces the directory), and asks
// openDataDir what the next start does: a replica never presents a key
// whose durable state it lost.
func TestReview4CrashDuringMoveAsideRejoinsUnderTheOldKey(t *testing.T) {
	defer func() { dataFS = storage.OS() }()
	for n := 0; ; n++ {
		require.Less(t, n, 60, "the replacement never finished")
		finished := false
		t.Run(fmt.Sprintf("dies after %d changes", n), func(t *testing.T) {
			dir := t.TempDir()
			args, _ := dynamicOne(t, dir)
			flipSegment(t, dir)
			cfg, err := parseConfig(args)
			require.NoError(t, err)
			dataFS = dyingfs.New(storage.OS(), n)
			d, ok := openDataDir(&cfg, log.New(io.Discard, "", 0))
			dataFS = storage.OS()
			if ok {
				d.Close()
				finished = true
			}

			cfg, err = parseConfig(args)
			require.NoError(t, err)
			var out strings.Builder
			d, ok = openDataDir(&cfg, log.New(&out, "", 0))
			require.True(t, ok, "the next start replaces the directory, or finishes replacing it:\n%s", out.String())
			defer d.Close()
			require.NotEqual(t, oneDirID, uuid.UUID(cfg.dirID).String(),
				"after a crash inside D91's recovery the replica starts under its OLD key (observer %v, log end %+v):\n%s",
				cfg.observer, d.Log.End(), out.String())
			require.True(t, cfg.observer, "a replaced disk is an observer")
			require.Equal(t, int64(0), d.Log.End().Offset)
			aside, _ := filepath.Glob(filepath.Join(dir, damagedPrefix+"*"))
			require.Len(t, aside, 1, "one replacement, finished by the next start if the first died")
			_, err = os.Stat(filepath.Join(aside[0], "log", "00000000000000000000.log"))
			require.NoError(t, err, "the damaged log is kept aside")
		})
		if finished {
			t.Logf("the replacement makes %d changes to the disk, each a safe place to die", n)
			return
		}
	}
}

// TestReview4DeletedDirectoryIDRevertsToTheDamagedKey, finding K2: after
// a D91 replacement, DIR/directory.id was the only record of the new
// identity, and a start that did not find it took the -initial-voters
// entry, the OLD, damaged key, still in the voter set. The identity now
// lives in meta.properties alone (D108): there is no directory.id to lose,
// and a lost meta.properties is an unformatted directory, refused.
func TestReview4DeletedDirectoryIDRevertsToTheDamagedKey(t *testing.T) {
	dir := t.TempDir()
	args, _ := dynamicOne(t, dir)
	flipSegment(t, dir)
	cfg, err := parseConfig(args)
	require.NoError(t, err)
	d, ok := openDataDir(&cfg, log.New(io.Discard, "", 0))
	require.True(t, ok)
	d.Close()
	replaced := uuid.UUID(cfg.dirID)
	require.NotEqual(t, oneDirID, replaced.String(), "replaced: a new directory id")
	require.True(t, cfg.observer)
	_, err = os.Stat(filepath.Join(dir, datadir.LegacyDirectoryIDFile))
	require.ErrorIs(t, err, os.ErrNotExist, "no second record of the identity")

	// meta.properties is lost (deleted, or its creation never reached the
	// disk): refused, never the old key.
	require.NoError(t, os.Remove(filepath.Join(dir, datadir.MetaFileName)))
	cfg, err = parseConfig(args)
	require.NoError(t, err)
	var out strings.Builder
	d, ok = openDataDir(&cfg, log.New(&out, "", 0))
	if ok {
		d.Close()
	}
	require.False(t, ok, "a directory without meta.properties starts as %s observer %v:\n%s", uuid.UUID(cfg.dirID), cfg.observer, out.String())
	require.Contains(t, out.String(), "is not formatted")
}
