package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/kraftquorum/kraft"
)

// DefaultSegmentBytes is the segment size of a FileLog whose Options leave
// SegmentBytes zero.
const DefaultSegmentBytes = 64 << 20

// indexInterval is how many bytes of frames a segment's in-memory index
// skips between two entries (Kafka's index.interval.bytes).
const indexInterval = 4096

// Options configures a FileLog.
type Options struct {
	// SegmentBytes is the size past which the log starts a new segment file
	// (default DefaultSegmentBytes). One append is never split across
	// segments, so a segment can exceed it by one append.
	SegmentBytes int64

	// TruncateDamage lets Open open a log that lost records it had synced
	// (a DamageError): it cuts the log where the damage starts, records the
	// loss in the recovery point file and reports it in Recovery.Damage.
	// Without it, Open refuses such a log with the DamageError.
	TruncateDamage bool

	// FS is the file system the log is kept in; nil is the operating
	// system's (OS). A simulator passes its own to crash or damage the disk.
	FS FS
}

// FileLog is a Log kept in segment files in one directory, in the format
// docs/storage.md describes. Open it with Open; one FileLog at a time may
// use a directory.
//
// Appends are written to the last segment at once (the operating system
// holds them) and fsynced only by Sync, so one Sync commits any number of
// appends. Starting a new segment fsyncs the previous one and the
// directory, so every segment but the last is always durable. After a
// failed write or fsync the log refuses all further work: close it and
// open the directory again, which recovers what is on disk.
type FileLog struct {
	dir      string
	segBytes int64
	fs       FS

	// syncMu is held across an fsync by Sync, and by Truncate and Close,
	// which must not run during one. It is taken before mu.
	syncMu sync.Mutex
	mu     sync.Mutex

	segs    []*segment // ascending; the last is the one appended to
	end     kraft.LogEnd
	epochs  epochHistory
	flushed int64
	failed  error // the first write or fsync error; the log is unusable
	closed  bool
	rp      *recoveryPointFile // guarded by syncMu
	lock    *DirLock           // nil for a test file system
	wbuf    []byte             // encoding buffer of Append
	rbuf    []byte             // scanning buffer of Read
	scanBuf []byte             // the recovery scan's buffer, dropped once the log is open (D182)
}

var _ Log = (*FileLog)(nil)

// segment is one segment file: the records from offset base to end, in
// size bytes of frames.
type segment struct {
	base  int64
	end   int64
	size  int64
	path  string
	f     File
	index []indexEntry // sparse: the position of some frames, ascending
}

type indexEntry struct {
	offset int64
	pos    int64
}

// segmentName is the file name of the segment whose first record has
// offset base: 20 decimal digits and ".log", as Kafka names segments.
func segmentName(base int64) string { return fmt.Sprintf("%020d.log", base) }

// parseSegmentName returns the base offset of a segment file name.
func parseSegmentName(name string) (int64, bool) {
	if len(name) != 24 || name[20:] != ".log" {
		return 0, false
	}
	var base int64
	for _, c := range name[:20] {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if base > (1<<63-1-d)/10 {
			return 0, false
		}
		base = base*10 + d
	}
	return base, true
}

// noteFrame records, now and then, where the frame of offset starts.
func (s *segment) noteFrame(offset, pos int64) {
	if n := len(s.index); n == 0 || pos-s.index[n-1].pos >= indexInterval {
		s.index = append(s.index, indexEntry{offset: offset, pos: pos})
	}
}

// seek returns the position of a frame at or before offset's, and the offset
// of that frame.
func (s *segment) seek(offset int64) (pos, at int64) {
	i := sort.Search(len(s.index), func(i int) bool { return s.index[i].offset > offset })
	if i == 0 {
		return 0, s.base
	}
	return s.index[i-1].pos, s.index[i-1].offset
}

// Open opens the log in dir, creating the directory and an empty log if
// there is none, and recovers it: it checks every frame, drops a torn tail
// of the last segment past the recovery point (RecoveryPointFileName: the
// records a crash can lose, never synced; the Recovery says what was
// dropped), rebuilds the epoch history, and fsyncs, so the whole log it
// opens is durable. A bad frame of a record below the log start (deleted,
// still in the segment that holds the start) is skipped and noted in the
// Recovery (D104). Records below the recovery point that do not read
// back, or a bad frame in any segment but the last, are damage: records
// that were synced, perhaps acknowledged, and are lost. Open refuses the
// log with a *DamageError naming them (errors.Is ErrDamaged and
// ErrCorrupt), or with Options.TruncateDamage opens it cut where the
// damage starts and reports the loss in Recovery.Damage. Segments that do
// not follow each other are an ErrCorrupt error.
//
// Open locks dir (LockDir) until Close: a second Open of the directory,
// in this process or another, fails at once.
func Open(dir string, opts Options) (*FileLog, Recovery, error) {
	l := &FileLog{dir: dir, segBytes: opts.SegmentBytes, fs: opts.FS}
	if l.segBytes <= 0 {
		l.segBytes = DefaultSegmentBytes
	}
	if l.fs == nil {
		l.fs = osFS{}
	}
	rec, err := l.recover(opts)
	l.scanBuf = nil
	if err != nil {
		for _, s := range l.segs {
			_ = s.f.Close()
		}
		if l.rp != nil {
			_ = l.rp.f.Close()
		}
		if l.lock != nil {
			_ = l.lock.Unlock()
		}
		return nil, rec, err
	}
	return l, rec, nil
}

// Dir is the log's directory.
func (l *FileLog) Dir() string { return l.dir }

func (l *FileLog) active() *segment { return l.segs[len(l.segs)-1] }

// usable returns why the log cannot be used, or nil.
func (l *FileLog) usable() error {
	if l.closed {
		return ErrClosed
	}
	if l.failed != nil {
		return fmt.Errorf("storage: log %s failed earlier: %w", l.dir, l.failed)
	}
	return nil
}

// fail makes err sticky and returns it.
func (l *FileLog) fail(err error) error {
	if l.failed == nil {
		l.failed = err
	}
	return fmt.Errorf("storage: log %s: %w", l.dir, err)
}

// Append appends records in epoch and returns the new end. They are
// written but not durable until Sync.
func (l *FileLog) Append(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error) {
	return l.append(len(records),
		func(int) kraft.Epoch { return epoch },
		func(i int) []byte { return records[i] },
		func(int) int64 { return -1 })
}

// AppendEntries appends entries that continue the log (see Log) and returns
// the new end. They are written but not durable until Sync.
func (l *FileLog) AppendEntries(entries ...Entry) (kraft.LogEnd, error) {
	return l.append(len(entries),
		func(i int) kraft.Epoch { return entries[i].Epoch },
		func(i int) []byte { return entries[i].Data },
		func(i int) int64 { return entries[i].Offset })
}

func (l *FileLog) append(n int, epoch func(int) kraft.Epoch, data func(int) []byte, offset func(int) int64) (kraft.LogEnd, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return l.end, err
	}
	if n == 0 {
		return l.end, nil
	}
	total, err := checkAppend(l.end, n, epoch, func(i int) int { return len(data(i)) }, offset)
	if err != nil {
		return l.end, err
	}
	if seg := l.active(); seg.size > 0 && seg.size+total > l.segBytes {
		if err := l.roll(); err != nil {
			return l.end, l.fail(err)
		}
	}
	seg := l.active()
	b := l.wbuf[:0]
	for i := 0; i < n; i++ {
		b = appendFrame(b, l.end.Offset+int64(i), epoch(i), data(i))
	}
	if _, err := seg.f.WriteAt(b, seg.size); err != nil {
		return l.end, l.fail(err)
	}
	if cap(b) <= 4<<20 {
		l.wbuf = b
	}
	pos := seg.size
	for i := 0; i < n; i++ {
		off := l.end.Offset + int64(i)
		seg.noteFrame(off, pos)
		l.epochs.add(epoch(i), off)
		pos += int64(FrameOverhead + len(data(i)))
	}
	seg.size = pos
	seg.end += int64(n)
	l.end = kraft.LogEnd{Offset: seg.end, Epoch: l.epochs.last()}
	return l.end, nil
}

// roll starts a new segment at the log end. The current one is fsynced
// first and the new file's directory entry after, so a segment exists on
// disk only once all before it are durable.
func (l *FileLog) roll() error {
	old := l.active()
	// Flushed() stays where it is: the records of old are durable now, but
	// only a Sync's recovery point makes them count as durable (D102).
	if err := old.f.Sync(); err != nil {
		return err
	}
	seg, err := l.createSegment(l.end.Offset)
	if err != nil {
		return err
	}
	l.segs = append(l.segs, seg)
	return l.fs.SyncDir(l.dir)
}

// createSegment creates the empty segment file of base (replacing any
// stale file of that name).
func (l *FileLog) createSegment(base int64) (*segment, error) {
	path := filepath.Join(l.dir, segmentName(base))
	f, err := l.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &segment{base: base, end: base, path: path, f: f}, nil
}

// segmentFor is the index of the segment that holds offset, or the last
// one.
func (l *FileLog) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	if i == 0 {
		return 0
	}
	return i - 1
}

// Read returns records from offset from on: as many as fit in maxBytes
// bytes of payload, and at least one. Each frame read is checked against
// its CRC; a mismatch is an ErrCorrupt error.
func (l *FileLog) Read(from int64, maxBytes int) ([]Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return nil, err
	}
	if err := checkRead(from, l.epochs.base.Offset, l.end.Offset); err != nil {
		return nil, err
	}
	bufSize := maxBytes + indexInterval + 2*FrameOverhead
	if bufSize < 0 || bufSize > readScanBuffer {
		bufSize = readScanBuffer
	}
	if cap(l.rbuf) < bufSize {
		l.rbuf = make([]byte, bufSize)
	}
	var out []Entry
	var arena []byte // the payloads, copied out in chunks
	total := 0
	for i := l.segmentFor(from); i < len(l.segs) && from < l.end.Offset; i++ {
		seg := l.segs[i]
		pos, at := seg.seek(from)
		sc := newScanner(seg.f, pos, seg.size, l.rbuf[:bufSize])
		for ; at < seg.end; at++ {
			pos := sc.pos()
			h, payload, err := sc.next()
			if err == nil && h.offset != at {
				err = fmt.Errorf("%w: offset %d where %d belongs", errBadSequence, h.offset, at)
			}
			if err != nil {
				if isDecodeError(err) {
					return nil, corruptAt(seg.path, pos, err)
				}
				return nil, fmt.Errorf("storage: reading %s: %w", seg.path, err)
			}
			if h.offset < from {
				continue
			}
			if len(out) > 0 && total+len(payload) > maxBytes {
				return out, nil
			}
			if cap(arena)-len(arena) < len(payload) {
				arena = make([]byte, 0, chunkSize(len(payload), maxBytes-total, seg.size-pos))
			}
			start := len(arena)
			arena = append(arena, payload...)
			out = append(out, Entry{Offset: h.offset, Epoch: h.epoch, Data: arena[start:len(arena):len(arena)]})
			total += len(payload)
			from = h.offset + 1
		}
	}
	return out, nil
}

// readScanBuffer bounds the scanning buffer a FileLog keeps for Read: 64
// KiB rather than the 1 MiB of a large Read, which every replica would keep
// for good (a frame larger than the buffer still reads, through a buffer of
// its own size; the payloads are copied out in chunks anyway, chunkSize).
// A 1 MiB Read takes 16 reads of the file instead of one (D182).
const readScanBuffer = 64 << 10

// chunkSize is the size of the next chunk of a Read's payload copies: 64
// KiB, or less if the read cannot take that much more (budget) or the
// segment holds less from the frame at hand on (rest, frames included:
// a read of the last record of a log copies about that record, not 64
// KiB), but room for the payload at hand in any case.
func chunkSize(payload, budget int, rest int64) int {
	n := 64 << 10
	if budget < n {
		n = budget
	}
	if rest < int64(n) {
		n = int(rest)
	}
	if n < payload {
		n = payload
	}
	return n
}

// Truncate removes the records at or after to and makes the removal
// durable: the later segments are deleted, newest first, and the directory
// fsynced; then the segment holding to is cut and fsynced, and the
// recovery point raised to to, durably, if it was below (D102). A crash on
// the way leaves a prefix of the log as it was before. Flushed() is to
// after.
func (l *FileLog) Truncate(to int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if to < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOutOfRange, to)
	}
	if to < l.epochs.base.Offset {
		return fmt.Errorf("%w: truncate to %d, the log starts at %d", ErrBelowStart, to, l.epochs.base.Offset)
	}
	if to >= l.end.Offset {
		return nil
	}
	i := l.segmentFor(to)
	seg := l.segs[i]
	pos, err := l.positionOf(seg, to)
	if err != nil {
		return err
	}
	if l.rp.cur.offset > to {
		// The recovery point must not claim the records removed: lowered
		// first, a crash leaves it below what the disk holds.
		p := l.rp.cur
		p.offset, p.epoch = to, l.epochs.epochFor(to-1)
		if err := l.rp.lower(p); err != nil {
			return l.fail(err)
		}
	}
	if len(l.segs) > i+1 {
		for j := len(l.segs) - 1; j > i; j-- {
			s := l.segs[j]
			_ = s.f.Close()
			if err := l.fs.Remove(s.path); err != nil {
				return l.fail(err)
			}
			l.segs = l.segs[:j]
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return l.fail(err)
		}
	}
	if err := seg.f.Truncate(pos); err != nil {
		return l.fail(err)
	}
	if err := seg.f.Sync(); err != nil {
		return l.fail(err)
	}
	seg.size = pos
	seg.end = to
	seg.index = seg.index[:sort.Search(len(seg.index), func(k int) bool { return seg.index[k].offset >= to })]
	l.epochs.truncate(to)
	l.end = kraft.LogEnd{Offset: to, Epoch: l.epochs.last()}
	if l.flushed > to {
		l.flushed = to
	}
	// The records below to are durable now; they are reported so only once
	// the recovery point claims them (D102).
	if err := l.claim(l.end); err != nil {
		return l.fail(err)
	}
	l.flushed = to
	return nil
}

// positionOf is the file position of the frame of offset in seg.
func (l *FileLog) positionOf(seg *segment, offset int64) (int64, error) {
	if offset == seg.end {
		return seg.size, nil
	}
	pos, at := seg.seek(offset)
	sc := newScanner(seg.f, pos, seg.size, make([]byte, 2*indexInterval))
	for ; at < offset; at++ {
		pos := sc.pos()
		if _, _, err := sc.next(); err != nil {
			if isDecodeError(err) {
				return 0, corruptAt(seg.path, pos, err)
			}
			return 0, fmt.Errorf("storage: reading %s: %w", seg.path, err)
		}
	}
	return sc.pos(), nil
}

// Sync fsyncs the last segment (the others are durable already), then
// raises the recovery point to the end it saw and fsyncs that, and only
// then moves Flushed() there (D102). The fsyncs run without holding up
// Append or Read; concurrent Syncs run one after the other.
func (l *FileLog) Sync() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return err
	}
	target := l.end
	if target.Offset == l.flushed {
		l.mu.Unlock()
		return nil
	}
	f := l.active().f
	l.mu.Unlock()

	err := f.Sync()
	if err == nil {
		// Only now, the records below target being durable, may the
		// recovery point claim them.
		err = l.claim(target)
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		return l.fail(err)
	}
	if target.Offset > l.flushed {
		l.flushed = target.Offset
	}
	return nil
}

// claim raises the recovery point to end, durably (a slot written and
// fsynced), if it is below: the caller has made the records below end
// durable, and reports them durable (Flushed) only after claim returned,
// so that every record the log ever reported durable is claimed by a
// durable recovery point whatever crash comes, and a later loss of one is
// damage, not a torn tail (D102). A loss that an earlier Open recorded is
// forgotten once end covers it. The caller holds syncMu.
func (l *FileLog) claim(end kraft.LogEnd) error {
	if l.rp.cur.offset >= end.Offset {
		return nil
	}
	p := recoveryPoint{offset: end.Offset, epoch: end.Epoch, lost: l.rp.cur.lost}
	if end.Offset >= p.lost.to {
		p.lost = lostRange{} // the records lost to damage are back
	}
	return l.rp.set(p)
}

// End is the log end.
func (l *FileLog) End() kraft.LogEnd {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

// Flushed is the offset below which every record is durable.
func (l *FileLog) Flushed() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushed
}

// State describes the log for kraft.NewState.
func (l *FileLog) State() kraft.LogState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.state(l.end.Offset)
}

// EpochFor returns the epoch of the record at offset.
func (l *FileLog) EpochFor(offset int64) (kraft.Epoch, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset < l.epochs.base.Offset || offset >= l.end.Offset {
		return 0, false
	}
	return l.epochs.epochFor(offset), true
}

// StartOffset is the log start offset.
func (l *FileLog) StartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.base.Offset
}

// Start is the log start offset and the epoch of the record before it.
func (l *FileLog) Start() kraft.LogEnd {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.base
}

// DeleteBefore removes the records below offset and makes it the log
// start. In order:
//
//  1. if records below offset are not durable yet, the last segment is
//     fsynced and the recovery point raised to the end, durably (D102);
//     Flushed() becomes the end. So the log the new start describes can be
//     recovered whatever happens next, and the records reported durable
//     are claimed;
//  2. the new start is written to the log start file, atomically and
//     durably: from here on the records below it are gone for Read, for
//     Truncate and for Open;
//  3. the segments that hold only records below it are removed, oldest
//     first. Their removal need not be durable: Open removes any such
//     segment a crash brings back.
//
// The segment that holds offset stays whole on disk, as in Kafka, whose
// log start can be inside a segment; its records below offset are
// unreachable and go with it when a later DeleteBefore passes it.
func (l *FileLog) DeleteBefore(offset int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if offset <= l.epochs.base.Offset {
		return nil
	}
	if offset > l.end.Offset {
		return fmt.Errorf("%w: delete before %d, past the log end %d", ErrOutOfRange, offset, l.end.Offset)
	}
	if offset > l.flushed {
		if err := l.active().f.Sync(); err != nil {
			return l.fail(err)
		}
		if err := l.claim(l.end); err != nil {
			return l.fail(err)
		}
		l.flushed = l.end.Offset
	}
	start := kraft.LogEnd{Offset: offset, Epoch: l.epochs.epochFor(offset - 1)}
	if err := writeLogStart(l.fs, l.dir, start); err != nil {
		return l.fail(err)
	}
	l.epochs.startAt(start, l.end.Offset)
	for len(l.segs) > 1 && l.segs[1].base <= offset {
		s := l.segs[0]
		_ = s.f.Close()
		l.segs = l.segs[1:]
		if err := l.fs.Remove(s.path); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

// ResetTo empties the log and restarts it at start. In order:
//
//  1. every segment is removed, newest first, and the directory fsynced (a
//     crash on the way leaves a prefix of the log, as Truncate does, or no
//     segment, which Open reads as an empty log at the old start);
//  2. start is written to the log start file, atomically and durably;
//  3. an empty segment is created at start.Offset and the directory
//     fsynced (without it, Open creates one).
//
// So a crash leaves the old log, a prefix of it, an empty log at the old
// start, or the empty log at start, and never mixes the old records with
// the new start.
func (l *FileLog) ResetTo(start kraft.LogEnd) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if start.Offset < 0 || start.Epoch < 0 {
		return fmt.Errorf("%w: reset to %+v", ErrOutOfRange, start)
	}
	// The recovery point claims nothing until the next Sync: a crash may
	// leave no segment, or the new start's empty one.
	p := recoveryPoint{lost: l.rp.cur.lost}
	if start.Offset >= p.lost.to {
		p.lost = lostRange{}
	}
	if err := l.rp.lower(p); err != nil {
		return l.fail(err)
	}
	for j := len(l.segs) - 1; j >= 0; j-- {
		s := l.segs[j]
		_ = s.f.Close()
		l.segs = l.segs[:j]
		if err := l.fs.Remove(s.path); err != nil {
			return l.fail(err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	if err := writeLogStart(l.fs, l.dir, start); err != nil {
		return l.fail(err)
	}
	seg, err := l.createSegment(start.Offset)
	if err != nil {
		return l.fail(err)
	}
	l.segs = append(l.segs, seg)
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.epochs.reset(start)
	l.end = start
	l.flushed = start.Offset
	return nil
}

// Close closes the segment files. It does not sync.
func (l *FileLog) Close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.closed = true
	var first error
	for _, s := range l.segs { // none after a failed ResetTo
		if err := s.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	if err := l.rp.f.Close(); err != nil && first == nil {
		first = err
	}
	if l.lock != nil {
		if err := l.lock.Unlock(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
