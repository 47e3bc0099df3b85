package datadir

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Data is what Open found in a data directory, checked.
type Data struct {
	Log      *storage.FileLog
	Recovery storage.Recovery
	// QuorumStatePath is the quorum-state file; Quorum its record (nil:
	// none yet).
	QuorumStatePath string
	Quorum          *kraft.QuorumRecord
	Snapshots       *storage.Snapshots
	// Bootstrap is the bootstrap checkpoint's payload; nil: none.
	Bootstrap []byte
}

// Close closes the log and the snapshots.
func (d *Data) Close() {
	if d.Log != nil {
		_ = d.Log.Close()
	}
	if d.Snapshots != nil {
		_ = d.Snapshots.Close()
	}
}

// LogDir and SnapshotDir are the log's and the snapshots' subdirectories.
func LogDir(dir string) string      { return filepath.Join(dir, "log") }
func SnapshotDir(dir string) string { return filepath.Join(dir, "snapshots") }

// IsDamage: err says that something the replica made durable is gone or
// changed on disk.
func IsDamage(err error) bool {
	return errors.Is(err, storage.ErrDamaged) || errors.Is(err, storage.ErrCorrupt) || errors.Is(err, storage.ErrSnapshotCorrupt)
}

// Open opens what the formatted directory dir holds over fsys and checks
// it: the log (opts, with opts.FS set to fsys; a torn tail past the
// recovery point is dropped, damage below it refused: docs/design.md
// D70-D71), the quorum state against its checked copy and the log (D72),
// the bootstrap checkpoint, and every snapshot's checksum. Damage is an
// error for which IsDamage holds.
func Open(fsys storage.FS, dir string, opts storage.Options) (*Data, error) {
	d := &Data{QuorumStatePath: storage.QuorumStatePath(dir)}
	fail := func(err error) (*Data, error) {
		d.Close()
		return nil, err
	}
	opts.FS = fsys
	var err error
	if d.Log, d.Recovery, err = storage.Open(LogDir(dir), opts); err != nil {
		return fail(fmt.Errorf("opening the log: %w", err))
	}
	if d.Quorum, err = storage.ReadQuorumStateFS(fsys, d.QuorumStatePath); err != nil {
		return fail(err)
	}
	if err := storage.CheckQuorumState(d.QuorumStatePath, d.Quorum, d.Recovery.SyncedEpoch); err != nil {
		return fail(err)
	}
	if d.Bootstrap, err = storage.ReadBootstrapFS(fsys, storage.BootstrapPath(dir)); err != nil {
		return fail(err)
	}
	if d.Snapshots, err = storage.OpenSnapshotsFS(fsys, SnapshotDir(dir)); err != nil {
		return fail(fmt.Errorf("opening the snapshots: %w", err))
	}
	for _, id := range d.Snapshots.List() {
		// Reads the whole file once, checking its checksum.
		if _, err := d.Snapshots.Size(id); err != nil {
			return fail(fmt.Errorf("snapshot: %w", err))
		}
	}
	return d, nil
}
