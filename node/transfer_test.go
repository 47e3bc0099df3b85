package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

func errorAs(err error, target **NotLeaderError) bool { return err != nil && errors.As(err, target) }

// otherThan is the node with the highest id that is not id.
func (c *testCluster) otherThan(id kraft.NodeID) kraft.NodeID {
	best := kraft.NoNode
	for nid := range c.nodes {
		if nid != id && nid > best {
			best = nid
		}
	}
	return best
}

// TestNodeTransferLeadershipElectsTheTarget: three in-memory nodes; the
// leader transfers its leadership to the follower a plain resignation
// ranks last, which leads the next epoch when the call returns; the old
// leader follows it and appends commit there.
func TestNodeTransferLeadershipElectsTheTarget(t *testing.T) {
	c := newTestCluster(t, 3)
	c.appendCommitted("x")
	l := c.leader()
	st, err := l.Status()
	require.NoError(t, err)
	target := c.otherThan(l.local.ID)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	tr, err := l.TransferLeadership(ctx, target)
	require.NoError(t, err)
	require.Equal(t, target, tr.Leader)
	require.Greater(t, tr.Epoch, st.Epoch)
	require.Less(t, tr.Took, time.Second)
	ts, err := c.nodes[target].Status()
	require.NoError(t, err)
	require.Equal(t, "Leader", ts.Role)
	require.Equal(t, tr.Epoch, ts.Epoch)
	ls, err := l.Status()
	require.NoError(t, err)
	require.Equal(t, target, ls.Leader)
	c.appendCommitted("y")
}

// TestNodeTransferLeadershipFailsClearly: a target that is the leader
// itself or no voter is refused at once, a follower refuses with a
// *NotLeaderError, and a target that is down makes the transfer time out
// after the election timeout with the leader leading on (appends commit);
// appends meanwhile fail with a *NotLeaderError naming no leader.
func TestNodeTransferLeadershipFailsClearly(t *testing.T) {
	c := newTestCluster(t, 3)
	c.appendCommitted("x")
	l := c.leader()
	ctx := context.Background()
	_, err := l.TransferLeadership(ctx, l.local.ID)
	require.ErrorIs(t, err, ErrTransferTarget)
	_, err = l.TransferLeadership(ctx, 42)
	require.ErrorIs(t, err, ErrTransferTarget)
	f := c.otherThan(l.local.ID)
	_, err = c.nodes[f].TransferLeadership(ctx, l.local.ID)
	var nl *NotLeaderError
	require.ErrorAs(t, err, &nl)
	require.Equal(t, l.local.ID, nl.Leader)

	c.crash(f)
	c.appendCommitted("y") // f is behind now
	st, err := l.Status()
	require.NoError(t, err)
	start := time.Now()
	type result struct {
		tr  Transfer
		err error
	}
	done := make(chan result, 1)
	go func() {
		tr, err := l.TransferLeadership(ctx, f)
		done <- result{tr, err}
	}()
	// Meanwhile appends are refused, retriable, naming no leader.
	var refused *NotLeaderError
	for refused == nil && time.Since(start) < 90*time.Millisecond {
		actx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		_, err := l.Append(actx, []byte("during"))
		cancel()
		if errorAs(err, &refused) {
			break
		}
		refused = nil
	}
	require.NotNil(t, refused, "no append refused during the transfer")
	require.Equal(t, kraft.NoNode, refused.Leader)
	r := <-done
	tr, err := r.tr, r.err
	require.ErrorIs(t, err, ErrTransferTimeout)
	require.Equal(t, l.local.ID, tr.Leader)
	require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "the election timeout")
	now, err := l.Status()
	require.NoError(t, err)
	require.Equal(t, "Leader", now.Role)
	require.Equal(t, st.Epoch, now.Epoch)
	_, err = l.Append(ctx, []byte("z"))
	require.NoError(t, err)
}
