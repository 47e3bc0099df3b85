package node

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// ioLog is a MemLog the runtime cannot tell from a log whose Sync does
// I/O.
type ioLog struct{ *storage.MemLog }

// TestMemLogSyncsOnTheLoop: a MemLog, whose Sync does no I/O, is synced on
// the loop in the same carry that asked for it (D146): right after an
// append is carried out, the replica already counts it flushed, and a
// single voter has committed it. Any other log syncs in a goroutine and
// reports later, so at that point the record is not flushed yet.
func TestMemLogSyncsOnTheLoop(t *testing.T) {
	for _, mem := range []bool{true, false} {
		c := newTunedCluster(t, 1, nil, func(cfg *Config) {
			if !mem {
				cfg.Log = ioLog{cfg.Log.(*storage.MemLog)}
			}
		})
		nd := c.leader()
		require.Equal(t, mem, nd.syncOnLoop)
		var end, flushed, hwm int64
		require.NoError(t, nd.call(func() {
			e, err := nd.r.Propose(nd.clock(), replica.DataRecords([][]byte{[]byte("x")}))
			require.NoError(t, err)
			nd.carry()
			end, flushed, hwm = e.Offset, nd.r.State().FlushedOffset(), nd.r.State().HighWatermark()
		}))
		if mem {
			require.Equal(t, end, flushed, "synced in the carry")
			require.Equal(t, end, hwm, "committed in the carry")
		} else {
			require.Less(t, flushed, end, "synced off the loop, reported later")
		}
	}
}

// TestMemFollowersShareTheLeadersRecords: on a MemNetwork with MemLogs,
// a follower keeps the records it fetched as the leader's log holds them
// (D147): the three logs share one copy of each payload.
func TestMemFollowersShareTheLeadersRecords(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	c.appendCommitted("shared")
	end := c.logs[leader.local.ID].End().Offset
	lead, err := c.logs[leader.local.ID].ReadShared(end-1, 1<<20)
	require.NoError(t, err)
	for id, lg := range c.logs {
		if id == leader.local.ID {
			continue
		}
		require.Eventually(t, func() bool { return lg.End().Offset >= end }, 5*time.Second, time.Millisecond)
		got, err := lg.ReadShared(end-1, 1<<20)
		require.NoError(t, err)
		require.Equal(t, lead[0].Data, got[0].Data)
		require.Same(t, &lead[0].Data[0], &got[0].Data[0], "follower %d copied the record", id)
	}
}

// TestShareCommittedHandsOnCommitTheLogsMemory: with ShareCommitted and a
// MemLog, OnCommit gets the log's own bytes of each record (D148); without
// it, a copy it may modify.
func TestShareCommittedHandsOnCommitTheLogsMemory(t *testing.T) {
	for _, share := range []bool{true, false} {
		got := make(chan Record, 16)
		c := newTunedCluster(t, 1, nil, func(cfg *Config) {
			cfg.ShareCommitted = share
			prev := cfg.OnCommit
			cfg.OnCommit = func(rs []Record) {
				prev(rs)
				for _, r := range rs {
					got <- r
				}
			}
		})
		nd := c.leader()
		off := c.appendCommitted("kept")
		var rec Record
		for rec.Offset != off {
			select {
			case rec = <-got:
			case <-time.After(5 * time.Second):
				require.FailNow(t, "no OnCommit")
			}
		}
		require.Equal(t, []byte("kept"), rec.Data)
		logged, err := c.logs[nd.local.ID].ReadShared(off, 1)
		require.NoError(t, err)
		same := &logged[0].Data[1] == &rec.Data[0]
		require.Equal(t, share, same, "share=%v", share)
	}
}
