package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

func openTestSnapshots(t *testing.T, dir string) *Snapshots {
	t.Helper()
	s, err := OpenSnapshots(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// snapshotBytes is n bytes of content that depends on seed.
func snapshotBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// writeSnapshot writes a snapshot of content in chunks of 1000 bytes.
func writeSnapshot(t *testing.T, s *Snapshots, id kraft.LogEnd, content []byte) {
	t.Helper()
	w, err := s.Create(id)
	require.NoError(t, err)
	for rest := content; len(rest) > 0; {
		n := 1000
		if n > len(rest) {
			n = len(rest)
		}
		require.NoError(t, w.Append(rest[:n]))
		rest = rest[n:]
	}
	require.Equal(t, int64(len(content)), w.Size())
	require.NoError(t, w.Freeze())
}

// readSnapshot reads a whole snapshot with Open.
func readSnapshot(s *Snapshots, id kraft.LogEnd) ([]byte, error) {
	r, err := s.Open(id)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}

func TestSnapshotFileNames(t *testing.T) {
	require.Equal(t, "00000000000000001500-0000000007.checkpoint", SnapshotFileName(kraft.LogEnd{Offset: 1500, Epoch: 7}))
	for _, id := range []kraft.LogEnd{{}, {Offset: 1, Epoch: 0}, {Offset: 1500, Epoch: 7}, {Offset: 1<<63 - 1, Epoch: 1<<31 - 1}} {
		name := SnapshotFileName(id)
		require.Len(t, name, 42)
		got, kind, ok := parseSnapshotFileName(name)
		require.True(t, ok, name)
		require.Equal(t, id, got)
		require.Equal(t, snapshotVisible, kind)
		got, kind, ok = parseSnapshotFileName(name + ".part")
		require.True(t, ok)
		require.Equal(t, id, got)
		require.Equal(t, snapshotPartial, kind)
		got, kind, ok = parseSnapshotFileName(name + ".deleted")
		require.True(t, ok)
		require.Equal(t, id, got)
		require.Equal(t, snapshotDeleted, kind)
	}
	for _, bad := range []string{
		"",
		".checkpoint",
		"00000000000000001500-0000000007",
		"00000000000000001500-0000000007.checkpoint.tmp",
		"00000000000000001500-0000000007.checkpointx",
		"00000000000000001500-0000000007.checkpoint.part.deleted",
		"00000000000000001500-0000000007.log",
		"0000000000000001500-0000000007.checkpoint",   // 19 digits
		"000000000000000001500-0000000007.checkpoint", // 21 digits
		"00000000000000001500-000000007.checkpoint",   // 9 digits
		"00000000000000001500-00000000007.checkpoint", // 11 digits
		"00000000000000001500_0000000007.checkpoint",  // no dash
		"0000000000000000150x-0000000007.checkpoint",  // not a digit
		"+0000000000000001500-0000000007.checkpoint",  // a sign
		"00000000000000001500--000000007.checkpoint",  // a sign
		"99999999999999999999-0000000007.checkpoint",  // above int64
		"09223372036854775808-0000000007.checkpoint",  // 2^63
		"00000000000000001500-2147483648.checkpoint",  // 2^31
		"00000000000000001500-9999999999.checkpoint",  // above int32
		"00000000000000001500-0000000007.checkpoint ", // trailing space
		"00000000000000000000.log", "quorum-state", LogStartFileName,
	} {
		_, _, ok := parseSnapshotFileName(bad)
		require.False(t, ok, "%q", bad)
	}
}

func TestSnapshotsWriteAndRead(t *testing.T) {
	dir := t.TempDir()
	s := openTestSnapshots(t, dir)
	require.Empty(t, s.List())
	_, ok := s.Latest()
	require.False(t, ok)
	_, ok = s.Earliest()
	require.False(t, ok)

	id := kraft.LogEnd{Offset: 100, Epoch: 3}
	content := snapshotBytes(1, 2500)
	w, err := s.Create(id)
	require.NoError(t, err)
	require.Equal(t, id, w.ID())
	require.NoError(t, w.Append(content[:1000]))
	n, err := w.Write(content[1000:])
	require.NoError(t, err)
	require.Equal(t, 1500, n)

	// Not visible before Freeze, and only one writer at a time.
	require.Empty(t, s.List())
	_, err = s.Size(id)
	require.ErrorIs(t, err, ErrSnapshotNotFound)
	_, err = s.Create(id)
	require.ErrorIs(t, err, ErrSnapshotExists)
	require.Equal(t, []string{"00000000000000000100-0000000003.checkpoint.part"}, snapshotNames(t, dir))

	require.NoError(t, w.Freeze())
	require.Equal(t, []string{"00000000000000000100-0000000003.checkpoint"}, snapshotNames(t, dir))
	require.Equal(t, []kraft.LogEnd{id}, s.List())
	_, err = s.Create(id)
	require.ErrorIs(t, err, ErrSnapshotExists)
	require.Error(t, w.Append([]byte("x")))
	require.Error(t, w.Freeze())
	require.NoError(t, w.Abort(), "Abort after Freeze does nothing")
	require.Equal(t, []kraft.LogEnd{id}, s.List())

	size, err := s.Size(id)
	require.NoError(t, err)
	require.Equal(t, int64(2500), size)
	got, err := readSnapshot(s, id)
	require.NoError(t, err)
	require.Equal(t, content, got)

	// Read: at most maxBytes from position; none at the end; positions
	// outside [0, size] are errors.
	for _, c := range []struct {
		pos       int64
		max, want int
	}{{0, 10, 10}, {0, 2500, 2500}, {0, 1 << 30, 2500}, {100, 1000, 1000}, {2000, 1000, 500}, {2499, 10, 1}, {2500, 10, 0}, {5, 0, 0}, {5, -1, 0}} {
		b, err := s.Read(id, c.pos, c.max)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, content[c.pos:c.pos+int64(c.want)], b, "%+v", c)
		require.NotNil(t, b)
	}
	for _, pos := range []int64{-1, 2501, 1 << 40} {
		_, err := s.Read(id, pos, 10)
		require.ErrorIs(t, err, ErrOutOfRange, "position %d", pos)
	}
	// Read's bytes belong to the caller.
	b, err := s.Read(id, 0, 10)
	require.NoError(t, err)
	b[0]++
	b, err = s.Read(id, 0, 10)
	require.NoError(t, err)
	require.Equal(t, content[:10], b)

	// Unknown ids.
	other := kraft.LogEnd{Offset: 100, Epoch: 4}
	_, err = s.Size(other)
	require.ErrorIs(t, err, ErrSnapshotNotFound)
	_, err = s.Read(other, 0, 10)
	require.ErrorIs(t, err, ErrSnapshotNotFound)
	_, err = s.Open(other)
	require.ErrorIs(t, err, ErrSnapshotNotFound)
	require.ErrorIs(t, s.Delete(other), ErrSnapshotNotFound)
	_, err = s.Create(kraft.LogEnd{Offset: -1})
	require.ErrorIs(t, err, ErrOutOfRange)

	// An empty snapshot, and ids in any order: List is ascending.
	writeSnapshot(t, s, kraft.LogEnd{Offset: 300, Epoch: 5}, nil)
	writeSnapshot(t, s, kraft.LogEnd{Offset: 50, Epoch: 1}, []byte("early"))
	writeSnapshot(t, s, kraft.LogEnd{Offset: 200, Epoch: 5}, []byte("mid"))
	want := []kraft.LogEnd{{Offset: 50, Epoch: 1}, id, {Offset: 200, Epoch: 5}, {Offset: 300, Epoch: 5}}
	require.Equal(t, want, s.List())
	latest, ok := s.Latest()
	require.True(t, ok)
	require.Equal(t, want[3], latest)
	earliest, ok := s.Earliest()
	require.True(t, ok)
	require.Equal(t, want[0], earliest)
	size, err = s.Size(want[3])
	require.NoError(t, err)
	require.Zero(t, size)
	b, err = s.Read(want[3], 0, 10)
	require.NoError(t, err)
	require.Empty(t, b)

	// Everything is there after a reopen.
	require.NoError(t, s.Close())
	s = openTestSnapshots(t, dir)
	require.Equal(t, want, s.List())
	got, err = readSnapshot(s, id)
	require.NoError(t, err)
	require.Equal(t, content, got)
	got, err = readSnapshot(s, want[0])
	require.NoError(t, err)
	require.Equal(t, []byte("early"), got)
}

// snapshotNames lists the snapshot files of dir, of every kind.
func snapshotNames(t *testing.T, dir string) []string {
	t.Helper()
	names, err := readDirNames(dir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if _, _, ok := parseSnapshotFileName(n); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// TestSnapshotFileLayout checks the bytes of a snapshot file field by
// field.
func TestSnapshotFileLayout(t *testing.T) {
	dir := t.TempDir()
	s := openTestSnapshots(t, dir)
	id := kraft.LogEnd{Offset: 0x0102030405060708, Epoch: 0x0a0b0c0d}
	writeSnapshot(t, s, id, []byte("hi"))
	b, err := os.ReadFile(filepath.Join(dir, SnapshotFileName(id)))
	require.NoError(t, err)
	require.Len(t, b, SnapshotHeaderSize+2)
	require.Equal(t, 29, SnapshotHeaderSize)
	require.Equal(t, crc32.Checksum(b[4:29], crc32.MakeTable(crc32.Castagnoli)), binary.BigEndian.Uint32(b[0:4]))
	require.Equal(t, byte(1), b[4])
	require.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, b[5:13])
	require.Equal(t, []byte{0x0a, 0x0b, 0x0c, 0x0d}, b[13:17])
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 2}, b[17:25])
	// CRC-32C of "hi".
	require.Equal(t, crc32.Checksum([]byte("hi"), crc32.MakeTable(crc32.Castagnoli)), binary.BigEndian.Uint32(b[25:29]))
	require.Equal(t, []byte("hi"), b[29:])
}

func TestSnapshotsAbort(t *testing.T) {
	dir := t.TempDir()
	s := openTestSnapshots(t, dir)
	id := kraft.LogEnd{Offset: 10, Epoch: 1}
	w, err := s.Create(id)
	require.NoError(t, err)
	require.NoError(t, w.Append([]byte("partial")))
	require.NoError(t, w.Abort())
	require.NoError(t, w.Abort())
	require.Empty(t, snapshotNames(t, dir))
	require.Empty(t, s.List())
	require.Error(t, w.Freeze())
	// The id can be written again.
	writeSnapshot(t, s, id, []byte("whole"))
	got, err := readSnapshot(s, id)
	require.NoError(t, err)
	require.Equal(t, []byte("whole"), got)
}

// TestSnapshotsOpenCleansUp: OpenSnapshots removes the files of snapshots
// being written or deleted, and leaves every other file alone.
func TestSnapshotsOpenCleansUp(t *testing.T) {
	dir := t.TempDir()
	s := openTestSnapshots(t, dir)
	id := kraft.LogEnd{Offset: 10, Epoch: 1}
	writeSnapshot(t, s, id, []byte("kept"))
	require.NoError(t, s.Close())
	others := map[string]string{
		"00000000000000000000.log": "segment",
		"quorum-state":             "{}",
		LogStartFileName:           "0\n1 1\n",
		"00000000000000000010-0000000001.checkpoint.tmp": "x",
		"0000000000000000010-0000000001.checkpoint":      "malformed",
		"notes.checkpoint": "x",
	}
	for name, content := range others {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	for _, name := range []string{
		"00000000000000000020-0000000002.checkpoint.part",
		"00000000000000000010-0000000001.checkpoint.deleted",
		"00000000000000000005-0000000001.checkpoint.deleted",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("leftover"), 0o644))
	}
	s = openTestSnapshots(t, dir)
	require.Equal(t, []kraft.LogEnd{id}, s.List())
	require.Equal(t, []string{SnapshotFileName(id)}, snapshotNames(t, dir))
	contents := dirContents(t, dir)
	for name, content := range others {
		require.Equal(t, content, contents[name], name)
	}
	require.Len(t, contents, len(others)+1)

	// A directory that does not exist is created.
	fresh := filepath.Join(t.TempDir(), "a", "b")
	s = openTestSnapshots(t, fresh)
	require.Empty(t, s.List())
	writeSnapshot(t, s, id, nil)
}

// TestSnapshotsDetectCorruption damages a snapshot file in each of its
// fields, and in its size, and reads it with a new store: Size and Read
// fail with ErrSnapshotCorrupt, and so does Open, at once or at the end.
func TestSnapshotsDetectCorruption(t *testing.T) {
	id := kraft.LogEnd{Offset: 1000, Epoch: 4}
	content := snapshotBytes(2, 5000)
	damages := map[string]func(b []byte) []byte{
		"header crc":     func(b []byte) []byte { b[0] ^= 1; return b },
		"magic":          func(b []byte) []byte { b[4] ^= 1; return b },
		"offset":         func(b []byte) []byte { b[12] ^= 1; return b },
		"epoch":          func(b []byte) []byte { b[16] ^= 1; return b },
		"length":         func(b []byte) []byte { b[24] ^= 1; return b },
		"payload crc":    func(b []byte) []byte { b[25] ^= 1; return b },
		"first byte":     func(b []byte) []byte { b[29] ^= 1; return b },
		"a middle byte":  func(b []byte) []byte { b[2600] ^= 0x80; return b },
		"last byte":      func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"one byte short": func(b []byte) []byte { return b[:len(b)-1] },
		"one byte more":  func(b []byte) []byte { return append(b, 0) },
		"torn":           func(b []byte) []byte { return b[:1000] },
		"header torn":    func(b []byte) []byte { return b[:20] },
		"empty":          func([]byte) []byte { return nil },
		"zeros":          func(b []byte) []byte { return make([]byte, len(b)) },
		"a valid header with the right length, zeros after": func(b []byte) []byte {
			return append(b[:SnapshotHeaderSize], make([]byte, len(b)-SnapshotHeaderSize)...)
		},
		"another snapshot's file": func([]byte) []byte {
			dir := t.TempDir()
			s := openTestSnapshots(t, dir)
			other := kraft.LogEnd{Offset: 1000, Epoch: 3}
			writeSnapshot(t, s, other, content)
			b, err := os.ReadFile(filepath.Join(dir, SnapshotFileName(other)))
			require.NoError(t, err)
			return b
		},
	}
	for name, damage := range damages {
		dir := t.TempDir()
		s := openTestSnapshots(t, dir)
		writeSnapshot(t, s, id, content)
		require.NoError(t, s.Close())
		path := filepath.Join(dir, SnapshotFileName(id))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, damage(b), 0o644))

		s = openTestSnapshots(t, dir)
		require.Equal(t, []kraft.LogEnd{id}, s.List(), name)
		_, err = s.Size(id)
		require.ErrorIs(t, err, ErrSnapshotCorrupt, name)
		require.ErrorIs(t, err, ErrDamaged, name)
		require.Contains(t, err.Error(), path, name)
		_, err = s.Read(id, 0, 100)
		require.ErrorIs(t, err, ErrSnapshotCorrupt, name)
		_, err = readSnapshot(s, id)
		require.ErrorIs(t, err, ErrSnapshotCorrupt, name)
	}
}

func TestSnapshotsDelete(t *testing.T) {
	dir := t.TempDir()
	s := openTestSnapshots(t, dir)
	var ids []kraft.LogEnd
	for i := 1; i <= 5; i++ {
		id := kraft.LogEnd{Offset: int64(100 * i), Epoch: kraft.Epoch(1 + i/2)}
		writeSnapshot(t, s, id, snapshotBytes(int64(i), 100*i))
		ids = append(ids, id)
	}

	// A reader opened before the deletion reads on; Read was verified and
	// has the file open, and closes it.
	r, err := s.Open(ids[1])
	require.NoError(t, err)
	_, err = s.Size(ids[1])
	require.NoError(t, err)
	require.NoError(t, s.Delete(ids[1]))
	got, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, snapshotBytes(2, 200), got)
	require.NoError(t, r.Close())
	_, err = s.Size(ids[1])
	require.ErrorIs(t, err, ErrSnapshotNotFound)
	require.ErrorIs(t, s.Delete(ids[1]), ErrSnapshotNotFound)
	require.Equal(t, []kraft.LogEnd{ids[0], ids[2], ids[3], ids[4]}, s.List())

	// DeleteBefore deletes the older ones, and never the latest.
	require.NoError(t, s.DeleteBefore(ids[0]))
	require.Equal(t, []kraft.LogEnd{ids[0], ids[2], ids[3], ids[4]}, s.List())
	require.NoError(t, s.DeleteBefore(ids[3]))
	require.Equal(t, []kraft.LogEnd{ids[3], ids[4]}, s.List())
	require.NoError(t, s.DeleteBefore(kraft.LogEnd{Offset: 1 << 40, Epoch: 100}))
	require.Equal(t, []kraft.LogEnd{ids[4]}, s.List())
	require.NoError(t, s.DeleteBefore(kraft.LogEnd{Offset: 1 << 40, Epoch: 100}))
	require.Equal(t, []kraft.LogEnd{ids[4]}, s.List())
	require.Equal(t, []string{SnapshotFileName(ids[4])}, snapshotNames(t, dir))

	require.NoError(t, s.Close())
	s = openTestSnapshots(t, dir)
	require.Equal(t, []kraft.LogEnd{ids[4]}, s.List())
	require.NoError(t, s.Delete(ids[4]))
	require.Empty(t, s.List())
	require.NoError(t, s.DeleteBefore(ids[4]))
	require.Empty(t, snapshotNames(t, dir))
}

func TestSnapshotsClosed(t *testing.T) {
	s := openTestSnapshots(t, t.TempDir())
	id := kraft.LogEnd{Offset: 1, Epoch: 1}
	writeSnapshot(t, s, id, []byte("x"))
	w, err := s.Create(kraft.LogEnd{Offset: 2, Epoch: 1})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Close(), ErrClosed)
	_, err = s.Create(kraft.LogEnd{Offset: 3, Epoch: 1})
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.Size(id)
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.Read(id, 0, 1)
	require.ErrorIs(t, err, ErrClosed)
	_, err = s.Open(id)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Delete(id), ErrClosed)
	require.ErrorIs(t, s.DeleteBefore(id), ErrClosed)
	require.ErrorIs(t, w.Freeze(), ErrClosed)
	require.Equal(t, []string{SnapshotFileName(id)}, snapshotNames(t, s.Dir()), "the writer's file is gone")
}

// TestSnapshotsConcurrent serves chunks of one snapshot from several
// goroutines while others are written and deleted.
func TestSnapshotsConcurrent(t *testing.T) {
	s := openTestSnapshots(t, t.TempDir())
	id := kraft.LogEnd{Offset: 1 << 20, Epoch: 9}
	content := snapshotBytes(3, 100_000)
	writeSnapshot(t, s, id, content)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var got []byte
			for pos := int64(0); pos < int64(len(content)); {
				b, err := s.Read(id, pos, 777+g)
				if err != nil {
					errs <- err
					return
				}
				got = append(got, b...)
				pos += int64(len(b))
			}
			if !bytes.Equal(content, got) {
				errs <- errors.New("read other bytes")
			}
		}(g)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			other := kraft.LogEnd{Offset: int64(i), Epoch: 1}
			w, err := s.Create(other)
			if err == nil {
				err = w.Append(content[:1000])
			}
			if err == nil {
				err = w.Freeze()
			}
			if err == nil {
				err = s.Delete(other)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, []kraft.LogEnd{id}, s.List())
}

// TestCrashSnapshotsAtEveryPoint writes a snapshot and deletes the older
// ones, dying at each file operation in turn, crashes the machine in
// several ways at that moment, and reopens: the snapshots listed are one
// of the sets the store went through (never a torn .checkpoint: each reads
// back whole), no temporary file is left, and everything that returned
// is there.
func TestCrashSnapshotsAtEveryPoint(t *testing.T) {
	base := t.TempDir()
	a, b, c := kraft.LogEnd{Offset: 10, Epoch: 1}, kraft.LogEnd{Offset: 20, Epoch: 2}, kraft.LogEnd{Offset: 30, Epoch: 2}
	content := map[kraft.LogEnd][]byte{a: snapshotBytes(1, 3000), b: snapshotBytes(2, 10), c: snapshotBytes(3, 5000)}
	setup := func(dir string) {
		require.NoError(t, os.Mkdir(dir, 0o755))
		s, err := OpenSnapshots(dir)
		require.NoError(t, err)
		writeSnapshot(t, s, a, content[a])
		writeSnapshot(t, s, b, content[b])
		require.NoError(t, s.Close())
		// What a crash left of an earlier attempt.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "00000000000000000030-0000000002.checkpoint.part"), []byte("torn"), 0o644))
	}
	// The sets of snapshots the workload goes through, and how many of
	// its steps returned.
	sets := [][]kraft.LogEnd{{a, b}, {a, b, c}, {b, c}, {c}}
	run := func(dir string, fsys FS) int {
		s, err := openSnapshots(fsys, dir)
		if err != nil {
			return 0
		}
		defer func() { _ = s.Close() }()
		w, err := s.Create(c)
		if err != nil {
			return 0
		}
		defer func() { _ = w.Abort() }()
		for i := 0; i < 5; i++ {
			if err := w.Append(content[c][i*1000 : (i+1)*1000]); err != nil {
				return 0
			}
		}
		if err := w.Freeze(); err != nil {
			return 0
		}
		if err := s.Delete(a); err != nil {
			return 1
		}
		if err := s.DeleteBefore(c); err != nil {
			return 2
		}
		return 3
	}

	countDir := filepath.Join(base, "count")
	setup(countDir)
	counter, err := newCrashFS(-1, 0, countDir)
	require.NoError(t, err)
	require.Equal(t, 3, run(countDir, counter))
	total := counter.ops
	runs := 0
	for budget := 0; budget <= total; budget++ {
		for variant := int64(0); variant < 6; variant++ {
			runs++
			name := fmt.Sprintf("death at operation %d of %d, crash variant %d", budget, total, variant)
			dir := filepath.Join(base, fmt.Sprintf("run-%d", runs))
			setup(dir)
			cfs, err := newCrashFS(budget, int64(budget)*10+variant, dir)
			require.NoError(t, err)
			done := run(dir, cfs)
			if variant == 5 {
				// Only the process dies; a new one opens the store.
				cfs.restart()
				s, err := openSnapshots(cfs, dir)
				require.NoError(t, err, name)
				require.NoError(t, s.Close(), name)
			}
			require.NoError(t, cfs.crash(dir), name)

			s, err := openSnapshots(noSyncFS{}, dir)
			require.NoError(t, err, name)
			got := s.List()
			k := -1
			for i, set := range sets {
				if equalIDs(set, got) {
					k = i
				}
			}
			require.GreaterOrEqual(t, k, 0, "%s: %v is none of the sets the store went through", name, got)
			require.GreaterOrEqual(t, k, done, "%s: %v lacks what returned", name, got)
			for _, id := range got {
				b, err := readSnapshot(s, id)
				require.NoError(t, err, "%s: %+v", name, id)
				require.Equal(t, content[id], b, "%s: %+v", name, id)
				size, err := s.Size(id)
				require.NoError(t, err, name)
				require.Equal(t, int64(len(content[id])), size, name)
			}
			var want []string
			for _, id := range got {
				want = append(want, SnapshotFileName(id))
			}
			require.Equal(t, want, snapshotNames(t, dir), "%s: files left over", name)
			require.NoError(t, s.Close())
			require.NoError(t, os.RemoveAll(dir))
		}
	}
	t.Logf("%d crash runs", runs)
}

func equalIDs(a, b []kraft.LogEnd) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSnapshotsListOrder: List orders ids as kraft.LogEnd.Compare does, by
// epoch first, also after a reopen, where the file names sort by offset.
func TestSnapshotsListOrder(t *testing.T) {
	dir := t.TempDir()
	s := openTestSnapshots(t, dir)
	ids := []kraft.LogEnd{{Offset: 300, Epoch: 1}, {Offset: 200, Epoch: 2}, {Offset: 250, Epoch: 2}, {Offset: 100, Epoch: 3}}
	for _, i := range []int{2, 0, 3, 1} {
		writeSnapshot(t, s, ids[i], nil)
	}
	require.Equal(t, ids, s.List())
	require.NoError(t, s.Close())
	s = openTestSnapshots(t, dir)
	require.Equal(t, ids, s.List())
	latest, _ := s.Latest()
	require.Equal(t, ids[3], latest)
	earliest, _ := s.Earliest()
	require.Equal(t, ids[0], earliest)
}
