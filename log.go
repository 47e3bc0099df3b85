package kraft

import "fmt"

// LogState describes the local log at start: its end and its epoch history
// (Kafka's leader-epoch cache), the first offset of each epoch in ascending
// order, and, once the host takes snapshots, the log start offset and the
// snapshots on disk. An empty Epochs with End.Offset > Start is read as a
// log whose records all belong to End.Epoch. The host passes the log it
// recovered from disk and made durable (a sync on open), so every record of
// it counts as flushed.
//
// Snapshots (docs/design.md D42): Start is the offset of the first record
// the log holds (Kafka's log start offset; 0 for a log that was never
// cleaned). LatestSnapshot and EarliestSnapshot are the newest and oldest
// snapshot ids on disk (end offset and epoch, Kafka's latestSnapshotId and
// earliestSnapshotId), nil when there is none; with one snapshot both name
// it. A log whose start is past 0 has a snapshot at its start: the earliest.
// Before NewState the host completes what a crash may have interrupted, as
// Kafka's KafkaMetadataLog does on open: a snapshot whose end is past the
// log end (a follower that crashed after a download, before it reset its
// log) makes the host reset the log to start and end at that snapshot; a
// partial snapshot is deleted.
type LogState struct {
	End    LogEnd
	Epochs []EpochStart

	Start            int64
	LatestSnapshot   *LogEnd
	EarliestSnapshot *LogEnd

	// VoterSets are the voter sets the host found in the log, in offset
	// order: the bootstrap checkpoint's (offset -1), the latest snapshot's
	// (its end offset minus one) and every VotersRecord of the log past
	// the latest snapshot's end. Empty
	// for a quorum with a static voter set (kraft.version 0; docs/design.md
	// D50).
	VoterSets []VoterSetAt
}

// logView is the state's picture of the local log: what it needs to decide
// alone (vote comparisons, fetch positions, divergence, truncation). It
// keeps the log as Kafka does (docs/design.md D30): end is the written log
// end (every record the host wrote, flushed or not; Kafka's log end offset)
// and flushed is the offset below which every record is durable (flushed
// <= end.Offset); h is the rest: the epoch history, the log start and the
// snapshot ids (logHistory).
//
// The methods that answer questions take a pointer, so the hot paths do
// not copy the view; those that return a changed view (appended, truncated,
// withSnapshot, startingAt, resetTo) take a value and leave the receiver as
// it was.
type logView struct {
	end     LogEnd
	flushed int64
	// h is the rest of the log's picture: its epochs, start and
	// snapshots. It is shared between states and never written: a change
	// makes a new one. It changes once per epoch, truncation or snapshot,
	// while a State is copied on every step, so the State keeps a pointer.
	// nil is the history of a log that starts at 0 with no epoch and no
	// snapshot (every other history is non-nil: one value, one encoding).
	h *logHistory
}

// logHistory is a log's epoch history (the first offset of each epoch in
// ascending order), its start offset and, when snapshots is set, the newest
// and oldest snapshot ids on disk (D42). Every epoch entry starts at or
// after start; an empty log that starts at a snapshot has no entries and
// ends at the snapshot id.
type logHistory struct {
	epochs           []EpochStart
	start            int64
	snapshots        bool
	latest, earliest LogEnd
	// voters are the voter sets found in the log, by offset (Kafka's
	// VoterSetHistory): the last one is in force. Of the sets below the
	// log start only the last is kept: the one in force at start-1, which
	// no truncation can remove (votersTrimmed, D56).
	voters []VoterSetAt
}

// history is a copy of the view's history, to change and set with
// withHistory.
func (v *logView) history() logHistory {
	if v.h == nil {
		return logHistory{}
	}
	return *v.h
}

// withHistory sets the view's history to h (nil for the empty one).
func (v *logView) withHistory(h logHistory) {
	if len(h.epochs) == 0 && h.start == 0 && !h.snapshots && h.latest == (LogEnd{}) && h.earliest == (LogEnd{}) && len(h.voters) == 0 {
		v.h = nil
		return
	}
	if len(h.epochs) == 0 {
		h.epochs = nil
	}
	if len(h.voters) == 0 {
		h.voters = nil
	}
	v.h = &h
}

func (v *logView) epochs() []EpochStart {
	if v.h == nil {
		return nil
	}
	return v.h.epochs
}

// start is the log start offset.
func (v *logView) start() int64 {
	if v.h == nil {
		return 0
	}
	return v.h.start
}

func (v *logView) hasSnapshots() bool { return v.h != nil && v.h.snapshots }

// latest is the latest snapshot id (the zero id when there is none).
func (v *logView) latest() LogEnd {
	if v.h == nil {
		return LogEnd{}
	}
	return v.h.latest
}

// earliest is the earliest snapshot id (the zero id when there is none).
func (v *logView) earliest() LogEnd {
	if v.h == nil {
		return LogEnd{}
	}
	return v.h.earliest
}

// bootstrapSnapshot is Kafka's bootstrap checkpoint id (0, 0): never
// replicated (KafkaRaftClient.BOOTSTRAP_SNAPSHOT_ID).
var bootstrapSnapshot = LogEnd{}

func newLogView(l LogState) (logView, error) {
	if l.End.Offset < 0 || l.End.Epoch < 0 {
		return logView{}, fmt.Errorf("kraft: log end %+v is negative", l.End)
	}
	if l.Start < 0 || l.Start > l.End.Offset {
		return logView{}, fmt.Errorf("kraft: log start %d outside the log [0, %d]", l.Start, l.End.Offset)
	}
	v := logView{end: l.End, flushed: l.End.Offset}
	voters, err := checkVoterSets(l)
	if err != nil {
		return logView{}, err
	}
	h := logHistory{start: l.Start, voters: voters}
	switch {
	case len(l.Epochs) > 0:
		for i, e := range l.Epochs {
			if e.Epoch < 0 || e.StartOffset < l.Start || e.StartOffset >= l.End.Offset {
				return logView{}, fmt.Errorf("kraft: epoch entry %+v outside the log [%d, %d)", e, l.Start, l.End.Offset)
			}
			if i > 0 && (e.Epoch <= l.Epochs[i-1].Epoch || e.StartOffset <= l.Epochs[i-1].StartOffset) {
				return logView{}, fmt.Errorf("kraft: epoch entries %+v and %+v out of order", l.Epochs[i-1], e)
			}
		}
		if l.Epochs[0].StartOffset != l.Start {
			return logView{}, fmt.Errorf("kraft: the first epoch entry %+v does not start at the log start %d", l.Epochs[0], l.Start)
		}
		if last := l.Epochs[len(l.Epochs)-1]; last.Epoch != l.End.Epoch {
			return logView{}, fmt.Errorf("kraft: log end epoch %d is not the last epoch %d", l.End.Epoch, last.Epoch)
		}
		h.epochs = make([]EpochStart, len(l.Epochs))
		copy(h.epochs, l.Epochs)
	case l.End.Offset > l.Start:
		h.epochs = []EpochStart{{Epoch: l.End.Epoch, StartOffset: l.Start}}
	}
	if (l.LatestSnapshot == nil) != (l.EarliestSnapshot == nil) {
		return logView{}, fmt.Errorf("kraft: a latest snapshot without an earliest one or the reverse (%v, %v)", l.LatestSnapshot, l.EarliestSnapshot)
	}
	if l.LatestSnapshot == nil {
		if l.Start > 0 {
			return logView{}, fmt.Errorf("kraft: log start %d without a snapshot at it", l.Start)
		}
		v.withHistory(h)
		return v, nil
	}
	h.snapshots, h.latest, h.earliest = true, *l.LatestSnapshot, *l.EarliestSnapshot
	v.withHistory(h)
	switch {
	case v.earliest().Compare(v.latest()) > 0 || v.earliest().Offset > v.latest().Offset:
		return logView{}, fmt.Errorf("kraft: earliest snapshot %+v after the latest %+v", v.earliest(), v.latest())
	case v.latest().Offset > l.End.Offset:
		return logView{}, fmt.Errorf("kraft: latest snapshot %+v past the log end %+v (reset the log to it first)", v.latest(), l.End)
	case v.earliest().Offset < l.Start:
		return logView{}, fmt.Errorf("kraft: earliest snapshot %+v before the log start %d", v.earliest(), l.Start)
	case l.Start > 0 && v.earliest().Offset != l.Start:
		return logView{}, fmt.Errorf("kraft: log start %d is not the earliest snapshot %+v", l.Start, v.earliest())
	}
	for _, id := range []LogEnd{v.earliest(), v.latest()} {
		if !v.snapshotFits(id) {
			return logView{}, fmt.Errorf("kraft: snapshot %+v does not match the log's epochs", id)
		}
	}
	return v, nil
}

// snapshotFits reports whether a snapshot id agrees with the log: offset 0
// goes with epoch 0 (the bootstrap snapshot), a snapshot inside the log
// ends in the epoch of the record before its end, and one at the log start
// has an epoch not above the log's first.
func (v *logView) snapshotFits(id LogEnd) bool {
	switch {
	case id.Offset < 0 || id.Epoch < 0 || id.Offset > v.end.Offset || id.Offset < v.start():
		return false
	case id.Offset == 0:
		return id.Epoch == 0
	case id.Offset > v.start():
		return v.epochAt(id.Offset-1) == id.Epoch
	case len(v.epochs()) == 0:
		return id.Epoch == v.end.Epoch
	}
	return id.Epoch <= v.epochs()[0].Epoch
}

// covers reports whether the log already holds what the snapshot id
// holds: it is a snapshot on disk, or it ends inside the log (past the log
// start, at or before the log end) in the epoch of the log's record before
// its end, so by log matching the log holds the same records (D57). A
// snapshot at the log start other than the earliest cannot be checked
// against the log and is not covered.
func (v *logView) covers(id LogEnd) bool {
	switch {
	case v.hasSnapshots() && (id == v.latest() || id == v.earliest()):
		return true
	case id.Offset <= v.start() || id.Offset > v.end.Offset:
		return false
	}
	return v.epochAt(id.Offset-1) == id.Epoch
}

// epochAt is the epoch of the record at offset, which the log holds.
func (v *logView) epochAt(offset int64) Epoch {
	epoch := v.end.Epoch
	epochs := v.epochs()
	for i := len(epochs) - 1; i >= 0; i-- {
		epoch = epochs[i].Epoch
		if epochs[i].StartOffset <= offset {
			break
		}
	}
	return epoch
}

// appended returns the view after the host wrote records up to end. The
// caller has checked that end extends the log (a larger offset, an epoch
// not below the last one).
func (v logView) appended(end LogEnd) logView {
	if epochs := v.epochs(); len(epochs) == 0 || end.Epoch > epochs[len(epochs)-1].Epoch {
		// A new epoch starts at the previous log end. The clipped capacity
		// makes append copy, so older states keep their history.
		h := v.history()
		epochs = append(epochs[:len(epochs):len(epochs)], EpochStart{Epoch: end.Epoch, StartOffset: v.end.Offset})
		h.epochs = epochs
		v.withHistory(h)
	}
	v.end = end
	return v
}

// endOffsetForEpoch returns the largest local epoch not greater than epoch
// and the offset where it ends (the start of the next epoch, or the log end).
// With no such epoch it returns the requested epoch itself and the start of
// the first epoch, as Kafka's LeaderEpochFileCache.endOffsetFor does ("the
// requested epoch is smaller than any known epoch"); when that start is the
// earliest snapshot's end, it returns the snapshot id instead (Kafka's
// KafkaMetadataLog.endOffsetForEpoch: "the epoch is smaller than the
// smallest epoch on the log").
func (v *logView) endOffsetForEpoch(epoch Epoch) (Epoch, int64) {
	lower := epoch
	for _, e := range v.epochs() {
		if e.Epoch > epoch {
			if v.hasSnapshots() && lower == epoch && e.StartOffset == v.earliest().Offset {
				return v.earliest().Epoch, v.earliest().Offset
			}
			return lower, e.StartOffset
		}
		lower = e.Epoch
	}
	return v.end.Epoch, v.end.Offset
}

// fetchCheck is what a leader makes of a follower's fetch position.
type fetchCheck uint8

const (
	fetchValid fetchCheck = iota
	fetchDiverging
	fetchSnapshot
)

// validateOffsetAndEpoch is Kafka's ReplicatedLog.validateOffsetAndEpoch:
// a fetch at (offset, epoch) is valid, diverges (answered with the
// returned end offset and epoch), or needs the latest snapshot (answered
// with it) because the log no longer holds what the follower lacks.
func (v *logView) validateOffsetAndEpoch(offset int64, epoch Epoch) (fetchCheck, LogEnd) {
	if epoch == v.end.Epoch && offset <= v.end.Offset && !v.hasSnapshots() {
		// The steady fetch: at the log's last epoch (end.Epoch, which
		// NewState, appended and truncated keep the last epoch of the
		// history), within the log, and no snapshot to send: the general
		// path below finds the log end as the epoch's end and the fetch
		// valid (D340).
		return fetchValid, LogEnd{}
	}
	return v.validateAt(offset, epoch)
}

// validateAt is validateOffsetAndEpoch without its shortcut for the steady
// fetch.
func (v *logView) validateAt(offset int64, epoch Epoch) (fetchCheck, LogEnd) {
	if v.start() == 0 && offset == 0 {
		return fetchValid, LogEnd{}
	}
	if v.hasSnapshots() && (offset < v.start() || (offset == v.start() && epoch != v.earliest().Epoch) || epoch < v.earliest().Epoch) {
		return fetchSnapshot, v.latest()
	}
	e, o := v.endOffsetForEpoch(epoch)
	if e != epoch || o < offset {
		return fetchDiverging, LogEnd{Offset: o, Epoch: e}
	}
	return fetchValid, LogEnd{}
}

// truncated returns the view after every record at or after offset was
// removed. The caller keeps offset at or above the log start.
func (v logView) truncated(offset int64) logView {
	if offset >= v.end.Offset {
		return v
	}
	h := v.history()
	n := len(h.epochs)
	for n > 0 && h.epochs[n-1].StartOffset >= offset {
		n--
	}
	h.epochs = h.epochs[:n:n]
	h.voters = votersBefore(h.voters, offset)
	v.withHistory(h)
	v.end = LogEnd{Offset: offset}
	switch {
	case n > 0:
		v.end.Epoch = h.epochs[n-1].Epoch
	case v.hasSnapshots() && offset == v.earliest().Offset:
		// An empty log ends at its snapshot (Kafka's lastFetchedEpoch).
		v.end.Epoch = v.earliest().Epoch
	}
	if v.flushed > offset {
		v.flushed = offset
	}
	return v
}

// withSnapshot returns the view after the host wrote the snapshot id
// (Kafka's snapshots map: the latest is the largest id, the earliest the
// smallest).
func (v logView) withSnapshot(id LogEnd) logView {
	h := v.history()
	switch {
	case !h.snapshots:
		h.snapshots, h.latest, h.earliest = true, id, id
	case id.Compare(h.latest) > 0:
		h.latest = id
	case id.Compare(h.earliest) < 0:
		h.earliest = id
	}
	v.withHistory(h)
	return v
}

// startingAt returns the view after the host deleted every record before
// the snapshot id and every older snapshot (Kafka's deleteBeforeSnapshot):
// the log starts at id.Offset, which is now the earliest snapshot; the
// epoch entry that spans the new start is moved to it (Kafka's
// LeaderEpochFileCache.truncateFromStart). Records below the start are in
// a durable snapshot, so the flushed offset is at least the start.
func (v logView) startingAt(id LogEnd) logView {
	h := v.history()
	n := 0
	for n < len(h.epochs) && h.epochs[n].StartOffset <= id.Offset {
		n++
	}
	var epochs []EpochStart
	if n > 0 && id.Offset < v.end.Offset {
		epochs = append(epochs, EpochStart{Epoch: h.epochs[n-1].Epoch, StartOffset: id.Offset})
	}
	epochs = append(epochs, h.epochs[n:]...)
	h.epochs = epochs[:len(epochs):len(epochs)]
	h.start, h.earliest = id.Offset, id
	// The snapshot holds the set in force at its last contained offset,
	// id.Offset-1: keep that one. A set at id.Offset is a record after
	// the snapshot, which a new leader may still truncate (D56).
	h.voters = votersTrimmed(h.voters, id.Offset-1)
	v.withHistory(h)
	if v.flushed < id.Offset {
		v.flushed = id.Offset
	}
	return v
}

// resetTo returns the view of a log reset to the downloaded snapshot id
// (Kafka's truncateToLatestSnapshot): empty, starting and ending at
// id.Offset, with id the only snapshot.
func (v logView) resetTo(id LogEnd) logView {
	r := logView{end: id, flushed: id.Offset}
	// The voter set in force stays until the host reports the snapshot's
	// (VotersAppended at id.Offset-1, which replaces it).
	var voters []VoterSetAt
	if vs := v.voterSets(); len(vs) > 0 {
		voters = vs[len(vs)-1:]
	}
	r.withHistory(logHistory{start: id.Offset, snapshots: true, latest: id, earliest: id, voters: voters})
	return r
}

// truncationPoint is where a follower truncates its log after the leader
// answered with the diverging point d (Kafka's handleFetchResponse).
func (v *logView) truncationPoint(d LogOffsetMetadata) int64 {
	if d.Epoch == 0 {
		return min64(d.Offset, v.end.Offset)
	}
	e, o := v.endOffsetForEpoch(d.Epoch)
	if e == d.Epoch {
		return min64(o, d.Offset)
	}
	return o
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

func (v *logView) voterSets() []VoterSetAt {
	if v.h == nil {
		return nil
	}
	return v.h.voters
}

// lastVoters is the latest voter set in the log, ok false when the log
// holds none (a static voter set).
func (v *logView) lastVoters() (at VoterSetAt, ok bool) {
	vs := v.voterSets()
	if len(vs) == 0 {
		return VoterSetAt{}, false
	}
	return vs[len(vs)-1], true
}

// withVoters returns the view with the voter set at appended (the caller
// checked it). A set at the log start minus one is a snapshot's: it
// replaces every set before it (Kafka's KRaftControlRecordStateMachine
// reloads the history from a new snapshot).
func (v logView) withVoters(at VoterSetAt) logView {
	h := v.history()
	voters := []VoterSetAt{at}
	if at.Offset != h.start-1 {
		voters = append(append(make([]VoterSetAt, 0, len(h.voters)+1), h.voters...), at)
	}
	h.voters = voters
	v.withHistory(h)
	return v
}

// votersBefore is the voter history without the sets at or after offset
// (Kafka's VoterSetHistory.truncateNewEntries). The result shares vs's
// array and never appends to it in place.
func votersBefore(vs []VoterSetAt, offset int64) []VoterSetAt {
	n := len(vs)
	for n > 0 && vs[n-1].Offset >= offset {
		n--
	}
	return vs[:n:n]
}

// votersTrimmed drops every set before the last one at or below
// lastCleaned, the last offset the log no longer holds (the log start
// minus one: a snapshot's last contained offset). The log no longer holds
// the dropped sets, and none can come back in force; the one kept is the
// snapshot's, in force for every truncation the log still allows (D56).
// Kafka's VoterSetHistory.truncateOldEntries keeps the last set at or
// below the start offset itself, so a set at the start (a record after
// the snapshot, not yet committed) replaces the snapshot's, and truncating
// that record leaves no set at all.
func votersTrimmed(vs []VoterSetAt, lastCleaned int64) []VoterSetAt {
	i := 0
	for i+1 < len(vs) && vs[i+1].Offset <= lastCleaned {
		i++
	}
	return vs[i:len(vs):len(vs)]
}

// checkVoterSets validates LogState.VoterSets and returns the history
// NewState keeps: a copy, offsets increasing within [-1, End.Offset), each
// a valid set, consecutive sets in the log with overlapping majorities
// (Kafka's VoterSetHistory.addAt; the bootstrap set at -1 is exempt).
func checkVoterSets(l LogState) ([]VoterSetAt, error) {
	if len(l.VoterSets) == 0 {
		return nil, nil
	}
	out := make([]VoterSetAt, len(l.VoterSets))
	for i, at := range l.VoterSets {
		if at.Offset < -1 || at.Offset >= l.End.Offset && at.Offset != l.Start-1 {
			return nil, fmt.Errorf("kraft: voter set at %d outside the log [%d, %d)", at.Offset, l.Start, l.End.Offset)
		}
		if i > 0 && at.Offset <= l.VoterSets[i-1].Offset {
			return nil, fmt.Errorf("kraft: voter sets at %d and %d out of order", l.VoterSets[i-1].Offset, at.Offset)
		}
		if err := validVoterSet(at.Voters); err != nil {
			return nil, fmt.Errorf("kraft: voter set at %d: %w", at.Offset, err)
		}
		if i > 0 && l.VoterSets[i-1].Offset >= 0 && !overlappingMajority(l.VoterSets[i-1].Voters, at.Voters) {
			return nil, fmt.Errorf("kraft: voter sets at %d and %d have no overlapping majority", l.VoterSets[i-1].Offset, at.Offset)
		}
		out[i] = VoterSetAt{Offset: at.Offset, Voters: append([]ReplicaKey(nil), at.Voters...)}
	}
	return votersTrimmed(out, l.Start-1), nil
}
