package storage

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

// benchBytesEnv sets the size of the log BenchmarkOpen recovers, in bytes
// with an optional K, M or G suffix (powers of 1024), for example
//
//	KRAFT_STORAGE_BENCH_BYTES=1G go test -run XXX -bench Open ./storage
//
// The default, 16M, keeps a one-iteration run of every benchmark short.
const benchBytesEnv = "KRAFT_STORAGE_BENCH_BYTES"

func benchBytes(b *testing.B) int64 {
	s := os.Getenv(benchBytesEnv)
	if s == "" {
		return 16 << 20
	}
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult = 1 << 10
	case strings.HasSuffix(s, "M"):
		mult = 1 << 20
	case strings.HasSuffix(s, "G"):
		mult = 1 << 30
	}
	n, err := strconv.ParseInt(strings.TrimRight(s, "KMG"), 10, 64)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q is not a size", benchBytesEnv, s)
	}
	return n * mult
}

// benchBatch returns a batch of records of size bytes holding about
// batchBytes bytes.
func benchBatch(size, batchBytes int) [][]byte {
	n := batchBytes / size
	if n < 1 {
		n = 1
	}
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = make([]byte, size)
		for j := range recs[i] {
			recs[i][j] = byte(i + j)
		}
	}
	return recs
}

// BenchmarkAppend appends batches of 64 KiB of records of 100 B and 10 KB,
// with and without a Sync after each batch. MB/s counts payload bytes.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{100, 10_000} {
		for _, sync := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dB/sync=%v", size, sync), func(b *testing.B) {
				l, _, err := Open(b.TempDir(), Options{})
				require.NoError(b, err)
				defer func() { _ = l.Close() }()
				batch := benchBatch(size, 64<<10)
				b.SetBytes(int64(len(batch) * size))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := l.Append(1, batch...); err != nil {
						b.Fatal(err)
					}
					if sync {
						if err := l.Sync(); err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// fillBenchLog writes about total bytes of records of size bytes to a new
// log in dir, synced.
func fillBenchLog(b *testing.B, dir string, size int, total int64) *FileLog {
	l, _, err := Open(dir, Options{})
	require.NoError(b, err)
	batch := benchBatch(size, 1<<20)
	for written := int64(0); written < total; written += int64(len(batch) * size) {
		_, err := l.Append(1, batch...)
		require.NoError(b, err)
	}
	require.NoError(b, l.Sync())
	return l
}

// BenchmarkRead reads a 16 MiB log from the page cache in reads of 1 MiB,
// from start to end and again. MB/s counts payload bytes.
func BenchmarkRead(b *testing.B) {
	for _, size := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			l := fillBenchLog(b, b.TempDir(), size, 16<<20)
			defer func() { _ = l.Close() }()
			const maxBytes = 1 << 20
			b.SetBytes(int64(maxBytes / size * size))
			b.ReportAllocs()
			b.ResetTimer()
			from := int64(0)
			for i := 0; i < b.N; i++ {
				es, err := l.Read(from, maxBytes)
				if err != nil {
					b.Fatal(err)
				}
				from = es[len(es)-1].Offset + 1
				if from+int64(maxBytes/size) > l.End().Offset {
					from = 0
				}
			}
		})
	}
}

// BenchmarkReadTail reads the last records of a log as the runtime does
// on every commit (a follower's Fetch, the applier): from a few records
// before the end, with the runtime's 8 MiB limit, in logs of 101-byte and
// 1 KiB records. MB/s counts payload bytes.
func BenchmarkReadTail(b *testing.B) {
	for _, size := range []int{101, 1024} {
		for _, records := range []int{1, 16} {
			b.Run(fmt.Sprintf("%dB/records=%d", size, records), func(b *testing.B) {
				l := fillBenchLog(b, b.TempDir(), size, 1<<20)
				defer func() { _ = l.Close() }()
				from := l.End().Offset - int64(records)
				b.SetBytes(int64(size * records))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					es, err := l.Read(from, 8<<20)
					if err != nil || len(es) != records {
						b.Fatal(len(es), err)
					}
				}
			})
		}
	}
}

// BenchmarkOpen opens (recovers) a log of KRAFT_STORAGE_BENCH_BYTES bytes
// of 1 KB records, 16 MiB by default, from the page cache: every frame is
// read and checked. MB/s counts the log's bytes.
func BenchmarkOpen(b *testing.B) {
	total := benchBytes(b)
	dir := b.TempDir()
	l := fillBenchLog(b, dir, 1000, total)
	var size int64
	for _, s := range l.segs {
		size += s.size
	}
	records := l.End().Offset
	require.NoError(b, l.Close())
	b.Run(fmt.Sprintf("%dMiB", total>>20), func(b *testing.B) {
		b.SetBytes(size)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			l, rec, err := Open(dir, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if rec.Records != records {
				b.Fatalf("recovered %d records, want %d", rec.Records, records)
			}
			_ = l.Close()
		}
	})
}

// BenchmarkFsync measures the machine: one 4 KiB write and an fsync.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "fsync"))
	require.NoError(b, err)
	defer func() { _ = f.Close() }()
	buf := make([]byte, 4096)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteQuorumState writes the quorum-state file durably.
func BenchmarkWriteQuorumState(b *testing.B) {
	path := QuorumStatePath(b.TempDir())
	d := QuorumStateData{Version: 1, LeaderID: 1, LeaderEpoch: 2, VotedID: 1, VotedDirectoryID: dirJ8}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.LeaderEpoch = int32(i)
		if err := WriteQuorumStateData(path, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotWrite writes a snapshot of KRAFT_STORAGE_BENCH_BYTES
// bytes (16 MiB by default) in chunks of 1 MiB and freezes it (two fsyncs
// and a rename), then deletes it. MB/s counts the snapshot's bytes.
func BenchmarkSnapshotWrite(b *testing.B) {
	total := benchBytes(b)
	s, err := OpenSnapshots(b.TempDir())
	require.NoError(b, err)
	defer func() { _ = s.Close() }()
	chunk := benchBatch(1<<20, 1<<20)[0]
	b.SetBytes(total)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := kraft.LogEnd{Offset: int64(i), Epoch: 1}
		w, err := s.Create(id)
		if err != nil {
			b.Fatal(err)
		}
		for n := int64(0); n < total; n += int64(len(chunk)) {
			if err := w.Append(chunk); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Freeze(); err != nil {
			b.Fatal(err)
		}
		if err := s.Delete(id); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSnapshot writes a snapshot of total bytes and verifies it once.
func benchSnapshot(b *testing.B, total int64) (*Snapshots, kraft.LogEnd) {
	s, err := OpenSnapshots(b.TempDir())
	require.NoError(b, err)
	id := kraft.LogEnd{Offset: 1, Epoch: 1}
	w, err := s.Create(id)
	require.NoError(b, err)
	chunk := benchBatch(1<<20, 1<<20)[0]
	for n := int64(0); n < total; n += int64(len(chunk)) {
		require.NoError(b, w.Append(chunk))
	}
	require.NoError(b, w.Freeze())
	_, err = s.Size(id)
	require.NoError(b, err)
	return s, id
}

// BenchmarkSnapshotRead serves a snapshot in FetchSnapshot chunks of 1 MiB
// from the page cache (the checksum was verified by the first Size).
// MB/s counts the bytes read.
func BenchmarkSnapshotRead(b *testing.B) {
	s, id := benchSnapshot(b, 16<<20)
	defer func() { _ = s.Close() }()
	size, err := s.Size(id)
	require.NoError(b, err)
	const chunk = 1 << 20
	b.SetBytes(chunk)
	b.ReportAllocs()
	b.ResetTimer()
	pos := int64(0)
	for i := 0; i < b.N; i++ {
		if pos == size {
			pos = 0
		}
		got, err := s.Read(id, pos, chunk)
		if err != nil {
			b.Fatal(err)
		}
		pos += int64(len(got))
	}
}

// BenchmarkSnapshotLoad reads a whole snapshot of KRAFT_STORAGE_BENCH_BYTES
// bytes with Open, checking its checksum, as a host loads one at start;
// and verifies one as the first Size or Read of a snapshot does. MB/s
// counts the snapshot's bytes.
func BenchmarkSnapshotLoad(b *testing.B) {
	total := benchBytes(b)
	s, id := benchSnapshot(b, total)
	defer func() { _ = s.Close() }()
	b.Run("Open", func(b *testing.B) {
		b.SetBytes(total)
		for i := 0; i < b.N; i++ {
			r, err := s.Open(id)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				b.Fatal(err)
			}
			_ = r.Close()
		}
	})
	b.Run("verify", func(b *testing.B) {
		b.SetBytes(total)
		for i := 0; i < b.N; i++ {
			s, err := OpenSnapshots(s.Dir())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Size(id); err != nil {
				b.Fatal(err)
			}
			_ = s.Close()
		}
	})
}
