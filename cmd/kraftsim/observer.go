package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/sim"
)

// roleDown is the pseudo-role of a crashed replica in the role history.
const roleDown = "down"

// segment is a stretch of one replica's history in one role and epoch.
type segment struct {
	from   time.Duration
	role   string // a kraft.Role name, or roleDown
	epoch  kraft.Epoch
	leader kraft.NodeID
}

// mark is an operation shown in the picture.
type mark struct {
	at    time.Duration
	kind  sim.OpKind
	nodes []kraft.NodeID
	label string
}

// install is a snapshot a replica installed (InstallSnapshot), shown on
// its lane in the picture.
type install struct {
	at       time.Duration
	id       kraft.NodeID
	snapshot kraft.LogEnd
	from     kraft.NodeID
}

// span is a partition, from the operation that made it to the heal.
type span struct {
	from, to time.Duration
	group    []kraft.NodeID
	oneWay   bool
	open     bool
}

// observer watches a cluster through its OnStep and OnOp hooks. It prints
// the timeline as the run goes, keeps each replica's role history for the
// picture, and measures elections and leaderless time. Everything it
// records comes from the virtual clock, so the same run gives the same
// output.
type observer struct {
	c      *sim.Cluster
	w      *printer // the timeline; discarded with -q
	voters int
	up     []bool
	segs   [][]segment
	marks  []mark
	spans  []span
	// installs are the snapshots installed, in order.
	installs []install

	// Leadership as sim.Cluster.Leader sees it: a leader that a majority of
	// voters follows.
	hasLeader       bool
	leader          kraft.NodeID
	leaderEpoch     kraft.Epoch
	leaderlessSince time.Duration
	leaderless      time.Duration
	firstLeader     time.Duration // -1 until the first leader
	recoveries      []time.Duration
	elections       int // transitions to Leader
	lastEpoch       kraft.Epoch

	// Commit progress lines every tick of virtual time.
	tick          time.Duration
	nextTick      time.Duration
	lastCommitted int

	// votersSeen is how many committed voter sets the timeline printed.
	votersSeen int
}

func newObserver(c *sim.Cluster, w *printer, tick time.Duration) *observer {
	ids := c.IDs()
	o := &observer{
		c: c, w: w, voters: len(c.VoterIDs()), up: make([]bool, len(ids)), segs: make([][]segment, len(ids)),
		firstLeader: -1, tick: tick, nextTick: tick,
	}
	var roles []string
	for _, id := range ids {
		s := c.State(id)
		o.up[id] = c.Up(id)
		o.segs[id] = []segment{{from: c.Now(), role: s.Role().String(), epoch: s.Epoch(), leader: s.Leader()}}
		roles = append(roles, fmt.Sprintf("%s %s", o.name(id), s.Role()))
		if s.Role() == kraft.Leader {
			o.elections++
		}
	}
	o.line(c.Now(), "start", "%s", strings.Join(roles, ", "))
	if h := c.VoterHistory(); len(h) > 0 {
		o.line(c.Now(), "voters", "bootstrap voter set %s", keysName(h[0].Voters))
		o.votersSeen = 1
	}
	c.OnStep = o.onStep
	c.OnOp = o.onOp
	o.checkLeader(nil)
	return o
}

// name is how the timeline names a replica: r0, r1, ...
func (o *observer) name(id kraft.NodeID) string { return fmt.Sprintf("r%d", id) }

func (o *observer) names(ids []kraft.NodeID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = o.name(id)
	}
	return strings.Join(parts, " ")
}

// line prints one timeline line: virtual time, kind, text.
func (o *observer) line(at time.Duration, kind, format string, args ...interface{}) {
	o.w.printf("%10s  %-9s %s\n", fmtTime(at), kind, fmt.Sprintf(format, args...))
}

// note prints a line of the scenario's script.
func (o *observer) note(format string, args ...interface{}) {
	o.ticks(o.c.Now(), nil)
	o.line(o.c.Now(), "scenario", format, args...)
}

func (o *observer) onStep(id kraft.NodeID, e kraft.Event, before, _ kraft.State, acts []kraft.Action) {
	now := o.c.Now()
	o.ticks(now, &stepping{id: id, before: before})
	if _, ok := e.(kraft.Resign); ok {
		// Printed here, before the role change it causes (OnOp comes after
		// the operation).
		o.line(now, "resign", "%s is asked to resign gracefully (%s in epoch %d)", o.name(id), before.Role(), before.Epoch())
	}
	o.votersCommitted()
	switch e := e.(type) {
	case kraft.ReceiveAddVoter:
		o.line(now, "voters", "%s asks %s for AddRaftVoter %s", o.requester(e.From), o.name(id), keyName(e.Voter))
	case kraft.ReceiveRemoveVoter:
		o.line(now, "voters", "%s asks %s for RemoveRaftVoter %s", o.requester(e.From), o.name(id), keyName(e.Voter))
	}
	changed := false
	for _, a := range acts {
		switch a := a.(type) {
		case kraft.AppendVoters:
			o.line(now, "voters", "%s writes a VotersRecord %s (%s %s), in force at once, uncommitted", o.name(id), keysName(a.Voters), a.Change.Kind, keyName(a.Change.Voter))
		case kraft.SendVoterChangeResponse:
			who := "the operator"
			if a.To != kraft.NoNode {
				who = o.name(a.To)
			}
			o.line(now, "voters", "%s answers %s's %s: %v", o.name(id), who, a.Kind, a.Error)
		}
		if in, ok := a.(kraft.InstallSnapshot); ok {
			from := kraft.NoNode
			if r, ok := e.(kraft.ReceiveFetchSnapshotResponse); ok {
				from = r.From
			}
			o.installs = append(o.installs, install{at: now, id: id, snapshot: in.Snapshot, from: from})
			o.line(now, "snapshot", "%s installs %s's snapshot (end offset %d, epoch %d), downloaded with FetchSnapshot; its log restarts at %d",
				o.name(id), o.name(from), in.Snapshot.Offset, in.Snapshot.Epoch, in.Snapshot.Offset)
			continue
		}
		if r, ok := a.(kraft.LeaderRefused); ok {
			// docs/design.md D113.
			o.line(now, "refused", "%s refuses leader %s of epoch %d: %s (truncate to %d, high watermark %d)",
				o.name(id), o.name(r.LeaderID), r.Epoch, r.Reason, r.TruncateTo, r.HighWatermark)
			continue
		}
		rc, ok := a.(kraft.RoleChanged)
		if !ok {
			continue
		}
		changed = true
		o.roleLine(now, id, rc)
		o.setRole(now, id, rc.To.String(), rc.Epoch, rc.LeaderID)
		if rc.To == kraft.Leader {
			o.elections++
		}
	}
	if changed {
		o.checkLeader(nil)
	}
}

func (o *observer) roleLine(at time.Duration, id kraft.NodeID, rc kraft.RoleChanged) {
	to := rc.To.String()
	if rc.To == kraft.Follower && rc.LeaderID != kraft.NoNode {
		to += " of " + o.name(rc.LeaderID)
	}
	reason := ""
	if rc.Reason != "" {
		reason = " (" + rc.Reason + ")"
	}
	if rc.From == rc.To && rc.To != kraft.Follower {
		o.line(at, "role", "%s %s, now in epoch %d%s", o.name(id), rc.To, rc.Epoch, reason)
		return
	}
	o.line(at, "role", "%s %s -> %s, epoch %d%s", o.name(id), rc.From, to, rc.Epoch, reason)
}

// setRole starts a new segment in id's history if its role or epoch
// changed.
func (o *observer) setRole(at time.Duration, id kraft.NodeID, role string, epoch kraft.Epoch, leader kraft.NodeID) {
	segs := o.segs[id]
	last := &segs[len(segs)-1]
	if last.role == role && last.epoch == epoch && last.leader == leader {
		return
	}
	if last.from == at {
		// Several changes at one instant: keep the last.
		last.role, last.epoch, last.leader = role, epoch, leader
		if len(segs) > 1 && segs[len(segs)-2].role == role && segs[len(segs)-2].epoch == epoch && segs[len(segs)-2].leader == leader {
			o.segs[id] = segs[:len(segs)-1]
		}
		return
	}
	o.segs[id] = append(segs, segment{from: at, role: role, epoch: epoch, leader: leader})
}

func (o *observer) onOp(op sim.Op) {
	now := op.At
	o.ticks(now, nil)
	c := o.c
	valid := int(op.Node) >= 0 && int(op.Node) < len(o.up)
	switch op.Kind {
	case sim.OpCrash, sim.OpRestart, sim.OpLoseDisk, sim.OpResign, sim.OpAddVoter, sim.OpRemoveVoter:
		if !valid {
			return // Apply ignored it
		}
	case sim.OpPartition, sim.OpOneWay, sim.OpHeal, sim.OpNetwork, sim.OpDisk:
	}
	switch op.Kind {
	case sim.OpCrash:
		if !o.crashed(now, op) {
			return
		}
	case sim.OpRestart:
		if o.up[op.Node] || !c.Up(op.Node) {
			return
		}
		o.restarted(now, op, "restart", "%s restarts from its record and log as %s in epoch %d")
	case sim.OpLoseDisk:
		o.restarted(now, op, "disk", "%s loses its disk (record and log) and restarts empty as %s in epoch %d")
	case sim.OpResign:
		if !o.up[op.Node] {
			return
		}
		o.marks = append(o.marks, mark{at: now, kind: op.Kind, nodes: []kraft.NodeID{op.Node}, label: "resign " + o.name(op.Node)})
	case sim.OpPartition, sim.OpOneWay:
		if !o.partitioned(now, op) {
			return
		}
	case sim.OpHeal:
		if !o.healed(now, op) {
			return
		}
	case sim.OpNetwork:
		if op.Network == nil {
			return
		}
		o.line(now, "network", "%s", describeNetwork(*op.Network))
	case sim.OpDisk:
		o.line(now, "disk", "every flush now takes up to %v", op.FlushDelay)
	case sim.OpAddVoter, sim.OpRemoveVoter:
		vc := c.VoterChanges()
		if len(vc) == 0 {
			return
		}
		v := vc[len(vc)-1]
		if v.Leader == kraft.NoNode {
			// Otherwise onStep printed it, before what the leader did.
			o.line(now, "voters", "the operator asks for %s %s: no leader, %v", v.Kind, keyName(v.Voter), v.Error)
		}
	}
	o.checkLeader(&op)
}

// crashed records a crash; false if the replica was already down.
func (o *observer) crashed(now time.Duration, op sim.Op) bool {
	if !o.up[op.Node] {
		return false
	}
	s := o.c.State(op.Node)
	o.up[op.Node] = false
	o.line(now, "crash", "%s crashes (%s in epoch %d); its unflushed records are lost", o.name(op.Node), s.Role(), s.Epoch())
	o.setRole(now, op.Node, roleDown, s.Epoch(), kraft.NoNode)
	o.marks = append(o.marks, mark{at: now, kind: op.Kind, nodes: []kraft.NodeID{op.Node}, label: "crash " + o.name(op.Node)})
	return true
}

// partitioned records a partition, both ways or one way; false if it cuts
// nobody off.
func (o *observer) partitioned(now time.Duration, op sim.Op) bool {
	in := map[kraft.NodeID]bool{}
	var group, rest []kraft.NodeID
	for _, id := range op.Group {
		if int(id) >= 0 && int(id) < len(o.up) && !in[id] {
			in[id] = true
			group = append(group, id)
		}
	}
	sort.Slice(group, func(i, j int) bool { return group[i] < group[j] })
	for _, id := range o.c.IDs() {
		if !in[id] {
			rest = append(rest, id)
		}
	}
	if len(group) == 0 || len(rest) == 0 {
		return false
	}
	if op.Kind == sim.OpPartition {
		o.line(now, "partition", "{%s} cut off from {%s}, both ways", o.names(group), o.names(rest))
	} else {
		o.line(now, "partition", "messages from {%s} to {%s} are dropped (one way)", o.names(group), o.names(rest))
	}
	o.spans = append(o.spans, span{from: now, group: group, oneWay: op.Kind == sim.OpOneWay, open: true})
	o.marks = append(o.marks, mark{at: now, kind: op.Kind, nodes: group, label: "partition"})
	return true
}

// healed records the end of every open partition; false if there was
// none.
func (o *observer) healed(now time.Duration, op sim.Op) bool {
	healed := false
	for i := range o.spans {
		if o.spans[i].open {
			o.spans[i].open, o.spans[i].to = false, now
			healed = true
		}
	}
	if !healed {
		return false
	}
	o.line(now, "heal", "every partition is removed")
	o.marks = append(o.marks, mark{at: now, kind: op.Kind, label: "heal"})
	return true
}

func (o *observer) restarted(now time.Duration, op sim.Op, kind, format string) {
	s := o.c.State(op.Node)
	o.up[op.Node] = true
	o.line(now, kind, format, o.name(op.Node), s.Role(), s.Epoch())
	o.setRole(now, op.Node, s.Role().String(), s.Epoch(), s.Leader())
	if s.Role() == kraft.Leader {
		o.elections++
	}
	label := "restart "
	if op.Kind == sim.OpLoseDisk {
		label = "disk loss "
	}
	o.marks = append(o.marks, mark{at: now, kind: op.Kind, nodes: []kraft.NodeID{op.Node}, label: label + o.name(op.Node)})
}

func describeNetwork(n sim.Network) string {
	return fmt.Sprintf("messages delayed %v-%v, %s lost, %s duplicated", n.MinDelay, n.MaxDelay, pct(n.Loss), pct(n.Duplicate))
}

func pct(p float64) string { return trimFloat(p*100) + "%" }

// checkLeader notes when a leader that a majority follows appears or goes.
func (o *observer) checkLeader(op *sim.Op) {
	now := o.c.Now()
	id, ok := o.c.Leader()
	var epoch kraft.Epoch
	if ok {
		epoch = o.c.State(id).Epoch()
	}
	if ok == o.hasLeader && (!ok || (id == o.leader && epoch == o.leaderEpoch)) {
		return
	}
	if o.hasLeader {
		why := ""
		if op != nil {
			why = fmt.Sprintf(" (after the %s)", strings.ReplaceAll(string(op.Kind), "_", " "))
		}
		if !ok {
			o.line(now, "leader", "none: %s no longer leads epoch %d with a majority%s", o.name(o.leader), o.leaderEpoch, why)
		}
	}
	if ok {
		gap := time.Duration(0)
		if !o.hasLeader {
			gap = now - o.leaderlessSince
			o.leaderless += gap
		}
		if o.firstLeader < 0 {
			o.firstLeader = now
			o.line(now, "leader", "%s leads epoch %d, followed by a majority, %s after the start", o.name(id), epoch, fmtDur(now))
		} else {
			o.recoveries = append(o.recoveries, gap)
			o.line(now, "leader", "%s leads epoch %d, followed by a majority, after %s without a leader", o.name(id), epoch, fmtDur(gap))
		}
		if epoch > o.lastEpoch {
			o.lastEpoch = epoch
		}
	} else if o.hasLeader {
		o.leaderlessSince = now
	}
	o.hasLeader, o.leader, o.leaderEpoch = ok, id, epoch
}

// stepping is the replica whose step is being reported, with its state
// before the step: a commit line is about the moment before the event.
type stepping struct {
	id     kraft.NodeID
	before kraft.State
}

// ticks prints the commit lines due before virtual time now.
func (o *observer) ticks(now time.Duration, cur *stepping) {
	if o.tick <= 0 {
		return
	}
	for o.nextTick <= now {
		o.commitLine(o.nextTick, cur)
		o.nextTick += o.tick
	}
}

func (o *observer) commitLine(at time.Duration, cur *stepping) {
	committed := o.c.CommittedLen()
	low, lowID := int64(-1), kraft.NoNode
	for _, id := range o.c.IDs() {
		if !o.c.Up(id) {
			continue
		}
		s := o.c.State(id)
		if cur != nil && cur.id == id {
			s = cur.before
		}
		if h := s.HighWatermark(); lowID == kraft.NoNode || h < low {
			low, lowID = h, id
		}
	}
	lag := ""
	if lowID != kraft.NoNode && low < int64(committed) {
		if low < 0 {
			lag = fmt.Sprintf("; %s does not know the high watermark", o.name(lowID))
		} else {
			lag = fmt.Sprintf("; lowest running replica %s at %d", o.name(lowID), low)
		}
	} else if lowID != kraft.NoNode {
		lag = "; every running replica is there"
	}
	o.line(at, "commit", "high watermark %d (+%d)%s", committed, committed-o.lastCommitted, lag)
	o.lastCommitted = committed
}

// requester names who sent a voter-change request.
func (o *observer) requester(from kraft.NodeID) string {
	if from == kraft.NoNode {
		return "the operator"
	}
	return o.name(from) + " (auto-join)"
}

// votersCommitted prints the voter sets that became committed since the
// last call (the checker records them as the high watermark passes their
// VotersRecords).
func (o *observer) votersCommitted() {
	if o.c.Stats().VoterChangesCommitted+1 <= o.votersSeen {
		return
	}
	h := o.c.VoterHistory()
	for ; o.votersSeen < len(h); o.votersSeen++ {
		v := h[o.votersSeen]
		o.line(v.At, "voters", "committed voter set %s (VotersRecord at offset %d)", keysName(v.Voters), v.Offset)
	}
}

// finish closes the books at the end of the run.
func (o *observer) finish() {
	now := o.c.Now()
	o.ticks(now, nil)
	o.votersCommitted()
	if !o.hasLeader {
		o.leaderless += now - o.leaderlessSince
		o.leaderlessSince = now
	}
	for i := range o.spans {
		if o.spans[i].open {
			o.spans[i].to = now
		}
	}
}
