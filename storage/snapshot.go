package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/kraftquorum/kraft"
)

// Snapshot file names, as Kafka's Snapshots class names them: the
// snapshot's end offset in 20 decimal digits, a dash, its epoch in 10, and
// a suffix. A snapshot is visible only under SnapshotSuffix; it is written
// under snapshotPartialSuffix and renamed, and deleted by a rename to
// snapshotDeletedSuffix and a removal.
const (
	SnapshotSuffix        = ".checkpoint"
	snapshotPartialSuffix = ".checkpoint.part"
	snapshotDeletedSuffix = ".checkpoint.deleted"

	snapshotOffsetDigits = 20
	snapshotEpochDigits  = 10
)

// The snapshot file format (docs/storage.md): a header, then the host's
// bytes as they were appended.
//
//	0   4  CRC-32C of bytes 4 .. 29 (the rest of the header)
//	4   1  magic, snapshotMagic
//	5   8  end offset (int64)
//	13  4  epoch (int32)
//	17  8  payload length N (int64)
//	25  4  CRC-32C of the payload
//	29  N  payload
//
// Integers are big-endian. The id in the header must be the id in the
// file name.
const (
	// SnapshotHeaderSize is the number of bytes a snapshot file holds
	// besides the host's bytes.
	SnapshotHeaderSize = 29

	snapshotMagic = 1
)

// Errors of the snapshot store. Returned errors wrap them with details;
// test with errors.Is.
var (
	// ErrSnapshotNotFound: no snapshot has the id.
	ErrSnapshotNotFound = errors.New("storage: snapshot not found")
	// ErrSnapshotExists: Create for an id that has a snapshot, or a writer
	// that was not frozen or aborted.
	ErrSnapshotExists = errors.New("storage: snapshot exists")
	// ErrSnapshotCorrupt: a snapshot file that is not what the store wrote:
	// a header or checksum that does not match, or a size that is not the
	// header's. It is damage: errors.Is(err, ErrDamaged) holds too.
	ErrSnapshotCorrupt error = &damageSentinel{"storage: corrupt snapshot"}
)

// damageSentinel is a sentinel error that is also ErrDamaged.
type damageSentinel struct{ msg string }

func (e *damageSentinel) Error() string { return e.msg }

// Is makes errors.Is(err, ErrDamaged) hold.
func (e *damageSentinel) Is(target error) bool { return target == ErrDamaged }

// SnapshotFileName is the name of the file of the snapshot id, for
// example 00000000000000001500-0000000007.checkpoint.
func SnapshotFileName(id kraft.LogEnd) string { return snapshotFileName(id, SnapshotSuffix) }

func snapshotFileName(id kraft.LogEnd, suffix string) string {
	return fmt.Sprintf("%020d-%010d%s", id.Offset, id.Epoch, suffix)
}

// snapshotFileKind is what a file name of the snapshot store is.
type snapshotFileKind int

const (
	snapshotVisible snapshotFileKind = iota // .checkpoint
	snapshotPartial                         // .checkpoint.part
	snapshotDeleted                         // .checkpoint.deleted
)

// parseSnapshotFileName returns the id and kind of a snapshot file name, and
// false for any other name: exactly 20 digits, a dash, 10 digits (an epoch
// that fits an int32) and one of the three suffixes.
func parseSnapshotFileName(name string) (kraft.LogEnd, snapshotFileKind, bool) {
	const idLen = snapshotOffsetDigits + 1 + snapshotEpochDigits
	if len(name) <= idLen || name[snapshotOffsetDigits] != '-' {
		return kraft.LogEnd{}, 0, false
	}
	var kind snapshotFileKind
	switch name[idLen:] {
	case SnapshotSuffix:
		kind = snapshotVisible
	case snapshotPartialSuffix:
		kind = snapshotPartial
	case snapshotDeletedSuffix:
		kind = snapshotDeleted
	default:
		return kraft.LogEnd{}, 0, false
	}
	offset, ok := parseDigits(name[:snapshotOffsetDigits], 1<<63-1)
	if !ok {
		return kraft.LogEnd{}, 0, false
	}
	epoch, ok := parseDigits(name[snapshotOffsetDigits+1:idLen], 1<<31-1)
	if !ok {
		return kraft.LogEnd{}, 0, false
	}
	return kraft.LogEnd{Offset: offset, Epoch: kraft.Epoch(epoch)}, kind, true
}

// parseDigits parses a string of decimal digits whose value is at most
// limit.
func parseDigits(s string, limit int64) (int64, bool) {
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (limit-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// snapshotHeader is a decoded snapshot file header.
type snapshotHeader struct {
	id     kraft.LogEnd
	length int64
	crc    uint32 // of the payload
}

func (h snapshotHeader) encode() []byte {
	b := make([]byte, SnapshotHeaderSize)
	b[4] = snapshotMagic
	binary.BigEndian.PutUint64(b[5:], uint64(h.id.Offset))
	binary.BigEndian.PutUint32(b[13:], uint32(h.id.Epoch))
	binary.BigEndian.PutUint64(b[17:], uint64(h.length))
	binary.BigEndian.PutUint32(b[25:], h.crc)
	binary.BigEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
	return b
}

func parseSnapshotHeader(b []byte) (snapshotHeader, error) {
	if crc32.Checksum(b[4:SnapshotHeaderSize], castagnoli) != binary.BigEndian.Uint32(b) {
		return snapshotHeader{}, errors.New("header checksum mismatch")
	}
	if b[4] != snapshotMagic {
		return snapshotHeader{}, fmt.Errorf("magic %d", b[4])
	}
	h := snapshotHeader{
		id: kraft.LogEnd{
			Offset: int64(binary.BigEndian.Uint64(b[5:])),
			Epoch:  kraft.Epoch(int32(binary.BigEndian.Uint32(b[13:]))),
		},
		length: int64(binary.BigEndian.Uint64(b[17:])),
		crc:    binary.BigEndian.Uint32(b[25:]),
	}
	if h.length < 0 {
		return snapshotHeader{}, fmt.Errorf("payload length %d", h.length)
	}
	return h, nil
}

// Snapshots is a directory of snapshot files, in the format docs/storage.md
// describes, named as Kafka names them. A snapshot is identified by its
// end: the offset of the first record it does not cover and the epoch of
// the last one it covers (Kafka's snapshot id). Its content is the host's
// bytes; the store adds a header with a checksum, so that a damaged file is
// detected when it is read.
//
// A snapshot is written by a SnapshotWriter under a temporary name and
// becomes visible, whole and durable, when Freeze renames it; a crash
// before leaves no trace that the next OpenSnapshots does not remove.
// The directory may be the log's. All methods are safe for concurrent
// use; one process at a time may use a directory.
type Snapshots struct {
	dir string
	fs  FS

	mu      sync.Mutex
	ids     []kraft.LogEnd // the visible snapshots, ascending
	writing map[kraft.LogEnd]bool
	checked map[kraft.LogEnd]*checkedSnapshot // open for Read, checksum verified
	closed  bool
}

// checkedSnapshot is a snapshot file whose checksum Read verified once.
type checkedSnapshot struct {
	f    File
	size int64 // of the payload
}

// OpenSnapshots opens the snapshot store in dir, creating the directory if
// there is none. It removes what a crash or a failure left of snapshots
// being written (.checkpoint.part) or deleted (.checkpoint.deleted). It
// does not read the snapshots: their checksums are verified when they are
// read.
func OpenSnapshots(dir string) (*Snapshots, error) {
	return openSnapshots(osFS{}, dir)
}

func openSnapshots(fsys FS, dir string) (*Snapshots, error) {
	s := &Snapshots{dir: dir, fs: fsys, writing: map[kraft.LogEnd]bool{}, checked: map[kraft.LogEnd]*checkedSnapshot{}}
	names, err := fsys.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := mkdirAllDurable(fsys, dir); err != nil {
			return nil, fmt.Errorf("storage: creating %s: %w", dir, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("storage: opening snapshots %s: %w", dir, err)
	}
	removed := false
	for _, name := range names {
		id, kind, ok := parseSnapshotFileName(name)
		if !ok {
			continue
		}
		if kind == snapshotVisible {
			s.ids = append(s.ids, id)
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("storage: removing %s: %w", filepath.Join(dir, name), err)
		}
		removed = true
	}
	if removed {
		if err := fsys.SyncDir(dir); err != nil {
			return nil, fmt.Errorf("storage: syncing %s: %w", dir, err)
		}
	}
	sort.Slice(s.ids, func(i, j int) bool { return s.ids[i].Compare(s.ids[j]) < 0 })
	return s, nil
}

// Dir is the store's directory.
func (s *Snapshots) Dir() string { return s.dir }

func (s *Snapshots) path(id kraft.LogEnd) string {
	return filepath.Join(s.dir, SnapshotFileName(id))
}

// pathOf is the path of a file of id with suffix, one of the three.
func (s *Snapshots) pathOf(id kraft.LogEnd, suffix string) string {
	return filepath.Join(s.dir, snapshotFileName(id, suffix))
}

// find is the index of id in s.ids, or -1.
func (s *Snapshots) find(id kraft.LogEnd) int {
	i := sort.Search(len(s.ids), func(i int) bool { return s.ids[i].Compare(id) >= 0 })
	if i < len(s.ids) && s.ids[i] == id {
		return i
	}
	return -1
}

func (s *Snapshots) usable() error {
	if s.closed {
		return fmt.Errorf("%w: snapshots %s", ErrClosed, s.dir)
	}
	return nil
}

// List returns the ids of the snapshots, ascending (by epoch, then
// offset, as kraft.LogEnd.Compare orders them).
func (s *Snapshots) List() []kraft.LogEnd {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]kraft.LogEnd(nil), s.ids...)
}

// Latest returns the id of the newest snapshot, and false if there is none.
func (s *Snapshots) Latest() (kraft.LogEnd, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) == 0 {
		return kraft.LogEnd{}, false
	}
	return s.ids[len(s.ids)-1], true
}

// Earliest returns the id of the oldest snapshot, and false if there is
// none.
func (s *Snapshots) Earliest() (kraft.LogEnd, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) == 0 {
		return kraft.LogEnd{}, false
	}
	return s.ids[0], true
}

// Create starts writing the snapshot id. It is an ErrSnapshotExists error
// if the snapshot exists or another writer of it is open. The snapshot is
// not visible until the writer's Freeze returns.
func (s *Snapshots) Create(id kraft.LogEnd) (*SnapshotWriter, error) {
	if id.Offset < 0 || id.Epoch < 0 {
		return nil, fmt.Errorf("%w: snapshot id %+v", ErrOutOfRange, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	if s.find(id) >= 0 {
		return nil, fmt.Errorf("%w: %s", ErrSnapshotExists, s.path(id))
	}
	if s.writing[id] {
		return nil, fmt.Errorf("%w: %s is being written", ErrSnapshotExists, s.path(id))
	}
	part := s.pathOf(id, snapshotPartialSuffix)
	f, err := s.fs.OpenFile(part, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: creating %s: %w", part, err)
	}
	s.writing[id] = true
	return &SnapshotWriter{s: s, id: id, part: part, f: f}, nil
}

// verify returns the checked snapshot id, reading the whole file and
// verifying its checksum the first time. The caller holds s.mu.
func (s *Snapshots) verify(id kraft.LogEnd) (*checkedSnapshot, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	if c, ok := s.checked[id]; ok {
		return c, nil
	}
	if s.find(id) < 0 {
		return nil, fmt.Errorf("%w: %+v in %s", ErrSnapshotNotFound, id, s.dir)
	}
	path := s.path(id)
	f, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("storage: opening %s: %w", path, err)
	}
	h, err := readSnapshotHeader(f, path, id)
	if err == nil {
		err = checkPayload(f, path, h)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	c := &checkedSnapshot{f: f, size: h.length}
	s.checked[id] = c
	return c, nil
}

// readSnapshotHeader reads and checks the header of the snapshot file path
// of id, and checks the file's size against it.
func readSnapshotHeader(f File, path string, id kraft.LogEnd) (snapshotHeader, error) {
	size, err := f.Size()
	if err != nil {
		return snapshotHeader{}, fmt.Errorf("storage: reading %s: %w", path, err)
	}
	if size < SnapshotHeaderSize {
		return snapshotHeader{}, fmt.Errorf("%w: %s is %d bytes, shorter than a header", ErrSnapshotCorrupt, path, size)
	}
	b := make([]byte, SnapshotHeaderSize)
	if _, err := f.ReadAt(b, 0); err != nil {
		return snapshotHeader{}, fmt.Errorf("storage: reading %s: %w", path, err)
	}
	h, err := parseSnapshotHeader(b)
	switch {
	case err != nil:
		return snapshotHeader{}, fmt.Errorf("%w: %s: %s", ErrSnapshotCorrupt, path, err.Error())
	case h.id != id:
		return snapshotHeader{}, fmt.Errorf("%w: %s holds snapshot %+v", ErrSnapshotCorrupt, path, h.id)
	case size != SnapshotHeaderSize+h.length:
		return snapshotHeader{}, fmt.Errorf("%w: %s is %d bytes, its header says %d", ErrSnapshotCorrupt, path, size, SnapshotHeaderSize+h.length)
	}
	return h, nil
}

// checkPayload reads the payload of the snapshot file path and compares its
// checksum with the header's.
func checkPayload(f File, path string, h snapshotHeader) error {
	crc, err := crcOf(io.NewSectionReader(f, SnapshotHeaderSize, h.length))
	if err != nil {
		return fmt.Errorf("storage: reading %s: %w", path, err)
	}
	if crc != h.crc {
		return fmt.Errorf("%w: %s: payload checksum mismatch", ErrSnapshotCorrupt, path)
	}
	return nil
}

func crcOf(r io.Reader) (uint32, error) {
	buf := make([]byte, 1<<20)
	var crc uint32
	for {
		n, err := r.Read(buf)
		crc = crc32.Update(crc, castagnoli, buf[:n])
		if errors.Is(err, io.EOF) {
			return crc, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// Size returns the size of the snapshot id: the bytes the host wrote,
// without the header. The first Size or Read of a snapshot reads the whole
// file and verifies its checksum (ErrSnapshotCorrupt); an unknown id is
// ErrSnapshotNotFound.
func (s *Snapshots) Size(id kraft.LogEnd) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.verify(id)
	if err != nil {
		return 0, err
	}
	return c.size, nil
}

// Read returns the bytes of the snapshot id from position on, at most
// maxBytes of them (none if maxBytes <= 0), for a FetchSnapshot response.
// position == Size(id) gives none; a position outside [0, Size(id)] is an
// ErrOutOfRange error. The first Size or Read of a snapshot verifies its
// checksum, as Size says; the bytes belong to the caller.
func (s *Snapshots) Read(id kraft.LogEnd, position int64, maxBytes int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.verify(id)
	if err != nil {
		return nil, err
	}
	if position < 0 || position > c.size {
		return nil, fmt.Errorf("%w: position %d is not in [0, %d] of snapshot %+v", ErrOutOfRange, position, c.size, id)
	}
	n := c.size - position
	if int64(maxBytes) < n {
		n = int64(maxBytes)
	}
	if n <= 0 {
		return []byte{}, nil
	}
	b := make([]byte, n)
	if _, err := c.f.ReadAt(b, SnapshotHeaderSize+position); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: %s is shorter than when it was verified", ErrSnapshotCorrupt, s.path(id))
		}
		return nil, fmt.Errorf("storage: reading %s: %w", s.path(id), err)
	}
	return b, nil
}

// Open opens the snapshot id for reading its bytes from the start, for
// example to load it at start. The header is checked at once; the
// checksum of the bytes as they are read, so that the Read that reaches
// the end returns an ErrSnapshotCorrupt error instead of io.EOF if they do
// not match. The snapshot can be read to the end even if it is deleted
// meanwhile. Close the reader when done.
func (s *Snapshots) Open(id kraft.LogEnd) (io.ReadCloser, error) {
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if s.find(id) < 0 {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %+v in %s", ErrSnapshotNotFound, id, s.dir)
	}
	path := s.path(id)
	f, err := s.fs.OpenFile(path, os.O_RDONLY, 0)
	s.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("storage: opening %s: %w", path, err)
	}
	h, err := readSnapshotHeader(f, path, id)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, SnapshotHeaderSize, h.length), snapshotReadBuffer)
	return &snapshotReader{f: f, path: path, r: r, want: h.crc}, nil
}

// snapshotReadBuffer is the read size of Open's reader, so that a host that
// decodes a snapshot in small reads does not make a system call for each.
const snapshotReadBuffer = 256 << 10

// snapshotReader reads a snapshot's bytes and checks their checksum at the
// end.
type snapshotReader struct {
	f    File
	path string
	r    *bufio.Reader
	crc  uint32
	want uint32
}

func (r *snapshotReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.crc = crc32.Update(r.crc, castagnoli, p[:n])
	if errors.Is(err, io.EOF) && r.crc != r.want {
		return n, fmt.Errorf("%w: %s: payload checksum mismatch", ErrSnapshotCorrupt, r.path)
	}
	return n, err
}

func (r *snapshotReader) Close() error { return r.f.Close() }

// Delete deletes the snapshot id as Kafka does: the file is renamed to
// .checkpoint.deleted (from then on it is not visible, and OpenSnapshots
// removes it if a crash comes first), removed, and the directory fsynced.
// Readers opened with Open can still read it to the end.
func (s *Snapshots) Delete(id kraft.LogEnd) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if s.find(id) < 0 {
		return fmt.Errorf("%w: %+v in %s", ErrSnapshotNotFound, id, s.dir)
	}
	if err := s.delete(id); err != nil {
		return err
	}
	return s.syncDir()
}

// DeleteBefore deletes every snapshot older than id (kraft.LogEnd.Compare),
// except the latest one, which stays whatever id is: a replica always keeps
// its newest snapshot. It fsyncs the directory once, after all of them.
func (s *Snapshots) DeleteBefore(id kraft.LogEnd) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	deleted := false
	for len(s.ids) > 1 && s.ids[0].Compare(id) < 0 {
		if err := s.delete(s.ids[0]); err != nil {
			return err
		}
		deleted = true
	}
	if !deleted {
		return nil
	}
	return s.syncDir()
}

// delete renames the file of id to its deleted name and removes it. The
// caller holds s.mu.
func (s *Snapshots) delete(id kraft.LogEnd) error {
	if c, ok := s.checked[id]; ok {
		_ = c.f.Close()
		delete(s.checked, id)
	}
	path := s.path(id)
	deleted := s.pathOf(id, snapshotDeletedSuffix)
	if err := s.fs.Rename(path, deleted); err != nil {
		return fmt.Errorf("storage: deleting %s: %w", path, err)
	}
	i := s.find(id)
	s.ids = append(s.ids[:i], s.ids[i+1:]...)
	if err := s.fs.Remove(deleted); err != nil {
		return fmt.Errorf("storage: deleting %s: %w", deleted, err)
	}
	return nil
}

func (s *Snapshots) syncDir() error {
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("storage: syncing %s: %w", s.dir, err)
	}
	return nil
}

// Close releases the files Read keeps open. Writers still open can be
// aborted, not frozen.
func (s *Snapshots) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.closed = true
	var first error
	for id, c := range s.checked {
		if err := c.f.Close(); err != nil && first == nil {
			first = err
		}
		delete(s.checked, id)
	}
	return first
}

// SnapshotWriter writes one snapshot (Kafka's RawSnapshotWriter): the host
// appends its bytes, in any number of chunks (a follower appends the
// chunks of FetchSnapshot responses in order), then calls Freeze to make
// the snapshot visible, or Abort to drop it. A writer is used by one
// goroutine at a time.
type SnapshotWriter struct {
	s    *Snapshots
	id   kraft.LogEnd
	part string // the temporary file
	f    File
	size int64
	crc  uint32
	done bool  // frozen or aborted
	err  error // the first write error: the writer can only be aborted
}

// ID is the id of the snapshot being written.
func (w *SnapshotWriter) ID() kraft.LogEnd { return w.id }

// Size is the number of bytes appended so far.
func (w *SnapshotWriter) Size() int64 { return w.size }

// Append appends chunk to the snapshot. The bytes are written to the
// temporary file at once and are durable after Freeze.
func (w *SnapshotWriter) Append(chunk []byte) error {
	if w.done {
		return fmt.Errorf("storage: snapshot %s was frozen or aborted", w.part)
	}
	if w.err != nil {
		return w.err
	}
	if _, err := w.f.WriteAt(chunk, SnapshotHeaderSize+w.size); err != nil {
		w.err = fmt.Errorf("storage: writing %s: %w", w.part, err)
		return w.err
	}
	w.size += int64(len(chunk))
	w.crc = crc32.Update(w.crc, castagnoli, chunk)
	return nil
}

// Write is Append as an io.Writer.
func (w *SnapshotWriter) Write(p []byte) (int, error) {
	if err := w.Append(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Freeze makes the snapshot visible and durable (Kafka's freeze): it writes
// the header, fsyncs the file, renames it to its .checkpoint name and
// fsyncs the directory. Only a whole, synced file is ever renamed, so a
// crash leaves either no snapshot or the whole one. If anything before the
// rename fails, the temporary file is removed and the snapshot does not
// exist; if the directory fsync fails, the snapshot is listed but may not
// survive a crash.
func (w *SnapshotWriter) Freeze() error {
	if w.done {
		return fmt.Errorf("storage: snapshot %s was frozen or aborted", w.part)
	}
	if w.err != nil {
		_ = w.Abort()
		return w.err
	}
	w.s.mu.Lock()
	closed := w.s.closed
	w.s.mu.Unlock()
	if closed {
		_ = w.Abort()
		return fmt.Errorf("%w: snapshots %s", ErrClosed, w.s.dir)
	}
	h := snapshotHeader{id: w.id, length: w.size, crc: w.crc}
	if _, err := w.f.WriteAt(h.encode(), 0); err != nil {
		_ = w.Abort()
		return fmt.Errorf("storage: writing %s: %w", w.part, err)
	}
	if err := w.f.Sync(); err != nil {
		_ = w.Abort()
		return fmt.Errorf("storage: syncing %s: %w", w.part, err)
	}
	if err := w.f.Close(); err != nil {
		w.f = nil
		_ = w.Abort()
		return fmt.Errorf("storage: closing %s: %w", w.part, err)
	}
	w.f = nil
	path := w.s.path(w.id)

	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if err := w.s.fs.Rename(w.part, path); err != nil {
		// The rename's error is the one to report; the clean-up's adds
		// nothing (the part file is removed on the next open if not now).
		_ = w.abortLocked()
		return fmt.Errorf("storage: renaming %s: %w", w.part, err)
	}
	w.done = true
	delete(w.s.writing, w.id)
	i := sort.Search(len(w.s.ids), func(i int) bool { return w.s.ids[i].Compare(w.id) >= 0 })
	w.s.ids = append(w.s.ids, kraft.LogEnd{})
	copy(w.s.ids[i+1:], w.s.ids[i:])
	w.s.ids[i] = w.id
	return w.s.syncDir()
}

// Abort drops the snapshot: it closes and removes the temporary file.
// After Freeze it does nothing, so a host may defer it.
func (w *SnapshotWriter) Abort() error {
	if w.done {
		return nil
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.abortLocked()
}

func (w *SnapshotWriter) abortLocked() error {
	w.done = true
	delete(w.s.writing, w.id)
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	if err := w.s.fs.Remove(w.part); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("storage: removing %s: %w", w.part, err)
	}
	return nil
}
