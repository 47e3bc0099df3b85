package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Tests of the protocol's value types: the orders of replica keys and log
// ends, and the error codes.

// TestReplicaKeyCompareOrdersByIDThenDirectory: ReplicaKey.Compare is
// Kafka's ReplicaKey.compareTo: by id, then by directory id byte by byte,
// "no directory id" as the zero UUID; equal keys compare 0.
// Reference: ReplicaKey.compareTo.
func TestReplicaKeyCompareOrdersByIDThenDirectory(t *testing.T) {
	cases := []struct {
		a, b ReplicaKey
		want int
	}{
		{ReplicaKey{ID: 1}, ReplicaKey{ID: 2}, -1},
		{ReplicaKey{ID: 2}, ReplicaKey{ID: 1}, 1},
		{ReplicaKey{ID: 2}, ReplicaKey{ID: 2}, 0},
		{ReplicaKey{ID: 1, DirectoryID: dirB}, ReplicaKey{ID: 2}, -1},
		{ReplicaKey{ID: 2}, ReplicaKey{ID: 2, DirectoryID: dirA}, -1},
		{ReplicaKey{ID: 2, DirectoryID: dirA}, ReplicaKey{ID: 2}, 1},
		{ReplicaKey{ID: 2, DirectoryID: dirA}, ReplicaKey{ID: 2, DirectoryID: dirB}, -1},
		{ReplicaKey{ID: 2, DirectoryID: dirB}, ReplicaKey{ID: 2, DirectoryID: dirA}, 1},
		{ReplicaKey{ID: 2, DirectoryID: dirA}, ReplicaKey{ID: 2, DirectoryID: dirA}, 0},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.a.Compare(c.b), "%v vs %v", c.a, c.b)
	}
}

// TestLogEndCompareOrdersByEpochThenOffset: LogEnd.Compare is Kafka's
// OffsetAndEpoch.compareTo: by epoch first, then by offset; equal tips
// compare 0.
// Reference: OffsetAndEpoch.compareTo.
func TestLogEndCompareOrdersByEpochThenOffset(t *testing.T) {
	cases := []struct {
		a, b LogEnd
		want int
	}{
		{LogEnd{Offset: 9, Epoch: 1}, LogEnd{Offset: 1, Epoch: 2}, -1},
		{LogEnd{Offset: 1, Epoch: 2}, LogEnd{Offset: 9, Epoch: 1}, 1},
		{LogEnd{Offset: 4, Epoch: 2}, LogEnd{Offset: 5, Epoch: 2}, -1},
		{LogEnd{Offset: 5, Epoch: 2}, LogEnd{Offset: 4, Epoch: 2}, 1},
		{LogEnd{Offset: 5, Epoch: 2}, LogEnd{Offset: 5, Epoch: 2}, 0},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.a.Compare(c.b), "%+v vs %+v", c.a, c.b)
	}
}

// TestErrorCodesHaveKafkaValues: the error codes are Kafka's numeric wire
// values, and print as Kafka names them.
// Reference: org.apache.kafka.common.protocol.Errors.
func TestErrorCodesHaveKafkaValues(t *testing.T) {
	cases := []struct {
		code  ErrorCode
		value int16
		name  string
	}{
		{ErrUnknownServerError, -1, "UNKNOWN_SERVER_ERROR"},
		{ErrNone, 0, "NONE"},
		{ErrUnknownTopicOrPartition, 3, "UNKNOWN_TOPIC_OR_PARTITION"},
		{ErrNotLeaderOrFollower, 6, "NOT_LEADER_OR_FOLLOWER"},
		{ErrBrokerNotAvailable, 8, "BROKER_NOT_AVAILABLE"},
		{ErrClusterAuthorizationFailed, 31, "CLUSTER_AUTHORIZATION_FAILED"},
		{ErrUnsupportedVersion, 35, "UNSUPPORTED_VERSION"},
		{ErrInvalidRequest, 42, "INVALID_REQUEST"},
		{ErrFencedLeaderEpoch, 74, "FENCED_LEADER_EPOCH"},
		{ErrUnknownLeaderEpoch, 75, "UNKNOWN_LEADER_EPOCH"},
		{ErrSnapshotNotFound, 98, "SNAPSHOT_NOT_FOUND"},
		{ErrPositionOutOfRange, 99, "POSITION_OUT_OF_RANGE"},
		{ErrInconsistentClusterID, 104, "INCONSISTENT_CLUSTER_ID"},
		{ErrInvalidVoterKey, 125, "INVALID_VOTER_KEY"},
	}
	for _, c := range cases {
		require.Equal(t, c.value, int16(c.code), c.name)
		require.Equal(t, c.name, c.code.String())
	}
	require.Equal(t, "ERROR(1)", ErrorCode(1).String())
}
