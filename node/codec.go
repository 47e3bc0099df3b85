package node

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
// The event tags and bodies, fields in the order of their declaration in
// package kraft:
//
//	1 ReceiveVoteRequest      from:i32 clusterID:nulluuid voterID:i32
//	                          voterDirectoryID:uuid candidateEpoch:i32
//	                          candidate:i32 candidateDirectoryID:uuid
//	                          candidateLogEnd:logend preVote:bool
//	2 ReceiveVoteResponse     from:i32 error:i16 epoch:i32 voteGranted:bool
//	                          leaderID:i32
//	3 ReceiveBeginQuorumEpoch from:i32 clusterID:nulluuid leaderID:i32
//	                          leaderEpoch:i32 voterID:i32 voterDirectoryID:uuid
//	4 ReceiveEndQuorumEpoch   from:i32 clusterID:nulluuid leaderID:i32
//	                          leaderEpoch:i32 position:i64 of:i64
//	5 ReceiveFetch            from:i32 fromDirectoryID:uuid clusterID:nulluuid
//	                          currentLeaderEpoch:i32 fetchEpoch:i32
//	                          fetchOffset:i64
//	6 ReceiveFetchSnapshot    from:i32 fromDirectoryID:uuid clusterID:nulluuid
//	                          currentLeaderEpoch:i32 snapshot:logend
//	                          position:i64 size:i64
//	7 ReceiveFetchResponse    from:i32 error:i16 leaderID:i32 leaderEpoch:i32
//	                          highWatermark:i64 diverging:optional(logend)
//	                          snapshot:optional(logend)
//	8 ReceiveLeaderlessEpoch  from:i32 epoch:i32
//	9 ReceiveQuorumResponse   from:i32 error:i16 epoch:i32 leaderID:i32
//	10 ReceiveFetchSnapshotResponse
//	                          from:i32 error:i16 leaderID:i32 leaderEpoch:i32
//	                          snapshot:logend size:i64 position:i64 bytes:i64
//	                          chunk:data
//	11 ReceiveAddVoter        ref:u64 from:i32 clusterID:nulluuid
//	                          voter:(id:i32 directoryID:uuid) listener:bool
//	                          endpoint:data
//	12 ReceiveRemoveVoter     ref:u64 from:i32 clusterID:nulluuid
//	                          voter:(id:i32 directoryID:uuid)
//	13 ReceiveAPIVersionsResponse
//	                          from:i32 error:i16
//	                          kraftVersions:optional(min:i16 max:i16)
//
// chunk is the Message's Chunk, the snapshot bytes a FetchSnapshot response
// carries; only tag 10 has it, so a Message with a Chunk and another event
// (or none) is not encoded. endpoint is the Message's Endpoint; only tag 11
// has it. Only these events travel between replicas; the
// others (timers, LogAppended, LogFlushed, SnapshotCreated, LogStartMoved,
// Resign) and pointers to events are not encoded.
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

// Event tags.
const (
	wireNoEvent byte = iota
	wireVoteRequest
	wireVoteResponse
	wireBeginQuorumEpoch
	wireEndQuorumEpoch
	wireFetch
	wireFetchSnapshot
	wireFetchResponse
	wireLeaderlessEpoch
	wireQuorumResponse
	wireFetchSnapshotResponse
	wireAddVoter
	wireRemoveVoter
	wireAPIVersionsResponse
)

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
	if out, ok := appendRequestEvent(b, ev); ok {
		return out, nil
	}
	if out, ok := appendResponseEvent(b, ev); ok {
		return out, nil
	}
	return nil, fmt.Errorf("node: encode message: %T is not a message event", ev)
}

// appendRequestEvent appends ev if it is a request; false if not.
func appendRequestEvent(b []byte, ev kraft.Event) ([]byte, bool) {
	switch e := ev.(type) {
	case kraft.ReceiveVoteRequest:
		b = append(b, wireVoteRequest)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.VoterID))
		b = append(b, e.VoterDirectoryID[:]...)
		b = appendI32(b, int32(e.CandidateEpoch))
		b = appendI32(b, int32(e.Candidate))
		b = append(b, e.CandidateDirectoryID[:]...)
		b = appendLogEnd(b, e.CandidateLogEnd)
		b = appendBool(b, e.PreVote)
	case kraft.ReceiveBeginQuorumEpoch:
		b = append(b, wireBeginQuorumEpoch)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.LeaderID))
		b = appendI32(b, int32(e.LeaderEpoch))
		b = appendI32(b, int32(e.VoterID))
		b = append(b, e.VoterDirectoryID[:]...)
	case kraft.ReceiveEndQuorumEpoch:
		b = append(b, wireEndQuorumEpoch)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.LeaderID))
		b = appendI32(b, int32(e.LeaderEpoch))
		b = appendI64(b, int64(e.SuccessorRank.Position))
		b = appendI64(b, int64(e.SuccessorRank.Of))
	case kraft.ReceiveFetch:
		b = append(b, wireFetch)
		b = appendI32(b, int32(e.From))
		b = append(b, e.FromDirectoryID[:]...)
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.CurrentLeaderEpoch))
		b = appendI32(b, int32(e.FetchEpoch))
		b = appendI64(b, e.FetchOffset)
	case kraft.ReceiveFetchSnapshot:
		b = append(b, wireFetchSnapshot)
		b = appendI32(b, int32(e.From))
		b = append(b, e.FromDirectoryID[:]...)
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.CurrentLeaderEpoch))
		b = appendLogEnd(b, e.Snapshot)
		b = appendI64(b, e.Position)
		b = appendI64(b, e.Size)
	case kraft.ReceiveAddVoter:
		b = append(b, wireAddVoter)
		b = appendU64(b, e.Ref)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.Voter.ID))
		b = append(b, e.Voter.DirectoryID[:]...)
		b = appendBool(b, e.Listener)
	case kraft.ReceiveRemoveVoter:
		b = append(b, wireRemoveVoter)
		b = appendU64(b, e.Ref)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.Voter.ID))
		b = append(b, e.Voter.DirectoryID[:]...)
	default:
		return b, false
	}
	return b, true
}

// appendResponseEvent appends ev if it is a response; false if not.
func appendResponseEvent(b []byte, ev kraft.Event) ([]byte, bool) {
	switch e := ev.(type) {
	case kraft.ReceiveVoteResponse:
		b = append(b, wireVoteResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendI32(b, int32(e.Epoch))
		b = appendBool(b, e.VoteGranted)
		b = appendI32(b, int32(e.LeaderID))
	case kraft.ReceiveFetchResponse:
		b = append(b, wireFetchResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendI32(b, int32(e.LeaderID))
		b = appendI32(b, int32(e.LeaderEpoch))
		b = appendI64(b, e.HighWatermark)
		b = appendBool(b, e.Diverging != nil)
		if e.Diverging != nil {
			b = appendLogEnd(b, kraft.LogEnd{Offset: e.Diverging.Offset, Epoch: e.Diverging.Epoch})
		}
		b = appendBool(b, e.Snapshot != nil)
		if e.Snapshot != nil {
			b = appendLogEnd(b, *e.Snapshot)
		}
	case kraft.ReceiveLeaderlessEpoch:
		b = append(b, wireLeaderlessEpoch)
		b = appendI32(b, int32(e.From))
		b = appendI32(b, int32(e.Epoch))
	case kraft.ReceiveQuorumResponse:
		b = append(b, wireQuorumResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendI32(b, int32(e.Epoch))
		b = appendI32(b, int32(e.LeaderID))
	case kraft.ReceiveFetchSnapshotResponse:
		b = append(b, wireFetchSnapshotResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendI32(b, int32(e.LeaderID))
		b = appendI32(b, int32(e.LeaderEpoch))
		b = appendLogEnd(b, e.Snapshot)
		b = appendI64(b, e.Size)
		b = appendI64(b, e.Position)
		b = appendI64(b, e.Bytes)
	case kraft.ReceiveAPIVersionsResponse:
		b = append(b, wireAPIVersionsResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendBool(b, e.KRaftVersions != nil)
		if e.KRaftVersions != nil {
			b = appendU16(b, uint16(e.KRaftVersions.Min))
			b = appendU16(b, uint16(e.KRaftVersions.Max))
		}
	default:
		return b, false
	}
	return b, true
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
	if e, ok := d.request(tag); ok {
		return e
	}
	if e, ok := d.response(tag); ok {
		return e
	}
	d.fail(fmt.Errorf("node: decode message: unknown event tag %d", tag))
	return nil
}

// request decodes a request of the tag; false if the tag is not a
// request's.
func (d *wireDecoder) request(tag byte) (kraft.Event, bool) {
	switch tag {
	case wireVoteRequest:
		var e kraft.ReceiveVoteRequest
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.VoterID = d.node()
		e.VoterDirectoryID = d.uuid()
		e.CandidateEpoch = d.epoch()
		e.Candidate = d.node()
		e.CandidateDirectoryID = d.uuid()
		e.CandidateLogEnd = d.logEnd()
		e.PreVote = d.bool()
		return e, true
	case wireBeginQuorumEpoch:
		var e kraft.ReceiveBeginQuorumEpoch
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.LeaderID = d.node()
		e.LeaderEpoch = d.epoch()
		e.VoterID = d.node()
		e.VoterDirectoryID = d.uuid()
		return e, true
	case wireEndQuorumEpoch:
		var e kraft.ReceiveEndQuorumEpoch
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.LeaderID = d.node()
		e.LeaderEpoch = d.epoch()
		e.SuccessorRank.Position = d.int()
		e.SuccessorRank.Of = d.int()
		return e, true
	case wireFetch:
		var e kraft.ReceiveFetch
		e.From = d.node()
		e.FromDirectoryID = d.uuid()
		e.ClusterID = d.nullUUID()
		e.CurrentLeaderEpoch = d.epoch()
		e.FetchEpoch = d.epoch()
		e.FetchOffset = d.i64()
		return e, true
	case wireFetchSnapshot:
		var e kraft.ReceiveFetchSnapshot
		e.From = d.node()
		e.FromDirectoryID = d.uuid()
		e.ClusterID = d.nullUUID()
		e.CurrentLeaderEpoch = d.epoch()
		e.Snapshot = d.logEnd()
		e.Position = d.i64()
		e.Size = d.i64()
		return e, true
	case wireAddVoter:
		var e kraft.ReceiveAddVoter
		e.Ref = d.u64()
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.Voter.ID = d.node()
		e.Voter.DirectoryID = d.uuid()
		e.Listener = d.bool()
		return e, true
	case wireRemoveVoter:
		var e kraft.ReceiveRemoveVoter
		e.Ref = d.u64()
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.Voter.ID = d.node()
		e.Voter.DirectoryID = d.uuid()
		return e, true
	}
	return nil, false
}

// response decodes a response of the tag; false if the tag is not a
// response's.
func (d *wireDecoder) response(tag byte) (kraft.Event, bool) {
	switch tag {
	case wireVoteResponse:
		var e kraft.ReceiveVoteResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		e.Epoch = d.epoch()
		e.VoteGranted = d.bool()
		e.LeaderID = d.node()
		return e, true
	case wireFetchResponse:
		var e kraft.ReceiveFetchResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		e.LeaderID = d.node()
		e.LeaderEpoch = d.epoch()
		e.HighWatermark = d.i64()
		if d.bool() {
			le := d.logEnd()
			e.Diverging = &kraft.LogOffsetMetadata{Offset: le.Offset, Epoch: le.Epoch}
		}
		if d.bool() {
			le := d.logEnd()
			e.Snapshot = &le
		}
		return e, true
	case wireLeaderlessEpoch:
		var e kraft.ReceiveLeaderlessEpoch
		e.From = d.node()
		e.Epoch = d.epoch()
		return e, true
	case wireQuorumResponse:
		var e kraft.ReceiveQuorumResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		e.Epoch = d.epoch()
		e.LeaderID = d.node()
		return e, true
	case wireFetchSnapshotResponse:
		var e kraft.ReceiveFetchSnapshotResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		e.LeaderID = d.node()
		e.LeaderEpoch = d.epoch()
		e.Snapshot = d.logEnd()
		e.Size = d.i64()
		e.Position = d.i64()
		e.Bytes = d.i64()
		return e, true
	case wireAPIVersionsResponse:
		var e kraft.ReceiveAPIVersionsResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		if d.bool() {
			r := kraft.VersionRange{Min: int16(d.u16()), Max: int16(d.u16())}
			e.KRaftVersions = &r
		}
		return e, true
	}
	return nil, false
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
