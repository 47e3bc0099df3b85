package replica

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// TestRefusedSnapshotIsNotFetchedAgain: a downloaded snapshot that ends
// below the follower's high watermark refuses the leader
// (docs/design.md D113): the layer hands the LeaderRefused on, keeps
// running and keeps its log, and does not send the last FetchSnapshot
// again after the retry backoff, as it does after an answer it could not
// use (D114).
func TestRefusedSnapshotIsNotFetchedAgain(t *testing.T) {
	backoff := 20 * time.Millisecond
	snaps, err := storage.OpenSnapshots(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = snaps.Close() })
	log := storage.NewMemLog()
	r, err := New(Config{
		Kraft: kraft.Config{
			Local: kraft.ReplicaKey{ID: 2}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}},
			ElectionTimeout: time.Second, FetchTimeout: 10 * time.Second,
		},
		Log: log, Records: &memRecords{}, Snapshots: StorageSnapshots(snaps), Static: true, RetryBackoff: backoff,
	}, 0)
	require.NoError(t, err)
	r.Take()
	sent := func(outs []Output) []Message {
		var ms []Message
		for _, o := range outs {
			if s, ok := o.(Send); ok {
				ms = append(ms, s.Message)
			}
		}
		return ms
	}
	r.Receive(0, Message{From: 1, To: 2, Corr: 7, Event: kraft.ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 2}})
	f := sentFetches(r.Take())
	require.Len(t, f, 1)
	recs := []storage.Entry{{Offset: 0, Epoch: 1, Data: []byte{RecordData, 'a'}}, {Offset: 1, Epoch: 1, Data: []byte{RecordData, 'b'}}, {Offset: 2, Epoch: 1, Data: []byte{RecordData, 'c'}}}
	r.Receive(time.Millisecond, Message{From: 1, To: 2, Corr: f[0].Corr, Response: true, Records: recs,
		Event: kraft.ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 3}})
	r.Take()
	require.NoError(t, log.Sync())
	r.Synced(2 * time.Millisecond)
	f = sentFetches(r.Take())
	require.Len(t, f, 1)
	require.Equal(t, int64(3), r.State().HighWatermark())

	below := kraft.LogEnd{Offset: 2, Epoch: 0} // not the log's: downloaded (D57)
	r.Receive(3*time.Millisecond, Message{From: 1, To: 2, Corr: f[0].Corr, Response: true,
		Event: kraft.ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 3, Snapshot: &below}})
	fs := sent(r.Take())
	require.Len(t, fs, 1)
	require.IsType(t, kraft.ReceiveFetchSnapshot{}, fs[0].Event)

	r.Receive(4*time.Millisecond, Message{From: 1, To: 2, Corr: fs[0].Corr, Response: true, Chunk: []byte("abc"),
		Event: kraft.ReceiveFetchSnapshotResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, Snapshot: below, Size: 3}})
	outs := r.Take()
	require.Equal(t, []Output{LeaderRefused{kraft.LeaderRefused{LeaderID: 1, Epoch: 1, TruncateTo: 2, HighWatermark: 3,
		Reason: "the leader's snapshot ends below the high watermark"}}}, outs)
	require.NoError(t, r.Err())
	require.Equal(t, kraft.LogEnd{Offset: 3, Epoch: 1}, log.End())
	id, ok := r.State().RefusedLeader()
	require.True(t, ok)
	require.Equal(t, kraft.NodeID(1), id)

	r.Tick(4*time.Millisecond + 3*backoff)
	require.Empty(t, sent(r.Take()), "no FetchSnapshot or Fetch to the refused leader")
}
