package kafkawire

import (
	"testing"

	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// benchEntries is a Fetch response's worth of data records: 100 records of
// 100 bytes in one epoch.
func benchEntries() []storage.Entry {
	entries := make([]storage.Entry, 100)
	for i := range entries {
		data := make([]byte, 101)
		data[0] = replica.RecordData
		entries[i] = storage.Entry{Offset: int64(1000 + i), Epoch: 3, Data: data}
	}
	return entries
}

// BenchmarkAppendEntries is the cost of turning log entries into v2 record
// batches (a leader answering a Fetch).
func BenchmarkAppendEntries(b *testing.B) {
	entries := benchEntries()
	var buf []byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		var err error
		if buf, err = AppendEntries(buf[:0], entries, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkReadEntries is the cost of checking and decoding v2 record
// batches into log entries (a follower taking a Fetch response).
func BenchmarkReadEntries(b *testing.B) {
	raw, err := AppendEntries(nil, benchEntries(), 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for i := 0; i < b.N; i++ {
		if _, _, err := ReadEntries(raw); err != nil {
			b.Fatal(err)
		}
	}
}
