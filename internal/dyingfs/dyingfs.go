// Package dyingfs is a storage.FS for tests of a process that dies in the
// middle of changing its directory: the operating system's file system
// (or any other) until a number of changes to the disk, and errors after.
package dyingfs

import (
	"errors"
	"os"

	"github.com/kraftquorum/kraft/storage"
)

// ErrDied is what every call returns once the process died.
var ErrDied = errors.New("the process died")

// FS is fs for a process that dies after Left more changes to the disk
// (opening a file to write, writing, syncing, removing, renaming, making
// a directory, syncing a directory): every later call fails with ErrDied,
// and the disk holds what the calls before did. Opening a file to read
// changes nothing, and fails only once the process died.
type FS struct {
	storage.FS
	Left int
}

// New is an FS over fs that dies after left changes.
func New(fs storage.FS, left int) *FS { return &FS{FS: fs, Left: left} }

func (f *FS) step() error {
	if f.Left <= 0 {
		return ErrDied
	}
	f.Left--
	return nil
}

// OpenFile opens name; opening it to write is a change.
func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	if flag == os.O_RDONLY {
		if f.Left <= 0 {
			return nil, ErrDied
		}
		return f.FS.OpenFile(name, flag, perm)
	}
	if err := f.step(); err != nil {
		return nil, err
	}
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &dyingFile{File: file, fs: f}, nil
}

// Remove removes name: a change.
func (f *FS) Remove(name string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

// Rename renames o to n: a change.
func (f *FS) Rename(o, n string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.FS.Rename(o, n)
}

// MkdirAll makes dir: a change.
func (f *FS) MkdirAll(dir string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.FS.MkdirAll(dir)
}

// SyncDir syncs dir: a change.
func (f *FS) SyncDir(dir string) error {
	if err := f.step(); err != nil {
		return err
	}
	return f.FS.SyncDir(dir)
}

// dyingFile is a file opened to write: each write and sync is a change.
type dyingFile struct {
	storage.File
	fs *FS
}

func (f *dyingFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.step(); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *dyingFile) Sync() error {
	if err := f.fs.step(); err != nil {
		return err
	}
	return f.File.Sync()
}
