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
// digest in GET /status. Its snapshot is that state as JSON; Restore loads
// one.
type machine struct {
	mu       sync.Mutex
	records  int64
	bytes    int64
	next     int64 // the offset after the last record applied or restored
	digest   [sha256.Size]byte
	restored *kraft.LogEnd // the latest snapshot loaded
}

// machineSnapshot is the snapshot format, version 1.
type machineSnapshot struct {
	Version int    `json:"version"`
	Next    int64  `json:"next"`
	Records int64  `json:"records"`
	Bytes   int64  `json:"bytes"`
	Digest  string `json:"digest"`
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
	}
}

// snapshot is node.Config.Snapshot.
func (m *machine) snapshot(upTo kraft.LogEnd, w io.Writer) error {
	m.mu.Lock()
	s := machineSnapshot{Version: 1, Next: upTo.Offset, Records: m.records, Bytes: m.bytes, Digest: hex.EncodeToString(m.digest[:])}
	m.mu.Unlock()
	return json.NewEncoder(w).Encode(s)
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
	case s.Version != 1 || s.Next != id.Offset || s.Records < 0 || s.Bytes < 0:
		return fmt.Errorf("snapshot %+v: version %d, state up to %d, %d records of %d bytes", id, s.Version, s.Next, s.Records, s.Bytes)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records, m.bytes, m.next = s.Records, s.Bytes, s.Next
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
