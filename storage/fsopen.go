package storage

import (
	"github.com/kraftquorum/kraft"
)

// The stores below read and write through an FS of the caller's, as
// FileLog does with Options.FS: a data directory's format, identity and
// recovery (package datadir) run the same code over the operating
// system's disk and over a simulated or failing one.

// ReadQuorumStateFS is ReadQuorumState over fsys.
func ReadQuorumStateFS(fsys FS, path string) (*kraft.QuorumRecord, error) {
	return readQuorumState(fsys, path)
}

// OpenSnapshotsFS is OpenSnapshots over fsys.
func OpenSnapshotsFS(fsys FS, dir string) (*Snapshots, error) {
	return openSnapshots(fsys, dir)
}

// ReadBootstrapFS is ReadBootstrap over fsys.
func ReadBootstrapFS(fsys FS, path string) ([]byte, error) {
	return readBootstrap(fsys, path)
}

// WriteBootstrapFS is WriteBootstrap over fsys.
func WriteBootstrapFS(fsys FS, path string, payload []byte) error {
	return writeBootstrap(fsys, path, payload)
}

// WriteQuorumStateFS is WriteQuorumState over fsys.
func WriteQuorumStateFS(fsys FS, path string, r kraft.QuorumRecord) error {
	return writeQuorumStateData(fsys, path, NewQuorumStateData(r))
}

// ReadFileFS reads the whole file at path over fsys, a file of a format no
// larger than limit bytes: an absent file is an error satisfying
// errors.Is(err, os.ErrNotExist), a larger one an error satisfying
// errors.Is(err, ErrDamaged).
func ReadFileFS(fsys FS, path string, limit int64) ([]byte, error) {
	return readSmallFile(fsys, path, limit)
}

// WriteFileAtomicFS replaces path with data over fsys, atomically and
// durably: a temporary file, fsynced, renamed over path, and the directory
// fsynced. A crash at any point leaves the old file or the new one.
func WriteFileAtomicFS(fsys FS, path string, data []byte) error {
	return writeFileAtomic(fsys, path, data)
}
