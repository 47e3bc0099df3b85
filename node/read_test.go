package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/stretchr/testify/require"
)

// gate holds every OnCommit call until it is opened: a slow application.
type gate struct {
	mu   sync.Mutex
	open chan struct{}
	got  []Record
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) onCommit(rs []Record) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	g.got = append(g.got, rs...)
}

func (g *gate) records() []Record {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Record(nil), g.got...)
}

// gatedCluster is a cluster whose nodes' applications wait for the gate.
func gatedCluster(t *testing.T, n int, g *gate) *testCluster {
	return newTunedCluster(t, n, nil, func(cfg *Config) {
		inner := cfg.OnCommit
		cfg.OnCommit = func(rs []Record) {
			g.onCommit(rs)
			inner(rs)
		}
	})
}

// TestNodeWaitApplied: Append returns once a record is committed, which
// a slow application may not have applied yet; WaitApplied returns only
// once OnCommit has been handed it.
func TestNodeWaitApplied(t *testing.T) {
	g := newGate()
	c := gatedCluster(t, 1, g)
	nd := c.nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	off, err := nd.Append(ctx, []byte("a"))
	require.NoError(t, err)

	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	require.ErrorIs(t, nd.WaitApplied(short, off), context.DeadlineExceeded, "applied behind a closed gate")
	require.Empty(t, g.records())

	close(g.open)
	require.NoError(t, nd.WaitApplied(ctx, off))
	got := g.records()
	require.NotEmpty(t, got)
	require.Equal(t, off, got[len(got)-1].Offset)
	require.Equal(t, "a", string(got[len(got)-1].Data))
	require.NoError(t, nd.WaitApplied(ctx, off), "an offset applied before the call")
}

// TestNodeReadBarrier: a leader's read barrier returns once every record
// committed before it is applied on the leader, never before; OnCommit
// never sees the barrier record; a follower's barrier names the leader.
func TestNodeReadBarrier(t *testing.T) {
	g := newGate()
	c := gatedCluster(t, 3, g)
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	off, err := l.Append(ctx, []byte("w"))
	require.NoError(t, err)

	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	_, err = l.ReadBarrier(short)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a barrier returned before the write was applied")

	close(g.open)
	var barrier int64
	for {
		barrier, err = l.ReadBarrier(ctx)
		if !errors.Is(err, ErrLeadershipLost) && !errors.Is(err, ErrNotLeader) {
			break
		}
		l = c.leader() // an election under load: ask the new leader
	}
	require.NoError(t, err)
	require.Greater(t, barrier, off)
	var data []string
	c.mu.Lock()
	for _, r := range c.committed[l.local.ID] {
		data = append(data, string(r.Data))
		require.NotEqual(t, barrier, r.Offset, "OnCommit was handed the barrier record")
	}
	c.mu.Unlock()
	require.Contains(t, data, "w", "the write is applied on the leader when its barrier returns")

	for id, nd := range c.nodes {
		if id == l.local.ID {
			continue
		}
		_, err := nd.ReadBarrier(ctx)
		var nl *NotLeaderError
		require.ErrorAs(t, err, &nl)
		require.Equal(t, l.local.ID, nl.Leader)
	}
}

// TestNodeReadIndexSeesAcknowledgedWrites: on three in-memory nodes with
// a slow application, a read taken at the leader after another caller's
// Append was acknowledged sees the write in the leader's application, and
// reads append nothing to the log.
func TestNodeReadIndexSeesAcknowledgedWrites(t *testing.T) {
	c := newTunedCluster(t, 3, nil, func(cfg *Config) {
		inner := cfg.OnCommit
		cfg.OnCommit = func(rs []Record) {
			time.Sleep(2 * time.Millisecond) // the application lags the commits
			inner(rs)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	acked := make(chan string)
	go func() {
		defer close(acked)
		for i := 0; i < 20; i++ {
			v := fmt.Sprintf("w%d", i)
			c.appendCommitted(v)
			select {
			case acked <- v:
			case <-ctx.Done():
				return
			}
		}
	}()
	applied := func(id kraft.NodeID, v string) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, r := range c.committed[id] {
			if string(r.Data) == v {
				return true
			}
		}
		return false
	}
	for v := range acked {
		for {
			l := c.leader()
			off, err := l.ReadIndex(ctx)
			if errors.Is(err, ErrLeadershipLost) || errors.Is(err, ErrNotLeader) || errors.Is(err, replica.ErrReadTimedOut) {
				continue // an election: read at the new leader
			}
			require.NoError(t, err)
			require.Positive(t, off)
			require.True(t, applied(l.local.ID, v), "a read after the acknowledged write %s does not see it", v)
			break
		}
	}

	l := c.leader()
	before, err := l.Status()
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		_, err := l.ReadIndex(ctx)
		require.NoError(t, err)
	}
	after, err := l.Status()
	require.NoError(t, err)
	if after.Epoch == before.Epoch {
		require.Equal(t, before.LogEnd, after.LogEnd, "reads wrote to the log")
	}
}
