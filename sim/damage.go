package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/datadir"
	"github.com/kraftquorum/kraft/internal/plant"
	"github.com/kraftquorum/kraft/storage"
	"github.com/kraftquorum/kraft/storage/simdisk"
)

// Disk damage in the simulator (docs/design.md D96-D99, D118): OpDamage
// damages a replica's disk (crashing it first if it is up), and the damage
// takes effect at its next start, where the host does what kraftd does:
//
//   - log damage is made in the bytes of the replica's simulated disk
//     (package storage/simdisk): a bit flipped in a segment file, or the
//     last writes of a segment lost (the media reads zeros from a point
//     on); the next start opens the log with storage.Open, the code users
//     run, which finds it or does not. What it does not report as damage
//     must have lost nothing the replica was told was durable ("silent
//     loss", checked at every start);
//   - quorum-state damage is still modelled: the host's quorum-state
//     record is in memory, and detect asks storage.CheckQuorumState, with
//     the record the damage leaves and the log's synced epoch, what
//     package storage would report;
//   - on damage the recovery rule (D91) applies: in a dynamic quorum the
//     replica moves its data aside and starts empty with a new directory
//     id, as a replaced disk, an observer until a committed VotersRecord
//     adds it back (auto-join); in a static quorum it refuses to start and
//     stays down until the operator restores the directory as it was when
//     the replica stopped (the copy kraftd's message asks for),
//     RestoreDelay later, and starts it.
//
// The planted bug plant.TornTail (D99) is a host that opens the log with
// storage.Options.TruncateDamage and ignores Recovery.Damage: it starts
// with the log cut at the damage under its old identity and vote.
//
// One damaged replica at a time: a damage is not applied
// (Stats.DamagesSkipped) while an earlier one is not over (the victim is
// restored, or is a voter again under its new key with its old key
// removed). A majority of damaged disks is out of any model's reach: no
// rule can get back a record that only damaged disks held, and the quorum
// stops rather than lose it (D91). So is damage no local check can see,
// which the simulator does not inject either (DamagesSkipped): both
// quorum-state files rolled back to a record at or above the log's synced
// epoch (with the log, or with a log that holds nothing of the newer
// epochs), or lost with a log of epoch 0 (D72); and damage to snapshots,
// which the simulator leaves to package storage's tests.

// Damage names a disk fault (OpDamage).
type Damage string

// The disk faults.
const (
	// DamageFlip flips a bit in a synced record of the log.
	DamageFlip Damage = "flip"
	// DamageLostWrite loses a write of synced records: the disk
	// acknowledged it and kept the old content (zeros, or nothing past the
	// file's end), so the log holds no valid record from the write on.
	DamageLostWrite Damage = "lost_write"
	// DamageLostQuorumState loses the quorum-state record: both files
	// (quorum-state and its checked copy) are gone.
	DamageLostQuorumState Damage = "lost_quorum_state"
	// DamageRolledBackQuorumState rolls the quorum-state record back to an
	// older valid one, in both files.
	DamageRolledBackQuorumState Damage = "rolled_back_quorum_state"
)

// Damages lists the disk faults, for the random schedules.
var Damages = []Damage{DamageFlip, DamageLostWrite, DamageLostQuorumState, DamageRolledBackQuorumState}

// RestoreDelay is how long after a static replica refused to start on
// damage the operator has restored its directory and started it again.
const RestoreDelay = 3 * time.Second

// diskDamage is a damage waiting for the replica's start, or met at it:
// what the storage reports (err: detect's for the quorum state, nil for
// log damage until storage.Open has said).
type diskDamage struct {
	kind Damage
	err  error
	// saved is the disk as it was when the replica stopped, before the
	// damage: the operator's copy, which a static replica's restore puts
	// back.
	saved *simdisk.Disk
	// harmless: the log damage lies in a record below the log start,
	// deleted: storage.Open must not report it (D104).
	harmless bool
	// refused: a static replica refused to start on it, and the
	// operator's restore is on its way.
	refused bool
}

// RandomDiskFaults draws n disk faults (OpDamage, a kind drawn from
// Damages) in [0, window) on replicas drawn among total, each followed by
// a restart of its replica within 3 s. Add them to a RandomSchedule: each
// crashes its replica if it is up; the damage takes effect at the restart.
func RandomDiskFaults(r *rand.Rand, total int, window time.Duration, n int) []Op {
	ops := make([]Op, 0, 2*n)
	for i := 0; i < n; i++ {
		at := time.Duration(r.Int63n(int64(window)))
		id := kraft.NodeID(r.Intn(total))
		ops = append(ops,
			Op{At: at, Kind: OpDamage, Node: id, Damage: Damages[r.Intn(len(Damages))]},
			Op{At: at + time.Duration(r.Int63n(int64(3*time.Second))), Kind: OpRestart, Node: id})
	}
	return ops
}

// syncedEpoch is the highest epoch n's log held durably: its last flushed
// record's, or its log start's (storage.Recovery.SyncedEpoch, which
// storage.CheckQuorumState is given).
func (n *node) syncedEpoch() kraft.Epoch {
	if n.flushed > n.start {
		return n.log[n.flushed-1].Epoch
	}
	return n.startEpoch
}

// damageOver reports whether no damage is under way: the last victim's
// damage is repaired.
func (c *Cluster) damageOver() bool {
	if c.victim == kraft.NoNode {
		return true
	}
	n := c.nodes[c.victim]
	if n.damage != nil || !n.up {
		return false
	}
	// Over: a static replica restored, a replica back under its old key
	// (the planted bug's cut log), or a replaced one a voter again under
	// its new key (a controller; a broker once started) with its old key
	// gone.
	if !c.opts.Dynamic || n.cfg.Local == c.victimKey ||
		!hasKey(c.voters, c.victimKey) && (n.id >= kraft.NodeID(c.opts.Voters) || hasKey(c.voters, n.cfg.Local)) {
		c.victim = kraft.NoNode
		return true
	}
	return false
}

// damage carries out OpDamage on n: it cuts n's power (crashing n if it is
// up), keeps a copy
// of its disk (the operator's backup) and damages it: in its bytes for the
// log (injectLogDamage), or as detect says for the quorum state. A damage
// the model leaves out, or one while another is under way, is skipped.
func (c *Cluster) damage(n *node, kind Damage, aimed bool) {
	if !c.damageOver() || n.damage != nil {
		c.stats.DamagesSkipped++
		c.stats.DamagesBusy++
		return
	}
	// The damage comes with a power loss: the page cache a process death
	// left (OpKill) is dropped, so the media, damaged, is what the next
	// start reads.
	if n.up {
		c.crash(n)
	} else {
		n.dsk.Crash()
		n.dsk.Restart()
	}
	var d *diskDamage
	saved := n.dsk.Clone()
	switch kind {
	case DamageFlip, DamageLostWrite:
		ok, harmless := c.injectLogDamage(n, kind, aimed)
		if !ok {
			c.stats.DamagesSkipped++
			return
		}
		d = &diskDamage{kind: kind, harmless: harmless}
	default:
		if !c.damageQuorumState(n, kind) {
			c.stats.DamagesSkipped++
			return
		}
		d = &diskDamage{kind: kind}
	}
	d.saved = saved
	n.damage = d
	c.victim, c.victimKey = n.id, n.cfg.Local
	c.stats.Damages++
	if c.stats.DamagesByKind == nil {
		c.stats.DamagesByKind = map[Damage]int{}
	}
	c.stats.DamagesByKind[kind]++
	if aimed {
		c.stats.AimedDamages++
	}
}

// injectLogDamage damages the log's bytes on n's disk: a bit flipped at a
// random byte of a random segment (DamageFlip), or the writes of the last
// segment lost from a random byte on (DamageLostWrite); tail (an aimed
// fault, D130): a bit flipped in one of the last segment's last four
// records, or its writes lost from the start of one of them. ok is false if
// the log has no byte on the media to damage; harmless says the damage
// lies in a record below the log start (deleted), which loses nothing.
func (c *Cluster) injectLogDamage(n *node, kind Damage, tail bool) (ok, harmless bool) {
	names, err := n.dsk.ReadDir(logDir)
	if err != nil {
		return false, false
	}
	type seg struct {
		path string
		size int
	}
	var segs []seg
	for _, name := range names {
		if len(name) == 24 && name[20:] == ".log" {
			p := logDir + "/" + name
			if b, err := n.dsk.Media(p); err == nil && len(b) > 0 {
				segs = append(segs, seg{p, len(b)})
			}
		}
	}
	if len(segs) == 0 {
		return false, false
	}
	if kind == DamageLostWrite {
		// The disk lost writes of the last segment: the media reads zeros
		// from a random byte on, or (half the time: the writes most at
		// risk are the last ones) from the start of one of its last four
		// records.
		s := segs[len(segs)-1]
		media, _ := n.dsk.Media(s.path)
		starts := frameStarts(media)
		from := int64(c.rng.Intn(s.size))
		if k := len(starts); k > 0 && (tail || c.rng.Intn(2) == 0) {
			last := 4
			if k < last {
				last = k
			}
			from = starts[k-1-c.rng.Intn(last)]
		}
		return n.dsk.LoseWrites(s.path, from) == nil, false
	}
	s := segs[c.rng.Intn(len(segs))]
	pos := int64(c.rng.Intn(s.size))
	media, _ := n.dsk.Media(s.path)
	if tail {
		s = segs[len(segs)-1]
		media, _ = n.dsk.Media(s.path)
		if starts := frameStarts(media); len(starts) > 0 {
			last := 4
			if len(starts) < last {
				last = len(starts)
			}
			i := len(starts) - 1 - c.rng.Intn(last)
			end := int64(s.size)
			if i+1 < len(starts) {
				end = starts[i+1]
			}
			pos = starts[i] + c.rng.Int63n(end-starts[i])
		} else {
			pos = int64(c.rng.Intn(s.size))
		}
	}
	if n.dsk.FlipBit(s.path, pos, uint(c.rng.Intn(8))) != nil {
		return false, false
	}
	off, whole := recordAtByte(media, pos)
	return true, whole && off < int64(n.start)
}

// frameStarts lists where the whole frames of a segment's content start.
func frameStarts(seg []byte) []int64 {
	var starts []int64
	for at := int64(0); at+storage.FrameOverhead <= int64(len(seg)); {
		end := at + storage.FrameOverhead + int64(binary.BigEndian.Uint32(seg[at+5:]))
		if end > int64(len(seg)) {
			break
		}
		starts = append(starts, at)
		at = end
	}
	return starts
}

// recordAtByte is the offset of the record whose frame holds byte pos of a
// segment's content, found by walking its frames (package storage's
// format: a frame is storage.FrameOverhead bytes of header, the payload's
// length at byte 5 and the record's offset at byte 9, then the payload).
// False if pos is past the last whole frame.
func recordAtByte(seg []byte, pos int64) (int64, bool) {
	for at := int64(0); at+storage.FrameOverhead <= int64(len(seg)); {
		end := at + storage.FrameOverhead + int64(binary.BigEndian.Uint32(seg[at+5:]))
		if pos < end {
			return int64(binary.BigEndian.Uint64(seg[at+9:])), end <= int64(len(seg))
		}
		at = end
	}
	return 0, false
}

// detect decides whether quorum-state damage kind on n's disk is one the
// model injects: one a local check can see, as storage.CheckQuorumState
// (which datadir.Open runs) decides against the highest epoch the log held
// durably. It returns the history entry a rollback puts back (-1 for a
// loss), and false if there is nothing to damage or no local check could
// see it. A single lost write of one of the two quorum-state files is not
// damage: the checked copy holds the newest record or the one before
// (storage/quorumcopy.go); losing or rolling back both is.
func detect(n *node, kind Damage) (int, bool) {
	logEpoch := n.syncedEpoch()
	switch kind {
	case DamageLostQuorumState:
		if n.record == nil {
			return -1, false
		}
		// A log of epoch 0: as if the log were lost with it (D72's blind spot).
		return -1, storage.CheckQuorumState(qsPath, nil, logEpoch) != nil
	case DamageRolledBackQuorumState:
		// The newest older record the check can tell from the current
		// one: one below the log's epoch. A rollback to a record at or
		// above it reads as a directory from before the newer records,
		// which no local check can see.
		for i := len(n.history) - 2; i >= 0; i-- {
			old := n.history[i].record
			if storage.CheckQuorumState(qsPath, &old, logEpoch) != nil {
				return i, true
			}
		}
	}
	return -1, false
}

// damageQuorumState damages the quorum-state files on n's disk as detect
// allows: both removed (DamageLostQuorumState), or both put back as they
// were after an older write (DamageRolledBackQuorumState). False if it
// injected nothing.
func (c *Cluster) damageQuorumState(n *node, kind Damage) bool {
	i, ok := detect(n, kind)
	if !ok {
		return false
	}
	files := [2]string{qsPath, qsPath + storage.QuorumStateCopySuffix}
	for k, path := range files {
		var err error
		if i < 0 {
			err = n.dsk.Remove(path)
		} else {
			old := n.history[i]
			err = writeFile(n.dsk, path, [2][]byte{old.file, old.copy}[k])
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			c.fail(Violation{Node: n.id, Rule: "host-log", Detail: fmt.Sprintf("damaging %s: %v", path, err)})
			return false
		}
	}
	return n.dsk.SyncDir(dataDir) == nil
}

// writeFile replaces the content of path on d with b, durably (the media
// then holds b: a damage, not a write of the replica's).
func writeFile(d *simdisk.Disk, path string, b []byte) error {
	f, err := d.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// recoverLog opens n's data directory at its start (openDir), checks that
// nothing the replica was told was durable is gone unless storage reported
// it, and meets damage with the recovery rule (startDamaged). It reports
// whether the start goes on.
func (c *Cluster) recoverLog(n *node) bool {
	before, flushed, start, disk := n.log, n.flushed, n.start, n.disk
	var opts storage.Options
	if c.opts.plant == plant.TornTail {
		opts.TruncateDamage = true // the planted bug: a host that ignores the report
	}
	rec, err := c.openDir(n, opts)
	if err != nil {
		if !datadir.IsDamage(err) {
			c.fail(Violation{Node: n.id, Rule: "restart", Detail: err.Error()})
			return false
		}
		if n.damage != nil && n.damage.harmless {
			// D104: damage to records the log deleted is no loss.
			c.fail(Violation{Node: n.id, Rule: "damage-misreported", Detail: fmt.Sprintf(
				"a bit flipped in a record below the log start %d was reported as damage: %v", start, err)})
			return false
		}
		if n.damage == nil {
			// No fault touched this disk: only crashes, which lose what
			// was never synced and nothing else.
			c.fail(Violation{Node: n.id, Rule: "damage-misreported", Detail: fmt.Sprintf(
				"storage.Open reported damage on a disk that only crashed: %v", err)})
			return false
		}
		n.damage.err = err
		return c.startDamaged(n) && (n.flog != nil || c.recoverLog(n))
	}
	if rec.Damage != nil {
		// Only the planted bug opens a damaged log: the checker is told
		// the records are gone (the disk lost them, not the protocol);
		// what it then catches is what the replica does with a shorter
		// log under its old key and vote.
		n.damage = nil
		c.check.diskDamaged(n, int(rec.Damage.From))
		c.stats.DamagesCut++
		return true
	}
	if n.disk != disk {
		return true // a replaced disk (replaced): nothing of the old one is claimed
	}
	if n.damage != nil && n.damage.err == nil {
		n.damage = nil // the log damage was harmless (below the log start, or past the synced records)
		c.victim = kraft.NoNode
	}
	from := len(before)
	for i := start; i < flushed; i++ {
		if i >= len(n.log) || n.log[i] != before[i] {
			c.fail(Violation{Node: n.id, Rule: "storage-lost-flushed", Detail: fmt.Sprintf(
				"record %d was reported durable (flushed %d) and storage.Open recovered the log to %d without reporting damage (%+v)",
				i, flushed, len(n.log), rec)})
			return false
		}
	}
	for i := start; i < len(before) && i < len(n.log); i++ {
		if n.log[i] != before[i] {
			from = i
			break
		}
	}
	if len(n.log) < from {
		from = len(n.log)
	}
	c.check.logChangedFrom(n, from)
	return true
}

// startDamaged carries out the recovery rule for n's damage at its start
// (D91), and reports whether the start goes on (on a replaced disk).
func (c *Cluster) startDamaged(n *node) bool {
	d := n.damage
	switch {
	case c.opts.Dynamic:
		c.stats.DamagesReplaced++
		return c.replace(n)
	}
	// A static voter set: refuse to start (kraftd exits with the advice to
	// restore the directory). The operator does, RestoreDelay later.
	if d.refused {
		return false // a restart before the restore: refused again
	}
	d.refused = true
	c.stats.DamagesRefused++
	c.writeTrace(TraceLine{Kind: "op", T: c.now, Node: n.id, Op: &Op{At: c.now, Kind: OpRefused, Node: n.id}})
	c.push(&item{at: c.now + RestoreDelay, kind: itemRestore, node: n.id, inc: n.inc})
	return false
}

// restore is the operator's restore of n's directory as it was when n
// stopped, and its start.
func (c *Cluster) restore(n *node) {
	if n.up || n.damage == nil {
		return
	}
	n.dsk = n.damage.saved
	n.damage = nil
	c.stats.DamagesRestored++
	c.start(n)
}

// replace makes n's damaged directory a replaced disk as kraftd does
// (datadir.Replace: the new identity first, with a marker, then the damaged
// data moved aside), with a new directory id. A third of the time the
// process dies at a random step of it (a crash in the middle of the
// recovery, D111): n stays down and restarts a second later, and the start
// finishes the replacement or finds the damage again, as the disk has it.
// It reports whether the start goes on.
func (c *Cluster) replace(n *node) bool {
	id := datadir.Identity{ClusterID: simClusterID, NodeID: n.id, DirectoryID: directoryID(c.opts, n.id, n.disk+1), Dynamic: true}
	dies := c.rng.Intn(3) == 0
	if dies {
		n.dsk.DieAfter(c.rng.Intn(16))
	}
	err := datadir.Replace(n.dsk, dataDir, id, fmt.Sprintf("%s%d", datadir.DamagedPrefix, n.disk))
	n.dsk.DieAfter(-1)
	switch {
	case errors.Is(err, simdisk.ErrDead):
		n.dsk.Crash()
		n.dsk.Restart()
		c.stats.ReplacesInterrupted++
		c.Schedule(Op{At: c.now + time.Second, Kind: OpRestart, Node: n.id})
		return false
	case err != nil:
		c.fail(Violation{Node: n.id, Rule: "restart", Detail: fmt.Sprintf("datadir.Replace: %v", err)})
		return false
	}
	return true
}

// replaced notes that n's disk now holds the identity with directory id
// dir, not the one n ran under: a replaced disk (D91, after replace) or a
// new one (OpLoseDisk). What the host knew of the old disk goes; n starts
// with a new directory id where the voter set has them (KIP-853), an
// observer until added.
func (c *Cluster) replaced(n *node, dir uuid.UUID) {
	n.record, n.log, n.flushed, n.start, n.startEpoch, n.snaps, n.partial, n.applied = nil, nil, 0, 0, 0, nil, nil, nil
	n.history = nil
	n.damage = nil
	n.disk++
	n.bootstrap = nil
	n.cfg.Local.DirectoryID = dir
	if c.opts.Dynamic {
		// No bootstrap checkpoint: an observer that knows no voter set
		// until it fetches one.
		n.cfg.Observer = true
	} else if c.opts.DirectoryIDs {
		// KIP-853: a new disk is a new replica key; a voter whose key
		// no longer matches comes back as an observer.
		n.cfg.Observer = true
		for _, v := range c.voters {
			if v.Matches(n.cfg.Local) {
				n.cfg.Observer = false
			}
		}
	}
	c.check.diskLost(n)
}

// loseDisk gives n, down, a new disk, formatted as an operator formats a
// replica's new disk: a new directory id where the voter set has them, no
// bootstrap checkpoint (OpLoseDisk).
func (c *Cluster) loseDisk(n *node) {
	n.flog = nil
	n.dsk.Wipe()
	dir := directoryID(c.opts, n.id, n.disk+1)
	if err := c.format(n, dir, nil); err != nil {
		c.fail(Violation{Node: n.id, Rule: "restart", Detail: fmt.Sprintf("formatting a new disk: %v", err)})
		return
	}
	c.replaced(n, dir)
}
