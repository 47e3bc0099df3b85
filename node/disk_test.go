package node

import (
	"github.com/kraftquorum/kraft/replica"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// TestStartRefusesALostVote: a replica whose quorum-state file is gone, or
// holds an epoch below its log's, may have voted in a later epoch: Start
// refuses it with storage's damage error instead of letting it vote again.
func TestStartRefusesALostVote(t *testing.T) {
	for _, rec := range []*kraft.QuorumRecord{nil, {Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}} {
		dir := t.TempDir()
		path := storage.QuorumStatePath(dir)
		if rec != nil {
			require.NoError(t, storage.WriteQuorumState(path, *rec))
		}
		lg := storage.NewMemLog()
		_, err := lg.Append(3, []byte{recordData, 'x'})
		require.NoError(t, err)
		net := NewMemNetwork()
		_, err = Start(Config{Config: replica.Config{Kraft: kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}},
			Log:     lg,
			Records: FileRecords{Path: filepath.Join(dir, storage.QuorumStateFileName)}}, Transport: net.Endpoint(1),
		})
		require.ErrorIs(t, err, storage.ErrDamaged, "record %+v", rec)
		require.ErrorContains(t, err, "the log holds records of epoch 3")
	}
}
