package kafkawire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// MaxFrameSize is the largest frame ReadFrame accepts by default: Kafka's
// socket.request.max.bytes default (100 MiB).
const MaxFrameSize = 100 << 20

// ErrFrameTooLarge is returned by ReadFrame for a frame above its limit.
var ErrFrameTooLarge = errors.New("kafkawire: frame too large")

// ReadFrame reads one size-prefixed frame (Kafka's int32 big-endian size,
// then that many bytes) and returns the whole frame, size prefix included.
// max <= 0 means MaxFrameSize.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	if max <= 0 {
		max = MaxFrameSize
	}
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	frame := make([]byte, 4+int(n))
	copy(frame, size[:])
	if _, err := io.ReadFull(r, frame[4:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return frame, nil
}

// frameBody checks a frame's size prefix and returns what follows it.
func frameBody(frame []byte) ([]byte, error) {
	if len(frame) < 4 {
		return nil, errors.New("kafkawire: frame shorter than its size prefix")
	}
	if n := binary.BigEndian.Uint32(frame); int64(n) != int64(len(frame)-4) {
		return nil, fmt.Errorf("kafkawire: frame size prefix %d, %d bytes follow", n, len(frame)-4)
	}
	return frame[4:], nil
}

// RequestHeader is Kafka's request header (RequestHeader.json): v1 below a
// request's first flexible version, v2 (v1 plus tagged fields) from it. The
// client id is a nullable, non-compact string in both (Kafka keeps it
// non-compact so that a broker of any age can read an ApiVersions header).
type RequestHeader struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is the client id; nil is a null client id.
	ClientID *string
}

// RequestHeaderVersion is the request header version Kafka uses for a
// request: 2 if the request's version is flexible (KIP-482), else 1.
// ControlledShutdown v0's header v0 does not concern KRaft and is not
// supported.
func RequestHeaderVersion(r kmsg.Request) int16 {
	if r.IsFlexible() {
		return 2
	}
	return 1
}

// ResponseHeaderVersion is the response header version Kafka uses for a
// response: 1 (correlation id and tagged fields) if the response's version
// is flexible, else 0 (correlation id only); ApiVersions responses always
// use v0, so that a client that sent a version the server does not know can
// still read the answer (KIP-511).
func ResponseHeaderVersion(r kmsg.Response) int16 {
	if r.Key() == APIVersions || !r.IsFlexible() {
		return 0
	}
	return 1
}

// AppendRequest appends a whole request frame: the size, the request header
// (v1 or v2, RequestHeaderVersion) with correlationID and clientID, and r's
// body at r's version.
func AppendRequest(dst []byte, correlationID int32, clientID *string, r kmsg.Request) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Key()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.GetVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if clientID == nil {
		dst = binary.BigEndian.AppendUint16(dst, 0xffff)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(*clientID)))
		dst = append(dst, *clientID...)
	}
	if RequestHeaderVersion(r) >= 2 {
		dst = append(dst, 0) // no tagged fields
	}
	dst = r.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// AppendResponse appends a whole response frame: the size, the response
// header (v0 or v1, ResponseHeaderVersion) with correlationID, and r's body
// at r's version.
func AppendResponse(dst []byte, correlationID int32, r kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if ResponseHeaderVersion(r) >= 1 {
		dst = append(dst, 0) // no tagged fields
	}
	dst = r.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// UnsupportedVersionError is a request this codec cannot read: an API kmsg
// does not know, or a version above kmsg's. Header is the request's header,
// read in full when the API is known; a server answers an ApiVersions
// request of too high a version with an ApiVersions v0 response carrying
// UNSUPPORTED_VERSION (APIVersionsAnswer) and closes the connection for
// any other.
type UnsupportedVersionError struct {
	Header RequestHeader
}

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("kafkawire: unsupported request: api key %d (%s) version %d",
		e.Header.APIKey, kmsg.NameForKey(e.Header.APIKey), e.Header.APIVersion)
}

// ReadRequest parses a whole request frame (size prefix included): the
// header and, with kmsg's type for the header's API key and version, the
// body. Tagged fields of a v2 header are read and dropped (Kafka defines
// none). An API or version kmsg does not know gives an
// *UnsupportedVersionError carrying the header; an ApiVersions request of
// an unknown version is parsed as flexible, as Kafka does.
func ReadRequest(frame []byte) (RequestHeader, kmsg.Request, error) {
	var h RequestHeader
	b, err := frameBody(frame)
	if err != nil {
		return h, nil, err
	}
	if len(b) < 10 {
		return h, nil, errors.New("kafkawire: request header truncated")
	}
	h.APIKey = int16(binary.BigEndian.Uint16(b))
	h.APIVersion = int16(binary.BigEndian.Uint16(b[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(b[4:]))
	n := int16(binary.BigEndian.Uint16(b[8:]))
	b = b[10:]
	if n >= 0 {
		if len(b) < int(n) {
			return h, nil, errors.New("kafkawire: request header client id truncated")
		}
		id := string(b[:n])
		h.ClientID = &id
		b = b[n:]
	} else if n != -1 {
		return h, nil, fmt.Errorf("kafkawire: request header client id length %d", n)
	}
	r := kmsg.RequestForKey(h.APIKey)
	if r == nil {
		return h, nil, &UnsupportedVersionError{Header: h}
	}
	r.SetVersion(h.APIVersion)
	known := h.APIVersion >= 0 && h.APIVersion <= r.MaxVersion()
	flexible := r.IsFlexible() || (!known && h.APIKey == APIVersions)
	if flexible {
		if b, err = skipTags(b); err != nil {
			return h, nil, err
		}
	}
	if !known {
		return h, nil, &UnsupportedVersionError{Header: h}
	}
	if err := r.ReadFrom(b); err != nil {
		return h, nil, fmt.Errorf("kafkawire: %s v%d request: %w", kmsg.NameForKey(h.APIKey), h.APIVersion, err)
	}
	return h, r, nil
}

// ResponseCorrelationID returns the correlation id of a response frame, the
// first field of every response header: a client looks up which request
// (API key and version) it answers before ReadResponse.
func ResponseCorrelationID(frame []byte) (int32, error) {
	b, err := frameBody(frame)
	if err != nil {
		return 0, err
	}
	if len(b) < 4 {
		return 0, errors.New("kafkawire: response header truncated")
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// ReadResponse parses a whole response frame (size prefix included) to a
// request of API key and version: the correlation id, the header's tagged
// fields (v1, dropped) and the body. An ApiVersions answer with
// UNSUPPORTED_VERSION is read as v0, whatever version was asked: a server
// answers a version it does not know in v0 (KIP-511; Kafka's
// ApiVersionsResponse.parse falls back the same way).
func ReadResponse(frame []byte, key, version int16) (int32, kmsg.Response, error) {
	corr, err := ResponseCorrelationID(frame)
	if err != nil {
		return 0, nil, err
	}
	b := frame[8:]
	if key == APIVersions && len(b) >= 2 && int16(binary.BigEndian.Uint16(b)) == 35 { // UNSUPPORTED_VERSION
		version = 0
	}
	r := kmsg.ResponseForKey(key)
	if r == nil || version < 0 || version > r.MaxVersion() {
		return corr, nil, fmt.Errorf("kafkawire: unsupported response: api key %d version %d", key, version)
	}
	r.SetVersion(version)
	if ResponseHeaderVersion(r) >= 1 {
		if b, err = skipTags(b); err != nil {
			return corr, nil, err
		}
	}
	if err := r.ReadFrom(b); err != nil {
		return corr, nil, fmt.Errorf("kafkawire: %s v%d response: %w", kmsg.NameForKey(key), version, err)
	}
	return corr, r, nil
}

// skipTags skips a header's tagged fields: an unsigned varint count, then
// per field an unsigned varint tag, an unsigned varint size and the bytes.
func skipTags(b []byte) ([]byte, error) {
	n, m := binary.Uvarint(b)
	if m <= 0 {
		return nil, errors.New("kafkawire: header tagged fields truncated")
	}
	b = b[m:]
	for i := uint64(0); i < n; i++ {
		if _, m = binary.Uvarint(b); m <= 0 {
			return nil, errors.New("kafkawire: header tag truncated")
		}
		b = b[m:]
		size, m := binary.Uvarint(b)
		if m <= 0 || uint64(len(b)-m) < size {
			return nil, errors.New("kafkawire: header tag truncated")
		}
		b = b[m+int(size):]
	}
	return b, nil
}
