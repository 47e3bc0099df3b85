package replica

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/kraftquorum/kraft"
)

// The formats of what the layer writes into the log, the bootstrap
// checkpoint and snapshots, byte for byte; every encoder and decoder of
// them is in this file (docs/design.md D291). Integers are big endian;
// u8/u16/u32 are unsigned, i16/i32 signed (two's complement); a uuid is
// its 16 bytes. None of these bytes may change: logs, checkpoints and
// snapshots written before must read the same, and the golden tests
// (payload_test.go) pin each format.
//
// # Log entries
//
// A log entry's payload (storage.Entry.Data; the log's own framing is
// package storage's, docs/storage.md) is a type byte and a body
// (docs/design.md D36):
//
//	entry = type:u8 body
//
//	type 0 RecordData          body: the application's bytes, as given to
//	                           Propose (DataRecords puts the type byte in
//	                           front). Only these reach an application.
//	type 1 RecordLeaderChange  body: kraft.AppendLeaderChange as Go's
//	                           encoding/json writes it, field names as in
//	                           the struct:
//	                           {"Epoch":e,"LeaderID":l,"Voters":[k*]|null,
//	                            "GrantingVoters":[k*]|null,"VotersRecord":b}
//	                           with k = {"ID":id,"DirectoryID":"<uuid>"}.
//	                           The layer never reads it back; kafkawire
//	                           maps it to and from Kafka's
//	                           LeaderChangeMessage, and the simulator
//	                           reads its epoch and leader.
//	type 2 RecordVoters        body: a voter set (below); Kafka's
//	                           VotersRecord. Every one is read back at
//	                           startup (recoverVoters) and when fetched.
//	type 3 RecordBarrier       body: none. A read barrier of older logs
//	                           (docs/design.md D65; since D120 the layer
//	                           writes none); never handed to an
//	                           application.
//	type 4 RecordKRaftVersion  body: level:i16, the kraft.version; Kafka's
//	                           KRaftVersionRecord. A first leader writes
//	                           [LeaderChange, KRaftVersion(1), Voters]
//	                           (docs/design.md D155).
//
// # Voter sets
//
// A voter set is encoded the same in a VotersRecord's body, the bootstrap
// checkpoint and a snapshot's header (EncodeVoters, DecodeVoters):
//
//	voters   = version:u8 (0 or 1) count:u16 voter*
//	voter    = id:i32 directoryID:uuid minVersion:i16 maxVersion:i16
//	           endpointLen:u16 endpoint
//	           [version 1: listenerCount:u16 listener*]
//	listener = nameLen:u16 name hostLen:u16 host port:u16
//
// Version 1 is written only when a voter has Listeners, so a set without
// any encodes to the version 0 bytes, and version 0 bytes still decode
// (docs/design.md D260). Strings and listener lists are cut to 65,535
// bytes and entries. A decoded set has 1 to kraft.MaxVoters voters with
// distinct, non-negative ids and no trailing bytes.
//
// # The bootstrap checkpoint
//
// Its payload is a voter set, as above (node writes it with
// storage.WriteBootstrap, which frames it with a magic, the length and a
// CRC-32C, docs/storage.md).
//
// # Snapshots
//
// A snapshot's bytes (those the host gives storage.Snapshots, whose file
// header is package storage's) are, in a dynamic quorum, a header with the
// voter set in force at the snapshot's end, then the application's bytes
// (WriteSnapshotVoters, ReadSnapshotVoters):
//
//	snapshot = magic:"\xffkraft-voters\x00" (14 bytes) size:u32 voters(size bytes)
//	           application bytes
//
// and in a static quorum the application's bytes alone (a snapshot that
// does not start with the magic has no voter set). A voter set of over
// 1 MiB is refused.

// The type bytes of log payloads (the file's comment gives each body).
// Data records are the application's; the others are control records,
// which Kafka keeps in the same log: LeaderChange and VotersRecord, which
// kraft asks for, read barriers of older logs (docs/design.md D65), and
// Kafka's KRaftVersionRecord, which a first leader writes between its
// LeaderChange and the bootstrap VotersRecord as Kafka's
// LeaderState.appendStartOfEpochControlRecords does, so that a log has the
// same records at the same offsets as a Kafka replica's (docs/design.md
// D155).
const (
	RecordData         byte = 0
	RecordLeaderChange byte = 1
	RecordVoters       byte = 2
	RecordBarrier      byte = 3
	RecordKRaftVersion byte = 4
)

// KRaftVersionRecord is the log payload of a KRaftVersionRecord of level v.
func KRaftVersionRecord(v int16) []byte {
	return []byte{RecordKRaftVersion, byte(uint16(v) >> 8), byte(v)}
}

// DataRecords makes the log payloads of a client's records: each with the
// RecordData type byte in front, all in one new block (one copy; a log
// that can keep memory it is handed keeps the block).
func DataRecords(records [][]byte) [][]byte {
	size := len(records)
	for _, r := range records {
		size += len(r)
	}
	block := make([]byte, 0, size)
	data := make([][]byte, len(records))
	for i, r := range records {
		start := len(block)
		block = append(append(block, RecordData), r...)
		data[i] = block[start:len(block):len(block)]
	}
	return data
}

// LeaderChangeRecord is the log payload of the LeaderChange record of a
// new leader's epoch: the action as JSON after the type byte.
func LeaderChangeRecord(a kraft.AppendLeaderChange) []byte {
	data, _ := json.Marshal(a)
	return append([]byte{RecordLeaderChange}, data...)
}

// ReadLeaderChangeRecord decodes a LeaderChange record's log payload, the
// type byte included.
func ReadLeaderChangeRecord(data []byte) (kraft.AppendLeaderChange, error) {
	var a kraft.AppendLeaderChange
	if len(data) == 0 || data[0] != RecordLeaderChange {
		return a, fmt.Errorf("replica: not a LeaderChange record")
	}
	err := json.Unmarshal(data[1:], &a)
	return a, err
}

// The versions of the voter set encoding (the file's comment gives its
// bytes; version 1, listeners, docs/design.md D260).
const (
	votersVersion          = 0
	votersVersionListeners = 1
)

// EncodeVoters encodes a voter set.
func EncodeVoters(vs []Voter) []byte {
	version := byte(votersVersion)
	for _, v := range vs {
		if len(v.Listeners) > 0 {
			version = votersVersionListeners
		}
	}
	b := []byte{version}
	b = appendU16(b, uint16(len(vs)))
	for _, v := range vs {
		b = appendU32(b, uint32(v.Key.ID))
		b = append(b, v.Key.DirectoryID[:]...)
		b = appendU16(b, uint16(v.KRaftVersions.Min))
		b = appendU16(b, uint16(v.KRaftVersions.Max))
		b = appendString16(b, v.Endpoint)
		if version == votersVersionListeners {
			ls := v.Listeners
			if len(ls) > 0xFFFF {
				ls = ls[:0xFFFF]
			}
			b = appendU16(b, uint16(len(ls)))
			for _, l := range ls {
				b = appendString16(b, l.Name)
				b = appendString16(b, l.Host)
				b = appendU16(b, l.Port)
			}
		}
	}
	return b
}

// appendString16 appends s, cut to 65,535 bytes, after its length (u16).
func appendString16(b []byte, s string) []byte {
	if len(s) > 0xFFFF {
		s = s[:0xFFFF]
	}
	b = appendU16(b, uint16(len(s)))
	return append(b, s...)
}

var errShort = errors.New("replica: voter set: truncated")

// DecodeVoters decodes what EncodeVoters wrote; the set must be a valid
// voter set (1 to kraft.MaxVoters voters with distinct ids).
func DecodeVoters(b []byte) ([]Voter, error) {
	take := func(n int) []byte {
		if len(b) < n {
			b = nil
			return nil
		}
		out := b[:n]
		b = b[n:]
		return out
	}
	head := take(3)
	if head == nil {
		return nil, errShort
	}
	version := head[0]
	if version != votersVersion && version != votersVersionListeners {
		return nil, fmt.Errorf("replica: voter set: unknown version %d", version)
	}
	str := func() (string, bool) {
		l := take(2)
		if l == nil {
			return "", false
		}
		n := int(binary.BigEndian.Uint16(l))
		s := take(n)
		return string(s), s != nil || n == 0
	}
	n := int(binary.BigEndian.Uint16(head[1:]))
	if n == 0 || n > kraft.MaxVoters {
		return nil, fmt.Errorf("replica: voter set: %d voters", n)
	}
	vs := make([]Voter, 0, n)
	for i := 0; i < n; i++ {
		f := take(4 + 16 + 2 + 2 + 2)
		if f == nil {
			return nil, errShort
		}
		var v Voter
		v.Key.ID = kraft.NodeID(int32(binary.BigEndian.Uint32(f)))
		copy(v.Key.DirectoryID[:], f[4:20])
		v.KRaftVersions.Min = int16(binary.BigEndian.Uint16(f[20:]))
		v.KRaftVersions.Max = int16(binary.BigEndian.Uint16(f[22:]))
		ep := take(int(binary.BigEndian.Uint16(f[24:])))
		if ep == nil && binary.BigEndian.Uint16(f[24:]) > 0 {
			return nil, errShort
		}
		v.Endpoint = string(ep)
		if version == votersVersionListeners {
			c := take(2)
			if c == nil {
				return nil, errShort
			}
			for j := int(binary.BigEndian.Uint16(c)); j > 0; j-- {
				var l Listener
				var ok1, ok2 bool
				l.Name, ok1 = str()
				l.Host, ok2 = str()
				p := take(2)
				if !ok1 || !ok2 || p == nil {
					return nil, errShort
				}
				l.Port = binary.BigEndian.Uint16(p)
				v.Listeners = append(v.Listeners, l)
			}
		}
		if v.Key.ID < 0 {
			return nil, fmt.Errorf("replica: voter set: negative id %d", v.Key.ID)
		}
		for _, w := range vs {
			if w.Key.ID == v.Key.ID {
				return nil, fmt.Errorf("replica: voter set: id %d appears twice", v.Key.ID)
			}
		}
		vs = append(vs, v)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("replica: voter set: %d trailing bytes", len(b))
	}
	return vs, nil
}

// VotersRecord is a VotersRecord's log payload.
func VotersRecord(vs []Voter) []byte { return append([]byte{RecordVoters}, EncodeVoters(vs)...) }

// IsVotersRecord reports whether a log payload is a VotersRecord.
func IsVotersRecord(data []byte) bool { return len(data) > 0 && data[0] == RecordVoters }

// snapshotVotersMagic starts a snapshot that holds a voter set: the bytes
// of a snapshot of a dynamic quorum are the magic, the voter set's length
// (u32) and encoding, then the application's bytes. A snapshot of a static
// quorum holds the application's bytes alone. docs/design.md records the
// choice.
const snapshotVotersMagic = "\xffkraft-voters\x00"

// WriteSnapshotVoters writes the voter set header of a snapshot.
func WriteSnapshotVoters(w io.Writer, vs []Voter) error {
	enc := EncodeVoters(vs)
	b := make([]byte, 0, len(snapshotVotersMagic)+4+len(enc))
	b = append(b, snapshotVotersMagic...)
	b = appendU32(b, uint32(len(enc)))
	b = append(b, enc...)
	_, err := w.Write(b)
	return err
}

// ReadSnapshotVoters reads the voter set at the start of a snapshot's
// bytes, if it has one, and returns a reader of the application's bytes.
func ReadSnapshotVoters(r io.Reader) ([]Voter, io.Reader, error) {
	head := make([]byte, len(snapshotVotersMagic))
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	head = head[:n]
	if string(head) != snapshotVotersMagic {
		return nil, io.MultiReader(bytes.NewReader(head), r), nil
	}
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, nil, fmt.Errorf("replica: snapshot voter set: %w", err)
	}
	size := binary.BigEndian.Uint32(l[:])
	if size > 1<<20 {
		return nil, nil, fmt.Errorf("replica: snapshot voter set of %d bytes", size)
	}
	enc := make([]byte, size)
	if _, err := io.ReadFull(r, enc); err != nil {
		return nil, nil, fmt.Errorf("replica: snapshot voter set: %w", err)
	}
	vs, err := DecodeVoters(enc)
	if err != nil {
		return nil, nil, err
	}
	return vs, r, nil
}

func appendU16(b []byte, v uint16) []byte { return append(b, byte(v>>8), byte(v)) }

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
