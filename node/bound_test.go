package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// TestPendingAppendsBounded: a leader that cannot commit holds at most
// MaxPendingAppends appends waiting; one more is refused at once with
// ErrTooManyAppends and counted in Metrics.AppendsRefused (D203).
func TestPendingAppendsBounded(t *testing.T) {
	saved := maxPendingAppends
	maxPendingAppends = 3
	t.Cleanup(func() { maxPendingAppends = saved })
	c := newTestCluster(t, 3)
	c.appendCommitted("first")
	l := c.leader()
	for id := range c.nodes {
		if c.nodes[id] != l {
			c.crash(id)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 3; i++ {
		go func() { _, _ = l.Append(ctx, []byte("waits")) }()
	}
	var err error
	require.Eventually(t, func() bool {
		short, stop := context.WithTimeout(ctx, 20*time.Millisecond)
		defer stop()
		_, err = l.Append(short, []byte("one more"))
		return errors.Is(err, ErrTooManyAppends)
	}, 5*time.Second, time.Millisecond, "last error %v", err)
	var waiting int
	require.NoError(t, l.call(func() { waiting = len(l.waiters) }))
	require.Equal(t, 3, waiting)
	m, err := l.Metrics()
	require.NoError(t, err)
	require.NotZero(t, m.AppendsRefused)
	require.Equal(t, kraft.Leader.String(), m.Role)
}
