package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

// tenRecords appends records 0..9 in epochs 1 1 1 1 2 2 2 2 3 3 and syncs
// the first sync of them.
func tenRecords(t *testing.T, l Log, sync int) []Entry {
	t.Helper()
	var all []Entry
	for i := 0; i < 10; i++ {
		ep := kraft.Epoch(1 + i/4)
		_, err := l.Append(ep, rec(i))
		require.NoError(t, err)
		all = append(all, Entry{Offset: int64(i), Epoch: ep, Data: rec(i)})
		if i+1 == sync {
			require.NoError(t, l.Sync())
		}
	}
	return all
}

// TestLogDeleteBefore deletes the records below each offset of a log in
// turn (the file log's segments hold three records: 0-2, 3-5, 6-8, 9, so
// this deletes on segment boundaries and inside segments).
func TestLogDeleteBefore(t *testing.T) {
	for name, open := range logKinds(t) {
		for x := int64(0); x <= 10; x++ {
			l := open()
			all := tenRecords(t, l, 2)
			require.NoError(t, l.DeleteBefore(x), "%s: before %d", name, x)
			start := kraft.LogEnd{Offset: x}
			if x > 0 {
				start.Epoch = all[x-1].Epoch
			}
			keep := all[x:]
			msg := []interface{}{"%s: before %d", name, x}
			require.Equal(t, x, l.StartOffset(), msg...)
			require.Equal(t, start, l.Start(), msg...)
			require.GreaterOrEqual(t, l.Flushed(), x, "%s: the records below the start are durable", name)
			require.Equal(t, normalize(keep), normalize(readAll(t, l)), msg...)
			require.Equal(t, stateFrom(start, keep), l.State(), msg...)
			require.Equal(t, stateFrom(start, keep).End, l.End(), msg...)
			if x > 0 {
				_, err := l.Read(x-1, 100)
				require.ErrorIs(t, err, ErrBelowStart, msg...)
				_, err = l.Read(0, 100)
				require.ErrorIs(t, err, ErrBelowStart, msg...)
				require.ErrorIs(t, l.Truncate(x-1), ErrBelowStart, msg...)
				_, ok := l.EpochFor(x - 1)
				require.False(t, ok, msg...)
			}
			for _, e := range keep {
				ep, ok := l.EpochFor(e.Offset)
				require.True(t, ok, msg...)
				require.Equal(t, e.Epoch, ep, msg...)
			}
			_, err := l.Read(11, 100)
			require.ErrorIs(t, err, ErrOutOfRange, msg...)

			// Deleting below the start again changes nothing; past the end
			// is an error.
			require.NoError(t, l.DeleteBefore(x-1), msg...)
			require.NoError(t, l.DeleteBefore(x), msg...)
			require.Equal(t, x, l.StartOffset(), msg...)
			require.ErrorIs(t, l.DeleteBefore(11), ErrOutOfRange, msg...)

			// Appends go on; a truncation to the start empties the log and
			// leaves the start's epoch as the end's.
			_, err = l.Append(3, rec(10))
			require.NoError(t, err, msg...)
			keep = append(append([]Entry(nil), keep...), Entry{Offset: 10, Epoch: 3, Data: rec(10)})
			require.Equal(t, normalize(keep), normalize(readAll(t, l)), msg...)
			require.Equal(t, stateFrom(start, keep), l.State(), msg...)
			require.NoError(t, l.Truncate(x), msg...)
			require.Equal(t, start, l.End(), msg...)
			require.Equal(t, kraft.LogState{End: start, Start: start.Offset}, l.State(), msg...)
			require.Equal(t, x, l.Flushed(), msg...)
		}
	}
}

// TestLogDeleteBeforeStepByStep moves the start up a record at a time.
func TestLogDeleteBeforeStepByStep(t *testing.T) {
	for name, open := range logKinds(t) {
		l := open()
		all := tenRecords(t, l, 10)
		for x := int64(1); x <= 10; x++ {
			require.NoError(t, l.DeleteBefore(x), name)
			require.Equal(t, stateFrom(kraft.LogEnd{Offset: x, Epoch: all[x-1].Epoch}, all[x:]), l.State(), "%s: before %d", name, x)
			require.Equal(t, normalize(all[x:]), normalize(readAll(t, l)), "%s: before %d", name, x)
		}
	}
}

func TestLogResetTo(t *testing.T) {
	for name, open := range logKinds(t) {
		l := open()
		tenRecords(t, l, 3)
		require.NoError(t, l.DeleteBefore(4), name)
		start := kraft.LogEnd{Offset: 50, Epoch: 7}
		require.NoError(t, l.ResetTo(start), name)
		require.Equal(t, start, l.Start(), name)
		require.Equal(t, int64(50), l.StartOffset(), name)
		require.Equal(t, start, l.End(), name)
		require.Equal(t, int64(50), l.Flushed(), name)
		require.Equal(t, kraft.LogState{End: start, Start: start.Offset}, l.State(), name)
		es, err := l.Read(50, 100)
		require.NoError(t, err, name)
		require.Empty(t, es, name)
		_, err = l.Read(49, 100)
		require.ErrorIs(t, err, ErrBelowStart, name)
		_, ok := l.EpochFor(49)
		require.False(t, ok, name)

		// The next append has offset 50 and an epoch not below 7.
		_, err = l.Append(6, rec(50))
		require.ErrorIs(t, err, ErrEpochRegression, name)
		_, err = l.AppendEntries(Entry{Offset: 49, Epoch: 7})
		require.ErrorIs(t, err, ErrInvalidAppend, name)
		end, err := l.Append(7, rec(50))
		require.NoError(t, err, name)
		require.Equal(t, kraft.LogEnd{Offset: 51, Epoch: 7}, end, name)
		end, err = l.AppendEntries(Entry{Offset: 51, Epoch: 9, Data: rec(51)})
		require.NoError(t, err, name)
		require.Equal(t, kraft.LogEnd{Offset: 52, Epoch: 9}, end, name)
		want := []Entry{{50, 7, rec(50)}, {51, 9, rec(51)}}
		require.Equal(t, normalize(want), normalize(readAll(t, l)), name)
		require.Equal(t, stateFrom(kraft.LogEnd{Offset: 50, Epoch: 6}, want), l.State(), name)

		// A reset may also move the start down, and to the same place.
		require.NoError(t, l.ResetTo(kraft.LogEnd{Offset: 3, Epoch: 1}), name)
		require.Equal(t, kraft.LogEnd{Offset: 3, Epoch: 1}, l.End(), name)
		require.NoError(t, l.ResetTo(kraft.LogEnd{Offset: 3, Epoch: 1}), name)
		require.Empty(t, readAll(t, l), name)
		require.ErrorIs(t, l.ResetTo(kraft.LogEnd{Offset: -1}), ErrOutOfRange, name)
		require.ErrorIs(t, l.ResetTo(kraft.LogEnd{Offset: 1, Epoch: -1}), ErrOutOfRange, name)

		require.NoError(t, l.Close(), name)
		require.ErrorIs(t, l.DeleteBefore(4), ErrClosed, name)
		require.ErrorIs(t, l.ResetTo(start), ErrClosed, name)
	}
}

// TestMemLogCrashKeepsStart: DeleteBefore and ResetTo are durable at once.
func TestMemLogCrashKeepsStart(t *testing.T) {
	l := NewMemLog()
	tenRecords(t, l, 0)
	require.Equal(t, int64(0), l.Flushed())
	require.NoError(t, l.DeleteBefore(6))
	require.Equal(t, int64(6), l.Flushed())
	l.Crash()
	require.Equal(t, kraft.LogEnd{Offset: 6, Epoch: 2}, l.End())
	require.Equal(t, kraft.LogEnd{Offset: 6, Epoch: 2}, l.Start())
	_, err := l.Append(2, rec(6))
	require.NoError(t, err)
	require.NoError(t, l.ResetTo(kraft.LogEnd{Offset: 20, Epoch: 4}))
	l.Crash()
	require.Equal(t, kraft.LogEnd{Offset: 20, Epoch: 4}, l.End())
	require.Equal(t, int64(20), l.StartOffset())
}

// TestFileLogDeleteBeforeRemovesSegments: only segments whose records are
// all below the start go, and the start survives a reopen, on a segment
// boundary and inside a segment.
func TestFileLogDeleteBeforeRemovesSegments(t *testing.T) {
	for _, c := range []struct {
		before int64
		segs   []string
	}{
		{0, []string{"00000000000000000000.log", "00000000000000000003.log", "00000000000000000006.log", "00000000000000000009.log"}},
		{2, []string{"00000000000000000000.log", "00000000000000000003.log", "00000000000000000006.log", "00000000000000000009.log"}},
		{3, []string{"00000000000000000003.log", "00000000000000000006.log", "00000000000000000009.log"}},
		{7, []string{"00000000000000000006.log", "00000000000000000009.log"}},
		{9, []string{"00000000000000000009.log"}},
		{10, []string{"00000000000000000009.log"}},
	} {
		dir := t.TempDir()
		l, _ := reopen(t, dir, 100)
		all := tenRecords(t, l, 0)
		require.NoError(t, l.DeleteBefore(c.before))
		require.Equal(t, c.segs, segmentFiles(t, dir), "before %d", c.before)
		_, statErr := os.Stat(filepath.Join(dir, LogStartFileName))
		require.Equal(t, c.before > 0, statErr == nil, "before %d: the start file", c.before)
		state := l.State()
		require.NoError(t, l.Close())

		l, recovery := reopen(t, dir, 100)
		require.Equal(t, c.before, l.StartOffset(), "before %d", c.before)
		require.Equal(t, state, l.State(), "before %d", c.before)
		require.Equal(t, normalize(all[c.before:]), normalize(readAll(t, l)), "before %d", c.before)
		require.Equal(t, int64(10)-c.before, recovery.Records, "before %d", c.before)
		require.Equal(t, len(c.segs), recovery.Segments, "before %d", c.before)
		_, err := l.Read(c.before-1, 10)
		if c.before > 0 {
			require.ErrorIs(t, err, ErrBelowStart)
		}
		require.NoError(t, l.Close())
	}
}

// TestFileLogResetToSurvivesReopen: the log restarts at the reset point
// after a reopen, with no old segment left.
func TestFileLogResetToSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 100)
	tenRecords(t, l, 10)
	start := kraft.LogEnd{Offset: 1000, Epoch: 12}
	require.NoError(t, l.ResetTo(start))
	require.Equal(t, []string{"00000000000000001000.log"}, segmentFiles(t, dir))
	require.NoError(t, l.Close())

	l, recovery := reopen(t, dir, 100)
	require.Equal(t, Recovery{Segments: 1, RecoveryPoint: 1000, SyncedEpoch: 12}, recovery)
	require.Equal(t, start, l.Start())
	require.Equal(t, start, l.End())
	require.Equal(t, kraft.LogState{End: start, Start: start.Offset}, l.State())
	for i := 0; i < 5; i++ {
		_, err := l.Append(12, rec(i))
		require.NoError(t, err)
	}
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	l, _ = reopen(t, dir, 100)
	require.Equal(t, kraft.LogEnd{Offset: 1005, Epoch: 12}, l.End())
	require.Equal(t, []kraft.EpochStart{{Epoch: 12, StartOffset: 1000}}, l.State().Epochs)
	require.Len(t, segmentFiles(t, dir), 2)
}

// TestFileLogOpenFinishesDeleteBefore: a crash after the start file was
// written but before the segments below it were removed; Open removes them.
func TestFileLogOpenFinishesDeleteBefore(t *testing.T) {
	dir := t.TempDir()
	l, _ := reopen(t, dir, 100)
	all := tenRecords(t, l, 10)
	require.NoError(t, l.Close())
	require.NoError(t, writeLogStart(osFS{}, dir, kraft.LogEnd{Offset: 7, Epoch: 2}))

	l, recovery := reopen(t, dir, 100)
	require.Equal(t, []string{"00000000000000000006.log", "00000000000000000009.log"}, segmentFiles(t, dir))
	require.Equal(t, int64(7), l.StartOffset())
	require.Equal(t, int64(3), recovery.Records)
	require.Equal(t, normalize(all[7:]), normalize(readAll(t, l)))
	require.Equal(t, stateFrom(kraft.LogEnd{Offset: 7, Epoch: 2}, all[7:]), l.State())
}

// TestFileLogBadStart: a start file that does not fit the segments is
// ErrCorrupt, and nothing is changed on disk.
func TestFileLogBadStart(t *testing.T) {
	for _, c := range []struct {
		name    string
		content string
	}{
		{"not the format", "0\n7\n"},
		{"garbage", "\x00\x00\x00"},
		{"empty", ""},
		{"past the end", "0\n11 3\n"},
		{"the wrong epoch before it", "0\n7 1\n"},
		{"an epoch above the record after it", "0\n3 2\n"},
		{"below the first segment", "0\n1 1\n"},
	} {
		dir := t.TempDir()
		l, _ := reopen(t, dir, 100)
		tenRecords(t, l, 10)
		require.NoError(t, l.DeleteBefore(3))
		require.NoError(t, l.Close())
		if c.name == "below the first segment" {
			// The first segment is 3; a start of 1 needs records that are gone.
			require.Equal(t, "00000000000000000003.log", segmentFiles(t, dir)[0])
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, LogStartFileName), []byte(c.content), 0o644))
		before := dirContents(t, dir)
		_, _, err := Open(dir, Options{SegmentBytes: 100})
		require.ErrorIs(t, err, ErrCorrupt, c.name)
		require.Contains(t, err.Error(), dir, c.name)
		require.Equal(t, before, dirContents(t, dir), c.name)
	}
}

func TestLogStartFileFormat(t *testing.T) {
	for _, s := range []kraft.LogEnd{{}, {Offset: 1, Epoch: 0}, {Offset: 1500, Epoch: 7}, {Offset: 1<<63 - 1, Epoch: 1<<31 - 1}} {
		b := encodeLogStart(s)
		got, err := parseLogStart(b)
		require.NoError(t, err, "%q", b)
		require.Equal(t, s, got)
	}
	require.Equal(t, "1\n1500 7\n8539d9c8\n", string(encodeLogStart(kraft.LogEnd{Offset: 1500, Epoch: 7})))
	got, err := parseLogStart([]byte("0\n1500 7\n"))
	require.NoError(t, err, "version 0 still reads")
	require.Equal(t, kraft.LogEnd{Offset: 1500, Epoch: 7}, got)
	// A flipped digit is damage, not another start.
	_, err = parseLogStart([]byte("1\n1501 7\n8539d9c8\n"))
	require.ErrorContains(t, err, "checksum")
	for _, bad := range []string{
		"", "0\n", "0\n1500 7", "1\n1500 7\n", "0\n1500 7\n\n", "0\n1500  7\n", "0\n1500\n", "0\n1500 7 1\n",
		"0\n-1 7\n", "0\n1500 -7\n", "0\n+1 7\n", "0\n01 7\n", "0\n1 07\n", "0\n9223372036854775808 1\n",
		"0\n1 2147483648\n", "0\r\n1 2\r\n", "0\n1 x\n",
		"1\n1500 7\n8539D9C8\n", "1\n1500 7\n8539d9c8", "2\n1500 7\n8539d9c8\n", "1\n1500 7\n00000000\n",
	} {
		_, err := parseLogStart([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

// TestLogStateAfterStartMovesStartsKraft: the State of a log whose start
// moved is one kraft.NewState takes, with the log's end.
func TestLogStateAfterStartMovesStartsKraft(t *testing.T) {
	cfg := kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}, Seed: 1}
	for name, open := range logKinds(t) {
		for _, move := range []func(Log) error{
			func(l Log) error { return l.DeleteBefore(5) },
			func(l Log) error { return l.DeleteBefore(10) },
			func(l Log) error { return l.ResetTo(kraft.LogEnd{Offset: 40, Epoch: 6}) },
		} {
			l := open()
			tenRecords(t, l, 10)
			require.NoError(t, move(l), name)
			st := l.State()
			require.Equal(t, l.StartOffset(), st.Start, name)
			if st.Start > 0 {
				// The host adds the snapshot the log continues.
				id := l.Start()
				st.LatestSnapshot, st.EarliestSnapshot = &id, &id
			}
			s, _, err := kraft.NewState(cfg, nil, st)
			require.NoError(t, err, name)
			require.Equal(t, l.End(), s.LogEnd(), name)
			require.Equal(t, l.End().Epoch, s.Epoch(), name)
		}
	}
}
