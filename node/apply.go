package node

import (
	"errors"
	"fmt"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// applier hands committed records to OnCommit, in order, from its own
// goroutine so the loop never waits for it. It first restores latest (the
// latest snapshot at Start, if any) and reports on restored, where Start
// waits before it starts the loop: an error there fails Start. A snapshot
// installed later goes to Restore the same way, and the records follow
// from its end; every SnapshotEvery offsets it has the application write
// a snapshot (takeSnapshot).
func (n *Node) applier(latest *kraft.LogEnd, restored chan<- error) {
	defer close(n.applierOut)
	var next, lastSnap int64
	var lastEpoch kraft.Epoch
	blocked := false // the log was reset under the reader: wait for its restore
	// voters is the voter set in force after the records applied, which
	// the snapshots hold (nil: a static voter set).
	voters := n.boot
	if latest != nil {
		vs, err := n.restoreSnapshot(*latest)
		if err != nil {
			restored <- err
			return
		}
		if vs != nil {
			voters = vs
		}
		next, lastEpoch, lastSnap = latest.Offset, latest.Epoch, latest.Offset
		n.appliedTo(next)
	}
	restored <- nil
	for {
		n.commitMu.Lock()
		for n.commitHWM != stopApplier && n.restore == nil && (blocked || n.commitHWM <= next) {
			n.commitCond.Wait()
		}
		hwm, restore := n.commitHWM, n.restore
		n.restore = nil
		n.commitMu.Unlock()
		if hwm == stopApplier {
			return
		}
		if restore != nil {
			vs, err := n.restoreSnapshot(*restore)
			if err != nil {
				n.fail(err)
				return
			}
			if vs != nil {
				voters = vs
			}
			next, lastEpoch, lastSnap, blocked = restore.Offset, restore.Epoch, restore.Offset, false
			n.appliedTo(next)
			continue
		}
		entries, shared, err := n.readCommitted(next)
		if errors.Is(err, storage.ErrBelowStart) {
			// An installed snapshot reset the log; its restore follows.
			blocked = true
			continue
		}
		if err != nil {
			if errors.Is(err, storage.ErrClosed) {
				return
			}
			n.fail(fmt.Errorf("node: reading committed records: %w", err))
			return
		}
		var out []Record
		out, next, lastEpoch, voters, err = n.committedRecords(entries, shared, hwm, next, lastEpoch, voters)
		if err != nil {
			n.fail(err)
			return
		}
		if len(out) > 0 && n.cfg.OnCommit != nil {
			n.cfg.OnCommit(out)
		}
		n.appliedTo(next)
		if n.cfg.Snapshot != nil && next-lastSnap >= n.cfg.SnapshotEvery {
			lastSnap = next
			n.takeSnapshot(kraft.LogEnd{Offset: next, Epoch: lastEpoch}, voters)
		}
	}
}

// committedRecords takes the applier's entries below hwm: the data
// records to hand to OnCommit, the offset and epoch after the last entry
// taken (from next and lastEpoch on), and the voter set in force after
// it (from voters on, following the VotersRecords).
func (n *Node) committedRecords(entries []storage.Entry, shared bool, hwm, next int64, lastEpoch kraft.Epoch, voters []Voter) ([]Record, int64, kraft.Epoch, []Voter, error) {
	var out []Record
	for _, e := range entries {
		if e.Offset >= hwm {
			break
		}
		next, lastEpoch = e.Offset+1, e.Epoch
		if len(e.Data) > 0 && e.Data[0] == recordData {
			data := e.Data[1:]
			if shared && !n.cfg.ShareCommitted && n.cfg.OnCommit != nil {
				// D148: a copy only for an OnCommit that may modify it.
				data = make([]byte, len(e.Data)-1)
				copy(data, e.Data[1:])
			}
			out = append(out, Record{Offset: e.Offset, Epoch: e.Epoch, Data: data})
		}
		if replica.IsVotersRecord(e.Data) {
			vs, err := replica.DecodeVoters(e.Data[1:])
			if err != nil {
				return nil, 0, 0, nil, fmt.Errorf("node: the committed VotersRecord at %d: %w", e.Offset, err)
			}
			voters = vs
		}
	}
	return out, next, lastEpoch, voters, nil
}

// readCommitted reads the log from next on for the applier; shared says
// that the entries' Data are the log's own (storage.SharedReader), so the
// applier copies the payloads it hands to OnCommit and no others. A
// copying Read would also copy the records past the high watermark, which
// the applier reads again once they commit: under many concurrent appends
// the log end runs tens of records ahead of the high watermark, and most
// of the bytes copied were thrown away.
func (n *Node) readCommitted(next int64) (entries []storage.Entry, shared bool, err error) {
	if sr, ok := n.cfg.Log.(storage.SharedReader); ok {
		entries, err = sr.ReadShared(next, n.cfg.FetchMaxBytes)
		return entries, true, err
	}
	entries, err = n.cfg.Log.Read(next, n.cfg.FetchMaxBytes)
	return entries, false, err
}
