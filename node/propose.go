package node

import (
	"context"
	"errors"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
)

type appliedWaiter struct {
	offset int64
	ch     chan struct{}
}

type waiter struct {
	end   int64 // the offset after the last appended record
	epoch kraft.Epoch
	ch    chan error
}

// completeWaiters answers the appends the high watermark now covers.
func (n *Node) completeWaiters() {
	kept := n.waiters[:0]
	for _, w := range n.waiters {
		if w.end > n.hwm {
			kept = append(kept, w)
			continue
		}
		if e, ok := n.cfg.Log.EpochFor(w.end - 1); ok && e == w.epoch {
			w.ch <- nil
		} else {
			w.ch <- ErrLeadershipLost
		}
	}
	n.waiters = kept
}

// Append appends records at the leader and returns the offset of the last
// one once it is committed (the high watermark passed it). It fails with a
// *NotLeaderError when the replica is not the leader, with
// ErrLeadershipLost when leadership is lost first, and with ctx's error.
// A committed record may not be applied yet on this replica when Append
// returns: WaitApplied waits for that.
func (n *Node) Append(ctx context.Context, records ...[]byte) (int64, error) {
	if len(records) == 0 {
		return 0, errors.New("node: no records")
	}
	// The one copy of the caller's records: with their type bytes, in one
	// block (the log may keep it, OwningAppender).
	return n.propose(ctx, replica.DataRecords(records))
}

// propose appends log payloads at the leader and waits for their commit.
func (n *Node) propose(ctx context.Context, data [][]byte) (int64, error) {
	ch := make(chan error, 1)
	var last int64
	var notLeader error
	err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			notLeader = &NotLeaderError{Leader: leaderOrNone(n.st), Epoch: n.st.Epoch()}
			return
		}
		if len(n.waiters) >= maxPendingAppends {
			n.met.appendsRefused++
			notLeader = ErrTooManyAppends
			return
		}
		end, err := n.r.Propose(n.clock(), data)
		if err != nil {
			notLeader = transferRefusal(n.st, err)
			return
		}
		last = end.Offset - 1
		n.waiters = append(n.waiters, &waiter{end: end.Offset, epoch: end.Epoch, ch: ch})
		n.carry()
	})
	if err != nil {
		return 0, err
	}
	if notLeader != nil {
		return 0, notLeader
	}
	select {
	case err := <-ch:
		return last, err
	case <-ctx.Done():
		return last, ctx.Err()
	case <-n.done:
		return last, n.stoppedErr()
	}
}

// WaitApplied returns once every committed record up to offset has been
// handed to OnCommit on this replica (or is covered by a snapshot given
// to Restore): after Append returned offset, the application of this
// replica holds the record. It fails with ctx's error, or ErrStopped.
func (n *Node) WaitApplied(ctx context.Context, offset int64) error {
	n.appliedMu.Lock()
	if n.applied > offset {
		n.appliedMu.Unlock()
		return nil
	}
	w := appliedWaiter{offset: offset, ch: make(chan struct{})}
	n.appliedWait = append(n.appliedWait, w)
	n.appliedMu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stoppedErr()
	}
}

// appliedTo records that the records below next are applied, and wakes
// the WaitApplied callers it satisfies.
func (n *Node) appliedTo(next int64) {
	n.appliedMu.Lock()
	defer n.appliedMu.Unlock()
	if next <= n.applied {
		return
	}
	n.applied = next
	kept := n.appliedWait[:0]
	for _, w := range n.appliedWait {
		if w.offset < next {
			close(w.ch)
			continue
		}
		kept = append(kept, w)
	}
	n.appliedWait = kept
}
