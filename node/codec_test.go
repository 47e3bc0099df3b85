package node

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand"
	"reflect"
	"testing"
	"unsafe"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/catalogue"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

var (
	codecUUID1 = uuid.UUID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10}
	codecUUID2 = uuid.UUID{0xa0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff}
	codecUUID3 = uuid.UUID{0xc1, 0xc1, 0xc1, 0xc1, 15: 1}
)

// codecFullEvents has one value of each message event type with every
// field set to a value other than its zero value.
func codecFullEvents() []kraft.Event {
	cluster := uuid.NullUUID{UUID: codecUUID3, Valid: true}
	return []kraft.Event{
		kraft.ReceiveVoteRequest{
			From: 3, ClusterID: cluster, VoterID: -7, VoterDirectoryID: codecUUID1,
			CandidateEpoch: 2147483647, Candidate: 5, CandidateDirectoryID: codecUUID2,
			CandidateLogEnd: kraft.LogEnd{Offset: 1 << 40, Epoch: 9}, PreVote: true,
		},
		kraft.ReceiveVoteResponse{From: -2, Error: kraft.ErrUnsupportedVersion, Epoch: 17, VoteGranted: true, LeaderID: 4},
		kraft.ReceiveBeginQuorumEpoch{
			From: 2, ClusterID: cluster, LeaderID: 2, LeaderEpoch: 33, VoterID: 8, VoterDirectoryID: codecUUID2,
		},
		kraft.ReceiveEndQuorumEpoch{
			From: 1, ClusterID: cluster, LeaderID: 1, LeaderEpoch: 12,
			SuccessorRank: kraft.SuccessorRank{Position: -1, Of: 1 << 33},
		},
		kraft.ReceiveFetch{
			From: 6, FromDirectoryID: codecUUID1, ClusterID: cluster,
			CurrentLeaderEpoch: 44, FetchEpoch: 43, FetchOffset: -1 << 62,
		},
		kraft.ReceiveFetchSnapshot{
			From: 7, FromDirectoryID: codecUUID2, ClusterID: cluster, CurrentLeaderEpoch: -3,
			Snapshot: kraft.LogEnd{Offset: 1 << 41, Epoch: 6}, Position: 5, Size: -1,
		},
		kraft.ReceiveFetchResponse{
			From: 1, Error: kraft.ErrUnknownServerError, LeaderID: 1, LeaderEpoch: 5, HighWatermark: 99,
			Diverging: &kraft.LogOffsetMetadata{Offset: 77, Epoch: 4},
			Snapshot:  &kraft.LogEnd{Offset: 1234, Epoch: 3},
		},
		kraft.ReceiveLeaderlessEpoch{From: -1, Epoch: 21},
		kraft.ReceiveQuorumResponse{From: 9, Error: kraft.ErrFencedLeaderEpoch, Epoch: 22, LeaderID: -4},
		kraft.ReceiveFetchSnapshotResponse{
			From: 2, Error: kraft.ErrPositionOutOfRange, LeaderID: 3, LeaderEpoch: 8,
			Snapshot: kraft.LogEnd{Offset: 1 << 42, Epoch: 7}, Size: 1 << 33, Position: 1 << 32, Bytes: 3,
		},
		kraft.ReceiveAddVoter{
			Ref: 1<<63 + 5, From: 4, ClusterID: cluster, Voter: kraft.ReplicaKey{ID: 6, DirectoryID: codecUUID1}, Listener: true,
		},
		kraft.ReceiveRemoveVoter{Ref: 9, From: -1, ClusterID: cluster, Voter: kraft.ReplicaKey{ID: 2, DirectoryID: codecUUID2}},
		kraft.ReceiveAPIVersionsResponse{From: 3, Error: kraft.ErrRequestTimedOut, KRaftVersions: &kraft.VersionRange{Min: -1, Max: 1}},
	}
}

// codecFullMessage wraps e in a message with every field set (Chunk only
// with a FetchSnapshot response, the one event that carries it).
func codecFullMessage(e kraft.Event) Message {
	m := Message{
		From: -5, To: 2, Corr: 1<<63 + 11, Response: true, Event: e,
		Records: []storage.Entry{
			{Offset: 10, Epoch: 2, Data: []byte("hello")},
			{Offset: 11, Epoch: -2, Data: []byte{0, 0xff, 0}},
		},
		HighWatermark: -9,
		APIVersions:   true,
	}
	if _, ok := e.(kraft.ReceiveFetchSnapshotResponse); ok {
		m.Chunk = []byte{0xfe, 0, 7}
	}
	if _, ok := e.(kraft.ReceiveAddVoter); ok {
		m.Endpoint = "127.0.0.1:9094"
	}
	return m
}

// hostSetFields are event fields that are not on the wire: the receiving
// host sets them. ReceiveFetchResponse.Records says the message carries
// records, which travel beside the event (docs/design.md D240).
var hostSetFields = map[string]bool{"ReceiveFetchResponse.Event.Records": true}

// requireNoZeroField fails if v or any field in it, recursively through
// structs, pointers and slices, is a zero value (but hostSetFields).
func requireNoZeroField(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	if hostSetFields[path] {
		return
	}
	require.False(t, v.IsZero(), "%s is zero", path)
	switch v.Kind() { //nolint:exhaustive // only composite kinds hold fields to check
	case reflect.Interface, reflect.Pointer:
		requireNoZeroField(t, v.Elem(), path)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			requireNoZeroField(t, v.Field(i), path+"."+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Struct {
			break // bytes may be 0
		}
		for i := 0; i < v.Len(); i++ {
			requireNoZeroField(t, v.Index(i), path)
		}
	}
}

func TestCodecFullEventsSetEveryField(t *testing.T) {
	seen := map[reflect.Type]bool{}
	for _, e := range codecFullEvents() {
		m := codecFullMessage(e)
		if m.Chunk == nil {
			m.Chunk = []byte{1} // only a FetchSnapshot response carries one
		}
		if m.Endpoint == "" {
			m.Endpoint = "x" // only an AddRaftVoter request carries one
		}
		requireNoZeroField(t, reflect.ValueOf(m), reflect.TypeOf(e).Name())
		require.False(t, seen[reflect.TypeOf(e)], "two values of %T", e)
		seen[reflect.TypeOf(e)] = true
	}
}

// codecNonMessageEvents has one value of each event type that does not
// travel between replicas: timers, the host's reports and requests.
func codecNonMessageEvents() []kraft.Event {
	return []kraft.Event{
		kraft.ElectionTimeout{},
		kraft.FetchTimeout{},
		kraft.CheckQuorumTimeout{},
		kraft.BeginQuorumEpochTimeout{},
		kraft.VoterChangeTimeout{},
		kraft.LogAppended{},
		kraft.LogFlushed{Offset: 1},
		kraft.Resign{},
		kraft.SnapshotCreated{},
		kraft.LogStartMoved{},
		kraft.VotersAppended{Offset: 3},
		// An admin's request to the local leader (Node.UpdateVoter).
		kraft.ReceiveUpdateVoter{Ref: 1},
	}
}

// TestCodecKnowsEveryEvent: every event type of package kraft (read from
// its source) either round-trips through EncodeMessage and DecodeMessage
// (codecFullEvents) or is refused by them (codecNonMessageEvents), and no
// type is in both lists. A new event type fails here until the codec
// carries it or the test says it does not travel.
func TestCodecKnowsEveryEvent(t *testing.T) {
	cat, err := catalogue.Load("..")
	require.NoError(t, err)
	kind := map[string]string{}
	for _, e := range codecFullEvents() {
		kind[reflect.TypeOf(e).Name()] = "message"
		m := Message{From: 1, To: 2, Corr: 3, Event: e}
		b, err := EncodeMessage(m)
		require.NoError(t, err, "%T", e)
		got, err := DecodeMessage(b)
		require.NoError(t, err, "%T", e)
		require.Equal(t, m, got)
	}
	for _, e := range codecNonMessageEvents() {
		name := reflect.TypeOf(e).Name()
		require.NotContains(t, kind, name, "%s is in both lists", name)
		kind[name] = "not a message"
		_, err := EncodeMessage(Message{Event: e})
		require.Error(t, err, "%T", e)
	}
	for _, name := range cat.Events {
		require.Contains(t, kind, name, "event kraft.%s: add it to the codec (codecFullEvents) or to codecNonMessageEvents", name)
	}
	require.Len(t, kind, len(cat.Events), "the lists name types that are not kraft events")
}

func TestCodecRoundTrip(t *testing.T) {
	type tc struct {
		name string
		m    Message
	}
	var cases []tc
	for _, e := range codecFullEvents() {
		cases = append(cases, tc{reflect.TypeOf(e).Name(), codecFullMessage(e)})
	}
	cases = append(cases,
		tc{"zero message", Message{}},
		tc{"request, no records", Message{From: 1, To: 2, Corr: 1, Event: kraft.ReceiveFetch{From: 1}, HighWatermark: 5}},
		tc{"empty records", Message{Records: []storage.Entry{}}},
		tc{"nil and empty data", Message{Records: []storage.Entry{{Offset: 1}, {Offset: 2, Data: []byte{}}}}},
		tc{"negative ids", Message{From: kraft.NoNode, To: -2147483648, Event: kraft.ReceiveVoteResponse{From: -1, LeaderID: kraft.NoNode}}},
		tc{"cluster id not valid but set", Message{Event: kraft.ReceiveFetch{ClusterID: uuid.NullUUID{UUID: codecUUID1}}}},
		tc{"cluster id unset", Message{Event: kraft.ReceiveVoteRequest{VoterID: kraft.NoNode}}},
		tc{"fetch response, no diverging", Message{Event: kraft.ReceiveFetchResponse{HighWatermark: -1, Snapshot: &kraft.LogEnd{}}}},
		tc{"fetch response, no snapshot", Message{Event: kraft.ReceiveFetchResponse{Diverging: &kraft.LogOffsetMetadata{}}}},
		tc{"fetch response, neither", Message{Event: kraft.ReceiveFetchResponse{LeaderID: kraft.NoNode}}},
		tc{"big record", Message{Records: []storage.Entry{{Data: bytes.Repeat([]byte{7}, 1<<20)}}}},
		tc{"snapshot response, nil chunk", Message{Event: kraft.ReceiveFetchSnapshotResponse{Snapshot: kraft.LogEnd{Offset: -1, Epoch: -1}, Size: -1, Position: -1}}},
		tc{"snapshot response, empty chunk", Message{Event: kraft.ReceiveFetchSnapshotResponse{From: 1}, Chunk: []byte{}}},
		tc{"snapshot response, big chunk", Message{
			Response: true, Event: kraft.ReceiveFetchSnapshotResponse{From: 1, Size: 3 << 20, Position: 1 << 20, Bytes: 1 << 20},
			Chunk: bytes.Repeat([]byte{9}, 1<<20),
		}},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := EncodeMessage(c.m)
			require.NoError(t, err)
			got, err := DecodeMessage(b)
			require.NoError(t, err)
			require.Equal(t, c.m, got)
			// The decoded message shares no memory with its input.
			for i := range b {
				b[i] ^= 0xff
			}
			require.Equal(t, c.m, got)

			// The same through a frame.
			frame, err := appendFrame([]byte("prefix"), c.m)
			require.NoError(t, err)
			r := bytes.NewReader(frame[len("prefix"):])
			payload, err := ReadFrame(r)
			require.NoError(t, err)
			got, err = DecodeMessage(payload)
			require.NoError(t, err)
			require.Equal(t, c.m, got)
			require.Zero(t, r.Len())
		})
	}
}

func TestCodecRejectsNonMessageEvents(t *testing.T) {
	for _, e := range append(codecNonMessageEvents(),
		&kraft.ReceiveFetch{From: 1},
		&kraft.ReceiveFetchSnapshotResponse{From: 1},
	) {
		_, err := EncodeMessage(Message{Event: e})
		require.Error(t, err, "%T", e)
		_, err = appendFrame(nil, Message{Event: e})
		require.Error(t, err, "%T", e)
	}
	// A chunk travels only with a FetchSnapshot response.
	for _, e := range []kraft.Event{nil, kraft.ReceiveFetchResponse{}, kraft.ReceiveFetchSnapshot{}} {
		_, err := EncodeMessage(Message{Event: e, Chunk: []byte{}})
		require.Error(t, err, "%T with a chunk", e)
	}
}

// TestCodecFetchSnapshotResponseLayout pins tag 10's layout: the event's
// fields, then the chunk, then the records.
func TestCodecFetchSnapshotResponseLayout(t *testing.T) {
	m := Message{From: 1, To: 2, Corr: 3, Response: true, Event: kraft.ReceiveFetchSnapshotResponse{
		From: 1, Error: kraft.ErrNone, LeaderID: 1, LeaderEpoch: 4, Snapshot: kraft.LogEnd{Offset: 100, Epoch: 3},
		Size: 10, Position: 4, Bytes: 2,
	}, Chunk: []byte("ab")}
	b, err := EncodeMessage(m)
	require.NoError(t, err)
	// Header 26 bytes, tag at 26, body 27: from 4, error 2, leader 4,
	// epoch 4, snapshot 12, size 8, position 8, bytes 8 = 50; chunk length
	// at 77, chunk at 81, records count at 83.
	require.Len(t, b, 26+1+50+4+2+4)
	require.Equal(t, byte(10), b[26])
	require.Equal(t, uint64(100), binary.BigEndian.Uint64(b[27+14:]))
	require.Equal(t, uint32(2), binary.BigEndian.Uint32(b[77:]))
	require.Equal(t, "ab", string(b[81:83]))
	require.Equal(t, uint32(0xffffffff), binary.BigEndian.Uint32(b[83:]))
	// A chunk length past the end is an error, not an allocation.
	binary.BigEndian.PutUint32(b[77:], 0x7fffffff)
	_, err = DecodeMessage(b)
	require.Error(t, err)
}

func TestDecodeGarbage(t *testing.T) {
	valid, err := EncodeMessage(codecFullMessage(codecFullEvents()[0]))
	require.NoError(t, err)

	// Every proper prefix of a valid message is an error.
	for _, e := range codecFullEvents() {
		b, err := EncodeMessage(codecFullMessage(e))
		require.NoError(t, err)
		for n := 0; n < len(b); n++ {
			_, err := DecodeMessage(b[:n])
			require.Error(t, err, "%T cut at %d", e, n)
		}
	}

	patch := func(f func(b []byte) []byte) []byte {
		return f(append([]byte{}, valid...))
	}
	// Offsets in valid: version 0, from 1, to 5, corr 9, flags 17, hw 18,
	// event tag 26, event body 27 (vote request: from 27, cluster valid 31).
	cases := map[string][]byte{
		"nil":             nil,
		"trailing byte":   append(append([]byte{}, valid...), 0),
		"version 0":       patch(func(b []byte) []byte { b[0] = 0; return b }),
		"version 2":       patch(func(b []byte) []byte { b[0] = 2; return b }),
		"bad flags":       patch(func(b []byte) []byte { b[17] = 4; return b }),
		"unknown tag":     patch(func(b []byte) []byte { b[26] = 9; return b }),
		"unknown tag 255": patch(func(b []byte) []byte { b[26] = 255; return b }),
		"bad bool":        patch(func(b []byte) []byte { b[31] = 2; return b }),
		"huge record count": func() []byte {
			b, _ := EncodeMessage(Message{Records: []storage.Entry{}})
			binary.BigEndian.PutUint32(b[len(b)-4:], 0xfffffffe)
			return b
		}(),
		"huge data length": func() []byte {
			b, _ := EncodeMessage(Message{Records: []storage.Entry{{Data: []byte{}}}})
			binary.BigEndian.PutUint32(b[len(b)-4:], 0x7fffffff)
			return b
		}(),
	}
	for name, b := range cases {
		_, err := DecodeMessage(b)
		require.Error(t, err, name)
	}

	// Random bytes and random corruptions of valid messages never panic,
	// and whatever decodes encodes back to the same bytes.
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 5000; i++ {
		var b []byte
		if i%2 == 0 {
			b = make([]byte, rnd.Intn(100))
			rnd.Read(b)
		} else {
			b = append([]byte{}, valid...)
			for k := 0; k < 1+rnd.Intn(3); k++ {
				b[rnd.Intn(len(b))] = byte(rnd.Intn(256))
			}
		}
		checkDecodeCanonical(t, b)
	}
}

// checkDecodeCanonical decodes b and, if that works, checks that encoding
// the result gives b back.
func checkDecodeCanonical(t *testing.T, b []byte) {
	t.Helper()
	m, err := DecodeMessage(b)
	if err != nil {
		return
	}
	again, err := EncodeMessage(m)
	require.NoError(t, err)
	require.Equal(t, b, again)
}

func FuzzDecode(f *testing.F) {
	for _, e := range codecFullEvents() {
		b, err := EncodeMessage(codecFullMessage(e))
		require.NoError(f, err)
		f.Add(b)
	}
	b, err := EncodeMessage(Message{})
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecodeCanonical(t, b)
	})
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteFrame(&buf, []byte("abc")))
	require.NoError(t, WriteFrame(&buf, nil))
	big := bytes.Repeat([]byte{1, 2, 3}, 1<<20) // larger than one read chunk
	require.NoError(t, WriteFrame(&buf, big))
	require.Equal(t, []byte{0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 0}, buf.Bytes()[:11])

	p, err := ReadFrame(&buf)
	require.NoError(t, err)
	require.Equal(t, []byte("abc"), p)
	p, err = ReadFrame(&buf)
	require.NoError(t, err)
	require.Empty(t, p)
	p, err = ReadFrame(&buf)
	require.NoError(t, err)
	require.Equal(t, big, p)
	_, err = ReadFrame(&buf)
	require.Equal(t, io.EOF, err)

	// A frame cut short.
	_, err = ReadFrame(bytes.NewReader([]byte{0, 0, 0, 5, 'a'}))
	require.Equal(t, io.ErrUnexpectedEOF, err)
	_, err = ReadFrame(bytes.NewReader([]byte{0, 0}))
	require.Equal(t, io.ErrUnexpectedEOF, err)
	_, err = ReadFrame(bytes.NewReader([]byte{0, 0x40, 0, 0, 'a'}))
	require.Equal(t, io.ErrUnexpectedEOF, err)

	// Frames over the limit, read and written.
	hdr := make([]byte, 4)
	binary.BigEndian.PutUint32(hdr, MaxFrameSize+1)
	_, err = ReadFrame(bytes.NewReader(hdr))
	require.ErrorIs(t, err, ErrFrameTooLarge)
	binary.BigEndian.PutUint32(hdr, 0xffffffff)
	_, err = ReadFrame(bytes.NewReader(hdr))
	require.ErrorIs(t, err, ErrFrameTooLarge)
	binary.BigEndian.PutUint32(hdr, MaxFrameSize)
	_, err = ReadFrame(bytes.NewReader(hdr))
	require.Equal(t, io.ErrUnexpectedEOF, err, "a frame of exactly the limit is allowed")
	_, err = readFrameLimit(bytes.NewReader([]byte{0, 0, 0, 9}), 8)
	require.ErrorIs(t, err, ErrFrameTooLarge)

	buf.Reset()
	require.ErrorIs(t, WriteFrame(&buf, make([]byte, MaxFrameSize+1)), ErrFrameTooLarge)
	require.Zero(t, buf.Len())
	m := Message{Records: []storage.Entry{{Data: make([]byte, 100)}}}
	b, err := EncodeMessage(m)
	require.NoError(t, err)
	_, err = appendFrameLimit(nil, m, len(b)-1)
	require.ErrorIs(t, err, ErrFrameTooLarge)
	f, err := appendFrameLimit(nil, m, len(b))
	require.NoError(t, err)
	require.Equal(t, b, f[4:])
}

// TestDecodeShared: DecodeMessage copies the records and the chunk out of
// its input; decodeShared, for a buffer the transport hands over, slices
// them out of it (capped), and decodes the same message.
func TestDecodeShared(t *testing.T) {
	m := Message{
		From: 1, To: 2, Corr: 3, Response: true,
		Event:   kraft.ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 2, HighWatermark: 5},
		Records: []storage.Entry{{Offset: 4, Epoch: 2, Data: []byte("record four")}, {Offset: 5, Epoch: 2, Data: []byte{}}},
	}
	b, err := EncodeMessage(m)
	require.NoError(t, err)
	copied, err := DecodeMessage(b)
	require.NoError(t, err)
	shared, err := decodeShared(b)
	require.NoError(t, err)
	require.Equal(t, m, copied)
	require.Equal(t, m, shared)
	inB := func(p []byte) bool {
		return uintptr(unsafe.Pointer(&p[0])) >= uintptr(unsafe.Pointer(&b[0])) &&
			uintptr(unsafe.Pointer(&p[0])) < uintptr(unsafe.Pointer(&b[0]))+uintptr(len(b))
	}
	require.False(t, inB(copied.Records[0].Data), "DecodeMessage copies")
	require.True(t, inB(shared.Records[0].Data), "decodeShared slices the input")
	require.Equal(t, len(shared.Records[0].Data), cap(shared.Records[0].Data))
}

// TestCheckWireAgreesWithEncodeMessage: checkWire, which the in-memory
// transport runs instead of the codec (D145), refuses exactly the messages
// EncodeMessage refuses, with the same error.
func TestCheckWireAgreesWithEncodeMessage(t *testing.T) {
	var msgs []Message
	for _, e := range codecFullEvents() {
		full := codecFullMessage(e)
		msgs = append(msgs, full, Message{Event: e})
		bare := full
		bare.Records, bare.Chunk, bare.Endpoint = nil, nil, ""
		msgs = append(msgs, bare)
		for _, wrong := range []Message{
			{Event: e, Chunk: []byte{}},
			{Event: e, Chunk: []byte("x")},
			{Event: e, Endpoint: "h:1"},
			{Event: e, Records: []storage.Entry{}},
		} {
			msgs = append(msgs, wrong)
		}
	}
	for _, e := range append(codecNonMessageEvents(), nil, &kraft.ReceiveFetch{From: 1}) {
		msgs = append(msgs, Message{Event: e}, codecFullMessage(e))
	}
	refused := 0
	for _, m := range msgs {
		_, want := EncodeMessage(m)
		got := checkWire(m)
		if want == nil {
			require.NoError(t, got, "%+v", m)
			continue
		}
		refused++
		require.EqualError(t, got, want.Error(), "%+v", m)
	}
	require.Greater(t, refused, 20)
}
