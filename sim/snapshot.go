package sim

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
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
//     with the bytes read at the position, at most
//     Options.SnapshotChunkBytes (a leader that replaced its snapshot
//     before a follower finished downloading it answers
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
}

// bytes are the snapshot's bytes, whose length is its size: the voter set
// (replica.WriteSnapshotVoters), then the records (encodeSnapshot).
func (s *snapshot) bytes() []byte {
	if s.data == nil {
		var b bytes.Buffer
		if s.voters != nil {
			vs := make([]replica.Voter, len(s.voters))
			for i, k := range s.voters {
				vs[i] = replica.Voter{Key: k, KRaftVersions: replica.SupportedKRaftVersions}
			}
			_ = replica.WriteSnapshotVoters(&b, vs)
		}
		b.Write(encodeSnapshot(s.recs))
		s.data = b.Bytes()
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
// have no newline).
func encodeSnapshot(recs []Record) []byte {
	var b bytes.Buffer
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
	var recs []Record
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("record %d has no end", len(recs))
		}
		line := data[:nl]
		data = data[nl+1:]
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("record %d has no epoch", len(recs))
		}
		e, err := strconv.ParseInt(string(line[:sp]), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", len(recs), err)
		}
		recs = append(recs, Record{Epoch: kraft.Epoch(e), Payload: string(line[sp+1:])})
	}
	return recs, nil
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
	case n.start > 0:
		return kraft.LogEnd{Offset: int64(n.start), Epoch: n.startEpoch}
	}
	return kraft.LogEnd{Offset: int64(len(n.log))}
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

// maybeSnapshot takes a snapshot once n's high watermark is
// Options.SnapshotEvery records past its latest one and reports it
// (SnapshotTaken: the replica cleans the log behind the snapshots it
// keeps). It runs after every input of n's replica; true: it took one.
func (c *Cluster) maybeSnapshot(n *node) bool {
	every := int64(c.opts.SnapshotEvery)
	if every <= 0 || c.err != nil || !n.up {
		return false
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
		return false
	}
	id := kraft.LogEnd{Offset: off, Epoch: n.log[off-1].Epoch}
	// The replicated state up to off: the latest snapshot's records, then
	// the log's after them (the applied records grow in place; the
	// snapshots taken before see only their own prefix).
	n.applied = append(n.applied[:latest], n.log[latest:off]...)
	s := &snapshot{id: id, recs: n.applied[:off:off]}
	if c.opts.Dynamic {
		s.voters = n.votersAt(int(off) - 1)
	}
	hostSnapshots{c, n}.add(s)
	c.stats.SnapshotsTaken++
	c.check.snapshotCreated(n, s)
	n.rep.SnapshotTaken(c.now, id)
	return true
}
