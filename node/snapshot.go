package node

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// Snapshots in the runtime: the application's side. Serving, downloading
// and installing snapshots and cleaning the log behind them are the
// replica layer's (package replica); here the applier hands snapshots to
// Restore and has Snapshot write them.

// restoreSnapshot hands the snapshot id to Restore, and reads it to the
// end so that its checksum is verified even if Restore stops early. A
// snapshot deleted meanwhile is skipped when a newer one is waiting. It
// returns the voter set the snapshot holds (nil: none), which the
// snapshots the applier takes need (Config.Snapshot needs Restore).
func (n *Node) restoreSnapshot(id kraft.LogEnd) ([]Voter, error) {
	if n.cfg.Restore == nil {
		return nil, nil
	}
	r, err := n.cfg.Snapshots.Open(id)
	if errors.Is(err, storage.ErrSnapshotNotFound) {
		n.commitMu.Lock()
		newer := n.restore != nil
		n.commitMu.Unlock()
		if newer {
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("node: opening snapshot %+v: %w", id, err)
	}
	defer func() { _ = r.Close() }() // a read-only file: a close error changes nothing
	var vs []Voter
	var app io.Reader = r
	switch {
	case n.static:
	case n.cfg.SnapshotVoters != nil:
		if vs, err = n.snapshotVoters(id); err != nil {
			return nil, err
		}
	default:
		if vs, app, err = replica.ReadSnapshotVoters(r); err != nil {
			return nil, fmt.Errorf("node: snapshot %+v: %w", id, err)
		}
	}
	if err := n.cfg.Restore(id, app); err != nil {
		return nil, fmt.Errorf("node: Restore of snapshot %+v: %w", id, err)
	}
	if _, err := io.Copy(io.Discard, app); err != nil {
		return nil, fmt.Errorf("node: reading snapshot %+v: %w", id, err)
	}
	return vs, nil
}

// takeSnapshot writes the application's snapshot up to id (from the
// applier, off the loop) and hands it to the loop. voters is the voter set
// in force at id (nil for a static one): the snapshot holds it before the
// application's bytes.
func (n *Node) takeSnapshot(id kraft.LogEnd, voters []Voter) {
	w, err := n.cfg.Snapshots.Create(id)
	if errors.Is(err, storage.ErrSnapshotExists) {
		return // installed or taken already
	}
	if err != nil {
		n.fail(fmt.Errorf("node: creating snapshot %+v: %w", id, err))
		return
	}
	var out io.Writer = w
	if n.cfg.SnapshotVoters != nil {
		out = votersWriter{Writer: w, voters: voters}
	} else if voters != nil {
		if err := replica.WriteSnapshotVoters(w, voters); err != nil {
			_ = w.Abort()
			n.fail(fmt.Errorf("node: writing snapshot %+v: %w", id, err))
			return
		}
	}
	if err := n.cfg.Snapshot(id, out); err != nil {
		_ = w.Abort()
		n.logEvent(slog.LevelWarn, EventSnapshotFailed, adviceSnapshot, fmt.Sprintf("Snapshot up to offset %d failed, dropped: %v", id.Offset, err),
			"offset", id.Offset, "epoch", int32(id.Epoch), "err", err.Error())
		return
	}
	if err := w.Freeze(); err != nil {
		n.fail(fmt.Errorf("node: freezing snapshot %+v: %w", id, err))
		return
	}
	// The first Size reads the whole snapshot to verify its checksum: here,
	// rather than on the loop when a follower first asks for it.
	size, err := n.cfg.Snapshots.Size(id)
	if err != nil {
		if !errors.Is(err, storage.ErrSnapshotNotFound) { // else an install deleted it
			n.fail(fmt.Errorf("node: reading back snapshot %+v: %w", id, err))
		}
		return
	}
	n.logEvent(slog.LevelInfo, EventSnapshotTaken, "", fmt.Sprintf("took a snapshot up to offset %d (epoch %d, %d bytes)", id.Offset, id.Epoch, size),
		"offset", id.Offset, "epoch", int32(id.Epoch), "bytes", size)
	n.internalCall(func() { n.r.SnapshotTaken(n.clock(), id) })
}

// snapshotVoters reads the voter set of the snapshot id with
// Config.SnapshotVoters (a second reading of the file: Restore reads it
// whole too).
func (n *Node) snapshotVoters(id kraft.LogEnd) ([]Voter, error) {
	r, err := n.cfg.Snapshots.Open(id)
	if err != nil {
		return nil, fmt.Errorf("node: opening snapshot %+v: %w", id, err)
	}
	defer func() { _ = r.Close() }()
	vs, err := n.cfg.SnapshotVoters(r)
	if err != nil {
		return nil, fmt.Errorf("node: the voter set of snapshot %+v: %w", id, err)
	}
	return vs, nil
}

// votersWriter is the writer Snapshot gets with Config.SnapshotVoters:
// the snapshot file and the voter set in force at the snapshot's end.
type votersWriter struct {
	io.Writer
	voters []Voter
}

// SnapshotVotersOf is the voter set in force at the end of the snapshot
// that Config.Snapshot writes to w, when Config.SnapshotVoters is set: the
// snapshot is to hold it (nil: a static voter set, none to hold).
func SnapshotVotersOf(w io.Writer) []Voter {
	if vw, ok := w.(votersWriter); ok {
		return vw.voters
	}
	return nil
}
