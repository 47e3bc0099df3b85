package datadir

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// ErrFormatted: Format was asked to format a directory that is formatted
// already.
var ErrFormatted = errors.New("datadir: the directory is formatted already")

// ErrNotEmpty: Format was asked to format a directory that holds data.
var ErrNotEmpty = errors.New("datadir: the directory holds data")

// leftover: a name an interrupted Format may have left, which a new
// Format replaces: the bootstrap checkpoint is written before
// meta.properties, and a directory without meta.properties was never
// started.
func leftover(name string) bool {
	return name == storage.LockFileName || name == storage.BootstrapFileName ||
		name == storage.BootstrapFileName+".tmp" || name == MetaFileName+".tmp"
}

// Format writes a new replica's identity into dir (created if needed), and
// for a dynamic quorum that starts from initial voters, bootstrap as the
// bootstrap checkpoint (the voter set encoded as the host encodes it,
// replica.EncodeVoters). It refuses a directory that is formatted already
// (ErrFormatted) or holds anything else (ErrNotEmpty), as Kafka's
// kafka-storage format does: formatting a replica that ran before gives
// it a new history, which only an operator who knows it is safe may do, by
// emptying the directory first. The bootstrap checkpoint is written first
// and meta.properties last, durably: a directory without meta.properties
// is not formatted, whatever else it holds (docs/design.md D108).
func Format(fsys storage.FS, dir string, id Identity, bootstrap []byte) error {
	switch {
	case id.ClusterID == ([16]byte{}):
		return errors.New("datadir: Format without a cluster id")
	case id.NodeID < 0:
		return fmt.Errorf("datadir: Format: node id %d", id.NodeID)
	case id.Dynamic && id.DirectoryID == ([16]byte{}):
		return errors.New("datadir: Format: a replica of a dynamic quorum needs a directory id")
	case id.Dynamic && len(id.Voters) > 0:
		return errors.New("datadir: Format: a dynamic quorum keeps its voters in the bootstrap checkpoint, not in Identity.Voters")
	case !id.Dynamic && len(id.Voters) == 0:
		return errors.New("datadir: Format: a static quorum needs its voters")
	case !id.Dynamic && bootstrap != nil:
		return errors.New("datadir: Format: a bootstrap checkpoint in a static quorum")
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return fmt.Errorf("datadir: creating %s: %w", dir, err)
	}
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	var data []string
	for _, name := range names {
		switch {
		case name == MetaFileName:
			return fmt.Errorf("%w: %s", ErrFormatted, filepath.Join(dir, name))
		case !leftover(name):
			data = append(data, name)
		}
	}
	if len(data) > 0 {
		return fmt.Errorf("%w: %s holds %s", ErrNotEmpty, dir, strings.Join(data, ", "))
	}
	path := storage.BootstrapPath(dir)
	if bootstrap != nil {
		if err := storage.WriteBootstrapFS(fsys, path, bootstrap); err != nil {
			return err
		}
	} else if err := removeIfThere(fsys, path); err != nil {
		return err
	}
	return writeMeta(fsys, dir, meta{Identity: id})
}

// VotersMismatchError: a static replica was started with a voter set other
// than the one its directory was formatted with.
type VotersMismatchError struct {
	Dir           string
	Stored, Given []kraft.ReplicaKey
}

func (e *VotersMismatchError) Error() string {
	return fmt.Sprintf("the data directory %s was formatted for the static voter set %s, not %s",
		e.Dir, FormatVoters(e.Stored), FormatVoters(e.Given))
}

// UpdateVoters changes the static voter set kept in dir, formatted for
// clusterID and nodeID, to voters, and returns the set it held: the
// deliberate way to change a static quorum's voters (every replica
// stopped, each updated, then started), docs/design.md D109.
func UpdateVoters(fsys storage.FS, dir string, clusterID [16]byte, nodeID kraft.NodeID, voters []kraft.ReplicaKey) ([]kraft.ReplicaKey, error) {
	if len(voters) == 0 {
		return nil, errors.New("datadir: UpdateVoters: no voters")
	}
	m, found, err := readMeta(fsys, dir)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, &UnformattedError{Dir: dir}
	case m.legacy:
		return nil, fmt.Errorf("datadir: %s was written by an earlier kraftd: start the replica once with its current voters first", filepath.Join(dir, MetaFileName))
	case m.replacing != "":
		return nil, fmt.Errorf("datadir: %s: a replacement of a damaged directory is in progress: start the replica first", dir)
	case m.Dynamic:
		return nil, fmt.Errorf("datadir: %s belongs to a dynamic quorum: change its voters at the leader (AddRaftVoter, RemoveRaftVoter)", dir)
	}
	if err := checkIDs(dir, m.Identity, clusterID, nodeID); err != nil {
		return nil, err
	}
	old := m.Voters
	m.Voters = append([]kraft.ReplicaKey(nil), voters...)
	return old, writeMeta(fsys, dir, m)
}
