package storage

import (
	"errors"
	"fmt"
	"sort"

	"github.com/kraftquorum/kraft"
)

// Entry is one record of a log: its offset, the epoch of the leader that
// appended it, and its payload. The log does not look inside Data.
type Entry struct {
	Offset int64
	Epoch  kraft.Epoch
	Data   []byte
}

// SharedReader is a Log that can read without copying. MemLog is one.
type SharedReader interface {
	// ReadShared is Read, except that the entries' Data are the log's own
	// memory rather than the caller's: the caller must not modify them.
	// The log never writes over a record's bytes (a truncation or a
	// deletion only lets them go), so they stay valid and unchanged.
	ReadShared(from int64, maxBytes int) ([]Entry, error)
}

// OwningAppender is a Log that can take records without copying them.
// MemLog is one.
type OwningAppender interface {
	// AppendOwned is Append, except that the log may keep the records'
	// memory as its own: the caller hands them over and must not modify
	// them afterwards.
	AppendOwned(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error)
}

// Log is a replica's local log: records at dense offsets from 0, each with
// the epoch that wrote it, epochs never decreasing. FileLog keeps it in
// segment files; MemLog keeps it in memory for tests and simulators.
//
// Appends are written at once but are durable only after Sync (group
// commit): a host appends, reports the appends with LogAppended, and
// reports LogFlushed once Sync returns. Truncate is durable when it
// returns. All methods are safe for concurrent use, and Sync may run while
// other goroutines append and read.
type Log interface {
	// Append appends records in one epoch at the log end and returns the
	// new end. epoch must not be lower than the epoch of the last record
	// (ErrEpochRegression).
	Append(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error)
	// AppendEntries appends entries whose offsets continue the log (the
	// first is End().Offset, the rest follow densely) and whose epochs do
	// not decrease, for example records fetched from a leader. It returns
	// the new end.
	AppendEntries(entries ...Entry) (kraft.LogEnd, error)
	// Read returns the records from offset from on, as many as fit in
	// maxBytes bytes of payload but at least one, as Kafka's fetch does (a
	// log may return fewer, at least one: the replica layer sends what it
	// gets, and the simulator's log reads a few records at a time).
	// from == End().Offset gives no records; a from outside [0, End().Offset]
	// is ErrOutOfRange, and one below StartOffset() is ErrBelowStart. The
	// entries' Data belong to the caller.
	Read(from int64, maxBytes int) ([]Entry, error)
	// Truncate removes every record at or after offset to (Kafka's
	// truncateTo; the state's TruncateLog action). A to at or past the end
	// changes nothing; a to below StartOffset() is ErrBelowStart. Otherwise
	// the removal is durable when Truncate returns, and FileLog and MemLog
	// make every record below to durable too: Flushed() is then to. (A log
	// may leave the unsynced records below to unsynced, Flushed() then at
	// most to, as the simulator's does: the replica layer asks for a Sync
	// of what is not flushed.)
	Truncate(to int64) error
	// StartOffset is the log start offset (Kafka's logStartOffset): the
	// offset of the first record the log holds, or End().Offset when it
	// holds none. It is 0 until DeleteBefore or ResetTo moves it.
	StartOffset() int64
	// Start is the log start offset with the epoch of the record just
	// before it (0 at offset 0): the id of the snapshot the log continues.
	// When the log holds no record, End() is Start().
	Start() kraft.LogEnd
	// DeleteBefore removes every record below offset (Kafka's
	// deleteBeforeSnapshot, once a snapshot covers them) and makes offset
	// the log start. An offset at or below StartOffset() changes nothing;
	// one past End().Offset is ErrOutOfRange. The new start is durable when
	// DeleteBefore returns, and so is every record below it. The epoch
	// history keeps the epochs of the records that remain, the first one
	// starting at the new start.
	DeleteBefore(offset int64) error
	// ResetTo empties the log and restarts it at start (Kafka's
	// truncateFullyAndStartAt, for a follower that installed the snapshot
	// start): afterwards StartOffset() and End().Offset are start.Offset,
	// End().Epoch is start.Epoch, and the next append has offset
	// start.Offset and an epoch not below start.Epoch. It is durable when
	// it returns. A crash during it leaves the log as ResetTo found it, a
	// prefix of it, or empty at its old start (and the host installs the
	// snapshot again).
	ResetTo(start kraft.LogEnd) error
	// Sync makes every record appended before it durable and moves
	// Flushed() to the end it saw.
	Sync() error
	// End is the log end: the next offset and the epoch of the last record
	// (0 for an empty log).
	End() kraft.LogEnd
	// Flushed is the offset below which every record is durable.
	Flushed() int64
	// State describes the log for kraft.NewState: its end and the first
	// offset of each epoch. Right after opening, the whole log is durable.
	State() kraft.LogState
	// EpochFor returns the epoch of the record at offset, and false if there
	// is no such record.
	EpochFor(offset int64) (kraft.Epoch, bool)
	// Close releases the log. It does not sync: call Sync first to keep
	// what was appended since the last one.
	Close() error
}

// Errors of the logs. Returned errors wrap them with details; test with
// errors.Is.
var (
	// ErrClosed: the log was closed.
	ErrClosed = errors.New("storage: log is closed")
	// ErrOutOfRange: an offset outside the log, or a position outside a
	// snapshot.
	ErrOutOfRange = errors.New("storage: offset out of range")
	// ErrBelowStart: an offset below the log start offset: the records
	// there were deleted (DeleteBefore, ResetTo) and are in a snapshot.
	ErrBelowStart = errors.New("storage: offset below the log start")
	// ErrEpochRegression: an append whose epoch is lower than the epoch of
	// the record before it.
	ErrEpochRegression = errors.New("storage: epoch lower than the last epoch")
	// ErrInvalidAppend: an append with a negative epoch, a record larger
	// than MaxRecordSize, or entries whose offsets do not continue the log.
	ErrInvalidAppend = errors.New("storage: invalid append")
	// ErrCorrupt: bytes on disk that are not what the log wrote, where
	// dropping them could lose durable records.
	ErrCorrupt = errors.New("storage: corrupt log")
)

// AppendedEvents returns the LogAppended events that report entries, just
// appended to a log, to the state: one per run of entries of one epoch, in
// order, each ending after the last entry of its run. For Append, whose
// records all have one epoch, the single event is LogAppended{End: end}.
func AppendedEvents(entries []Entry) []kraft.LogAppended {
	var evs []kraft.LogAppended
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].Epoch == e.Epoch {
			continue
		}
		evs = append(evs, kraft.LogAppended{End: kraft.LogEnd{Offset: e.Offset + 1, Epoch: e.Epoch}})
	}
	return evs
}

// Flush syncs l and returns the LogFlushed event that reports it.
func Flush(l Log) (kraft.LogFlushed, error) {
	if err := l.Sync(); err != nil {
		return kraft.LogFlushed{}, err
	}
	return kraft.LogFlushed{Offset: l.Flushed()}, nil
}

// epochHistory is a log's leader-epoch cache: the log start (its offset,
// and the epoch of the record before it) and the first offset of each epoch
// of the records from there on, epochs and offsets strictly ascending. The
// first entry starts at the log start when the log holds records; an epoch
// whose records were all deleted has no entry, as in Kafka's
// LeaderEpochFileCache.truncateFromStart.
type epochHistory struct {
	base   kraft.LogEnd
	starts []kraft.EpochStart
}

// add records that the record at offset has epoch, the records before it
// having epochs not greater.
func (h *epochHistory) add(epoch kraft.Epoch, offset int64) {
	if n := len(h.starts); n == 0 || epoch > h.starts[n-1].Epoch {
		h.starts = append(h.starts, kraft.EpochStart{Epoch: epoch, StartOffset: offset})
	}
}

// truncate forgets the epochs of the records at or after offset to, which
// is not below the log start.
func (h *epochHistory) truncate(to int64) {
	n := len(h.starts)
	for n > 0 && h.starts[n-1].StartOffset >= to {
		n--
	}
	h.starts = h.starts[:n]
}

// last is the epoch of the last record; for a log that holds none, the
// epoch of the record before the log start (0 for an empty log).
func (h *epochHistory) last() kraft.Epoch {
	if len(h.starts) == 0 {
		return h.base.Epoch
	}
	return h.starts[len(h.starts)-1].Epoch
}

// epochFor is the epoch of the record at offset, which must be in the log;
// offset may also be the one before the log start.
func (h *epochHistory) epochFor(offset int64) kraft.Epoch {
	i := sort.Search(len(h.starts), func(i int) bool { return h.starts[i].StartOffset > offset })
	if i == 0 {
		return h.base.Epoch
	}
	return h.starts[i-1].Epoch
}

// startAt makes start the log start of a log that ends at end, start.Offset
// being in [the current start, end]: the epochs whose records are all below
// it go, and the epoch of the record at start.Offset, if there is one, now
// starts there. start.Epoch is the epoch of the record before it.
func (h *epochHistory) startAt(start kraft.LogEnd, end int64) {
	k := sort.Search(len(h.starts), func(i int) bool { return h.starts[i].StartOffset > start.Offset })
	if k > 0 && start.Offset < end {
		k-- // the epoch of the record at start.Offset
	}
	starts := append([]kraft.EpochStart(nil), h.starts[k:]...)
	if len(starts) > 0 && starts[0].StartOffset < start.Offset {
		starts[0].StartOffset = start.Offset
	}
	h.base, h.starts = start, starts
}

// reset empties the history of a log that restarts, empty, at start.
func (h *epochHistory) reset(start kraft.LogEnd) {
	h.base, h.starts = start, nil
}

// state is the kraft.LogState of a log that ends at end.
func (h *epochHistory) state(end int64) kraft.LogState {
	// The snapshot ids are the host's to add (the log does not know its
	// snapshots): a log whose start is past 0 continues the snapshot at
	// its start, Log.Start().
	s := kraft.LogState{End: kraft.LogEnd{Offset: end, Epoch: h.last()}, Start: h.base.Offset}
	if len(h.starts) > 0 {
		s.Epochs = append([]kraft.EpochStart(nil), h.starts...)
	}
	return s
}

// checkRead checks the offset a read starts from against a log that holds
// the records from start to end: it must be in [start, end].
func checkRead(from, start, end int64) error {
	switch {
	case from < 0 || from > end:
		return fmt.Errorf("%w: %d is not in [0, %d]", ErrOutOfRange, from, end)
	case from < start:
		return fmt.Errorf("%w: %d is below the log start %d", ErrBelowStart, from, start)
	}
	return nil
}

// checkAppend validates an append of n records against a log that ends at
// end: epoch(i) and size(i) describe record i, and offset(i) its offset or
// -1 when the log assigns it. It returns the total frame bytes.
func checkAppend(end kraft.LogEnd, n int, epoch func(int) kraft.Epoch, size func(int) int, offset func(int) int64) (int64, error) {
	last := end.Epoch
	var total int64
	for i := 0; i < n; i++ {
		e := epoch(i)
		switch {
		case e < 0:
			return 0, fmt.Errorf("%w: negative epoch %d", ErrInvalidAppend, e)
		case e < last:
			return 0, fmt.Errorf("%w: epoch %d after epoch %d", ErrEpochRegression, e, last)
		case size(i) > MaxRecordSize:
			return 0, fmt.Errorf("%w: record of %d bytes is larger than %d", ErrInvalidAppend, size(i), MaxRecordSize)
		}
		if o := offset(i); o >= 0 && o != end.Offset+int64(i) {
			return 0, fmt.Errorf("%w: entry %d has offset %d, the log expects %d", ErrInvalidAppend, i, o, end.Offset+int64(i))
		}
		last = e
		total += int64(FrameOverhead + size(i))
	}
	return total, nil
}
