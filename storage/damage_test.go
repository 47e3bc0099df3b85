package storage

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

// flipByte flips the bits of one byte of a file.
func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[at] ^= 0xff
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// appendMore appends n records of 30 bytes in the log's last epoch.
func appendMore(t *testing.T, l *FileLog, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		_, err := l.Append(l.End().Epoch, make([]byte, 30))
		require.NoError(t, err)
	}
}

// damageOf opens dir and requires Open to refuse it with a DamageError,
// changing no file.
func damageOf(t *testing.T, dir string, segBytes int64) *DamageError {
	t.Helper()
	before := dirContents(t, dir)
	l, _, err := Open(dir, Options{SegmentBytes: segBytes})
	require.Nil(t, l)
	var d *DamageError
	require.True(t, errors.As(err, &d), "want a DamageError, got %v", err)
	require.ErrorIs(t, err, ErrDamaged)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, before, dirContents(t, dir), "a refused Open changes no file")
	return d
}

// TestDamageIsNotATornTail is the storage side of the reproduction in the
// issue: 50 records synced (acknowledged), one byte flipped in the middle
// of the only segment. The log used to cut everything from there as a torn
// tail; it must report the records lost instead, refuse to open, and with
// TruncateDamage open cut at the damage, keep reporting the loss on every
// Open until the records are back, synced.
func TestDamageIsNotATornTail(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 0)
	want := fillLog(t, l, 50) // 51-byte frames, epochs 1 to 8
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	seg := filepath.Join(dir, segmentName(0))
	flipByte(t, seg, 1000)
	hit := int64(1000 / (FrameOverhead + 30)) // record 19

	d := damageOf(t, dir, 0)
	require.Equal(t, dir, d.Dir)
	require.Equal(t, hit, d.From)
	require.Equal(t, int64(50), d.To)
	require.Equal(t, want[49].Epoch, d.Epoch)
	require.Contains(t, d.Error(), "records 19 to 50 (excluded) were synced and are lost")
	require.Contains(t, d.Error(), seg)

	l, rec, err := Open(dir, Options{TruncateDamage: true})
	require.NoError(t, err)
	require.Equal(t, d, rec.Damage)
	require.Zero(t, rec.DroppedBytes, "not a torn tail")
	require.Equal(t, int64(50), rec.RecoveryPoint)
	require.Equal(t, want[49].Epoch, rec.SyncedEpoch, "the epoch of the lost records counts")
	require.Equal(t, normalize(want[:hit]), normalize(readAll(t, l)))
	require.Equal(t, stateOf(want[:hit]), l.State())
	// Some of the lost records come back, synced: the rest is still lost.
	_, err = l.AppendEntries(want[hit : hit+10]...)
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())

	d = damageOf(t, dir, 0)
	require.Equal(t, hit+10, d.From)
	require.Equal(t, int64(50), d.To)
	require.Contains(t, d.Cause, "an earlier Open found")

	l, rec, err = Open(dir, Options{TruncateDamage: true})
	require.NoError(t, err)
	require.Equal(t, d, rec.Damage)
	_, err = l.AppendEntries(want[hit+10:]...)
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())

	l, rec = reopen(t, dir, 0)
	require.Nil(t, rec.Damage, "every lost record is back")
	require.Equal(t, normalize(want), normalize(readAll(t, l)))
}

// TestTornTailPastTheRecoveryPoint: a bad tail past the last Sync is a
// torn tail, cut silently as before, whatever the damage.
func TestTornTailPastTheRecoveryPoint(t *testing.T) {
	frame := int64(FrameOverhead + 30)
	for _, c := range []struct {
		name   string
		damage func(path string)
	}{
		{"flipped byte", func(p string) { flipByte(t, p, 12*frame+25) }},
		{"cut short", func(p string) { require.NoError(t, os.Truncate(p, 12*frame+25)) }},
		{"zeros", func(p string) {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			copy(b[12*frame:], make([]byte, 3*frame))
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}},
	} {
		dir := t.TempDir()
		l, _, err := Open(dir, Options{})
		require.NoError(t, err)
		want := fillLog(t, l, 10)
		require.NoError(t, l.Sync())
		appendMore(t, l, 5)
		require.NoError(t, l.Close()) // not synced: past the recovery point
		c.damage(filepath.Join(dir, segmentName(0)))

		l, rec, err := Open(dir, Options{})
		require.NoError(t, err, c.name)
		require.Nil(t, rec.Damage, c.name)
		require.Positive(t, rec.DroppedBytes, c.name)
		require.Equal(t, int64(10), rec.RecoveryPoint, c.name)
		require.Equal(t, int64(12), rec.Records, c.name)
		require.Equal(t, normalize(want), normalize(readAll(t, l)[:10]), c.name)
		require.NoError(t, l.Close())
	}
}

// TestEveryFlipBelowTheRecoveryPointIsDamage flips each byte of a synced
// log in turn, in the last segment and in one before it: every flip is
// reported as damage, from the record it hit to the recovery point, never
// cut as a torn tail.
func TestEveryFlipBelowTheRecoveryPointIsDamage(t *testing.T) {
	src := t.TempDir()
	l, _ := reopen(t, src, 204) // 4 frames of 51 bytes a segment
	fillLog(t, l, 10)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	frame := int64(FrameOverhead + 30)
	for _, base := range []int64{4, 8} { // a segment before the last; the last
		for at := int64(0); at < 4*frame && base+at/frame < 10; at++ {
			dir := t.TempDir()
			for name, content := range dirContents(t, src) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
			}
			flipByte(t, filepath.Join(dir, segmentName(base)), at)
			d := damageOf(t, dir, 204)
			name := fmt.Sprintf("segment %d byte %d", base, at)
			require.Equal(t, base+at/frame, d.From, name)
			require.Equal(t, int64(10), d.To, name)
		}
	}
}

// TestLostSegmentTailIsDamage: a last segment shorter than the recovery
// point says (a lost write, a truncated file) is damage.
func TestLostSegmentTailIsDamage(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 0)
	fillLog(t, l, 10)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	require.NoError(t, os.Truncate(filepath.Join(dir, segmentName(0)), 7*int64(FrameOverhead+30)))
	d := damageOf(t, dir, 0)
	require.Equal(t, [2]int64{7, 10}, [2]int64{d.From, d.To})
}

// TestTruncateLowersTheRecoveryPoint: after Truncate, records appended and
// not synced are a torn tail again, though offsets below the old
// recovery point.
func TestTruncateLowersTheRecoveryPoint(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 0)
	fillLog(t, l, 10)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Truncate(4))
	_, err := l.Append(9, []byte("a"), []byte("b"), []byte("c"))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.NoError(t, os.Truncate(filepath.Join(dir, segmentName(0)), 5*int64(FrameOverhead+30)+3))
	l, rec, err := Open(dir, Options{})
	require.NoError(t, err)
	require.Nil(t, rec.Damage)
	require.Equal(t, int64(4), rec.RecoveryPoint)
	require.Equal(t, int64(6), rec.Records, "4 records, a and b")
	require.Equal(t, kraft.LogEnd{Offset: 6, Epoch: 9}, l.End())
}

// TestRecoveryPointFileDamage flips each byte of the recovery point file:
// a flip in one slot makes Open fall back to the other (never to a claim
// above what was synced); the file with both slots damaged, or of the wrong
// size, is damage with an unknown extent. A missing file claims nothing (a
// log from before the file existed).
func TestRecoveryPointFileDamage(t *testing.T) {
	src := t.TempDir()
	l, _ := reopen(t, src, 0)
	fillLog(t, l, 10)
	require.NoError(t, l.Sync()) // slot 1: 10 records
	appendMore(t, l, 10)
	require.NoError(t, l.Sync()) // slot 0: 20, slot 1: 10
	require.NoError(t, l.Close())
	copyDir := func() string {
		dir := t.TempDir()
		for name, content := range dirContents(t, src) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
		}
		return dir
	}
	var bytes []int64 // each byte of both slots' content, and some padding
	for at := int64(0); at < recoveryPointBytes+8; at++ {
		bytes = append(bytes, at, recoveryPointSlotSize+at)
	}
	bytes = append(bytes, 300, recoveryPointFileSize-1)
	for _, at := range bytes {
		dir := copyDir()
		flipByte(t, filepath.Join(dir, RecoveryPointFileName), at)
		l, rec, err := Open(dir, Options{})
		require.NoError(t, err, "byte %d", at)
		switch {
		case at < recoveryPointBytes: // slot 0, the newer
			require.Equal(t, int64(10), rec.RecoveryPoint, "byte %d: the other slot", at)
		default:
			require.Equal(t, int64(20), rec.RecoveryPoint, "byte %d", at)
		}
		require.Equal(t, int64(20), rec.Records)
		require.NoError(t, l.Close())
	}

	dir := copyDir()
	path := filepath.Join(dir, RecoveryPointFileName)
	flipByte(t, path, 20)
	flipByte(t, path, recoveryPointSlotSize+20)
	d := damageOf(t, dir, 0)
	require.Equal(t, [2]int64{20, -1}, [2]int64{d.From, d.To})
	require.Contains(t, d.Error(), "both slots fail their checksum")
	require.Contains(t, d.Error(), "how many is unknown")

	dir = copyDir()
	require.NoError(t, os.Truncate(filepath.Join(dir, RecoveryPointFileName), 0))
	d = damageOf(t, dir, 0)
	require.Equal(t, int64(-1), d.To)

	dir = copyDir()
	require.NoError(t, os.Remove(filepath.Join(dir, RecoveryPointFileName)))
	require.NoError(t, os.Truncate(filepath.Join(dir, segmentName(0)), 100))
	l, rec, err := Open(dir, Options{})
	require.NoError(t, err)
	require.Equal(t, Recovery{Segments: 1, Records: 1, DroppedBytes: 100 - 51, Cause: rec.Cause, SyncedEpoch: 1}, rec)
	require.NoError(t, l.Close())
}

// TestTruncateDamageAcrossTheLogStart: damage that starts in the records a
// segment still holds below the log start and goes on past the start (a
// lost write of records 2 to 7, the start at 6) leaves no readable record
// from the start on; TruncateDamage empties the log at its start. (Damage
// below the start alone is no loss: D104, TestFlipBelowTheLogStartIsNotALoss.)
func TestTruncateDamageAcrossTheLogStart(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 0)
	want := fillLog(t, l, 10)
	require.NoError(t, l.Sync())
	require.NoError(t, l.DeleteBefore(6))
	require.NoError(t, l.Close())
	seg := filepath.Join(dir, segmentName(0))
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	frame := int64(FrameOverhead + 30)
	copy(b[2*frame:], make([]byte, 6*frame))
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	d := damageOf(t, dir, 0)
	require.Equal(t, int64(10), d.To)
	l, rec, err := Open(dir, Options{TruncateDamage: true})
	require.NoError(t, err)
	require.Equal(t, int64(6), rec.Damage.From)
	start := kraft.LogEnd{Offset: 6, Epoch: want[5].Epoch}
	require.Equal(t, start, l.Start())
	require.Equal(t, start, l.End())
	require.NoError(t, l.Close())
	d = damageOf(t, dir, 0)
	require.Equal(t, [2]int64{6, 10}, [2]int64{d.From, d.To})
}

// TestFlipAfterCrashIsDamage runs the crash workload to random points,
// crashes, recovers (Open makes the whole log durable), then flips a random
// byte of a random segment: Open must report the damage, from a record at
// or before the one hit; or, if the byte is in a record below the log
// start, skip it and open the log as it was (D104).
func TestFlipAfterCrashIsDamage(t *testing.T) {
	base := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	belowStart := 0
	defer func() { t.Logf("%d of 60 flips below the log start", belowStart) }()
	for run := 0; run < 60; run++ {
		dir := filepath.Join(base, fmt.Sprintf("run-%d", run))
		require.NoError(t, os.Mkdir(dir, 0o755))
		cfs, err := newCrashFS(5+rng.Intn(150), int64(run), dir)
		require.NoError(t, err)
		l, _ := runCrashWorkload(dir, cfs, int64(run%5))
		if l != nil {
			_ = l.Close()
		}
		require.NoError(t, cfs.crash(dir))
		l, _, err = Open(dir, Options{SegmentBytes: crashSegmentBytes})
		require.NoError(t, err, "run %d: a crash is not damage", run)
		end, start := l.End().Offset, l.StartOffset()
		want := readAll(t, l)
		require.NoError(t, l.Close())
		var nonEmpty []string
		for _, s := range segmentFiles(t, dir) {
			if st, err := os.Stat(filepath.Join(dir, s)); err == nil && st.Size() > 0 {
				nonEmpty = append(nonEmpty, s)
			}
		}
		if len(nonEmpty) == 0 {
			continue
		}
		seg := nonEmpty[rng.Intn(len(nonEmpty))]
		st, err := os.Stat(filepath.Join(dir, seg))
		require.NoError(t, err)
		segBase, _ := parseSegmentName(seg)
		at := rng.Int63n(st.Size())
		startPos := framePos(t, filepath.Join(dir, seg), start)
		flipByte(t, filepath.Join(dir, seg), at)
		if at < startPos {
			l, rec, err := Open(dir, Options{SegmentBytes: crashSegmentBytes})
			require.NoError(t, err, "run %d: damage below the log start %d is no loss", run, start)
			require.Positive(t, rec.SkippedBytes, "run %d", run)
			require.Equal(t, normalize(want), normalize(readAll(t, l)), "run %d", run)
			require.NoError(t, l.Close())
			belowStart++
			continue
		}
		d := damageOf(t, dir, crashSegmentBytes)
		require.GreaterOrEqual(t, d.From, segBase, "run %d", run)
		require.Equal(t, end, d.To, "run %d", run)
	}
}

// TestLogStartFlipIsDamage flips each byte of the log start checkpoint:
// Open refuses the log as damaged, never takes another start.
func TestLogStartFlipIsDamage(t *testing.T) {
	src := t.TempDir()
	l, _ := reopen(t, src, 0)
	fillLog(t, l, 20)
	require.NoError(t, l.Sync())
	require.NoError(t, l.DeleteBefore(15))
	require.NoError(t, l.Close())
	good, err := os.ReadFile(filepath.Join(src, LogStartFileName))
	require.NoError(t, err)
	for at := range good {
		dir := t.TempDir()
		for name, content := range dirContents(t, src) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
		}
		flipByte(t, filepath.Join(dir, LogStartFileName), int64(at))
		l, _, err := Open(dir, Options{TruncateDamage: true})
		require.Nil(t, l)
		require.ErrorIs(t, err, ErrDamaged, "byte %d", at)
		require.ErrorContains(t, err, "log start checkpoint")
	}
}

// framePos is the file position of the frame of offset in the segment file
// at path, read frame by frame from its start (its size if the segment
// ends before offset).
func framePos(t *testing.T, path string, offset int64) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pos := int64(0)
	for pos < int64(len(b)) {
		h, _, err := decodeFrame(b[pos:])
		require.NoError(t, err)
		if h.offset >= offset {
			break
		}
		pos += int64(h.size())
	}
	return pos
}
