package kafkawire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSnapshotFormatGolden writes the snapshot a Kafka leader served
// (fetch_snapshot-v1: snapshot (4, 1), three data records) with
// SnapshotWriter, from the same records and timestamps: the bytes are
// Kafka's. ReadSnapshot reads Kafka's bytes back to the records.
func TestSnapshotFormatGolden(t *testing.T) {
	_, resp, err := ReadResponse(readGolden(t, "fetch_snapshot-v1.response.hex"), FetchSnapshot, 1)
	if err != nil {
		t.Fatal(err)
	}
	golden := resp.(*kmsg.FetchSnapshotResponse).Topics[0].Partitions[0].Bytes
	batches, err := ReadBatches(golden)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadSnapshot(bytes.NewReader(golden))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Values) != 3 || string(got.Values[0]) != `{"offset":1,"epoch":1,"text":"golden-0"}` {
		t.Fatalf("values %q", got.Values)
	}
	var buf bytes.Buffer
	w, err := NewSnapshotWriter(&buf, kraft.LogEnd{Offset: 4, Epoch: 1}, batches[0].FirstTimestamp, got.LastContainedTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append(batches[1].FirstTimestamp, got.Values...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(batches[2].FirstTimestamp); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), golden) {
		t.Fatalf("written\n%x\nKafka's\n%x", buf.Bytes(), golden)
	}
	// Cut anywhere, or without its footer, it is not a snapshot.
	for _, cut := range []int{1, 83, 200, len(golden) - 75, len(golden) - 1} {
		if _, err := ReadSnapshot(bytes.NewReader(golden[:cut])); !errors.Is(err, ErrNotKafkaSnapshot) {
			t.Errorf("cut at %d: %v", cut, err)
		}
	}
	// Data before the header is refused.
	var bad bytes.Buffer
	bad.Write(AppendBatch(nil, &Batch{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: []Record{{Value: []byte("x")}}}))
	bad.Write(golden)
	if _, err := ReadSnapshot(&bad); !errors.Is(err, ErrNotKafkaSnapshot) {
		t.Errorf("data before the header: %v", err)
	}
}

// TestBarrierCrossesAsLeaderChange: a read barrier between data records
// goes out as a LeaderChange control batch with leader -1 and no voters
// (what a Kafka replica takes anywhere in the log) and comes back as a
// barrier at its offset, the records around it unchanged.
func TestBarrierCrossesAsLeaderChange(t *testing.T) {
	entries := []storage.Entry{
		{Offset: 7, Epoch: 2, Data: []byte{replica.RecordData, 'a'}},
		{Offset: 8, Epoch: 2, Data: []byte{replica.RecordBarrier}},
		{Offset: 9, Epoch: 2, Data: []byte{replica.RecordData, 'b'}},
	}
	raw, err := AppendEntries(nil, entries, 5)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := ReadBatches(raw)
	if err != nil || len(batches) != 3 || !batches[1].Control() || batches[0].Control() || batches[2].Control() {
		t.Fatalf("%d batches %+v: %v", len(batches), batches, err)
	}
	var m kmsg.LeaderChangeMessage
	if err := m.ReadFrom(batches[1].Records[0].Value); err != nil || m.LeaderID != -1 || len(m.Voters) != 0 ||
		string(batches[1].Records[0].Key) != string(controlKey(ControlLeaderChange)) {
		t.Fatalf("barrier batch %+v: %+v %v", batches[1], m, err)
	}
	got, _, err := ReadEntries(raw)
	if err != nil || !reflect.DeepEqual(got, entries) {
		t.Fatalf("read back %+v: %v", got, err)
	}
}
