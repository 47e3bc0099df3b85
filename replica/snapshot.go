package replica

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Snapshots: serving FetchSnapshot, downloading and installing the
// leader's snapshot, reporting the host's snapshots and cleaning the log
// behind them, and completing at start what a crash interrupted.

// Snapshots keeps a replica's snapshots (storage.Snapshots through
// StorageSnapshots). Lookups of a missing snapshot fail with
// storage.ErrSnapshotNotFound.
type Snapshots interface {
	List() []kraft.LogEnd
	Latest() (kraft.LogEnd, bool)
	Earliest() (kraft.LogEnd, bool)
	// Size is the snapshot's size in bytes.
	Size(id kraft.LogEnd) (int64, error)
	// Read reads up to maxBytes of the snapshot from position on.
	Read(id kraft.LogEnd, position int64, maxBytes int) ([]byte, error)
	Open(id kraft.LogEnd) (io.ReadCloser, error)
	// Create starts a partial snapshot (a download).
	Create(id kraft.LogEnd) (SnapshotWriter, error)
	Delete(id kraft.LogEnd) error
	// DeleteBefore deletes every snapshot older than id.
	DeleteBefore(id kraft.LogEnd) error
}

// SnapshotWriter is a partial snapshot being written.
type SnapshotWriter interface {
	ID() kraft.LogEnd
	Size() int64
	Append(chunk []byte) error
	// Freeze makes it a durable, immutable snapshot.
	Freeze() error
	Abort() error
}

// StorageSnapshots is a storage.Snapshots as Snapshots.
func StorageSnapshots(s *storage.Snapshots) Snapshots { return storageSnapshots{s} }

type storageSnapshots struct{ *storage.Snapshots }

func (s storageSnapshots) Create(id kraft.LogEnd) (SnapshotWriter, error) {
	w, err := s.Snapshots.Create(id)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// snapshots is the layer's snapshot work in progress.
type snapshots struct {
	partial   SnapshotWriter // the snapshot being downloaded
	chunk     []byte         // the bytes of the FetchSnapshot response being stepped
	installed int            // snapshots installed from the leader
	taken     int            // snapshots the host took and reported
	// served is when a FetchSnapshot chunk of each snapshot was last
	// served, the last chunk included: such a snapshot is kept while newer
	// ones are taken, for the hold after it (cleanTo). Entries go with
	// their snapshot or when their hold lapses.
	served map[kraft.LogEnd]time.Duration
	// cleanAt is when a download's hold on the log start lapses and the
	// log is cleaned again; 0: none.
	cleanAt time.Duration
}

// SnapshotCounts are the snapshots the host took and reported and the
// ones installed from the leader, since New.
func (r *Replica) SnapshotCounts() (taken, installed int) { return r.snap.taken, r.snap.installed }

// recoverLog completes what a crash may have interrupted, as Kafka's
// KafkaMetadataLog does on open (the kraft.LogState rules), and describes
// the log for kraft.NewState: a snapshot newer than the log end (a
// follower that crashed after freezing a download, before it reset its
// log) resets the log to it; snapshots below the log start (left by a
// crash between a log cleaning or an install and their deletion) are
// deleted.
func recoverLog(l storage.Log, snaps Snapshots) (kraft.LogState, error) {
	if snaps == nil {
		ls := l.State()
		ls.Start = l.StartOffset()
		return ls, nil
	}
	if latest, ok := snaps.Latest(); ok && latest.Compare(l.End()) > 0 {
		if err := l.ResetTo(latest); err != nil {
			return kraft.LogState{}, fmt.Errorf("replica: resetting the log to the snapshot %+v: %w", latest, err)
		}
	}
	start := l.StartOffset()
	for _, id := range snaps.List() {
		if id.Offset < start {
			if err := snaps.Delete(id); err != nil {
				return kraft.LogState{}, fmt.Errorf("replica: deleting the snapshot %+v below the log start %d: %w", id, start, err)
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
// -1 if there is no such snapshot.
func (r *Replica) snapshotSize(id kraft.LogEnd) int64 {
	if r.cfg.Snapshots == nil {
		return -1
	}
	size, err := r.cfg.Snapshots.Size(id)
	if err != nil {
		if !errors.Is(err, storage.ErrSnapshotNotFound) {
			r.cfg.Logf("replica %d: snapshot %+v cannot be served: %v", r.local.ID, id, err)
		}
		return -1
	}
	return size
}

// fetchSnapshotResponse answers a FetchSnapshot request: on NONE with the
// snapshot's bytes from the position on, at most SnapshotChunkBytes.
func (r *Replica) fetchSnapshotResponse(a kraft.SendFetchSnapshotResponse) {
	var chunk []byte
	if a.Error == kraft.ErrNone && r.cfg.Snapshots != nil {
		b, err := r.cfg.Snapshots.Read(a.Snapshot, a.Position, r.cfg.SnapshotChunkBytes)
		if err != nil {
			r.fail(fmt.Errorf("replica: reading snapshot %+v at %d: %w", a.Snapshot, a.Position, err))
			return
		}
		chunk = b
		// Every chunk, the last one too, renews the hold (D62, D210):
		// after the last chunk the follower installs the snapshot and
		// fetches from its end, which must still be in the log; cleaning
		// at once would send it for the newer snapshot, again and again
		// while snapshots come faster than a download.
		put(&r.snap.served, a.Snapshot, r.now)
	}
	r.respond(a, nil, chunk)
}

// onFetchSnapshotResponse steps a FetchSnapshot response, with Bytes the
// length of the chunk it carries, before the chunk is written anywhere:
// WriteSnapshotChunk writes it. When the step sends no next request (an
// error answer, a chunk that does not fit), the latest request goes again
// after the retry backoff, as a Fetch does; not when the step refused the
// leader (a snapshot that would remove committed records: D113), whose
// answer would be the same.
func (r *Replica) onFetchSnapshotResponse(resp kraft.ReceiveFetchSnapshotResponse, chunk []byte) {
	resp.Bytes = int64(len(chunk))
	r.snap.chunk = chunk
	r.sentFetch, r.refusing = false, false
	r.step(resp)
	r.snap.chunk = nil
	if !r.sentFetch && !r.refusing {
		r.retryFetch()
	}
}

// writeChunk writes the chunk being stepped at its position of the
// snapshot being downloaded; position 0 starts a new download, replacing
// an earlier partial one.
func (r *Replica) writeChunk(a kraft.WriteSnapshotChunk) error {
	if r.cfg.Snapshots == nil {
		return fmt.Errorf("replica: the leader sends snapshot %+v, but there is no snapshot store", a.Snapshot)
	}
	if a.Position == 0 {
		r.abortDownload()
		w, err := r.cfg.Snapshots.Create(a.Snapshot)
		if err != nil {
			return fmt.Errorf("replica: downloading snapshot %+v: %w", a.Snapshot, err)
		}
		r.snap.partial = w
	}
	w := r.snap.partial
	if w == nil || w.ID() != a.Snapshot || w.Size() != a.Position {
		return fmt.Errorf("replica: a chunk of snapshot %+v at %d does not continue the download", a.Snapshot, a.Position)
	}
	if err := w.Append(r.snap.chunk); err != nil {
		return fmt.Errorf("replica: downloading snapshot %+v: %w", a.Snapshot, err)
	}
	return nil
}

// Close drops the partial download, if any (the host closes its storage).
func (r *Replica) Close() { r.abortDownload() }

func (r *Replica) abortDownload() {
	if r.snap.partial != nil {
		_ = r.snap.partial.Abort()
		r.snap.partial = nil
	}
}

// install finishes a download in the order a crash can resume from
// (recoverLog): the snapshot is frozen (durable), the log is reset to
// start and end at it, every other snapshot is deleted; the host is told
// (Installed) before it is handed any later record, and the state the
// snapshot's voter set.
func (r *Replica) install(id kraft.LogEnd) error {
	w := r.snap.partial
	if w == nil || w.ID() != id {
		return fmt.Errorf("replica: installing snapshot %+v, which is not being downloaded", id)
	}
	r.snap.partial = nil
	if err := w.Freeze(); err != nil {
		return fmt.Errorf("replica: freezing the downloaded snapshot %+v: %w", id, err)
	}
	if err := r.cfg.Log.ResetTo(id); err != nil {
		return fmt.Errorf("replica: resetting the log to the snapshot %+v: %w", id, err)
	}
	for _, old := range r.cfg.Snapshots.List() {
		if old != id {
			if err := r.cfg.Snapshots.Delete(old); err != nil {
				return fmt.Errorf("replica: deleting snapshot %+v: %w", old, err)
			}
		}
	}
	r.snap.served = map[kraft.LogEnd]time.Duration{}
	r.snap.installed++
	r.cfg.Logf("replica %d: installed snapshot %+v from the leader", r.local.ID, id)
	r.emit(Installed{Snapshot: id})
	return r.installedVoters(id)
}

// SnapshotTaken reports at time now a snapshot the host wrote and froze
// (of the committed records below id.Offset), in the host contract's
// order: SnapshotCreated, then the log cleaned behind it (clean). A
// snapshot that an installed one overtook (below the log start now) is
// deleted instead.
func (r *Replica) SnapshotTaken(now time.Duration, id kraft.LogEnd) {
	if !r.input(now) {
		return
	}
	if id.Offset < r.st.LogStart() {
		if err := r.cfg.Snapshots.Delete(id); err != nil && !errors.Is(err, storage.ErrSnapshotNotFound) {
			r.fail(fmt.Errorf("replica: deleting snapshot %+v: %w", id, err))
		}
		return
	}
	r.step(kraft.SnapshotCreated{Snapshot: id})
	if r.err != nil {
		return
	}
	r.snap.taken++
	r.clean()
	r.settle()
}

// clean deletes the log before the snapshot it can be cleaned to
// (cleanTo) and reports it (LogStartMoved), then deletes the snapshots
// older than that one: the host contract's order. When a download holds
// the log start back, it runs again once the hold lapses.
func (r *Replica) clean() {
	latest, ok := r.st.LatestSnapshot()
	if !ok || r.err != nil || r.cfg.Snapshots == nil {
		return
	}
	if k := r.cfg.SnapshotsKept; k > 1 {
		// The oldest of the k latest snapshots (all of them while fewer).
		ids := r.cfg.Snapshots.List()
		if len(ids) > k {
			latest = ids[len(ids)-k]
		} else if len(ids) > 0 {
			latest = ids[0]
		}
	}
	to, until := r.cleanTo(latest)
	if until != 0 && (r.snap.cleanAt == 0 || until < r.snap.cleanAt) {
		r.snap.cleanAt = until
	}
	if to.Offset <= r.st.LogStart() {
		return
	}
	if err := r.cfg.Log.DeleteBefore(to.Offset); err != nil {
		r.fail(fmt.Errorf("replica: deleting the log before %d: %w", to.Offset, err))
		return
	}
	r.step(kraft.LogStartMoved{Snapshot: to})
	if r.err != nil {
		return
	}
	if err := r.cfg.Snapshots.DeleteBefore(to); err != nil {
		r.fail(fmt.Errorf("replica: deleting snapshots before %+v: %w", to, err))
		return
	}
	for s := range r.snap.served {
		if s.Compare(to) < 0 {
			delete(r.snap.served, s)
		}
	}
}

// cleanTo is the snapshot the log can be cleaned to, given the latest
// snapshot: the latest, or the oldest snapshot a follower may still be
// downloading or installing (a chunk of it, the last one included, served
// within the hold: the fetch timeout by default, after which the follower
// would look for another leader anyway); until is when that hold lapses
// (0: none). Deleting such a
// snapshot would answer the follower's next chunk SNAPSHOT_NOT_FOUND and
// make it start over with the newest snapshot; with snapshots taken
// faster than a download takes, it would never catch up (the README's
// host contract: keep a snapshot while it is downloaded; docs/design.md
// D62). The log start lags until the download is over.
func (r *Replica) cleanTo(latest kraft.LogEnd) (to kraft.LogEnd, until time.Duration) {
	hold := r.cfg.SnapshotDownloadHold
	if hold == 0 {
		hold = r.cfg.Kraft.FetchTimeout
	}
	if hold == 0 {
		hold = kraft.DefaultFetchTimeout
	}
	if hold < 0 {
		return latest, 0
	}
	start := r.st.LogStart()
	to = latest
	for s, at := range r.snap.served {
		if r.now-at >= hold {
			delete(r.snap.served, s)
			continue
		}
		if s.Offset < start || s.Compare(latest) >= 0 {
			continue
		}
		if s.Compare(to) < 0 {
			to = s
		}
		if end := at + hold; until == 0 || end < until {
			until = end
		}
	}
	return to, until
}
