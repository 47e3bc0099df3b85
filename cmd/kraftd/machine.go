package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
)

// machine is kraftd's demo state machine. It applies the committed data
// records in order: it counts them and their bytes and keeps a running
// SHA-256 digest of them (digest = SHA-256(digest, data) for each record),
// so replicas that applied the same records show the same
// digest in GET /status. It is also a replicated map from key to value:
// the key-value records (kvrecord.go) put, delete and compare-and-set its
// keys (docs/design.md D123). Its snapshot is that state as JSON; Restore
// loads one.
type machine struct {
	mu       sync.Mutex
	records  int64
	bytes    int64
	next     int64 // the offset after the last record applied or restored
	digest   [sha256.Size]byte
	restored *kraft.LogEnd // the latest snapshot loaded
	kv       map[string]kvEntry
	// outcomes are the outcomes of the latest CAS records applied, by
	// offset, for the HTTP handlers waiting for them; outcomeOrder is
	// their offsets in order, at most maxOutcomes, and outcomeBytes the
	// bytes of the values they hold, at most maxOutcomeBytes (D124).
	outcomes     map[int64]casOutcome
	outcomeOrder []int64
	outcomeBytes int
}

// kvEntry is a key's value and the offset of the record that wrote it.
type kvEntry struct {
	Value  string `json:"value"`
	Offset int64  `json:"offset"`
}

// casOutcome is what the state machine decided for a CAS record: ok if
// the value was the expected one and is now the new one; otherwise the
// value the key had (nil: none), which is unchanged.
type casOutcome struct {
	ok      bool
	current *string
}

// size is the bytes of the value the outcome holds.
func (o casOutcome) size() int {
	if o.current == nil {
		return 0
	}
	return len(*o.current)
}

// maxOutcomes and maxOutcomeBytes bound the CAS outcomes the machine
// keeps, in number and in the bytes of the values they hold: a handler
// that finds its outcome gone answers 503 (D124).
const (
	maxOutcomes     = 1 << 14
	maxOutcomeBytes = 64 << 20
)

// Snapshot format versions: 1 holds the digest; 2 also holds the map
// (D125). Restore reads both (version 1: an empty map).
const (
	snapshotV1 = 1
	snapshotV2 = 2
)

// machineSnapshot is the snapshot format, version 2.
type machineSnapshot struct {
	Version int                `json:"version"`
	Next    int64              `json:"next"`
	Records int64              `json:"records"`
	Bytes   int64              `json:"bytes"`
	Digest  string             `json:"digest"`
	KV      map[string]kvEntry `json:"kv,omitempty"`
}

// machineStatus is the state machine in GET /status.
type machineStatus struct {
	// Records and Bytes count the data records applied; Digest is their
	// running SHA-256; Applied is the offset after the last record applied
	// (or the end of the snapshot restored since).
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
	Applied int64  `json:"applied"`
	Digest  string `json:"digest"`
	// Restored is the last snapshot loaded (at start or installed from
	// the leader), if any.
	Restored *node.SnapshotID `json:"restored,omitempty"`
}

// apply is node.Config.OnCommit.
func (m *machine) apply(rs []node.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rs {
		h := sha256.New()
		h.Write(m.digest[:])
		h.Write(r.Data)
		h.Sum(m.digest[:0])
		m.records++
		m.bytes += int64(len(r.Data))
		m.next = r.Offset + 1
		if op, ok := decodeKVOp(r.Data); ok {
			m.applyKV(r.Offset, op)
		}
	}
}

// applyKV applies a key-value operation at offset (m.mu held). A CAS is
// decided here, the same way on every replica, and its outcome kept for
// the handler waiting for it.
func (m *machine) applyKV(offset int64, op kvOp) {
	if m.kv == nil {
		m.kv = map[string]kvEntry{}
	}
	switch op.op {
	case opPut:
		m.kv[op.key] = kvEntry{Value: op.value, Offset: offset}
	case opDelete:
		delete(m.kv, op.key)
	case opCAS:
		e, found := m.kv[op.key]
		var out casOutcome
		if found && e.Value == op.expected {
			m.kv[op.key] = kvEntry{Value: op.value, Offset: offset}
			out.ok = true
		} else if found {
			v := e.Value
			out.current = &v
		}
		if m.outcomes == nil {
			m.outcomes = map[int64]casOutcome{}
		}
		m.outcomes[offset] = out
		m.outcomeOrder = append(m.outcomeOrder, offset)
		m.outcomeBytes += out.size()
		for len(m.outcomeOrder) > maxOutcomes || m.outcomeBytes > maxOutcomeBytes {
			old := m.outcomeOrder[0]
			m.outcomeBytes -= m.outcomes[old].size()
			delete(m.outcomes, old)
			m.outcomeOrder = m.outcomeOrder[1:]
		}
	}
}

// casResult takes the outcome of the CAS record at offset; ok is false if
// the machine has none (the record was not applied here but restored from
// a snapshot, or its outcome was dropped).
func (m *machine) casResult(offset int64) (casOutcome, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, ok := m.outcomes[offset]
	if ok {
		// Its offset stays in outcomeOrder until it is evicted.
		m.outcomeBytes -= out.size()
		delete(m.outcomes, offset)
	}
	return out, ok
}

// get returns key's entry and the offset after the last record applied.
func (m *machine) get(key string) (kvEntry, bool, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.kv[key]
	return e, ok, m.next
}

// snapshot is node.Config.Snapshot.
func (m *machine) snapshot(upTo kraft.LogEnd, w io.Writer) error {
	m.mu.Lock()
	s := machineSnapshot{Version: snapshotV2, Next: upTo.Offset, Records: m.records, Bytes: m.bytes, Digest: hex.EncodeToString(m.digest[:])}
	// Encoded under the lock: the applier is the only writer and it is
	// the caller, but the HTTP handlers read the map.
	s.KV = m.kv
	err := json.NewEncoder(w).Encode(s)
	m.mu.Unlock()
	return err
}

// restore is node.Config.Restore.
func (m *machine) restore(id kraft.LogEnd, r io.Reader) error {
	var s machineSnapshot
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return fmt.Errorf("decoding snapshot %+v: %w", id, err)
	}
	d, err := hex.DecodeString(s.Digest)
	switch {
	case err != nil || len(d) != sha256.Size:
		return fmt.Errorf("snapshot %+v: bad digest %q", id, s.Digest)
	case s.Version != snapshotV1 && s.Version != snapshotV2 || s.Next != id.Offset || s.Records < 0 || s.Bytes < 0:
		return fmt.Errorf("snapshot %+v: version %d, state up to %d, %d records of %d bytes", id, s.Version, s.Next, s.Records, s.Bytes)
	case s.Version == snapshotV1 && s.KV != nil:
		return fmt.Errorf("snapshot %+v: version 1 with a map", id)
	}
	for k, e := range s.KV {
		if err := checkKey(k); err != nil {
			return fmt.Errorf("snapshot %+v: %w", id, err)
		}
		if e.Offset < 0 || e.Offset >= s.Next {
			return fmt.Errorf("snapshot %+v: key %q written at offset %d", id, k, e.Offset)
		}
	}
	if s.KV == nil {
		s.KV = map[string]kvEntry{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records, m.bytes, m.next = s.Records, s.Bytes, s.Next
	m.kv = s.KV
	m.outcomes, m.outcomeOrder, m.outcomeBytes = nil, nil, 0
	copy(m.digest[:], d)
	m.restored = &id
	return nil
}

func (m *machine) status() machineStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := machineStatus{Records: m.records, Bytes: m.bytes, Applied: m.next, Digest: hex.EncodeToString(m.digest[:])}
	if m.restored != nil {
		st.Restored = &node.SnapshotID{Offset: m.restored.Offset, Epoch: m.restored.Epoch}
	}
	return st
}
