package kraft

import (
	"testing"

	"github.com/google/uuid"

	"github.com/stretchr/testify/require"
)

// The two timer-only differences from Kafka that a voter's removal makes
// at a leader (docs/design.md D51).

// TestLeaderLeftAloneByARemovalLetsItsTimersFireOnce: a leader whose
// voter set shrinks to itself keeps its check-quorum and BeginQuorumEpoch
// timers armed (the check-quorum window is even restarted: a majority of
// one needs no Fetch); each fires once more, does nothing and is not armed
// again. Kafka's LeaderState.timeUntilCheckQuorumExpires never expires
// with one voter, and its BeginQuorumEpoch timer goes on firing with no
// one to send to: no message differs.
func TestLeaderLeftAloneByARemovalLetsItsTimersFireOnce(t *testing.T) {
	s := dynamicLeader(t, key1A, key2B)
	s, acts := step(t, s, ReceiveRemoveVoter{Ref: 1, From: NoNode, Voter: key2B})
	require.Len(t, ofType[AppendVoters](acts), 1)
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	s, acts = step(t, s, VotersAppended{Offset: 2, Voters: []ReplicaKey{key1A}})
	require.Equal(t, []ReplicaKey{key1A}, s.Voters())
	requireActions(t, []Action{checkQuorumTimerReset}, acts)

	s, acts = step(t, s, CheckQuorumTimeout{})
	require.Equal(t, Leader, s.Role(), "the only voter never resigns for check-quorum")
	require.Empty(t, acts, "the check-quorum timer is not armed again")
	s, acts = step(t, s, BeginQuorumEpochTimeout{})
	require.Equal(t, Leader, s.Role())
	require.Empty(t, acts, "the BeginQuorumEpoch timer is not armed again")
}

// TestRemovedVotersFetchDoesNotCountForCheckQuorum: a voter's Fetch in the
// current check-quorum window stops counting when the voter is removed.
// Five voters need two Fetches besides the leader; voter 5 fetches, is
// removed (four voters need two as well), and voter 2's Fetch alone does
// not restart the window. Kafka's LeaderState keeps the removed voter's id
// in fetchedVoters (updateVoterAndObserverStates does not prune it), so
// there voter 2's Fetch would restart it.
func TestRemovedVotersFetchDoesNotCountForCheckQuorum(t *testing.T) {
	key5E := ReplicaKey{ID: 5, DirectoryID: uuid.MustParse("00000000-0000-0000-0000-00000000000e")}
	key4D := ReplicaKey{ID: 4, DirectoryID: uuid.MustParse("00000000-0000-0000-0000-00000000000d")}
	s := dynamicLeader(t, key1A, key2B, key3C, key4D, key5E)
	fetch := func(k ReplicaKey) ReceiveFetch {
		return ReceiveFetch{From: k.ID, FromDirectoryID: k.DirectoryID, CurrentLeaderEpoch: 1, FetchOffset: 2, FetchEpoch: 1}
	}
	s, acts := step(t, s, fetch(key5E))
	require.NotContains(t, acts, Action(checkQuorumTimerReset), "one Fetch of five voters is not a majority")
	s, acts = step(t, s, ReceiveRemoveVoter{Ref: 1, From: NoNode, Voter: key5E})
	require.Len(t, ofType[AppendVoters](acts), 1)
	s, _ = step(t, s, LogAppended{End: LogEnd{Offset: 3, Epoch: 1}})
	s, acts = step(t, s, VotersAppended{Offset: 2, Voters: []ReplicaKey{key1A, key2B, key3C, key4D}})
	require.Len(t, s.Voters(), 4)
	require.NotContains(t, acts, Action(checkQuorumTimerReset))
	s, acts = step(t, s, fetch(key2B))
	require.NotContains(t, acts, Action(checkQuorumTimerReset), "the removed voter's Fetch counted")
	_, acts = step(t, s, fetch(key3C))
	require.Contains(t, acts, Action(checkQuorumTimerReset), "two voters of four fetched")
}
