package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

// TestFrameLayout pins the byte layout docs/storage.md describes.
func TestFrameLayout(t *testing.T) {
	b := appendFrame(nil, 0x0102030405060708, 0x0a0b0c0d, []byte("hey"))
	require.Len(t, b, FrameOverhead+3)
	want := []byte{
		0, 0, 0, 0, // CRC, below
		1,          // magic
		0, 0, 0, 3, // length
		1, 2, 3, 4, 5, 6, 7, 8, // offset
		0x0a, 0x0b, 0x0c, 0x0d, // epoch
		'h', 'e', 'y',
	}
	binary.BigEndian.PutUint32(want, crc32.Checksum(want[4:], crc32.MakeTable(crc32.Castagnoli)))
	require.Equal(t, want, b)

	// The example of docs/storage.md.
	require.Equal(t, []byte{
		0x30, 0x82, 0x07, 0x52, 0x01, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 3, 'h', 'i',
	}, appendFrame(nil, 7, 3, []byte("hi")))

	// CRC-32C itself: the check value of "123456789" is 0xE3069283.
	require.Equal(t, uint32(0xE3069283), crc32.Checksum([]byte("123456789"), castagnoli))
}

func TestFrameRoundTrip(t *testing.T) {
	for _, data := range [][]byte{nil, {}, {0}, []byte("some record"), bytes.Repeat([]byte{0xff}, 5000)} {
		b := appendFrame([]byte("prefix"), 42, 7, data)
		h, payload, err := decodeFrame(b[6:])
		require.NoError(t, err)
		require.Equal(t, int64(42), h.offset)
		require.Equal(t, kraft.Epoch(7), h.epoch)
		require.Equal(t, len(data), h.length)
		require.True(t, bytes.Equal(data, payload))
	}
}

// TestFrameDetectsDamage damages a frame every way a disk could: any byte
// changed, any prefix only, zeros. Every one must fail to decode.
func TestFrameDetectsDamage(t *testing.T) {
	frame := appendFrame(nil, 5, 3, []byte("payload bytes"))
	for i := range frame {
		for _, flip := range []byte{0x01, 0x80, 0xff} {
			b := append([]byte(nil), frame...)
			b[i] ^= flip
			_, _, err := decodeFrame(b)
			require.Error(t, err, "byte %d ^ %#x", i, flip)
			require.True(t, isDecodeError(err))
		}
	}
	for n := 0; n < len(frame); n++ {
		_, _, err := decodeFrame(frame[:n])
		require.ErrorIs(t, err, errShortFrame, "prefix %d", n)
	}
	for _, n := range []int{FrameOverhead, 64, 4096} {
		_, _, err := decodeFrame(make([]byte, n))
		require.Error(t, err, "%d zeros", n)
	}
}

func TestFrameHeaderLimits(t *testing.T) {
	b := appendFrame(nil, 1, 1, nil)
	binary.BigEndian.PutUint32(b[5:], MaxRecordSize+1)
	_, _, err := decodeFrame(b)
	require.ErrorIs(t, err, errBadLength)

	// A frame of another format version, checksum and all, is refused.
	b = appendFrame(nil, 1, 1, []byte("v2"))
	b[4] = 2
	binary.BigEndian.PutUint32(b, crc32.Checksum(b[4:], castagnoli))
	_, _, err = decodeFrame(b)
	require.ErrorIs(t, err, errBadMagic)

	for _, f := range [][]byte{appendFrame(nil, -1, 1, nil), appendFrame(nil, 1, -1, nil)} {
		_, _, err := decodeFrame(f)
		require.ErrorIs(t, err, errBadHeader)
	}
}

// memFile is a file in memory, for scanner tests.
type memFile struct{ b []byte }

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(m.b)) {
		return 0, io.EOF
	}
	n := copy(p, m.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
func (m *memFile) WriteAt([]byte, int64) (int, error) { return 0, errors.New("read only") }
func (m *memFile) Truncate(int64) error               { return errors.New("read only") }
func (m *memFile) Sync() error                        { return nil }
func (m *memFile) Size() (int64, error)               { return int64(len(m.b)), nil }
func (m *memFile) Close() error                       { return nil }

// TestScannerBuffers scans frames of many sizes through buffers smaller
// and larger than them.
func TestScannerBuffers(t *testing.T) {
	var b []byte
	var want []Entry
	for i := 0; i < 50; i++ {
		data := bytes.Repeat([]byte{byte(i)}, i*i*3)
		b = appendFrame(b, int64(i), kraft.Epoch(i/10), data)
		want = append(want, Entry{Offset: int64(i), Epoch: kraft.Epoch(i / 10), Data: data})
	}
	for _, size := range []int{0, 1, FrameOverhead, 100, 4096, 1 << 20} {
		sc := newScanner(&memFile{b}, 0, int64(len(b)), make([]byte, size))
		var got []Entry
		for {
			h, payload, err := sc.next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, "buffer %d", size)
			got = append(got, Entry{Offset: h.offset, Epoch: h.epoch, Data: append([]byte(nil), payload...)})
		}
		require.Equal(t, normalize(want), normalize(got), "buffer %d", size)
		require.Equal(t, int64(len(b)), sc.pos())
	}

	// A limit inside a frame is a short frame, and the position stays at it.
	sc := newScanner(&memFile{b}, 0, int64(len(b))-1, make([]byte, 64))
	var err error
	for err == nil {
		_, _, err = sc.next()
	}
	require.ErrorIs(t, err, errShortFrame)
	require.Equal(t, int64(len(b)-(FrameOverhead+49*49*3)), sc.pos())

	// A file shorter than the limit is a short frame too.
	sc = newScanner(&memFile{b[:100]}, 0, int64(len(b)), make([]byte, 64))
	for err = nil; err == nil; {
		_, _, err = sc.next()
	}
	require.ErrorIs(t, err, errShortFrame)
}

// FuzzDecodeFrame: no input makes the decoder panic, and whatever decodes
// is re-encoded to the same bytes.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(appendFrame(nil, 0, 0, nil))
	f.Add(appendFrame(nil, 7, 3, []byte("record")))
	f.Add(appendFrame(appendFrame(nil, 1, 1, []byte("a")), 2, 1, []byte("b")))
	f.Add(make([]byte, FrameOverhead))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, payload, err := decodeFrame(b)
		if err != nil {
			require.True(t, isDecodeError(err))
			return
		}
		require.Equal(t, b[:h.size()], appendFrame(nil, h.offset, h.epoch, payload))

		// The scanner agrees with the decoder and never reads past its limit.
		sc := newScanner(&memFile{b}, 0, int64(len(b)), make([]byte, 7))
		h2, p2, err := sc.next()
		require.NoError(t, err)
		require.Equal(t, h, h2)
		require.Equal(t, payload, p2)
	})
}

// FuzzParseQuorumState: no input makes the parser panic; what parses
// survives a write and a read when its version can hold it.
func FuzzParseQuorumState(f *testing.F) {
	for _, s := range []string{kafkaV0Leader, kafkaV0Voted, kafkaV1Voted, kafkaV1Leader, kafkaV1Both, "", "{}", "null", `{"data_version":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseQuorumState(b)
		if err != nil {
			return
		}
		_, _ = d.Record()
		out, err := d.Marshal()
		if err != nil {
			return // fields of the other version, which Kafka would not write
		}
		back, err := ParseQuorumState(out)
		require.NoError(t, err, "%s", out)
		if len(d.CurrentVoters) == 0 {
			d.CurrentVoters, back.CurrentVoters = nil, nil
		}
		require.Equal(t, d, back)
	})
}
