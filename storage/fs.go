package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// FS is every file-system operation the package performs: OS is the
// operating system's; a simulator or a test puts its own in its place
// (Options.FS) to fail, crash or damage the disk at any operation. Paths
// are as the operating system's; an implementation needs to model only the
// operations below, their failures, and what a crash keeps of them (a
// write is durable once its file is fsynced, a directory entry once its
// directory is).
type FS interface {
	// OpenFile opens name like os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove removes a file.
	Remove(name string) error
	// Rename renames a file, replacing newName.
	Rename(oldName, newName string) error
	// ReadDir lists the names in dir; an absent dir is an error satisfying
	// errors.Is(err, os.ErrNotExist).
	ReadDir(dir string) ([]string, error)
	// MkdirAll creates dir and its parents.
	MkdirAll(dir string) error
	// SyncDir makes the entries of dir durable (fsync of the directory).
	SyncDir(dir string) error
}

// File is the part of *os.File the package uses.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Truncate(size int64) error
	Sync() error
	Size() (int64, error)
	Close() error
}

// OS is the operating system's file system.
func OS() FS { return osFS{} }

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

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error             { return os.Remove(name) }
func (osFS) Rename(oldName, newName string) error { return os.Rename(oldName, newName) }
func (osFS) MkdirAll(dir string) error            { return os.MkdirAll(dir, 0o755) }
func (osFS) ReadDir(dir string) ([]string, error) { return readDirNames(dir) }
func (osFS) SyncDir(dir string) error             { return syncDirectory(dir) }

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

// mkdirAllDurable creates dir and its missing parents, and makes every
// directory it creates durable: each one's entry is in its parent, which
// is fsynced, from the top down. (Fsyncing only dir's parent would leave
// the new directories above it to the operating system: a power loss could
// take the whole tree, with the files fsynced in it.)
func mkdirAllDurable(fsys FS, dir string) error {
	var made []string
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		_, err := fsys.ReadDir(p)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		made = append(made, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return err
	}
	for i := len(made) - 1; i >= 0; i-- {
		if err := fsys.SyncDir(filepath.Dir(made[i])); err != nil {
			return err
		}
	}
	return nil
}

// readSmallFile reads a whole file of at most limit bytes. An absent file
// gives an error satisfying errors.Is(err, os.ErrNotExist), a larger one
// an error satisfying errors.Is(err, ErrDamaged).
func readSmallFile(fsys FS, path string, limit int64) ([]byte, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > limit {
		// Every file read this way has a format no larger than limit: a
		// larger one was damaged (a misdirected write, say).
		return nil, &fileDamageError{fmt.Sprintf("storage: %s is %d bytes, more than its format's %d: it is damaged", path, size, limit)}
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
func writeFileAtomic(fsys FS, path string, data []byte) (err error) {
	tmp := path + ".tmp"
	if rerr := fsys.Remove(tmp); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return rerr
	}
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = fsys.Remove(tmp)
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
	if err := fsys.Rename(tmp, path); err != nil {
		return err
	}
	renamed = true
	return fsys.SyncDir(filepath.Dir(path))
}
