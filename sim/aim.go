package sim

import "time"

// Disk faults aimed at the moments recovery code is most fragile
// (docs/design.md D130). Random disk faults (RandomDiskFaults) fall
// anywhere in a run; a defect that only a fault in a short window after a
// rare operation reveals escapes them. CTRL (Ganesan et al., FAST'17) and
// ALICE (Pillai et al., OSDI'14) put their faults right after the
// operations that change what a log's recovery reads: here the host's log
// operations other than appends and syncs. With Options.AimedFaults set,
// the host aims a fault at the replica right after
//
//   - a truncation that removes records (a divergence, Kafka's
//     truncateTo), a cleaning that moves the log start (deleteBeforeSnapshot)
//     or a reset to a snapshot (truncateToLatestSnapshot), always when the
//     operation reaches past the records the replica was told were durable
//     (the operation must make records durable itself, outside a Sync), and
//     one time in aimOthers otherwise;
//
// a fault: a disk fault on the log's last records (a bit flipped in one of
// its last four records or, two times in three, the writes lost from the
// start of one of them on: the writes most at risk) with a power loss, or,
// one time in four, the power loss alone. It strikes right after the replica's next sync completes (the
// first point at which the records the operation touched count as
// durable), or at a random time within Options.AimWindow if that comes
// first and no sync is under way then. The replica restarts within a
// second of it (a damaged one meets the recovery rule, D91). No fault is
// aimed while a damage is under way (one damaged replica at a time), and
// one that meets another at its strike is skipped as OpDamage skips it.

// aimOthers: one operation in aimOthers that stays within what the replica
// was told was durable gets an aimed fault.
const aimOthers = 8

// defaultAimWindow is Options.AimWindow's default: a few flushes and a
// fetch round trip after the operation.
const defaultAimWindow = 200 * time.Millisecond

// aim considers an aimed fault at n after one of its log operations
// (why: "truncate", "delete_before", "reset"); past says the operation
// reached past the records n was told were durable.
func (c *Cluster) aim(n *node, why string, past bool) {
	if c.aimed >= c.opts.AimedFaults || c.aimStopped || n.aim != nil || !c.damageOver() || n.damage != nil {
		return
	}
	if !past && c.rng.Intn(aimOthers) != 0 {
		return
	}
	window := c.opts.AimWindow
	if window <= 0 {
		window = defaultAimWindow
	}
	at := c.now + time.Duration(c.rng.Int63n(int64(window)+1))
	op := Op{At: at, Kind: OpDamage, Node: n.id, Aimed: why}
	switch k := c.rng.Intn(4); k {
	case 0:
		op.Kind = OpCrash
	case 1:
		op.Damage = DamageFlip
	default:
		op.Damage = DamageLostWrite
	}
	n.aim = &op
	c.aimed++
	c.stats.Aimed++
	c.Schedule(op)
}

// aimAtSync strikes n's aimed fault, if one is on its way, right after a
// sync of n's log completed: the first point at which the operation's
// records count as durable.
func (c *Cluster) aimAtSync(n *node) {
	if n.aim != nil && !c.aimStopped {
		op := *n.aim
		op.atSync = true
		c.Apply(op)
	}
}
