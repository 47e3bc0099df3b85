package storage

import (
	"fmt"
	"sync"

	"github.com/kraftquorum/kraft"
)

// MemLog is a Log in memory, for tests and simulators. It models a disk
// like FileLog's: appends are written but not durable until Sync, Truncate
// is durable at once, and Crash loses what was not durable, as a machine
// that loses power would. DeleteBefore and ResetTo are durable at once, as
// FileLog's are.
type MemLog struct {
	mu      sync.Mutex
	entries entryList // the records from the log start, epochs.base.Offset (D352)
	epochs  epochHistory
	flushed int64
	closed  bool
}

var _ Log = (*MemLog)(nil)

// NewMemLog returns an empty MemLog.
func NewMemLog() *MemLog { return &MemLog{} }

var (
	_ SharedReader   = (*MemLog)(nil)
	_ OwningAppender = (*MemLog)(nil)
)

// Clone returns a copy of the log, written and durable parts alike, that
// changes independently of m: a simulator that forks a world forks its
// logs (sim/explore, docs/design.md D126). It copies the record list and
// the epoch history, O(records); the payloads are shared, as the log never
// changes a payload in place. A clone of a closed log is closed.
func (m *MemLog) Clone() *MemLog {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &MemLog{
		entries: m.entries.clone(),
		epochs: epochHistory{
			base:   m.epochs.base,
			starts: append([]kraft.EpochStart(nil), m.epochs.starts...),
		},
		flushed: m.flushed,
		closed:  m.closed,
	}
}

// Append appends records in epoch and returns the new end. The log keeps
// copies of the records.
func (m *MemLog) Append(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error) {
	return m.append(len(records),
		func(int) kraft.Epoch { return epoch },
		func(i int) []byte { return records[i] },
		func(int) int64 { return -1 }, copyBytes)
}

// AppendOwned is Append without the copies: the log keeps the records'
// memory (each capped at its length), which the caller must not modify
// afterwards.
func (m *MemLog) AppendOwned(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error) {
	return m.append(len(records),
		func(int) kraft.Epoch { return epoch },
		func(i int) []byte { return records[i] },
		func(int) int64 { return -1 },
		func(b []byte) []byte { return b[:len(b):len(b)] })
}

// AppendEntries appends entries that continue the log (see Log) and returns
// the new end.
func (m *MemLog) AppendEntries(entries ...Entry) (kraft.LogEnd, error) {
	return m.append(len(entries),
		func(i int) kraft.Epoch { return entries[i].Epoch },
		func(i int) []byte { return entries[i].Data },
		func(i int) int64 { return entries[i].Offset }, copyBytes)
}

// AppendEntriesOwned is AppendEntries without the copies: the log keeps
// the entries' payloads (each capped at its length), which nobody may
// modify afterwards. A runtime whose transport hands over the leader's
// own records by reference keeps them so (docs/design.md D147).
func (m *MemLog) AppendEntriesOwned(entries ...Entry) (kraft.LogEnd, error) {
	return m.append(len(entries),
		func(i int) kraft.Epoch { return entries[i].Epoch },
		func(i int) []byte { return entries[i].Data },
		func(i int) int64 { return entries[i].Offset },
		func(b []byte) []byte {
			if b == nil {
				return []byte{} // as copyBytes keeps it
			}
			return b[:len(b):len(b)]
		})
}

// append appends n records; keep makes the log's own copy of a payload,
// or takes it as it is.
func (m *MemLog) append(n int, epoch func(int) kraft.Epoch, data func(int) []byte, offset func(int) int64, keep func([]byte) []byte) (kraft.LogEnd, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return m.endLocked(), ErrClosed
	}
	end := m.endLocked()
	if _, err := checkAppend(end, n, epoch, func(i int) int { return len(data(i)) }, offset); err != nil {
		return end, err
	}
	for i := 0; i < n; i++ {
		off := end.Offset + int64(i)
		m.entries.push(Entry{Offset: off, Epoch: epoch(i), Data: keep(data(i))})
		m.epochs.add(epoch(i), off)
	}
	return m.endLocked(), nil
}

func (m *MemLog) endLocked() kraft.LogEnd {
	return kraft.LogEnd{Offset: m.epochs.base.Offset + int64(m.entries.len()), Epoch: m.epochs.last()}
}

func copyBytes(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// Read returns records from offset from on, as many as fit in maxBytes
// bytes of payload and at least one.
func (m *MemLog) Read(from int64, maxBytes int) ([]Entry, error) {
	return m.read(from, maxBytes, copyBytes)
}

// ReadShared is Read without the copies: the entries' Data are the log's,
// not to be modified.
func (m *MemLog) ReadShared(from int64, maxBytes int) ([]Entry, error) {
	return m.read(from, maxBytes, func(b []byte) []byte { return b })
}

func (m *MemLog) read(from int64, maxBytes int, data func([]byte) []byte) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if err := checkRead(from, m.epochs.base.Offset, m.endLocked().Offset); err != nil {
		return nil, err
	}
	var out []Entry
	total := 0
	m.entries.from(int(from-m.epochs.base.Offset), func(e *Entry) bool {
		if len(out) > 0 && total+len(e.Data) > maxBytes {
			return false
		}
		out = append(out, Entry{Offset: e.Offset, Epoch: e.Epoch, Data: data(e.Data)})
		total += len(e.Data)
		return true
	})
	return out, nil
}

// Truncate removes the records at or after to, durably; Flushed() is then
// to, as for FileLog.
func (m *MemLog) Truncate(to int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if to < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOutOfRange, to)
	}
	if to < m.epochs.base.Offset {
		return fmt.Errorf("%w: truncate to %d, the log starts at %d", ErrBelowStart, to, m.epochs.base.Offset)
	}
	if to >= m.endLocked().Offset {
		return nil
	}
	m.cut(to)
	m.flushed = to
	return nil
}

func (m *MemLog) cut(to int64) {
	m.entries.truncate(int(to - m.epochs.base.Offset)) // and lets the payloads go
	m.epochs.truncate(to)
}

// StartOffset is the log start offset.
func (m *MemLog) StartOffset() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epochs.base.Offset
}

// Start is the log start offset and the epoch of the record before it.
func (m *MemLog) Start() kraft.LogEnd {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epochs.base
}

// DeleteBefore removes the records below offset, durably; the records
// below it are durable too (Flushed() is at least offset), as for FileLog.
func (m *MemLog) DeleteBefore(offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	end := m.endLocked().Offset
	if offset <= m.epochs.base.Offset {
		return nil
	}
	if offset > end {
		return fmt.Errorf("%w: delete before %d, past the log end %d", ErrOutOfRange, offset, end)
	}
	m.entries.dropFront(int(offset - m.epochs.base.Offset))
	m.epochs.startAt(kraft.LogEnd{Offset: offset, Epoch: m.epochs.epochFor(offset - 1)}, end)
	if m.flushed < offset {
		m.flushed = offset
	}
	return nil
}

// ResetTo empties the log and restarts it at start, durably.
func (m *MemLog) ResetTo(start kraft.LogEnd) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if start.Offset < 0 || start.Epoch < 0 {
		return fmt.Errorf("%w: reset to %+v", ErrOutOfRange, start)
	}
	m.entries = entryList{}
	m.epochs.reset(start)
	m.flushed = start.Offset
	return nil
}

// Sync makes every record durable.
func (m *MemLog) Sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.flushed = m.endLocked().Offset
	return nil
}

// Crash drops every record that is not durable, as a crash and a restart
// would. The log stays open.
func (m *MemLog) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cut(m.flushed)
}

// End is the log end.
func (m *MemLog) End() kraft.LogEnd {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.endLocked()
}

// Flushed is the offset below which every record is durable.
func (m *MemLog) Flushed() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.flushed
}

// State describes the log for kraft.NewState.
func (m *MemLog) State() kraft.LogState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.epochs.state(m.endLocked().Offset)
}

// EpochFor returns the epoch of the record at offset.
func (m *MemLog) EpochFor(offset int64) (kraft.Epoch, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if offset < m.epochs.base.Offset || offset >= m.endLocked().Offset {
		return 0, false
	}
	return m.entries.at(int(offset - m.epochs.base.Offset)).Epoch, true
}

// Close closes the log; later calls fail with ErrClosed.
func (m *MemLog) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	return nil
}
