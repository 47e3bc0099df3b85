package kraft

import (
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// TestDeliverMapsEveryAction: each action type is in the table, every
// message becomes the addressee's event field by field (docs/wire-mapping.md),
// and every other action has no event. The list of action types is read from
// the package's source (loadCatalogue), so a new action without a row
// fails here.
func TestDeliverMapsEveryAction(t *testing.T) {
	from := ReplicaKey{ID: 4, DirectoryID: dirA}
	seen := map[string]bool{}
	for _, c := range deliverCases() {
		name := reflect.TypeOf(c.action).Name()
		seen[name] = true
		gotTo, got, ok := Deliver(from, c.action)
		require.Equal(t, c.want != nil, ok, name)
		require.Equal(t, c.want, got, name)
		if ok {
			require.Equal(t, c.to, gotTo, name)
		}
	}
	for _, name := range loadCatalogue(t).Actions {
		require.True(t, seen[name], "action %s has no row in the Deliver table", name)
	}
}

// deliverCase is an action of replica 4 (directory dirA), the addressee
// Deliver names and the event it makes (nil: the action is no message).
type deliverCase struct {
	action Action
	to     NodeID
	want   Event
}

// deliverCases is the Deliver table: at least one row for each action
// type.
func deliverCases() []deliverCase {
	from := ReplicaKey{ID: 4, DirectoryID: dirA}
	cluster := uuid.NullUUID{UUID: uuid.MustParse("00000000-0000-0000-0000-0000000000cc"), Valid: true}
	to := ReplicaKey{ID: 2, DirectoryID: dirB}
	div := &LogOffsetMetadata{Offset: 7, Epoch: 3}
	return []deliverCase{
		{Persist{Record: EmptyRecord()}, NoNode, nil},
		{
			SendVoteRequest{To: to, ClusterID: cluster, CandidateEpoch: 5, Candidate: from, CandidateLogEnd: LogEnd{Offset: 9, Epoch: 4}, PreVote: true},
			2,
			ReceiveVoteRequest{From: 4, ClusterID: cluster, VoterID: 2, VoterDirectoryID: dirB, CandidateEpoch: 5, Candidate: 4, CandidateDirectoryID: dirA, CandidateLogEnd: LogEnd{Offset: 9, Epoch: 4}, PreVote: true},
		},
		{
			SendVoteResponse{To: 2, Error: ErrFencedLeaderEpoch, Epoch: 6, LeaderID: 1, VoteGranted: true},
			2,
			ReceiveVoteResponse{From: 4, Error: ErrFencedLeaderEpoch, Epoch: 6, VoteGranted: true, LeaderID: 1},
		},
		{
			SendBeginQuorumEpoch{To: to, ClusterID: cluster, Epoch: 6, LeaderID: 4},
			2,
			ReceiveBeginQuorumEpoch{From: 4, ClusterID: cluster, LeaderID: 4, LeaderEpoch: 6, VoterID: 2, VoterDirectoryID: dirB},
		},
		{SendBeginQuorumEpochResponse{To: 2, Epoch: 7, LeaderID: 3}, 2, ReceiveQuorumResponse{From: 4, Epoch: 7, LeaderID: 3}},
		{SendBeginQuorumEpochResponse{To: 2, Error: ErrFencedLeaderEpoch, Epoch: 7, LeaderID: NoNode}, 2, ReceiveQuorumResponse{From: 4, Error: ErrFencedLeaderEpoch, Epoch: 7, LeaderID: NoNode}},
		{
			SendEndQuorumEpoch{To: to, ClusterID: cluster, Epoch: 6, LeaderID: 4, PreferredSuccessors: []ReplicaKey{{ID: 3}, {ID: 2, DirectoryID: dirB}, {ID: 1}}},
			2,
			ReceiveEndQuorumEpoch{From: 4, ClusterID: cluster, LeaderID: 4, LeaderEpoch: 6, SuccessorRank: SuccessorRank{Position: 1, Of: 3}},
		},
		{SendEndQuorumEpochResponse{To: 2, Error: ErrNotLeaderOrFollower, Epoch: 8, LeaderID: 1}, 2, ReceiveQuorumResponse{From: 4, Error: ErrNotLeaderOrFollower, Epoch: 8, LeaderID: 1}},
		{
			SendFetch{To: 1, ClusterID: cluster, CurrentLeaderEpoch: 6, FetchOffset: 12, FetchEpoch: 5, HighWatermark: 10},
			1,
			ReceiveFetch{From: 4, FromDirectoryID: dirA, ClusterID: cluster, CurrentLeaderEpoch: 6, FetchEpoch: 5, FetchOffset: 12},
		},
		{SendFetch{To: NoNode, CurrentLeaderEpoch: 0}, NoNode, ReceiveFetch{From: 4, FromDirectoryID: dirA}},
		{
			SendFetchResponse{To: 2, Error: ErrNone, Epoch: 6, LeaderID: 4, HighWatermark: 11, Diverging: div},
			2,
			ReceiveFetchResponse{From: 4, Error: ErrNone, LeaderID: 4, LeaderEpoch: 6, HighWatermark: 11, Diverging: div},
		},
		{
			SendFetchResponse{To: 2, Error: ErrNone, Epoch: 6, LeaderID: 4, HighWatermark: 11, Snapshot: &LogEnd{Offset: 20, Epoch: 5}},
			2,
			ReceiveFetchResponse{From: 4, Error: ErrNone, LeaderID: 4, LeaderEpoch: 6, HighWatermark: 11, Snapshot: &LogEnd{Offset: 20, Epoch: 5}},
		},
		{
			SendFetchSnapshot{To: 1, ClusterID: cluster, CurrentLeaderEpoch: 6, Snapshot: LogEnd{Offset: 20, Epoch: 5}, Position: 300},
			1,
			ReceiveFetchSnapshot{From: 4, FromDirectoryID: dirA, ClusterID: cluster, CurrentLeaderEpoch: 6, Snapshot: LogEnd{Offset: 20, Epoch: 5}, Position: 300, Size: -1},
		},
		{
			SendFetchSnapshotResponse{To: 2, Epoch: 9, LeaderID: 4, Snapshot: LogEnd{Offset: 20, Epoch: 5}, Size: 1000, Position: 300},
			2,
			ReceiveFetchSnapshotResponse{From: 4, LeaderID: 4, LeaderEpoch: 9, Snapshot: LogEnd{Offset: 20, Epoch: 5}, Size: 1000, Position: 300, Bytes: 700},
		},
		{
			SendFetchSnapshotResponse{To: 2, Error: ErrSnapshotNotFound, Epoch: 9, LeaderID: NoNode, Snapshot: LogEnd{Offset: -1, Epoch: -1}, Size: -1, Position: -1},
			2,
			ReceiveFetchSnapshotResponse{From: 4, Error: ErrSnapshotNotFound, LeaderID: NoNode, LeaderEpoch: 9, Snapshot: LogEnd{Offset: -1, Epoch: -1}, Size: -1, Position: -1},
		},
		{WriteSnapshotChunk{Snapshot: LogEnd{Offset: 20, Epoch: 5}}, NoNode, nil},
		{InstallSnapshot{Snapshot: LogEnd{Offset: 20, Epoch: 5}}, NoNode, nil},
		{TruncateLog{To: 3}, NoNode, nil},
		{AppendLeaderChange{Epoch: 6, LeaderID: 4}, NoNode, nil},
		{AppendFetched{Offset: 3, Then: ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 6, HighWatermark: 2}}, NoNode, nil},
		{HighWatermarkChanged{HighWatermark: 3}, NoNode, nil},
		{ResetTimer{Timer: FetchTimer}, NoNode, nil},
		{StopTimer{Timer: FetchTimer}, NoNode, nil},
		{RoleChanged{From: Follower, To: Leader}, NoNode, nil},
		{Fault{Reason: "x"}, NoNode, nil},
		{LeaderRefused{LeaderID: 3, Epoch: 6, TruncateTo: 2, HighWatermark: 5, Reason: "x"}, NoNode, nil},
		{
			SendVoterChange{To: 1, ClusterID: cluster, Kind: AddVoter, Voter: from},
			1,
			ReceiveAddVoter{From: 4, ClusterID: cluster, Voter: from, Listener: true},
		},
		{
			SendVoterChange{To: 1, ClusterID: cluster, Kind: RemoveVoter, Voter: ReplicaKey{ID: 4, DirectoryID: dirB}},
			1,
			ReceiveRemoveVoter{From: 4, ClusterID: cluster, Voter: ReplicaKey{ID: 4, DirectoryID: dirB}},
		},
		{SendVoterChangeResponse{Ref: 7, To: 3, Kind: AddVoter, Epoch: 6, LeaderID: 4}, NoNode, nil},
		{SendAPIVersions{To: to}, NoNode, nil},
		{AppendVoters{Epoch: 6, Voters: []ReplicaKey{from, to}, Change: VoterChange{Kind: AddVoter, Voter: to}}, NoNode, nil},
	}
}

// TestRankOfMatchesDirectoryIDs: KIP-853 matching in a successor list.
func TestRankOfMatchesDirectoryIDs(t *testing.T) {
	list := []ReplicaKey{{ID: 1, DirectoryID: dirA}, {ID: 2}, {ID: 3, DirectoryID: dirB}}
	require.Equal(t, SuccessorRank{Position: 0, Of: 3}, RankOf(ReplicaKey{ID: 1, DirectoryID: dirA}, list))
	require.Equal(t, SuccessorRank{Position: 0, Of: 3}, RankOf(ReplicaKey{ID: 1}, list))
	require.Equal(t, SuccessorRank{Position: 3, Of: 3}, RankOf(ReplicaKey{ID: 1, DirectoryID: dirB}, list))
	require.Equal(t, SuccessorRank{Position: 1, Of: 3}, RankOf(ReplicaKey{ID: 2, DirectoryID: dirB}, list))
	require.Equal(t, SuccessorRank{Position: 3, Of: 3}, RankOf(ReplicaKey{ID: 5}, list))
	require.Equal(t, SuccessorRank{Position: 0, Of: 0}, RankOf(ReplicaKey{ID: 5}, nil))
}

// TestTimerTimeoutIsItsEvent: each timer's Timeout is the event its
// firing is stepped as; a value that is no timer has none.
func TestTimerTimeoutIsItsEvent(t *testing.T) {
	require.Equal(t, ElectionTimeout{}, ElectionTimer.Timeout())
	require.Equal(t, FetchTimeout{}, FetchTimer.Timeout())
	require.Equal(t, CheckQuorumTimeout{}, CheckQuorumTimer.Timeout())
	require.Equal(t, BeginQuorumEpochTimeout{}, BeginQuorumEpochTimer.Timeout())
	require.Equal(t, VoterChangeTimeout{}, VoterChangeTimer.Timeout())
	require.Nil(t, Timer(0).Timeout())
	require.Nil(t, Timer(9).Timeout())
}
