package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// LockFileName is the lock file LockDir creates in a directory, as Kafka
// locks each of its log directories with a .lock file (LogManager).
const LockFileName = ".lock"

// ErrLocked: the directory is locked by another process, or by another
// open log or LockDir in this process.
var ErrLocked = errors.New("storage: directory in use")

// DirLock is an exclusive lock on a directory, held until Unlock or the
// process exits (the operating system releases it then: a crash leaves
// no stale lock).
type DirLock struct {
	path string
	f    *os.File
}

// LockDir locks dir, which must exist, for the caller: it opens (creating
// it if need be) dir/.lock and takes an exclusive, non-blocking flock on
// it. A directory already locked, by another process or by another
// DirLock of this one (an open FileLog holds one on its directory), is an
// error wrapping ErrLocked at once: two replicas on one directory would
// each take the other's writes for its own. On systems without flock the
// lock is not enforced.
func LockDir(dir string) (*DirLock, error) {
	path := filepath.Join(dir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: locking %s: %w", dir, err)
	}
	if err := flock(f); err != nil {
		_ = f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, fmt.Errorf("%w: %s is locked (%s) by another process or another open of it in this one; "+
				"stop the replica that uses it, or give this one its own directory", ErrLocked, dir, path)
		}
		return nil, fmt.Errorf("storage: locking %s: %w", path, err)
	}
	return &DirLock{path: path, f: f}, nil
}

// Unlock releases the lock. The lock file stays.
func (l *DirLock) Unlock() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the flock
	l.f = nil
	return err
}
