package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// A damaged data directory at start (docs/design.md D90, D91).

// damagedPrefix names the directories, inside the data directory, that a
// replica of a dynamic quorum moves damaged data to (D91).
const damagedPrefix = "damaged-"

// What kraftd does with a damaged data directory (-on-damage).
const (
	onDamageReplace = "replace" // a dynamic quorum's default: rejoin as a replaced disk
	onDamageRefuse  = "refuse"  // exit with status 1, saying what is damaged and what to do
)

// dataDir is the opened and checked content of a data directory.
type dataDir struct {
	log    *storage.FileLog
	rec    storage.Recovery
	qsPath string
	snaps  *storage.Snapshots
}

func (d *dataDir) close() {
	if d.log != nil {
		_ = d.log.Close()
	}
	if d.snaps != nil {
		_ = d.snaps.Close()
	}
}

// isDamage: err says that something the replica made durable is gone or
// changed on disk.
func isDamage(err error) bool {
	return errors.Is(err, storage.ErrDamaged) || errors.Is(err, storage.ErrCorrupt) || errors.Is(err, storage.ErrSnapshotCorrupt)
}

// openDataDir opens and checks what cfg.dir holds: the log (a torn tail
// past the recovery point is dropped, damage below it refused, D70-D71),
// the quorum state against its checked copy and the log (D72), every
// snapshot's checksum, the bootstrap checkpoint and, in a dynamic quorum,
// the directory id. When that finds damage, a replica of a static quorum
// (or one told -on-damage refuse, or given -directory-id) logs what is
// damaged and what to do, and openDataDir returns false: kraftd exits with
// status 1. A replica of a dynamic quorum moves the damaged data aside,
// takes a new directory id and opens the directory it left, empty: it
// starts as an observer and rejoins as a replaced disk (D91). cfg gets the
// directory id and role the replica starts with.
func openDataDir(cfg *config, logger *log.Logger) (*dataDir, bool) {
	d, err := checkDataDir(cfg, logger)
	if err == nil {
		return d, true
	}
	if !isDamage(err) {
		logger.Printf("kraftd: %v", err)
		return nil, false
	}
	logger.Printf("kraftd: %v", err)
	if !cfg.dynamic || cfg.onDamage == onDamageRefuse || cfg.dirIDGiven {
		logger.Print(damageAdvice(*cfg))
		return nil, false
	}
	aside, merr := moveAside(cfg.dir)
	if merr != nil {
		logger.Printf("kraftd: moving the damaged data of %s aside: %v", cfg.dir, merr)
		logger.Print(damageAdvice(*cfg))
		return nil, false
	}
	// The old key, as far as it is known: not when directory.id is what
	// is damaged.
	old, oldJSON := uuid.UUID(cfg.dirID).String(), fmt.Sprintf("%q", uuid.UUID(cfg.dirID).String())
	var idErr *dirIDDamageError
	if errors.As(err, &idErr) || cfg.dirID == ([16]byte{}) {
		old, oldJSON = fmt.Sprintf("unknown: the voter with id %d in GET /voters", cfg.id), "OLD"
	}
	id, err := directoryID(cfg.dir) // none is left: a new random one
	if err != nil {
		logger.Printf("kraftd: %v", err)
		return nil, false
	}
	cfg.setDirectoryID(id)
	next := "it asks the leader to remove its old key and add the new one by itself (-auto-join)"
	if !cfg.autoJoin {
		next = fmt.Sprintf("on the leader, remove the old key (POST /voters/remove {\"id\": %d, \"directory_id\": %s}) and add the new one "+
			"(POST /voters/add {\"id\": %d, \"directory_id\": %q, \"endpoint\": ITS-ADDRESS}) once it has caught up, or restart it with -auto-join",
			cfg.id, oldJSON, cfg.id, uuid.UUID(id).String())
	}
	logger.Printf("kraftd: the data directory %s is damaged: moved the damaged data aside to %s (remove it once it is no longer needed); "+
		"starting empty as a replaced disk (KIP-853) with the new directory id %s (the old one was %s): "+
		"an observer until it has caught up from the leader; %s",
		cfg.dir, aside, uuid.UUID(id), old, next)
	d, err = checkDataDir(cfg, logger)
	if err != nil {
		logger.Printf("kraftd: %v", err)
		return nil, false
	}
	return d, true
}

// checkDataDir opens the data directory's log, quorum state and snapshots
// and checks them; see openDataDir.
func checkDataDir(cfg *config, logger *log.Logger) (*dataDir, error) {
	d := &dataDir{qsPath: storage.QuorumStatePath(cfg.dir)}
	fail := func(format string, err error) (*dataDir, error) {
		d.close()
		if format == "" {
			return nil, err
		}
		return nil, fmt.Errorf(format, err)
	}
	// The directory's cluster and node first (D88): another cluster's or
	// node's directory is refused as it is; a damaged meta.properties is
	// damage.
	if err := checkMetaProperties(*cfg, logger); err != nil {
		return fail("meta.properties: %w", err)
	}
	if cfg.dynamic && !cfg.dirIDGiven {
		// A replica that replaced its disk before keeps its new id in
		// DIR/directory.id, over its entry in -initial-voters.
		id, found, err := readDirectoryID(cfg.dir)
		if err != nil {
			return fail("", err)
		}
		if found {
			cfg.setDirectoryID(id)
		}
	}
	logDir := filepath.Join(cfg.dir, "log")
	var err error
	d.log, d.rec, err = storage.Open(logDir, storage.Options{})
	if err != nil {
		return fail("opening the log: %w", err)
	}
	logger.Printf("kraftd: log %s: %d records in %d segments, ends at %+v", logDir, d.rec.Records, d.rec.Segments, d.log.End())
	if d.rec.DroppedBytes > 0 {
		logger.Printf("kraftd: log recovery dropped a torn tail of %d bytes past the recovery point %d (never synced): %s", d.rec.DroppedBytes, d.rec.RecoveryPoint, d.rec.Cause)
	}
	qs, err := storage.ReadQuorumState(d.qsPath)
	if err == nil {
		err = storage.CheckQuorumState(d.qsPath, qs, d.rec.SyncedEpoch)
	}
	if err != nil {
		return fail("", err)
	}
	if _, err := storage.ReadBootstrap(storage.BootstrapPath(cfg.dir)); err != nil {
		return fail("", err)
	}
	snapDir := filepath.Join(cfg.dir, "snapshots")
	if d.snaps, err = storage.OpenSnapshots(snapDir); err != nil {
		return fail("opening the snapshots: %w", err)
	}
	for _, id := range d.snaps.List() {
		// Reads the whole file once, checking its checksum.
		if _, err := d.snaps.Size(id); err != nil {
			return fail("snapshot: %w", err)
		}
	}
	if id, ok := d.snaps.Latest(); ok {
		logger.Printf("kraftd: snapshots %s: %d, the latest ends at %+v; the log starts at %d", snapDir, len(d.snaps.List()), id, d.log.StartOffset())
	}
	return d, nil
}

// moveAside moves everything in dir but its lock file and data moved aside
// before into a new directory dir/damaged-TIME, durably, and returns its
// path. The rename stays inside dir, so it works where dir is a mount
// point, and keeps the data for the operator to look at, copy or remove.
func moveAside(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	aside := filepath.Join(dir, damagedPrefix+time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.Mkdir(aside, 0o755); err != nil {
		return "", err
	}
	for _, e := range entries {
		name := e.Name()
		if name == storage.LockFileName || strings.HasPrefix(name, damagedPrefix) {
			continue
		}
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(aside, name)); err != nil {
			return "", err
		}
	}
	for _, p := range []string{aside, dir} {
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		err = f.Sync()
		_ = f.Close()
		if err != nil {
			return "", err
		}
	}
	return aside, nil
}

// setDirectoryID makes id the replica's directory id: in a dynamic quorum
// it is a voter of -initial-voters only with its entry's id there; with
// another one it is an observer (a replaced disk).
func (c *config) setDirectoryID(id [16]byte) {
	c.dirID = id
	if !c.dynamic {
		return
	}
	c.observer = true
	for _, v := range c.initialVoters {
		if v.key.Matches(kraft.ReplicaKey{ID: c.id, DirectoryID: id}) {
			c.observer = false
		}
	}
}

// damageAdvice says what to do with a data directory whose synced data is
// damaged, where kraftd refuses to start on it: a replica that lost records
// it acknowledged, or its vote, could make the quorum lose a committed
// record or elect two leaders in one epoch.
func damageAdvice(cfg config) string {
	s := fmt.Sprintf("kraftd: the data directory %s is damaged: records or a vote this replica made durable are gone, and it must not rejoin with it as it is. ", cfg.dir)
	if cfg.dynamic {
		s += "Restore the directory from a copy taken while the replica was stopped, or let it rejoin as a replaced disk: "
		switch {
		case cfg.dirIDGiven:
			return s + "start it again without -directory-id (or with a new one) and -on-damage replace, and kraftd moves the damaged data aside " +
				"and starts empty with a new directory id; or move the directory aside yourself and start it with an empty one and a new directory id. " +
				"On the leader, remove its old directory id from the voters (POST /voters/remove) and add the new one (POST /voters/add), or use -auto-join."
		default:
			return s + "start it again with -on-damage replace (the default in a dynamic quorum), and kraftd moves the damaged data aside " +
				"and starts empty with a new directory id; on the leader, remove its old directory id from the voters (POST /voters/remove) " +
				"and add the new one (POST /voters/add), or use -auto-join."
		}
	}
	return s + "Restore the directory from a copy taken while the replica was stopped. Do not start it with an empty directory " +
		"in a static quorum while the others cannot form a majority without it: it may have held acknowledged records they lack " +
		"(a static voter cannot rejoin with a new directory id; a dynamic quorum, -initial-voters, can replace a damaged disk by itself)."
}
