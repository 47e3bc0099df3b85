package node

//go:generate go run ../internal/cmd/gencodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// The wire format of a Message.
//
// EncodeMessage writes a Message as a self-contained byte string; each one
// can be decoded on its own, with no state shared between messages, so a
// stream may be cut and resumed on a new connection at any message. All
// integers are big-endian and of fixed size:
//
//	message   = version:u8 (1)
//	            from:i32 to:i32 corr:u64 flags:u8 highWatermark:i64
//	            event records
//	flags     = bit 0: Response; bit 1: APIVersions (an ApiVersions
//	            request); the other bits are 0
//	event     = tag:u8 body            (tag 0: no event, no body)
//	records   = count:u32 entry*       (count 0xFFFFFFFF: nil slice, no entries)
//	entry     = offset:i64 epoch:i32 data
//	data      = len:u32 byte*          (len 0xFFFFFFFF: nil slice, no bytes)
//	bool      = u8, 0 or 1
//	uuid      = 16 bytes
//	nulluuid  = valid:bool uuid        (the 16 bytes are sent even when not valid)
//	logend    = offset:i64 epoch:i32
//	optional  = present:bool, then the value if present
//
// The event tags and bodies are listed in codec_gen.go, which
// internal/cmd/gencodec generates from the catalogue of messages
// (kraft.RPCs) and the events' fields: run `go generate ./node` after a
// change to a message event (docs/design.md D270). Tags are append-only: an
// event keeps its tag and a new event takes the next free one, so kraftd
// peers of different versions talk (D271).
//
// chunk is the Message's Chunk, the snapshot bytes a FetchSnapshot response
// carries; only tag 10 has it, so a Message with a Chunk and another event
// (or none) is not encoded. endpoint is the Message's Endpoint; only tag 11
// has it. Only the events listed in codec_gen.go travel between replicas;
// the others (timers, LogAppended, LogFlushed, SnapshotCreated,
// LogStartMoved, Resign, ReceiveUpdateVoter) and pointers to events are
// not encoded.
// DecodeMessage rejects an unknown version or tag, a bool or flag out of
// range, a length past the end of the input and trailing bytes.
//
// On a stream (TCPTransport) each message is a frame: a 4-byte big-endian
// length, then that many bytes (WriteFrame, ReadFrame). A frame is at most
// MaxFrameSize bytes long.

// MaxFrameSize is the largest frame payload WriteFrame writes and ReadFrame
// accepts: 64 MiB.
const MaxFrameSize = 64 << 20

// wireVersion is the first byte of an encoded message.
const wireVersion = 1

const (
	wireFlagResponse    = 1 << 0
	wireFlagAPIVersions = 1 << 1
	wireNil             = math.MaxUint32 // a nil slice's count or length
	wireEntryMin        = 8 + 4 + 4      // the smallest encoded entry
)

var (
	// ErrFrameTooLarge is returned for a frame longer than MaxFrameSize.
	ErrFrameTooLarge = errors.New("node: frame too large")
	// errWireShort is a decode error: the input ends inside a message.
	errWireShort = errors.New("node: decode message: unexpected end of input")
)

// EncodeMessage encodes m in the format described above. It fails for an
// event that is not a message event.
func EncodeMessage(m Message) ([]byte, error) {
	return appendMessage(make([]byte, 0, wireSizeHint(m)), m)
}

// DecodeMessage decodes one message that EncodeMessage encoded; b must hold
// exactly that message. The decoded message shares no memory with b.
func DecodeMessage(b []byte) (Message, error) {
	return decodeMessage(b, false)
}

// decodeShared is DecodeMessage for a b the caller hands over (a frame
// the transport read, a message it encoded): the decoded records and chunk
// are slices of b, not copies.
func decodeShared(b []byte) (Message, error) {
	return decodeMessage(b, true)
}

func decodeMessage(b []byte, share bool) (Message, error) {
	d := wireDecoder{b: b, share: share}
	m := d.message()
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("node: decode message: %d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return Message{}, d.err
	}
	return m, nil
}

// WriteFrame writes payload as one frame: its length as 4 bytes big-endian,
// then the payload.
func WriteFrame(w io.Writer, payload []byte) error {
	if len(payload) > MaxFrameSize {
		return ErrFrameTooLarge
	}
	buf := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(buf, uint32(len(payload)))
	copy(buf[4:], payload)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame written by WriteFrame and returns its payload.
// A frame longer than MaxFrameSize is ErrFrameTooLarge; a stream that ends
// inside a frame is io.ErrUnexpectedEOF, one that ends before it io.EOF.
func ReadFrame(r io.Reader) ([]byte, error) {
	return readFrameLimit(r, MaxFrameSize)
}

// readFrameLimit is ReadFrame with a limit of max bytes. It allocates as
// the payload arrives, not all at once, so a bogus length costs nothing.
func readFrameLimit(r io.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(hdr[:]))
	if n > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrFrameTooLarge, n, max)
	}
	const chunk = 1 << 20
	size := int(n)
	if size > chunk {
		size = chunk
	}
	buf := make([]byte, 0, size)
	for int64(len(buf)) < n {
		want := int(n) - len(buf)
		if want > chunk {
			want = chunk
		}
		if cap(buf)-len(buf) < want {
			grown := make([]byte, len(buf), 2*cap(buf)+want)
			copy(grown, buf)
			buf = grown
		}
		k, err := io.ReadFull(r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+k]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// appendFrame appends m to dst as a frame.
func appendFrame(dst []byte, m Message) ([]byte, error) {
	return appendFrameLimit(dst, m, MaxFrameSize)
}

// appendFrameLimit is appendFrame for frames of at most max bytes.
func appendFrameLimit(dst []byte, m Message, max int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst, err := appendMessage(dst, m)
	if err != nil {
		return nil, err
	}
	n := len(dst) - start - 4
	if n > max {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrFrameTooLarge, n, max)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(n))
	return dst, nil
}

// wireSizeHint estimates the encoded size of m.
func wireSizeHint(m Message) int {
	n := 128
	for _, e := range m.Records {
		n += wireEntryMin + len(e.Data)
	}
	return n + len(m.Chunk)
}

func appendMessage(b []byte, m Message) ([]byte, error) {
	b = append(b, wireVersion)
	b = appendI32(b, int32(m.From))
	b = appendI32(b, int32(m.To))
	b = appendU64(b, m.Corr)
	var flags byte
	if m.Response {
		flags |= wireFlagResponse
	}
	if m.APIVersions {
		flags |= wireFlagAPIVersions
	}
	b = append(b, flags)
	b = appendI64(b, m.HighWatermark)
	b, err := appendEvent(b, m.Event)
	if err != nil {
		return nil, err
	}
	if _, ok := m.Event.(kraft.ReceiveFetchSnapshotResponse); ok {
		if b, err = appendData(b, m.Chunk); err != nil {
			return nil, err
		}
	} else if m.Chunk != nil {
		return nil, fmt.Errorf("node: encode message: a snapshot chunk with %T", m.Event)
	}
	if _, ok := m.Event.(kraft.ReceiveAddVoter); ok {
		if b, err = appendData(b, []byte(m.Endpoint)); err != nil {
			return nil, err
		}
	} else if m.Endpoint != "" {
		return nil, fmt.Errorf("node: encode message: an endpoint with %T", m.Event)
	}
	if m.Records == nil {
		b = appendU32(b, wireNil)
	} else {
		if int64(len(m.Records)) >= wireNil {
			return nil, errors.New("node: encode message: too many records")
		}
		b = appendU32(b, uint32(len(m.Records)))
		for _, e := range m.Records {
			b = appendI64(b, e.Offset)
			b = appendI32(b, int32(e.Epoch))
			if b, err = appendData(b, e.Data); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// appendData appends a data field: nil and empty are told apart.
func appendData(b, data []byte) ([]byte, error) {
	if data == nil {
		return appendU32(b, wireNil), nil
	}
	if int64(len(data)) >= wireNil {
		return nil, errors.New("node: encode message: data too large")
	}
	b = appendU32(b, uint32(len(data)))
	return append(b, data...), nil
}

func appendEvent(b []byte, ev kraft.Event) ([]byte, error) {
	if ev == nil {
		return append(b, wireNoEvent), nil
	}
	if out, ok := appendEventBody(b, ev); ok {
		return out, nil
	}
	return nil, fmt.Errorf("node: encode message: %T is not a message event", ev)
}

func appendU16(b []byte, v uint16) []byte { return append(b, byte(v>>8), byte(v)) }

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendU64(b []byte, v uint64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func appendI32(b []byte, v int32) []byte { return appendU32(b, uint32(v)) }
func appendI64(b []byte, v int64) []byte { return appendU64(b, uint64(v)) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendNullUUID(b []byte, u uuid.NullUUID) []byte {
	b = appendBool(b, u.Valid)
	return append(b, u.UUID[:]...)
}

func appendLogEnd(b []byte, e kraft.LogEnd) []byte {
	b = appendI64(b, e.Offset)
	return appendI32(b, int32(e.Epoch))
}

// wireDecoder reads a message from b. The first error sticks: later reads
// return zero values, so the decoding code checks err only at the end.
type wireDecoder struct {
	b     []byte
	err   error
	share bool // data fields are slices of b, not copies
}

func (d *wireDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *wireDecoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.fail(errWireShort)
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *wireDecoder) u8() byte {
	p := d.take(1)
	if p == nil {
		return 0
	}
	return p[0]
}

func (d *wireDecoder) u16() uint16 {
	p := d.take(2)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint16(p)
}

func (d *wireDecoder) u32() uint32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

func (d *wireDecoder) u64() uint64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

func (d *wireDecoder) i32() int32 { return int32(d.u32()) }
func (d *wireDecoder) i64() int64 { return int64(d.u64()) }

func (d *wireDecoder) node() kraft.NodeID { return kraft.NodeID(d.i32()) }
func (d *wireDecoder) epoch() kraft.Epoch { return kraft.Epoch(d.i32()) }

func (d *wireDecoder) int() int {
	v := d.i64()
	if int64(int(v)) != v {
		d.fail(fmt.Errorf("node: decode message: %d does not fit in an int", v))
		return 0
	}
	return int(v)
}

func (d *wireDecoder) bool() bool {
	switch v := d.u8(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail(fmt.Errorf("node: decode message: bad bool %d", v))
		return false
	}
}

func (d *wireDecoder) uuid() uuid.UUID {
	var u uuid.UUID
	copy(u[:], d.take(len(u)))
	return u
}

func (d *wireDecoder) nullUUID() uuid.NullUUID {
	valid := d.bool()
	return uuid.NullUUID{Valid: valid, UUID: d.uuid()}
}

func (d *wireDecoder) logEnd() kraft.LogEnd {
	off := d.i64()
	return kraft.LogEnd{Offset: off, Epoch: d.epoch()}
}

func (d *wireDecoder) message() Message {
	if v := d.u8(); d.err == nil && v != wireVersion {
		d.fail(fmt.Errorf("node: decode message: unknown version %d", v))
	}
	var m Message
	m.From = d.node()
	m.To = d.node()
	m.Corr = d.u64()
	flags := d.u8()
	if flags&^(wireFlagResponse|wireFlagAPIVersions) != 0 {
		d.fail(fmt.Errorf("node: decode message: bad flags %#x", flags))
	}
	m.Response = flags&wireFlagResponse != 0
	m.APIVersions = flags&wireFlagAPIVersions != 0
	m.HighWatermark = d.i64()
	m.Event = d.event()
	if _, ok := m.Event.(kraft.ReceiveFetchSnapshotResponse); ok {
		m.Chunk = d.data()
	}
	if _, ok := m.Event.(kraft.ReceiveAddVoter); ok {
		m.Endpoint = string(d.data())
	}
	m.Records = d.records()
	return m
}

// data reads a data field.
func (d *wireDecoder) data() []byte {
	l := d.u32()
	if l == wireNil || d.err != nil {
		return nil
	}
	if int64(l) > int64(len(d.b)) {
		d.fail(errWireShort)
		return nil
	}
	p := d.take(int(l))
	if d.share {
		return p[:len(p):len(p)]
	}
	return append([]byte{}, p...)
}

func (d *wireDecoder) records() []storage.Entry {
	n := d.u32()
	if d.err != nil || n == wireNil {
		return nil
	}
	if int64(n) > int64(len(d.b)/wireEntryMin) {
		d.fail(errWireShort)
		return nil
	}
	recs := make([]storage.Entry, n)
	for i := range recs {
		recs[i].Offset = d.i64()
		recs[i].Epoch = d.epoch()
		recs[i].Data = d.data()
		if d.err != nil {
			return nil
		}
	}
	return recs
}

func (d *wireDecoder) event() kraft.Event {
	tag := d.u8()
	if d.err != nil || tag == wireNoEvent {
		return nil
	}
	if e, ok := d.eventBody(tag); ok {
		return e
	}
	d.fail(fmt.Errorf("node: decode message: unknown event tag %d", tag))
	return nil
}

// checkWire returns the error EncodeMessage would return for m, without
// encoding m's records and chunk: the in-memory transport, which hands
// messages over by reference (docs/design.md D145), refuses what the
// codec refuses. The message without its records and chunk is encoded
// into a buffer on the stack; the payloads' lengths are checked as
// appendData checks them.
func checkWire(m Message) error {
	var buf [256]byte
	head := m
	head.Records = nil
	if m.Chunk != nil {
		head.Chunk = []byte{} // keeps the rule that only tag 10 has a chunk
		if int64(len(m.Chunk)) >= wireNil {
			return errors.New("node: encode message: data too large")
		}
	}
	if _, err := appendMessage(buf[:0], head); err != nil {
		return err
	}
	if int64(len(m.Records)) >= wireNil {
		return errors.New("node: encode message: too many records")
	}
	for _, e := range m.Records {
		if int64(len(e.Data)) >= wireNil {
			return errors.New("node: encode message: data too large")
		}
	}
	return nil
}
