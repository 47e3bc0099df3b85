package main

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft/storage"
)

// directoryIDFile keeps a replica's directory id in its data directory
// (Kafka keeps it in meta.properties): the id, and a line with its CRC-32C,
// so that a flipped digit is damage rather than another id (D92). A file
// without the second line (written before it existed) is read as it is.
const directoryIDFile = "directory.id"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readDirectoryID reads the directory id kept in dir; found is false if
// there is none. A file that does not hold one, or whose checksum does not
// match it, is a *dirIDDamageError.
func readDirectoryID(dir string) (id [16]byte, found bool, err error) {
	path := filepath.Join(dir, directoryIDFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return id, false, nil
	}
	if err != nil {
		return id, false, err
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	damaged := func(e error) ([16]byte, bool, error) {
		return [16]byte{}, true, &dirIDDamageError{path: path, err: e}
	}
	if len(lines) > 2 {
		return damaged(fmt.Errorf("%d lines, want 2", len(lines)))
	}
	id, err = parseUUID(lines[0])
	if err != nil {
		return damaged(err)
	}
	if len(lines) == 2 {
		if want := dirIDChecksum(lines[0]); lines[1] != want {
			return damaged(fmt.Errorf("checksum %q, want %q", lines[1], want))
		}
	}
	return id, true, nil
}

func dirIDChecksum(line string) string {
	return fmt.Sprintf("crc32c %08x", crc32.Checksum([]byte(line), castagnoli))
}

// directoryID reads the directory id kept in dir, or makes a random one and
// keeps it there durably.
func directoryID(dir string) ([16]byte, error) {
	id, found, err := readDirectoryID(dir)
	if found || err != nil {
		return id, err
	}
	id = uuid.New()
	path := filepath.Join(dir, directoryIDFile)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return id, err
	}
	line := uuid.UUID(id).String()
	_, werr := f.WriteString(line + "\n" + dirIDChecksum(line) + "\n")
	serr := f.Sync()
	cerr := f.Close()
	for _, e := range []error{werr, serr, cerr} {
		if e != nil {
			return id, e
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return id, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return id, err
	}
	defer func() { _ = d.Close() }()
	return id, d.Sync()
}

// dirIDDamageError: DIR/directory.id does not hold a directory id, or not
// the one written.
type dirIDDamageError struct {
	path string
	err  error
}

func (e *dirIDDamageError) Error() string {
	return fmt.Sprintf("the directory id file %s is damaged: %v", e.path, e.err)
}

// Is makes errors.Is(err, storage.ErrDamaged) hold.
func (e *dirIDDamageError) Is(target error) bool { return target == storage.ErrDamaged }
