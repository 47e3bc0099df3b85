package kraft

import "fmt"

// The host's reports of its own log (docs/design.md D30, D45): writes,
// flushes, snapshots and the log start. A VotersAppended report is a
// voter-set change and is taken in reconfig.go.

// onLogAppended takes a write report (docs/design.md D30). Reports come in
// order, each extending the written log, so a report that does not is
// stale (dropped) or impossible (a Fault): a log end below the high
// watermark means the host lost committed records, an epoch above the
// current one or below the log's last epoch cannot have been written, and a
// leader writes only records of its own epoch past its epoch start (a
// leader that took an older-epoch record there would commit it by counting
// replicas, Raft's figure 8).
func (t *stepper) onLogAppended(e LogAppended) {
	end, log := e.End, t.s.log
	switch {
	case end.Offset < 0 || end.Epoch < 0:
		return
	case end.Offset < t.s.committed:
		t.failf(fmt.Sprintf("the host reports a log end %d below the high watermark %d", end.Offset, t.s.committed))
	case end.Offset <= log.end.Offset:
		// A repeated or late report of records already known.
		return
	case end.Epoch > t.s.epoch:
		t.failf(fmt.Sprintf("the host reports records of epoch %d, but the replica is in epoch %d", end.Epoch, t.s.epoch))
	case end.Epoch < log.end.Epoch:
		t.failf(fmt.Sprintf("the host reports records of epoch %d after records of epoch %d", end.Epoch, log.end.Epoch))
	case t.s.role == Leader && end.Epoch != t.s.epoch:
		t.failf(fmt.Sprintf("the host reports records of epoch %d past the epoch start %d of leader epoch %d", end.Epoch, t.s.epochStart, t.s.epoch))
	default:
		t.s.log = log.appended(end)
	}
}

// onLogFlushed takes a flush report (docs/design.md D30). The leader counts
// its flushed offset toward the high watermark (Kafka's flushLeaderLog and
// updateLocalState); a voter whose Fetch waited for the flush sends it now.
// A flush past the written end is impossible (a Fault); an earlier flush
// that completes late changes nothing.
func (t *stepper) onLogFlushed(e LogFlushed) {
	log := t.s.log
	switch {
	case e.Offset > log.end.Offset:
		t.failf(fmt.Sprintf("the host reports a flush to %d past the written log end %d", e.Offset, log.end.Offset))
		return
	case e.Offset <= log.flushed:
		return
	}
	t.s.log.flushed = e.Offset
	t.afterFlush()
}

// afterFlush: the flushed offset rose. The leader counts its own flushed
// offset toward the high watermark (Kafka's flushLeaderLog and
// updateLocalState); a voter whose Fetch waited for the flush sends it.
func (t *stepper) afterFlush() {
	switch t.s.role {
	case Leader:
		t.maybeAdvanceHighWatermark()
	case Follower:
		if t.s.fetchPending {
			t.sendFetch()
		}
	case Unattached:
		if t.s.fetchPending {
			t.searchFetch()
		}
	case Prospective, Candidate, Resigned:
	}
}

// onSnapshotCreated takes the report of a snapshot the host wrote, with
// Kafka's checks (KafkaRaftClient.createSnapshot and
// KafkaMetadataLog.createNewSnapshot): at or below the log's high
// watermark, valid for the log (validateOffsetAndEpoch), and in the epoch
// of the record before its end (so not above the current epoch). One below
// the log start is stale (Kafka declines it); anything else is a Fault
// (docs/design.md D45).
func (t *stepper) onSnapshotCreated(e SnapshotCreated) {
	id, log := e.Snapshot, t.s.log
	// The log's high watermark is never below the log start (Kafka's
	// UnifiedLog), so an empty prefix (the bootstrap snapshot) always fits.
	hwm := t.s.committed
	if hwm < log.start() {
		hwm = log.start()
	}
	switch {
	case id.Offset < 0 || id.Epoch < 0:
		t.failf(fmt.Sprintf("the host reports a snapshot %+v with negative fields", id))
	case id.Offset < log.start():
		// Kafka declines it ("Cannot create a snapshot with an id less than
		// the log start offset"): an installed snapshot overtook it, a
		// race the host cannot avoid. Nothing changes.
	case id.Offset > hwm:
		t.failf(fmt.Sprintf("the host reports a snapshot %+v past the high watermark %d", id, hwm))
	case !log.snapshotFits(id):
		// Also Kafka's "the quorum epoch must be at least the snapshot's":
		// the log holds no record of an epoch after the current one.
		t.failf(fmt.Sprintf("the host reports a snapshot %+v that does not match the log", id))
	default:
		if check, _ := log.validateOffsetAndEpoch(id.Offset, id.Epoch); check != fetchValid {
			t.failf(fmt.Sprintf("the host reports a snapshot %+v that is not valid for the log", id))
			return
		}
		t.s.log = log.withSnapshot(id)
	}
}

// onLogStartMoved takes the report that the host deleted the log before a
// snapshot (Kafka's deleteBeforeSnapshot: a snapshot it has, past the log
// start, at most the latest). A start at or below the current one is
// stale; anything else that does not hold is a Fault (docs/design.md D45).
func (t *stepper) onLogStartMoved(e LogStartMoved) {
	id, log := e.Snapshot, t.s.log
	switch {
	case id.Offset >= 0 && id.Offset <= log.start():
		return
	case !log.hasSnapshots() || id.Offset > log.latest().Offset:
		t.failf(fmt.Sprintf("the host moved the log start to %+v, past the latest snapshot", id))
		return
	case id != log.latest() && !log.snapshotFits(id):
		t.failf(fmt.Sprintf("the host moved the log start to %+v, which does not match the log", id))
		return
	}
	flushed := log.flushed
	t.s.log = log.startingAt(id)
	if t.s.log.flushed > flushed {
		t.afterFlush()
	}
}
