package kraft

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Restart (Kafka's QuorumState.initialize and KafkaRaftClient.initialize)
// and configuration validation. Every restart emits the written-back record
// first, then what Kafka does on its first poll.

// ---- restart ----

// TestRestartWithoutRecordIsUnattachedEpochZero: a missing quorum-state file
// is epoch 0, no leader, no vote; the state is written back and the
// election timer armed. Reference: QuorumState.initialize (the chosen state
// is written back).
func TestRestartWithoutRecordIsUnattachedEpochZero(t *testing.T) {
	s, acts, err := NewState(config(1, 1, 2, 3), nil, LogState{})
	require.NoError(t, err)
	requireState(t, s, Unattached, 0, NoNode, NoReplica)
	require.Equal(t, EmptyRecord(), s.Record())
	require.True(t, s.IsVoter())
	require.Equal(t, []Action{
		Persist{Record: EmptyRecord()},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
	}, acts)
}

// TestRestartFormerLeaderIsResignedWithEmptySuccessors: a replica whose
// record names itself leader restarts Resigned in the stored epoch (it may
// not vote or lead again in that epoch) and sends EndQuorumEpoch with an
// empty successor list to every other voter. Reference:
// QuorumState.initialize; ResignedState; the README's host contract, rule 4.
func TestRestartFormerLeaderIsResignedWithEmptySuccessors(t *testing.T) {
	rec := quorumRecord(5, 1, NoNode)
	s, acts := restart(t, config(1, 1, 2, 3), rec, LogState{End: LogEnd{Offset: 10, Epoch: 5}})
	requireState(t, s, Resigned, 5, 1, NoReplica)
	require.Equal(t, rec, s.Record())
	require.Equal(t, []Action{
		Persist{Record: rec},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
		SendEndQuorumEpoch{To: ReplicaKey{ID: 2}, Epoch: 5, LeaderID: 1},
		SendEndQuorumEpoch{To: ReplicaKey{ID: 3}, Epoch: 5, LeaderID: 1},
	}, acts)
	for _, a := range ofType[SendEndQuorumEpoch](acts) {
		require.Empty(t, a.PreferredSuccessors)
	}
}

// TestRestartFormerLeaderNoLongerVoterIsResigned: the rule does not look at
// the voter set: a leader removed by KIP-853 still restarts Resigned and
// tells every voter. Reference: QuorumState.initialize; ResignedState.
func TestRestartFormerLeaderNoLongerVoterIsResigned(t *testing.T) {
	rec := quorumRecord(5, 9, NoNode)
	s, acts := restart(t, observerConfig(9, 1, 2, 3), rec, LogState{})
	requireState(t, s, Resigned, 5, 9, NoReplica)
	require.False(t, s.IsVoter())
	require.Equal(t, []Action{
		Persist{Record: rec},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
		SendEndQuorumEpoch{To: ReplicaKey{ID: 1}, Epoch: 5, LeaderID: 9},
		SendEndQuorumEpoch{To: ReplicaKey{ID: 2}, Epoch: 5, LeaderID: 9},
		SendEndQuorumEpoch{To: ReplicaKey{ID: 3}, Epoch: 5, LeaderID: 9},
	}, acts)

	// Its election timer leaves it Unattached(6) as an observer: it
	// searches for the leader instead of campaigning.
	next, acts := step(t, s, ElectionTimeout{})
	requireState(t, next, Unattached, 6, NoNode, NoReplica)
	require.Equal(t, []Action{
		Persist{Record: quorumRecord(6, NoNode, NoNode)},
		RoleChanged{From: Resigned, To: Unattached, Epoch: 6, LeaderID: NoNode, Reason: "resigned leader's election timeout"},
		StopTimer{Timer: ElectionTimer},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: NoNode, CurrentLeaderEpoch: 6, HighWatermark: -1},
	}, acts)
}

// TestRestartSelfVoteIsCandidateWithoutEpochBump: a replica that had voted
// for itself restarts Candidate in the stored epoch (no bump) and asks every
// other voter again. Reference: QuorumState.initialize; the README's host
// contract, rule 4.
func TestRestartSelfVoteIsCandidateWithoutEpochBump(t *testing.T) {
	rec := quorumRecord(4, NoNode, 1)
	log := LogState{End: LogEnd{Offset: 10, Epoch: 3}, Epochs: []EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 6}}}
	s, acts := restart(t, config(1, 1, 2, 3), rec, log)
	requireState(t, s, Candidate, 4, NoNode, ReplicaKey{ID: 1})
	require.Equal(t, rec, s.Record())
	end := LogEnd{Offset: 10, Epoch: 3}
	require.Equal(t, []Action{
		Persist{Record: rec},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
		SendVoteRequest{To: ReplicaKey{ID: 2}, CandidateEpoch: 4, Candidate: ReplicaKey{ID: 1}, CandidateLogEnd: end},
		SendVoteRequest{To: ReplicaKey{ID: 3}, CandidateEpoch: 4, Candidate: ReplicaKey{ID: 1}, CandidateLogEnd: end},
	}, acts)

	// The restarted Candidate counts votes: one grant is a majority of 3.
	next, acts := step(t, s, grantVote(3, 4))
	requireState(t, next, Leader, 4, 1, NoReplica)
	require.Equal(t, Persist{Record: quorumRecord(4, 1, NoNode)}, acts[0])
}

// TestRestartSelfVoteMatchesDirectoryID: the stored vote is compared with
// the local key by KIP-853's rule: a vote for our id with another directory
// id is not ours, so the replica restarts Unattached keeping that vote.
// Reference: QuorumState.initialize; ElectionState.isVotedCandidate.
func TestRestartSelfVoteMatchesDirectoryID(t *testing.T) {
	local := ReplicaKey{ID: 1, DirectoryID: dirA}
	cfg := Config{Local: local, Voters: []ReplicaKey{local, {ID: 2}, {ID: 3}}}

	own := QuorumRecord{Epoch: 4, LeaderID: NoNode, VotedKey: local}
	s, acts := restart(t, cfg, own, LogState{})
	requireState(t, s, Candidate, 4, NoNode, local)
	require.Len(t, ofType[SendVoteRequest](acts), 2)

	other := QuorumRecord{Epoch: 4, LeaderID: NoNode, VotedKey: ReplicaKey{ID: 1, DirectoryID: dirB}}
	s, acts = restart(t, cfg, other, LogState{})
	requireState(t, s, Unattached, 4, NoNode, other.VotedKey)
	require.Equal(t, []Action{
		Persist{Record: other},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
	}, acts)
}

// TestRestartKeepsStoredVote: a vote stored for another replica is kept, so
// the replica cannot vote twice in that epoch across a restart. Reference:
// QuorumState.initialize.
func TestRestartKeepsStoredVote(t *testing.T) {
	rec := quorumRecord(3, NoNode, 2)
	s, acts := restart(t, config(1, 1, 2, 3), rec, LogState{})
	requireState(t, s, Unattached, 3, NoNode, ReplicaKey{ID: 2})
	require.Equal(t, []Action{
		Persist{Record: rec},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
	}, acts)

	// The vote binds: a standard vote for 3 in epoch 3 is refused, and
	// the re-grant to 2 writes nothing.
	_, acts = step(t, s, ReceiveVoteRequest{From: 3, VoterID: 1, CandidateEpoch: 3, Candidate: 3})
	require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 3, LeaderID: NoNode}}, acts)
	_, acts = step(t, s, ReceiveVoteRequest{From: 2, VoterID: 1, CandidateEpoch: 3, Candidate: 2})
	require.Equal(t, []Action{SendVoteResponse{To: 2, Epoch: 3, LeaderID: NoNode, VoteGranted: true}}, acts)
}

// TestRestartStoredLeaderIsFollowerKeepingVote: a stored leader that is a
// voter is followed at once (first Fetch, fetch timer T_f), and the vote of
// that epoch is kept. Reference: QuorumState.initialize (newest Kafka keeps
// the vote); a Follower fetches at once (the package doc).
func TestRestartStoredLeaderIsFollowerKeepingVote(t *testing.T) {
	rec := quorumRecord(3, 2, 2)
	s, acts := restart(t, config(1, 1, 2, 3), rec, LogState{End: LogEnd{Offset: 7, Epoch: 3}})
	requireState(t, s, Follower, 3, 2, ReplicaKey{ID: 2})
	require.Equal(t, rec, s.Record())
	require.Equal(t, []Action{
		Persist{Record: rec},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 2, CurrentLeaderEpoch: 3, FetchOffset: 7, FetchEpoch: 3, HighWatermark: -1},
	}, acts)
}

// TestRestartStoredLeaderNotVoterIsUnattachedWithLeader: a stored leader
// without endpoints in the voter set cannot be fetched from: Unattached
// keeping the leader id (and the vote). Reference: QuorumState.initialize;
// D3 in docs/design.md.
// The stored record holds only the leader's id; the leader is found in the
// voter set by id even when voters carry directory ids (Kafka's
// QuorumState.initialize looks up the leader's endpoints by id).
func TestRestartStoredLeaderWithDirectoryIDIsFollower(t *testing.T) {
	cfg := config(1, 1, 2, 3)
	cfg.Voters[1].DirectoryID = dirA
	rec := quorumRecord(3, 2, NoNode)
	s, acts := restart(t, cfg, rec, LogState{End: LogEnd{Offset: 7, Epoch: 3}})
	requireState(t, s, Follower, 3, 2, NoReplica)
	require.Equal(t, []Action{
		Persist{Record: rec},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 2, CurrentLeaderEpoch: 3, FetchOffset: 7, FetchEpoch: 3, HighWatermark: -1},
	}, acts)
}

// A Candidate that lost its election and followed the winner keeps its
// self-vote in the record next to the leader. Kafka restarts it Candidate
// (isVotedCandidate is checked before hasLeader), whose vote requests are
// then illegal once it holds records of that epoch and whose answers
// (INVALID_REQUEST) are fatal. kraft follows the recorded leader, keeping
// the vote (docs/design.md D17; found by the simulator).
func TestRestartSelfVoteWithRecordedLeaderFollowsTheLeader(t *testing.T) {
	rec := quorumRecord(1, 2, 1)
	log := LogState{End: LogEnd{Offset: 11, Epoch: 1}}
	s, acts := restart(t, config(1, 1, 2, 3), rec, log)
	requireState(t, s, Follower, 1, 2, ReplicaKey{ID: 1})
	require.Equal(t, []Action{
		Persist{Record: rec},
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 2, CurrentLeaderEpoch: 1, FetchOffset: 11, FetchEpoch: 1, HighWatermark: -1},
	}, acts)
}

func TestRestartStoredLeaderNotVoterIsUnattachedWithLeader(t *testing.T) {
	rec := quorumRecord(3, 7, 2)
	s, acts := restart(t, config(1, 1, 2, 3), rec, LogState{})
	requireState(t, s, Unattached, 3, 7, ReplicaKey{ID: 2})
	require.Equal(t, rec, s.Record())
	require.Equal(t, []Action{
		Persist{Record: rec},
		ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
	}, acts)

	// Knowing a leader, it refuses a standard vote for a third replica
	// that it had not voted for.
	_, acts = step(t, s, ReceiveVoteRequest{From: 3, VoterID: 1, CandidateEpoch: 3, Candidate: 3})
	require.Equal(t, []Action{SendVoteResponse{To: 3, Epoch: 3, LeaderID: 7}}, acts)
}

// TestRestartEpochBehindLogIsUnattachedAtLogEpoch: a stored epoch older
// than the log's last epoch is raised to it, with no leader and no vote;
// this rule comes before the former-leader and self-vote rules. Reference:
// QuorumState.initialize.
func TestRestartEpochBehindLogIsUnattachedAtLogEpoch(t *testing.T) {
	log := LogState{End: LogEnd{Offset: 10, Epoch: 4}, Epochs: []EpochStart{{Epoch: 2, StartOffset: 0}, {Epoch: 4, StartOffset: 5}}}
	for _, rec := range []QuorumRecord{
		quorumRecord(2, 2, 2),           // follower of 2
		quorumRecord(2, 1, NoNode),      // former leader
		quorumRecord(3, NoNode, 1),      // self-vote
		quorumRecord(0, NoNode, NoNode), // nothing
	} {
		s, acts := restart(t, config(1, 1, 2, 3), rec, log)
		requireState(t, s, Unattached, 4, NoNode, NoReplica)
		require.Equal(t, []Action{
			Persist{Record: quorumRecord(4, NoNode, NoNode)},
			ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 1)},
		}, acts, "record %+v", rec)
	}
}

// TestRestartOnlyVoterElectsItself: the only voter becomes Prospective,
// Candidate (epoch + 1, persisted) and Leader within NewState, from every
// role a restart can produce; a restarted Candidate wins in its own epoch.
// A single voter cannot restart Follower: a stored leader other than itself
// is never in its voter set. Reference: KafkaRaftClient.initialize.
func TestRestartOnlyVoterElectsItself(t *testing.T) {
	self := []ReplicaKey{{ID: 1}}
	leaderTail := func(epoch Epoch) []Action {
		return []Action{
			RoleChanged{From: Candidate, To: Leader, Epoch: epoch, LeaderID: 1, Reason: "won election"},
			StopTimer{Timer: ElectionTimer},
			AppendLeaderChange{Epoch: epoch, LeaderID: 1, Voters: self, GrantingVoters: self},
		}
	}
	campaign := func(acts []Action, from Role, epoch Epoch, leader NodeID) []Action {
		// From the restarted role: Prospective (memory only), then
		// Candidate in epoch+1, then Leader. Nothing is sent before the
		// leader's record, so the written-back record, the self-vote and
		// the leadership are one Persist, first (D1).
		out := []Action{
			Persist{Record: quorumRecord(epoch+1, 1, NoNode)},
			RoleChanged{From: from, To: Prospective, Epoch: epoch, LeaderID: leader, Reason: "only voter"},
			ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 2)},
			RoleChanged{From: Prospective, To: Candidate, Epoch: epoch + 1, LeaderID: NoNode, Reason: "won pre-vote"},
			ResetTimer{Timer: ElectionTimer, After: electionTimeoutAt(t, acts, 4)},
		}
		return append(out, leaderTail(epoch+1)...)
	}

	t.Run("no record", func(t *testing.T) {
		s, acts, err := NewState(config(1, 1), nil, LogState{})
		require.NoError(t, err)
		requireState(t, s, Leader, 1, 1, NoReplica)
		want := campaign(acts, Unattached, 0, NoNode)
		require.Equal(t, want, acts)
	})
	t.Run("former leader", func(t *testing.T) {
		rec := quorumRecord(3, 1, NoNode)
		s, acts := restart(t, config(1, 1), rec, LogState{End: LogEnd{Offset: 4, Epoch: 3}})
		requireState(t, s, Leader, 4, 1, NoReplica)
		want := campaign(acts, Resigned, 3, 1)
		require.Equal(t, want, acts)
	})
	t.Run("self-vote", func(t *testing.T) {
		rec := quorumRecord(3, NoNode, 1)
		s, acts := restart(t, config(1, 1), rec, LogState{})
		requireState(t, s, Leader, 3, 1, NoReplica)
		want := append([]Action{Persist{Record: quorumRecord(3, 1, NoNode)}}, leaderTail(3)...)
		require.Equal(t, want, acts)
	})
	t.Run("vote for another", func(t *testing.T) {
		rec := quorumRecord(3, NoNode, 2)
		s, acts := restart(t, config(1, 1), rec, LogState{})
		requireState(t, s, Leader, 4, 1, NoReplica)
		want := campaign(acts, Unattached, 3, NoNode)
		require.Equal(t, want, acts)
	})
	t.Run("unreachable leader", func(t *testing.T) {
		rec := quorumRecord(3, 2, NoNode)
		s, acts := restart(t, config(1, 1), rec, LogState{})
		requireState(t, s, Leader, 4, 1, NoReplica)
		want := campaign(acts, Unattached, 3, 2)
		require.Equal(t, want, acts)
	})
}

// TestRestartObserver: observers (with or without a node id) restart
// Unattached or Follower only, never campaign, and an Unattached observer
// looks for the leader with a Fetch to any bootstrap voter paced by its
// fetch timer. Reference: QuorumState.initialize; docs/design.md, contract
// decision 6.
func TestRestartObserver(t *testing.T) {
	noID := Config{Local: NoReplica, Observer: true, Voters: keys(1, 2, 3)}
	withID := observerConfig(9, 1, 2, 3)
	search := func(rec QuorumRecord) []Action {
		return []Action{
			Persist{Record: rec},
			ResetTimer{Timer: FetchTimer, After: testTf},
			SendFetch{To: NoNode, CurrentLeaderEpoch: rec.Epoch, HighWatermark: -1},
		}
	}
	cases := []struct {
		name    string
		cfg     Config
		rec     *QuorumRecord
		role    Role
		epoch   Epoch
		leader  NodeID
		voted   ReplicaKey
		actions func(QuorumRecord) []Action
	}{
		{"no id, no record", noID, nil, Unattached, 0, NoNode, NoReplica, search},
		{"id, no record", withID, nil, Unattached, 0, NoNode, NoReplica, search},
		{"no id, stored leader", noID, &QuorumRecord{Epoch: 3, LeaderID: 2, VotedKey: NoReplica}, Follower, 3, 2, NoReplica, nil},
		{"id, stored leader and vote", withID, &QuorumRecord{Epoch: 3, LeaderID: 2, VotedKey: ReplicaKey{ID: 3}}, Follower, 3, 2, ReplicaKey{ID: 3}, nil},
		{"id, stored vote", withID, &QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: ReplicaKey{ID: 2}}, Unattached, 3, NoNode, ReplicaKey{ID: 2}, search},
		// Not a voter, so a stored vote for itself cannot restart Candidate.
		{"id, self vote", withID, &QuorumRecord{Epoch: 3, LeaderID: NoNode, VotedKey: ReplicaKey{ID: 9}}, Unattached, 3, NoNode, ReplicaKey{ID: 9}, search},
		{"id, unreachable leader", withID, &QuorumRecord{Epoch: 3, LeaderID: 7, VotedKey: NoReplica}, Unattached, 3, 7, NoReplica, search},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			s, acts, err := NewState(tc.cfg, tc.rec, LogState{})
			require.NoError(t, err)
			require.False(t, s.IsVoter())
			requireState(t, s, tc.role, tc.epoch, tc.leader, tc.voted)
			rec := s.Record()
			if tc.rec != nil {
				require.Equal(t, *tc.rec, rec)
			}
			want := []Action{
				Persist{Record: rec},
				ResetTimer{Timer: FetchTimer, After: testTf},
				SendFetch{To: tc.leader, CurrentLeaderEpoch: tc.epoch, HighWatermark: -1},
			}
			if tc.actions != nil {
				want = tc.actions(rec)
			}
			require.Equal(t, want, acts)

			// An observer never starts an election.
			next, acts := step(t, s, ElectionTimeout{})
			requireUnchanged(t, s, next, acts)
		})
	}
}

// TestRestartStoredVoteWithoutLocalIDFails: a node without an id cannot
// have voted; Kafka refuses to start. Reference: QuorumState.initialize.
func TestRestartStoredVoteWithoutLocalIDFails(t *testing.T) {
	cfg := Config{Local: NoReplica, Observer: true, Voters: keys(1, 2, 3)}
	rec := quorumRecord(3, NoNode, 2)
	_, acts, err := NewState(cfg, &rec, LogState{})
	require.Error(t, err)
	require.Nil(t, acts)
}

// TestRestartRejectsNegativeRecord: a corrupt record is an error, never a
// panic or a silent "node 0". Reference: docs/design.md D24 (NoNode is -1).
func TestRestartRejectsNegativeRecord(t *testing.T) {
	for _, rec := range []QuorumRecord{
		{Epoch: -1, LeaderID: NoNode, VotedKey: NoReplica},
		{Epoch: 1, LeaderID: -2, VotedKey: NoReplica},
		{Epoch: 1, LeaderID: NoNode, VotedKey: ReplicaKey{ID: -3}},
	} {
		rec := rec
		_, _, err := NewState(config(1, 1, 2, 3), &rec, LogState{})
		require.Error(t, err, "record %+v", rec)
	}
}

// TestConfigValidation: every invalid Config is an error from Validate and
// from NewState, never a panic. Reference: docs/design.md D11.
func TestConfigValidation(t *testing.T) {
	valid := []struct {
		name string
		cfg  Config
	}{
		{"voter", config(1, 1, 2, 3)},
		{"voter with id 0", Config{Local: ReplicaKey{ID: 0}, Voters: keys(0, 1, 2)}},
		{"observer with id", observerConfig(9, 1, 2, 3)},
		{"observer with id 0", Config{Local: ReplicaKey{ID: 0}, Observer: true, Voters: keys(1, 2, 3)}},
		{"observer without id", Config{Local: NoReplica, Observer: true, Voters: keys(1, 2, 3)}},
		{"voter with directory id", Config{Local: ReplicaKey{ID: 1, DirectoryID: dirA}, Voters: []ReplicaKey{{ID: 1, DirectoryID: dirA}, {ID: 2}}}},
	}
	for _, tc := range valid {
		require.NoError(t, tc.cfg.Validate(), tc.name)
		_, _, err := NewState(tc.cfg, nil, LogState{})
		require.NoError(t, err, tc.name)
	}

	invalid := []struct {
		name string
		cfg  Config
	}{
		{"duplicate ids", Config{Local: ReplicaKey{ID: 1}, Voters: keys(1, 2, 2)}},
		{"duplicate ids, distinct directories", Config{Local: ReplicaKey{ID: 1}, Voters: []ReplicaKey{{ID: 1}, {ID: 2, DirectoryID: dirA}, {ID: 2}}}},
		{"negative voter id", Config{Local: ReplicaKey{ID: 1}, Voters: keys(1, -2, 3)}},
		{"negative local id", Config{Local: ReplicaKey{ID: -2}, Observer: true, Voters: keys(1, 2, 3)}},
		{"forgotten Local", Config{Voters: keys(1, 2, 3)}},
		{"NoNode voter without Observer", Config{Local: NoReplica, Voters: keys(1, 2, 3)}},
		{"Observer but a voter", Config{Local: ReplicaKey{ID: 2}, Observer: true, Voters: keys(1, 2, 3)}},
		{"negative election timeout", Config{Local: ReplicaKey{ID: 1}, Voters: keys(1, 2, 3), ElectionTimeout: -time.Millisecond}},
		{"negative fetch timeout", Config{Local: ReplicaKey{ID: 1}, Voters: keys(1, 2, 3), FetchTimeout: -1}},
		{"negative backoff", Config{Local: ReplicaKey{ID: 1}, Voters: keys(1, 2, 3), ElectionBackoffMax: -time.Second}},
	}
	for _, tc := range invalid {
		require.Error(t, tc.cfg.Validate(), tc.name)
		var err error
		require.NotPanics(t, func() { _, _, err = NewState(tc.cfg, nil, LogState{}) }, tc.name)
		require.Error(t, err, tc.name)
	}

	// Without Config.Voters the voter set must come from the log (a
	// dynamic quorum, D50), except for an observer, which may start
	// knowing no voter (Kafka's brokers use bootstrap servers).
	noVoters := Config{Local: ReplicaKey{ID: 1}}
	require.NoError(t, noVoters.Validate())
	_, _, err := NewState(noVoters, nil, LogState{})
	require.Error(t, err)
	_, _, err = NewState(noVoters, nil, LogState{VoterSets: []VoterSetAt{{Offset: -1, Voters: keys(1, 2, 3)}}})
	require.NoError(t, err)
	s, _, err := NewState(Config{Local: ReplicaKey{ID: 4}, Observer: true}, nil, LogState{})
	require.NoError(t, err)
	require.False(t, s.IsVoter())
	require.Empty(t, s.Voters())
}

// TestLogStateValidation: an inconsistent log description is an error from
// NewState, never a panic (epochs in a log ascend).
func TestLogStateValidation(t *testing.T) {
	valid := []LogState{
		{},
		{End: LogEnd{Offset: 5, Epoch: 2}},
		{End: LogEnd{Offset: 5, Epoch: 3}, Epochs: []EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 4}}},
	}
	for _, l := range valid {
		s, _, err := NewState(config(1, 1, 2, 3), nil, l)
		require.NoError(t, err, "%+v", l)
		require.Equal(t, l.End, s.LogEnd())
	}
	invalid := []LogState{
		{End: LogEnd{Offset: -1}},
		{End: LogEnd{Offset: 3, Epoch: -1}},
		{End: LogEnd{Offset: 5, Epoch: 3}, Epochs: []EpochStart{{Epoch: 3, StartOffset: 0}, {Epoch: 1, StartOffset: 4}}},
		{End: LogEnd{Offset: 5, Epoch: 3}, Epochs: []EpochStart{{Epoch: 1, StartOffset: 4}, {Epoch: 3, StartOffset: 2}}},
		{End: LogEnd{Offset: 5, Epoch: 3}, Epochs: []EpochStart{{Epoch: 3, StartOffset: 0}, {Epoch: 3, StartOffset: 2}}},
		{End: LogEnd{Offset: 5, Epoch: 3}, Epochs: []EpochStart{{Epoch: -1, StartOffset: 0}, {Epoch: 3, StartOffset: 2}}},
		{End: LogEnd{Offset: 5, Epoch: 3}, Epochs: []EpochStart{{Epoch: 3, StartOffset: -1}}},
		{End: LogEnd{Offset: 5, Epoch: 3}, Epochs: []EpochStart{{Epoch: 3, StartOffset: 5}}},
		{End: LogEnd{Offset: 5, Epoch: 4}, Epochs: []EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 2}}},
		{End: LogEnd{Offset: 0, Epoch: 0}, Epochs: []EpochStart{{Epoch: 0, StartOffset: 0}}},
	}
	for _, l := range invalid {
		var err error
		require.NotPanics(t, func() { _, _, err = NewState(config(1, 1, 2, 3), nil, l) })
		require.Error(t, err, "%+v", l)
	}
}

// TestZeroDurationsMeanKafkaDefaults: a zero duration is Kafka's default
// (T_e 1 s, T_f 2 s, B_max 1 s); a state from zero durations is the state
// from the explicit defaults, and explicit values are used as given.
// Reference: Kafka's QuorumConfig defaults; docs/design.md D11.
func TestZeroDurationsMeanKafkaDefaults(t *testing.T) {
	explicit := config(1, 1, 2, 3)
	explicit.ElectionTimeout = DefaultElectionTimeout
	explicit.FetchTimeout = DefaultFetchTimeout
	explicit.ElectionBackoffMax = DefaultElectionBackoffMax
	rec := quorumRecord(3, 2, NoNode)

	zs, zacts := restart(t, config(1, 1, 2, 3), rec, LogState{})
	es, eacts := restart(t, explicit, rec, LogState{})
	require.Equal(t, es, zs)
	require.Equal(t, eacts, zacts)
	require.Equal(t, ResetTimer{Timer: FetchTimer, After: 2 * time.Second}, zacts[1])

	// An unlisted successor waits B_max = 1 s.
	_, acts := step(t, zs, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 3, SuccessorRank: SuccessorRank{Position: 2, Of: 2}})
	require.Equal(t, ResetTimer{Timer: FetchTimer, After: time.Second}, acts[0])

	// The leader: check-quorum 1.5*T_f = 3 s, BeginQuorumEpoch T_f/2 = 1 s.
	c, acts := step(t, node1Candidate(t), grantVote(2, 1))
	require.Equal(t, Leader, c.Role())
	require.Contains(t, acts, Action(ResetTimer{Timer: CheckQuorumTimer, After: 3 * time.Second}))
	require.Contains(t, acts, Action(ResetTimer{Timer: BeginQuorumEpochTimer, After: time.Second}))

	// Explicit values are used.
	custom := config(1, 1, 2, 3)
	custom.ElectionTimeout = 10 * time.Millisecond
	custom.FetchTimeout = 300 * time.Millisecond
	custom.ElectionBackoffMax = 80 * time.Millisecond
	cs, cacts := restart(t, custom, rec, LogState{})
	require.Equal(t, ResetTimer{Timer: FetchTimer, After: 300 * time.Millisecond}, cacts[1])
	_, acts = step(t, cs, ReceiveEndQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 3, SuccessorRank: SuccessorRank{Position: 1, Of: 2}})
	require.Equal(t, ResetTimer{Timer: FetchTimer, After: 40 * time.Millisecond}, acts[0])
	_, acts = step(t, start(t, custom), ElectionTimeout{})
	rt := ofType[ResetTimer](acts)
	require.Len(t, rt, 1)
	require.GreaterOrEqual(t, rt[0].After, 10*time.Millisecond)
	require.Less(t, rt[0].After, 20*time.Millisecond)
}

// TestRestartLogWithoutHistoryIsAllInItsEndEpoch: a LogState with records
// and no epoch history is read as a log whose records all belong to its end
// epoch. Elected leader of the next epoch, the replica answers a fetch in
// an older epoch with the diverging point (that epoch, 0): the start of its
// first epoch.
// Reference: LogState doc; RaftLog.validateOffsetAndEpoch;
// LeaderEpochFileCache.endOffsetFor.
func TestRestartLogWithoutHistoryIsAllInItsEndEpoch(t *testing.T) {
	s := restartedLeader(t, 2, LogState{End: LogEnd{Offset: 5, Epoch: 2}})
	require.Equal(t, Epoch(3), s.Epoch())
	require.Equal(t, LogEnd{Offset: 6, Epoch: 3}, s.LogEnd())
	_, acts := step(t, s, fetchFrom(2, 3, 3, 1))
	require.Equal(t, []Action{
		SendFetchResponse{To: 2, Error: ErrNone, Epoch: 3, LeaderID: 1, HighWatermark: -1, Diverging: &LogOffsetMetadata{Epoch: 1, Offset: 0}},
	}, acts)
}

// TestLogStateEpochBoundaries: an epoch history may start with epoch 0 (the
// same log NewState builds from records of epoch 0 without a history), but
// two epochs may not start at the same offset: each epoch in the history
// holds at least one record.
// Reference: LeaderEpochFileCache (epochs in a log ascend).
func TestLogStateEpochBoundaries(t *testing.T) {
	ok := LogState{End: LogEnd{Offset: 5, Epoch: 1}, Epochs: []EpochStart{{Epoch: 0, StartOffset: 0}, {Epoch: 1, StartOffset: 2}}}
	s, _, err := NewState(config(1, 1, 2, 3), nil, ok)
	require.NoError(t, err)
	require.Equal(t, LogEnd{Offset: 5, Epoch: 1}, s.LogEnd())

	empty := LogState{End: LogEnd{Offset: 5, Epoch: 2}, Epochs: []EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 2, StartOffset: 0}}}
	_, _, err = NewState(config(1, 1, 2, 3), nil, empty)
	require.Error(t, err)
}

// TestConfigAcceptsMaxVoters: a voter set of exactly MaxVoters voters is
// valid and elects a leader; one more is an error.
// Reference: Config doc (MaxVoters).
func TestConfigAcceptsMaxVoters(t *testing.T) {
	ids := make([]NodeID, MaxVoters+1)
	for i := range ids {
		ids[i] = NodeID(i)
	}
	cfg := config(MaxVoters-1, ids[:MaxVoters]...)
	require.NoError(t, cfg.Validate())
	s := start(t, cfg)
	require.Equal(t, Leader, asLeader(t, s).Role())

	require.Error(t, config(0, ids...).Validate())
}

// TestConfigRejectsObserverThatIsFirstVoter: Observer set on a replica
// whose key is in the voter set is an error wherever the key stands in the
// set, the first place included.
// Reference: Config.Validate doc.
func TestConfigRejectsObserverThatIsFirstVoter(t *testing.T) {
	for _, local := range []NodeID{1, 2, 3} {
		cfg := Config{Local: ReplicaKey{ID: local}, Observer: true, Voters: keys(1, 2, 3)}
		require.Error(t, cfg.Validate(), "local %d", local)
		_, _, err := NewState(cfg, nil, LogState{})
		require.Error(t, err, "local %d", local)
	}
}
