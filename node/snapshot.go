package node

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Snapshots in the runtime: serving FetchSnapshot from Config.Snapshots,
// downloading and installing the leader's snapshot, taking the
// application's snapshots and cleaning the log behind them, and the
// restart from a snapshot and the log after it.

// recoverLog completes what a crash may have interrupted, as Kafka's
// KafkaMetadataLog does on open (the kraft.LogState rules), and describes
// the log for kraft.NewState: a snapshot newer than the log end (a
// follower that crashed after freezing a download, before it reset its
// log) resets the log to it; snapshots below the log start (left by a
// crash between a log cleaning or an install and their deletion) are
// deleted. The log's start and the snapshot ids go in the LogState.
func recoverLog(l storage.Log, snaps *storage.Snapshots) (kraft.LogState, error) {
	if snaps == nil {
		ls := l.State()
		ls.Start = l.StartOffset()
		return ls, nil
	}
	if latest, ok := snaps.Latest(); ok && latest.Compare(l.End()) > 0 {
		if err := l.ResetTo(latest); err != nil {
			return kraft.LogState{}, fmt.Errorf("node: resetting the log to the snapshot %+v: %w", latest, err)
		}
	}
	start := l.StartOffset()
	for _, id := range snaps.List() {
		if id.Offset < start {
			if err := snaps.Delete(id); err != nil {
				return kraft.LogState{}, fmt.Errorf("node: deleting the snapshot %+v below the log start %d: %w", id, start, err)
			}
		}
	}
	ls := l.State()
	ls.Start = start
	if id, ok := snaps.Latest(); ok {
		ls.LatestSnapshot = &id
	}
	if id, ok := snaps.Earliest(); ok {
		ls.EarliestSnapshot = &id
	}
	return ls, nil
}

// snapshotSize is the size of the snapshot id for a FetchSnapshot request,
// -1 if there is no such snapshot. The first look-up of a snapshot reads
// it whole to verify its checksum (storage.Snapshots.Size), on the loop.
func (n *Node) snapshotSize(id kraft.LogEnd) int64 {
	if n.cfg.Snapshots == nil {
		return -1
	}
	size, err := n.cfg.Snapshots.Size(id)
	if err != nil {
		if !errors.Is(err, storage.ErrSnapshotNotFound) {
			n.cfg.Logf("node %d: snapshot %+v cannot be served: %v", n.local.ID, id, err)
		}
		return -1
	}
	return size
}

// fetchSnapshotResponse answers a FetchSnapshot request: on NONE with the
// snapshot's bytes from the position on, at most SnapshotChunkBytes.
func (n *Node) fetchSnapshotResponse(a kraft.SendFetchSnapshotResponse) {
	var chunk []byte
	if a.Error == kraft.ErrNone && n.cfg.Snapshots != nil {
		b, err := n.cfg.Snapshots.Read(a.Snapshot, a.Position, n.cfg.SnapshotChunkBytes)
		if err != nil {
			n.fail(fmt.Errorf("node: reading snapshot %+v at %d: %w", a.Snapshot, a.Position, err))
			return
		}
		chunk = b
		if a.Position+int64(len(b)) < a.Size {
			n.served[a.Snapshot] = n.now()
		} else if _, held := n.served[a.Snapshot]; held {
			// The last chunk: the download is over, the log can be cleaned.
			delete(n.served, a.Snapshot)
			n.internalCall(n.clean)
		}
	}
	n.respond(a, nil, chunk)
}

// onFetchSnapshotResponse steps a FetchSnapshot response, with Bytes the
// length of the chunk it carries, before the chunk is written anywhere:
// WriteSnapshotChunk writes it. When the step sends no next request (an
// error answer, a chunk that does not fit), the latest request goes again
// after the retry backoff, as a Fetch does.
func (n *Node) onFetchSnapshotResponse(r kraft.ReceiveFetchSnapshotResponse, chunk []byte) {
	r.Bytes = int64(len(chunk))
	n.chunk = chunk
	n.sentFetch = false
	n.step(r)
	n.chunk = nil
	if !n.sentFetch {
		n.retryFetch()
	}
}

// writeChunk writes the chunk being stepped at its position of the
// snapshot being downloaded; position 0 starts a new download, replacing
// an earlier partial one.
func (n *Node) writeChunk(a kraft.WriteSnapshotChunk) error {
	if n.cfg.Snapshots == nil {
		return fmt.Errorf("node: the leader sends snapshot %+v, but Config.Snapshots is nil", a.Snapshot)
	}
	if a.Position == 0 {
		n.abortDownload()
		w, err := n.cfg.Snapshots.Create(a.Snapshot)
		if err != nil {
			return fmt.Errorf("node: downloading snapshot %+v: %w", a.Snapshot, err)
		}
		n.partial = w
	}
	w := n.partial
	if w == nil || w.ID() != a.Snapshot || w.Size() != a.Position {
		return fmt.Errorf("node: a chunk of snapshot %+v at %d does not continue the download", a.Snapshot, a.Position)
	}
	if err := w.Append(n.chunk); err != nil {
		return fmt.Errorf("node: downloading snapshot %+v: %w", a.Snapshot, err)
	}
	return nil
}

// abortDownload drops the partial snapshot, if any.
func (n *Node) abortDownload() {
	if n.partial != nil {
		_ = n.partial.Abort()
		n.partial = nil
	}
}

// install finishes a download in the order a crash can resume from
// (recoverLog): the snapshot is frozen (durable), the log is reset to
// start and end at it, every other snapshot is deleted, and the
// application is handed the snapshot before any later record.
func (n *Node) install(id kraft.LogEnd) error {
	w := n.partial
	if w == nil || w.ID() != id {
		return fmt.Errorf("node: installing snapshot %+v, which is not being downloaded", id)
	}
	n.partial = nil
	if err := w.Freeze(); err != nil {
		return fmt.Errorf("node: freezing the downloaded snapshot %+v: %w", id, err)
	}
	if err := n.cfg.Log.ResetTo(id); err != nil {
		return fmt.Errorf("node: resetting the log to the snapshot %+v: %w", id, err)
	}
	for _, old := range n.cfg.Snapshots.List() {
		if old != id {
			if err := n.cfg.Snapshots.Delete(old); err != nil {
				return fmt.Errorf("node: deleting snapshot %+v: %w", old, err)
			}
		}
	}
	n.served = map[kraft.LogEnd]time.Time{}
	n.installed++
	n.cfg.Logf("node %d: installed snapshot %+v from the leader", n.local.ID, id)
	// After the reset: the applier reads the log from the snapshot on.
	n.commitMu.Lock()
	n.restore = &id
	n.commitCond.Broadcast()
	n.commitMu.Unlock()
	return nil
}

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
	if !n.static {
		if vs, app, err = readSnapshotVoters(r); err != nil {
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
	if voters != nil {
		if err := writeSnapshotVoters(w, voters); err != nil {
			_ = w.Abort()
			n.fail(fmt.Errorf("node: writing snapshot %+v: %w", id, err))
			return
		}
	}
	if err := n.cfg.Snapshot(id, w); err != nil {
		_ = w.Abort()
		n.cfg.Logf("node %d: Snapshot up to %+v failed, dropped: %v", n.local.ID, id, err)
		return
	}
	if err := w.Freeze(); err != nil {
		n.fail(fmt.Errorf("node: freezing snapshot %+v: %w", id, err))
		return
	}
	// The first Size reads the whole snapshot to verify its checksum: here,
	// rather than on the loop when a follower first asks for it.
	if _, err := n.cfg.Snapshots.Size(id); err != nil {
		if !errors.Is(err, storage.ErrSnapshotNotFound) { // else an install deleted it
			n.fail(fmt.Errorf("node: reading back snapshot %+v: %w", id, err))
		}
		return
	}
	n.internalCall(func() { n.snapshotTaken(id) })
}

// snapshotTaken reports a snapshot the applier wrote in the host
// contract's order: SnapshotCreated, then the log cleaned behind it
// (clean). A snapshot that an installed one overtook (below the log start
// now) is deleted instead.
func (n *Node) snapshotTaken(id kraft.LogEnd) {
	if n.Err() != nil {
		return
	}
	if id.Offset < n.st.LogStart() {
		if err := n.cfg.Snapshots.Delete(id); err != nil && !errors.Is(err, storage.ErrSnapshotNotFound) {
			n.fail(fmt.Errorf("node: deleting snapshot %+v: %w", id, err))
		}
		return
	}
	n.step(kraft.SnapshotCreated{Snapshot: id})
	if n.Err() != nil {
		return
	}
	n.taken++
	n.clean()
}

// clean deletes the log before the snapshot it can be cleaned to
// (cleanTo) and reports it (LogStartMoved), then deletes the snapshots
// older than that one: the host contract's order. When a download holds
// the log start back, it runs again once the hold lapses.
func (n *Node) clean() {
	latest, ok := n.st.LatestSnapshot()
	if !ok || n.Err() != nil {
		return
	}
	to, until := n.cleanTo(latest)
	if !until.IsZero() && n.cleanTimer == nil {
		n.cleanTimer = n.afterFunc(until.Sub(n.now()), func() {
			n.cleanTimer = nil
			n.clean()
		})
	}
	if to.Offset <= n.st.LogStart() {
		return
	}
	if err := n.cfg.Log.DeleteBefore(to.Offset); err != nil {
		n.fail(fmt.Errorf("node: deleting the log before %d: %w", to.Offset, err))
		return
	}
	n.step(kraft.LogStartMoved{Snapshot: to})
	if n.Err() != nil {
		return
	}
	if err := n.cfg.Snapshots.DeleteBefore(to); err != nil {
		n.fail(fmt.Errorf("node: deleting snapshots before %+v: %w", to, err))
		return
	}
	for s := range n.served {
		if s.Compare(to) < 0 {
			delete(n.served, s)
		}
	}
}

// cleanTo is the snapshot the log can be cleaned to, given the latest
// snapshot: the latest, or the oldest snapshot a follower may still be
// downloading (a chunk of it but not the last served within the fetch
// timeout, after which the follower would look for another leader
// anyway); until is when that hold lapses (zero: none). Deleting such a
// snapshot would answer the follower's next chunk SNAPSHOT_NOT_FOUND and
// make it start over with the newest snapshot; with snapshots taken
// faster than a download takes, it would never catch up (the README's
// host contract: keep a snapshot while it is downloaded; docs/design.md
// D62). The log start lags until the download is over.
func (n *Node) cleanTo(latest kraft.LogEnd) (to kraft.LogEnd, until time.Time) {
	hold := n.cfg.Kraft.FetchTimeout
	if hold == 0 {
		hold = kraft.DefaultFetchTimeout
	}
	now, start := n.now(), n.st.LogStart()
	to = latest
	for s, at := range n.served {
		if now.Sub(at) >= hold {
			delete(n.served, s)
			continue
		}
		if s.Offset < start || s.Compare(latest) >= 0 {
			continue
		}
		if s.Compare(to) < 0 {
			to = s
		}
		if end := at.Add(hold); until.IsZero() || end.Before(until) {
			until = end
		}
	}
	return to, until
}
