package datadir

import (
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strings"

	"github.com/kraftquorum/kraft/storage"
)

func crc32Of(s string) uint32 { return crc32.Checksum([]byte(s), castagnoli) }

// Replace makes the damaged directory dir a replaced disk (KIP-853,
// docs/design.md D91) under the identity id, whose directory id must be a
// new one: everything dir holds but its lock file, meta.properties and
// data moved aside before goes into dir/aside (a name starting with
// DamagedPrefix), and dir is left holding only meta.properties. The order
// makes a crash at any step safe (D111):
//
//  1. meta.properties is written durably with the new identity and the
//     marker kraftd.replacing=aside: from here on the directory presents
//     only the new key;
//  2. the entries are renamed into aside, and aside and dir fsynced;
//  3. meta.properties is written again without the marker.
//
// A crash before 1 leaves the old identity and the damaged data, found
// damaged again at the next start; after it, Load finds the marker and
// finishes 2 and 3 before anything is opened, whichever renames reached
// the disk.
func Replace(fsys storage.FS, dir string, id Identity, aside string) error {
	if !strings.HasPrefix(aside, DamagedPrefix) || strings.ContainsAny(aside, "/\\") {
		return fmt.Errorf("datadir: Replace: %q is not a name starting with %s", aside, DamagedPrefix)
	}
	if !id.Dynamic || id.DirectoryID == ([16]byte{}) {
		return fmt.Errorf("datadir: Replace: only a dynamic quorum's replica takes a new directory id")
	}
	m := meta{Identity: id, replacing: aside}
	if err := writeMeta(fsys, dir, m); err != nil {
		return err
	}
	return finishReplace(fsys, dir, m)
}

// finishReplace carries out steps 2 and 3 of Replace for the marker in m.
func finishReplace(fsys storage.FS, dir string, m meta) error {
	to := filepath.Join(dir, m.replacing)
	if err := fsys.MkdirAll(to); err != nil {
		return fmt.Errorf("datadir: creating %s: %w", to, err)
	}
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("datadir: %w", err)
	}
	for _, name := range names {
		if name == storage.LockFileName || name == MetaFileName || name == MetaFileName+".tmp" || strings.HasPrefix(name, DamagedPrefix) {
			continue
		}
		if err := fsys.Rename(filepath.Join(dir, name), filepath.Join(to, name)); err != nil {
			return fmt.Errorf("datadir: moving %s aside: %w", name, err)
		}
	}
	for _, d := range []string{to, dir} {
		if err := fsys.SyncDir(d); err != nil {
			return fmt.Errorf("datadir: %w", err)
		}
	}
	m.replacing = ""
	return writeMeta(fsys, dir, m)
}
