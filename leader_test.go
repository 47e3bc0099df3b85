package kraft

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// Scenario tests for the leader side of replication: answering Fetch on
// every role, the high watermark, check-quorum, BeginQuorumEpoch re-sends and
// LogAppended. Every state is built by stepping real events.

// TestFetchFromForeignClusterIsRejectedOnEveryRole: a Fetch carrying another
// cluster id gets INCONSISTENT_CLUSTER_ID and changes nothing, whatever the
// role; a Fetch without a cluster id is not refused for it.
// Reference: KafkaRaftClient.handleFetchRequest, hasValidClusterId.
func TestFetchFromForeignClusterIsRejectedOnEveryRole(t *testing.T) {
	for _, c := range everyRole(t, testClusterID) {
		for _, id := range []uuid.NullUUID{otherClusterID, {UUID: uuid.Nil, Valid: true}} {
			e := fetchFrom(2, c.epoch, 0, 0)
			e.ClusterID = id
			next, acts := step(t, c.s, e)
			require.Equal(t, c.s, next, c.name)
			require.Equal(t, []Action{SendFetchResponse{To: 2, Error: ErrInconsistentClusterID, Epoch: c.epoch, LeaderID: c.leader, HighWatermark: -1}}, acts, c.name)
		}
		e := fetchFrom(2, c.epoch, 0, 0)
		_, acts := step(t, c.s, e)
		require.NotEqual(t, ErrInconsistentClusterID, ofType[SendFetchResponse](acts)[0].Error, c.name)
	}
}

// TestFetchWithInvalidFieldsGetsInvalidRequest: a negative fetch offset or
// last fetched epoch, or a last fetched epoch above the current leader epoch,
// is INVALID_REQUEST with the responder's epoch and leader and no high
// watermark, before any epoch check, and changes nothing.
// Reference: KafkaRaftClient.handleFetchRequest.
func TestFetchWithInvalidFieldsGetsInvalidRequest(t *testing.T) {
	for _, c := range everyRole(t, testClusterID) {
		bad := []ReceiveFetch{
			fetchFrom(2, c.epoch, -1, 0),
			fetchFrom(2, c.epoch, 0, -1),
			fetchFrom(2, c.epoch, 5, c.epoch+1),
			// Stale epoch too: the field check comes first.
			fetchFrom(2, c.epoch-1, -3, 0),
		}
		for _, e := range bad {
			next, acts := step(t, c.s, e)
			require.Equal(t, c.s, next, c.name)
			require.Equal(t, []Action{SendFetchResponse{To: 2, Error: ErrInvalidRequest, Epoch: c.epoch, LeaderID: c.leader, HighWatermark: -1}}, acts, "%s %+v", c.name, e)
		}
	}
}

// TestFetchEpochFencingNeverChangesRole: a Fetch with an older epoch gets
// FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH, and one in our epoch
// to a non-leader NOT_LEADER_OR_FOLLOWER, each with our epoch and leader and
// high watermark -1. No role ever changes on an incoming Fetch, whatever its
// epoch: a leader fetched with a higher epoch keeps leading.
// Reference: KafkaRaftClient.handleFetchRequest, validateLeaderOnlyRequest.
func TestFetchEpochFencingNeverChangesRole(t *testing.T) {
	for _, c := range everyRole(t, noCluster()) {
		type probe struct {
			epoch Epoch
			code  ErrorCode
		}
		probes := []probe{{c.epoch + 1, ErrUnknownLeaderEpoch}, {c.epoch + 7, ErrUnknownLeaderEpoch}}
		if c.epoch > 0 {
			probes = append(probes, probe{c.epoch - 1, ErrFencedLeaderEpoch})
		}
		if c.s.Role() != Leader {
			probes = append(probes, probe{c.epoch, ErrNotLeaderOrFollower})
		}
		for _, p := range probes {
			next, acts := step(t, c.s, fetchFrom(2, p.epoch, 0, 0))
			require.Equal(t, c.s, next, "%s epoch %d", c.name, p.epoch)
			require.Equal(t, []Action{SendFetchResponse{To: 2, Error: p.code, Epoch: c.epoch, LeaderID: c.leader, HighWatermark: -1}}, acts, "%s epoch %d", c.name, p.epoch)
		}
	}
}

// TestResignedAnswersFetchNamingItself: a Resigned former leader answers a
// Fetch in its epoch with NOT_LEADER_OR_FOLLOWER and names itself leader.
// Reference: KafkaRaftClient.validateLeaderOnlyRequest; ResignedState.
func TestResignedAnswersFetchNamingItself(t *testing.T) {
	s := leaderOf(t, 3)
	s, _ = step(t, s, Resign{})
	require.Equal(t, Resigned, s.Role())
	next, acts := step(t, s, fetchFrom(2, 1, 1, 1))
	require.Equal(t, s, next)
	require.Equal(t, []Action{SendFetchResponse{To: 2, Error: ErrNotLeaderOrFollower, Epoch: 1, LeaderID: 1, HighWatermark: -1}}, acts)
}

// TestLeaderAnswersDivergingFetchWithEndOffsetForEpoch: the leader checks a
// fetch position against its epoch history. With (e, o) = the largest local
// epoch not above the last fetched epoch and where it ends, the fetch
// diverges when e differs or o is below the fetch offset; the answer carries
// (e, o) and no records, and a diverging fetch records no position (no high
// watermark, no check-quorum).
// Reference: RaftLog.validateOffsetAndEpoch,
// ReplicatedLog.endOffsetForEpoch.
func TestLeaderAnswersDivergingFetchWithEndOffsetForEpoch(t *testing.T) {
	// Epochs 1 at 0 and 3 at 5, log end 8; elected leader of 4 at 8 and the
	// LeaderChange makes the log end 9.
	s := restartedLeader(t, 3, LogState{End: LogEnd{Offset: 8, Epoch: 3}, Epochs: []EpochStart{{Epoch: 1}, {Epoch: 3, StartOffset: 5}}})
	require.Equal(t, Epoch(4), s.Epoch())
	require.Equal(t, LogEnd{Offset: 9, Epoch: 4}, s.LogEnd())
	cases := []struct {
		name   string
		offset int64
		last   Epoch
		want   LogOffsetMetadata
	}{
		{"epoch 1 ends at 5, below the fetch offset", 6, 1, LogOffsetMetadata{Epoch: 1, Offset: 5}},
		{"epoch 2 is unknown: the largest lower epoch is 1", 7, 2, LogOffsetMetadata{Epoch: 1, Offset: 5}},
		{"epoch 2 is unknown even at an offset inside epoch 1", 3, 2, LogOffsetMetadata{Epoch: 1, Offset: 5}},
		{"epoch 3 ends at 8", 9, 3, LogOffsetMetadata{Epoch: 3, Offset: 8}},
		{"ahead of the leader's log end in its own epoch", 10, 4, LogOffsetMetadata{Epoch: 4, Offset: 9}},
	}
	for _, c := range cases {
		next, acts := step(t, s, fetchFrom(2, 4, c.offset, c.last))
		require.Equal(t, s, next, c.name)
		want := c.want
		require.Equal(t, []Action{SendFetchResponse{To: 2, Error: ErrNone, Epoch: 4, LeaderID: 1, HighWatermark: -1, Diverging: &want}}, acts, c.name)
	}
	valid := []ReceiveFetch{fetchFrom(3, 4, 0, 0), fetchFrom(3, 4, 5, 1), fetchFrom(3, 4, 3, 1), fetchFrom(3, 4, 8, 3), fetchFrom(3, 4, 6, 3), fetchFrom(3, 4, 9, 4)}
	for _, e := range valid {
		_, acts := step(t, s, e)
		resp := ofType[SendFetchResponse](acts)
		require.Len(t, resp, 1)
		require.Nil(t, resp[0].Diverging, "%+v", e)
		require.Equal(t, ErrNone, resp[0].Error)
		// A valid fetch from a voter restarts the check-quorum window.
		require.Contains(t, acts, Action(ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second}), "%+v", e)
	}
}

// TestLeaderDivergingEpochBelowItsFirstEpoch: when the follower's last
// fetched epoch is older than every epoch in the leader's log, Kafka's
// endOffsetForEpoch answers the requested epoch itself and the start of the
// leader's first epoch.
// Reference: LeaderEpochFileCache.endOffsetFor ("the requested epoch is
// smaller than any known epoch"), RaftLog.validateOffsetAndEpoch.
func TestLeaderDivergingEpochBelowItsFirstEpoch(t *testing.T) {
	s := restartedLeader(t, 3, LogState{End: LogEnd{Offset: 4, Epoch: 3}, Epochs: []EpochStart{{Epoch: 3}}})
	require.Equal(t, Epoch(4), s.Epoch())
	next, acts := step(t, s, fetchFrom(2, 4, 6, 2))
	require.Equal(t, s, next)
	require.Equal(t, []Action{SendFetchResponse{
		To: 2, Error: ErrNone, Epoch: 4, LeaderID: 1, HighWatermark: -1,
		Diverging: &LogOffsetMetadata{Epoch: 2, Offset: 0},
	}}, acts)
}

// TestLeaderRecordsVoterPositionOnlyWhenKeyMatches: a voter's position and
// check-quorum contact are recorded only when the fetcher's key matches the
// voter's stored key (KIP-853: a stored directory id must be equal; a stored
// key without one matches any). A same-id fetch from another directory is an
// observer's: answered in full, not stored.
// Reference: LeaderState.updateReplicaState, LeaderState.ReplicaState.matchesKey.
func TestLeaderRecordsVoterPositionOnlyWhenKeyMatches(t *testing.T) {
	cfg := Config{
		Local:  ReplicaKey{ID: 1, DirectoryID: dirA},
		Voters: []ReplicaKey{{ID: 1, DirectoryID: dirA}, {ID: 2, DirectoryID: dirB}, {ID: 3}}, Seed: 7,
	}
	s := electLeader(t, start(t, cfg))

	wrongDir := ReceiveFetch{From: 2, FromDirectoryID: dirC, CurrentLeaderEpoch: 1, FetchOffset: 1, FetchEpoch: 1}
	next, acts := step(t, s, wrongDir)
	require.Equal(t, s, next, "a fetch with another directory id is not stored")
	require.Equal(t, []Action{SendFetchResponse{To: 2, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: -1}}, acts)

	noDir := ReceiveFetch{From: 2, CurrentLeaderEpoch: 1, FetchOffset: 1, FetchEpoch: 1}
	next, acts = step(t, s, noDir)
	require.Equal(t, s, next, "a fetch without the stored directory id is not stored")
	require.Equal(t, []Action{SendFetchResponse{To: 2, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: -1}}, acts)

	rightDir := ReceiveFetch{From: 2, FromDirectoryID: dirB, CurrentLeaderEpoch: 1, FetchOffset: 1, FetchEpoch: 1}
	next, acts = step(t, s, rightDir)
	require.Equal(t, Leader, next.Role())
	require.Equal(t, int64(1), next.HighWatermark())
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 1},
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 1},
	}, acts)

	// Voter 3 is stored without a directory id: any directory id matches.
	anyDir := ReceiveFetch{From: 3, FromDirectoryID: dirC, CurrentLeaderEpoch: 1, FetchOffset: 1, FetchEpoch: 1}
	next, acts = step(t, s, anyDir)
	require.Equal(t, int64(1), next.HighWatermark())
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 1},
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 3, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 1},
	}, acts)
}

// TestLeaderServesObserversWithoutStoringThem: observers (and non-replica
// consumers with a negative id) get full answers, with the high watermark,
// and are never stored: the leader's state is unchanged, so they move
// neither the high watermark nor check-quorum.
// Reference: LeaderState.updateReplicaState, maybeUpdateHighWatermark (only
// voters count); docs/design.md, contract decision 5.
func TestLeaderServesObserversWithoutStoringThem(t *testing.T) {
	s := leaderOf(t, 3)
	for _, from := range []NodeID{4, 100, NoNode, -5} {
		next, acts := step(t, s, fetchFrom(from, 1, 1, 1))
		require.Equal(t, s, next, "fetch from %d", from)
		require.Equal(t, []Action{SendFetchResponse{To: from, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: -1}}, acts)
	}
	// Once committed, observers are told the high watermark.
	s, _ = step(t, s, fetchFrom(2, 1, 1, 1))
	require.Equal(t, int64(1), s.HighWatermark())
	next, acts := step(t, s, fetchFrom(4, 1, 0, 0))
	require.Equal(t, s, next)
	require.Equal(t, []Action{SendFetchResponse{To: 4, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 1}}, acts)

	// Many observer fetches later, check-quorum still fails: none counted.
	for i := 0; i < 50; i++ {
		s, _ = step(t, s, fetchFrom(NodeID(1000+i), 1, 1, 1))
	}
	s, _ = step(t, s, CheckQuorumTimeout{})
	require.Equal(t, Resigned, s.Role())
}

// TestLeaderRefusesFetchCarryingItsOwnID: a valid Fetch that carries the
// leader's own replica id is answered UNKNOWN_SERVER_ERROR and tracked
// nowhere (Kafka's updateReplicaState throws and the request fails).
// Reference: LeaderState.updateReplicaState.
func TestLeaderRefusesFetchCarryingItsOwnID(t *testing.T) {
	s := leaderOf(t, 3)
	next, acts := step(t, s, fetchFrom(1, 1, 1, 1))
	require.Equal(t, s, next)
	require.Equal(t, []Action{
		SendFetchResponse{To: 1, Error: ErrUnknownServerError, Epoch: 1, LeaderID: 1, HighWatermark: -1},
	}, acts)
	// A diverging fetch with the leader's id is answered normally (Kafka
	// throws only in updateReplicaState, on the valid path).
	next, acts = step(t, s, fetchFrom(1, 1, 5, 1))
	require.Equal(t, s, next)
	require.Equal(t, []Action{
		SendFetchResponse{To: 1, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: -1, Diverging: &LogOffsetMetadata{Offset: 1, Epoch: 1}},
	}, acts)
}

// TestLeaderHighWatermarkNeedsMajorityOfThreeVoters: with 3 voters the high
// watermark is the largest offset the leader's own flushed end and one
// follower have reached; HighWatermarkChanged precedes the fetch response
// that carries the new value.
// Reference: LeaderState.maybeUpdateHighWatermark.
func TestLeaderHighWatermarkNeedsMajorityOfThreeVoters(t *testing.T) {
	s := leaderOf(t, 3)
	// Follower 2 at offset 0: the majority offset 0 is not past the epoch
	// start (0).
	s, acts := step(t, s, fetchFrom(2, 1, 0, 0))
	require.Equal(t, int64(-1), s.HighWatermark())
	require.Equal(t, []Action{
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: -1},
	}, acts)

	// The leader appends; its own end alone is not a majority.
	s, acts = durable(t, s, LogEnd{Offset: 4, Epoch: 1})
	require.Empty(t, acts)
	require.Equal(t, int64(-1), s.HighWatermark())

	// Follower 3 reaches 3: the majority offset is 3.
	s, acts = step(t, s, fetchFrom(3, 1, 3, 1))
	require.Equal(t, int64(3), s.HighWatermark())
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 3},
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 3, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 3},
	}, acts)

	// Follower 2 catches up: the leader (4) and 2 (4) make 4.
	s, acts = step(t, s, fetchFrom(2, 1, 4, 1))
	require.Equal(t, int64(4), s.HighWatermark())
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 4},
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 4},
	}, acts)
}

// TestLeaderHighWatermarkNeedsMajorityOfFiveVoters: with 5 voters the leader
// and two followers must hold an offset; the third-highest end wins.
// Reference: LeaderState.maybeUpdateHighWatermark (index floor(n/2) of the ends
// sorted descending).
func TestLeaderHighWatermarkNeedsMajorityOfFiveVoters(t *testing.T) {
	s := leaderOf(t, 5)
	s, _ = durable(t, s, LogEnd{Offset: 6, Epoch: 1})

	s, acts := step(t, s, fetchFrom(2, 1, 6, 1))
	require.Equal(t, int64(-1), s.HighWatermark())
	require.Equal(t, []Action{SendFetchResponse{To: 2, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: -1}}, acts)

	s, acts = step(t, s, fetchFrom(3, 1, 2, 1))
	require.Equal(t, int64(2), s.HighWatermark())
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 2},
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 3, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 2},
	}, acts)

	// Ends 6, 6, 2, 5: the third highest is 5.
	s, acts = step(t, s, fetchFrom(4, 1, 5, 1))
	require.Equal(t, int64(5), s.HighWatermark())
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 5},
		SendFetchResponse{To: 4, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 5},
	}, acts)
}

// TestLeaderHighWatermarkNeverMovesBackward: a follower whose fetch offset
// goes down (Kafka only logs it) does not lower the high watermark.
// Reference: LeaderState.maybeUpdateHighWatermark (monotonic).
func TestLeaderHighWatermarkNeverMovesBackward(t *testing.T) {
	s := leaderOf(t, 3)
	s, _ = durable(t, s, LogEnd{Offset: 3, Epoch: 1})
	s, _ = step(t, s, fetchFrom(2, 1, 3, 1))
	require.Equal(t, int64(3), s.HighWatermark())

	s, acts := step(t, s, fetchFrom(2, 1, 1, 1))
	require.Equal(t, int64(3), s.HighWatermark())
	require.Equal(t, []Action{
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 3},
	}, acts)

	s, acts = step(t, s, fetchFrom(3, 1, 2, 1))
	require.Equal(t, int64(3), s.HighWatermark())
	require.Equal(t, []Action{
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 3, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 3},
	}, acts)
}

// TestNewLeaderDoesNotCommitOlderEpochRecordsAlone: Raft's figure 8. A new
// leader whose older-epoch records are on a majority must not advance its
// high watermark until a record of its own epoch (its LeaderChange, at the
// epoch start offset) is on a majority too.
// Reference: LeaderState.maybeUpdateHighWatermark (past epochStartOffset), Raft
// paper section 5.4.2 figure 8.
func TestNewLeaderDoesNotCommitOlderEpochRecordsAlone(t *testing.T) {
	// Epoch-1 records 0..4; elected leader of epoch 2 at 5.
	s := restartedLeader(t, 1, LogState{End: LogEnd{Offset: 5, Epoch: 1}})
	require.Equal(t, Epoch(2), s.Epoch())
	require.Equal(t, LogEnd{Offset: 6, Epoch: 2}, s.LogEnd())

	// Follower 2 holds every epoch-1 record: offsets 0..4 are on a
	// majority, but none of epoch 2.
	s, acts := step(t, s, fetchFrom(2, 2, 5, 1))
	require.Equal(t, int64(-1), s.HighWatermark())
	require.Equal(t, []Action{
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 2, LeaderID: 1, HighWatermark: -1},
	}, acts)
	// So does follower 3: still nothing of epoch 2 on a majority.
	s, acts = step(t, s, fetchFrom(3, 2, 5, 1))
	require.Equal(t, int64(-1), s.HighWatermark())
	require.Equal(t, []Action{
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 3, Error: ErrNone, Epoch: 2, LeaderID: 1, HighWatermark: -1},
	}, acts)

	// The LeaderChange reaches follower 2: everything up to 6 commits.
	s, acts = step(t, s, fetchFrom(2, 2, 6, 2))
	require.Equal(t, int64(6), s.HighWatermark())
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 6},
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 2, LeaderID: 1, HighWatermark: 6},
	}, acts)
}

// TestNewLeaderReportsNoHighWatermarkUntilItCommits: a follower that knew a
// high watermark and becomes leader answers fetches with -1 until it has
// committed a record of its own epoch (Kafka's new LeaderState starts with
// no high watermark, to keep the global one monotonic).
// Reference: QuorumState.transitionToLeader (the HWM starts empty).
func TestNewLeaderReportsNoHighWatermarkUntilItCommits(t *testing.T) {
	s := start(t, config(1, 1, 2, 3))
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: NoNode})
	s, _ = durable(t, s, LogEnd{Offset: 3, Epoch: 1})
	s, _ = step(t, s, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 1, HighWatermark: 3})
	require.Equal(t, int64(3), s.HighWatermark())

	s, _ = step(t, s, FetchTimeout{})
	s, _ = step(t, s, grantVote(3, 1))
	s, _ = step(t, s, grantVote(3, 2))
	require.Equal(t, Leader, s.Role())
	require.Equal(t, int64(-1), s.HighWatermark(), "a new leader's high watermark starts unknown")
	s, _ = durable(t, s, LogEnd{Offset: 4, Epoch: 2})

	s, acts := step(t, s, fetchFrom(3, 2, 3, 1))
	require.Equal(t, []Action{
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 3, Error: ErrNone, Epoch: 2, LeaderID: 1, HighWatermark: -1},
	}, acts)
	_, acts = step(t, s, fetchFrom(3, 2, 4, 2))
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 4},
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		SendFetchResponse{To: 3, Error: ErrNone, Epoch: 2, LeaderID: 1, HighWatermark: 4},
	}, acts)
}

// TestSingleVoterLeaderCommitsOnItsOwnAppend: the only voter is elected at
// start and commits each append on its own; it never resigns for lack of a
// quorum and has no one to send BeginQuorumEpoch to.
// Reference: LeaderState.timeUntilCheckQuorumExpires (never expires with one
// voter), maybeUpdateHighWatermark; KafkaRaftClient.initialize.
func TestSingleVoterLeaderCommitsOnItsOwnAppend(t *testing.T) {
	s := start(t, config(1, 1))
	require.Equal(t, Leader, s.Role())
	require.Equal(t, Epoch(1), s.Epoch())

	s, acts := durable(t, s, LogEnd{Offset: 1, Epoch: 1})
	require.Equal(t, []Action{HighWatermarkChanged{HighWatermark: 1}}, acts)
	s, acts = durable(t, s, LogEnd{Offset: 7, Epoch: 1})
	require.Equal(t, []Action{HighWatermarkChanged{HighWatermark: 7}}, acts)
	require.Equal(t, int64(7), s.HighWatermark())

	for _, e := range []Event{CheckQuorumTimeout{}, BeginQuorumEpochTimeout{}} {
		next, acts := step(t, s, e)
		require.Equal(t, s, next, "%T", e)
		require.Empty(t, acts, "%T", e)
	}
}

// TestCheckQuorumWindowRestartsOnFetchFromOneOfThree: with 3 voters the
// leader plus one fetching follower is a majority: every valid voter fetch
// restarts the 1.5*T_f window.
// Reference: KAFKA-15489 (one follower of 3 voters is enough),
// LeaderState.updateCheckQuorumForFollowingVoter.
func TestCheckQuorumWindowRestartsOnFetchFromOneOfThree(t *testing.T) {
	s := leaderOf(t, 3)
	for _, from := range []NodeID{2, 2, 3} {
		var acts []Action
		s, acts = step(t, s, fetchFrom(from, 1, 0, 0))
		require.Equal(t, ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second}, acts[0], "fetch from %d", from)
	}
}

// TestCheckQuorumWindowRestartsOnFetchFromTwoOfFive: with 5 voters two
// distinct followers must fetch in the window; a repeat fetch from the same
// one does not count twice; the count starts over with each window.
// Reference: LeaderState.updateCheckQuorumForFollowingVoter (two followers of 5
// voters).
func TestCheckQuorumWindowRestartsOnFetchFromTwoOfFive(t *testing.T) {
	s := leaderOf(t, 5)
	resetCQ := Action(ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second})
	steps := []struct {
		from  NodeID
		reset bool
	}{{2, false}, {2, false}, {3, true}, {4, false}, {4, false}, {2, true}, {5, false}}
	for i, st := range steps {
		var acts []Action
		s, acts = step(t, s, fetchFrom(st.from, 1, 0, 0))
		if st.reset {
			require.Contains(t, acts, resetCQ, "step %d", i)
		} else {
			require.NotContains(t, acts, resetCQ, "step %d", i)
		}
	}
}

// TestCheckQuorumTimeoutResignsLeader: a leader that has not heard from a
// majority resigns in memory (no Persist: its record still says it led the
// epoch), stops its leader timers, arms an election timer and sends
// EndQuorumEpoch to every other voter naming the preferred successors by
// last fetch offset, highest first, unknown last, ties by replica key.
// Reference: KafkaRaftClient.pollLeader, QuorumState.transitionToResigned,
// LeaderState.nonLeaderVotersByDescendingFetchOffset.
func TestCheckQuorumTimeoutResignsLeader(t *testing.T) {
	t.Run("five voters", func(t *testing.T) {
		s := leaderOf(t, 5)
		s, _ = durable(t, s, LogEnd{Offset: 3, Epoch: 1})
		s, _ = step(t, s, fetchFrom(5, 1, 2, 1))
		s, _ = step(t, s, fetchFrom(3, 1, 1, 1))
		s, _ = step(t, s, fetchFrom(2, 1, 2, 1))
		record := s.Record()

		next, acts := step(t, s, CheckQuorumTimeout{})
		require.Equal(t, Resigned, next.Role())
		require.Equal(t, Epoch(1), next.Epoch())
		require.Equal(t, NodeID(1), next.Leader())
		require.Equal(t, record, next.Record())
		require.Equal(t, QuorumRecord{Epoch: 1, LeaderID: 1, VotedKey: NoReplica}, record)
		successors := keys(2, 5, 3, 4)
		require.Equal(t, []Action{
			RoleChanged{From: Leader, To: Resigned, Epoch: 1, LeaderID: 1, Reason: "check quorum failed"},
			StopTimer{Timer: CheckQuorumTimer},
			StopTimer{Timer: BeginQuorumEpochTimer},
			ResetTimer{Timer: ElectionTimer, After: electionTimeoutIn(t, acts)},
			SendEndQuorumEpoch{To: ReplicaKey{ID: 2}, Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
			SendEndQuorumEpoch{To: ReplicaKey{ID: 3}, Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
			SendEndQuorumEpoch{To: ReplicaKey{ID: 4}, Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
			SendEndQuorumEpoch{To: ReplicaKey{ID: 5}, Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
		}, acts)
	})
	t.Run("three voters", func(t *testing.T) {
		s := leaderOf(t, 3)
		s, _ = step(t, s, fetchFrom(3, 1, 0, 0))
		next, acts := step(t, s, CheckQuorumTimeout{})
		require.Equal(t, Resigned, next.Role())
		successors := keys(3, 2) // 3 fetched at 0; 2 never fetched
		require.Equal(t, []Action{
			RoleChanged{From: Leader, To: Resigned, Epoch: 1, LeaderID: 1, Reason: "check quorum failed"},
			StopTimer{Timer: CheckQuorumTimer},
			StopTimer{Timer: BeginQuorumEpochTimer},
			ResetTimer{Timer: ElectionTimer, After: electionTimeoutIn(t, acts)},
			SendEndQuorumEpoch{To: ReplicaKey{ID: 2}, Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
			SendEndQuorumEpoch{To: ReplicaKey{ID: 3}, Epoch: 1, LeaderID: 1, PreferredSuccessors: successors},
		}, acts)
	})
	t.Run("one voter", func(t *testing.T) {
		s := start(t, config(1, 1))
		next, acts := step(t, s, CheckQuorumTimeout{})
		require.Equal(t, s, next)
		require.Empty(t, acts)
	})
	t.Run("not a leader", func(t *testing.T) {
		ignoredOutsideLeader(t, CheckQuorumTimeout{})
	})
}

// TestFetchSnapshotCountsForCheckQuorumOnly: a FetchSnapshot from a voter
// restarts the check-quorum window like a Fetch, but records no position:
// no high watermark, the voter stays "unknown" among preferred successors,
// and it still gets BeginQuorumEpoch re-sent.
// Reference: KafkaRaftClient.handleFetchSnapshotRequest
// (updateCheckQuorumForFollowingVoter only); docs/design.md D44.
func TestFetchSnapshotCountsForCheckQuorumOnly(t *testing.T) {
	id := LogEnd{Offset: 1, Epoch: 1}
	snapFetch := func(from NodeID, epoch Epoch) ReceiveFetchSnapshot {
		return ReceiveFetchSnapshot{From: from, CurrentLeaderEpoch: epoch, Snapshot: id, Size: 8}
	}
	snapChunk := func(to NodeID) SendFetchSnapshotResponse {
		return SendFetchSnapshotResponse{To: to, Error: ErrNone, Epoch: 1, LeaderID: 1, Snapshot: id, Size: 8}
	}
	s := leaderOf(t, 3)
	s, acts := step(t, s, snapFetch(2, 1))
	require.Equal(t, []Action{
		ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second},
		snapChunk(2),
	}, acts)
	require.Equal(t, int64(-1), s.HighWatermark())

	_, acts = step(t, s, BeginQuorumEpochTimeout{})
	require.Equal(t, []Action{
		SendBeginQuorumEpoch{To: ReplicaKey{ID: 2}, Epoch: 1, LeaderID: 1},
		SendBeginQuorumEpoch{To: ReplicaKey{ID: 3}, Epoch: 1, LeaderID: 1},
		ResetTimer{Timer: BeginQuorumEpochTimer, After: time.Second},
	}, acts)

	s, _ = step(t, s, fetchFrom(3, 1, 0, 0))
	_, acts = step(t, s, CheckQuorumTimeout{})
	require.Equal(t, keys(3, 2), ofType[SendEndQuorumEpoch](acts)[0].PreferredSuccessors)

	// Five voters: a snapshot fetcher and a fetcher make two.
	s5 := leaderOf(t, 5)
	s5, acts = step(t, s5, snapFetch(4, 1))
	require.Equal(t, []Action{snapChunk(4)}, acts)
	_, acts = step(t, s5, fetchFrom(2, 1, 0, 0))
	require.Equal(t, ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second}, acts[0])

	// Observers' snapshot fetches are not stored; fencing as for Fetch.
	next, acts := step(t, s, snapFetch(9, 1))
	require.Equal(t, s, next)
	require.Equal(t, []Action{snapChunk(9)}, acts)
	next, acts = step(t, s, snapFetch(2, 2))
	require.Equal(t, s, next)
	require.Equal(t, []Action{fetchSnapshotError(2, ErrUnknownLeaderEpoch, 1, 1)}, acts)
}

// TestBeginQuorumEpochTimeoutResendsOnlyToVotersThatHaveNotFetched: the
// leader re-sends BeginQuorumEpoch only to the voters that have not made a
// valid Fetch since the last round, and re-arms its T_f/2 timer.
// Reference: KafkaRaftClient.maybeSendBeginQuorumEpochRequests, KAFKA-16926
// (LeaderState.needToSendBeginQuorumRequests).
func TestBeginQuorumEpochTimeoutResendsOnlyToVotersThatHaveNotFetched(t *testing.T) {
	s := leaderOf(t, 5)
	s, _ = step(t, s, fetchFrom(2, 1, 0, 0))
	s, _ = step(t, s, fetchFrom(3, 1, 1, 1))
	s, _ = step(t, s, fetchFrom(4, 1, 7, 1)) // diverging: not a valid fetch

	s, acts := step(t, s, BeginQuorumEpochTimeout{})
	require.Equal(t, Leader, s.Role())
	require.Equal(t, []Action{
		SendBeginQuorumEpoch{To: ReplicaKey{ID: 4}, Epoch: 1, LeaderID: 1},
		SendBeginQuorumEpoch{To: ReplicaKey{ID: 5}, Epoch: 1, LeaderID: 1},
		ResetTimer{Timer: BeginQuorumEpochTimer, After: time.Second},
	}, acts)

	// A new round: only 4 fetched in it.
	s, _ = step(t, s, fetchFrom(4, 1, 1, 1))
	_, acts = step(t, s, BeginQuorumEpochTimeout{})
	require.Equal(t, []Action{
		SendBeginQuorumEpoch{To: ReplicaKey{ID: 2}, Epoch: 1, LeaderID: 1},
		SendBeginQuorumEpoch{To: ReplicaKey{ID: 3}, Epoch: 1, LeaderID: 1},
		SendBeginQuorumEpoch{To: ReplicaKey{ID: 5}, Epoch: 1, LeaderID: 1},
		ResetTimer{Timer: BeginQuorumEpochTimer, After: time.Second},
	}, acts)

	// Not a leader: ignored.
	ignoredOutsideLeader(t, BeginQuorumEpochTimeout{})
}

// ignoredOutsideLeader checks that every role but Leader ignores e: same
// state, no action.
func ignoredOutsideLeader(t *testing.T, e Event) {
	t.Helper()
	for _, c := range everyRole(t, noCluster()) {
		if c.s.Role() == Leader {
			continue
		}
		next, acts := step(t, c.s, e)
		require.Equal(t, c.s, next, c.name)
		require.Empty(t, acts, c.name)
	}
}

// TestLogAppendedKeepsEpochHistory: each LogAppended in a newer epoch starts
// that epoch at the previous log end; a report that repeats or goes below
// the current end (and not below the high watermark) is stale and dropped,
// as is a negative one; a report that extends the log with an epoch below
// its last one or above the current epoch is impossible and a Fault with
// the state unchanged. The history drives the leader's divergence answers.
// Reference: docs/design.md D30; Kafka's LeaderEpochFileCache and RaftLog.validateOffsetAndEpoch.
func TestLogAppendedKeepsEpochHistory(t *testing.T) {
	s, _ := restart(t, config(1, 1, 2, 3), QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: NoReplica}, LogState{})
	for _, end := range []LogEnd{{Offset: 2, Epoch: 1}, {Offset: 4, Epoch: 1}, {Offset: 6, Epoch: 3}} {
		var acts []Action
		s, acts = durable(t, s, end)
		require.Empty(t, acts)
		require.Equal(t, end, s.LogEnd())
	}
	for _, stale := range []LogEnd{{Offset: 5, Epoch: 3}, {Offset: 6, Epoch: 3}, {Offset: 6, Epoch: 4}, {Offset: 3, Epoch: 9}, {Offset: -1, Epoch: 3}, {Offset: 9, Epoch: -1}} {
		next, acts := step(t, s, LogAppended{End: stale})
		require.Equal(t, s, next, "%+v", stale)
		require.Empty(t, acts, "%+v", stale)
	}
	for _, bad := range []LogEnd{{Offset: 7, Epoch: 2}, {Offset: 7, Epoch: 4}} {
		next, acts := step(t, s, LogAppended{End: bad})
		require.Equal(t, s, next, "%+v", bad)
		require.Len(t, ofType[Fault](acts), 1, "%+v", bad)
		require.Len(t, acts, 1, "%+v", bad)
	}
	s = electLeader(t, s) // leader of 4, epoch 4 starts at 6
	require.Equal(t, LogEnd{Offset: 7, Epoch: 4}, s.LogEnd())
	for _, c := range []struct {
		offset int64
		last   Epoch
		want   LogOffsetMetadata
	}{
		{5, 1, LogOffsetMetadata{Epoch: 1, Offset: 4}},
		{5, 2, LogOffsetMetadata{Epoch: 1, Offset: 4}},
		{7, 3, LogOffsetMetadata{Epoch: 3, Offset: 6}},
	} {
		_, acts := step(t, s, fetchFrom(2, 4, c.offset, c.last))
		want := c.want
		require.Equal(t, []Action{SendFetchResponse{To: 2, Error: ErrNone, Epoch: 4, LeaderID: 1, HighWatermark: -1, Diverging: &want}}, acts)
	}
}

// TestLeaderTimerPeriodsInWholeMilliseconds: Kafka's LeaderState computes
// the check-quorum window as (int) (fetchTimeoutMs * 1.5) and the
// BeginQuorumEpoch period as fetchTimeoutMs / 2, in whole milliseconds: with
// T_f = 2001 ms they are 3001 ms and 1000 ms, not 3001.5 and 1000.5.
func TestLeaderTimerPeriodsInWholeMilliseconds(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	cfg.FetchTimeout = 2001 * time.Millisecond
	s := start(t, cfg)
	s, _ = step(t, s, ElectionTimeout{})
	s, _ = step(t, s, grantVote(2, s.Epoch()))
	require.Equal(t, Candidate, s.Role())
	_, acts := step(t, s, grantVote(2, s.Epoch()))
	require.Contains(t, acts, Action(ResetTimer{Timer: CheckQuorumTimer, After: 3001 * time.Millisecond}))
	require.Contains(t, acts, Action(ResetTimer{Timer: BeginQuorumEpochTimer, After: 1000 * time.Millisecond}))
	cq, begin := leaderPeriods(3 * time.Microsecond)
	require.Equal(t, 4*time.Microsecond+500*time.Nanosecond, cq)
	require.Equal(t, 1500*time.Nanosecond, begin)
}

// TestLeaderTreatsFetchFromOffsetZeroAsValid: a fetch from offset 0 never
// diverges, whatever last fetched epoch it carries (the log starts at 0):
// it is answered with data and counts for check-quorum. The same epoch at a
// later offset diverges.
// Reference: KafkaMetadataLog.validateOffsetAndEpoch
// (startOffset == 0 && offset == 0 is valid).
func TestLeaderTreatsFetchFromOffsetZeroAsValid(t *testing.T) {
	// Epochs 1 at 0 and 3 at 5; leader of 4 from offset 8, log end 9.
	s := restartedLeader(t, 3, LogState{End: LogEnd{Offset: 8, Epoch: 3}, Epochs: []EpochStart{{Epoch: 1}, {Epoch: 3, StartOffset: 5}}})
	_, acts := step(t, s, fetchFrom(2, 4, 0, 2))
	require.Equal(t, []Action{
		checkQuorumTimerReset,
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 4, LeaderID: 1, HighWatermark: -1},
	}, acts)

	_, acts = step(t, s, fetchFrom(2, 4, 1, 2))
	require.Equal(t, []Action{
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 4, LeaderID: 1, HighWatermark: -1, Diverging: &LogOffsetMetadata{Epoch: 1, Offset: 5}},
	}, acts)
}

// TestLeaderCountsFetchesOfVoterZero: node 0 is a voter like any other: its
// valid Fetch moves its position (and with it the high watermark) and
// restarts the check-quorum window, and so does its FetchSnapshot. Only a
// negative replica id is a non-replica consumer.
// Reference: LeaderState.updateReplicaState, updateCheckQuorumForFollowingVoter,
// maybeUpdateHighWatermark; KafkaRaftClient.handleFetchRequest,
// handleFetchSnapshotRequest
// (replicaId >= 0).
func TestLeaderCountsFetchesOfVoterZero(t *testing.T) {
	s := electLeader(t, start(t, config(1, 0, 1, 2)))
	require.Equal(t, LogEnd{Offset: 1, Epoch: 1}, s.LogEnd())

	next, acts := step(t, s, fetchFrom(0, 1, 1, 1))
	require.Equal(t, []Action{
		HighWatermarkChanged{HighWatermark: 1},
		checkQuorumTimerReset,
		SendFetchResponse{To: 0, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 1},
	}, acts)
	require.Equal(t, int64(1), next.HighWatermark())

	_, acts = step(t, s, ReceiveFetchSnapshot{From: 0, CurrentLeaderEpoch: 1, Snapshot: LogEnd{Offset: 1, Epoch: 1}, Size: 5})
	require.Equal(t, []Action{
		checkQuorumTimerReset,
		SendFetchSnapshotResponse{To: 0, Error: ErrNone, Epoch: 1, LeaderID: 1, Snapshot: LogEnd{Offset: 1, Epoch: 1}, Size: 5},
	}, acts)
}

// TestLeaderZeroRefusesFetchCarryingItsOwnID: a leader whose id is 0
// answers a Fetch that carries its own id with UNKNOWN_SERVER_ERROR, as
// Kafka's updateReplicaState throws, and records nothing.
// Reference: KafkaRaftClient.handleFetchRequest,
// LeaderState.updateReplicaState.
func TestLeaderZeroRefusesFetchCarryingItsOwnID(t *testing.T) {
	s := electLeader(t, start(t, config(0, 0, 1, 2)))
	next, acts := step(t, s, fetchFrom(0, 1, 1, 1))
	require.Equal(t, []Action{
		SendFetchResponse{To: 0, Error: ErrUnknownServerError, Epoch: 1, LeaderID: 0, HighWatermark: -1},
	}, acts)
	require.Equal(t, s, next)
}

// TestTwoVoterLeaderResendsBeginQuorumEpoch: a leader of two voters re-sends
// BeginQuorumEpoch to the other voter when it has not fetched since the
// last round; only the only voter has no one to tell.
// Reference: LeaderState.needToSendBeginQuorumRequests, KAFKA-16926.
func TestTwoVoterLeaderResendsBeginQuorumEpoch(t *testing.T) {
	s := leaderOf(t, 2)
	_, acts := step(t, s, BeginQuorumEpochTimeout{})
	require.Equal(t, []Action{
		SendBeginQuorumEpoch{To: keyOf(2), Epoch: 1, LeaderID: 1},
		beginQuorumTimerReset,
	}, acts)
}
