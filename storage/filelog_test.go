package storage

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

// fillLog appends n records of 30 bytes to l, the epoch rising every 7.
func fillLog(t *testing.T, l Log, n int) []Entry {
	t.Helper()
	var es []Entry
	for i := 0; i < n; i++ {
		ep := kraft.Epoch(1 + i/7)
		data := bytes.Repeat([]byte{byte(i)}, 30)
		_, err := l.Append(ep, data)
		require.NoError(t, err)
		es = append(es, Entry{Offset: int64(i), Epoch: ep, Data: data})
	}
	return es
}

func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := readDirNames(dir)
	require.NoError(t, err)
	var segs []string
	for _, n := range names {
		if _, ok := parseSegmentName(n); ok {
			segs = append(segs, n)
		}
	}
	sort.Strings(segs)
	return segs
}

// dirContents maps the names of the files in dir to their contents.
func dirContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := readDirNames(dir)
	require.NoError(t, err)
	m := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		require.NoError(t, err)
		m[n] = string(b)
	}
	return m
}

func reopen(t *testing.T, dir string, segBytes int64) (*FileLog, Recovery) {
	t.Helper()
	l, rec, err := Open(dir, Options{SegmentBytes: segBytes})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, rec
}

func TestFileLogSegmentsAndReopen(t *testing.T) {
	dir := t.TempDir()
	l, rec := reopen(t, dir, 204)
	require.Equal(t, Recovery{Segments: 1}, rec)
	want := fillLog(t, l, 40) // 51 bytes a frame, 4 frames a segment of 204 bytes
	require.NoError(t, l.Sync())
	state := l.State()
	require.NoError(t, l.Close())

	segs := segmentFiles(t, dir)
	require.Len(t, segs, 10)
	for i, name := range segs {
		base, ok := parseSegmentName(name)
		require.True(t, ok)
		require.Equal(t, int64(4*i), base)
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, int64(4*(FrameOverhead+30)), st.Size())
	}
	require.Equal(t, "00000000000000000000.log", segs[0])
	require.Equal(t, "00000000000000000036.log", segs[9])

	l, rec = reopen(t, dir, 204)
	require.Equal(t, Recovery{Segments: 10, Records: 40, RecoveryPoint: 40, SyncedEpoch: 6}, rec)
	require.Equal(t, normalize(want), normalize(readAll(t, l)))
	require.Equal(t, state, l.State())
	require.Equal(t, stateOf(want), l.State())
	require.Equal(t, int64(40), l.Flushed())
	for _, e := range want {
		ep, ok := l.EpochFor(e.Offset)
		require.True(t, ok)
		require.Equal(t, e.Epoch, ep)
	}

	// A batch larger than a segment goes whole into a new one.
	big := make([][]byte, 10)
	for i := range big {
		big[i] = bytes.Repeat([]byte{'b'}, 30)
	}
	_, err := l.Append(9, big...)
	require.NoError(t, err)
	require.Len(t, segmentFiles(t, dir), 11)
}

func TestFileLogIgnoresOtherFilesAndCreatesDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	l, _ := reopen(t, dir, 0)
	fillLog(t, l, 3)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	require.Equal(t, dir, l.Dir())
	for _, name := range []string{QuorumStateFileName, "notes.txt", "1.log", "0000000000000000000x.log", "00000000000000000000.index"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644))
	}
	l, rec := reopen(t, dir, 0)
	require.Equal(t, Recovery{Segments: 1, Records: 3, RecoveryPoint: 3, SyncedEpoch: 1}, rec)
	require.Equal(t, kraft.LogEnd{Offset: 3, Epoch: 1}, l.End())
}

func TestParseSegmentName(t *testing.T) {
	for name, want := range map[string]int64{
		"00000000000000000000.log": 0,
		"00000000000000001234.log": 1234,
		"09223372036854775807.log": 1<<63 - 1,
	} {
		got, ok := parseSegmentName(name)
		require.True(t, ok, name)
		require.Equal(t, want, got)
		require.Equal(t, name, segmentName(got))
	}
	for _, name := range []string{"09223372036854775808.log", "99999999999999999999.log", "0000000000000000000.log", "-0000000000000000001.log", "00000000000000000000.lo"} {
		_, ok := parseSegmentName(name)
		require.False(t, ok, name)
	}
}

// TestFileLogTornTail cuts the last segment at every byte of its last two
// frames, as a crash during a write can: the log reopens with the whole
// frames before the cut, reports the rest as dropped, and cuts the file.
func TestFileLogTornTail(t *testing.T) {
	src := t.TempDir()
	l, _ := reopen(t, src, 300)
	want := fillLog(t, l, 9)
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	segs := segmentFiles(t, src)
	last := segs[len(segs)-1]
	content, err := os.ReadFile(filepath.Join(src, last))
	require.NoError(t, err)
	lastBase, _ := parseSegmentName(last)
	frame := FrameOverhead + 30
	require.Len(t, content, frame*int(9-lastBase))

	for cut := len(content) - 2*frame; cut < len(content); cut++ {
		dir := t.TempDir()
		for _, name := range segs {
			b, err := os.ReadFile(filepath.Join(src, name))
			require.NoError(t, err)
			if name == last {
				b = b[:cut]
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
		}
		l, rec := reopen(t, dir, 300)
		whole := cut / frame
		kept := int(lastBase) + whole
		require.Equal(t, int64(cut-whole*frame), rec.DroppedBytes, "cut %d", cut)
		require.Equal(t, rec.DroppedBytes > 0, rec.Cause != "", "cut %d", cut)
		require.Equal(t, int64(kept), rec.Records)
		require.Equal(t, normalize(want[:kept]), normalize(readAll(t, l)), "cut %d", cut)
		require.Equal(t, stateOf(want[:kept]), l.State())
		st, err := os.Stat(filepath.Join(dir, last))
		require.NoError(t, err)
		require.Equal(t, int64(whole*frame), st.Size(), "the torn bytes are gone from the file")
		require.NoError(t, l.Close())

		_, rec = reopen(t, dir, 300)
		require.Zero(t, rec.DroppedBytes)
	}
}

// TestFileLogDamagedTail: garbage, zeros, a changed byte, or a valid frame
// out of sequence at the end of the last segment, past the recovery point,
// is cut off.
func TestFileLogDamagedTail(t *testing.T) {
	frame := FrameOverhead + 30
	cases := map[string]struct {
		damage func(b []byte) []byte
		kept   int
	}{
		"garbage appended": {func(b []byte) []byte { return append(b, "garbage!"...) }, 5},
		"zeros appended":   {func(b []byte) []byte { return append(b, make([]byte, 4096)...) }, 5},
		"payload byte":     {func(b []byte) []byte { b[3*frame+FrameOverhead+4] ^= 1; return b }, 3},
		"crc byte":         {func(b []byte) []byte { b[4*frame] ^= 0x10; return b }, 4},
		"length byte":      {func(b []byte) []byte { b[2*frame+7] ^= 0x40; return b }, 2},
		"offset repeated":  {func(b []byte) []byte { return appendFrame(b, 4, 5, nil) }, 5},
		"offset skipped":   {func(b []byte) []byte { return appendFrame(b, 6, 5, nil) }, 5},
		"epoch regression": {func(b []byte) []byte { return appendFrame(b, 5, 0, nil) }, 5},
	}
	for name, c := range cases {
		dir := t.TempDir()
		l, _ := reopen(t, dir, 0)
		want := fillLog(t, l, 5) // not synced: the recovery point claims none
		require.NoError(t, l.Close())
		path := filepath.Join(dir, segmentName(0))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, c.damage(b), 0o644))

		l, rec := reopen(t, dir, 0)
		require.Equal(t, normalize(want[:c.kept]), normalize(readAll(t, l)), name)
		require.Positive(t, rec.DroppedBytes, name)
		require.Contains(t, rec.Cause, path, name)
		require.Equal(t, stateOf(want[:c.kept]), l.State(), name)
	}
}

// TestFileLogCorruptionBeforeTheTail: damage to any segment but the last,
// or segments that do not follow each other, is an error, not a cut.
func TestFileLogCorruptionBeforeTheTail(t *testing.T) {
	build := func() string {
		dir := t.TempDir()
		l, _ := reopen(t, dir, 204)
		fillLog(t, l, 20)
		require.NoError(t, l.Sync())
		require.NoError(t, l.Close())
		require.Len(t, segmentFiles(t, dir), 5)
		return dir
	}
	damage := map[string]func(dir string){
		"flipped byte in segment 1": func(dir string) {
			p := filepath.Join(dir, segmentName(4))
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[60] ^= 0xff
			require.NoError(t, os.WriteFile(p, b, 0o644))
		},
		"short segment 2": func(dir string) {
			require.NoError(t, os.Truncate(filepath.Join(dir, segmentName(8)), 100))
		},
		"missing segment 3": func(dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, segmentName(12))))
		},
		"missing first segment": func(dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, segmentName(0))))
		},
	}
	for name, f := range damage {
		dir := build()
		f(dir)
		before := dirContents(t, dir)
		l, _, err := Open(dir, Options{SegmentBytes: 204})
		require.ErrorIs(t, err, ErrCorrupt, name)
		require.ErrorContains(t, err, dir, name)
		require.Nil(t, l)
		require.Equal(t, before, dirContents(t, dir), "%s: a failed Open changes no file", name)
	}
}

// TestFileLogReadChecksCRC: a record changed on disk after the log was
// opened is an error when read.
func TestFileLogReadChecksCRC(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 0)
	fillLog(t, l, 5)
	require.NoError(t, l.Sync())
	p := filepath.Join(dir, segmentName(0))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[2*(FrameOverhead+30)+FrameOverhead] ^= 1
	require.NoError(t, os.WriteFile(p, b, 0o644))
	_, err = l.Read(0, 1000)
	require.ErrorIs(t, err, ErrCorrupt)
	es, err := l.Read(0, 40)
	require.NoError(t, err, "the records before it still read")
	require.Len(t, es, 1)
}

// TestFileLogIndexedReads reads and truncates at every offset of a log of
// many small records, whose segments have many index entries.
func TestFileLogIndexedReads(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 64<<10)
	want := fillLog(t, l, 3000)
	require.NoError(t, l.Sync())
	require.Greater(t, len(l.segs[0].index), 10)
	for _, from := range []int64{0, 1, 80, 81, 1284, 1285, 2999} {
		es, err := l.Read(from, 0)
		require.NoError(t, err)
		require.Equal(t, normalize(want[from:from+1]), normalize(es))
		es, err = l.Read(from, 5000)
		require.NoError(t, err)
		n := int64(5000 / 30)
		if from+n > 3000 {
			n = 3000 - from
		}
		require.Equal(t, normalize(want[from:from+n]), normalize(es))
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		to := rng.Int63n(int64(len(want)) + 1)
		require.NoError(t, l.Truncate(to))
		want = want[:to]
		require.Equal(t, normalize(want), normalize(readAll(t, l)))
	}
	require.NoError(t, l.Close())
	l, _ = reopen(t, dir, 64<<10)
	require.Equal(t, normalize(want), normalize(readAll(t, l)))
	require.Equal(t, stateOf(want), l.State())
}

// TestFileLogTruncateRemovesSegments: the files of the removed records go.
func TestFileLogTruncateRemovesSegments(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 204)
	want := fillLog(t, l, 20)
	require.NoError(t, l.Truncate(9))
	require.Equal(t, []string{segmentName(0), segmentName(4), segmentName(8)}, segmentFiles(t, dir))
	require.NoError(t, l.Truncate(8))
	require.Equal(t, []string{segmentName(0), segmentName(4), segmentName(8)}, segmentFiles(t, dir))
	st, err := os.Stat(filepath.Join(dir, segmentName(8)))
	require.NoError(t, err)
	require.Zero(t, st.Size())
	_, err = l.Append(3, []byte("x"))
	require.NoError(t, err)
	want = append(want[:8], Entry{Offset: 8, Epoch: 3, Data: []byte("x")})
	require.NoError(t, l.Truncate(0))
	require.Equal(t, []string{segmentName(0)}, segmentFiles(t, dir))
	require.NoError(t, l.Close())
	l, rec := reopen(t, dir, 204)
	require.Equal(t, Recovery{Segments: 1}, rec)
	require.Empty(t, readAll(t, l))
	_ = want
}

// TestFileLogLargeRecords: records larger than the read and recovery
// buffers.
func TestFileLogLargeRecords(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 0)
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB
	_, err := l.Append(1, []byte("small"), big, []byte("small"))
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	es, err := l.Read(1, 10)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, big, es[0].Data)
	require.NoError(t, l.Close())
	l, rec := reopen(t, dir, 0)
	require.Equal(t, int64(3), rec.Records)
	es, err = l.Read(0, len(big)+9)
	require.NoError(t, err)
	require.Len(t, es, 2)
	require.Equal(t, big, es[1].Data)
}

// TestFileLogFailureIsSticky: after a write or an fsync fails, the log
// refuses to go on, and reopening recovers.
func TestFileLogFailureIsSticky(t *testing.T) {
	counter, err := newCrashFS(-1, 1, t.TempDir())
	require.NoError(t, err)
	l, _, err := Open(t.TempDir(), Options{FS: counter})
	require.NoError(t, err)
	require.NoError(t, l.Close())
	opened := counter.ops // Open's operations; then the write, the fsync
	for _, budget := range []int{opened, opened + 1} {
		dir := t.TempDir()
		cfs, err := newCrashFS(budget, 1, dir)
		require.NoError(t, err)
		l, _, err := Open(dir, Options{FS: cfs})
		require.NoError(t, err)
		_, err = l.Append(1, []byte("a"))
		if budget == opened+1 {
			require.NoError(t, err)
			err = l.Sync()
		}
		require.ErrorIs(t, err, errCrashed)
		_, err = l.Append(1, []byte("b"))
		require.ErrorContains(t, err, "failed earlier")
		require.ErrorIs(t, err, errCrashed)
		require.ErrorIs(t, l.Sync(), errCrashed)
		require.ErrorIs(t, l.Truncate(0), errCrashed)
		_, err = l.Read(0, 10)
		require.ErrorIs(t, err, errCrashed)
		_ = l.Close()
	}

	// Open fails cleanly at each of its operations.
	for budget := 0; budget < 3; budget++ {
		dir := t.TempDir()
		cfs, err := newCrashFS(budget, 1, dir)
		require.NoError(t, err)
		_, _, err = Open(dir, Options{FS: cfs})
		require.ErrorIs(t, err, errCrashed, "budget %d", budget)
	}
}

// TestFileLogAppendDuringSync: a record appended while an fsync is under
// way is not counted as flushed by it.
func TestFileLogAppendDuringSync(t *testing.T) {
	dir := t.TempDir()
	cfs, err := newCrashFS(-1, 1, dir)
	require.NoError(t, err)
	l, _, err := Open(dir, Options{FS: cfs})
	require.NoError(t, err)
	_, err = l.Append(1, []byte("a"))
	require.NoError(t, err)
	appended := false
	cfs.beforeSync = func() {
		if !appended {
			appended = true
			_, err := l.Append(1, []byte("b"))
			require.NoError(t, err)
		}
	}
	require.NoError(t, l.Sync())
	require.True(t, appended)
	require.Equal(t, int64(1), l.Flushed())
	require.Equal(t, int64(2), l.End().Offset)
	require.NoError(t, l.Sync())
	require.Equal(t, int64(2), l.Flushed())
	require.NoError(t, l.Close())
}

// TestFileLogReadAllocatesWhatItReturns: a Read copies the payloads it
// returns into chunks sized to what the segment holds from the first
// record on, not 64 KiB each time: reading the last 101-byte record (as
// the runtime does for each commit, several times) allocates its entry
// and its payload, a few hundred bytes, and two allocations; a read of
// 16 records of 1 KiB about their size.
func TestFileLogReadAllocatesWhatItReturns(t *testing.T) {
	l, _, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, l.Close()) }()
	for i := 0; i < 200; i++ {
		_, err := l.Append(1, make([]byte, 101))
		require.NoError(t, err)
	}
	last := l.End().Offset - 1
	read := func(from int64, n int) {
		es, err := l.Read(from, 8<<20)
		if err != nil || len(es) != n {
			t.Fatalf("read %d: %d entries, %v", from, len(es), err)
		}
	}
	read(last, 1) // the scanning buffer is the log's, allocated once
	require.LessOrEqual(t, testing.AllocsPerRun(100, func() { read(last, 1) }), 2.0)
	require.LessOrEqual(t, bytesPerRun(100, func() { read(last, 1) }), uint64(512), "bytes allocated to read one 101-byte record")

	for i := 0; i < 16; i++ {
		_, err := l.Append(1, make([]byte, 1024))
		require.NoError(t, err)
	}
	from := l.End().Offset - 16
	read(from, 16)
	require.LessOrEqual(t, bytesPerRun(100, func() { read(from, 16) }), uint64(16*1024+4096), "bytes allocated to read 16 KiB of records")
}

// bytesPerRun is the average number of bytes f allocates, as
// testing.AllocsPerRun counts allocations.
func bytesPerRun(runs int, f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < runs; i++ {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(runs)
}

// TestFileLogKeepsNoLargeScanBuffer: a FileLog keeps at most readScanBuffer
// (64 KiB) of scanning buffer for Read, however much a Read asks for, and
// nothing of the recovery scan's buffer once it is open (D182); a record
// larger than the buffer still reads whole.
func TestFileLogKeepsNoLargeScanBuffer(t *testing.T) {
	dir := t.TempDir()
	l, _, err := Open(dir, Options{})
	require.NoError(t, err)
	small := bytes.Repeat([]byte{7}, 1000)
	large := bytes.Repeat([]byte{9}, 300<<10)
	for i := 0; i < 2000; i++ {
		_, err = l.Append(1, small)
		require.NoError(t, err)
	}
	_, err = l.Append(1, large)
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	entries, err := l.Read(0, 8<<20)
	require.NoError(t, err)
	require.Len(t, entries, 2001)
	require.Equal(t, large, entries[2000].Data)
	require.LessOrEqual(t, cap(l.rbuf), 64<<10, "Read keeps a larger buffer")
	require.NoError(t, l.Close())

	// Reopened: the recovery scan read a segment of 2.3 MiB.
	l, _, err = Open(dir, Options{})
	require.NoError(t, err)
	defer l.Close()
	require.Nil(t, l.scanBuf, "the recovery scan's buffer is kept")
	require.LessOrEqual(t, cap(l.rbuf), 64<<10, "the recovery scan's buffer became Read's")
	entries, err = l.Read(1999, 8<<20)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	require.Equal(t, large, entries[1].Data)
}
