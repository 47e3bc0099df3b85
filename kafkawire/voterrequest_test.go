package kafkawire

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// TestVoterRequestsMapToKafkasGoldenFramesBothWays: the AddRaftVoter,
// RemoveRaftVoter and UpdateRaftVoter v0 requests Kafka's client sent in
// the dynamic capture decode to kraft's ReceiveAddVoter,
// ReceiveRemoveVoter and ReceiveUpdateVoter with their listeners, timeout
// and kraft.version range, and those events encode back to the same bytes
// (what kraftd sends to join or to update its endpoint, D170).
func TestVoterRequestsMapToKafkasGoldenFramesBothWays(t *testing.T) {
	dir1 := mustUuid("a3JhZnQAAAAAAAAAAAAQAQ")
	listener := []Endpoint{{NodeID: 4, Name: ListenerName, Host: "127.0.0.1", Port: 39294}}
	cases := []struct {
		file string
		key  int16
		want Msg
	}{
		{"dynamic/add_raft_voter-v0", AddRaftVoter, Msg{API: AddRaftVoter, TimeoutMs: 30000, Endpoints: listener,
			Event: kraft.ReceiveAddVoter{From: kraft.NoNode, Voter: kraft.ReplicaKey{ID: 4, DirectoryID: dir4}, Listener: true}}},
		{"dynamic/remove_raft_voter-v0", RemoveRaftVoter, Msg{API: RemoveRaftVoter,
			Event: kraft.ReceiveRemoveVoter{From: kraft.NoNode, Voter: kraft.ReplicaKey{ID: 1, DirectoryID: dir1}}}},
		{"dynamic/update_raft_voter-v0", UpdateRaftVoter, Msg{API: UpdateRaftVoter, Endpoints: listener,
			Event: kraft.ReceiveUpdateVoter{From: kraft.NoNode, ClusterID: goldenCluster, CurrentLeaderEpoch: 1,
				Voter: kraft.ReplicaKey{ID: 4, DirectoryID: dir4}, Listener: true, KRaftVersions: kraft.VersionRange{Min: 0, Max: 1}}}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			frame := readGolden(t, c.file+".request.hex")
			h, req, err := ReadRequest(frame)
			require.NoError(t, err)
			require.Equal(t, c.key, h.APIKey)
			got, err := DecodeRequest(req, kraft.ReplicaKey{ID: 2})
			require.NoError(t, err)
			require.Equal(t, c.want, got)
			enc, err := EncodeRequest(got, 0)
			require.NoError(t, err)
			require.True(t, bytes.Equal(AppendRequest(nil, h.CorrelationID, h.ClientID, enc), frame), "re-encoded %s differs", c.file)
		})
	}
}

// TestVoterAnswersReadKafkasGoldenResponses: Kafka's answers to the three
// requests read as VoterAnswer: the code and message (NONE,
// DUPLICATE_VOTER, VOTER_NOT_FOUND), and UpdateRaftVoter's CurrentLeader.
func TestVoterAnswersReadKafkasGoldenResponses(t *testing.T) {
	cases := []struct {
		file    string
		key     int16
		code    kraft.ErrorCode
		message string
		leader  *Endpoint
	}{
		{"dynamic/add_raft_voter-v0", AddRaftVoter, kraft.ErrNone, "NONE", nil},
		{"dynamic/add_raft_voter-v0-DUPLICATE_VOTER", AddRaftVoter, kraft.ErrDuplicateVoter, "The voter id for ReplicaKey(id=1", nil},
		{"dynamic/remove_raft_voter-v0", RemoveRaftVoter, kraft.ErrNone, "NONE", nil},
		{"dynamic/remove_raft_voter-v0-VOTER_NOT_FOUND", RemoveRaftVoter, kraft.ErrVoterNotFound, "", nil},
		{"dynamic/update_raft_voter-v0", UpdateRaftVoter, kraft.ErrNone, "", &Endpoint{NodeID: 2, Host: "127.0.0.1", Port: 39292}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			_, resp, err := ReadResponse(readGolden(t, c.file+".response.hex"), c.key, 0)
			require.NoError(t, err)
			a, err := DecodeVoterAnswer(resp)
			require.NoError(t, err)
			require.Equal(t, c.key, a.API)
			require.Equal(t, c.code, a.Code)
			require.Contains(t, a.Message, c.message)
			require.Equal(t, c.leader, a.Leader)
			if c.leader != nil {
				require.Equal(t, kraft.NodeID(2), a.LeaderID)
				require.Equal(t, kraft.Epoch(1), a.LeaderEpoch)
			}
		})
	}
}

// TestVoterRequestToALeaderWithoutTheAPIIsUnsupportedVersion: a leader
// whose ApiVersions does not list UpdateRaftVoter (a static quorum's,
// which does not serve voter changes) gets no request: the answer is
// UNSUPPORTED_VERSION at once, as Kafka's NetworkClient gives, which ends
// the endpoint update for that leader (D171).
func TestVoterRequestToALeaderWithoutTheAPIIsUnsupportedVersion(t *testing.T) {
	leader, err := NewTransport(TransportConfig{ID: 1, Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	defer leader.Close()
	voter, err := NewTransport(TransportConfig{ID: 2, Listen: "127.0.0.1:0", Peers: map[kraft.NodeID]string{1: leader.Addr().String()}})
	require.NoError(t, err)
	defer voter.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := voter.SendVoterRequest(ctx, 1, kraft.ReceiveUpdateVoter{From: 2, Voter: kraft.ReplicaKey{ID: 2}, Listener: true})
	require.NoError(t, err)
	require.Equal(t, UpdateRaftVoter, a.API)
	require.Equal(t, kraft.ErrUnsupportedVersion, a.Code)
}
