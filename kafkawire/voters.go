package kafkawire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
)

// KIP-853's control records in Kafka's encoding (Kafka's
// VotersRecord.json and KRaftVersionRecord.json, version 0, flexible):
//
//	KRaftVersionRecord v0: Version int16 | KRaftVersion int16 | tags
//	VotersRecord v0:       Version int16 | Voters compact array of
//	                         VoterId int32 | VoterDirectoryId uuid
//	                         | Endpoints compact array of
//	                             Name compact string | Host compact string
//	                             | Port uint16 | tags
//	                         | KRaftVersionFeature {Min int16 | Max int16 | tags}
//	                         | tags
//	                       | tags
//
// kraft dials one endpoint per voter (replica.Voter.Endpoint, host:port),
// the one under the quorum's listener name (Format.ListenerName), or else
// the first, of a VotersRecord Kafka wrote; it keeps the voter's whole
// list in replica.Voter.Listeners, and the VotersRecord it writes names
// every listener again, in the order Kafka gave, the listener name's at
// Endpoint (docs/design.md D156, D260, D310).

// Format is Kafka's encoding of kraft's log entries and snapshots for a
// quorum whose replicas reach each other on the listener ListenerName
// (TransportConfig.ListenerName, Kafka's first controller.listener.names;
// empty: ListenerName, CONTROLLER). A VotersRecord names each voter's
// listeners by name, so reading one (which listener is the voter's
// Endpoint) and writing one (which listener Endpoint moves, and the name
// of a kraft voter's one listener) needs it (docs/design.md D310). The
// package's AppendEntries, ReadEntries, VotersValue, ReadVotersValue,
// NewVotersSnapshotWriter, ReadSnapshot and SnapshotVoters are the zero
// Format's.
type Format struct {
	ListenerName string
}

// listener is f's listener name.
func (f Format) listener() string {
	if f.ListenerName == "" {
		return ListenerName
	}
	return f.ListenerName
}

// KRaftVersionValue is the value of a KRaftVersionRecord v0 of level v.
func KRaftVersionValue(v int16) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(v))
	return append(b, 0)
}

// ReadKRaftVersionValue reads a KRaftVersionRecord's value.
func ReadKRaftVersionValue(b []byte) (int16, error) {
	d := decoder{b: b}
	if v := d.i16(); v != 0 && d.err == nil {
		return 0, fmt.Errorf("KRaftVersionRecord version %d", v)
	}
	level := d.i16()
	d.tags()
	if d.err != nil || len(d.b) != 0 {
		return 0, fmt.Errorf("KRaftVersionRecord %x: malformed", b)
	}
	return level, nil
}

// VotersValue is the zero Format's VotersValue (listener name CONTROLLER).
func VotersValue(vs []replica.Voter) ([]byte, error) { return Format{}.VotersValue(vs) }

// VotersValue is the value of a VotersRecord v0 holding vs: each voter's
// Listeners, the one under f's listener name at its Endpoint, or, for a
// voter without Listeners, its endpoint under f's listener name (none for
// an empty endpoint).
func (f Format) VotersValue(vs []replica.Voter) ([]byte, error) {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.AppendUvarint(b, uint64(len(vs)+1))
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, uint32(v.Key.ID))
		b = append(b, v.Key.DirectoryID[:]...)
		ls, err := f.votersListeners(v)
		if err != nil {
			return nil, fmt.Errorf("voter %d: %w", v.Key.ID, err)
		}
		b = binary.AppendUvarint(b, uint64(len(ls)+1))
		for _, l := range ls {
			b = appendCompactString(b, l.Name)
			b = appendCompactString(b, l.Host)
			b = binary.BigEndian.AppendUint16(b, l.Port)
			b = append(b, 0)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(v.KRaftVersions.Min))
		b = binary.BigEndian.AppendUint16(b, uint16(v.KRaftVersions.Max))
		b = append(b, 0, 0) // the feature's tags, the voter's tags
	}
	return append(b, 0), nil
}

// votersListeners are the listeners VotersValue writes for v (D260): an
// endpoint update moves the listener under f's name (D310).
func (f Format) votersListeners(v replica.Voter) ([]replica.Listener, error) {
	var host string
	var port uint16
	if v.Endpoint != "" {
		var err error
		if host, port, err = splitEndpoint(v.Endpoint); err != nil {
			return nil, err
		}
	}
	if len(v.Listeners) == 0 {
		if v.Endpoint == "" {
			return nil, nil
		}
		return []replica.Listener{{Name: f.listener(), Host: host, Port: port}}, nil
	}
	ls := append([]replica.Listener(nil), v.Listeners...)
	for i := range ls {
		if ls[i].Name == f.listener() && v.Endpoint != "" {
			ls[i].Host, ls[i].Port = host, port
		}
	}
	return ls, nil
}

// kraftListeners are the Listeners a replica.Voter keeps of a Kafka list
// whose listener under f's name (or first) is its Endpoint: nil when the
// list is that one listener under f's name, as a kraft voter's (D260,
// D310).
func (f Format) kraftListeners(ls []replica.Listener) []replica.Listener {
	if len(ls) == 0 || len(ls) == 1 && ls[0].Name == f.listener() {
		return nil
	}
	return ls
}

// ReadVotersValue is the zero Format's ReadVotersValue (listener name
// CONTROLLER).
func ReadVotersValue(b []byte) ([]replica.Voter, error) { return Format{}.ReadVotersValue(b) }

// ReadVotersValue reads a VotersRecord's value: the voter set, checked as
// replica.DecodeVoters checks kraft's own encoding; each voter's Endpoint
// is its listener under f's name, or else its first.
func (f Format) ReadVotersValue(b []byte) ([]replica.Voter, error) {
	d := decoder{b: b}
	if v := d.i16(); v != 0 && d.err == nil {
		return nil, fmt.Errorf("VotersRecord version %d", v)
	}
	n := d.array()
	var vs []replica.Voter
	for i := 0; i < n && d.err == nil; i++ {
		var v replica.Voter
		v.Key.ID = kraft.NodeID(d.i32())
		copy(v.Key.DirectoryID[:], d.take(16))
		eps := d.array()
		var ls []replica.Listener
		for j := 0; j < eps && d.err == nil; j++ {
			name, host := d.str(), d.str()
			port := d.u16()
			d.tags()
			if d.err == nil && (v.Endpoint == "" || name == f.listener()) {
				v.Endpoint = net.JoinHostPort(host, strconv.Itoa(int(port)))
			}
			ls = append(ls, replica.Listener{Name: name, Host: host, Port: port})
		}
		v.Listeners = f.kraftListeners(ls)
		v.KRaftVersions.Min, v.KRaftVersions.Max = d.i16(), d.i16()
		d.tags()
		d.tags()
		vs = append(vs, v)
	}
	d.tags()
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("VotersRecord: %w", d.err)
	}
	// kraft's decoder checks the set (ids, count) the same way for both
	// encodings.
	return replica.DecodeVoters(replica.EncodeVoters(vs))
}

func splitEndpoint(ep string) (string, uint16, error) {
	host, p, err := net.SplitHostPort(ep)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("endpoint %q: port: %w", ep, err)
	}
	return host, uint16(port), nil
}

func appendCompactString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)+1))
	return append(b, s...)
}

// decoder reads Kafka's flexible encoding; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

var errTruncated = errors.New("truncated")

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return make([]byte, n)
	}
	if n < 0 || len(d.b) < n {
		d.err = errTruncated
		return make([]byte, max(n, 0))
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) i16() int16  { return int16(binary.BigEndian.Uint16(d.take(2))) }
func (d *decoder) u16() uint16 { return binary.BigEndian.Uint16(d.take(2)) }
func (d *decoder) i32() int32  { return int32(binary.BigEndian.Uint32(d.take(4))) }

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

// array reads a compact array's length (a null array is empty).
func (d *decoder) array() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) { // each element takes a byte at least
		if d.err == nil {
			d.err = fmt.Errorf("an array of %d elements", n-1)
		}
		return 0
	}
	if n == 0 {
		return 0
	}
	return int(n - 1)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n == 0 {
		if d.err == nil {
			d.err = errors.New("a null string")
		}
		return ""
	}
	return string(d.take(int(n - 1)))
}

// tags skips tagged fields.
func (d *decoder) tags() {
	n := d.uvarint()
	for i := uint64(0); i < n && d.err == nil; i++ {
		d.uvarint()
		d.take(int(d.uvarint()))
	}
}
