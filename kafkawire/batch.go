package kafkawire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Kafka's v2 record batch (DefaultRecordBatch, KIP-98), the format a Fetch
// response's records and a snapshot's bytes are in:
//
//	baseOffset int64, batchLength int32, partitionLeaderEpoch int32,
//	magic int8 (2), crc uint32 (CRC-32C of everything after it),
//	attributes int16, lastOffsetDelta int32, baseTimestamp int64,
//	maxTimestamp int64, producerId int64, producerEpoch int16,
//	baseSequence int32, records count int32, records
//
// and each record (DefaultRecord): length varint, attributes int8,
// timestampDelta varlong, offsetDelta varint, key (varint length, -1 for
// null), value (likewise), headers (varint count, then key and value).

// Batch attributes bits (Kafka's RecordBatch attributes).
const (
	attrCompression   = 0x07
	attrTransactional = 0x10
	AttrControl       = 0x20
)

// batchOverhead is the size of a v2 batch without its records
// (DefaultRecordBatch.RECORD_BATCH_OVERHEAD).
const batchOverhead = 61

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptBatch is returned for a batch whose CRC does not match its
// bytes, or whose structure is broken.
var ErrCorruptBatch = errors.New("kafkawire: corrupt record batch")

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record of a v2 batch. A nil Key or Value is null.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte
	Headers        []Header
}

// Batch is a v2 record batch, uncompressed.
type Batch struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Attributes           int16
	LastOffsetDelta      int32
	FirstTimestamp       int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	Records              []Record
}

// Control reports whether the batch holds control records.
func (b *Batch) Control() bool { return b.Attributes&AttrControl != 0 }

// AppendBatch appends b in the v2 format with its CRC-32C.
func AppendBatch(dst []byte, b *Batch) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.BaseOffset))
	dst = append(dst, 0, 0, 0, 0) // batchLength
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.PartitionLeaderEpoch))
	dst = append(dst, 2)          // magic
	dst = append(dst, 0, 0, 0, 0) // crc
	crcStart := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, uint16(b.Attributes))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.LastOffsetDelta))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.FirstTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.MaxTimestamp))
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(b.ProducerEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(b.BaseSequence))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(b.Records)))
	for i := range b.Records {
		dst = appendRecord(dst, &b.Records[i])
	}
	binary.BigEndian.PutUint32(dst[start+8:], uint32(len(dst)-start-12))
	binary.BigEndian.PutUint32(dst[crcStart-4:], crc32.Checksum(dst[crcStart:], castagnoli))
	return dst
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

func appendRecord(dst []byte, r *Record) []byte {
	var body [binary.MaxVarintLen64 * 3]byte
	n := copy(body[:], []byte{byte(r.Attributes)})
	n += binary.PutVarint(body[n:], r.TimestampDelta)
	n += binary.PutVarint(body[n:], int64(r.OffsetDelta))
	size := n + varintLen(int64(len(r.Key))) + len(r.Key) + varintLen(int64(len(r.Value))) + len(r.Value) +
		varintLen(int64(len(r.Headers)))
	if r.Key == nil {
		size += varintLen(-1) - varintLen(0)
	}
	if r.Value == nil {
		size += varintLen(-1) - varintLen(0)
	}
	for _, h := range r.Headers {
		size += varintLen(int64(len(h.Key))) + len(h.Key)
		if h.Value == nil {
			size += varintLen(-1)
		} else {
			size += varintLen(int64(len(h.Value))) + len(h.Value)
		}
	}
	dst = binary.AppendVarint(dst, int64(size))
	dst = append(dst, body[:n]...)
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = appendBytes(dst, []byte(h.Key))
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// ReadBatches decodes the v2 batches of src, checking each one's magic,
// length and CRC-32C. A trailing partial batch (a Fetch answer cut by its
// byte limit) is dropped, as Kafka's readers drop it. Compressed batches
// are not supported (KRaft's metadata log is not compressed by default).
func ReadBatches(src []byte) ([]Batch, error) {
	var out []Batch
	err := eachBatch(src, false, false, func(b *Batch) error {
		out = append(out, *b)
		return nil
	})
	return out, err
}

// eachBatch decodes the batches of src as ReadBatches does and calls f
// with each. With alias, the records' keys, values and header values are
// slices of src rather than copies; with reuse, every batch's Records
// reuse one slice, valid only during f.
func eachBatch(src []byte, alias, reuse bool, f func(*Batch) error) error {
	var recs []Record
	var b Batch // one for every batch: f gets a pointer
	for len(src) > 0 {
		if len(src) < 12 {
			break
		}
		length := int32(binary.BigEndian.Uint32(src[8:]))
		if length < batchOverhead-12 {
			return fmt.Errorf("%w: batch length %d", ErrCorruptBatch, length)
		}
		if int64(len(src)-12) < int64(length) {
			break
		}
		var err error
		if b, err = readBatch(src[:12+int(length)], alias, recs); err != nil {
			return err
		}
		if reuse {
			recs = b.Records[:0]
		}
		if err := f(&b); err != nil {
			return err
		}
		src = src[12+int(length):]
	}
	return nil
}

// readBatch decodes one batch, its records in recs (reallocated if too
// small; nil: a new slice).
func readBatch(src []byte, alias bool, recs []Record) (Batch, error) {
	var b Batch
	b.BaseOffset = int64(binary.BigEndian.Uint64(src))
	b.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(src[12:]))
	if magic := src[16]; magic != 2 {
		return b, fmt.Errorf("%w: magic %d at offset %d (only v2 batches)", ErrCorruptBatch, magic, b.BaseOffset)
	}
	crc := binary.BigEndian.Uint32(src[17:])
	if got := crc32.Checksum(src[21:], castagnoli); got != crc {
		return b, fmt.Errorf("%w: CRC %08x, computed %08x, at offset %d", ErrCorruptBatch, crc, got, b.BaseOffset)
	}
	p := src[21:]
	b.Attributes = int16(binary.BigEndian.Uint16(p))
	b.LastOffsetDelta = int32(binary.BigEndian.Uint32(p[2:]))
	b.FirstTimestamp = int64(binary.BigEndian.Uint64(p[6:]))
	b.MaxTimestamp = int64(binary.BigEndian.Uint64(p[14:]))
	b.ProducerID = int64(binary.BigEndian.Uint64(p[22:]))
	b.ProducerEpoch = int16(binary.BigEndian.Uint16(p[30:]))
	b.BaseSequence = int32(binary.BigEndian.Uint32(p[32:]))
	count := int32(binary.BigEndian.Uint32(p[36:]))
	p = p[40:]
	if b.Attributes&attrCompression != 0 {
		return b, fmt.Errorf("kafkawire: compressed batch (codec %d) at offset %d not supported", b.Attributes&attrCompression, b.BaseOffset)
	}
	if count < 0 || int64(count) > int64(len(p)) {
		return b, fmt.Errorf("%w: %d records", ErrCorruptBatch, count)
	}
	if int(count) <= cap(recs) {
		b.Records = recs[:count]
		clear(b.Records)
	} else {
		b.Records = make([]Record, count)
	}
	for i := range b.Records {
		var err error
		if p, err = readRecord(p, &b.Records[i], alias); err != nil {
			return b, fmt.Errorf("%w: record %d of the batch at offset %d: %v", ErrCorruptBatch, i, b.BaseOffset, err)
		}
	}
	if len(p) != 0 {
		return b, fmt.Errorf("%w: %d bytes after the records at offset %d", ErrCorruptBatch, len(p), b.BaseOffset)
	}
	return b, nil
}

type reader struct {
	b     []byte
	err   error
	alias bool // bytes returns slices of b, not copies
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.varint()
	if r.err != nil || n < 0 {
		if n < -1 {
			r.err = fmt.Errorf("length %d", n)
		}
		return nil
	}
	if n > int64(len(r.b)) {
		r.err = fmt.Errorf("length %d past the end", n)
		return nil
	}
	var out []byte
	if r.alias {
		out = r.b[:n:n]
	} else {
		out = make([]byte, n)
		copy(out, r.b)
	}
	r.b = r.b[n:]
	return out
}

func readRecord(p []byte, rec *Record, alias bool) ([]byte, error) {
	size, n := binary.Varint(p)
	if n <= 0 || size < 0 || size > int64(len(p)-n) {
		return nil, errors.New("bad record length")
	}
	r := reader{b: p[n : n+int(size)], alias: alias}
	if len(r.b) < 1 {
		return nil, errors.New("empty record")
	}
	rec.Attributes = int8(r.b[0])
	r.b = r.b[1:]
	rec.TimestampDelta = r.varint()
	rec.OffsetDelta = int32(r.varint())
	rec.Key = r.bytes()
	rec.Value = r.bytes()
	if nh := r.varint(); nh > 0 && r.err == nil {
		if nh > int64(len(r.b)) {
			return nil, errors.New("bad header count")
		}
		rec.Headers = make([]Header, nh)
		for i := range rec.Headers {
			rec.Headers[i] = Header{Key: string(r.bytes()), Value: r.bytes()}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%d bytes left in the record", len(r.b))
	}
	return p[n+int(size):], nil
}
