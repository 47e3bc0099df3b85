package simdisk_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/kraftquorum/kraft/storage/simdisk"
	"github.com/stretchr/testify/require"
)

// flushedClaimRun runs a random workload on a FileLog over a simulated disk
// that makes faults, ends it with a power loss or a process death, and
// checks the storage rule the replica's safety rests on (docs/design.md
// D70, D118): every record the log reported flushed either reads back as
// written when the log is opened again, or Open reports the loss as damage
// (storage.ErrDamaged, or ErrCorrupt, which hosts refuse as they do
// damage). The disk makes at most one fault a run (a lost or misdirected
// write, on any file: a segment, the recovery point, the log start): the
// model of D96, one damage at a time. (Two can defeat any one copy of the
// evidence: a lost write of the records and a lost write of the recovery
// point that claims them leave an older recovery point, intact, and a
// tail that reads as torn.) A record cut silently, as a torn tail, is a
// violation: the replica would rejoin without records it acknowledged.
// Without disk faults, Open must succeed and lose nothing flushed.
func flushedClaimRun(seed int64, faults bool) error {
	rng := rand.New(rand.NewSource(seed))
	d := simdisk.New(seed)
	const dir = "/r/log"
	opts := storage.Options{FS: d, SegmentBytes: 600}
	l, _, err := storage.Open(dir, opts)
	if err != nil {
		return fmt.Errorf("first open: %v", err)
	}
	if faults {
		d.SetFaults(simdisk.Faults{LostWrite: 0.08, MisdirectedWrite: 0.04, Max: 1})
	}
	var model []storage.Entry // what the log holds, as written
	flushed, start := int64(0), int64(0)
	epoch := kraft.Epoch(1)
	steps := 10 + rng.Intn(60)
	for i := 0; i < steps; i++ {
		switch k := rng.Intn(10); {
		case k < 5:
			if rng.Intn(4) == 0 {
				epoch++
			}
			n := 1 + rng.Intn(4)
			recs := make([][]byte, n)
			for j := range recs {
				recs[j] = []byte(fmt.Sprintf("record %d of epoch %d, %x", len(model)+j, epoch, rng.Int63()))
			}
			end, err := l.Append(epoch, recs...)
			if err != nil {
				return fmt.Errorf("append: %v", err)
			}
			for j, r := range recs {
				model = append(model, storage.Entry{Offset: end.Offset - int64(n-j), Epoch: epoch, Data: r})
			}
		case k < 8:
			if err := l.Sync(); err != nil {
				return fmt.Errorf("sync: %v", err)
			}
			flushed = l.Flushed()
		case k < 9 && int64(len(model)) > start+1:
			to := start + 1 + rng.Int63n(int64(len(model))-start-1)
			if err := l.Truncate(to); err != nil {
				return fmt.Errorf("truncate: %v", err)
			}
			model = model[:to]
			if f := l.Flushed(); f < flushed || flushed > to {
				flushed = f
			}
			flushed = l.Flushed()
			if int64(len(model)) > 0 {
				epoch = model[len(model)-1].Epoch
			}
		case int64(len(model)) > start:
			x := start + rng.Int63n(int64(len(model))-start+1)
			if err := l.DeleteBefore(x); err != nil {
				return fmt.Errorf("delete before %d: %v", x, err)
			}
			if x > start {
				start = x
			}
			flushed = l.Flushed()
		}
	}
	if rng.Intn(2) == 0 {
		d.Crash()
	} else {
		d.Kill()
		d.DropCache()
	}
	d.Restart()
	d.SetFaults(simdisk.Faults{})
	// Or the fault is a bit flipped on the media after the stop: in a
	// record below the log start (deleted, but still in its segment), it
	// loses nothing, and Open must say so (D104).
	harmless := false
	if faults && d.Stats().LostWrites+d.Stats().Misdirected == 0 && rng.Intn(2) == 0 {
		harmless = flipInSegment(d, rng, dir, start)
	}
	l2, rec, err := storage.Open(dir, opts)
	if err != nil {
		if faults && !harmless && (errors.Is(err, storage.ErrDamaged) || errors.Is(err, storage.ErrCorrupt)) {
			return nil // reported: the replica will not count as holding them
		}
		return fmt.Errorf("reopen: %v (flushed %d, start %d, a harmless flip %v)", err, flushed, start, harmless)
	}
	defer func() { _ = l2.Close() }()
	if rec.Damage != nil {
		if harmless {
			return fmt.Errorf("a flip below the log start %d was reported as damage: %v", start, rec.Damage)
		}
		return nil
	}
	if got := l2.End().Offset; got < flushed {
		return fmt.Errorf("records %d to %d were reported flushed and are gone without a damage report (log ends at %d, recovery %+v, stats %+v)",
			got, flushed, got, rec, d.Stats())
	}
	from := l2.StartOffset()
	if from < start {
		from = start
	}
	for off := from; off < l2.End().Offset; {
		es, err := l2.Read(off, 1<<20)
		if err != nil {
			if off < flushed {
				return fmt.Errorf("read %d (flushed %d): %v", off, flushed, err)
			}
			break
		}
		for _, e := range es {
			if e.Offset >= int64(len(model)) {
				return fmt.Errorf("record %d past what was written (%d)", e.Offset, len(model))
			}
			w := model[e.Offset]
			if e.Epoch != w.Epoch || string(e.Data) != string(w.Data) {
				return fmt.Errorf("record %d reads %q epoch %d, was %q epoch %d (flushed %d)", e.Offset, e.Data, e.Epoch, w.Data, w.Epoch, flushed)
			}
		}
		off = es[len(es)-1].Offset + 1
	}
	return nil
}

func TestFileLogLosesNothingFlushedOverACrashingDisk(t *testing.T) {
	for seed := int64(1); seed <= 300; seed++ {
		require.NoError(t, flushedClaimRun(seed, false), "seed %d", seed)
	}
}

func TestFileLogReportsEveryFlushedRecordLostToDiskFaults(t *testing.T) {
	var failed []string
	for seed := int64(1); seed <= 1000; seed++ {
		if err := flushedClaimRun(seed, true); err != nil {
			failed = append(failed, fmt.Sprintf("seed %d: %v", seed, err))
		}
	}
	require.Empty(t, failed)
}

// flipInSegment flips a random bit of a random segment of the log in dir
// on d's media, and reports whether the byte belongs to a record below the
// log start (found by walking the segment's frames: a length at byte 5 of
// each, the record's offset at byte 9).
func flipInSegment(d *simdisk.Disk, rng *rand.Rand, dir string, start int64) bool {
	names, err := d.ReadDir(dir)
	if err != nil {
		return false
	}
	var segs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			segs = append(segs, dir+"/"+n)
		}
	}
	if len(segs) == 0 {
		return false
	}
	path := segs[rng.Intn(len(segs))]
	media, err := d.Media(path)
	if err != nil || len(media) == 0 {
		return false
	}
	pos := int64(rng.Intn(len(media)))
	below := false
	for at := int64(0); at+storage.FrameOverhead <= int64(len(media)); {
		size := int64(storage.FrameOverhead) + int64(binary.BigEndian.Uint32(media[at+5:]))
		if pos < at+size {
			below = int64(binary.BigEndian.Uint64(media[at+9:])) < start && at+size <= int64(len(media))
			break
		}
		at += size
	}
	if d.FlipBit(path, pos, uint(rng.Intn(8))) != nil {
		return false
	}
	return below
}
