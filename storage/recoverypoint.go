package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/kraftquorum/kraft"
)

// RecoveryPointFileName is the file in a log's directory that records the
// recovery point: the offset below which every record was synced (Kafka
// keeps the same number per partition in recovery-point-offset-checkpoint).
// Open drops a bad tail past it as torn (never synced) and reports a bad
// record below it as damage (DamageError): records that were synced, and
// perhaps acknowledged, and are gone.
//
// The file is two slots of recoveryPointSlotSize bytes, each in its own
// disk sector, so that a torn write damages one slot at most:
//
//	0   4  CRC-32C (Castagnoli) of bytes 4 .. 48
//	4   4  magic "KRRP"
//	8   8  sequence number (uint64): the slot with the higher one is newer
//	16  8  recovery point: every record below this offset was synced
//	24  4  epoch of the record before the recovery point
//	28  4  epoch of the last lost record (when the lost range is not empty)
//	32  8  lost from \ records [from, to) were synced once and Open found
//	40  8  lost to   / them damaged (both 0: none)
//	48     zeros to the end of the slot
//
// Integers are big-endian. Open writes the whole file atomically (both
// slots the same), once it has made the log it recovered durable. After
// that, each raise of the point (Sync, DeleteBefore, Truncate) writes the
// next slot in place once the records it claims are durable, and fsyncs it
// before the log reports them durable (Flushed): so every record the log
// ever reported durable is claimed by a durable slot, whatever crash comes
// (docs/design.md D102). The other slot keeps the value before, durable
// too; a slot never claims more than was synced when it was written. A
// crash can tear only the slot being written, and Open then uses the
// other: the point as it was before the call that was writing, which
// claims every record reported durable until then. Truncate and ResetTo
// lower the recovery point in both slots, durably, before they remove
// records.
const RecoveryPointFileName = "recovery-point-offset-checkpoint"

const (
	recoveryPointSlotSize = 512
	recoveryPointFileSize = 2 * recoveryPointSlotSize
	recoveryPointBytes    = 48
	recoveryPointMagic    = "KRRP"
)

// recoveryPoint is the content of one slot.
type recoveryPoint struct {
	seq    uint64
	offset int64       // every record below it was synced
	epoch  kraft.Epoch // of the record at offset-1
	lost   lostRange
}

// lostRange is a range of records [from, to) a log held durably and lost
// to damage, and the epoch of its last record; to == 0 for none.
type lostRange struct {
	from, to int64
	epoch    kraft.Epoch
}

func (r lostRange) empty() bool { return r.to <= r.from }

func (p recoveryPoint) encode() []byte {
	b := make([]byte, recoveryPointSlotSize)
	copy(b[4:], recoveryPointMagic)
	binary.BigEndian.PutUint64(b[8:], p.seq)
	binary.BigEndian.PutUint64(b[16:], uint64(p.offset))
	binary.BigEndian.PutUint32(b[24:], uint32(p.epoch))
	binary.BigEndian.PutUint32(b[28:], uint32(p.lost.epoch))
	binary.BigEndian.PutUint64(b[32:], uint64(p.lost.from))
	binary.BigEndian.PutUint64(b[40:], uint64(p.lost.to))
	binary.BigEndian.PutUint32(b, crc32.Checksum(b[4:recoveryPointBytes], castagnoli))
	return b
}

// parseRecoveryPoint decodes one slot; false if it is not a valid one.
func parseRecoveryPoint(b []byte) (recoveryPoint, bool) {
	if crc32.Checksum(b[4:recoveryPointBytes], castagnoli) != binary.BigEndian.Uint32(b) || string(b[4:8]) != recoveryPointMagic {
		return recoveryPoint{}, false
	}
	p := recoveryPoint{
		seq:    binary.BigEndian.Uint64(b[8:]),
		offset: int64(binary.BigEndian.Uint64(b[16:])),
		epoch:  kraft.Epoch(int32(binary.BigEndian.Uint32(b[24:]))),
		lost: lostRange{
			epoch: kraft.Epoch(int32(binary.BigEndian.Uint32(b[28:]))),
			from:  int64(binary.BigEndian.Uint64(b[32:])),
			to:    int64(binary.BigEndian.Uint64(b[40:])),
		},
	}
	if p.offset < 0 || p.epoch < 0 || p.lost.from < 0 || p.lost.to < 0 || p.lost.epoch < 0 {
		return recoveryPoint{}, false
	}
	return p, true
}

// readRecoveryPoint reads the recovery point file of the log in dir: the
// newest valid slot. found is false if there is no file (a log written
// before the file existed, or never opened to the end). A file of the
// wrong size or with no valid slot is damage: damage says what is wrong,
// err is for I/O errors.
func readRecoveryPoint(fsys FS, dir string) (p recoveryPoint, found bool, damage string, err error) {
	path := filepath.Join(dir, RecoveryPointFileName)
	b, err := readSmallFile(fsys, path, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return recoveryPoint{}, false, "", nil
	}
	if err != nil {
		return recoveryPoint{}, false, "", fmt.Errorf("storage: reading %s: %w", path, err)
	}
	if len(b) != recoveryPointFileSize {
		return recoveryPoint{}, false, fmt.Sprintf("%s is %d bytes, not %d", path, len(b), recoveryPointFileSize), nil
	}
	a, okA := parseRecoveryPoint(b[:recoveryPointSlotSize])
	c, okC := parseRecoveryPoint(b[recoveryPointSlotSize:])
	switch {
	case okA && okC:
		if c.seq > a.seq {
			return c, true, "", nil
		}
		return a, true, "", nil
	case okA:
		return a, true, "", nil
	case okC:
		return c, true, "", nil
	}
	return recoveryPoint{}, false, fmt.Sprintf("%s: both slots fail their checksum", path), nil
}

// recoveryPointFile is the open recovery point file of a FileLog. Its
// fields are guarded by the log's syncMu.
type recoveryPointFile struct {
	path string
	f    File
	cur  recoveryPoint // the newest slot written, durable
}

// createRecoveryPoint replaces the recovery point file of dir with both
// slots holding p, atomically and durably, and opens it for later writes.
func createRecoveryPoint(fsys FS, dir string, p recoveryPoint) (*recoveryPointFile, error) {
	path := filepath.Join(dir, RecoveryPointFileName)
	p.seq = 2
	b := make([]byte, 0, recoveryPointFileSize)
	b = append(b, p.encode()...)
	q := p
	q.seq = 1
	b = append(b, q.encode()...)
	if err := writeFileAtomic(fsys, path, b); err != nil {
		return nil, err
	}
	f, err := fsys.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return &recoveryPointFile{path: path, f: f, cur: p}, nil
}

// set writes p, with the next sequence number, to the slot after the
// newest, and fsyncs it: when it returns, p is the durable recovery point
// and the other slot holds the one before. The records p claims must be
// durable already.
func (r *recoveryPointFile) set(p recoveryPoint) error {
	p.seq = r.cur.seq + 1
	if _, err := r.f.WriteAt(p.encode(), int64(p.seq%2)*recoveryPointSlotSize); err != nil {
		return err
	}
	if err := r.f.Sync(); err != nil {
		return err
	}
	r.cur = p
	return nil
}

// lower makes p the recovery point of both slots, durably, before records
// at or past p.offset are removed: then no slot, even one a flip makes Open
// fall back to, claims records that are no longer there.
func (r *recoveryPointFile) lower(p recoveryPoint) error {
	for i := 0; i < 2; i++ {
		if err := r.set(p); err != nil {
			return err
		}
	}
	return nil
}
