package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
)

// QuorumStateCopySuffix names the checked copy of a quorum-state file:
// path+QuorumStateCopySuffix. Kafka's file is JSON without a checksum, so a
// flipped digit can change the epoch or the vote and still parse, and a
// file rolled back to an older record, or deleted, looks like a replica
// that never voted: a second vote in the same epoch breaks election
// safety. The copy keeps the last two records written, each with a
// checksum and a generation number, in two slots of
// quorumCopySlotSize bytes:
//
//	0   4  CRC-32C (Castagnoli) of bytes 4 .. 48
//	4   4  magic "KRQS"
//	8   8  generation (uint64): the slot with the higher one is newer
//	16  4  epoch
//	20  4  leader id (-1: none)
//	24  4  voted id (-1: none)
//	28  16 voted directory id
//	44  1  1: no record (the state before the first write), else 0
//	45     zeros to the end of the slot
//
// A write puts the new record in the older slot and fsyncs the copy, then
// replaces the quorum-state file (atomically, durably). So the quorum-state
// file holds the newest record of the copy, or the one before it when a
// crash came between the two; ReadQuorumState returns the newest in both
// cases (a record being written may be taken as written). Anything else,
// including no quorum-state file when the copy has records, is damage.
const QuorumStateCopySuffix = ".copies"

const (
	quorumCopySlotSize = 512
	quorumCopyFileSize = 2 * quorumCopySlotSize
	quorumCopyBytes    = 48
	quorumCopyMagic    = "KRQS"
)

// quorumSlot is one slot of the copy: a record (none: no record) and its
// generation.
type quorumSlot struct {
	gen  uint64
	none bool
	rec  kraft.QuorumRecord
}

func (s quorumSlot) encode() []byte {
	b := make([]byte, quorumCopySlotSize)
	copy(b[4:], quorumCopyMagic)
	binary.BigEndian.PutUint64(b[8:], s.gen)
	binary.BigEndian.PutUint32(b[16:], uint32(s.rec.Epoch))
	binary.BigEndian.PutUint32(b[20:], uint32(int32(s.rec.LeaderID)))
	binary.BigEndian.PutUint32(b[24:], uint32(int32(s.rec.VotedKey.ID)))
	copy(b[28:44], s.rec.VotedKey.DirectoryID[:])
	if s.none {
		b[44] = 1
	}
	binary.BigEndian.PutUint32(b, crc32.Checksum(b[4:quorumCopyBytes], castagnoli))
	return b
}

func parseQuorumSlot(b []byte) (quorumSlot, bool) {
	if crc32.Checksum(b[4:quorumCopyBytes], castagnoli) != binary.BigEndian.Uint32(b) || string(b[4:8]) != quorumCopyMagic || b[44] > 1 {
		return quorumSlot{}, false
	}
	s := quorumSlot{gen: binary.BigEndian.Uint64(b[8:]), none: b[44] == 1}
	if !s.none {
		s.rec = kraft.QuorumRecord{
			Epoch:    kraft.Epoch(int32(binary.BigEndian.Uint32(b[16:]))),
			LeaderID: kraft.NodeID(int32(binary.BigEndian.Uint32(b[20:]))),
			VotedKey: kraft.ReplicaKey{ID: kraft.NodeID(int32(binary.BigEndian.Uint32(b[24:])))},
		}
		copy(s.rec.VotedKey.DirectoryID[:], b[28:44])
		if s.rec.VotedKey.ID == kraft.NoNode {
			s.rec.VotedKey = kraft.NoReplica
		}
	}
	return s, true
}

// slotRecord is the record of a slot as a pointer, nil for none.
func (s quorumSlot) record() *kraft.QuorumRecord {
	if s.none {
		return nil
	}
	r := s.rec
	return &r
}

// quorumCopy is what readQuorumCopy found: the newest valid slot, and the
// other one if it is valid too.
type quorumCopy struct {
	newest   quorumSlot
	older    quorumSlot
	hasOlder bool
	badSlot  bool // the other slot fails its checksum
}

// readQuorumCopy reads the copy at path. found is false if there is none;
// damage says what is wrong with one that has no valid slot.
func readQuorumCopy(fsys FS, path string) (c quorumCopy, found bool, damage string, err error) {
	b, err := readSmallFile(fsys, path, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return c, false, "", nil
	}
	if err != nil {
		return c, false, "", fmt.Errorf("storage: reading %s: %w", path, err)
	}
	if len(b) != quorumCopyFileSize {
		return c, true, fmt.Sprintf("%s is %d bytes, not %d", path, len(b), quorumCopyFileSize), nil
	}
	a, okA := parseQuorumSlot(b[:quorumCopySlotSize])
	o, okO := parseQuorumSlot(b[quorumCopySlotSize:])
	switch {
	case okA && okO:
		if o.gen > a.gen {
			a, o = o, a
		}
		return quorumCopy{newest: a, older: o, hasOlder: true}, true, "", nil
	case okA:
		return quorumCopy{newest: a, badSlot: true}, true, "", nil
	case okO:
		return quorumCopy{newest: o, badSlot: true}, true, "", nil
	}
	return c, true, fmt.Sprintf("%s: both slots fail their checksum", path), nil
}

// writeQuorumCopy records r as the newest record of the copy at path,
// durably. prev is the record the quorum-state file holds now (nil: none),
// used when the copy is created (or recreated: absent or damaged).
func writeQuorumCopy(fsys FS, path string, r kraft.QuorumRecord, prev *kraft.QuorumRecord) error {
	c, found, damage, err := readQuorumCopy(fsys, path)
	if err != nil {
		return err
	}
	if !found || damage != "" {
		old := quorumSlot{gen: 1, none: prev == nil}
		if prev != nil {
			old.rec = *prev
		}
		b := append(quorumSlot{gen: 2, rec: r}.encode(), old.encode()...)
		return writeFileAtomic(fsys, path, b)
	}
	next := quorumSlot{gen: c.newest.gen + 1, rec: r}
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(next.encode(), int64(next.gen%2)*quorumCopySlotSize); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// QuorumStateDamageError: the quorum-state file, or its checked copy, does
// not hold what was written, or holds an epoch below one the log shows
// (CheckQuorumState). The replica may have voted in a later epoch than
// the file says: with the file as it is, it could vote twice in an epoch.
type QuorumStateDamageError struct {
	// Path is the quorum-state file's.
	Path string
	// Cause says what is wrong.
	Cause string
	// Newest is the newest record the checked copy holds, nil if unknown.
	Newest *kraft.QuorumRecord
	// Epoch is the least epoch the replica may have voted in: the copy's
	// newest, or the log's, whichever is known and higher.
	Epoch kraft.Epoch
}

func (e *QuorumStateDamageError) Error() string {
	return fmt.Sprintf("storage: quorum state %s is damaged: %s. The replica may have voted in epoch %d or later and must not vote again before an epoch above it; "+
		"restore the file, or replace the replica's data directory (a new directory id) and let it rejoin", e.Path, e.Cause, e.Epoch)
}

// Is makes errors.Is(err, ErrDamaged) hold.
func (e *QuorumStateDamageError) Is(target error) bool { return target == ErrDamaged }

// checkedQuorumState reads the quorum-state file at path against its copy:
// see QuorumStateCopySuffix. It returns the data to use (nil: nothing
// stored).
func checkedQuorumState(fsys FS, path string) (*QuorumStateData, error) {
	d, jerr := readQuorumStateData(fsys, path)
	c, found, damage, err := readQuorumCopy(fsys, path+QuorumStateCopySuffix)
	if err != nil {
		return nil, err
	}
	if !found {
		return d, jerr // no copy: a file from Kafka, or from before copies
	}
	fail := func(cause string) error {
		e := &QuorumStateDamageError{Path: path, Cause: cause}
		if damage == "" {
			e.Newest = c.newest.record()
			e.Epoch = c.newest.rec.Epoch
		}
		return e
	}
	if damage != "" {
		return nil, fail("its checked copy is damaged: " + damage)
	}
	if jerr != nil {
		var pe *os.PathError
		if errors.As(jerr, &pe) {
			return nil, jerr // an I/O error
		}
		return nil, fail(jerr.Error())
	}
	var got *kraft.QuorumRecord
	if d != nil {
		r, err := d.Record()
		if err != nil {
			return nil, fail(err.Error())
		}
		got = &r
	}
	same := func(s quorumSlot) bool {
		if s.none || got == nil {
			return s.none && got == nil
		}
		return s.rec == *got
	}
	newest := c.newest.record()
	switch {
	case same(c.newest):
	case c.hasOlder && c.older.gen+1 == c.newest.gen && same(c.older):
		// A crash between the copy's write and the file's: the newest
		// record was being written; it is taken as written.
		if d == nil {
			nd := NewQuorumStateData(*newest)
			d = &nd
		} else {
			d.LeaderID, d.LeaderEpoch = int32(newest.LeaderID), int32(newest.Epoch)
			d.VotedID, d.VotedDirectoryID = int32(newest.VotedKey.ID), newest.VotedKey.DirectoryID
			if d.Version == 0 {
				d.VotedDirectoryID = uuid.Nil
			}
		}
	case got == nil:
		return nil, fail(fmt.Sprintf("the file is missing, but its checked copy holds %s", describeRecord(newest)))
	default:
		file, copied := describeRecord(got), describeRecord(newest)
		if file == copied {
			// Only the voted directory ids differ.
			file += fmt.Sprintf(" (directory %s)", got.VotedKey.DirectoryID)
			copied += fmt.Sprintf(" (directory %s)", newest.VotedKey.DirectoryID)
		}
		cause := fmt.Sprintf("the file holds %s, but its checked copy %s", file, copied)
		if c.badSlot {
			// The file may hold the record of the damaged slot: which of
			// the two is intact cannot be told.
			cause += ", and the copy's other slot fails its checksum"
		}
		return nil, fail(cause)
	}
	return d, nil
}

func describeRecord(r *kraft.QuorumRecord) string {
	if r == nil {
		return "no record"
	}
	return fmt.Sprintf("epoch %d, leader %d, vote %d", r.Epoch, r.LeaderID, r.VotedKey.ID)
}

// CheckQuorumState checks the quorum record read from the quorum-state
// file at path against the log: a replica persists a new epoch before it
// appends a record of that epoch, so a record below the highest epoch the
// log held durably (Recovery.SyncedEpoch, or the epoch of the log's last
// record), or no record with a log that holds epochs above 0, was lost or
// rolled back: a *QuorumStateDamageError.
func CheckQuorumState(path string, rec *kraft.QuorumRecord, logEpoch kraft.Epoch) error {
	switch {
	case rec == nil && logEpoch > 0:
		return &QuorumStateDamageError{Path: path, Epoch: logEpoch,
			Cause: fmt.Sprintf("there is no quorum record, but the log holds records of epoch %d", logEpoch)}
	case rec != nil && rec.Epoch < logEpoch:
		return &QuorumStateDamageError{Path: path, Epoch: logEpoch, Newest: rec,
			Cause: fmt.Sprintf("the quorum record is of epoch %d, but the log holds records of epoch %d", rec.Epoch, logEpoch)}
	}
	return nil
}
