package storage

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

// crashSegmentBytes makes the crash workload roll segments often.
const crashSegmentBytes = 200

// crashModel is what the crash workload knows about its log.
type crashModel struct {
	cur    []Entry   // the log as the process sees it, from offset 0
	valid  [][]Entry // logs the disk may hold a prefix of after a crash
	acked  int64     // records below it were reported durable (Flushed)
	start  int64     // the log start, as the last DeleteBefore that returned left it
	starts []int64   // the log starts the disk may hold after a crash
	// The least recovery point a crash may leave is acked: every record the
	// log reported durable is claimed by a durable recovery point (D102).
}

// runCrashWorkload opens a log in dir through fsys and runs the seeded
// workload until it ends or an operation fails (the process died). The
// sequence of operations depends on the seed only. It returns the log, if
// it opened, to release its files.
func runCrashWorkload(dir string, fsys FS, seed int64) (*FileLog, *crashModel) {
	m := &crashModel{valid: [][]Entry{nil}, starts: []int64{0}}
	rng := rand.New(rand.NewSource(seed))
	l, _, err := Open(dir, Options{SegmentBytes: crashSegmentBytes, FS: fsys})
	if err != nil {
		return nil, m
	}
	epoch := kraft.Epoch(1)
	for step := 0; step < 30; step++ {
		switch r := rng.Intn(10); {
		case r < 6:
			if rng.Intn(4) == 0 {
				epoch++
			}
			entries := make([]Entry, 1+rng.Intn(3))
			for i := range entries {
				data := make([]byte, rng.Intn(50))
				rng.Read(data)
				entries[i] = Entry{Offset: int64(len(m.cur) + i), Epoch: epoch, Data: data}
			}
			if len(entries) > 1 && rng.Intn(3) == 0 {
				epoch++ // a fetched batch that spans two epochs
				entries[len(entries)-1].Epoch = epoch
			}
			after := append(append([]Entry(nil), m.cur...), entries...)
			m.valid = append(m.valid, after)
			if _, err := l.AppendEntries(entries...); err != nil {
				return l, m
			}
			m.cur = after
		case r < 9:
			if err := l.Sync(); err != nil {
				return l, m
			}
		case rng.Intn(2) == 0:
			to := m.start + rng.Int63n(int64(len(m.cur))-m.start+1)
			if to < m.acked {
				m.acked = to // the records at and after to may go now
			}
			if err := l.Truncate(to); err != nil {
				return l, m
			}
			m.cur = m.cur[:to]
			m.valid = [][]Entry{m.cur} // what was removed must stay removed
		default:
			x := m.start + rng.Int63n(int64(len(m.cur))-m.start+1)
			m.starts = []int64{m.start, x}
			if err := l.DeleteBefore(x); err != nil {
				return l, m
			}
			m.start, m.starts = x, []int64{x}
		}
		m.acked = l.Flushed()
	}
	return l, m
}

// TestCrashLogAtEveryPoint runs the workload, kills it at each of its file
// operations in turn (a write may be half done), crashes the machine in
// several ways at that moment, and reopens the directory: every record
// reported durable must be there, and the log must be a prefix of a log the
// process had, record for record.
func TestCrashLogAtEveryPoint(t *testing.T) {
	base := t.TempDir()
	runs := 0
	for seed := int64(1); seed <= 4; seed++ {
		countDir := filepath.Join(base, fmt.Sprintf("count-%d", seed))
		require.NoError(t, os.Mkdir(countDir, 0o755))
		counter, err := newCrashFS(-1, 0, countDir)
		require.NoError(t, err)
		l, _ := runCrashWorkload(countDir, counter, seed)
		require.NotNil(t, l)
		require.NoError(t, l.Close())
		total := counter.ops

		for budget := 0; budget <= total; budget++ {
			for variant := int64(0); variant < 4; variant++ {
				runs++
				name := fmt.Sprintf("seed %d, death at operation %d of %d, crash variant %d", seed, budget, total, variant)
				dir := filepath.Join(base, fmt.Sprintf("run-%d", runs))
				require.NoError(t, os.Mkdir(dir, 0o755))
				cfs, err := newCrashFS(budget, seed*1_000_000+int64(budget)*10+variant, dir)
				require.NoError(t, err)
				l, m := runCrashWorkload(dir, cfs, seed)
				if l != nil {
					_ = l.Close()
				}
				if variant == 3 {
					// Only the process dies. A new one opens the log, which
					// is then durable as it found it, whatever the machine
					// does next.
					cfs.restart()
					m = reopenAfterProcessDeath(t, name, dir, cfs, m)
				}
				require.NoError(t, cfs.crash(dir), name)
				checkRecovered(t, name, dir, m)
				require.NoError(t, os.RemoveAll(dir))
			}
		}
	}
	t.Logf("%d crash runs", runs)
}

// reopenAfterProcessDeath opens the log that a dead process left, checks it
// against m, and returns the model of what it found: all durable.
func reopenAfterProcessDeath(t *testing.T, name, dir string, fsys FS, m *crashModel) *crashModel {
	t.Helper()
	l, _, err := Open(dir, Options{SegmentBytes: crashSegmentBytes, FS: fsys})
	require.NoError(t, err, name)
	defer func() { _ = l.Close() }()
	start, got := checkStartAndRecords(t, name, l, m)
	require.Equal(t, l.End().Offset, l.Flushed(), name)
	cur := append(append([]Entry(nil), m.cur[:start]...), got...)
	return &crashModel{cur: cur, valid: [][]Entry{cur}, acked: l.Flushed(), start: start, starts: []int64{start}}
}

// checkStartAndRecords checks a log recovered after a crash against m: it
// starts at a start the process had set or was setting, it holds every
// record reported durable from there on, and its records are those of a
// log the process had, from its start. It returns the start and the
// records.
func checkStartAndRecords(t *testing.T, name string, l *FileLog, m *crashModel) (int64, []Entry) {
	t.Helper()
	start := l.StartOffset()
	require.Contains(t, m.starts, start, "%s: the log starts at %d", name, start)
	got := readAll(t, l)
	end := start + int64(len(got))
	require.Equal(t, end, l.End().Offset, name)
	require.GreaterOrEqual(t, end, m.acked, "%s: records reported durable are lost", name)
	if m.acked > start {
		require.Equal(t, normalize(m.cur[start:m.acked]), normalize(got[:m.acked-start]), "%s: durable records changed", name)
	}
	found := false
	for _, v := range m.valid {
		if int64(len(v)) >= end && equalEntries(got, v[start:end]) {
			found = true
		}
	}
	require.True(t, found, "%s: the log of %d records from %d is no part of a log the process had", name, len(got), start)
	startEnd := kraft.LogEnd{Offset: start}
	if start > 0 {
		startEnd.Epoch = m.cur[start-1].Epoch
	}
	require.Equal(t, startEnd, l.Start(), name)
	require.Equal(t, stateFrom(startEnd, got), l.State(), name)
	return start, got
}

// checkRecovered reopens dir after a crash and checks it against m. First
// it damages a copy of dir in a record reported durable, if there is one
// (probeDamage).
func checkRecovered(t *testing.T, name, dir string, m *crashModel) {
	t.Helper()
	probeDamage(t, name, dir, m)
	l, rec, err := Open(dir, Options{SegmentBytes: crashSegmentBytes, FS: noSyncFS{}})
	require.False(t, errors.Is(err, ErrDamaged), "%s: a crash taken for damage: %v", name, err)
	require.NoError(t, err, name)
	require.Nil(t, rec.Damage, name)
	require.GreaterOrEqual(t, rec.RecoveryPoint, m.acked, "%s: records reported durable are not claimed by the recovery point", name)
	start, _ := checkStartAndRecords(t, name, l, m)
	require.Equal(t, l.End().Offset, l.Flushed(), name)

	// The recovered log takes appends, and they survive a reopen, with its
	// start.
	end, err := l.Append(l.End().Epoch+1, []byte("after"))
	require.NoError(t, err, name)
	require.NoError(t, l.Sync(), name)
	require.NoError(t, l.Close(), name)
	l, rec, err = Open(dir, Options{SegmentBytes: crashSegmentBytes, FS: noSyncFS{}})
	require.NoError(t, err, name)
	require.Zero(t, rec.DroppedBytes, name)
	require.Equal(t, end, l.End(), name)
	require.Equal(t, start, l.StartOffset(), name)
	require.NoError(t, l.Close(), name)
}

// probeDamage checks, on a copy of dir as a crash left it, that a record the
// log reported durable (below m.acked) and above any start the crash may
// have left is claimed: a flipped byte in it, or its frame and all after
// it lost, is a DamageError from that record or before, not a torn tail
// (D102).
func probeDamage(t *testing.T, name, dir string, m *crashModel) {
	t.Helper()
	from := int64(0)
	for _, s := range m.starts {
		if s > from {
			from = s
		}
	}
	if m.acked <= from {
		return
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	rng := rand.New(rand.NewSource(int64(h.Sum64() >> 1)))
	r := from + rng.Int63n(m.acked-from)
	probe := dir + "-probe"
	require.NoError(t, os.Mkdir(probe, 0o755))
	defer func() { require.NoError(t, os.RemoveAll(probe)) }()
	names, err := readDirNames(dir)
	require.NoError(t, err)
	seg, segBase, last := "", int64(-1), true
	for _, n := range names {
		if base, ok := parseSegmentName(n); ok && base <= r && base > segBase {
			seg, segBase = n, base
		}
	}
	for _, n := range names {
		if base, ok := parseSegmentName(n); ok && base > segBase {
			last = false
		}
	}
	require.NotEmpty(t, seg, "%s: no segment holds record %d", name, r)
	// The other files are linked: an Open that refuses changes none.
	for _, n := range names {
		if n != seg {
			require.NoError(t, os.Link(filepath.Join(dir, n), filepath.Join(probe, n)))
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, seg))
	require.NoError(t, err)
	seg = filepath.Join(probe, seg)
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	pos := framePos(t, seg, r)
	require.Less(t, pos, int64(len(b)), "%s: record %d, reported durable, is not on disk", name, r)
	how := "flipped"
	if rng.Intn(2) == 0 || !last {
		b[pos+rng.Int63n(FrameOverhead)] ^= 0x01
	} else {
		b, how = b[:pos], "cut off" // a lost write of the log's end
	}
	require.NoError(t, os.WriteFile(seg, b, 0o644))
	l, _, err := Open(probe, Options{SegmentBytes: crashSegmentBytes, FS: noSyncFS{}})
	if l != nil {
		_ = l.Close()
	}
	var d *DamageError
	require.True(t, errors.As(err, &d), "%s: record %d, reported durable, %s: want a DamageError, got %v", name, r, how, err)
	require.LessOrEqual(t, d.From, r, name)
}

// TestCrashQuorumStateAtEveryPoint kills a quorum-state write at each of its
// file operations and crashes: the file must then hold the old record or
// the new one, never anything else, and the new one if the write returned.
func TestCrashQuorumStateAtEveryPoint(t *testing.T) {
	oldRec := kraft.QuorumRecord{Epoch: 4, LeaderID: 2, VotedKey: kraft.NoReplica}
	newRec := kraft.QuorumRecord{Epoch: 5, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 3, DirectoryID: uuid.MustParse("27c6803d-c7cb-42dd-9baa-cd494ffacc81")}}
	base := t.TempDir()
	for _, fresh := range []bool{false, true} {
		countDir := filepath.Join(base, fmt.Sprintf("count-%v", fresh))
		require.NoError(t, os.Mkdir(countDir, 0o755))
		counter, err := newCrashFS(-1, 0, countDir)
		require.NoError(t, err)
		require.NoError(t, writeQuorumStateData(counter, QuorumStatePath(countDir), NewQuorumStateData(newRec)))
		total := counter.ops
		// The copy: created as the file is (remove a stale temporary file,
		// create, write, fsync, rename, fsync the directory); then the file.
		require.Equal(t, 12, total)

		for budget := 0; budget <= total; budget++ {
			for variant := int64(0); variant < 8; variant++ {
				name := fmt.Sprintf("fresh %v, death at operation %d, variant %d", fresh, budget, variant)
				dir := filepath.Join(base, fmt.Sprintf("run-%v-%d-%d", fresh, budget, variant))
				require.NoError(t, os.Mkdir(dir, 0o755))
				path := QuorumStatePath(dir)
				if !fresh {
					require.NoError(t, WriteQuorumState(path, oldRec))
				}
				cfs, err := newCrashFS(budget, int64(budget)*100+variant, dir)
				require.NoError(t, err)
				werr := writeQuorumStateData(cfs, path, NewQuorumStateData(newRec))
				require.NoError(t, cfs.crash(dir))

				got, err := ReadQuorumState(path)
				require.NoError(t, err, name)
				switch {
				case werr == nil:
					require.Equal(t, &newRec, got, name)
				case got == nil:
					require.True(t, fresh, "%s: the old record is gone", name)
				default:
					require.Contains(t, []kraft.QuorumRecord{oldRec, newRec}, *got, name)
					if fresh {
						require.Equal(t, newRec, *got, name)
					}
				}
			}
		}
	}
}

// TestCrashDeleteBeforeAndResetToAtEveryPoint kills DeleteBefore and
// ResetTo at each of their file operations (three records at the end not
// yet synced), crashes the machine, and reopens: the log must start at the
// old start or the new one and hold the records from there, the records
// synced before the operation must all be there if the old start is, the
// records below the new start must have been durable (the log reaches it),
// and once the operation returned, the new start must be there.
func TestCrashDeleteBeforeAndResetToAtEveryPoint(t *testing.T) {
	base := t.TempDir()
	type op struct {
		name   string
		before int64        // DeleteBefore(before), or
		reset  kraft.LogEnd // ResetTo(reset)
	}
	ops := []op{
		{name: "delete before 7 (synced)", before: 7},
		{name: "delete before 12 (not synced)", before: 12},
		{name: "delete before the end", before: 13},
		{name: "reset to 50", reset: kraft.LogEnd{Offset: 50, Epoch: 4}},
		{name: "reset to 5", reset: kraft.LogEnd{Offset: 5, Epoch: 1}},
	}
	var all []Entry
	for i := 0; i < 13; i++ {
		all = append(all, Entry{Offset: int64(i), Epoch: kraft.Epoch(1 + i/4), Data: rec(i)})
	}
	// run opens the log of dir (ten records, synced) through fsys, appends
	// three, and carries out o.
	run := func(dir string, fsys FS, o op) error {
		l, _, err := Open(dir, Options{SegmentBytes: 100, FS: fsys})
		if err != nil {
			return err
		}
		defer func() { _ = l.Close() }()
		if _, err := l.AppendEntries(all[10:]...); err != nil {
			return err
		}
		if o.before > 0 {
			return l.DeleteBefore(o.before)
		}
		return l.ResetTo(o.reset)
	}
	setup := func(dir string) {
		require.NoError(t, os.Mkdir(dir, 0o755))
		l, _, err := Open(dir, Options{SegmentBytes: 100})
		require.NoError(t, err)
		_, err = l.AppendEntries(all[:10]...)
		require.NoError(t, err)
		require.NoError(t, l.Sync())
		require.NoError(t, l.Close())
	}
	runs := 0
	for k, o := range ops {
		countDir := filepath.Join(base, fmt.Sprintf("count-%d", k))
		setup(countDir)
		counter, err := newCrashFS(-1, 0, countDir)
		require.NoError(t, err)
		require.NoError(t, run(countDir, counter, o))
		total := counter.ops

		for budget := 0; budget <= total; budget++ {
			for variant := int64(0); variant < 4; variant++ {
				runs++
				name := fmt.Sprintf("%s, death at operation %d of %d, crash variant %d", o.name, budget, total, variant)
				dir := filepath.Join(base, fmt.Sprintf("run-%d", runs))
				setup(dir)
				cfs, err := newCrashFS(budget, int64(runs)*10+variant, dir)
				require.NoError(t, err)
				opErr := run(dir, cfs, o)
				if variant == 3 {
					// Only the process dies; a new one opens the log.
					cfs.restart()
					l, _, err := Open(dir, Options{SegmentBytes: 100, FS: cfs})
					require.NoError(t, err, name)
					require.NoError(t, l.Close(), name)
				}
				require.NoError(t, cfs.crash(dir), name)

				l, rec, err := Open(dir, Options{SegmentBytes: 100, FS: noSyncFS{}})
				require.NoError(t, err, name)
				if opErr == nil && o.before > 10 {
					// DeleteBefore synced the records appended and reported
					// them durable: the recovery point claims them (D102).
					require.GreaterOrEqual(t, rec.RecoveryPoint, int64(len(all)), name)
				}
				start, end := l.Start(), l.End()
				got := readAll(t, l)
				newStart := o.reset
				if o.before > 0 {
					newStart = kraft.LogEnd{Offset: o.before, Epoch: all[o.before-1].Epoch}
				}
				switch {
				case start == newStart && o.before > 0:
					require.GreaterOrEqual(t, end.Offset, o.before, name)
					require.GreaterOrEqual(t, end.Offset, int64(10), "%s: synced records are lost", name)
					require.Equal(t, normalize(all[o.before:end.Offset]), normalize(got), name)
				case start == newStart:
					require.Equal(t, newStart, end, "%s: a reset log holds old records", name)
				default:
					require.Error(t, opErr, "%s: the new start is not there after the operation returned", name)
					require.Equal(t, kraft.LogEnd{}, start, name)
					require.Equal(t, normalize(all[:end.Offset]), normalize(got), name)
					if o.before > 0 {
						require.GreaterOrEqual(t, end.Offset, int64(10), "%s: synced records are lost", name)
					}
				}
				require.Equal(t, stateFrom(start, got), l.State(), name)

				// The log takes appends, and they survive a reopen.
				after, err := l.Append(l.End().Epoch, []byte("after"))
				require.NoError(t, err, name)
				require.NoError(t, l.Sync(), name)
				require.NoError(t, l.Close(), name)
				l, _, err = Open(dir, Options{SegmentBytes: 100, FS: noSyncFS{}})
				require.NoError(t, err, name)
				require.Equal(t, after, l.End(), name)
				require.Equal(t, start, l.Start(), name)
				require.NoError(t, l.Close(), name)
				require.NoError(t, os.RemoveAll(dir))
			}
		}
	}
	t.Logf("%d crash runs", runs)
}
