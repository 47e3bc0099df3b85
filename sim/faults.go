package sim

import (
	"fmt"
	"time"

	"github.com/kraftquorum/kraft"
)

// OpKind names a fault or schedule operation.
type OpKind string

// The operations.
const (
	// OpCrash stops Node; it loses its unflushed log tail and everything in
	// flight to it.
	OpCrash OpKind = "crash"
	// OpKill stops Node as OpCrash does, as a process that dies on a host
	// that stays up: the kernel closes its connections, and a connection
	// attempt to it is refused. Each replica that is up and that the
	// network joins to Node learns it (replica.PeerDown) a round trip
	// later, as package node's TCP transport does (docs/design.md D101).
	OpKill OpKind = "kill"
	// OpRestart restarts a crashed Node from its record and flushed log.
	OpRestart OpKind = "restart"
	// OpLoseDisk crashes Node if it is up, wipes its record, log and
	// snapshots, and restarts it.
	OpLoseDisk OpKind = "lose_disk"
	// OpResign delivers kraft.Resign to Node (graceful resignation).
	OpResign OpKind = "resign"
	// OpPartition cuts Group off from every other replica, both ways.
	OpPartition OpKind = "partition"
	// OpOneWay drops every message from Group to the other replicas.
	OpOneWay OpKind = "one_way"
	// OpHeal removes every partition.
	OpHeal OpKind = "heal"
	// OpNetwork sets the network's behaviour to Network.
	OpNetwork OpKind = "network"
	// OpDisk sets how long every replica's disk takes to flush: each flush
	// completes after a delay drawn from [0, FlushDelay] (a slow disk
	// phase; StopFaults goes back to Options.FlushDelayMax). With a Group,
	// only those replicas' disks: each flushes within the longer of
	// FlushDelay and every replica's (0 ends its own slow phase; StopFaults
	// ends them all).
	OpDisk OpKind = "disk"
	// OpAddVoter asks the leader of the highest epoch to add Node (a spare
	// controller, an observer, or a replica back from a disk loss) with its
	// current key (AddRaftVoter; Options.Dynamic). The request and its
	// answer are in Cluster.VoterChanges.
	OpAddVoter OpKind = "add_voter"
	// OpRemoveVoter asks the leader of the highest epoch to remove the
	// voter with Node's id, by the key its voter set holds
	// (RemoveRaftVoter; Options.Dynamic).
	OpRemoveVoter OpKind = "remove_voter"
	// OpDamage damages Node's disk (Damage says how), crashing it first if
	// it is up; the damage takes effect at its next start (see damage.go).
	OpDamage OpKind = "damage"
	// OpIdle stops the clients' appends for Idle: a quiet cluster, whose
	// logs' last records wait for no later Sync (review 4's S1 lived in
	// such a log).
	OpIdle OpKind = "idle"
	// OpRefused is not an operation to schedule: the trace's note that a
	// replica refused to start on a damaged disk (a static voter set), and
	// stays down until the operator restores its directory.
	OpRefused OpKind = "refused"
)

// Op is one operation of a fault schedule, at virtual time At.
type Op struct {
	At      time.Duration  `json:"at"`
	Kind    OpKind         `json:"kind"`
	Node    kraft.NodeID   `json:"node,omitempty"`
	Group   []kraft.NodeID `json:"group,omitempty"`
	Network *Network       `json:"network,omitempty"`
	// FlushDelay is OpDisk's maximum flush delay.
	FlushDelay time.Duration `json:"flush_delay,omitempty"`
	// Damage is OpDamage's disk fault.
	Damage Damage `json:"damage,omitempty"`
	// Idle is how long OpIdle keeps the clients quiet.
	Idle time.Duration `json:"idle,omitempty"`
	// Aimed names the log operation an aimed fault follows (aim.go): an
	// OpDamage then falls on the log's last records.
	Aimed string `json:"aimed,omitempty"`
	// atSync: the aimed fault strikes now, a sync having just completed
	// (aimAtSync), even if another is under way.
	atSync bool
}

// String describes the operation.
func (o Op) String() string {
	switch o.Kind {
	case OpCrash, OpKill, OpRestart, OpLoseDisk, OpResign, OpAddVoter, OpRemoveVoter, OpRefused:
		return fmt.Sprintf("%v %s %d", o.At, o.Kind, o.Node)
	case OpDamage:
		if o.Aimed != "" {
			return fmt.Sprintf("%v %s %d %s (aimed after %s)", o.At, o.Kind, o.Node, o.Damage, o.Aimed)
		}
		return fmt.Sprintf("%v %s %d %s", o.At, o.Kind, o.Node, o.Damage)
	case OpPartition, OpOneWay:
		return fmt.Sprintf("%v %s %v", o.At, o.Kind, o.Group)
	case OpNetwork:
		if o.Network != nil {
			return fmt.Sprintf("%v %s %+v", o.At, o.Kind, *o.Network)
		}
	case OpDisk:
		if len(o.Group) > 0 {
			return fmt.Sprintf("%v %s %v flush<=%v", o.At, o.Kind, o.Group, o.FlushDelay)
		}
		return fmt.Sprintf("%v %s flush<=%v", o.At, o.Kind, o.FlushDelay)
	case OpIdle:
		return fmt.Sprintf("%v %s %v", o.At, o.Kind, o.Idle)
	case OpHeal:
	}
	return fmt.Sprintf("%v %s", o.At, o.Kind)
}

// Schedule queues operations to run at their At times (times in the past
// run at once, in order).
func (c *Cluster) Schedule(ops ...Op) {
	for _, op := range ops {
		at := op.At
		if at < c.now {
			at = c.now
		}
		c.push(&item{at: at, kind: itemOp, op: op})
	}
}

// Apply carries out one operation now. Operations that make no sense (a
// crash of a crashed replica, an unknown replica) are ignored.
func (c *Cluster) Apply(op Op) {
	if c.err != nil {
		return
	}
	op.At = c.now
	if c.trace != nil {
		o := op
		c.writeTrace(TraceLine{Kind: "op", T: c.now, Op: &o})
	}
	c.apply(op)
	if c.OnOp != nil {
		c.OnOp(op)
	}
}

func (c *Cluster) apply(op Op) {
	valid := op.Node >= 0 && int(op.Node) < len(c.nodes)
	if op.Aimed != "" && valid {
		n := c.nodes[op.Node]
		if n.aim == nil || c.aimStopped || n.up && n.flushAt && !op.atSync {
			// It struck at a sync, or StopFaults ended it, or it waits
			// for the sync under way (aimAtSync).
			return
		}
		n.aim = nil
		defer c.Schedule(Op{At: c.now + time.Duration(c.rng.Int63n(int64(time.Second))), Kind: OpRestart, Node: n.id})
	}
	switch op.Kind {
	case OpCrash:
		if valid {
			c.crash(c.nodes[op.Node])
		}
	case OpKill:
		if valid && c.nodes[op.Node].up {
			c.stop(c.nodes[op.Node], false)
			c.noticeDown(op.Node)
		}
	case OpRestart:
		if valid && !c.nodes[op.Node].up {
			c.start(c.nodes[op.Node])
		}
	case OpLoseDisk:
		if !valid {
			return
		}
		n := c.nodes[op.Node]
		c.crash(n)
		c.loseDisk(n)
		c.start(n)
	case OpDamage:
		if valid {
			c.damage(c.nodes[op.Node], op.Damage, op.Aimed != "")
		}
	case OpResign:
		if valid && c.nodes[op.Node].up {
			n := c.nodes[op.Node]
			n.rep.Resign(c.now)
			c.carry(n)
		}
	case OpAddVoter:
		if valid {
			c.adminChange(kraft.AddVoter, op.Node)
		}
	case OpRemoveVoter:
		if valid {
			c.adminChange(kraft.RemoveVoter, op.Node)
		}
	case OpPartition, OpOneWay:
		c.partition(op.Group, op.Kind == OpOneWay)
	case OpHeal:
		c.cut = map[[2]kraft.NodeID]bool{}
	case OpNetwork:
		if op.Network != nil {
			nw := *op.Network
			if nw.MinDelay < 0 || nw.MaxDelay < nw.MinDelay {
				return
			}
			c.net = nw
		}
	case OpDisk:
		c.slowDisks(op)
	case OpIdle:
		if until := c.now + op.Idle; until > c.idleUntil {
			c.idleUntil = until
		}
	}
}

// partition cuts the links from group to the rest, and back unless oneWay
// (OpPartition, OpOneWay).
func (c *Cluster) partition(group []kraft.NodeID, oneWay bool) {
	in := map[kraft.NodeID]bool{}
	for _, id := range group {
		in[id] = true
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if in[a.id] && !in[b.id] {
				c.cut[[2]kraft.NodeID{a.id, b.id}] = true
				if !oneWay {
					c.cut[[2]kraft.NodeID{b.id, a.id}] = true
				}
			}
		}
	}
}

// slowDisks sets the flush delay of the group's disks, or of every disk
// without a group (OpDisk); a negative delay changes nothing.
func (c *Cluster) slowDisks(op Op) {
	switch {
	case op.FlushDelay < 0:
	case len(op.Group) > 0:
		if c.slowDisk == nil {
			c.slowDisk = map[kraft.NodeID]time.Duration{}
		}
		for _, id := range op.Group {
			c.slowDisk[id] = op.FlushDelay
		}
	default:
		c.flushDelay = op.FlushDelay
	}
}

// crash is a power loss of n's machine (OpCrash).
func (c *Cluster) crash(n *node) { c.stop(n, true) }

// stop ends n's process: with its machine's power (its disk keeps what a
// power loss keeps, package storage/simdisk), or alone (the page cache
// keeps every write). Either way the host's view of the log keeps what the
// replica was told was durable; the next start reads back what the disk
// kept.
func (c *Cluster) stop(n *node, powerLoss bool) {
	if !n.up {
		return
	}
	n.up = false
	n.inc++
	n.flog = nil // its files are gone with the process
	if powerLoss {
		n.dsk.Crash()
	} else {
		n.dsk.Kill()
	}
	n.dsk.Restart()
	n.log = n.log[:n.flushed:n.flushed]
	n.partial = nil // a partial download is lost
	n.rep = nil     // and everything in memory
	n.requests = nil
	c.check.logChangedFrom(n, len(n.log))
}

// noticeDown tells every replica that is up, and that the network joins to
// replica gone both ways, that gone's process is gone: after one message
// delay its connection closes, after another a new one is refused. The
// notice is not lost (TCP sends the close again until it is answered),
// and it comes after every message gone sent to the replica before it
// died, as a connection's close comes after the bytes sent on it.
func (c *Cluster) noticeDown(gone kraft.NodeID) {
	for _, n := range c.nodes {
		if !n.up || n.id == gone || c.cut[[2]kraft.NodeID{gone, n.id}] || c.cut[[2]kraft.NodeID{n.id, gone}] {
			continue
		}
		at := c.now + 2*c.net.MinDelay
		if c.net.MaxDelay > c.net.MinDelay {
			at += time.Duration(c.rng.Int63n(int64(c.net.MaxDelay-c.net.MinDelay)+1)) + time.Duration(c.rng.Int63n(int64(c.net.MaxDelay-c.net.MinDelay)+1))
		}
		for _, it := range c.q {
			if it.kind == itemMessage && it.msg.m.From == gone && it.msg.m.To == n.id && it.at >= at {
				at = it.at + 1
			}
		}
		c.push(&item{at: at, kind: itemDown, node: n.id, inc: n.inc, gone: gone})
	}
}

// Crash stops replica id (see OpCrash).
func (c *Cluster) Crash(id kraft.NodeID) { c.Apply(Op{Kind: OpCrash, Node: id}) }

// Restart restarts replica id (see OpRestart).
func (c *Cluster) Restart(id kraft.NodeID) { c.Apply(Op{Kind: OpRestart, Node: id}) }

// LoseDisk wipes replica id's disk and restarts it (see OpLoseDisk).
func (c *Cluster) LoseDisk(id kraft.NodeID) { c.Apply(Op{Kind: OpLoseDisk, Node: id}) }

// Damage damages replica id's disk (see OpDamage).
func (c *Cluster) Damage(id kraft.NodeID, kind Damage) {
	c.Apply(Op{Kind: OpDamage, Node: id, Damage: kind})
}

// AddVoter asks the leader to add replica id (see OpAddVoter).
func (c *Cluster) AddVoter(id kraft.NodeID) { c.Apply(Op{Kind: OpAddVoter, Node: id}) }

// RemoveVoter asks the leader to remove voter id (see OpRemoveVoter).
func (c *Cluster) RemoveVoter(id kraft.NodeID) { c.Apply(Op{Kind: OpRemoveVoter, Node: id}) }

// Resign asks replica id to resign gracefully (see OpResign).
func (c *Cluster) Resign(id kraft.NodeID) { c.Apply(Op{Kind: OpResign, Node: id}) }

// Partition cuts group off from the other replicas, both ways.
func (c *Cluster) Partition(group ...kraft.NodeID) {
	c.Apply(Op{Kind: OpPartition, Group: group})
}

// OneWay drops every message from group to the other replicas.
func (c *Cluster) OneWay(group ...kraft.NodeID) { c.Apply(Op{Kind: OpOneWay, Group: group}) }

// Heal removes every partition.
func (c *Cluster) Heal() { c.Apply(Op{Kind: OpHeal}) }

// SetNetwork changes the network's behaviour.
func (c *Cluster) SetNetwork(n Network) { c.Apply(Op{Kind: OpNetwork, Network: &n}) }

// StopFaults ends every fault: it heals partitions, restarts every crashed
// replica, brings the network back to Options.Network, made reliable (its
// delays, so reordering stays; no loss, no duplicates), and the disks as
// fast as Options.FlushDelayMax says. Flushes already scheduled complete
// when they were due. (A slow network phase's delays once stayed too: with
// a fetch of 1-3 records and delays up to 100 ms, a follower fetched fewer
// records per second than the client wrote and never caught up.)
func (c *Cluster) StopFaults() {
	c.aimStopped = true
	c.Heal()
	if c.flushDelay != c.opts.FlushDelayMax {
		c.Apply(Op{Kind: OpDisk, FlushDelay: c.opts.FlushDelayMax})
	}
	for _, n := range c.nodes {
		if c.slowDisk[n.id] > 0 {
			c.Apply(Op{Kind: OpDisk, Group: []kraft.NodeID{n.id}})
		}
	}
	nw := c.opts.Network
	nw.Loss, nw.Duplicate = 0, 0
	c.SetNetwork(nw)
	for _, n := range c.nodes {
		if !n.up {
			c.Restart(n.id)
		}
	}
}

// Leader returns a running leader that a majority of voters follows (the
// leader itself included if it is one), if there is one. The voters are
// those of the leader's voter set in force, each running with its key.
func (c *Cluster) Leader() (kraft.NodeID, bool) {
	for _, l := range c.nodes {
		if !l.up || l.st.Role() != kraft.Leader {
			continue
		}
		n := 0
		voters := l.st.Voters()
		for _, v := range voters {
			if v.ID < 0 || int(v.ID) >= len(c.nodes) {
				continue
			}
			s := c.nodes[v.ID]
			if s.up && s.cfg.Local == v && s.st.Epoch() == l.st.Epoch() && (s.id == l.id || (s.st.Role() == kraft.Follower && s.st.Leader() == l.id)) {
				n++
			}
		}
		if n >= len(voters)/2+1 {
			return l.id, true
		}
	}
	return kraft.NoNode, false
}

// WaitForLeader runs until a leader that a majority follows exists, for at
// most limit, and returns it.
func (c *Cluster) WaitForLeader(limit time.Duration) (kraft.NodeID, error) {
	if err := c.RunUntil(c.now+limit, func() bool { _, ok := c.Leader(); return ok }); err != nil {
		return kraft.NoNode, err
	}
	id, ok := c.Leader()
	if !ok {
		return kraft.NoNode, fmt.Errorf("sim: no leader followed by a majority within %v (at %v): %s", limit, c.now, c.Describe())
	}
	return id, nil
}

// WaitForHighWatermark runs until every running replica in ids (all
// replicas if empty) has a high watermark of at least hwm, for at most
// limit.
func (c *Cluster) WaitForHighWatermark(hwm int64, limit time.Duration, ids ...kraft.NodeID) error {
	if len(ids) == 0 {
		ids = c.IDs()
	}
	reached := func() bool {
		for _, id := range ids {
			if n := c.nodes[id]; !n.up || n.st.HighWatermark() < hwm {
				return false
			}
		}
		return true
	}
	if err := c.RunUntil(c.now+limit, reached); err != nil {
		return err
	}
	if !reached() {
		return fmt.Errorf("sim: high watermark %d not reached on %v within %v (at %v): %s", hwm, ids, limit, c.now, c.Describe())
	}
	return nil
}

// Describe prints every replica's state.
func (c *Cluster) Describe() string {
	s := ""
	for _, n := range c.nodes {
		up := "up"
		if !n.up {
			up = "down"
		}
		s += fmt.Sprintf("\n  %d (%s): %v, log %d flushed %d", n.id, up, n.st, len(n.log), n.flushed)
	}
	return s
}

// CommittedLen is the length of the committed log (the highest high
// watermark any leader reached).
func (c *Cluster) CommittedLen() int { return len(c.check.committed) }
