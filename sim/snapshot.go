package sim

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/kraftquorum/kraft"
)

// The simulated host's snapshots, as the README's host contract and the
// core's events describe them (docs/design.md D42-D45), after Kafka's
// KafkaMetadataLog (createNewSnapshot, deleteBeforeSnapshot,
// truncateToLatestSnapshot) and KafkaRaftClient (handleFetchSnapshotRequest,
// handleFetchSnapshotResponse):
//
//   - Once a replica's high watermark (the highest HighWatermarkChanged of
//     its life, or its latest snapshot after a restart) is
//     Options.SnapshotEvery records past its latest snapshot, the host
//     writes a snapshot at the high watermark, in the epoch of the record
//     before it, and steps SnapshotCreated. Its content is the replicated
//     state up to there: the latest snapshot's records, then the log's
//     records after them. Writing and freezing is atomic and durable.
//   - It keeps Options.SnapshotsKept snapshots: once it has more, it
//     deletes the log before the oldest one it keeps and every older
//     snapshot, durably, and steps LogStartMoved (Kafka's
//     deleteBeforeSnapshot). The records below the log start are gone.
//     A snapshot it served a FetchSnapshot chunk of within
//     Options.SnapshotDownloadHold (the fetch timeout by default) is kept
//     too, and the log start stays at it until the hold lapses: a
//     follower's download is not cut short by the leader's next snapshot.
//   - A leader's host looks up the size of the snapshot a FetchSnapshot
//     asks for (ReceiveFetchSnapshot.Size, -1 if it has none) and answers
//     with the bytes read at the position: Options.SnapshotChunkBytes, or
//     an eighth of the snapshot if that is more, so that a download takes
//     at most 8 round trips however long the run (a leader that replaced
//     its snapshot before a follower finished downloading it answers
//     SNAPSHOT_NOT_FOUND, and the follower starts over).
//   - A follower's host writes each chunk the state takes
//     (WriteSnapshotChunk) into a partial snapshot, and on InstallSnapshot
//     freezes it, deletes every record and every other snapshot, and
//     restarts the log empty at the snapshot's end.
//   - A crash loses the partial download. On restart, a snapshot past the
//     surviving log's end (one taken of records that were not flushed)
//     makes the host reset the log to it first, as Kafka does on open. A
//     disk loss loses every snapshot.

// snapshot is a frozen snapshot: its id, the records it holds (the
// committed prefix [0, id.Offset) as the replica applied it; a snapshot
// shares its records with the later snapshots of its replica, and nothing
// ever writes them), and its bytes, encoded when first read.
type snapshot struct {
	id   kraft.LogEnd
	recs []Record
	data []byte
	// voters is the voter set in force at the snapshot's end (nil for a
	// static voter set), which its bytes hold too.
	voters []kraft.ReplicaKey
	// served is when the host last served a FetchSnapshot chunk of it
	// (-1: never): cleaning keeps it while a download may go on.
	served time.Duration
}

// bytes are the snapshot's bytes; their length is its size.
func (s *snapshot) bytes() []byte {
	if s.data == nil {
		s.data = encodeSnapshotVoters(s.recs, s.voters)
	}
	return s.data
}

// partial is a snapshot being downloaded: its id, its size as the leader
// reported it, and the bytes written so far.
type partial struct {
	id   kraft.LogEnd
	size int64
	data []byte
}

// String describes a partial snapshot without its bytes.
func (p *partial) String() string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%+v with %d of %d bytes", p.id, len(p.data), p.size)
}

// encodeSnapshot writes records as text lines "epoch payload" (payloads
// have no newline): the snapshot's bytes, whose length is its size.
func encodeSnapshot(recs []Record) []byte { return encodeSnapshotVoters(recs, nil) }

// encodeSnapshotVoters is encodeSnapshot with, for a voter set, a first
// line "v " and the set as a VotersRecord's payload (Kafka's snapshot
// header holds a VotersRecord).
func encodeSnapshotVoters(recs []Record, voters []kraft.ReplicaKey) []byte {
	var b bytes.Buffer
	if voters != nil {
		b.WriteString("v ")
		b.WriteString(votersPayload(voters))
		b.WriteByte('\n')
	}
	for _, r := range recs {
		b.WriteString(strconv.FormatInt(int64(r.Epoch), 10))
		b.WriteByte(' ')
		b.WriteString(r.Payload)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// decodeSnapshot reads the bytes encodeSnapshot wrote.
func decodeSnapshot(data []byte) ([]Record, error) {
	recs, _, err := decodeSnapshotVoters(data)
	return recs, err
}

// decodeSnapshotVoters reads the bytes encodeSnapshotVoters wrote.
func decodeSnapshotVoters(data []byte) ([]Record, []kraft.ReplicaKey, error) {
	var recs []Record
	var voters []kraft.ReplicaKey
	if bytes.HasPrefix(data, []byte("v ")) {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil, nil, fmt.Errorf("the voter set has no end")
		}
		vs, ok := parseVoters(string(data[2:nl]))
		if !ok {
			return nil, nil, fmt.Errorf("bad voter set %q", data[2:nl])
		}
		voters, data = vs, data[nl+1:]
	}
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil, nil, fmt.Errorf("record %d has no end", len(recs))
		}
		line := data[:nl]
		data = data[nl+1:]
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			return nil, nil, fmt.Errorf("record %d has no epoch", len(recs))
		}
		e, err := strconv.ParseInt(string(line[:sp]), 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("record %d: %w", len(recs), err)
		}
		recs = append(recs, Record{Epoch: kraft.Epoch(e), Payload: string(line[sp+1:])})
	}
	return recs, voters, nil
}

// latestSnapshot is n's newest snapshot, nil if none.
func (n *node) latestSnapshot() *snapshot {
	if len(n.snaps) == 0 {
		return nil
	}
	return n.snaps[len(n.snaps)-1]
}

// findSnapshot is n's snapshot id, nil if it has none.
func (n *node) findSnapshot(id kraft.LogEnd) *snapshot {
	for _, s := range n.snaps {
		if s.id == id {
			return s
		}
	}
	return nil
}

// end is the end of n's log: its last record's offset and epoch, or, for
// an empty log that starts at a snapshot, that snapshot's id (Kafka's
// lastFetchedEpoch of an empty log).
func (n *node) end() kraft.LogEnd {
	switch {
	case len(n.log) > n.start:
		return kraft.LogEnd{Offset: int64(len(n.log)), Epoch: n.log[len(n.log)-1].Epoch}
	case n.start > 0 && len(n.snaps) > 0:
		return kraft.LogEnd{Offset: int64(n.start), Epoch: n.snaps[0].id.Epoch}
	}
	return kraft.LogEnd{Offset: int64(len(n.log))}
}

// logState describes n's log for kraft.NewState: its start, the epochs of
// the records it holds, its end and its snapshots.
func (n *node) logState() kraft.LogState {
	ls := kraft.LogState{Start: int64(n.start), End: n.end()}
	for i := n.start; i < len(n.log); i++ {
		if i == n.start || n.log[i].Epoch != n.log[i-1].Epoch {
			ls.Epochs = append(ls.Epochs, kraft.EpochStart{Epoch: n.log[i].Epoch, StartOffset: int64(i)})
		}
	}
	if len(n.snaps) > 0 {
		latest, earliest := n.snaps[len(n.snaps)-1].id, n.snaps[0].id
		ls.LatestSnapshot, ls.EarliestSnapshot = &latest, &earliest
	}
	ls.VoterSets = n.voterSets()
	return ls
}

// records is what n holds from offset 0: the content of its snapshot at
// the log start, then its log.
func (n *node) records() []Record {
	out := make([]Record, 0, len(n.log))
	if n.start > 0 && len(n.snaps) > 0 && n.snaps[0].id.Offset == int64(n.start) {
		out = append(out, n.snaps[0].recs...)
	} else {
		out = append(out, n.log[:n.start]...)
	}
	return append(out, n.log[n.start:]...)
}

// recover completes at restart what a crash interrupted (Kafka's
// KafkaMetadataLog on open): the partial download is gone, and a latest
// snapshot past the surviving log's end resets the log to it.
func (c *Cluster) recover(n *node) {
	n.partial = nil
	n.applied = nil
	if s := n.latestSnapshot(); s != nil {
		n.applied = s.recs
	}
	if s := n.latestSnapshot(); s != nil && s.id.Offset > int64(len(n.log)) {
		c.resetLog(n, s)
	}
}

// resetLog empties n's log and restarts it at snapshot s, its only
// snapshot (Kafka's truncateToLatestSnapshot).
func (c *Cluster) resetLog(n *node, s *snapshot) {
	off := int(s.id.Offset)
	n.snaps = []*snapshot{s}
	n.applied = s.recs
	n.log = make([]Record, off)
	n.start, n.flushed, n.reported = off, off, off
	c.check.logStartMoved(n)
}

// maybeSnapshot takes a snapshot once n's high watermark is
// Options.SnapshotEvery records past its latest one, then cleans the log
// behind the oldest snapshot it keeps. It runs after every step of n.
func (c *Cluster) maybeSnapshot(n *node) {
	every := int64(c.opts.SnapshotEvery)
	if every <= 0 || c.err != nil || !n.up || n.snapshotting {
		return
	}
	off := n.hwm
	if off > int64(len(n.log)) {
		off = int64(len(n.log))
	}
	var latest int64
	if s := n.latestSnapshot(); s != nil {
		latest = s.id.Offset
	}
	if off < latest+every || off <= int64(n.start) {
		return
	}
	id := kraft.LogEnd{Offset: off, Epoch: n.log[off-1].Epoch}
	// The replicated state up to off: the latest snapshot's records, then
	// the log's after them (the applied records grow in place; the
	// snapshots taken before see only their own prefix).
	n.applied = append(n.applied[:latest], n.log[latest:off]...)
	s := &snapshot{id: id, recs: n.applied[:off:off], voters: n.votersAt(int(off) - 1), served: -1}
	n.snaps = append(n.snaps, s)
	c.stats.SnapshotsTaken++
	c.check.snapshotCreated(n, s)
	n.snapshotting = true
	defer func() { n.snapshotting = false }()
	c.step(n, kraft.SnapshotCreated{Snapshot: id})
	if keep := c.opts.SnapshotsKept; len(n.snaps) > keep && c.err == nil && n.up {
		oldest := len(n.snaps) - keep
		for i := 0; i < oldest; i++ {
			if c.downloading(n.snaps[i]) {
				oldest = i
				break
			}
		}
		if s := n.snaps[oldest]; oldest > 0 || int64(n.start) < s.id.Offset {
			c.deleteBefore(n, s)
			c.step(n, kraft.LogStartMoved{Snapshot: n.snaps[0].id})
		}
	}
}

// downloading reports whether a follower may still be downloading s: its
// host served a chunk of it within Options.SnapshotDownloadHold.
func (c *Cluster) downloading(s *snapshot) bool {
	hold := c.opts.SnapshotDownloadHold
	if hold == 0 {
		hold = c.opts.FetchTimeout
	}
	return hold > 0 && s.served >= 0 && c.now-s.served < hold
}

// deleteBefore deletes every record of n's log before snapshot s and every
// older snapshot (Kafka's deleteBeforeSnapshot). The records below the new
// start are in s, which is durable, so the flushed offset is at least the
// start.
func (c *Cluster) deleteBefore(n *node, s *snapshot) {
	off := int(s.id.Offset)
	for i := n.start; i < off; i++ {
		n.log[i] = Record{}
	}
	i := 0
	for i < len(n.snaps) && n.snaps[i] != s {
		i++
	}
	n.snaps = append([]*snapshot(nil), n.snaps[i:]...)
	n.start = off
	if n.flushed < off {
		n.flushed = off
	}
	if n.reported < off {
		n.reported = off
	}
	c.check.logStartMoved(n)
}

// serveSnapshot builds the FetchSnapshot response of n's step to the
// request req: on NONE, the next chunk of the snapshot read at the
// position, the response's Bytes set to its length.
func (c *Cluster) serveSnapshot(n *node, req *message, a kraft.SendFetchSnapshotResponse) {
	_, ev, _ := kraft.Deliver(n.cfg.Local, a)
	r := ev.(kraft.ReceiveFetchSnapshotResponse)
	m := &message{from: n.id, to: req.from, corr: req.corr, response: true}
	if a.Error == kraft.ErrNone {
		s := n.findSnapshot(a.Snapshot)
		if s == nil || a.Position < 0 || a.Size != int64(len(s.bytes())) || a.Position >= a.Size {
			c.fail(Violation{Node: n.id, Rule: "host-snapshot", Detail: fmt.Sprintf("asked to serve %+v at %d of %d bytes, which the host does not have", a.Snapshot, a.Position, a.Size)})
			return
		}
		chunk := int64(c.opts.SnapshotChunkBytes)
		if eighth := (a.Size + 7) / 8; eighth > chunk {
			chunk = eighth
		}
		end := a.Position + chunk
		if end > a.Size {
			end = a.Size
		}
		m.snapData = s.bytes()[a.Position:end]
		s.served = c.now
		r.Bytes = end - a.Position
	}
	m.event = r
	c.send(m)
}

// writeChunk writes the bytes of the FetchSnapshot response being stepped
// (ctx) into n's partial snapshot at a.Position; position 0 starts a new
// one.
func (c *Cluster) writeChunk(n *node, ctx *message, a kraft.WriteSnapshotChunk) {
	r, ok := ctx.event.(kraft.ReceiveFetchSnapshotResponse)
	switch {
	case !ok || r.Snapshot != a.Snapshot || r.Position != a.Position:
		c.fail(Violation{Node: n.id, Rule: "host-snapshot", Detail: fmt.Sprintf("asked to write %+v at %d, but the response being stepped is %T %+v", a.Snapshot, a.Position, ctx.event, ctx.event)})
		return
	case a.Position == 0:
		n.partial = &partial{id: a.Snapshot, size: r.Size}
	case n.partial == nil || n.partial.id != a.Snapshot || int64(len(n.partial.data)) != a.Position:
		c.fail(Violation{Node: n.id, Rule: "host-snapshot", Detail: fmt.Sprintf("asked to write %+v at %d, but the partial snapshot is %v", a.Snapshot, a.Position, n.partial)})
		return
	}
	n.partial.data = append(n.partial.data, ctx.snapData...)
}

// install freezes n's partial snapshot a.Snapshot and resets the log to it
// (InstallSnapshot: Kafka's freeze and truncateToLatestSnapshot).
func (c *Cluster) install(n *node, a kraft.InstallSnapshot) {
	p := n.partial
	if p == nil || p.id != a.Snapshot || int64(len(p.data)) != p.size {
		c.fail(Violation{Node: n.id, Rule: "host-snapshot", Detail: fmt.Sprintf("asked to install %+v, but the partial snapshot is %v", a.Snapshot, p)})
		return
	}
	recs, voters, err := decodeSnapshotVoters(p.data)
	if err != nil || int64(len(recs)) != a.Snapshot.Offset {
		c.fail(Violation{Node: n.id, Rule: "host-snapshot", Detail: fmt.Sprintf("the downloaded snapshot %+v does not decode to its %d records (%d, %v)", a.Snapshot, a.Snapshot.Offset, len(recs), err)})
		return
	}
	s := &snapshot{id: a.Snapshot, recs: recs[:len(recs):len(recs)], data: p.data, voters: voters, served: -1}
	n.partial = nil
	if voters != nil {
		// Reported once the step's actions are carried out.
		n.snapVoters = &kraft.VoterSetAt{Offset: a.Snapshot.Offset - 1, Voters: voters}
	}
	n.installed++
	c.stats.SnapshotsInstalled++
	c.check.snapshotInstalled(n, s)
	c.resetLog(n, s)
}
