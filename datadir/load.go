package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// ErrUnformatted: the directory has no meta.properties.
var ErrUnformatted = errors.New("datadir: the directory is not formatted")

// UnformattedError: Load found no meta.properties in Dir. Entries are the
// names it holds (the lock file aside): a replica that ran before and lost
// its meta.properties, or its whole disk, must not start as if new.
type UnformattedError struct {
	Dir     string
	Entries []string
}

func (e *UnformattedError) Error() string {
	if len(e.Entries) == 0 {
		return fmt.Sprintf("the data directory %s is not formatted (it has no %s)", e.Dir, MetaFileName)
	}
	return fmt.Sprintf("the data directory %s is not formatted (it has no %s) but holds %s", e.Dir, MetaFileName, strings.Join(e.Entries, ", "))
}

// Is makes errors.Is(err, ErrUnformatted) hold.
func (e *UnformattedError) Is(target error) bool { return target == ErrUnformatted }

// Expect is what a start was told, checked against the directory's
// identity by Load.
type Expect struct {
	ClusterID [16]byte
	NodeID    kraft.NodeID
	// Dynamic: started as a replica of a dynamic quorum.
	Dynamic bool
	// Voters: a static replica's voter set, as given at this start.
	Voters []kraft.ReplicaKey
	// DirectoryID, if not zero, is the directory id this start was given
	// explicitly: it must be the directory's.
	DirectoryID [16]byte
	// LegacyDirectoryID is, for the migration of a directory of an earlier
	// kraftd only, the directory id it took from the start's flags when
	// the directory had no directory.id file: the replica's entry in
	// -initial-voters or -voters.
	LegacyDirectoryID [16]byte
	// Logf, if set, receives a line for each migration or recovery step.
	Logf func(format string, args ...interface{})
}

func (e Expect) logf(format string, args ...interface{}) {
	if e.Logf != nil {
		e.Logf(format, args...)
	}
}

// MismatchError: a start was told another cluster, node, quorum kind or
// directory id than the directory's.
type MismatchError struct {
	Dir           string
	What          string // "cluster id", "node id", "quorum", "directory id"
	Stored, Given string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("the data directory %s belongs to %s %s, not %s", e.Dir, e.What, e.Stored, e.Given)
}

func checkIDs(dir string, id Identity, clusterID [16]byte, nodeID kraft.NodeID) error {
	if id.ClusterID != clusterID {
		return &MismatchError{Dir: dir, What: "cluster", Stored: KafkaUUID(id.ClusterID), Given: KafkaUUID(clusterID)}
	}
	if id.NodeID != nodeID {
		return &MismatchError{Dir: dir, What: "node", Stored: fmt.Sprint(id.NodeID), Given: fmt.Sprint(nodeID)}
	}
	return nil
}

func quorumKind(dynamic bool) string {
	if dynamic {
		return "a dynamic quorum"
	}
	return "a static quorum"
}

// Load reads the identity of the formatted directory dir and checks it
// against e: a directory without meta.properties is an *UnformattedError
// (never a new identity: docs/design.md D108), a meta.properties that does
// not read back is damage (errors.Is storage.ErrDamaged), another cluster
// or node a *MismatchError, a static replica given another voter set a
// *VotersMismatchError (D109). A replacement that a crash interrupted is
// finished first (D111). A directory written by an earlier kraftd is
// migrated, durably, with what the start was told (D110).
func Load(fsys storage.FS, dir string, e Expect) (Identity, error) {
	m, found, err := readMeta(fsys, dir)
	if err != nil {
		return Identity{}, err
	}
	if !found {
		return Identity{}, unformatted(fsys, dir)
	}
	if err := checkIDs(dir, m.Identity, e.ClusterID, e.NodeID); err != nil {
		return Identity{}, err
	}
	if m.replacing != "" {
		if err := finishReplace(fsys, dir, m); err != nil {
			return Identity{}, err
		}
		e.logf("finished moving the damaged data of %s aside to %s (a replacement a stop interrupted); directory id %s",
			dir, filepath.Join(dir, m.replacing), uuid.UUID(m.DirectoryID))
		m.replacing = ""
	}
	if m.legacy {
		if m, err = migrate(fsys, dir, m, e); err != nil {
			return Identity{}, err
		}
	}
	if m.Dynamic != e.Dynamic {
		return Identity{}, &MismatchError{Dir: dir, What: "quorum kind", Stored: quorumKind(m.Dynamic), Given: quorumKind(e.Dynamic)}
	}
	if !m.Dynamic && !SameVoters(m.Voters, e.Voters) {
		return Identity{}, &VotersMismatchError{Dir: dir, Stored: m.Voters, Given: e.Voters}
	}
	if e.DirectoryID != ([16]byte{}) && e.DirectoryID != m.DirectoryID {
		stored := "none"
		if m.DirectoryID != ([16]byte{}) {
			stored = uuid.UUID(m.DirectoryID).String()
		}
		return Identity{}, &MismatchError{Dir: dir, What: "directory id", Stored: stored, Given: uuid.UUID(e.DirectoryID).String()}
	}
	return m.Identity, nil
}

func unformatted(fsys storage.FS, dir string) error {
	names, err := fsys.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("datadir: %w", err)
	}
	var entries []string
	for _, n := range names {
		if n != storage.LockFileName {
			entries = append(entries, n)
		}
	}
	return &UnformattedError{Dir: dir, Entries: entries}
}

// migrate completes the identity of a directory an earlier kraftd wrote:
// its meta.properties held the cluster and node ids; a dynamic replica's
// directory id was in directory.id, or else was its -initial-voters
// entry's (or -directory-id); the static voter set was only in the flags.
// The new meta.properties is written durably before directory.id is
// removed, so a crash between them leaves both, which read the same.
func migrate(fsys storage.FS, dir string, m meta, e Expect) (meta, error) {
	m.legacy = false
	m.Dynamic = e.Dynamic
	from := "-directory-id"
	if e.Dynamic {
		file, found, err := readLegacyDirectoryID(fsys, dir)
		switch {
		case err != nil:
			return m, err
		case e.DirectoryID != ([16]byte{}):
			m.DirectoryID = e.DirectoryID
		case found:
			m.DirectoryID, from = file, LegacyDirectoryIDFile
		case e.LegacyDirectoryID != ([16]byte{}):
			m.DirectoryID, from = e.LegacyDirectoryID, "the replica's entry in -initial-voters"
		default:
			return m, fmt.Errorf("datadir: %s was written by an earlier kraftd and has no %s: the directory id this replica ran under is not known; "+
				"start it with -directory-id ID (the one GET /voters shows for it), or format an empty directory and add it as a new replica",
				dir, LegacyDirectoryIDFile)
		}
	} else {
		m.Voters = append([]kraft.ReplicaKey(nil), e.Voters...)
		m.DirectoryID, from = e.DirectoryID, "-directory-id"
		if m.DirectoryID == ([16]byte{}) {
			m.DirectoryID, from = e.LegacyDirectoryID, "the replica's entry in -voters"
		}
	}
	if err := writeMeta(fsys, dir, m); err != nil {
		return m, err
	}
	if err := removeIfThere(fsys, filepath.Join(dir, LegacyDirectoryIDFile)); err != nil {
		return m, err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return m, err
	}
	desc := "voters " + FormatVoters(m.Voters)
	if m.Dynamic {
		desc = "a dynamic quorum"
	}
	id := "none"
	if m.DirectoryID != ([16]byte{}) {
		id = uuid.UUID(m.DirectoryID).String() + " (from " + from + ")"
	}
	e.logf("migrated %s, written by an earlier kraftd: %s now holds the directory id %s and %s", dir, MetaFileName, id, desc)
	return m, nil
}

func removeIfThere(fsys storage.FS, path string) error {
	if err := fsys.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// readLegacyDirectoryID reads the directory.id file an earlier kraftd
// kept: the id and a line "crc32c XXXXXXXX" of it (a file of one line
// was written before the checksum).
func readLegacyDirectoryID(fsys storage.FS, dir string) (id [16]byte, found bool, err error) {
	path := filepath.Join(dir, LegacyDirectoryIDFile)
	b, err := storage.ReadFileFS(fsys, path, 4096)
	if errors.Is(err, os.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, fmt.Errorf("datadir: reading %s: %w", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 2 {
		return id, true, damaged(path, "%d lines, want 2", len(lines))
	}
	if id, err = ParseUUID(lines[0]); err != nil {
		return id, true, damaged(path, "%v", err)
	}
	if len(lines) == 2 {
		want := fmt.Sprintf("crc32c %08x", crc32Of(lines[0]))
		if lines[1] != want {
			return id, true, damaged(path, "checksum %q, want %q", lines[1], want)
		}
	}
	return id, true, nil
}
