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
	// DroppedBytes is the size of the torn tail cut from the last segment,
	// 0 if there was none: bytes past the recovery point, which were never
	// synced (a crash can leave them half written).
	DroppedBytes int64
	// Cause says where the dropped tail started and why it was dropped;
	// empty when nothing was dropped.
	Cause string
	// SkippedBytes is the size of the damaged frames Open skipped below the
	// log start, 0 if there were none: records DeleteBefore had deleted,
	// still on disk in the segment that holds the start (D104). They are no
	// loss; the records from the start on read back. SkipCause says where
	// the first was and what was wrong with it.
	SkippedBytes int64
	SkipCause    string
	// RecoveryPoint is the offset below which the log said every record was
	// synced (RecoveryPointFileName), or the log start when it said nothing
	// (a log written before the file existed).
	RecoveryPoint int64
	// Damage, when Options.TruncateDamage let Open go on past damage,
	// says which synced records the log lost: the log now ends at
	// Damage.From. nil when nothing synced was lost. A loss of known extent
	// is recorded in the recovery point file: every Open reports it, and
	// refuses without TruncateDamage, until the log holds records up to
	// Damage.To again, synced (fetched back from the leader). One of unknown
	// extent (Damage.To -1: the recovery point file was damaged) is
	// reported by this Open only; the host must act on it now.
	Damage *DamageError
	// SyncedEpoch is the highest epoch of a record the log is known to have
	// held durably: the epoch of its last record, or of the last record it
	// lost to damage if that is higher. A quorum-state record with a lower
	// epoch was rolled back or lost (CheckQuorumState).
	SyncedEpoch kraft.Epoch
}

// ErrDamaged: records, or a record of the replica's state, that were made
// durable are gone or changed on disk: damage, not a crash (a crash only
// loses what was never synced). Errors that wrap it are *DamageError or
// *QuorumStateDamageError; errors.Is(err, ErrCorrupt) holds for a log's.
var ErrDamaged = errors.New("storage: damaged")

// DamageError is Open's error when a log lost records it had synced: a
// record below the recovery point does not read back (a flipped bit, a
// lost write), the log ends below it, a segment before the last is bad, or
// the recovery point file itself is damaged. Those records may have been
// acknowledged to a leader, which counted this replica as holding them; a
// replica that lost them must not vote or be counted as holding them until
// it has them again (docs/design.md). Open refuses such a log unless
// Options.TruncateDamage is set; then it cuts the log at From, records the
// loss, and returns it in Recovery.Damage.
type DamageError struct {
	// Dir is the log's directory.
	Dir string
	// Records From to To (excluded) were synced and are lost. To is -1 when
	// the recovery point file is damaged and the log cannot know how many
	// records it held: every record from From on may be lost.
	From, To int64
	// Epoch is the epoch of the last lost record, as far as known (the
	// recovery point's), 0 if unknown.
	Epoch kraft.Epoch
	// Cause says what Open found and where.
	Cause string
}

func (e *DamageError) Error() string {
	lost := fmt.Sprintf("records %d to %d (excluded)", e.From, e.To)
	if e.To < 0 {
		lost = fmt.Sprintf("records from %d on (how many is unknown)", e.From)
	}
	return fmt.Sprintf("storage: log %s is damaged: %s were synced and are lost: %s. "+
		"They may have been acknowledged: this replica must not vote or count as holding them until it has them again. "+
		"Open it with Options.TruncateDamage to cut the log at %d and fetch the records back from the leader, or restore the directory",
		e.Dir, lost, e.Cause, e.From)
}

// Is makes errors.Is(err, ErrDamaged) and errors.Is(err, ErrCorrupt) hold.
func (e *DamageError) Is(target error) bool { return target == ErrDamaged || target == ErrCorrupt }

// fileDamageError: a file of the log that does not read back as written
// (it wraps ErrDamaged and ErrCorrupt), where no record range says what
// was lost.
type fileDamageError struct{ msg string }

func (e *fileDamageError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrDamaged) and errors.Is(err, ErrCorrupt) hold.
func (e *fileDamageError) Is(target error) bool { return target == ErrDamaged || target == ErrCorrupt }

// errBadSequence: a valid frame whose offset or epoch does not follow the
// record before it.
var errBadSequence = errors.New("record out of sequence")

// recoverScanBuffer is the read size of the recovery scan.
const recoverScanBuffer = 1 << 20

// recover loads the segments of l.dir; see Open.
func (l *FileLog) recover(opts Options) (Recovery, error) {
	var rec Recovery
	bases, err := l.openDir()
	if err != nil {
		return rec, err
	}
	start, err := readLogStart(l.fs, l.dir)
	if err != nil {
		return rec, err
	}
	rp, rpFound, rpDamage, err := readRecoveryPoint(l.fs, l.dir)
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
	if len(bases) > 0 && bases[0] > start.Offset {
		return rec, fmt.Errorf("%w: %s starts at offset %d but the log starts at %d", ErrCorrupt, filepath.Join(l.dir, segmentName(bases[0])), bases[0], start.Offset)
	}
	sc, err := l.scanSegments(bases, start)
	if err != nil {
		return rec, err
	}

	// Records [start, claim) were synced, as far as the log knows.
	end := sc.end
	claim := start.Offset
	if rpFound && rp.offset > claim {
		claim = rp.offset
	}
	rec.RecoveryPoint = claim
	dmg := l.damage(bases, sc.bad, sc.badPos, sc.badErr, end, claim, rp, rpFound, rpDamage)
	if dmg != nil && !opts.TruncateDamage {
		return rec, dmg
	}
	switch {
	case dmg != nil:
		if err := l.cutAtDamage(bases, sc.bad, sc.badPos, start, &end); err != nil {
			return rec, err
		}
		dmg.From = end
	case sc.bad >= 0:
		// A torn tail: past the recovery point, in the last segment.
		if rec.DroppedBytes, rec.Cause, err = l.dropTornTail(l.segs[sc.bad], sc.badPos, sc.badErr); err != nil {
			return rec, err
		}
	}
	if sc.skip.tail && len(l.segs) == 1 {
		if err := l.restartAtStart(start.Offset); err != nil {
			return rec, err
		}
	}
	rec.SkippedBytes, rec.SkipCause = sc.skip.bytes, sc.skip.cause
	if len(l.segs) == 0 {
		// A new log, or one that ResetTo emptied before it created the
		// segment of its new start.
		seg, err := l.createSegment(start.Offset)
		if err != nil {
			return rec, fmt.Errorf("storage: creating log %s: %w", l.dir, err)
		}
		l.segs = append(l.segs, seg)
	}
	if err := l.checkStart(start, end, sc.skip.covers(start.Offset-1)); err != nil {
		return rec, err
	}
	for _, base := range below {
		if err := l.fs.Remove(filepath.Join(l.dir, segmentName(base))); err != nil {
			return rec, fmt.Errorf("storage: removing a segment below the log start: %w", err)
		}
	}
	err = l.finishRecovery(&rec, start, end, dmg)
	return rec, err
}

// openDir opens l.dir, creating it if it does not exist and locking it on
// the operating system's file system, and returns the base offsets of its
// segments in ascending order.
func (l *FileLog) openDir() ([]int64, error) {
	names, err := l.fs.ReadDir(l.dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := mkdirAllDurable(l.fs, l.dir); err != nil {
			return nil, fmt.Errorf("storage: creating %s: %w", l.dir, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("storage: opening log %s: %w", l.dir, err)
	}
	if _, ok := l.fs.(osFS); ok {
		if l.lock, err = LockDir(l.dir); err != nil {
			return nil, err
		}
	}
	var bases []int64
	for _, name := range names {
		if base, ok := parseSegmentName(name); ok {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// segmentScan is what scanSegments found.
type segmentScan struct {
	end    int64 // the offset past the last record read
	bad    int   // the index of the segment with a bad frame, -1 if none
	badPos int64 // the position of the bad frame in it
	badErr error // what is wrong with the bad frame
	skip   skipped
}

// scanSegments opens the segments at bases, which start at or below the
// log start, appends them to l.segs and reads their frames in order; it
// stops at the first segment with a bad frame.
func (l *FileLog) scanSegments(bases []int64, start kraft.LogEnd) (segmentScan, error) {
	sc := segmentScan{end: start.Offset, bad: -1}
	if len(bases) > 0 {
		sc.end = bases[0]
	}
	for i, base := range bases {
		path := filepath.Join(l.dir, segmentName(base))
		if base != sc.end {
			return sc, fmt.Errorf("%w: %s starts at offset %d but the log before it ends at %d", ErrCorrupt, path, base, sc.end)
		}
		f, err := l.fs.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return sc, fmt.Errorf("storage: opening %s: %w", path, err)
		}
		seg := &segment{base: base, end: base, path: path, f: f}
		l.segs = append(l.segs, seg)
		if sc.badPos, sc.badErr, err = l.scanSegment(seg, start, i == len(bases)-1, &sc.skip); err != nil {
			return sc, err
		}
		sc.end = seg.end
		if sc.badErr != nil {
			sc.bad = i
			break
		}
	}
	return sc, nil
}

// dropTornTail cuts seg at badPos, where a frame past the recovery point
// does not read, and returns how many bytes it dropped and why.
func (l *FileLog) dropTornTail(seg *segment, badPos int64, badErr error) (int64, string, error) {
	size, err := seg.f.Size()
	if err != nil {
		return 0, "", fmt.Errorf("storage: opening %s: %w", seg.path, err)
	}
	if err := seg.f.Truncate(badPos); err != nil {
		return 0, "", fmt.Errorf("storage: cutting the tail of %s: %w", seg.path, err)
	}
	return size - badPos, fmt.Sprintf("%s at byte %d: %v", seg.path, badPos, badErr), nil
}

// restartAtStart replaces the only segment, in which no valid frame
// follows damage below the start: the log ends at its start (recover
// reports a record past it that the recovery point claimed as lost), and
// what the segment holds is below it. The log goes on in an empty segment
// at the start, made before the old one is removed; a crash that leaves
// both leaves the old one wholly below the start, which the next Open
// removes.
func (l *FileLog) restartAtStart(start int64) error {
	old := l.segs[0]
	seg, err := l.createSegment(start)
	if err != nil {
		return fmt.Errorf("storage: creating a segment at the log start: %w", err)
	}
	l.segs[0] = seg
	_ = old.f.Close()
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("storage: syncing %s: %w", l.dir, err)
	}
	if err := l.fs.Remove(old.path); err != nil {
		return fmt.Errorf("storage: removing a segment below the log start: %w", err)
	}
	return nil
}

// finishRecovery sets the log's state to the recovered records [start, end), makes
// them durable, and writes them as the new recovery point with the damage
// dmg (nil if none) still to repair; it completes rec.
func (l *FileLog) finishRecovery(rec *Recovery, start kraft.LogEnd, end int64, dmg *DamageError) error {
	l.epochs.startAt(start, end)
	l.end = kraft.LogEnd{Offset: end, Epoch: l.epochs.last()}
	l.flushed = end
	rec.Records = end - start.Offset

	// A process that died before syncing may have left writes the
	// operating system still holds; make them durable before the host
	// builds on them. The other segments were synced when the next began.
	if err := l.active().f.Sync(); err != nil {
		return fmt.Errorf("storage: syncing %s: %w", l.active().path, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("storage: syncing %s: %w", l.dir, err)
	}
	// The whole log is durable now: it is the new recovery point, with the
	// damage still to repair.
	p := recoveryPoint{offset: end, epoch: l.end.Epoch}
	rec.SyncedEpoch = l.end.Epoch
	if dmg != nil {
		rec.Damage = dmg
		if dmg.Epoch > rec.SyncedEpoch {
			rec.SyncedEpoch = dmg.Epoch
		}
		if dmg.To > dmg.From {
			p.lost = lostRange{from: dmg.From, to: dmg.To, epoch: dmg.Epoch}
		}
	}
	var err error
	if l.rp, err = createRecoveryPoint(l.fs, l.dir, p); err != nil {
		return fmt.Errorf("storage: writing %s: %w", filepath.Join(l.dir, RecoveryPointFileName), err)
	}
	rec.Segments = len(l.segs)
	return nil
}

// damage decides whether what recover found is damage: records the log
// synced that are gone. A bad frame in a segment before the last is (they
// were all synced when the next segment began); so is one in the last
// segment below the recovery point claim, a log that ends below it, a
// damaged recovery point file, and a loss an earlier Open recorded that
// the log has not made up for yet. nil if there is none: a bad frame past
// the claim is a torn tail.
func (l *FileLog) damage(bases []int64, bad int, badPos int64, badErr error, end, claim int64, rp recoveryPoint, rpFound bool, rpDamage string) *DamageError {
	var d *DamageError
	epoch := kraft.Epoch(0)
	if rpFound {
		epoch = rp.epoch
	}
	where := func() string {
		return fmt.Sprintf("%s at byte %d: %v", l.segs[bad].path, badPos, badErr)
	}
	switch {
	case bad >= 0 && bad < len(bases)-1:
		to := claim
		if last := bases[len(bases)-1]; last > to {
			to = last
		}
		d = &DamageError{From: end, To: to, Epoch: epoch, Cause: where() + ", in a segment before the last (synced when the next began)"}
	case rpDamage != "":
		cause := "the recovery point file is damaged (" + rpDamage + ")"
		if bad >= 0 {
			cause += "; a record does not read: " + where()
		}
		d = &DamageError{From: end, To: -1, Cause: cause}
	case bad >= 0 && end < claim:
		d = &DamageError{From: end, To: claim, Epoch: epoch, Cause: fmt.Sprintf("%s, below the recovery point %d", where(), claim)}
	case end < claim:
		d = &DamageError{From: end, To: claim, Epoch: epoch, Cause: fmt.Sprintf("the log ends at %d, below the recovery point %d", end, claim)}
	}
	if rpFound && !rp.lost.empty() && end < rp.lost.to {
		cause := fmt.Sprintf("records %d to %d were lost to damage an earlier Open found, and the log holds them only up to %d", rp.lost.from, rp.lost.to, end)
		if d == nil {
			d = &DamageError{From: end, To: rp.lost.to, Epoch: rp.lost.epoch, Cause: cause}
		} else {
			d.Cause += "; " + cause
			if d.To >= 0 && d.To < rp.lost.to {
				d.To = rp.lost.to
			}
			if d.Epoch < rp.lost.epoch {
				d.Epoch = rp.lost.epoch
			}
		}
	}
	if d != nil {
		d.Dir = l.dir
	}
	return d
}

// cutAtDamage cuts the log recover found damaged where its readable
// records end, *end: the segments after the bad one are removed, the bad
// one is cut at its first bad frame. If no record at or past the log
// start reads, the log is emptied to an empty one at the start.
func (l *FileLog) cutAtDamage(bases []int64, bad int, badPos int64, start kraft.LogEnd, end *int64) error {
	last := len(l.segs) - 1
	if bad >= 0 {
		last = bad
	}
	for _, base := range bases[last+1:] {
		if err := l.fs.Remove(filepath.Join(l.dir, segmentName(base))); err != nil {
			return fmt.Errorf("storage: removing a segment after damage: %w", err)
		}
	}
	if *end < start.Offset {
		for _, s := range l.segs {
			_ = s.f.Close()
			if err := l.fs.Remove(s.path); err != nil {
				return fmt.Errorf("storage: removing a segment after damage: %w", err)
			}
		}
		l.segs = nil
		l.epochs.reset(start)
		*end = start.Offset
	} else if bad >= 0 {
		seg := l.segs[bad]
		if err := seg.f.Truncate(badPos); err != nil {
			return fmt.Errorf("storage: cutting %s at damage: %w", seg.path, err)
		}
	}
	return l.fs.SyncDir(l.dir)
}

// checkStart checks the log start from the log start file against the
// records recovered, which end at end: the log must reach the start (the
// records below it were durable before it was recorded), the record before
// it, if the first segment holds it and it read back (skippedBefore false),
// must have the start's epoch, and the record at it an epoch not lower.
func (l *FileLog) checkStart(start kraft.LogEnd, end int64, skippedBefore bool) error {
	path := filepath.Join(l.dir, LogStartFileName)
	first := l.segs[0].base
	switch {
	case end < start.Offset:
		return fmt.Errorf("%w: %s says the log starts at %d, but it ends at %d", ErrCorrupt, path, start.Offset, end)
	case start.Offset > first && !skippedBefore && l.epochs.epochFor(start.Offset-1) != start.Epoch:
		return fmt.Errorf("%w: %s gives epoch %d to offset %d, the log %d", ErrCorrupt, path, start.Epoch, start.Offset-1, l.epochs.epochFor(start.Offset-1))
	case end > start.Offset && l.epochs.epochFor(start.Offset) < start.Epoch:
		return fmt.Errorf("%w: %s gives epoch %d to offset %d, but the record after it has epoch %d", ErrCorrupt, path, start.Epoch, start.Offset-1, l.epochs.epochFor(start.Offset))
	}
	return nil
}

// skipped is what recover skipped below the log start (D104).
type skipped struct {
	bytes int64
	cause string
	gaps  [][2]int64 // the offsets [from, to) of records not read
	tail  bool       // the last segment is cut where its first gap starts
}

// covers reports whether the record at offset was skipped.
func (s *skipped) covers(offset int64) bool {
	for _, g := range s.gaps {
		if offset >= g[0] && offset < g[1] {
			return true
		}
	}
	return false
}

// scanSegment reads every frame of seg, checking it and its place in the
// log, and builds the segment's index and the epoch history, up to the
// first bad frame: it returns its position and what is wrong with it
// (badErr nil if there is none). err is for I/O errors.
//
// A bad frame of a record below the log start, start (one DeleteBefore
// deleted and left in the segment that holds the start), is no loss: the
// scan goes on at the next valid frame of a record after it and at or
// below the start (resync), and notes what it skipped in skip (D104). If
// there is none and seg is the last segment, the segment ends there and
// the log at its start; recover then decides, from the recovery point,
// whether records from the start on are lost.
func (l *FileLog) scanSegment(seg *segment, start kraft.LogEnd, last bool, skip *skipped) (badPos int64, badErr, err error) {
	size, err := seg.f.Size()
	if err != nil {
		return 0, nil, fmt.Errorf("storage: opening %s: %w", seg.path, err)
	}
	n := int64(recoverScanBuffer)
	if size < n {
		n = size
	}
	// The recovery scan's buffer is its own, not Read's: the 1 MiB of a
	// large segment is garbage once the log is open (D182).
	if int64(cap(l.scanBuf)) < n {
		l.scanBuf = make([]byte, n)
	}
	sc := newScanner(seg.f, 0, size, l.scanBuf[:n])
	for {
		pos := sc.pos()
		h, _, err := sc.next()
		if errors.Is(err, io.EOF) {
			seg.size = size
			return 0, nil, nil
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
				return 0, nil, fmt.Errorf("storage: reading %s: %w", seg.path, err)
			}
			if seg.end < start.Offset {
				at, next, found, rerr := l.resync(seg, pos, size, start)
				if rerr != nil {
					return 0, nil, rerr
				}
				if found || last {
					if !found {
						at, next = size, start.Offset
						seg.size, skip.tail = pos, true
					}
					if skip.cause == "" {
						skip.cause = fmt.Sprintf("%s at byte %d: %v, below the log start %d", seg.path, pos, err, start.Offset)
					}
					skip.bytes += at - pos
					skip.gaps = append(skip.gaps, [2]int64{seg.end, next})
					seg.end = next
					if !found {
						return 0, nil, nil
					}
					// Reads from the start on must not scan the damage:
					// the index points past it.
					seg.index = append(seg.index, indexEntry{offset: next, pos: at})
					sc = newScanner(seg.f, at, size, l.scanBuf[:n])
					continue
				}
			}
			seg.size = pos
			return pos, err, nil
		}
		seg.noteFrame(h.offset, pos)
		l.epochs.add(h.epoch, h.offset)
		seg.end++
	}
}

// resync finds in seg, from file position from on, the first valid frame
// that scanSegment can go on with past a bad frame of record seg.end, below
// the log start: a record after seg.end, at or below the start, whose epoch
// fits (not below the epoch history's last, not above the start's if it
// is below the start, not below it if it is the start's record). It checks
// every byte position, the header first; a frame's CRC-32C, over its
// header and payload, makes a false match at a position that is not a
// frame as unlikely as a flip the CRC misses. found is false if there is
// none before size.
func (l *FileLog) resync(seg *segment, from, size int64, start kraft.LogEnd) (at, offset int64, found bool, err error) {
	buf := make([]byte, 64<<10)
	var frame []byte
	for base := from; base+FrameOverhead <= size; {
		n := int64(len(buf))
		if size-base < n {
			n = size - base
		}
		if _, err := seg.f.ReadAt(buf[:n], base); err != nil && !errors.Is(err, io.EOF) {
			return 0, 0, false, fmt.Errorf("storage: reading %s: %w", seg.path, err)
		}
		stop := int(n) - FrameOverhead
		for i := 0; i <= stop; i++ {
			if buf[i+4] != frameMagic {
				continue
			}
			h, err := parseHeader(buf[i:])
			switch {
			case err != nil, h.offset <= seg.end, h.offset > start.Offset, h.epoch < l.epochs.last(),
				h.offset < start.Offset && h.epoch > start.Epoch, h.offset == start.Offset && h.epoch < start.Epoch,
				base+int64(i)+int64(h.size()) > size:
				continue
			}
			b := buf[i:]
			if len(b) < h.size() {
				if cap(frame) < h.size() {
					frame = make([]byte, h.size())
				}
				b = frame[:h.size()]
				if _, err := seg.f.ReadAt(b, base+int64(i)); err != nil && !errors.Is(err, io.EOF) {
					return 0, 0, false, fmt.Errorf("storage: reading %s: %w", seg.path, err)
				}
			}
			if _, _, err := decodeFrame(b); err == nil {
				return base + int64(i), h.offset, true, nil
			}
		}
		base += int64(stop + 1)
	}
	return 0, 0, false, nil
}
