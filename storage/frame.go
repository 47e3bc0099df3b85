package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/kraftquorum/kraft"
)

// The frame of one record in a segment file (docs/storage.md):
//
//	0   4  CRC-32C (Castagnoli) of bytes 4 .. end of frame
//	4   1  magic, frameMagic
//	5   4  payload length N (uint32)
//	9   8  offset (int64)
//	17  4  epoch (int32)
//	21  N  payload
//
// Integers are big-endian, as in Kafka's record batches.
const (
	// FrameOverhead is the number of bytes the log adds to each record on
	// disk: the frame header.
	FrameOverhead = 21
	// MaxRecordSize is the largest record payload the log accepts. A frame
	// header that claims more is corrupt.
	MaxRecordSize = 1 << 30

	frameMagic = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Reasons a frame does not decode. errShortFrame means the bytes end inside
// the frame (a torn write at the end of a file); the others mean the bytes
// are not a frame.
var (
	errShortFrame = errors.New("frame cut short")
	errBadMagic   = errors.New("bad frame magic")
	errBadLength  = errors.New("frame length out of range")
	errBadCRC     = errors.New("frame checksum mismatch")
	errBadHeader  = errors.New("negative offset or epoch in frame")
)

// frameHeader is a decoded frame header.
type frameHeader struct {
	length int
	offset int64
	epoch  kraft.Epoch
	crc    uint32
}

// size is the size of the whole frame.
func (h frameHeader) size() int { return FrameOverhead + h.length }

// appendFrame appends the frame of one record to b.
func appendFrame(b []byte, offset int64, epoch kraft.Epoch, data []byte) []byte {
	start := len(b)
	var h [FrameOverhead]byte
	h[4] = frameMagic
	binary.BigEndian.PutUint32(h[5:], uint32(len(data)))
	binary.BigEndian.PutUint64(h[9:], uint64(offset))
	binary.BigEndian.PutUint32(h[17:], uint32(epoch))
	b = append(b, h[:]...)
	b = append(b, data...)
	binary.BigEndian.PutUint32(b[start:], crc32.Checksum(b[start+4:], castagnoli))
	return b
}

// parseHeader decodes the frame header at the start of b, which holds at
// least FrameOverhead bytes. It checks what the header alone can show.
func parseHeader(b []byte) (frameHeader, error) {
	if b[4] != frameMagic {
		return frameHeader{}, errBadMagic
	}
	n := binary.BigEndian.Uint32(b[5:])
	if n > MaxRecordSize {
		return frameHeader{}, errBadLength
	}
	h := frameHeader{
		length: int(n),
		offset: int64(binary.BigEndian.Uint64(b[9:])),
		epoch:  kraft.Epoch(int32(binary.BigEndian.Uint32(b[17:]))),
		crc:    binary.BigEndian.Uint32(b),
	}
	if h.offset < 0 || h.epoch < 0 {
		return frameHeader{}, errBadHeader
	}
	return h, nil
}

// decodeFrame decodes the frame at the start of b and checks its CRC. The
// payload aliases b. It returns errShortFrame when b ends inside the frame.
func decodeFrame(b []byte) (frameHeader, []byte, error) {
	if len(b) < FrameOverhead {
		return frameHeader{}, nil, errShortFrame
	}
	h, err := parseHeader(b)
	if err != nil {
		return frameHeader{}, nil, err
	}
	if len(b) < h.size() {
		return frameHeader{}, nil, errShortFrame
	}
	if crc32.Checksum(b[4:h.size()], castagnoli) != h.crc {
		return frameHeader{}, nil, errBadCRC
	}
	return h, b[FrameOverhead:h.size()], nil
}

// scanner reads the frames of one segment file in order, through a buffer,
// from a start position up to a limit (the file size, or the log's record
// of the segment's size).
type scanner struct {
	f     File
	limit int64  // file position where the scan stops
	base  int64  // file position of buf[0]
	buf   []byte // buffered file bytes
	r, n  int    // next unread byte and end of valid bytes in buf
}

// newScanner scans f from pos to limit through buf, which it may replace
// with a larger one for a large frame.
func newScanner(f File, pos, limit int64, buf []byte) *scanner {
	return &scanner{f: f, limit: limit, base: pos, buf: buf}
}

// pos is the file position of the next frame.
func (s *scanner) pos() int64 { return s.base + int64(s.r) }

// fill makes sure buf holds k bytes from the read position. It returns
// errShortFrame if the scan limit comes first.
func (s *scanner) fill(k int) error {
	if s.n-s.r >= k {
		return nil
	}
	if s.pos()+int64(k) > s.limit {
		return errShortFrame
	}
	if k > len(s.buf) {
		nb := make([]byte, k)
		copy(nb, s.buf[s.r:s.n])
		s.buf = nb
	} else {
		copy(s.buf, s.buf[s.r:s.n])
	}
	s.base += int64(s.r)
	s.n -= s.r
	s.r = 0
	want := len(s.buf)
	if rest := s.limit - s.base; rest < int64(want) {
		want = int(rest)
	}
	for s.n < k {
		m, err := s.f.ReadAt(s.buf[s.n:want], s.base+int64(s.n))
		s.n += m
		if s.n >= k {
			break
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errShortFrame
			}
			return err
		}
		if m == 0 {
			return errShortFrame
		}
	}
	return nil
}

// next decodes the next frame. The payload aliases the scanner's buffer and
// is valid until the next call. At the limit it returns io.EOF; a frame that
// does not decode gives a decoding error (errShortFrame, errBadCRC...) and
// leaves the position at that frame. An I/O error is returned as is.
func (s *scanner) next() (frameHeader, []byte, error) {
	if s.pos() == s.limit {
		return frameHeader{}, nil, io.EOF
	}
	if err := s.fill(FrameOverhead); err != nil {
		return frameHeader{}, nil, err
	}
	h, err := parseHeader(s.buf[s.r:s.n])
	if err != nil {
		return frameHeader{}, nil, err
	}
	if err := s.fill(h.size()); err != nil {
		return frameHeader{}, nil, err
	}
	h, payload, err := decodeFrame(s.buf[s.r:s.n])
	if err != nil {
		return frameHeader{}, nil, err
	}
	s.r += h.size()
	return h, payload, nil
}

// isDecodeError reports whether err says the bytes are not a valid frame (as
// opposed to an I/O error).
func isDecodeError(err error) bool {
	for _, e := range []error{errShortFrame, errBadMagic, errBadLength, errBadCRC, errBadHeader, errBadSequence} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// corruptAt wraps a decoding error with its place.
func corruptAt(path string, pos int64, err error) error {
	return fmt.Errorf("%w: %s at byte %d: %s", ErrCorrupt, path, pos, err.Error())
}
