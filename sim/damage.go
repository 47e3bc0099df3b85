package sim

import (
	"fmt"
	"math/rand"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/plant"
	"github.com/kraftquorum/kraft/storage"
)

// Disk damage in the simulator (docs/design.md D96-D99): OpDamage damages
// a replica's disk (crashing it first if it is up), and the damage takes
// effect at its next start, where the host does what package storage and
// kraftd do:
//
//   - it detects the damage as storage.Open and storage.CheckQuorumState
//     do (detect, below; D70-D72), and the error is the one they return;
//   - it applies the recovery rule (D91): in a dynamic quorum the replica
//     moves its data aside and starts empty with a new directory id, as a
//     replaced disk, an observer until a committed VotersRecord adds it
//     back (auto-join); in a static quorum it refuses to start and stays
//     down until the operator restores the directory as it was when the
//     replica stopped (the copy kraftd's message asks for), RestoreDelay
//     later, and starts it.
//
// The simulated disk is not byte-level: it holds records and a quorum
// record, not frames and files. So the damage is not written into bytes
// that storage.Open then reads; detect derives the result storage.Open
// would reach from what the simulated disk knows (the recovery point is
// the flushed offset, a damaged record lies below it) and builds the
// error it returns (a *storage.DamageError); for the quorum state it calls
// storage.CheckQuorumState itself, with the record the damage leaves and
// the log's synced epoch. That storage.Open finds every such damage is
// package storage's own tests' (TestEveryFlipBelowTheRecoveryPointIsDamage,
// TestQuorumStateRollbackAndLoss). The simulated disk keeps the replica's
// data as it was: a replica that starts on it never reads the damaged
// records, except with the planted bug plant.TornTail (D99), which takes
// them for a torn tail as storage.Open did before D70: it cuts the log at
// the first damaged record and starts with what is left, under its old
// identity and vote.
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
// epochs), or lost with a log of epoch 0 (D72); and damage to snapshots
// and the log start checkpoint (D73), which the simulator leaves to
// package storage's tests.

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

// diskDamage is a damage waiting for the replica's start: what the
// storage reports (err), and for log damage the first damaged offset.
type diskDamage struct {
	kind Damage
	from int // the first damaged record, for DamageFlip and DamageLostWrite
	err  error
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

// damage carries out OpDamage on n: it crashes n if it is up and records
// what its storage will report at its next start (detect). A damage the
// model leaves out, or one while another is under way, is skipped.
func (c *Cluster) damage(n *node, kind Damage) {
	if !c.damageOver() || n.damage != nil {
		c.stats.DamagesSkipped++
		c.stats.DamagesBusy++
		return
	}
	c.crash(n)
	d := detect(n, kind, c.rng)
	if d == nil {
		c.stats.DamagesSkipped++
		return
	}
	n.damage = d
	c.victim, c.victimKey = n.id, n.cfg.Local
	c.stats.Damages++
	if c.stats.DamagesByKind == nil {
		c.stats.DamagesByKind = map[Damage]int{}
	}
	c.stats.DamagesByKind[kind]++
}

// detect is what the storage reports at open for damage kind on n's disk,
// nil if it has nothing to damage there or the damage is one no local
// check can see. It mirrors package storage:
//
//   - a bad frame, or the log's end, below the recovery point (which is
//     n.flushed: a Sync writes it once the segment is synced,
//     storage/recoverypoint.go) is a *storage.DamageError naming the
//     records lost, from the damaged one to the recovery point
//     (storage/recover.go, damage);
//   - the quorum-state record is checked by storage.CheckQuorumState
//     itself, against the highest epoch the log held durably. A single lost
//     write of one of the two quorum-state files is not damage: the
//     checked copy holds the newest record or the one before
//     (storage/quorumcopy.go); losing or rolling back both is.
func detect(n *node, kind Damage, r *rand.Rand) *diskDamage {
	logEpoch := n.syncedEpoch()
	switch kind {
	case DamageFlip, DamageLostWrite:
		if n.flushed <= n.start {
			return nil // no synced record in the log (a snapshot's damage is D73's, not modelled)
		}
		from := n.start + r.Intn(n.flushed-n.start)
		cause := fmt.Sprintf("a bad frame at offset %d, below the recovery point %d", from, n.flushed)
		if kind == DamageLostWrite {
			cause = fmt.Sprintf("the log ends at %d, below the recovery point %d", from, n.flushed)
		}
		return &diskDamage{kind: kind, from: from, err: &storage.DamageError{
			Dir: fmt.Sprintf("r%d", n.id), From: int64(from), To: int64(n.flushed), Epoch: logEpoch, Cause: cause,
		}}
	case DamageLostQuorumState:
		if n.record == nil {
			return nil
		}
		if err := storage.CheckQuorumState(fmt.Sprintf("r%d/quorum-state", n.id), nil, logEpoch); err != nil {
			return &diskDamage{kind: kind, err: err}
		}
		return nil // a log of epoch 0: as if the log were lost with it (D72's blind spot)
	case DamageRolledBackQuorumState:
		// The newest older record the check can tell from the current
		// one: one below the log's epoch. A rollback to a record at or
		// above it reads as a directory from before the newer records,
		// which no local check can see.
		for i := len(n.history) - 2; i >= 0; i-- {
			old := n.history[i]
			if err := storage.CheckQuorumState(fmt.Sprintf("r%d/quorum-state", n.id), &old, logEpoch); err != nil {
				return &diskDamage{kind: kind, err: err}
			}
		}
		return nil
	}
	return nil
}

// startDamaged carries out the recovery rule for n's damage at its start
// (D91), and reports whether the start goes on (on a replaced disk, or on
// the log the planted bug cut).
func (c *Cluster) startDamaged(n *node) bool {
	d := n.damage
	log := d.kind == DamageFlip || d.kind == DamageLostWrite
	switch {
	case log && c.opts.plant == plant.TornTail:
		// The planted bug: the damage taken for a torn tail, the log cut
		// at it, the identity and the vote kept. The checker is told the
		// records are gone (the disk lost them, not the protocol): what it
		// then catches is what the replica does with a shorter log.
		n.damage = nil
		n.log, n.flushed = n.log[:d.from:d.from], d.from
		c.check.diskDamaged(n, d.from)
		c.stats.DamagesCut++
		return true
	case c.opts.Dynamic:
		n.damage = nil
		c.replaceDisk(n)
		c.stats.DamagesReplaced++
		return true
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
	n.damage = nil
	c.stats.DamagesRestored++
	c.start(n)
}

// replaceDisk moves n's data aside and gives it a new disk: empty, with a
// new directory id where the voter set has them (KIP-853), an observer
// until added (OpLoseDisk's disk, and D91's replaced disk).
func (c *Cluster) replaceDisk(n *node) {
	n.record, n.history, n.log, n.flushed, n.start, n.startEpoch, n.snaps, n.partial, n.applied = nil, nil, nil, 0, 0, 0, nil, nil, nil
	n.damage = nil
	n.disk++
	n.bootstrap = nil
	if c.opts.Dynamic {
		// A new directory id and no bootstrap checkpoint: an observer
		// that knows no voter set until it fetches one.
		n.cfg.Local.DirectoryID = directoryID(c.opts, n.id, n.disk)
		n.cfg.Observer = true
	} else if c.opts.DirectoryIDs {
		// KIP-853: a new disk is a new replica key; a voter whose key
		// no longer matches comes back as an observer.
		n.cfg.Local.DirectoryID = directoryID(c.opts, n.id, n.disk)
		n.cfg.Observer = true
		for _, v := range c.voters {
			if v.Matches(n.cfg.Local) {
				n.cfg.Observer = false
			}
		}
	}
	c.check.diskLost(n)
}
