package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// fileSystem is every file-system operation the package performs. osFS is
// the real one; tests put a wrapper in its place that can fail or "crash" at
// any operation.
type fileSystem interface {
	// openFile opens name like os.OpenFile.
	openFile(name string, flag int, perm os.FileMode) (file, error)
	// remove removes a file.
	remove(name string) error
	// rename renames a file, replacing newName.
	rename(oldName, newName string) error
	// readDir lists the names in dir; an absent dir is an error satisfying
	// errors.Is(err, os.ErrNotExist).
	readDir(dir string) ([]string, error)
	// mkdirAll creates dir and its parents.
	mkdirAll(dir string) error
	// syncDir makes the entries of dir durable (fsync of the directory).
	syncDir(dir string) error
}

// file is the part of *os.File the package uses.
type file interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
	Sync() error
	Size() (int64, error)
	Close() error
}

// osFS is the operating system's file system.
type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (osFS) openFile(name string, flag int, perm os.FileMode) (file, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) remove(name string) error             { return os.Remove(name) }
func (osFS) rename(oldName, newName string) error { return os.Rename(oldName, newName) }
func (osFS) mkdirAll(dir string) error            { return os.MkdirAll(dir, 0o755) }
func (osFS) readDir(dir string) ([]string, error) { return readDirNames(dir) }
func (osFS) syncDir(dir string) error             { return syncDirectory(dir) }

func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func syncDirectory(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSmallFile reads a whole file of at most limit bytes. An absent file
// gives an error satisfying errors.Is(err, os.ErrNotExist).
func readSmallFile(fsys fileSystem, path string, limit int64) ([]byte, error) {
	f, err := fsys.openFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than %d", path, size, limit)
	}
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	if n == len(b) {
		return b, nil
	}
	if err == nil {
		err = errors.New("short read")
	}
	return nil, err
}

// writeFileAtomic replaces path with data durably: it writes path+".tmp",
// fsyncs it, renames it over path and fsyncs the directory. A crash at any
// point leaves either the old file or the new one. The temporary file is
// removed if anything fails.
func writeFileAtomic(fsys fileSystem, path string, data []byte) (err error) {
	tmp := path + ".tmp"
	if rerr := fsys.remove(tmp); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return rerr
	}
	f, err := fsys.openFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = fsys.remove(tmp)
		}
	}()
	if _, err := f.WriteAt(data, 0); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := fsys.rename(tmp, path); err != nil {
		return err
	}
	renamed = true
	return fsys.syncDir(filepath.Dir(path))
}
