package kafkawire

import (
	"path/filepath"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// goldenSeeds adds every golden frame of kind ("request" or "response") to
// a fuzz corpus.
func goldenSeeds(f *testing.F, kind string) {
	names, err := filepath.Glob(filepath.Join("testdata", "golden", "*."+kind+".hex"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no golden %s frames: %v", kind, err)
	}
	for _, n := range names {
		f.Add(readGolden(f, filepath.Base(n)))
	}
}

// FuzzReadRequest: a server reads whatever arrives on a connection without
// panicking, and what it decodes re-encodes.
func FuzzReadRequest(f *testing.F) {
	goldenSeeds(f, "request")
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, req, err := ReadRequest(frame)
		if err != nil {
			return
		}
		m, err := DecodeRequest(req, kraft.ReplicaKey{ID: 1})
		if err != nil || m.Event == nil {
			return
		}
		if _, err := EncodeRequest(m, h.APIVersion); err != nil {
			t.Fatalf("a decoded %T does not re-encode at v%d: %v", m.Event, h.APIVersion, err)
		}
	})
}

// FuzzReadResponse: a client reads whatever answer arrives without
// panicking (records included).
func FuzzReadResponse(f *testing.F) {
	goldenSeeds(f, "response")
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, api := range raftAPIs {
			r := Supported[api]
			for v := r.Min; v <= r.Max; v++ {
				if _, resp, err := ReadResponse(frame, api, v); err == nil {
					_, _ = DecodeResponse(resp, 1)
				}
			}
		}
	})
}

// FuzzReadBatches: record batches from the network never panic the
// decoder, and a batch that passes its CRC re-encodes to its own bytes.
func FuzzReadBatches(f *testing.F) {
	for _, g := range []struct {
		name     string
		key, ver int16
	}{{"fetch-v17-control", Fetch, 17}, {"fetch-v17-data", Fetch, 17}, {"fetch_snapshot-v1", FetchSnapshot, 1}} {
		_, resp, err := ReadResponse(readGolden(f, g.name+".response.hex"), g.key, g.ver)
		if err != nil {
			f.Fatal(err)
		}
		switch r := resp.(type) {
		case *kmsg.FetchResponse:
			f.Add(r.Topics[0].Partitions[0].RecordBatches)
		case *kmsg.FetchSnapshotResponse:
			f.Add(r.Topics[0].Partitions[0].Bytes)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		batches, err := ReadBatches(src)
		if err != nil {
			return
		}
		var out []byte
		for i := range batches {
			out = AppendBatch(out, &batches[i])
		}
		if again, err := ReadBatches(out); err != nil || len(again) != len(batches) {
			t.Fatalf("re-encoded batches do not read back: %v", err)
		}
		_, _, _ = ReadEntries(src)
	})
}
