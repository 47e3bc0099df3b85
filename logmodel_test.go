package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Scenario tests for the log model (docs/design.md D30, D31): the state
// keeps a WRITTEN log end (every record the host wrote, flushed or not;
// Kafka's log end offset) and a FLUSHED offset, fed by LogAppended and
// LogFlushed. Every state is built by stepping real events.

// withUnflushed restarts cfg's replica with the durable record rec and a log
// of epoch epoch ending at flushed, then reports records of the same epoch
// written up to written and not flushed yet.
func withUnflushed(t *testing.T, cfg Config, rec QuorumRecord, epoch Epoch, flushed, written int64) State {
	t.Helper()
	s, _ := restart(t, cfg, rec, LogState{End: LogEnd{Offset: flushed, Epoch: epoch}})
	s, acts := step(t, s, LogAppended{End: LogEnd{Offset: written, Epoch: epoch}})
	require.Empty(t, acts)
	require.Equal(t, LogEnd{Offset: written, Epoch: epoch}, s.LogEnd())
	require.Equal(t, flushed, s.FlushedOffset())
	return s
}

// winElection makes the Prospective voter s win its pre-vote and its vote with
// the grants of voter from alone (a majority of three voters), without
// reporting the LeaderChange record. It returns the Leader and the actions
// of the winning step.
func winElection(t *testing.T, s State, from NodeID) (State, []Action) {
	t.Helper()
	require.Equal(t, Prospective, s.Role(), "%v", s)
	s, _ = step(t, s, grantVote(from, s.Epoch()))
	require.Equal(t, Candidate, s.Role(), "%v", s)
	s, acts := step(t, s, grantVote(from, s.Epoch()))
	require.Equal(t, Leader, s.Role(), "%v", s)
	return s, acts
}

// TestLeaderCountsItsFlushedOffsetNotItsWrittenEnd: the leader counts its
// own FLUSHED offset toward the high watermark, not its written end, so a
// record only the leader has written is not committed until the leader has
// flushed it or a majority of followers holds it; LogFlushed on a leader may
// advance the high watermark, LogAppended alone never does.
// Reference: Kafka's KafkaRaftClient.flushLeaderLog and
// LeaderState.maybeUpdateHighWatermark (updateLocalState with the flushed
// end); docs/design.md D30.
func TestLeaderCountsItsFlushedOffsetNotItsWrittenEnd(t *testing.T) {
	s := leaderOf(t, 3) // log end (1, 1), all flushed, epoch start 0
	s, acts := step(t, s, fetchFrom(2, 1, 1, 1))
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 1},
		checkQuorumTimerReset,
		SendFetchResponse{To: 2, Epoch: 1, LeaderID: 1, HighWatermark: 1},
	}, acts)

	// Written, not flushed: nothing to commit yet.
	s, acts = step(t, s, LogAppended{End: LogEnd{Offset: 4, Epoch: 1}})
	require.Empty(t, acts)
	require.Equal(t, LogEnd{Offset: 4, Epoch: 1}, s.LogEnd())
	require.Equal(t, int64(1), s.FlushedOffset())

	// Voter 2 holds offsets 0..3 but the leader has flushed only offset 0:
	// two of three voters hold offset 1 and nothing beyond it.
	s, acts = step(t, s, fetchFrom(2, 1, 4, 1))
	require.Equal(t, []Action{
		checkQuorumTimerReset,
		SendFetchResponse{To: 2, Epoch: 1, LeaderID: 1, HighWatermark: 1},
	}, acts)
	require.Equal(t, int64(1), s.HighWatermark())

	// Each flush raises the high watermark to what is now on a majority.
	s, acts = step(t, s, LogFlushed{Offset: 3})
	require.Equal(t, []Action{HighWatermarkChanged{HighWatermark: 3}}, acts)
	s, acts = step(t, s, LogFlushed{Offset: 4})
	require.Equal(t, []Action{HighWatermarkChanged{HighWatermark: 4}}, acts)
	require.Equal(t, int64(4), s.HighWatermark())

	// A flush past what any follower holds commits nothing more.
	s, acts = step(t, s, LogAppended{End: LogEnd{Offset: 6, Epoch: 1}})
	require.Empty(t, acts)
	s, acts = step(t, s, LogFlushed{Offset: 6})
	require.Empty(t, acts)
	require.Equal(t, int64(4), s.HighWatermark())

	// The only voter commits on its flush, never on the write alone.
	solo, acts, err := NewState(config(1, 1), nil, LogState{})
	require.NoError(t, err)
	require.Equal(t, Leader, solo.Role())
	require.Len(t, ofType[AppendLeaderChange](acts), 1)
	solo, acts = step(t, solo, LogAppended{End: LogEnd{Offset: 1, Epoch: 1}})
	require.Empty(t, acts)
	require.Equal(t, int64(-1), solo.HighWatermark())
	solo, acts = step(t, solo, LogFlushed{Offset: 1})
	require.Equal(t, []Action{HighWatermarkChanged{HighWatermark: 1}}, acts)
	require.Equal(t, int64(1), solo.HighWatermark())
}

// TestEpochStartsAtWrittenLogEnd: a new leader's epoch starts at its
// WRITTEN log end, flushed or not: its LeaderChange record is written
// there, and the high watermark must get past it, so records of older
// epochs that the leader had written but not flushed when it won are never
// committed by counting replicas (Raft's figure 8). The vote requests that
// won carry the written end too.
// Reference: Kafka's QuorumState.transitionToLeader and
// KafkaRaftClient.onBecomeLeader (epoch start at log.endOffset());
// LeaderState.maybeUpdateHighWatermark; docs/design.md D30.
func TestEpochStartsAtWrittenLogEnd(t *testing.T) {
	// Voter 1 restarted in epoch 1 with records 0..2 durable, then wrote
	// records 3 and 4 (epoch 1) that are not flushed yet.
	s := withUnflushed(t, config(1, 1, 2, 3), QuorumRecord{Epoch: 1, LeaderID: NoNode, VotedKey: NoReplica}, 1, 3, 5)
	written := LogEnd{Offset: 5, Epoch: 1}

	s, acts := step(t, s, ElectionTimeout{})
	require.Equal(t, Prospective, s.Role())
	require.Equal(t, []SendVoteRequest{
		{To: ReplicaKey{ID: 2}, CandidateEpoch: 1, Candidate: ReplicaKey{ID: 1}, CandidateLogEnd: written, PreVote: true},
		{To: ReplicaKey{ID: 3}, CandidateEpoch: 1, Candidate: ReplicaKey{ID: 1}, CandidateLogEnd: written, PreVote: true},
	}, ofType[SendVoteRequest](acts))
	s, acts = step(t, s, grantVote(2, 1))
	require.Equal(t, Candidate, s.Role())
	require.Equal(t, []SendVoteRequest{
		{To: ReplicaKey{ID: 2}, CandidateEpoch: 2, Candidate: ReplicaKey{ID: 1}, CandidateLogEnd: written},
		{To: ReplicaKey{ID: 3}, CandidateEpoch: 2, Candidate: ReplicaKey{ID: 1}, CandidateLogEnd: written},
	}, ofType[SendVoteRequest](acts))
	s, acts = step(t, s, grantVote(2, 2))
	require.Equal(t, Leader, s.Role())
	require.Equal(t, []AppendLeaderChange{{Epoch: 2, LeaderID: 1, Voters: keys(1, 2, 3), GrantingVoters: keys(1, 2)}},
		ofType[AppendLeaderChange](acts))

	// The LeaderChange record lands at the written end, offset 5.
	s, acts = durable(t, s, LogEnd{Offset: 6, Epoch: 2})
	require.Empty(t, acts)
	require.Equal(t, int64(6), s.FlushedOffset())

	// Voter 2 holds offsets 0..4: a majority holds offset 5, the epoch
	// start, but nothing past it, so nothing is committed.
	s, acts = step(t, s, fetchFrom(2, 2, 5, 1))
	require.Equal(t, []Action{
		checkQuorumTimerReset,
		SendFetchResponse{To: 2, Epoch: 2, LeaderID: 1, HighWatermark: -1},
	}, acts)
	require.Equal(t, int64(-1), s.HighWatermark())

	// Once voter 2 holds the LeaderChange record too, everything is.
	s, acts = step(t, s, fetchFrom(2, 2, 6, 2))
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 6},
		checkQuorumTimerReset,
		SendFetchResponse{To: 2, Epoch: 2, LeaderID: 1, HighWatermark: 6},
	}, acts)
	require.Equal(t, int64(6), s.HighWatermark())
}

// TestVoteComparesWrittenLogEnd: a voter compares a candidate's log end
// with its WRITTEN log end, flushed or not: a candidate missing records
// this voter has written is not up to date, even if it holds everything
// this voter has flushed.
// Reference: Kafka's KafkaRaftClient.handleVoteRequest (log.endOffset()
// and lastFetchedEpoch()); docs/design.md D30.
func TestVoteComparesWrittenLogEnd(t *testing.T) {
	// Voter 1: written end (5, 1), flushed 3.
	s := withUnflushed(t, config(1, 1, 2, 3), QuorumRecord{Epoch: 1, LeaderID: NoNode, VotedKey: NoReplica}, 1, 3, 5)
	for _, c := range []struct {
		name    string
		req     ReceiveVoteRequest
		epoch   Epoch
		granted bool
	}{
		{"pre-vote past the flushed offset, behind the written end", preVoteRequest(2, 1, LogEnd{Offset: 4, Epoch: 1}), 1, false},
		{"pre-vote at the flushed offset", preVoteRequest(2, 1, LogEnd{Offset: 3, Epoch: 1}), 1, false},
		{"pre-vote at the written end", preVoteRequest(2, 1, LogEnd{Offset: 5, Epoch: 1}), 1, true},
		{"vote past the flushed offset, behind the written end", standardVoteRequest(2, 2, LogEnd{Offset: 4, Epoch: 1}), 2, false},
		{"vote at the written end", standardVoteRequest(2, 2, LogEnd{Offset: 5, Epoch: 1}), 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			next, acts := step(t, s, c.req)
			require.Equal(t, []SendVoteResponse{voteAnswer(2, ErrNone, c.epoch, NoNode, c.granted)},
				ofType[SendVoteResponse](acts))
			v, has := next.VotedKey()
			require.Equal(t, c.granted && !c.req.PreVote, has, "vote %v", v)
		})
	}
}

// TestLeaderServesFetchWithinUnflushedLog: the leader validates a Fetch
// against its WRITTEN log: a follower fetching at an offset the leader has
// written but not flushed is valid, not diverging; only an offset past the
// written end diverges.
// Reference: Kafka's RaftLog.validateOffsetAndEpoch (endOffsetForEpoch on
// the log end offset) in KafkaRaftClient.handleFetchRequest;
// docs/design.md D30.
func TestLeaderServesFetchWithinUnflushedLog(t *testing.T) {
	s := leaderOf(t, 3)
	s, _ = step(t, s, fetchFrom(2, 1, 1, 1))
	require.Equal(t, int64(1), s.HighWatermark())
	s, acts := step(t, s, LogAppended{End: LogEnd{Offset: 5, Epoch: 1}})
	require.Empty(t, acts)
	require.Equal(t, int64(1), s.FlushedOffset())

	for _, offset := range []int64{4, 5} {
		_, acts = step(t, s, fetchFrom(2, 1, offset, 1))
		require.Equal(t, []Action{
			checkQuorumTimerReset,
			SendFetchResponse{To: 2, Epoch: 1, LeaderID: 1, HighWatermark: 1},
		}, acts, "fetch at %d", offset)
	}

	_, acts = step(t, s, fetchFrom(2, 1, 6, 1))
	require.Equal(t, []Action{
		SendFetchResponse{To: 2, Epoch: 1, LeaderID: 1, HighWatermark: 1, Diverging: &LogOffsetMetadata{Offset: 5, Epoch: 1}},
	}, acts)
}

// TestVoterFollowerFetchesOnlyOnceFlushed: a voter Follower sends its next
// Fetch only once its whole written log is flushed, because the leader
// counts the fetch offset toward the high watermark. A Fetch due while
// records are unflushed (after a successful response, or on entering
// Follower) waits, and the LogFlushed that reaches the written end sends
// it; the fetch timer is reset as before.
// Reference: Kafka's KafkaRaftClient.appendAsFollower ("the leader only
// requires that voters have flushed their log before sending a Fetch
// request"); docs/design.md D30.
func TestVoterFollowerFetchesOnlyOnceFlushed(t *testing.T) {
	s := newFollower(t) // voter 2 following 1 in epoch 1, Fetch at 0 sent

	// The response carried records 0..2: written, not flushed.
	s, acts := step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	require.Empty(t, acts)
	s, acts = step(t, s, fetchOK(1, 1, -1))
	require.Equal(t, []Action{fetchTimerReset}, acts)

	s, acts = step(t, s, LogFlushed{Offset: 2})
	require.Empty(t, acts, "flushed 2 of 3")
	s, acts = step(t, s, LogFlushed{Offset: 3})
	require.Equal(t, []Action{
		SendFetch{To: 1, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1, HighWatermark: -1},
	}, acts)
	s, acts = step(t, s, LogFlushed{Offset: 3})
	require.Empty(t, acts, "the Fetch goes out once")

	// The next response carries records 3 and 4; before they are flushed a
	// new leader announces epoch 2: entering Follower, the Fetch waits too.
	s, acts = step(t, s, LogAppended{End: LogEnd{Offset: 5, Epoch: 1}})
	require.Empty(t, acts)
	s, acts = step(t, s, fetchOK(1, 1, 2))
	require.Equal(t, []Action{HighWatermarkChanged{HighWatermark: 2}, fetchTimerReset}, acts)
	s, acts = step(t, s, ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 2, VoterID: 2})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, NodeID(3), s.Leader())
	require.Contains(t, acts, Action(fetchTimerReset))
	require.Empty(t, ofType[SendFetch](acts), "%v", acts)
	s, acts = step(t, s, LogFlushed{Offset: 5})
	require.Equal(t, []Action{
		SendFetch{To: 3, CurrentLeaderEpoch: 2, FetchOffset: 5, FetchEpoch: 1, HighWatermark: 2},
	}, acts)
	require.Equal(t, int64(5), s.FlushedOffset())
}

// TestObserverFetchesBeforeFlush: an observer is never counted toward the
// high watermark, so it fetches at once from its written log end whether
// or not its records are flushed.
// Reference: Kafka's KafkaRaftClient.appendAsFollower (only voters flush
// before fetching); docs/design.md D30.
func TestObserverFetchesBeforeFlush(t *testing.T) {
	s := observerFollower(t) // observer 4 following 2 in epoch 1
	s, acts := step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	require.Empty(t, acts)
	s, acts = step(t, s, fetchOK(2, 1, -1))
	require.Equal(t, []Action{
		fetchTimerReset,
		SendFetch{To: 2, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1, HighWatermark: -1},
	}, acts)

	// Its fetch timer expires before the flush: it searches, and attaches
	// again, fetching from the written end each time.
	s, acts = step(t, s, FetchTimeout{})
	require.Equal(t, Unattached, s.Role())
	require.Equal(t, []SendFetch{
		{To: NoNode, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1, HighWatermark: -1},
	}, ofType[SendFetch](acts))
	s, acts = step(t, s, ReceiveFetchResponse{From: 3, Error: ErrNotLeaderOrFollower, LeaderID: 2, LeaderEpoch: 1, HighWatermark: -1})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, []SendFetch{
		{To: 2, CurrentLeaderEpoch: 1, FetchOffset: 3, FetchEpoch: 1, HighWatermark: -1},
	}, ofType[SendFetch](acts))

	s, acts = step(t, s, LogFlushed{Offset: 3})
	require.Empty(t, acts)
	require.Equal(t, int64(3), s.FlushedOffset())
}

// TestTruncateLowersFlushedOffset: truncating the log lowers the flushed
// offset to at most the truncation point (the removed records are no
// longer durable), and keeps a lower flushed offset.
// Reference: Kafka's LocalLog.truncateTo (the recovery point never stays
// above the new log end); docs/design.md D30.
func TestTruncateLowersFlushedOffset(t *testing.T) {
	// Voter 2 following 1 in epoch 4, log epochs 1@0, 2@3, 4@6, end 8,
	// all flushed.
	s := restartedFollower(t)
	require.Equal(t, int64(8), s.FlushedOffset())
	s, acts := step(t, s, ReceiveFetchResponse{
		From: 1, LeaderID: 1, LeaderEpoch: 4, HighWatermark: -1,
		Diverging: &LogOffsetMetadata{Offset: 5, Epoch: 2},
	})
	require.Equal(t, []Action{
		TruncateLog{To: 5},
		fetchTimerReset,
		SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 5, FetchEpoch: 2, HighWatermark: -1},
	}, acts)
	require.Equal(t, LogEnd{Offset: 5, Epoch: 2}, s.LogEnd())
	require.Equal(t, int64(5), s.FlushedOffset())

	// Records rewritten at 5 and 6 are not durable until flushed again: the
	// next Fetch waits for their flush.
	s, acts = step(t, s, LogAppended{End: LogEnd{Offset: 7, Epoch: 4}})
	require.Empty(t, acts)
	s, acts = step(t, s, fetchOK(1, 4, -1))
	require.Equal(t, []Action{fetchTimerReset}, acts)
	s, acts = step(t, s, LogFlushed{Offset: 7})
	require.Equal(t, []Action{
		SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 7, FetchEpoch: 4, HighWatermark: -1},
	}, acts)
	require.Equal(t, int64(7), s.FlushedOffset())

	// An observer (it fetches before flushing) with written end 10 and
	// flushed 6: a truncation above 6 keeps it, one below lowers it.
	o := observerFollower(t)
	o, _ = step(t, o, LogAppended{End: LogEnd{Offset: 10, Epoch: 1}})
	o, _ = step(t, o, LogFlushed{Offset: 6})
	o, acts = step(t, o, ReceiveFetchResponse{
		From: 2, LeaderID: 2, LeaderEpoch: 1, HighWatermark: -1,
		Diverging: &LogOffsetMetadata{Offset: 8, Epoch: 1},
	})
	require.Equal(t, []TruncateLog{{To: 8}}, ofType[TruncateLog](acts))
	require.Equal(t, LogEnd{Offset: 8, Epoch: 1}, o.LogEnd())
	require.Equal(t, int64(6), o.FlushedOffset())
	o, acts = step(t, o, ReceiveFetchResponse{
		From: 2, LeaderID: 2, LeaderEpoch: 1, HighWatermark: -1,
		Diverging: &LogOffsetMetadata{Offset: 4, Epoch: 1},
	})
	require.Equal(t, []TruncateLog{{To: 4}}, ofType[TruncateLog](acts))
	require.Equal(t, LogEnd{Offset: 4, Epoch: 1}, o.LogEnd())
	require.Equal(t, int64(4), o.FlushedOffset())
}

// TestRestartCountsWholeLogFlushed: NewState treats the whole log it is
// given as flushed (the host syncs the log it recovered), so a restarted
// voter Follower fetches at once and a flush report up to the log end
// changes nothing.
// Reference: docs/design.md D30 (the host syncs the log it recovered) and
// the LogState contract in log.go; Kafka's KafkaRaftClient.initialize.
func TestRestartCountsWholeLogFlushed(t *testing.T) {
	log := LogState{End: LogEnd{Offset: 8, Epoch: 4}, Epochs: []EpochStart{{Epoch: 1}, {Epoch: 2, StartOffset: 3}, {Epoch: 4, StartOffset: 6}}}
	s, acts := restart(t, config(2, 1, 2, 3), QuorumRecord{Epoch: 4, LeaderID: 1, VotedKey: NoReplica}, log)
	require.Equal(t, Follower, s.Role())
	require.Equal(t, int64(8), s.FlushedOffset())
	require.Equal(t, []Action{
		Persist{Record: QuorumRecord{Epoch: 4, LeaderID: 1, VotedKey: NoReplica}},
		fetchTimerReset,
		SendFetch{To: 1, CurrentLeaderEpoch: 4, FetchOffset: 8, FetchEpoch: 4, HighWatermark: -1},
	}, acts)
	next, acts := step(t, s, LogFlushed{Offset: 8})
	require.Empty(t, acts)
	require.Equal(t, s, next)

	// A log given without its epoch history, and an empty one.
	s, _ = restart(t, config(2, 1, 2, 3), QuorumRecord{Epoch: 2, LeaderID: NoNode, VotedKey: NoReplica}, LogState{End: LogEnd{Offset: 5, Epoch: 2}})
	require.Equal(t, int64(5), s.FlushedOffset())
	require.Equal(t, LogEnd{Offset: 5, Epoch: 2}, s.LogEnd())
	s = start(t, config(2, 1, 2, 3))
	require.Equal(t, int64(0), s.FlushedOffset())
}

// TestImpossibleLogReportsAreFaults: a log report no host can make is a
// Fault with the state unchanged: a written end below the log's high
// watermark (committed records lost; the highest high watermark ever
// known, which a new leader does not reset), records of an epoch above the
// current one or below the log's last epoch, records a leader wrote in
// another epoch than its own, and a flush past the written end.
// Reference: Kafka's KafkaMetadataLog.truncateTo (never below the high
// watermark), LeaderEpochFileCache.assign (epochs only grow) and
// KafkaRaftClient.appendAsLeader (records in the leader's epoch);
// docs/design.md D30.
func TestImpossibleLogReportsAreFaults(t *testing.T) {
	// Voter 2 following 1 in epoch 1, log end (5, 1), high watermark 4,
	// all flushed.
	committed := func(t *testing.T) State {
		s := newFollower(t)
		s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 5, Epoch: 1}})
		s, _ = step(t, s, fetchOK(1, 1, 4))
		s, _ = step(t, s, LogFlushed{Offset: 5})
		require.Equal(t, int64(4), s.HighWatermark())
		return s
	}
	// The same voter, then leader of epoch 2 before its LeaderChange
	// record: the epoch's high watermark is unknown, the log's is 4.
	newLeader := func(t *testing.T) State {
		s, _ := step(t, committed(t), FetchTimeout{})
		s, _ = winElection(t, s, 3)
		require.Equal(t, int64(-1), s.HighWatermark())
		return s
	}
	// Voter 1 restarted in epoch 1 with log end (5, 1), then leader of
	// epoch 2 before its LeaderChange record: the log's last epoch is 1.
	leaderBeforeLeaderChange := func(t *testing.T) State {
		s, _ := restart(t, config(1, 1, 2, 3), QuorumRecord{Epoch: 1, LeaderID: NoNode, VotedKey: NoReplica}, LogState{End: LogEnd{Offset: 5, Epoch: 1}})
		s, _ = step(t, s, ElectionTimeout{})
		s, _ = winElection(t, s, 2)
		require.Equal(t, Epoch(2), s.Epoch())
		return s
	}
	unflushed := func(t *testing.T) State {
		s := newFollower(t)
		s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
		return s
	}
	for _, c := range []struct {
		name string
		s    func(t *testing.T) State
		e    Event
	}{
		{"write report below the high watermark", committed, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}}},
		{"write report below the log's high watermark on a new leader", newLeader, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}}},
		{"records of a later epoch", newFollower, LogAppended{End: LogEnd{Offset: 2, Epoch: 2}}},
		{"records of an epoch below the log's last epoch", restartedFollower, LogAppended{End: LogEnd{Offset: 9, Epoch: 2}}},
		{"a leader's records of an older epoch", leaderBeforeLeaderChange, LogAppended{End: LogEnd{Offset: 7, Epoch: 1}}},
		{"flush past the written end", func(t *testing.T) State { return leaderOf(t, 3) }, LogFlushed{Offset: 2}},
		{"flush past the written end with unflushed records", unflushed, LogFlushed{Offset: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.s(t)
			next, acts := step(t, s, c.e)
			requireFault(t, s, next, acts)
		})
	}
}

// TestStaleLogReportsAreDropped: a report of records already known (a
// repeated or late LogAppended at or below the written end, and not below
// the high watermark), a flush at or below the flushed offset (flushes
// complete late and out of order) and negative values change nothing and
// do nothing.
// Reference: docs/design.md D30 (a repeated report, an earlier flush that
// completed late; Kafka's UnifiedLog.flush does nothing at or below the
// recovery point).
func TestStaleLogReportsAreDropped(t *testing.T) {
	// Voter 2 following 1 in epoch 1: written end (5, 1), flushed 3, high
	// watermark 2, its Fetch waiting for the flush.
	follower := func(t *testing.T) State {
		s := newFollower(t)
		s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 5, Epoch: 1}})
		s, _ = step(t, s, fetchOK(1, 1, 2))
		s, _ = step(t, s, LogFlushed{Offset: 3})
		require.Equal(t, int64(2), s.HighWatermark())
		require.Equal(t, int64(3), s.FlushedOffset())
		return s
	}
	leader := func(t *testing.T) State { return leaderOf(t, 3) }
	for _, c := range []struct {
		name string
		s    func(t *testing.T) State
		e    Event
	}{
		{"repeated write report", follower, LogAppended{End: LogEnd{Offset: 5, Epoch: 1}}},
		{"late write report", follower, LogAppended{End: LogEnd{Offset: 4, Epoch: 1}}},
		{"late write report at the high watermark", follower, LogAppended{End: LogEnd{Offset: 2, Epoch: 1}}},
		{"late write report naming another epoch", follower, LogAppended{End: LogEnd{Offset: 4, Epoch: 7}}},
		{"negative write offset", follower, LogAppended{End: LogEnd{Offset: -1, Epoch: 1}}},
		{"negative write epoch", follower, LogAppended{End: LogEnd{Offset: 6, Epoch: -1}}},
		{"repeated flush report", follower, LogFlushed{Offset: 3}},
		{"late flush report", follower, LogFlushed{Offset: 2}},
		{"flush of nothing", follower, LogFlushed{Offset: 0}},
		{"negative flush offset", follower, LogFlushed{Offset: -1}},
		{"leader's repeated write report", leader, LogAppended{End: LogEnd{Offset: 1, Epoch: 1}}},
		{"leader's repeated flush report", leader, LogFlushed{Offset: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.s(t)
			next, acts := step(t, s, c.e)
			require.Empty(t, acts)
			require.Equal(t, s, next)
		})
	}
}

// TestObserverIgnoresLeadershipOfItsOldKey: an observer whose id is in the
// voter set under another directory id (its disk was replaced, KIP-853)
// reads a message naming its id as leader as naming no leader, since it
// never leads: it moves to the newer epoch and keeps looking for the
// leader instead of faulting. A voter named leader of an epoch it does not
// lead still faults.
// Reference: docs/design.md D31 (Kafka's transitionToFollower refuses to
// follow itself; kraft reads the leader as unknown), transition.go
// namedLeader; Kafka's KafkaRaftClient.hasConsistentLeader for the voter.
func TestObserverIgnoresLeadershipOfItsOldKey(t *testing.T) {
	cfg := Config{
		Local:    ReplicaKey{ID: 1, DirectoryID: dirA},
		Observer: true,
		Voters:   []ReplicaKey{{ID: 1, DirectoryID: dirB}, {ID: 2}, {ID: 3}},
		Seed:     7,
	}
	s := start(t, cfg)
	require.False(t, s.IsVoter())
	namesOldKey := ReceiveFetchResponse{From: 2, Error: ErrNotLeaderOrFollower, LeaderID: 1, LeaderEpoch: 3, HighWatermark: -1}

	s, acts := step(t, s, namesOldKey)
	require.Empty(t, ofType[Fault](acts), "%v", acts)
	require.Equal(t, Unattached, s.Role())
	require.Equal(t, Epoch(3), s.Epoch())
	require.Equal(t, NoNode, s.Leader())
	require.Equal(t, []SendFetch{{To: NoNode, CurrentLeaderEpoch: 3, HighWatermark: -1}}, ofType[SendFetch](acts))

	// It attaches to the leader the voters elect next.
	s, acts = step(t, s, ReceiveFetchResponse{From: 3, Error: ErrNotLeaderOrFollower, LeaderID: 2, LeaderEpoch: 4, HighWatermark: -1})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, Epoch(4), s.Epoch())
	require.Equal(t, NodeID(2), s.Leader())
	require.Equal(t, []SendFetch{{To: 2, CurrentLeaderEpoch: 4, HighWatermark: -1}}, ofType[SendFetch](acts))

	// A voter told it leads an epoch it does not lead faults.
	v := start(t, config(1, 1, 2, 3))
	next, acts := step(t, v, namesOldKey)
	requireFault(t, v, next, acts)
}

// TestVoterEndOffsetsOnLeaderOnly: a leader reports each voter's fetch
// offset and its own flushed offset; other roles report nothing.
func TestVoterEndOffsetsOnLeaderOnly(t *testing.T) {
	s := start(t, config(1, 1, 2, 3))
	require.Nil(t, s.VoterEndOffsets())
	s = electLeader(t, s) // the LeaderChange at 0, written and flushed
	require.Equal(t, []int64{1, -1, -1}, s.VoterEndOffsets())
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 2, Epoch: s.Epoch()}})
	s, _ = step(t, s, fetchFrom(2, s.Epoch(), 2, s.Epoch()))
	require.Equal(t, []int64{1, 2, -1}, s.VoterEndOffsets())
}

// TestLogHistoryDoesNotDependOnAppendBatching: the state after a leader's
// log reaches an end does not depend on how the host batched the
// LogAppended reports of one epoch: one report per record gives the state
// one report for all of them gives.
// Reference: LogAppended doc (one report per epoch); LeaderState.updateLocalState.
func TestLogHistoryDoesNotDependOnAppendBatching(t *testing.T) {
	s := start(t, config(1, 1))
	require.Equal(t, Leader, s.Role())
	one := s
	for i := int64(1); i <= 5; i++ {
		one, _ = durable(t, one, LogEnd{Offset: i, Epoch: 1})
	}
	all, _ := durable(t, s, LogEnd{Offset: 5, Epoch: 1})
	require.Equal(t, all, one)
	require.Equal(t, int64(5), one.HighWatermark())
}
