package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/kraftquorum/kraft"
)

// Recovery reports what Open found in a log directory.
type Recovery struct {
	// Segments is the number of segment files of the log.
	Segments int
	// Records is the number of records of the log.
	Records int64
	// DroppedBytes is the size of the torn or corrupt tail cut from the last
	// segment, 0 if there was none. Records that were synced are never in
	// it, unless the disk lost or changed them.
	DroppedBytes int64
	// Cause says where the dropped tail started and why it was dropped;
	// empty when nothing was dropped.
	Cause string
}

// errBadSequence: a valid frame whose offset or epoch does not follow the
// record before it.
var errBadSequence = errors.New("record out of sequence")

// recoverScanBuffer is the read size of the recovery scan.
const recoverScanBuffer = 1 << 20

// recover loads the segments of l.dir; see Open.
func (l *FileLog) recover() (Recovery, error) {
	var rec Recovery
	names, err := l.fs.readDir(l.dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := l.fs.mkdirAll(l.dir); err != nil {
			return rec, fmt.Errorf("storage: creating %s: %w", l.dir, err)
		}
		if err := l.fs.syncDir(filepath.Dir(filepath.Clean(l.dir))); err != nil {
			return rec, fmt.Errorf("storage: creating %s: %w", l.dir, err)
		}
	} else if err != nil {
		return rec, fmt.Errorf("storage: opening log %s: %w", l.dir, err)
	}
	var bases []int64
	for _, name := range names {
		if base, ok := parseSegmentName(name); ok {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	start, err := readLogStart(l.fs, l.dir)
	if err != nil {
		return rec, err
	}

	// DeleteBefore records a new start before it removes the segments
	// below it, so a crash can leave some; they are removed below once the
	// start has been checked against the rest.
	var below []int64
	for len(bases) > 1 && bases[1] <= start.Offset {
		below = append(below, bases[0])
		bases = bases[1:]
	}
	if len(bases) == 0 {
		// A new log, or one that ResetTo emptied before it created the
		// segment of its new start.
		seg, err := l.createSegment(start.Offset)
		if err != nil {
			return rec, fmt.Errorf("storage: creating log %s: %w", l.dir, err)
		}
		l.segs = append(l.segs, seg)
	} else if bases[0] > start.Offset {
		return rec, fmt.Errorf("%w: %s starts at offset %d but the log starts at %d", ErrCorrupt, filepath.Join(l.dir, segmentName(bases[0])), bases[0], start.Offset)
	}
	next := start.Offset
	if len(bases) > 0 {
		next = bases[0]
	}
	for i, base := range bases {
		path := filepath.Join(l.dir, segmentName(base))
		if base != next {
			return rec, fmt.Errorf("%w: %s starts at offset %d but the log before it ends at %d", ErrCorrupt, path, base, next)
		}
		f, err := l.fs.openFile(path, os.O_RDWR, 0)
		if err != nil {
			return rec, fmt.Errorf("storage: opening %s: %w", path, err)
		}
		seg := &segment{base: base, end: base, path: path, f: f}
		l.segs = append(l.segs, seg)
		if err := l.scanSegment(seg, i == len(bases)-1, &rec); err != nil {
			return rec, err
		}
		next = seg.end
	}
	if err := l.checkStart(start, next); err != nil {
		return rec, err
	}
	for _, base := range below {
		if err := l.fs.remove(filepath.Join(l.dir, segmentName(base))); err != nil {
			return rec, fmt.Errorf("storage: removing a segment below the log start: %w", err)
		}
	}
	l.epochs.startAt(start, next)
	l.end = kraft.LogEnd{Offset: next, Epoch: l.epochs.last()}
	l.flushed = next
	rec.Records = next - start.Offset

	// A process that died before syncing may have left writes the
	// operating system still holds; make them durable before the host
	// builds on them. The other segments were synced when the next began.
	if err := l.active().f.Sync(); err != nil {
		return rec, fmt.Errorf("storage: syncing %s: %w", l.active().path, err)
	}
	if err := l.fs.syncDir(l.dir); err != nil {
		return rec, fmt.Errorf("storage: syncing %s: %w", l.dir, err)
	}
	rec.Segments = len(l.segs)
	return rec, nil
}

// checkStart checks the log start from the log start file against the
// records recovered, which end at end: the log must reach the start (the
// records below it were durable before it was recorded), the record before
// it, if the first segment holds it, must have the start's epoch, and the
// record at it an epoch not lower.
func (l *FileLog) checkStart(start kraft.LogEnd, end int64) error {
	path := filepath.Join(l.dir, LogStartFileName)
	first := l.segs[0].base
	switch {
	case end < start.Offset:
		return fmt.Errorf("%w: %s says the log starts at %d, but it ends at %d", ErrCorrupt, path, start.Offset, end)
	case start.Offset > first && l.epochs.epochFor(start.Offset-1) != start.Epoch:
		return fmt.Errorf("%w: %s gives epoch %d to offset %d, the log %d", ErrCorrupt, path, start.Epoch, start.Offset-1, l.epochs.epochFor(start.Offset-1))
	case end > start.Offset && l.epochs.epochFor(start.Offset) < start.Epoch:
		return fmt.Errorf("%w: %s gives epoch %d to offset %d, but the record after it has epoch %d", ErrCorrupt, path, start.Epoch, start.Offset-1, l.epochs.epochFor(start.Offset))
	}
	return nil
}

// scanSegment reads every frame of seg, checking it and its place in the
// log, and builds the segment's index and the epoch history. In the last
// segment, the first bad frame and all after it are cut off the file.
func (l *FileLog) scanSegment(seg *segment, last bool, rec *Recovery) error {
	size, err := seg.f.Size()
	if err != nil {
		return fmt.Errorf("storage: opening %s: %w", seg.path, err)
	}
	n := int64(recoverScanBuffer)
	if size < n {
		n = size
	}
	if int64(cap(l.rbuf)) < n {
		l.rbuf = make([]byte, n)
	}
	sc := newScanner(seg.f, 0, size, l.rbuf[:n])
	for {
		pos := sc.pos()
		h, _, err := sc.next()
		if errors.Is(err, io.EOF) {
			seg.size = size
			return nil
		}
		if err == nil {
			switch {
			case h.offset != seg.end:
				err = fmt.Errorf("%w: offset %d where %d belongs", errBadSequence, h.offset, seg.end)
			case h.epoch < l.epochs.last():
				err = fmt.Errorf("%w: epoch %d after epoch %d", errBadSequence, h.epoch, l.epochs.last())
			}
		}
		if err != nil {
			if !isDecodeError(err) {
				return fmt.Errorf("storage: reading %s: %w", seg.path, err)
			}
			if !last {
				return corruptAt(seg.path, pos, err)
			}
			if err := seg.f.Truncate(pos); err != nil {
				return fmt.Errorf("storage: cutting the tail of %s: %w", seg.path, err)
			}
			rec.DroppedBytes = size - pos
			rec.Cause = fmt.Sprintf("%s at byte %d: %v", seg.path, pos, err)
			seg.size = pos
			return nil
		}
		seg.noteFrame(h.offset, pos)
		l.epochs.add(h.epoch, h.offset)
		seg.end++
	}
}
