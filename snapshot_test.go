package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Snapshots: the log view with a start and snapshot ids (D42), the leader's
// SNAPSHOT answers and FetchSnapshot checks (D44), the follower's download
// (D43), and host-made snapshots and log cleaning (D45). Each test names
// the Kafka test of KafkaRaftClientSnapshotTest it follows.

// snapLog is the log of Kafka's testFetchRequestTruncateToLogStart: epoch 2
// at offsets 0-2, epoch 4 at 3-5.
func snapLog() LogState {
	return LogState{End: LogEnd{Offset: 6, Epoch: 4}, Epochs: []EpochStart{{Epoch: 2, StartOffset: 0}, {Epoch: 4, StartOffset: 3}}}
}

// snapshotLeader is replica 1 of {1,2,3} restarted with snapLog and
// elected leader of epoch 5 (LeaderChange at 6, log end 7), with voter 2
// caught up so that the high watermark is 7.
func snapshotLeader(t *testing.T) State {
	t.Helper()
	s := restartedLeader(t, 4, snapLog())
	require.Equal(t, Epoch(5), s.Epoch())
	require.Equal(t, LogEnd{Offset: 7, Epoch: 5}, s.LogEnd())
	s, _ = step(t, s, fetchFrom(2, 5, 7, 5))
	require.Equal(t, int64(7), s.HighWatermark())
	return s
}

// snapshotted steps SnapshotCreated and, when clean, LogStartMoved for id,
// requiring that both are taken without actions.
func snapshotted(t *testing.T, s State, id LogEnd, clean bool) State {
	t.Helper()
	s, acts := step(t, s, SnapshotCreated{Snapshot: id})
	require.Empty(t, acts)
	if clean {
		s, acts = step(t, s, LogStartMoved{Snapshot: id})
		require.Empty(t, acts)
		require.Equal(t, id.Offset, s.LogStart())
	}
	return s
}

// cleanedLeader is snapshotLeader after a snapshot at (3, 2) and cleaning
// the log before it: the log starts at 3 (Kafka's snapshot tests'
// oldestSnapshotId).
func cleanedLeader(t *testing.T) State {
	t.Helper()
	return snapshotted(t, snapshotLeader(t), LogEnd{Offset: 3, Epoch: 2}, true)
}

func snapshotAnswer(to NodeID, epoch Epoch, leader NodeID, hwm int64, id LogEnd) SendFetchResponse {
	return SendFetchResponse{To: to, Error: ErrNone, Epoch: epoch, LeaderID: leader, HighWatermark: hwm, Snapshot: &id}
}

// TestNewStateWithSnapshot: a replica restarts from a snapshot and the log
// after it: it fetches from the snapshot end in the snapshot's epoch, its
// quorum high watermark is unknown, and the records below the latest
// snapshot are committed (no truncation or report below it).
// Reference: KafkaRaftClientSnapshotTest.testFollowerListenerNotified (the
// first Fetch after a restart with a snapshot at the log start);
// KafkaMetadataLog (lastFetchedEpoch of an empty log, UnifiedLog's high
// watermark at the log start); docs/design.md D42.
func TestNewStateWithSnapshot(t *testing.T) {
	id := LogEnd{Offset: 10, Epoch: 3}
	s, acts := restart(t, config(2, 1, 2, 3), quorumRecord(4, 1, NoNode),
		LogState{Start: 10, End: id, LatestSnapshot: &id, EarliestSnapshot: &id})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, id, s.LogEnd())
	require.Equal(t, int64(10), s.LogStart())
	require.Equal(t, int64(10), s.FlushedOffset())
	require.Equal(t, int64(-1), s.HighWatermark())
	latest, ok := s.LatestSnapshot()
	require.True(t, ok)
	require.Equal(t, id, latest)
	require.Contains(t, acts, Action(SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 10, FetchEpoch: 3, HighWatermark: -1}))

	// The snapshot's records are committed: a diverging answer below the
	// snapshot refuses the leader (D113), a write report below it is a
	// fault.
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1, Diverging: &LogOffsetMetadata{Offset: 5, Epoch: 3}})
	requireRefused(t, s, next, acts, LeaderRefused{LeaderID: 1, Epoch: 4, TruncateTo: 5, HighWatermark: 10, Reason: "the leader asks to truncate below the high watermark"})
	next, acts = step(t, s, LogAppended{End: LogEnd{Offset: 9, Epoch: 3}})
	requireFault(t, s, next, acts)

	// A leader's high watermark is adopted as usual.
	next, acts = step(t, s, fetchOK(1, 4, 10))
	require.Equal(t, int64(10), next.HighWatermark())
	require.Empty(t, ofType[HighWatermarkChanged](acts), "10 was already committed: no report")

	// A log that goes on after an older snapshot: the latest snapshot is
	// committed, whatever the earliest.
	log := LogState{
		End: LogEnd{Offset: 20, Epoch: 3}, Epochs: []EpochStart{{Epoch: 1, StartOffset: 5}, {Epoch: 3, StartOffset: 10}},
		Start: 5, LatestSnapshot: &LogEnd{Offset: 15, Epoch: 3}, EarliestSnapshot: &LogEnd{Offset: 5, Epoch: 1},
	}
	s, _ = restart(t, config(2, 1, 2, 3), quorumRecord(4, 1, NoNode), log)
	next, acts = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1, Diverging: &LogOffsetMetadata{Offset: 12, Epoch: 3}})
	requireRefused(t, s, next, acts, LeaderRefused{LeaderID: 1, Epoch: 4, TruncateTo: 12, HighWatermark: 15, Reason: "the leader asks to truncate below the high watermark"})
	next, acts = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1, Diverging: &LogOffsetMetadata{Offset: 17, Epoch: 3}})
	require.Equal(t, TruncateLog{To: 17}, ofType[TruncateLog](acts)[0])
	require.Equal(t, LogEnd{Offset: 17, Epoch: 3}, next.LogEnd())

	// A truncation to the log start leaves an empty log that ends at its
	// snapshot.
	s, _ = restart(t, config(2, 1, 2, 3), quorumRecord(4, 1, NoNode), LogState{
		Start: 10, End: LogEnd{Offset: 20, Epoch: 4}, LatestSnapshot: &id, EarliestSnapshot: &id,
	})
	next, _ = step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1, Diverging: &LogOffsetMetadata{Offset: 10, Epoch: 3}})
	require.Equal(t, id, next.LogEnd())

	// The bootstrap snapshot (0, 0) of an empty log.
	boot := LogEnd{}
	s, _ = restart(t, config(2, 1, 2, 3), quorumRecord(4, 1, NoNode), LogState{LatestSnapshot: &boot, EarliestSnapshot: &boot})
	require.Equal(t, LogEnd{}, s.LogEnd())
}

// TestNewStateRejectsInconsistentSnapshots: NewState returns an error, and
// never panics, for a log whose start, epochs and snapshots disagree.
// Reference: KafkaMetadataLog (truncateToLatestSnapshot on open,
// earliestSnapshotId at the log start, lastFetchedEpoch of an empty log);
// ReplicatedLog.validateOffsetAndEpoch ("log start offset is greater than
// zero but latest snapshot was not found"); docs/design.md D42.
func TestNewStateRejectsInconsistentSnapshots(t *testing.T) {
	snap := func(offset int64, epoch Epoch) *LogEnd { return &LogEnd{Offset: offset, Epoch: epoch} }
	two := []EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 3}}
	cases := map[string]LogState{
		"negative start":                  {Start: -1, End: LogEnd{Offset: 3, Epoch: 1}},
		"start past the end":              {Start: 5, End: LogEnd{Offset: 3, Epoch: 1}, LatestSnapshot: snap(5, 1), EarliestSnapshot: snap(5, 1)},
		"epoch entry before the start":    {Start: 2, End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, LatestSnapshot: snap(2, 1), EarliestSnapshot: snap(2, 1)},
		"first entry after the start":     {Start: 2, End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two[1:], LatestSnapshot: snap(2, 1), EarliestSnapshot: snap(2, 1)},
		"start without a snapshot":        {Start: 2, End: LogEnd{Offset: 6, Epoch: 2}},
		"latest without earliest":         {End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, LatestSnapshot: snap(3, 1)},
		"earliest without latest":         {End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, EarliestSnapshot: snap(3, 1)},
		"earliest after latest":           {End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, LatestSnapshot: snap(3, 1), EarliestSnapshot: snap(5, 2)},
		"snapshot past the log end":       {End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, LatestSnapshot: snap(8, 2), EarliestSnapshot: snap(8, 2)},
		"earliest snapshot not at start":  {Start: 3, End: LogEnd{Offset: 6, Epoch: 2}, LatestSnapshot: snap(5, 2), EarliestSnapshot: snap(4, 2)},
		"snapshot before the start":       {Start: 3, End: LogEnd{Offset: 6, Epoch: 2}, LatestSnapshot: snap(5, 2), EarliestSnapshot: snap(2, 1)},
		"empty log in another epoch":      {Start: 3, End: LogEnd{Offset: 3, Epoch: 4}, LatestSnapshot: snap(3, 2), EarliestSnapshot: snap(3, 2)},
		"snapshot epoch not the log's":    {End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, LatestSnapshot: snap(5, 1), EarliestSnapshot: snap(5, 1)},
		"snapshot at 0 with an epoch":     {End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, LatestSnapshot: snap(0, 3), EarliestSnapshot: snap(0, 3)},
		"snapshot at start after records": {Start: 3, End: LogEnd{Offset: 6, Epoch: 2}, LatestSnapshot: snap(3, 3), EarliestSnapshot: snap(3, 3)},
		"negative snapshot":               {End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, LatestSnapshot: snap(-1, 1), EarliestSnapshot: snap(-1, 1)},
	}
	for name, log := range cases {
		require.NotPanics(t, func() {
			_, _, err := NewState(config(1, 1, 2, 3), nil, log)
			require.Error(t, err, name)
		}, name)
	}
	_, _, err := NewState(config(1, 1, 2, 3), nil, cases["snapshot past the log end"])
	require.Contains(t, err.Error(), "reset the log to it first")
	// The same shapes, made consistent, are accepted.
	for name, log := range map[string]LogState{
		"snapshot inside the log":  {End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, LatestSnapshot: snap(5, 2), EarliestSnapshot: snap(2, 1)},
		"cleaned log":              {Start: 3, End: LogEnd{Offset: 6, Epoch: 2}, LatestSnapshot: snap(5, 2), EarliestSnapshot: snap(3, 1)},
		"empty log at a snapshot":  {Start: 3, End: LogEnd{Offset: 3, Epoch: 2}, LatestSnapshot: snap(3, 2), EarliestSnapshot: snap(3, 2)},
		"snapshot at the log end":  {End: LogEnd{Offset: 6, Epoch: 2}, Epochs: two, LatestSnapshot: snap(6, 2), EarliestSnapshot: snap(6, 2)},
		"bootstrap snapshot alone": {LatestSnapshot: snap(0, 0), EarliestSnapshot: snap(0, 0)},
	} {
		_, _, err := NewState(config(1, 1, 2, 3), nil, log)
		require.NoError(t, err, name)
	}
}

// TestEndOffsetForEpochWithSnapshot: an epoch below every epoch the log
// holds ends at the earliest snapshot, with the snapshot's epoch, when the
// log starts there; otherwise Kafka's leader-epoch cache answer.
// Reference: KafkaMetadataLog.endOffsetForEpoch;
// KafkaRaftClientSnapshotTest.testFetchRequestTruncateToLogStart.
func TestEndOffsetForEpochWithSnapshot(t *testing.T) {
	cleaned := cleanedLeader(t).log
	uncleaned := snapshotted(t, snapshotLeader(t), LogEnd{Offset: 3, Epoch: 2}, false).log
	cases := []struct {
		name   string
		log    logView
		epoch  Epoch
		want   Epoch
		offset int64
	}{
		{"below the first epoch, log starts at the snapshot", cleaned, 3, 2, 3},
		{"below every epoch, log starts at the snapshot", cleaned, 1, 2, 3},
		{"first epoch", cleaned, 4, 4, 6},
		{"last epoch", cleaned, 5, 5, 7},
		{"past the last epoch", cleaned, 9, 5, 7},
		{"log not cleaned: the epoch cache's answer", uncleaned, 3, 2, 3},
		{"log not cleaned, below every epoch", uncleaned, 1, 1, 0},
	}
	for _, c := range cases {
		e, o := c.log.endOffsetForEpoch(c.epoch)
		require.Equal(t, c.want, e, c.name)
		require.Equal(t, c.offset, o, c.name)
	}
	// validateOffsetAndEpoch: offset 0 is valid only in a log that starts
	// at 0.
	check, id := cleaned.validateOffsetAndEpoch(0, 0)
	require.Equal(t, fetchSnapshot, check)
	require.Equal(t, LogEnd{Offset: 3, Epoch: 2}, id)
	check, _ = uncleaned.validateOffsetAndEpoch(0, 0)
	require.Equal(t, fetchValid, check)
}

// TestLeaderAnswersWithSnapshot: the leader checks a Fetch position
// against its log and snapshots: a fetch from offset 0 gets the latest
// snapshot; a position before the log start, at the log start in another
// epoch than the earliest snapshot's, or with an epoch below it gets the
// latest snapshot; a position inside the log is valid or diverges as
// before. A snapshot answer carries the high watermark and updates no
// replica state and no check-quorum.
// Reference: KafkaRaftClient.tryCompleteFetchRequest,
// ReplicatedLog.validateOffsetAndEpoch;
// KafkaRaftClientSnapshotTest.testFetchRequestOffsetLessThanLogStart,
// testFetchRequestAtLogStartOffsetWithValidEpoch,
// testFetchRequestAtLogStartOffsetWithInvalidEpoch,
// testFetchRequestWithLastFetchedEpochLessThanOldestSnapshot,
// testFetchRequestTruncateToLogStart,
// testFetchRequestWithLargerLastFetchedEpoch; docs/design.md D44.
func TestLeaderAnswersWithSnapshot(t *testing.T) {
	l := cleanedLeader(t)
	oldest := LogEnd{Offset: 3, Epoch: 2}
	newer := snapshotted(t, l, LogEnd{Offset: 6, Epoch: 4}, false)
	uncleaned := snapshotted(t, snapshotLeader(t), oldest, false)
	cases := []struct {
		name    string
		s       State
		offset  int64
		epoch   Epoch
		want    SendFetchResponse
		tracked bool // a valid fetch: the voter's position is recorded
	}{
		{"offset 0", l, 0, 0, snapshotAnswer(2, 5, 1, 7, oldest), false},
		{"offset 0, log not cleaned", uncleaned, 0, 0, snapshotAnswer(2, 5, 1, 7, oldest), false},
		{"before the log start", l, 2, 2, snapshotAnswer(2, 5, 1, 7, oldest), false},
		{"at the log start, another epoch", l, 3, 3, snapshotAnswer(2, 5, 1, 7, oldest), false},
		{"epoch below the oldest snapshot", l, 7, 1, snapshotAnswer(2, 5, 1, 7, oldest), false},
		{"the latest snapshot is sent", newer, 2, 2, snapshotAnswer(2, 5, 1, 7, LogEnd{Offset: 6, Epoch: 4}), false},
		{"at the log start, the snapshot's epoch", l, 3, 2, SendFetchResponse{To: 2, Epoch: 5, LeaderID: 1, HighWatermark: 7}, true},
		{"inside the log", l, 5, 4, SendFetchResponse{To: 2, Epoch: 5, LeaderID: 1, HighWatermark: 7}, true},
		{"inside the log, log not cleaned", uncleaned, 2, 2, SendFetchResponse{To: 2, Epoch: 5, LeaderID: 1, HighWatermark: 7}, true},
		{
			"diverging to the log start", l, 4, 3,
			SendFetchResponse{To: 2, Epoch: 5, LeaderID: 1, HighWatermark: 7, Diverging: &LogOffsetMetadata{Offset: 3, Epoch: 2}},
			false,
		},
		{"last fetched epoch past the current", l, 7, 6, SendFetchResponse{To: 2, Error: ErrInvalidRequest, Epoch: 5, LeaderID: 1, HighWatermark: -1}, false},
	}
	for _, c := range cases {
		next, acts := step(t, c.s, fetchFrom(2, 5, c.offset, c.epoch))
		require.Equal(t, c.want, ofType[SendFetchResponse](acts)[0], c.name)
		if c.tracked {
			require.Equal(t, c.offset, next.VoterEndOffsets()[1], c.name)
			continue
		}
		requireActions(t, []Action{c.want}, acts)
		require.Equal(t, c.s, next, "%s: no replica state, no check-quorum", c.name)
	}

	// The bootstrap snapshot (0, 0) is never sent.
	boot := LogEnd{}
	b := restartedLeader(t, 0, LogState{LatestSnapshot: &boot, EarliestSnapshot: &boot})
	_, acts := step(t, b, fetchFrom(2, b.Epoch(), 0, 0))
	require.Nil(t, ofType[SendFetchResponse](acts)[0].Snapshot)
}

// TestFetchSnapshotRequest: the leader answers a FetchSnapshot with
// Kafka's checks in Kafka's order (cluster id, epoch fencing, an unknown or
// bootstrap snapshot, a position outside it); a successful one names the
// snapshot, its size and the position, and counts for check-quorum when a
// voter sent it, without moving its end offset.
// Reference: KafkaRaftClient.handleFetchSnapshotRequest;
// KafkaRaftClientSnapshotTest.testFetchSnapshotRequestAsLeader,
// testPartialFetchSnapshotRequestAsLeader,
// testFetchSnapshotRequestMissingSnapshot,
// testFetchSnapshotRequestWithInvalidPosition,
// testFetchSnapshotRequestWithOlderEpoch,
// testFetchSnapshotRequestWithNewerEpoch,
// testFetchSnapshotRequestAsFollower,
// testFetchSnapshotRequestClusterIdValidation; docs/design.md D44.
func TestFetchSnapshotRequest(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	cfg.ClusterID = testClusterID
	u, _ := restart(t, cfg, quorumRecord(4, NoNode, NoNode), snapLog())
	l := electLeader(t, u)
	require.Equal(t, Epoch(5), l.Epoch())
	l, _ = step(t, l, fetchFrom(2, 5, 7, 5))
	l = snapshotted(t, l, LogEnd{Offset: 3, Epoch: 2}, true)
	f := newFollower(t)

	id := LogEnd{Offset: 3, Epoch: 2}
	req := func(mod func(*ReceiveFetchSnapshot)) ReceiveFetchSnapshot {
		r := ReceiveFetchSnapshot{From: 3, CurrentLeaderEpoch: 5, Snapshot: id, Position: 0, Size: 100}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	cases := []struct {
		name string
		s    State
		e    ReceiveFetchSnapshot
		want SendFetchSnapshotResponse
	}{
		{"whole snapshot", l, req(nil), SendFetchSnapshotResponse{To: 3, Epoch: 5, LeaderID: 1, Snapshot: id, Size: 100}},
		{"rest of a snapshot", l, req(func(r *ReceiveFetchSnapshot) { r.Position = 99 }), SendFetchSnapshotResponse{To: 3, Epoch: 5, LeaderID: 1, Snapshot: id, Size: 100, Position: 99}},
		{"our cluster id", l, req(func(r *ReceiveFetchSnapshot) { r.ClusterID = testClusterID }), SendFetchSnapshotResponse{To: 3, Epoch: 5, LeaderID: 1, Snapshot: id, Size: 100}},
		{"another cluster, before fencing", l, req(func(r *ReceiveFetchSnapshot) { r.ClusterID, r.CurrentLeaderEpoch = otherClusterID, 1 }), fetchSnapshotError(3, ErrInconsistentClusterID, 5, 1)},
		{"older epoch, before the snapshot", l, req(func(r *ReceiveFetchSnapshot) { r.CurrentLeaderEpoch, r.Size = 4, -1 }), fetchSnapshotError(3, ErrFencedLeaderEpoch, 5, 1)},
		{"newer epoch", l, req(func(r *ReceiveFetchSnapshot) { r.CurrentLeaderEpoch = 6 }), fetchSnapshotError(3, ErrUnknownLeaderEpoch, 5, 1)},
		{"not the leader", f, req(func(r *ReceiveFetchSnapshot) { r.CurrentLeaderEpoch = 1 }), fetchSnapshotError(3, ErrNotLeaderOrFollower, 1, 1)},
		{"unknown snapshot, before the position", l, req(func(r *ReceiveFetchSnapshot) { r.Size, r.Position = -1, -1 }), fetchSnapshotError(3, ErrSnapshotNotFound, 5, 1)},
		{"bootstrap snapshot", l, req(func(r *ReceiveFetchSnapshot) { r.Snapshot = LogEnd{} }), fetchSnapshotError(3, ErrSnapshotNotFound, 5, 1)},
		{"negative position", l, req(func(r *ReceiveFetchSnapshot) { r.Position = -1 }), fetchSnapshotError(3, ErrPositionOutOfRange, 5, 1)},
		{"position at the size", l, req(func(r *ReceiveFetchSnapshot) { r.Position = 100 }), fetchSnapshotError(3, ErrPositionOutOfRange, 5, 1)},
		{"empty snapshot", l, req(func(r *ReceiveFetchSnapshot) { r.Size = 0 }), fetchSnapshotError(3, ErrPositionOutOfRange, 5, 1)},
	}
	for _, c := range cases {
		next, acts := step(t, c.s, c.e)
		require.Equal(t, c.want, ofType[SendFetchSnapshotResponse](acts)[0], c.name)
		if c.want.Error != ErrNone {
			require.Len(t, acts, 1, c.name)
			require.Equal(t, c.s, next, "%s: an error counts for nothing", c.name)
			continue
		}
		// Voter 3's request restarts the check-quorum window (with voter
		// 2 it makes a majority) and records no position.
		require.Equal(t, []Action{checkQuorumTimerReset, c.want}, acts, c.name)
		require.Equal(t, c.s.VoterEndOffsets(), next.VoterEndOffsets(), c.name)
		require.Equal(t, c.s.HighWatermark(), next.HighWatermark(), c.name)
	}
	// An observer's request is answered and counts for nothing.
	next, acts := step(t, l, req(func(r *ReceiveFetchSnapshot) { r.From = 9 }))
	require.Equal(t, []Action{SendFetchSnapshotResponse{To: 9, Epoch: 5, LeaderID: 1, Snapshot: id, Size: 100}}, acts)
	require.Equal(t, l, next)
}

// downloading is newFollower (replica 2 following 1 in epoch 1, empty
// log) after a Fetch response naming the snapshot id: it asks for the
// snapshot from position 0.
func downloading(t *testing.T, id LogEnd) State {
	t.Helper()
	s, acts := step(t, newFollower(t), ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 200, Snapshot: &id})
	require.Equal(t, []Action{fetchTimerReset, SendFetchSnapshot{To: 1, CurrentLeaderEpoch: 1, Snapshot: id}}, acts)
	got, written, ok := s.SnapshotDownload()
	require.True(t, ok)
	require.Equal(t, id, got)
	require.Zero(t, written)
	return s
}

// chunk is a FetchSnapshot response of leader 1 in epoch 1 carrying bytes
// [position, position+n) of a snapshot of size bytes.
func chunk(id LogEnd, size, position, n int64) ReceiveFetchSnapshotResponse {
	return ReceiveFetchSnapshotResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, Snapshot: id, Size: size, Position: position, Bytes: n}
}

// TestFollowerDownloadsAndInstallsSnapshot: the follower asks for each
// next chunk from the bytes written so far, resetting its fetch timer on
// each; the last chunk completes the snapshot: the log is reset to it
// (start = end = the snapshot end, in its epoch, flushed), the high
// watermark rises to its end, and the follower fetches from there.
// Reference: KafkaRaftClient.handleFetchSnapshotResponse;
// KafkaRaftClientSnapshotTest.testFetchResponseWithSnapshotId,
// testFetchSnapshotResponsePartialData; docs/design.md D43.
func TestFollowerDownloadsAndInstallsSnapshot(t *testing.T) {
	id := LogEnd{Offset: 100, Epoch: 1}
	s := downloading(t, id)

	s, acts := step(t, s, chunk(id, 10, 0, 4))
	require.Equal(t, []Action{
		WriteSnapshotChunk{Snapshot: id, Position: 0},
		fetchTimerReset,
		SendFetchSnapshot{To: 1, CurrentLeaderEpoch: 1, Snapshot: id, Position: 4},
	}, acts)
	_, written, ok := s.SnapshotDownload()
	require.True(t, ok)
	require.Equal(t, int64(4), written)

	// An empty chunk makes no progress and asks again.
	same, acts := step(t, s, chunk(id, 10, 4, 0))
	require.Equal(t, []Action{
		WriteSnapshotChunk{Snapshot: id, Position: 4},
		fetchTimerReset,
		SendFetchSnapshot{To: 1, CurrentLeaderEpoch: 1, Snapshot: id, Position: 4},
	}, acts)
	require.Equal(t, s, same)

	s, acts = step(t, s, chunk(id, 10, 4, 6))
	require.Equal(t, []Action{
		WriteSnapshotChunk{Snapshot: id, Position: 4},
		InstallSnapshot{Snapshot: id},
		HighWatermarkChanged{HighWatermark: 100},
		fetchTimerReset,
		SendFetch{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 100, FetchEpoch: 1, HighWatermark: 100},
	}, acts)
	require.Equal(t, Follower, s.Role())
	require.Equal(t, id, s.LogEnd())
	require.Equal(t, int64(100), s.LogStart())
	require.Equal(t, int64(100), s.FlushedOffset())
	require.Equal(t, int64(100), s.HighWatermark())
	for _, get := range []func() (LogEnd, bool){s.LatestSnapshot, s.EarliestSnapshot} {
		got, ok := get()
		require.True(t, ok)
		require.Equal(t, id, got)
	}
	_, _, ok = s.SnapshotDownload()
	require.False(t, ok)

	// The follower goes on from the snapshot: records after it are
	// appended, and the leader's diverging answers cannot cut into it
	// (the follower refuses such a leader: D113).
	s, _ = durable(t, s, LogEnd{Offset: 103, Epoch: 1})
	require.Equal(t, LogEnd{Offset: 103, Epoch: 1}, s.LogEnd())
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: -1, Diverging: &LogOffsetMetadata{Offset: 99, Epoch: 1}})
	requireRefused(t, s, next, acts, LeaderRefused{LeaderID: 1, Epoch: 1, TruncateTo: 99, HighWatermark: 100, Reason: "the leader asks to truncate below the high watermark"})

	// A whole snapshot in one chunk; the download replaces a log that was
	// ahead by offset but behind by epoch.
	r := restartedFollower(t) // log end (8, 4), epoch 4
	newer := LogEnd{Offset: 5, Epoch: 5}
	r, _ = step(t, r, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1, Snapshot: &newer})
	r, acts = step(t, r, ReceiveFetchSnapshotResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, Snapshot: newer, Size: 3, Bytes: 3})
	require.Equal(t, InstallSnapshot{Snapshot: newer}, acts[1])
	require.Equal(t, newer, r.LogEnd())
	require.Equal(t, SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 5, FetchEpoch: 5, HighWatermark: 5}, acts[len(acts)-1])
}

// TestFollowerDropsDownloadOnSnapshotNotFound: SNAPSHOT_NOT_FOUND, or a
// snapshot id with a negative field (an error answer carries none), ends
// the download: the fetch timer is reset and the follower fetches from its
// log end again. The next snapshot answer starts over from position 0.
// Reference: KafkaRaftClient.handleFetchSnapshotResponse;
// KafkaRaftClientSnapshotTest.testFetchSnapshotResponseMissingSnapshot,
// testFetchSnapshotResponseWithInvalidId; docs/design.md D43.
func TestFollowerDropsDownloadOnSnapshotNotFound(t *testing.T) {
	id := LogEnd{Offset: 100, Epoch: 1}
	s := downloading(t, id)
	s, _ = step(t, s, chunk(id, 10, 0, 4))
	for name, r := range map[string]ReceiveFetchSnapshotResponse{
		"not found":              {From: 1, Error: ErrSnapshotNotFound, LeaderID: 1, LeaderEpoch: 1},
		"not found, leader's -1": {From: 1, Error: ErrSnapshotNotFound, LeaderID: 1, LeaderEpoch: 1, Snapshot: LogEnd{Offset: -1, Epoch: -1}, Size: -1, Position: -1},
		"position out of range":  {From: 1, Error: ErrPositionOutOfRange, LeaderID: 1, LeaderEpoch: 1, Snapshot: LogEnd{Offset: -1, Epoch: -1}, Size: -1, Position: -1},
		"negative end offset":    chunk(LogEnd{Offset: -1, Epoch: 1}, 10, 4, 6),
		"negative epoch":         chunk(LogEnd{Offset: 100, Epoch: -1}, 10, 4, 6),
	} {
		next, acts := step(t, s, r)
		require.Equal(t, []Action{fetchTimerReset, SendFetch{To: 1, CurrentLeaderEpoch: 1, HighWatermark: -1}}, acts, name)
		_, _, ok := next.SnapshotDownload()
		require.False(t, ok, name)
		again, acts := step(t, next, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: -1, Snapshot: &id})
		require.Equal(t, SendFetchSnapshot{To: 1, CurrentLeaderEpoch: 1, Snapshot: id}, acts[len(acts)-1], name)
		_, written, _ := again.SnapshotDownload()
		require.Zero(t, written, name)
	}
}

// TestFetchSnapshotResponseCommonHandling: FetchSnapshot responses go
// through the common response rules: a newer epoch with another leader (or
// the same) is followed, persisted first, with one Fetch from the log end
// (the download ends with the role); an older epoch is ignored (the host
// retries the request); a response that comes after the follower left the
// epoch is ignored; a top-level error is not acted on.
// Reference: KafkaRaftClient.maybeHandleCommonResponse;
// KafkaRaftClientSnapshotTest.testFetchSnapshotResponseFromNewerEpochNotLeader,
// testFetchSnapshotResponseFromNewerEpochLeader,
// testFetchSnapshotResponseFromOlderEpoch,
// testFetchSnapshotResponseToNotFollower; docs/design.md D43.
func TestFetchSnapshotResponseCommonHandling(t *testing.T) {
	id := LogEnd{Offset: 100, Epoch: 1}
	s := downloading(t, id)
	for _, leader := range []NodeID{3, 1} {
		next, acts := step(t, s, ReceiveFetchSnapshotResponse{From: 1, Error: ErrFencedLeaderEpoch, LeaderID: leader, LeaderEpoch: 2})
		requireState(t, next, Follower, 2, leader, NoReplica)
		require.IsType(t, Persist{}, acts[0])
		fetches := ofType[SendFetch](acts)
		require.Equal(t, []SendFetch{{To: leader, CurrentLeaderEpoch: 2, HighWatermark: -1}}, fetches)
		require.Empty(t, ofType[SendFetchSnapshot](acts))
		_, _, ok := next.SnapshotDownload()
		require.False(t, ok)
	}

	older, acts := step(t, s, ReceiveFetchSnapshotResponse{From: 1, Error: ErrUnknownLeaderEpoch, LeaderID: 2, LeaderEpoch: 0})
	requireUnchanged(t, s, older, acts)

	for _, code := range []ErrorCode{ErrBrokerNotAvailable, ErrInconsistentClusterID} {
		next, acts := step(t, s, ReceiveFetchSnapshotResponse{From: 1, Error: code, LeaderID: 1, LeaderEpoch: 1})
		requireUnchanged(t, s, next, acts)
	}

	// A replica that knew no leader follows the one an error answer of its
	// epoch names, and goes no further with the answer (it has not
	// fetched: it still grants pre-votes).
	u := unattachedAt(t, config(2, 1, 2, 3), 1)
	next, acts := step(t, u, ReceiveFetchSnapshotResponse{From: 1, Error: ErrSnapshotNotFound, LeaderID: 1, LeaderEpoch: 1})
	requireState(t, next, Follower, 1, 1, NoReplica)
	require.Equal(t, []SendFetch{{To: 1, CurrentLeaderEpoch: 1, HighWatermark: -1}}, ofType[SendFetch](acts))
	require.True(t, grantsPreVote(t, next))

	// The fetch timer ran out: a Prospective ignores the late answer.
	p, _ := step(t, s, FetchTimeout{})
	require.Equal(t, Prospective, p.Role())
	next, acts = step(t, p, chunk(id, 10, 0, 10))
	requireUnchanged(t, p, next, acts)
	c := asCandidate(t, p)
	next, acts = step(t, c, chunk(id, 10, 0, 10))
	requireUnchanged(t, c, next, acts)
}

// TestFetchSnapshotResponseMismatchIsFault: a chunk for another snapshot,
// at another position than the bytes written, or when no download is in
// progress, proves the peers inconsistent (Kafka throws): a Fault with the
// state unchanged. A chunk that does not fit its own size is dropped.
// Reference: KafkaRaftClient.handleFetchSnapshotResponse
// (IllegalStateException); docs/design.md D43.
func TestFetchSnapshotResponseMismatchIsFault(t *testing.T) {
	id := LogEnd{Offset: 100, Epoch: 1}
	s := downloading(t, id)
	s, _ = step(t, s, chunk(id, 10, 0, 4))
	for name, r := range map[string]ReceiveFetchSnapshotResponse{
		"another offset":   chunk(LogEnd{Offset: 101, Epoch: 1}, 10, 4, 6),
		"another epoch":    chunk(LogEnd{Offset: 100, Epoch: 2}, 10, 4, 6),
		"position behind":  chunk(id, 10, 0, 10),
		"position ahead":   chunk(id, 10, 5, 5),
		"Kafka's error id": {From: 1, Error: ErrPositionOutOfRange, LeaderID: 1, LeaderEpoch: 1},
	} {
		r := r
		t.Run(name, func(t *testing.T) {
			next, acts := step(t, s, r)
			requireFault(t, s, next, acts)
		})
	}
	f := newFollower(t)
	next, acts := step(t, f, chunk(id, 10, 0, 10))
	requireFault(t, f, next, acts)
	next, acts = step(t, f, chunk(LogEnd{}, 10, 0, 4))
	requireFault(t, f, next, acts)

	for name, r := range map[string]ReceiveFetchSnapshotResponse{
		"past the size":  chunk(id, 10, 4, 7),
		"negative bytes": chunk(id, 10, 4, -1),
		"negative size":  chunk(id, -1, 4, 0),
	} {
		r := r
		t.Run(name, func(t *testing.T) {
			next, acts := step(t, s, r)
			requireUnchanged(t, s, next, acts)
		})
	}
}

// TestFollowerDoesNotDownloadASnapshotItsLogCovers: a Fetch answer naming a
// snapshot that ends inside the follower's log, in the epoch of the log's
// record before its end, starts no download (the log holds the same
// records): the follower fetches on from its log end, as Kafka's follower
// does when the snapshot is already on disk, and a FetchSnapshot answer
// for it is then unsolicited (a Fault).
// Reference: KafkaRaftClient.handleFetchResponse,
// KafkaMetadataLog.createNewSnapshotUnchecked; docs/design.md D43, D57.
func TestFollowerDoesNotDownloadASnapshotItsLogCovers(t *testing.T) {
	for _, covered := range []LogEnd{{Offset: 7, Epoch: 4}, {Offset: 8, Epoch: 4}, {Offset: 4, Epoch: 2}} {
		covered := covered
		r := restartedFollower(t) // log end (8, 4): epoch 1 from 0, 2 from 3, 4 from 6
		next, acts := step(t, r, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1, Snapshot: &covered})
		require.Equal(t, []Action{
			ResetTimer{Timer: FetchTimer, After: testTf},
			SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 8, FetchEpoch: 4, HighWatermark: -1},
		}, acts, "snapshot %+v", covered)
		after, acts := step(t, next, ReceiveFetchSnapshotResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, Snapshot: covered, Size: 3, Bytes: 3})
		requireFault(t, next, after, acts)
	}
}

// TestFollowerInstallsASnapshotOverADivergentLog: a complete download of a
// snapshot that does not compare past the log end (by epoch, then offset)
// still replaces the whole log when the log does not cover it: the leader
// of this epoch answered the log's Fetch with it, so the log diverges from
// the leader's at or before the snapshot's last record (here the log's
// record 7 is of epoch 4, the leader's record 8 of epoch 2) and none of its
// records from there on is committed. Kafka throws ("full log truncation
// expected but didn't happen"), and its follower can never rejoin.
// Reference: KafkaRaftClient.handleFetchSnapshotResponse,
// KafkaMetadataLog.truncateToLatestSnapshot; docs/design.md D57.
func TestFollowerInstallsASnapshotOverADivergentLog(t *testing.T) {
	id := LogEnd{Offset: 9, Epoch: 2}
	r := restartedFollower(t) // log end (8, 4)
	r, acts := step(t, r, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1, Snapshot: &id})
	require.Contains(t, acts, Action(SendFetchSnapshot{To: 1, CurrentLeaderEpoch: 4, Snapshot: id, Position: 0}))
	next, acts := step(t, r, ReceiveFetchSnapshotResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, Snapshot: id, Size: 3, Bytes: 3})
	require.Equal(t, []Action{
		WriteSnapshotChunk{Snapshot: id, Position: 0},
		InstallSnapshot{Snapshot: id},
		HighWatermarkChanged{HighWatermark: 9},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 9, FetchEpoch: 2, HighWatermark: 9},
	}, acts)
	require.Equal(t, id, next.LogEnd())
	require.Equal(t, int64(9), next.LogStart())

	// A snapshot that would remove a committed record: the follower
	// refuses the leader, drops the download without writing its last
	// chunk, and keeps its log (D113). Earlier chunks are written.
	c := restartedFollower(t)
	c, _ = step(t, c, fetchOK(1, 4, 8))
	below := LogEnd{Offset: 7, Epoch: 3}
	c, _ = step(t, c, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: 8, Snapshot: &below})
	c, acts = step(t, c, ReceiveFetchSnapshotResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, Snapshot: below, Size: 3, Bytes: 2})
	require.Equal(t, WriteSnapshotChunk{Snapshot: below, Position: 0}, acts[0])
	next, acts = step(t, c, ReceiveFetchSnapshotResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, Snapshot: below, Position: 2, Size: 3, Bytes: 1})
	requireRefused(t, c, next, acts, LeaderRefused{LeaderID: 1, Epoch: 4, TruncateTo: 7, HighWatermark: 8, Reason: "the leader's snapshot ends below the high watermark"})
	require.Equal(t, LogEnd{Offset: 8, Epoch: 4}, next.LogEnd())
	_, _, downloading := next.SnapshotDownload()
	require.False(t, downloading)
}

// TestFollowerKeepsFetchingForAStoredSnapshot: a snapshot answer naming a
// snapshot the follower already has starts no download; it fetches on.
// Reference: KafkaRaftClient.handleFetchResponse
// (createNewSnapshotUnchecked returns nothing for a stored snapshot);
// docs/design.md D43.
func TestFollowerKeepsFetchingForAStoredSnapshot(t *testing.T) {
	id := LogEnd{Offset: 10, Epoch: 3}
	s, _ := restart(t, config(2, 1, 2, 3), quorumRecord(4, 1, NoNode), LogState{Start: 10, End: id, LatestSnapshot: &id, EarliestSnapshot: &id})
	next, acts := step(t, s, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1, Snapshot: &id})
	require.Equal(t, []Action{fetchTimerReset, SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 10, FetchEpoch: 3, HighWatermark: -1}}, acts)
	_, _, ok := next.SnapshotDownload()
	require.False(t, ok)
}

// TestSnapshotCreated: the host may snapshot at or below the log's high
// watermark, in an epoch not above the current one, at a point that agrees
// with the log; one below the log start is declined; anything else is a
// Fault. A new snapshot becomes the latest; a repeated one changes nothing.
// Reference: KafkaMetadataLog.createNewSnapshot, KafkaRaftClient.createSnapshot;
// KafkaRaftClientSnapshotTest.testCreateSnapshotAsLeaderWithInvalidSnapshotId,
// testCreateSnapshotAsFollowerWithInvalidSnapshotId; docs/design.md D45.
func TestSnapshotCreated(t *testing.T) {
	l := snapshotLeader(t) // high watermark 7, epochs 2@0 4@3 5@6
	for name, id := range map[string]LogEnd{
		"past the high watermark":  {Offset: 8, Epoch: 5},
		"epoch past the current":   {Offset: 7, Epoch: 6},
		"epoch not the log's":      {Offset: 5, Epoch: 2},
		"epoch of the next record": {Offset: 6, Epoch: 5},
		"epoch not in the log":     {Offset: 5, Epoch: 3},
		"negative offset":          {Offset: -1, Epoch: 0},
		"negative epoch":           {Offset: 3, Epoch: -1},
		"offset 0 with an epoch":   {Offset: 0, Epoch: 2},
	} {
		id := id
		t.Run(name, func(t *testing.T) {
			next, acts := step(t, l, SnapshotCreated{Snapshot: id})
			requireFault(t, l, next, acts)
		})
	}
	// A leader whose high watermark is unknown has nothing to snapshot.
	fresh := leaderOf(t, 3)
	next, acts := step(t, fresh, SnapshotCreated{Snapshot: LogEnd{Offset: 1, Epoch: 1}})
	requireFault(t, fresh, next, acts)

	s := snapshotted(t, l, LogEnd{Offset: 3, Epoch: 2}, false)
	s = snapshotted(t, s, LogEnd{Offset: 7, Epoch: 5}, false)
	latest, _ := s.LatestSnapshot()
	require.Equal(t, LogEnd{Offset: 7, Epoch: 5}, latest)
	s = snapshotted(t, s, LogEnd{Offset: 6, Epoch: 4}, false)
	latest, _ = s.LatestSnapshot()
	earliest, _ := s.EarliestSnapshot()
	require.Equal(t, LogEnd{Offset: 7, Epoch: 5}, latest, "an older snapshot is not the latest")
	require.Equal(t, LogEnd{Offset: 3, Epoch: 2}, earliest)
	again, acts := step(t, s, SnapshotCreated{Snapshot: LogEnd{Offset: 7, Epoch: 5}})
	requireUnchanged(t, s, again, acts)
	// An epoch below the earliest snapshot's is not valid for the log
	// (validateOffsetAndEpoch answers SNAPSHOT).
	late := snapshotted(t, l, LogEnd{Offset: 7, Epoch: 5}, false)
	next, acts = step(t, late, SnapshotCreated{Snapshot: LogEnd{Offset: 3, Epoch: 2}})
	requireFault(t, late, next, acts)

	// Below the log start: declined, nothing changes (an install can
	// overtake a snapshot the host is writing; Kafka's createNewSnapshot
	// logs and returns nothing). At the start with another epoch: not
	// valid for the log.
	c := cleanedLeader(t)
	next, acts = step(t, c, SnapshotCreated{Snapshot: LogEnd{Offset: 2, Epoch: 2}})
	requireUnchanged(t, c, next, acts)
	next, acts = step(t, c, SnapshotCreated{Snapshot: LogEnd{Offset: 3, Epoch: 1}})
	requireFault(t, c, next, acts)

	// A follower snapshots below its high watermark, as the leader told it.
	f := newFollower(t)
	f, _ = durable(t, f, LogEnd{Offset: 4, Epoch: 1})
	next, acts = step(t, f, SnapshotCreated{Snapshot: LogEnd{Offset: 2, Epoch: 1}})
	requireFault(t, f, next, acts)
	f, _ = step(t, f, fetchOK(1, 1, 3))
	f = snapshotted(t, f, LogEnd{Offset: 3, Epoch: 1}, false)
	next, acts = step(t, f, SnapshotCreated{Snapshot: LogEnd{Offset: 4, Epoch: 1}})
	requireFault(t, f, next, acts)
}

// TestLogStartMoved: the host cleans the log up to a snapshot it has (the
// latest, or one that agrees with the log), never past the latest; the log
// start becomes that snapshot's end and it becomes the earliest snapshot. A
// start at or below the current one is stale. After cleaning, the leader
// answers a follower that fell behind the start with the latest snapshot.
// Reference: KafkaMetadataLog.deleteBeforeSnapshot,
// LeaderEpochFileCache.truncateFromStart;
// KafkaRaftClientSnapshotTest.testFetchRequestOffsetLessThanLogStart;
// docs/design.md D45.
func TestLogStartMoved(t *testing.T) {
	l := snapshotLeader(t)
	next, acts := step(t, l, LogStartMoved{Snapshot: LogEnd{Offset: 3, Epoch: 2}})
	requireFault(t, l, next, acts) // no snapshot yet

	s := snapshotted(t, l, LogEnd{Offset: 6, Epoch: 4}, false)
	for name, id := range map[string]LogEnd{
		"past the latest":       {Offset: 7, Epoch: 5},
		"epoch not the log's":   {Offset: 3, Epoch: 3},
		"negative":              {Offset: -1, Epoch: 2},
		"past the latest, same": {Offset: 7, Epoch: 4},
	} {
		id := id
		t.Run(name, func(t *testing.T) {
			next, acts := step(t, s, LogStartMoved{Snapshot: id})
			requireFault(t, s, next, acts)
		})
	}
	stale, acts := step(t, s, LogStartMoved{Snapshot: LogEnd{}})
	requireUnchanged(t, s, stale, acts)

	// Up to an older snapshot that agrees with the log.
	s, acts = step(t, s, LogStartMoved{Snapshot: LogEnd{Offset: 3, Epoch: 2}})
	require.Empty(t, acts)
	require.Equal(t, int64(3), s.LogStart())
	earliest, _ := s.EarliestSnapshot()
	require.Equal(t, LogEnd{Offset: 3, Epoch: 2}, earliest)
	require.Equal(t, []EpochStart{{Epoch: 4, StartOffset: 3}, {Epoch: 5, StartOffset: 6}}, s.log.epochs())
	stale, acts = step(t, s, LogStartMoved{Snapshot: LogEnd{Offset: 3, Epoch: 2}})
	requireUnchanged(t, s, stale, acts)

	// A follower at 2 fell behind the start: the latest snapshot.
	_, acts = step(t, s, fetchFrom(2, 5, 2, 2))
	require.Equal(t, []Action{snapshotAnswer(2, 5, 1, 7, LogEnd{Offset: 6, Epoch: 4})}, acts)

	// Up to the latest: the epoch entry spanning the start moves to it.
	s, _ = step(t, s, LogStartMoved{Snapshot: LogEnd{Offset: 6, Epoch: 4}})
	require.Equal(t, int64(6), s.LogStart())
	require.Equal(t, []EpochStart{{Epoch: 5, StartOffset: 6}}, s.log.epochs())
	_, acts = step(t, s, fetchFrom(2, 5, 6, 4))
	require.Nil(t, ofType[SendFetchResponse](acts)[0].Snapshot, "at the log start in the snapshot's epoch: valid")

	// Cleaning a whole log: an empty log at its snapshot.
	f := newFollower(t)
	f, _ = durable(t, f, LogEnd{Offset: 4, Epoch: 1})
	f, _ = step(t, f, fetchOK(1, 1, 4))
	f = snapshotted(t, f, LogEnd{Offset: 4, Epoch: 1}, true)
	require.Equal(t, LogEnd{Offset: 4, Epoch: 1}, f.LogEnd())
	require.Empty(t, f.log.epochs())
	f, _ = durable(t, f, LogEnd{Offset: 6, Epoch: 1})
	require.Equal(t, []EpochStart{{Epoch: 1, StartOffset: 4}}, f.log.epochs())
}

// TestLogStartMovedSendsWaitingFetch: records below the new start are in a
// durable snapshot, so the flushed offset is at least the start; a voter
// whose Fetch waited for that flush sends it.
// Reference: KafkaRaftClient.appendAsFollower (voters fetch once flushed);
// docs/design.md D30, D45.
func TestLogStartMovedSendsWaitingFetch(t *testing.T) {
	f := newFollower(t)
	f, _ = step(t, f, LogAppended{End: LogEnd{Offset: 4, Epoch: 1}})
	f, acts := step(t, f, ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 4})
	require.Empty(t, ofType[SendFetch](acts), "the Fetch waits for the flush")
	f, _ = step(t, f, SnapshotCreated{Snapshot: LogEnd{Offset: 4, Epoch: 1}})
	f, acts = step(t, f, LogStartMoved{Snapshot: LogEnd{Offset: 4, Epoch: 1}})
	require.Equal(t, []Action{SendFetch{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 4, FetchEpoch: 1, HighWatermark: 4}}, acts)
	require.Equal(t, int64(4), f.FlushedOffset())
}

// TestSnapshotTransferThroughDeliver: a new follower catches up from a
// leader whose log starts after a snapshot, every message carried by
// Deliver (the leader's host filling in the snapshot's size): the fetch
// from offset 0 gets the snapshot id, the follower downloads and installs
// it, and its next fetch, from the snapshot end, is valid.
// Reference: KafkaRaftClientSnapshotTest.testFetchResponseWithSnapshotId,
// testFetchSnapshotRequestAsLeader; docs/design.md D43, D44.
func TestSnapshotTransferThroughDeliver(t *testing.T) {
	l := cleanedLeader(t)
	f := asFollower(t, start(t, config(3, 1, 2, 3)), 5, 1)
	id := LogEnd{Offset: 3, Epoch: 2}
	deliver := func(from State, a Action) Event {
		t.Helper()
		_, e, ok := Deliver(from.Local(), a)
		require.True(t, ok, "%T", a)
		return e
	}
	only := func(acts []Action, pick func(Action) bool) Action {
		t.Helper()
		var out []Action
		for _, a := range acts {
			if pick(a) {
				out = append(out, a)
			}
		}
		require.Len(t, out, 1, "%+v", acts)
		return out[0]
	}
	isRequest := func(a Action) bool {
		switch a.(type) {
		case SendFetch, SendFetchSnapshot:
			return true
		}
		return false
	}
	isResponse := func(a Action) bool {
		switch a.(type) {
		case SendFetchResponse, SendFetchSnapshotResponse:
			return true
		}
		return false
	}

	l, acts := step(t, l, deliver(f, sentFetch(f, 1)))
	resp := only(acts, isResponse)
	require.Equal(t, snapshotAnswer(3, 5, 1, 7, id), resp)
	f, acts = step(t, f, deliver(l, resp))
	req := only(acts, isRequest)
	require.Equal(t, SendFetchSnapshot{To: 1, CurrentLeaderEpoch: 5, Snapshot: id}, req)

	e := deliver(f, req).(ReceiveFetchSnapshot)
	require.Equal(t, int64(-1), e.Size, "the leader's host looks the size up")
	e.Size = 50
	l, acts = step(t, l, e)
	resp = only(acts, isResponse)
	f, acts = step(t, f, deliver(l, resp))
	require.Equal(t, []Action{WriteSnapshotChunk{Snapshot: id}, InstallSnapshot{Snapshot: id}, HighWatermarkChanged{HighWatermark: 3}}, acts[:3])
	req = only(acts, isRequest)
	require.Equal(t, SendFetch{To: 1, CurrentLeaderEpoch: 5, FetchOffset: 3, FetchEpoch: 2, HighWatermark: 3}, req)

	l, acts = step(t, l, deliver(f, req))
	require.Equal(t, SendFetchResponse{To: 3, Epoch: 5, LeaderID: 1, HighWatermark: 7}, only(acts, isResponse))
	require.Equal(t, int64(3), l.VoterEndOffsets()[2])
}

// CommittedOffset is what HighWatermarkChanged last reported, also when a
// new leader's quorum high watermark is unknown again, and the latest
// snapshot's end after a restart: where a host may snapshot.
func TestCommittedOffset(t *testing.T) {
	l := snapshotLeader(t) // high watermark 7
	require.Equal(t, int64(7), l.CommittedOffset())
	var reported int64 = -1
	f := newFollower(t)
	require.Equal(t, int64(-1), f.CommittedOffset())
	f, _ = durable(t, f, LogEnd{Offset: 4, Epoch: 1})
	f, acts := step(t, f, fetchOK(1, 1, 3))
	for _, h := range ofType[HighWatermarkChanged](acts) {
		reported = h.HighWatermark
	}
	require.Equal(t, int64(3), reported)
	require.Equal(t, reported, f.CommittedOffset())
	// The follower becomes Prospective, then Candidate: its quorum high
	// watermark is unknown in the new role, the log's is not.
	p, _ := step(t, f, FetchTimeout{})
	require.Equal(t, int64(3), p.CommittedOffset())
	// A restart from a snapshot starts it at the snapshot's end.
	id := LogEnd{Offset: 5, Epoch: 2}
	r, _ := restart(t, config(2, 1, 2, 3), quorumRecord(2, 1, NoNode), LogState{End: id, Start: 5, LatestSnapshot: &id, EarliestSnapshot: &id})
	require.Equal(t, int64(-1), r.HighWatermark())
	require.Equal(t, int64(5), r.CommittedOffset())
}
