package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// kraftd's key-value records (docs/design.md D123). A record of the
// replicated map is
//
//	"kraftd.kv" version(1) op key-length key operands
//
// with op 'P' (put: the value is the rest), 'D' (delete: nothing more) or
// 'C' (compare-and-set: uvarint length of "from", "from", then "to" is the
// rest). Any other record, and a record with the prefix that does not
// decode, is an opaque record of POST /append: the digest covers it and
// the map ignores it. POST /append refuses bodies with the prefix, so
// that it cannot forge map operations.

// kvMagic starts every key-value record.
const kvMagic = "kraftd.kv"

// kvVersion is the record format's version.
const kvVersion = 1

// Limits of the key-value API.
const (
	maxKeyBytes   = 128
	maxValueBytes = 1 << 20
)

// Key-value operations.
const (
	opPut    = 'P'
	opDelete = 'D'
	opCAS    = 'C'
)

// kvOp is one key-value operation.
type kvOp struct {
	op       byte
	key      string
	value    string // put's value, CAS's "to"
	expected string // CAS's "from"
}

// encode is the op's record.
func (o kvOp) encode() []byte {
	b := make([]byte, 0, len(kvMagic)+3+len(o.key)+binary.MaxVarintLen64+len(o.expected)+len(o.value))
	b = append(b, kvMagic...)
	b = append(b, kvVersion, o.op, byte(len(o.key)))
	b = append(b, o.key...)
	switch o.op {
	case opPut:
		b = append(b, o.value...)
	case opCAS:
		b = binary.AppendUvarint(b, uint64(len(o.expected)))
		b = append(b, o.expected...)
		b = append(b, o.value...)
	}
	return b
}

// isKVRecord says whether data has the key-value records' prefix.
func isKVRecord(data []byte) bool { return bytes.HasPrefix(data, []byte(kvMagic)) }

// decodeKVOp decodes a key-value record; ok is false for any other record.
func decodeKVOp(data []byte) (kvOp, bool) {
	if !isKVRecord(data) {
		return kvOp{}, false
	}
	b := data[len(kvMagic):]
	if len(b) < 3 || b[0] != kvVersion {
		return kvOp{}, false
	}
	o := kvOp{op: b[1]}
	n := int(b[2])
	b = b[3:]
	if len(b) < n {
		return kvOp{}, false
	}
	o.key, b = string(b[:n]), b[n:]
	if checkKey(o.key) != nil {
		return kvOp{}, false
	}
	switch o.op {
	case opPut:
		o.value = string(b)
	case opDelete:
		if len(b) != 0 {
			return kvOp{}, false
		}
	case opCAS:
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return kvOp{}, false
		}
		b = b[k:]
		o.expected, o.value = string(b[:l]), string(b[l:])
	default:
		return kvOp{}, false
	}
	// Values are UTF-8 (the API refuses others): the JSON snapshot then
	// holds them exactly.
	if !utf8.ValidString(o.value) || !utf8.ValidString(o.expected) {
		return kvOp{}, false
	}
	return o, true
}

// checkKey: 1 to 128 bytes of [A-Za-z0-9._-].
func checkKey(k string) error {
	if len(k) == 0 || len(k) > maxKeyBytes {
		return fmt.Errorf("key of %d bytes: want 1 to %d", len(k), maxKeyBytes)
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("key %q: byte %d is not one of [A-Za-z0-9._-]", k, i)
		}
	}
	return nil
}

// checkValue: a UTF-8 string of at most 1 MiB.
func checkValue(v string) error {
	if len(v) > maxValueBytes {
		return fmt.Errorf("value of %d bytes: at most %d", len(v), maxValueBytes)
	}
	if !utf8.ValidString(v) {
		return errors.New("value is not UTF-8")
	}
	return nil
}
