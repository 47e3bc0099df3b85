package storage

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
)

// QuorumStateFileName is the name Kafka gives the quorum-state file, in the
// metadata partition's directory (FileQuorumStateStore.DEFAULT_FILE_NAME).
const QuorumStateFileName = "quorum-state"

// maxQuorumStateSize bounds what ReadQuorumState reads: a real file is a few
// hundred bytes.
const maxQuorumStateSize = 1 << 20

// QuorumStateData is the content of Kafka's quorum-state file, field for
// field (Kafka's QuorumStateData message and its data_version). Version 0
// has ClusterID, AppliedOffset and CurrentVoters; version 1 drops them and
// adds VotedDirectoryID. Kafka writes version 1 when kraft.version is 1
// (KIP-853) and version 0 otherwise.
type QuorumStateData struct {
	// Version is data_version: 0 or 1.
	Version int16
	// ClusterID is clusterId (version 0; Kafka writes "").
	ClusterID string
	// LeaderID is leaderId, -1 for no leader.
	LeaderID int32
	// LeaderEpoch is leaderEpoch, the epoch.
	LeaderEpoch int32
	// VotedID is votedId, -1 for no vote.
	VotedID int32
	// VotedDirectoryID is votedDirectoryId (version 1), uuid.Nil for none.
	VotedDirectoryID uuid.UUID
	// AppliedOffset is appliedOffset (version 0; Kafka writes 0).
	AppliedOffset int64
	// CurrentVoters is currentVoters (version 0): the voter ids. A file's
	// null reads as nil; nil and empty are both written as [].
	CurrentVoters []int32
}

// NewQuorumStateData returns the version 1 data that stores r.
func NewQuorumStateData(r kraft.QuorumRecord) QuorumStateData {
	return QuorumStateData{
		Version:          1,
		LeaderID:         int32(r.LeaderID),
		LeaderEpoch:      int32(r.Epoch),
		VotedID:          int32(r.VotedKey.ID),
		VotedDirectoryID: r.VotedKey.DirectoryID,
	}
}

// Record returns the quorum record d stores: leaderId -1 is kraft.NoNode,
// votedId -1 is kraft.NoReplica (whatever the directory id), the zero
// directory id is uuid.Nil. A negative epoch or an id below -1 is an error.
func (d QuorumStateData) Record() (kraft.QuorumRecord, error) {
	switch {
	case d.LeaderEpoch < 0:
		return kraft.QuorumRecord{}, fmt.Errorf("leaderEpoch %d is negative", d.LeaderEpoch)
	case d.LeaderID < -1:
		return kraft.QuorumRecord{}, fmt.Errorf("leaderId %d is below -1", d.LeaderID)
	case d.VotedID < -1:
		return kraft.QuorumRecord{}, fmt.Errorf("votedId %d is below -1", d.VotedID)
	}
	r := kraft.QuorumRecord{
		Epoch:    kraft.Epoch(d.LeaderEpoch),
		LeaderID: kraft.NodeID(d.LeaderID),
		VotedKey: kraft.NoReplica,
	}
	if d.VotedID != -1 {
		r.VotedKey = kraft.ReplicaKey{ID: kraft.NodeID(d.VotedID), DirectoryID: d.VotedDirectoryID}
	}
	return r, nil
}

// Marshal returns the file content Kafka writes for d: one line of compact
// JSON, no newline, fields in Kafka's order and data_version last. A field
// that d's version does not have must hold its default (Kafka refuses to
// write it otherwise).
func (d QuorumStateData) Marshal() ([]byte, error) {
	var b []byte
	switch d.Version {
	case 0:
		if d.VotedDirectoryID != uuid.Nil {
			return nil, errors.New("votedDirectoryId is not in quorum-state version 0")
		}
		b = append(b, `{"clusterId":`...)
		b = appendJSONString(b, d.ClusterID)
		b = appendInts(b, d)
		b = append(b, `,"appliedOffset":`...)
		b = strconv.AppendInt(b, d.AppliedOffset, 10)
		b = append(b, `,"currentVoters":[`...)
		for i, v := range d.CurrentVoters {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"voterId":`...)
			b = strconv.AppendInt(b, int64(v), 10)
			b = append(b, '}')
		}
		b = append(b, `],"data_version":0}`...)
	case 1:
		if d.ClusterID != "" || d.AppliedOffset != 0 || len(d.CurrentVoters) > 0 {
			return nil, errors.New("clusterId, appliedOffset and currentVoters are not in quorum-state version 1")
		}
		b = append(b, '{')
		b = append(b, appendInts(nil, d)[1:]...)
		b = append(b, `,"votedDirectoryId":"`...)
		b = append(b, kafkaUUIDString(d.VotedDirectoryID)...)
		b = append(b, `","data_version":1}`...)
	default:
		return nil, fmt.Errorf("quorum-state data_version %d is not 0 or 1", d.Version)
	}
	return b, nil
}

// appendInts appends the fields both versions share, each after a comma.
func appendInts(b []byte, d QuorumStateData) []byte {
	b = append(b, `,"leaderId":`...)
	b = strconv.AppendInt(b, int64(d.LeaderID), 10)
	b = append(b, `,"leaderEpoch":`...)
	b = strconv.AppendInt(b, int64(d.LeaderEpoch), 10)
	b = append(b, `,"votedId":`...)
	return strconv.AppendInt(b, int64(d.VotedID), 10)
}

// ParseQuorumState parses the content of a quorum-state file as Kafka's
// FileQuorumStateStore reads it: the first line is a JSON object whose
// data_version is 0 or 1; every field of that version must be present with
// its JSON type (an integer literal in range, a string, an array); fields of
// the other version are checked if present and otherwise take Kafka's
// defaults; unknown fields are ignored. Stricter than Kafka, anything after
// the first line other than white space is an error, and so is a
// data_version that is not an integer.
func ParseQuorumState(content []byte) (QuorumStateData, error) {
	line := content
	if i := bytes.IndexAny(content, "\r\n"); i >= 0 {
		line = content[:i]
		if len(bytes.TrimSpace(content[i:])) > 0 {
			return QuorumStateData{}, errors.New("more than one line")
		}
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return QuorumStateData{}, errors.New("empty file")
	}
	if !utf8.Valid(line) {
		return QuorumStateData{}, errors.New("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	var obj map[string]json.RawMessage
	if err := dec.Decode(&obj); err != nil {
		return QuorumStateData{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if obj == nil {
		return QuorumStateData{}, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return QuorumStateData{}, errors.New("data after the JSON object")
	}
	var d QuorumStateData
	raw, ok := obj["data_version"]
	if !ok {
		return d, errors.New("no data_version field")
	}
	v, err := jsonInt(raw, 16)
	if err != nil {
		return d, fmt.Errorf("data_version: %w", err)
	}
	if v < 0 || v > 1 {
		return d, fmt.Errorf("data_version %d is not 0 or 1", v)
	}
	d.Version = int16(v)
	r := fieldReader{obj: obj, version: d.Version}
	d.ClusterID = r.text("clusterId", 0)
	d.LeaderID = int32(r.integer("leaderId", -1, 32, -1))
	d.LeaderEpoch = int32(r.integer("leaderEpoch", -1, 32, -1))
	d.VotedID = int32(r.integer("votedId", -1, 32, -1))
	d.VotedDirectoryID = r.directoryID("votedDirectoryId", 1)
	d.AppliedOffset = r.integer("appliedOffset", 0, 64, 0)
	d.CurrentVoters = r.voters("currentVoters", 0)
	return d, r.err
}

// fieldReader reads the fields of one QuorumStateData object and keeps the
// first error.
type fieldReader struct {
	obj     map[string]json.RawMessage
	version int16
	err     error
}

// get returns the raw value of a field that exists in version only (or in
// every version when only is -1); false if it is absent, which is an error
// when the field is in the file's version.
func (r *fieldReader) get(name string, only int16) (json.RawMessage, bool) {
	raw, ok := r.obj[name]
	if !ok && (only < 0 || only == r.version) && r.err == nil {
		r.err = fmt.Errorf("field %s is missing; it is mandatory in version %d", name, r.version)
	}
	return raw, ok
}

func (r *fieldReader) fail(name string, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("field %s: %w", name, err)
	}
}

func (r *fieldReader) integer(name string, only int16, bits int, def int64) int64 {
	raw, ok := r.get(name, only)
	if !ok {
		return def
	}
	v, err := jsonInt(raw, bits)
	if err != nil {
		r.fail(name, err)
	}
	return v
}

func (r *fieldReader) text(name string, only int16) string {
	raw, ok := r.get(name, only)
	if !ok {
		return ""
	}
	s, err := jsonString(raw)
	if err != nil {
		r.fail(name, err)
	}
	return s
}

func (r *fieldReader) directoryID(name string, only int16) uuid.UUID {
	raw, ok := r.get(name, only)
	if !ok {
		return uuid.Nil
	}
	s, err := jsonString(raw)
	if err != nil {
		r.fail(name, err)
		return uuid.Nil
	}
	u, err := parseKafkaUUID(s)
	if err != nil {
		r.fail(name, err)
	}
	return u
}

func (r *fieldReader) voters(name string, only int16) []int32 {
	raw, ok := r.get(name, only)
	if !ok || string(raw) == "null" {
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || elems == nil {
		r.fail(name, errors.New("not a JSON array"))
		return nil
	}
	ids := make([]int32, 0, len(elems))
	for i, e := range elems {
		var voter map[string]json.RawMessage
		_ = json.Unmarshal(e, &voter) // a non-object has no voterId
		idRaw, ok := voter["voterId"]
		if !ok {
			r.fail(name, fmt.Errorf("element %d has no voterId", i))
			return nil
		}
		id, err := jsonInt(idRaw, 32)
		if err != nil {
			r.fail(name, fmt.Errorf("element %d voterId: %w", i, err))
			return nil
		}
		ids = append(ids, int32(id))
	}
	return ids
}

// jsonInt parses a JSON integer literal that fits in bits bits, as Kafka's
// MessageUtil.jsonNodeToInt and jsonNodeToLong accept: no fraction, no
// exponent, no string.
func jsonInt(raw json.RawMessage, bits int) (int64, error) {
	// A JSON number is an integer literal if ParseInt takes it: JSON has no
	// '+' sign, which is the only other thing ParseInt would accept.
	s := strings.TrimSpace(string(raw))
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, fmt.Errorf("%s is not a %d-bit integer", s, bits)
	}
	return v, nil
}

// jsonString parses a JSON string (not null).
func jsonString(raw json.RawMessage) (string, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil || s == nil {
		return "", errors.New("not a JSON string")
	}
	return *s, nil
}

// parseKafkaUUID decodes Kafka's text form of a Uuid (Uuid.fromString):
// URL-safe base64 of the 16 bytes, padding optional, at most 24 characters.
func parseKafkaUUID(s string) (uuid.UUID, error) {
	if len(s) > 24 {
		return uuid.Nil, fmt.Errorf("uuid %q is longer than 24 characters", s)
	}
	if strings.ContainsAny(s, "\r\n") { // Go's decoder would skip them
		return uuid.Nil, fmt.Errorf("uuid %q is not base64url", s)
	}
	enc := base64.RawURLEncoding
	if strings.HasSuffix(s, "=") {
		enc = base64.URLEncoding
	}
	b, err := enc.DecodeString(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("uuid %q is not base64url", s)
	}
	if len(b) != 16 {
		return uuid.Nil, fmt.Errorf("uuid %q decodes to %d bytes, not 16", s, len(b))
	}
	var u uuid.UUID
	copy(u[:], b)
	return u, nil
}

// kafkaUUIDString is Kafka's Uuid.toString: URL-safe base64 without
// padding, 22 characters.
func kafkaUUIDString(u uuid.UUID) string {
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// appendJSONString appends s as a JSON string escaped as Jackson escapes
// it: quote, backslash and control characters only.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// QuorumStatePath is the path of the quorum-state file in dir.
func QuorumStatePath(dir string) string {
	return filepath.Join(dir, QuorumStateFileName)
}

// ReadQuorumStateData reads and parses the quorum-state file at path. A
// missing file gives (nil, nil); anything that does not parse is an error
// naming the file.
//
// When the file has a checked copy (QuorumStateCopySuffix), it is checked
// against it: a file that does not match the copy (a flipped byte, an
// older record, a missing file) is a *QuorumStateDamageError (errors.Is
// ErrDamaged).
func ReadQuorumStateData(path string) (*QuorumStateData, error) {
	return checkedQuorumState(osFS{}, path)
}

func readQuorumStateData(fsys FS, path string) (*QuorumStateData, error) {
	b, err := readSmallFile(fsys, path, maxQuorumStateSize)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: reading quorum state %s: %w", path, err)
	}
	d, err := ParseQuorumState(b)
	if err != nil {
		return nil, fmt.Errorf("storage: quorum state file %s: %w", path, err)
	}
	return &d, nil
}

// ReadQuorumState reads the quorum record stored in the quorum-state file
// at path, in either version. A missing file gives (nil, nil), which
// kraft.NewState takes as "nothing was ever stored"; a file that does not
// parse, or holds a record kraft cannot use, is an error naming the file.
// The file is checked against its checked copy as ReadQuorumStateData
// does; CheckQuorumState checks it against the log.
func ReadQuorumState(path string) (*kraft.QuorumRecord, error) {
	return readQuorumState(osFS{}, path)
}

func readQuorumState(fsys FS, path string) (*kraft.QuorumRecord, error) {
	d, err := checkedQuorumState(fsys, path)
	if d == nil || err != nil {
		return nil, err
	}
	r, err := d.Record()
	if err != nil {
		return nil, fmt.Errorf("storage: quorum state file %s: %w", path, err)
	}
	return &r, nil
}

// WriteQuorumState stores r in the quorum-state file at path, in version 1
// (which keeps the voted directory id), atomically and durably: a temporary
// file path+".tmp" is written and fsynced, renamed over path, and the
// directory is fsynced. A crash leaves the old record or the new one.
// Before the file, the record is written to its checked copy
// (QuorumStateCopySuffix), durably.
func WriteQuorumState(path string, r kraft.QuorumRecord) error {
	return writeQuorumStateData(osFS{}, path, NewQuorumStateData(r))
}

// WriteQuorumStateData stores d in the quorum-state file at path, like
// WriteQuorumState; use it to write version 0 (for a cluster whose
// kraft.version is 0) or to keep fields kraft does not use.
func WriteQuorumStateData(path string, d QuorumStateData) error {
	return writeQuorumStateData(osFS{}, path, d)
}

func writeQuorumStateData(fsys FS, path string, d QuorumStateData) error {
	b, err := d.Marshal()
	if err != nil {
		return fmt.Errorf("storage: writing quorum state %s: %w", path, err)
	}
	r, err := d.Record()
	if err != nil {
		return fmt.Errorf("storage: writing quorum state %s: %w", path, err)
	}
	var prev *kraft.QuorumRecord
	if old, err := readQuorumStateData(fsys, path); err == nil && old != nil {
		if or, err := old.Record(); err == nil {
			prev = &or
		}
	}
	if err := writeQuorumCopy(fsys, path+QuorumStateCopySuffix, r, prev); err != nil {
		return fmt.Errorf("storage: writing quorum state %s: %w", path, err)
	}
	if err := writeFileAtomic(fsys, path, b); err != nil {
		return fmt.Errorf("storage: writing quorum state %s: %w", path, err)
	}
	return nil
}
