package node

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// copyCountingLog is a MemLog that counts the payload bytes its copying
// Read hands out.
type copyCountingLog struct {
	*storage.MemLog
	copied int64
}

func (l *copyCountingLog) Read(from int64, maxBytes int) ([]storage.Entry, error) {
	es, err := l.MemLog.Read(from, maxBytes)
	for _, e := range es {
		atomic.AddInt64(&l.copied, int64(len(e.Data)))
	}
	return es, err
}

// TestNodeCopiesEachRecordOutOfTheLogAtMostOnce: under concurrent appends
// the log end runs ahead of the high watermark, and an applier that read
// the log with a copying Read copied the records past the high watermark
// on every pass, to read them again once they committed. With a log that
// shares its memory (storage.SharedReader) a node copies out of the log
// only the payloads it hands to OnCommit, so the bytes copied stay within
// the bytes the log holds; and OnCommit's records are still the
// application's own (changing one leaves the log as it was).
func TestNodeCopiesEachRecordOutOfTheLogAtMostOnce(t *testing.T) {
	logs := map[kraft.NodeID]*copyCountingLog{}
	var mu sync.Mutex
	c := newTunedCluster(t, 3, nil, func(cfg *Config) {
		mu.Lock()
		defer mu.Unlock()
		id := cfg.Kraft.Local.ID
		if logs[id] == nil {
			logs[id] = &copyCountingLog{MemLog: cfg.Log.(*storage.MemLog)}
		}
		cfg.Log = logs[id]
	})
	c.appendCommitted("warm-up")
	const clients, appends = 8, 800
	rec := bytes.Repeat([]byte{'r'}, 1024)
	var done int64
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := c.leader()
			for atomic.LoadInt64(&done) < appends {
				if _, err := l.Append(context.Background(), rec); err != nil {
					l = c.leader()
					continue
				}
				atomic.AddInt64(&done, 1)
			}
		}()
	}
	wg.Wait()
	c.appendCommitted("last")
	for id, lg := range logs {
		require.Eventually(t, func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			rs := c.committed[id]
			return len(rs) > 0 && string(rs[len(rs)-1].Data) == "last"
		}, 10*time.Second, 5*time.Millisecond, "node %d: the last record applied", id)
		es, err := lg.MemLog.ReadShared(0, 1<<30)
		require.NoError(t, err)
		held := int64(0)
		for _, e := range es {
			held += int64(len(e.Data))
		}
		copied := atomic.LoadInt64(&lg.copied)
		t.Logf("node %d: %d bytes copied out of a log of %d bytes", id, copied, held)
		require.LessOrEqual(t, copied, held, "node %d: bytes copied out of the log", id)

		c.mu.Lock()
		r := c.committed[id][len(c.committed[id])-2]
		c.mu.Unlock()
		require.Equal(t, rec, r.Data)
		r.Data[0] = 'x'
		in, err := lg.MemLog.ReadShared(r.Offset, 1)
		require.NoError(t, err)
		require.Equal(t, append([]byte{recordData}, rec...), in[0].Data, "node %d: OnCommit's record shares the log's memory", id)
	}
}
