package kafkawire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
)

// Snapshots in Kafka's format (KIP-630; Kafka's RecordsSnapshotWriter):
// v2 record batches whose offsets count from 0 within the snapshot, all in
// the snapshot's epoch: first a control batch holding a SnapshotHeader
// control record (SnapshotHeaderRecord v0: the timestamp of the last
// record the snapshot contains), then the state machine's data batches,
// then a control batch holding a SnapshotFooter control record
// (SnapshotFooterRecord v0). A KIP-853 snapshot of a dynamic quorum
// (kraft.version 1) has a KRaftVersion and a VotersRecord control record
// after the header in the first batch; a static quorum's has neither.
//
// A runtime that speaks Kafka's protocol keeps its snapshots in this format
// (its node.Config.Snapshot writes them with SnapshotWriter and its Restore
// reads them with ReadSnapshot), so that FetchSnapshot carries the bytes
// as they are stored, in both directions, and a snapshot's size and the
// positions of its chunks are the same numbers on every replica
// (docs/design.md D83).

// SnapshotWriter writes a snapshot in Kafka's format to an io.Writer.
type SnapshotWriter struct {
	w     io.Writer
	epoch int32
	next  int64
	buf   []byte
	err   error
}

// NewSnapshotWriter starts the snapshot id on w: it writes the
// SnapshotHeader control batch, stamped ts (ms), with lastContained (ms)
// as the header's last_contained_log_timestamp.
func NewSnapshotWriter(w io.Writer, id kraft.LogEnd, ts, lastContained int64) (*SnapshotWriter, error) {
	return NewVotersSnapshotWriter(w, id, ts, lastContained, nil)
}

// NewVotersSnapshotWriter is NewSnapshotWriter for a snapshot of a dynamic
// quorum: with voters (nil: a static quorum's snapshot, as
// NewSnapshotWriter) the first batch is [SnapshotHeader, KRaftVersion(1),
// Voters], as Kafka's RecordsSnapshotWriter writes it at kraft.version 1
// (docs/design.md D157). The VotersRecord names the listeners under
// CONTROLLER (Format.NewVotersSnapshotWriter).
func NewVotersSnapshotWriter(w io.Writer, id kraft.LogEnd, ts, lastContained int64, voters []replica.Voter) (*SnapshotWriter, error) {
	return Format{}.NewVotersSnapshotWriter(w, id, ts, lastContained, voters)
}

// NewVotersSnapshotWriter is the package's NewVotersSnapshotWriter with
// the VotersRecord under f's listener name (docs/design.md D310).
func (f Format) NewVotersSnapshotWriter(w io.Writer, id kraft.LogEnd, ts, lastContained int64, voters []replica.Voter) (*SnapshotWriter, error) {
	s := &SnapshotWriter{w: w, epoch: int32(id.Epoch)}
	value := binary.BigEndian.AppendUint16(nil, 0) // version
	value = binary.BigEndian.AppendUint64(value, uint64(lastContained))
	value = append(value, 0) // no tagged fields
	recs := []Record{{Key: controlKey(ControlSnapshotHeader), Value: value}}
	if voters != nil {
		vv, err := f.VotersValue(voters)
		if err != nil {
			return nil, err
		}
		recs = append(recs,
			Record{OffsetDelta: 1, Key: controlKey(ControlKRaftVersion), Value: KRaftVersionValue(kraft.KRaftVersionReconfig)},
			Record{OffsetDelta: 2, Key: controlKey(ControlVoters), Value: vv})
	}
	s.control(ts, recs...)
	return s, s.err
}

func (s *SnapshotWriter) control(ts int64, recs ...Record) {
	b := Batch{BaseOffset: s.next, PartitionLeaderEpoch: s.epoch, Attributes: AttrControl,
		FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		LastOffsetDelta: int32(len(recs) - 1), Records: recs}
	s.write(&b)
}

func (s *SnapshotWriter) write(b *Batch) {
	if s.err != nil {
		return
	}
	s.buf = AppendBatch(s.buf[:0], b)
	s.next = b.BaseOffset + int64(b.LastOffsetDelta) + 1
	_, s.err = s.w.Write(s.buf)
}

// Append writes one data batch of values (data records with a null key,
// as KafkaRaftClient's state machines write them), stamped ts (ms).
func (s *SnapshotWriter) Append(ts int64, values ...[]byte) error {
	if len(values) == 0 {
		return s.err
	}
	b := Batch{BaseOffset: s.next, PartitionLeaderEpoch: s.epoch, FirstTimestamp: ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, LastOffsetDelta: int32(len(values) - 1)}
	for i, v := range values {
		b.Records = append(b.Records, Record{OffsetDelta: int32(i), Value: v})
	}
	s.write(&b)
	return s.err
}

// Close writes the SnapshotFooter control batch, stamped ts (ms).
func (s *SnapshotWriter) Close(ts int64) error {
	s.control(ts, Record{Key: controlKey(ControlSnapshotFooter), Value: []byte{0, 0, 0}}) // version 0, no tagged fields
	return s.err
}

// ErrNotKafkaSnapshot is returned by ReadSnapshot for bytes that are not
// a whole snapshot in Kafka's format.
var ErrNotKafkaSnapshot = errors.New("kafkawire: not a snapshot in Kafka's format")

// SnapshotContents is what a snapshot in Kafka's format holds.
type SnapshotContents struct {
	// LastContainedTimestamp is the SnapshotHeader's
	// last_contained_log_timestamp.
	LastContainedTimestamp int64
	// Values are the data records' values, in order.
	Values [][]byte
	// KRaftVersion is the KRaftVersionRecord's level (0 without one), and
	// Voters the VotersRecord's voter set (nil without one: a static
	// quorum's snapshot).
	KRaftVersion int16
	Voters       []replica.Voter
}

// ReadSnapshot reads a whole snapshot in Kafka's format: CRC-checked
// batches, a SnapshotHeader first and a SnapshotFooter last (Kafka's
// RecordsIterator checks the same). KRaftVersion and VotersRecord control
// records give the kraft.version and the voter set, read under the
// listener name CONTROLLER (Format.ReadSnapshot).
func ReadSnapshot(r io.Reader) (SnapshotContents, error) { return Format{}.ReadSnapshot(r) }

// ReadSnapshot is the package's ReadSnapshot with the VotersRecord read
// under f's listener name (docs/design.md D310).
func (f Format) ReadSnapshot(r io.Reader) (SnapshotContents, error) {
	var out SnapshotContents
	raw, err := io.ReadAll(r)
	if err != nil {
		return out, err
	}
	batches, err := ReadBatches(raw)
	if err != nil {
		return out, err
	}
	if n := batchBytes(batches); n != len(raw) {
		return out, fmt.Errorf("%w: %d bytes after the last whole batch", ErrNotKafkaSnapshot, len(raw)-n)
	}
	sawHeader, sawFooter := false, false
	for i := range batches {
		b := &batches[i]
		for _, rec := range b.Records {
			if sawFooter {
				return out, fmt.Errorf("%w: records after the SnapshotFooter", ErrNotKafkaSnapshot)
			}
			if !b.Control() {
				if !sawHeader {
					return out, fmt.Errorf("%w: a data record before the SnapshotHeader", ErrNotKafkaSnapshot)
				}
				out.Values = append(out.Values, rec.Value)
				continue
			}
			if len(rec.Key) != 4 {
				return out, fmt.Errorf("%w: control record key %x", ErrNotKafkaSnapshot, rec.Key)
			}
			switch typ := int16(binary.BigEndian.Uint16(rec.Key[2:])); typ {
			case ControlSnapshotHeader:
				if sawHeader || len(rec.Value) < 10 {
					return out, fmt.Errorf("%w: a second or short SnapshotHeader", ErrNotKafkaSnapshot)
				}
				sawHeader = true
				out.LastContainedTimestamp = int64(binary.BigEndian.Uint64(rec.Value[2:]))
			case ControlSnapshotFooter:
				sawFooter = true
			case ControlKRaftVersion, ControlVoters:
				if !sawHeader {
					return out, fmt.Errorf("%w: control record %d before the SnapshotHeader", ErrNotKafkaSnapshot, typ)
				}
				if typ == ControlKRaftVersion {
					out.KRaftVersion, err = ReadKRaftVersionValue(rec.Value)
				} else {
					out.Voters, err = f.ReadVotersValue(rec.Value)
				}
				if err != nil {
					return out, fmt.Errorf("%w: %w", ErrNotKafkaSnapshot, err)
				}
			default:
				return out, fmt.Errorf("%w: control record type %d", ErrNotKafkaSnapshot, typ)
			}
		}
	}
	if !sawHeader || !sawFooter {
		return out, fmt.Errorf("%w: header %v, footer %v", ErrNotKafkaSnapshot, sawHeader, sawFooter)
	}
	return out, nil
}

// batchBytes is the encoded size of batches as ReadBatches read them.
func batchBytes(batches []Batch) int {
	n := 0
	for i := range batches {
		n += len(AppendBatch(nil, &batches[i]))
	}
	return n
}

// SnapshotVoters reads the voter set of a whole snapshot in Kafka's format
// (nil: none), for node.Config.SnapshotVoters, under the listener name
// CONTROLLER (Format.SnapshotVoters).
func SnapshotVoters(r io.Reader) ([]replica.Voter, error) { return Format{}.SnapshotVoters(r) }

// SnapshotVoters is the package's SnapshotVoters under f's listener name
// (docs/design.md D310).
func (f Format) SnapshotVoters(r io.Reader) ([]replica.Voter, error) {
	c, err := f.ReadSnapshot(r)
	if err != nil {
		return nil, err
	}
	return c.Voters, nil
}
