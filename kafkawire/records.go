package kafkawire

import (
	"encoding/binary"
	"fmt"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's control record types (ControlRecordType) that KRaft writes.
const (
	ControlLeaderChange   int16 = 2
	ControlSnapshotHeader int16 = 3
	ControlSnapshotFooter int16 = 4
	ControlKRaftVersion   int16 = 5
	ControlVoters         int16 = 6
)

// The log payloads of package replica (its first byte is the record's kind)
// become Kafka records as follows:
//
//   - a data record (replica.RecordData) is a data record with a null key
//     and the payload after the kind byte as its value, as Kafka's
//     KafkaRaftClient writes a record its state machine appended;
//   - a LeaderChange record (replica.RecordLeaderChange, kraft's
//     AppendLeaderChange as JSON) is a control batch of its own holding a
//     LeaderChange control record (key version 0, type 2; value
//     LeaderChangeMessage v0: leader id, voter ids, granting voter ids),
//     as Kafka's LeaderState writes it at the start of an epoch. Directory
//     ids and the VotersRecord flag do not cross: LeaderChangeMessage v0
//     has no directory ids, and the flag is kraft's note that a
//     VotersRecord follows in the log.
//
//   - a read barrier (replica.RecordBarrier, a leader's no-op) is a
//     LeaderChange control batch whose leader id is -1 and whose voter
//     lists are empty: Kafka has no no-op record, its replicas take a
//     LeaderChange control record anywhere in the log and act on none of
//     its fields (its state machines never see control records), and a
//     LeaderChange always names a leader otherwise, so ReadEntries turns
//     it back into a barrier.
//
//   - a VotersRecord (replica.RecordVoters) is a control batch of its own
//     holding a Voters control record (type 6, VotersRecord v0 as
//     VotersValue writes it), and a KRaftVersionRecord
//     (replica.RecordKRaftVersion) one holding a KRaftVersion control
//     record (type 5, KRaftVersionRecord v0). A first leader's
//     [LeaderChange, KRaftVersion, Voters] (docs/design.md D155) thus
//     crosses as three batches of one record each, at the offsets Kafka's
//     one batch of three gives them; Kafka's replicas read control records
//     one by one (KRaftControlRecordStateMachine), whatever their batches
//     (docs/design.md D156).
//
// ReadEntries maps the other way, Kafka's batches of several control
// records included; it refuses the control record types KRaft never
// writes into a log (snapshot header and footer, and the others).

// AppendEntries appends log entries as v2 record batches: a batch per
// entry, a control batch for a LeaderChange or a barrier. Kafka's replicas
// append whole batches only and assume that the high watermark never falls
// inside one (Kafka's leader forwards the batches it made, so every replica
// holds the same batches, and a high watermark, some replica's log end, is
// a batch boundary on all of them). kraft's log keeps entries, not
// batches, and a leader reads them anew for each Fetch: batches of several
// entries would differ from follower to follower, and a follower given
// offsets 5 to 7 in one batch while the high watermark is 6 could not read
// its committed records (Kafka's MockLog stops with "Expected to find at
// least one entry"). With a batch per entry every offset is a boundary
// (docs/design.md D83). Each batch's partition leader epoch is its entry's
// epoch; every record gets timestamp ts (Kafka's leader stamps a batch
// with its append time). Entries must have consecutive offsets.
// VotersRecords name the listeners under CONTROLLER (Format.AppendEntries).
func AppendEntries(dst []byte, entries []storage.Entry, ts int64) ([]byte, error) {
	return Format{}.AppendEntries(dst, entries, ts)
}

// AppendEntries is the package's AppendEntries with VotersRecords under
// f's listener name (docs/design.md D310).
func (f Format) AppendEntries(dst []byte, entries []storage.Entry, ts int64) ([]byte, error) {
	// One record slice for every batch: each is encoded before the next.
	b := Batch{Records: make([]Record, 0, 1)}
	flush := func() {
		if len(b.Records) > 0 {
			dst = AppendBatch(dst, &b)
		}
		b.Records = b.Records[:0]
	}
	for i, e := range entries {
		if i > 0 && e.Offset != entries[i-1].Offset+1 {
			return dst, fmt.Errorf("kafkawire: entry offsets %d then %d are not consecutive", entries[i-1].Offset, e.Offset)
		}
		if len(e.Data) == 0 {
			return dst, fmt.Errorf("kafkawire: entry at offset %d has no kind byte", e.Offset)
		}
		switch e.Data[0] {
		case replica.RecordData:
			recs := b.Records[:0]
			b = newBatch(e, ts, 0)
			b.Records = append(recs, Record{Value: e.Data[1:]})
			flush()
		case replica.RecordLeaderChange, replica.RecordBarrier:
			value := barrierValue
			if e.Data[0] == replica.RecordLeaderChange {
				var err error
				if value, err = leaderChangeValue(e.Data); err != nil {
					return dst, fmt.Errorf("kafkawire: entry at offset %d: %w", e.Offset, err)
				}
			}
			recs := b.Records[:0]
			b = newBatch(e, ts, AttrControl)
			b.Records = recs
			b.Records = append(b.Records, Record{Key: controlKey(ControlLeaderChange), Value: value})
			flush()
		case replica.RecordVoters, replica.RecordKRaftVersion:
			typ, value, err := f.kip853Value(e.Data)
			if err != nil {
				return dst, fmt.Errorf("kafkawire: entry at offset %d: %w", e.Offset, err)
			}
			recs := b.Records[:0]
			b = newBatch(e, ts, AttrControl)
			b.Records = append(recs, Record{Key: controlKey(typ), Value: value})
			flush()
		default:
			return dst, fmt.Errorf("kafkawire: entry at offset %d: log record kind %d has no Kafka mapping yet", e.Offset, e.Data[0])
		}
	}
	flush()
	return dst, nil
}

// kip853Value is the Kafka control record of a VotersRecord or a
// KRaftVersionRecord entry: its type and value.
func (f Format) kip853Value(data []byte) (int16, []byte, error) {
	if data[0] == replica.RecordKRaftVersion {
		if len(data) != 3 {
			return 0, nil, fmt.Errorf("KRaftVersionRecord of %d bytes", len(data))
		}
		return ControlKRaftVersion, KRaftVersionValue(int16(binary.BigEndian.Uint16(data[1:]))), nil
	}
	vs, err := replica.DecodeVoters(data[1:])
	if err != nil {
		return 0, nil, err
	}
	value, err := f.VotersValue(vs)
	return ControlVoters, value, err
}

func newBatch(e storage.Entry, ts int64, attrs int16) Batch {
	return Batch{
		BaseOffset: e.Offset, PartitionLeaderEpoch: int32(e.Epoch), Attributes: attrs,
		FirstTimestamp: ts, MaxTimestamp: ts, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
	}
}

// barrierValue is a read barrier's LeaderChangeMessage v0: leader -1, no
// voters.
var barrierValue = (&kmsg.LeaderChangeMessage{Version: 0, LeaderID: -1}).AppendTo(nil)

func controlKey(typ int16) []byte {
	k := kmsg.ControlRecordKey{Version: 0, Type: kmsg.ControlRecordKeyType(typ)}
	return k.AppendTo(nil)
}

func leaderChangeValue(data []byte) ([]byte, error) {
	a, err := replica.ReadLeaderChangeRecord(data)
	if err != nil {
		return nil, fmt.Errorf("LeaderChange record: %w", err)
	}
	if a.LeaderID < 0 {
		// Its leader writes it, naming itself; leader -1 marks a barrier.
		return nil, fmt.Errorf("LeaderChange record without a leader")
	}
	m := kmsg.LeaderChangeMessage{Version: 0, LeaderID: int32(a.LeaderID)}
	for _, v := range a.Voters {
		m.Voters = append(m.Voters, kmsg.LeaderChangeMessageVoter{VoterID: int32(v.ID)})
	}
	for _, v := range a.GrantingVoters {
		m.GrantingVoters = append(m.GrantingVoters, kmsg.LeaderChangeMessageVoter{VoterID: int32(v.ID)})
	}
	return m.AppendTo(nil), nil
}

// ReadEntries decodes v2 record batches (ReadBatches: CRC-checked) into log
// entries, the inverse of AppendEntries: an entry per record at the batch's
// base offset plus the record's offset delta, in the batch's partition
// leader epoch. It also returns the first batch's base timestamp (0 without
// batches), which AppendEntries takes back. VotersRecords are read under
// the listener name CONTROLLER (Format.ReadEntries).
func ReadEntries(src []byte) ([]storage.Entry, int64, error) { return Format{}.ReadEntries(src) }

// ReadEntries is the package's ReadEntries with VotersRecords read under
// f's listener name (docs/design.md D310).
func (f Format) ReadEntries(src []byte) ([]storage.Entry, int64, error) {
	// The records alias src; each data record is copied once, into one
	// block for them all (at most src's size), behind its kind byte.
	var entries []storage.Entry
	var block []byte
	var ts int64
	first := true
	err := eachBatch(src, true, true, func(b *Batch) error {
		if first {
			ts, first = b.FirstTimestamp, false
			block = make([]byte, 0, len(src))
		}
		for _, r := range b.Records {
			e := storage.Entry{Offset: b.BaseOffset + int64(r.OffsetDelta), Epoch: kraft.Epoch(b.PartitionLeaderEpoch)}
			if b.Control() {
				var err error
				if e.Data, err = f.controlEntry(e.Epoch, r); err != nil {
					return fmt.Errorf("kafkawire: offset %d: %w", e.Offset, err)
				}
			} else {
				start := len(block)
				block = append(append(block, replica.RecordData), r.Value...)
				e.Data = block[start:len(block):len(block)]
			}
			entries = append(entries, e)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if len(entries) == 0 {
		return nil, 0, nil
	}
	return entries, ts, nil
}

func (f Format) controlEntry(epoch kraft.Epoch, r Record) ([]byte, error) {
	var k kmsg.ControlRecordKey
	if err := k.ReadFrom(r.Key); err != nil || len(r.Key) != 4 {
		return nil, fmt.Errorf("control record key %x", r.Key)
	}
	switch int16(k.Type) {
	case ControlLeaderChange:
	case ControlKRaftVersion:
		v, err := ReadKRaftVersionValue(r.Value)
		if err != nil {
			return nil, err
		}
		return replica.KRaftVersionRecord(v), nil
	case ControlVoters:
		vs, err := f.ReadVotersValue(r.Value)
		if err != nil {
			return nil, err
		}
		return append([]byte{replica.RecordVoters}, replica.EncodeVoters(vs)...), nil
	default:
		return nil, fmt.Errorf("control record type %d does not belong in a log", k.Type)
	}
	var m kmsg.LeaderChangeMessage
	if err := m.ReadFrom(r.Value); err != nil {
		return nil, fmt.Errorf("LeaderChange record: %w", err)
	}
	if m.LeaderID == -1 && len(m.Voters) == 0 && len(m.GrantingVoters) == 0 {
		return []byte{replica.RecordBarrier}, nil
	}
	a := kraft.AppendLeaderChange{Epoch: epoch, LeaderID: kraft.NodeID(m.LeaderID)}
	for _, v := range m.Voters {
		a.Voters = append(a.Voters, kraft.ReplicaKey{ID: kraft.NodeID(v.VoterID)})
	}
	for _, v := range m.GrantingVoters {
		a.GrantingVoters = append(a.GrantingVoters, kraft.ReplicaKey{ID: kraft.NodeID(v.VoterID)})
	}
	return replica.LeaderChangeRecord(a), nil
}
