package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
)

// Leadership transfer to a chosen voter (docs/design.md D135, D136).

var (
	// ErrTransferTarget: the transfer's target is this replica or no
	// voter.
	ErrTransferTarget = replica.ErrTransferTarget
	// ErrTransferTimeout: the target did not catch up in time (this
	// replica leads on), or no leader was elected in time.
	ErrTransferTimeout = replica.ErrTransferTimeout
	// ErrTransferOvertaken: another replica than the target leads.
	ErrTransferOvertaken = replica.ErrTransferOvertaken
)

// Transfer says how TransferLeadership ended: the leader and epoch known
// then, and the time from the call.
type Transfer struct {
	Leader kraft.NodeID
	Epoch  kraft.Epoch
	Took   time.Duration
}

// TransferLeadership hands this leader's leadership to the voter target
// (etcd's TransferLeader, hashicorp raft's LeadershipTransferToServer). The
// leader stops taking appends and voter changes (they fail with a
// *NotLeaderError naming no leader: retry), waits until target has
// fetched its whole log, then resigns with target ranked first in
// EndQuorumEpoch's preferred successors, so that it campaigns at once. It
// returns once target leads. The catch-up has the election timeout, or
// until ctx's deadline if sooner; when it runs out the leader leads on
// and the call fails with ErrTransferTimeout. It fails with a
// *NotLeaderError off the leader, ErrTransferTarget when target is this
// replica or no voter, ErrTransferOvertaken when another replica took
// over, and ctx's error (a transfer that has not resigned yet is then
// given up).
func (n *Node) TransferLeadership(ctx context.Context, target kraft.NodeID) (Transfer, error) {
	start := time.Now()
	ch := make(chan replica.TransferEnded, 1)
	var refused error
	if err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			refused = &NotLeaderError{Leader: leaderOrNone(n.st), Epoch: n.st.Epoch()}
			return
		}
		if n.xferCh != nil {
			refused = errors.New("node: a leadership transfer is in progress")
			return
		}
		timeout := time.Duration(0) // the election timeout
		if d, ok := ctx.Deadline(); ok {
			timeout = time.Until(d)
			if et := n.electionTimeout(); timeout > et {
				timeout = et
			}
			if timeout <= 0 {
				refused = context.DeadlineExceeded
				return
			}
		}
		if err := n.r.TransferLeadership(n.clock(), target, timeout); err != nil {
			refused = fmt.Errorf("node: transfer to %d: %w", target, err)
			return
		}
		n.xferCh = ch
	}); err != nil {
		return Transfer{}, err
	}
	if refused != nil {
		return Transfer{Leader: n.local.ID}, refused
	}
	select {
	case e := <-ch:
		t := Transfer{Leader: e.Leader, Epoch: e.Epoch, Took: time.Since(start)}
		if e.Err != nil {
			return t, fmt.Errorf("node: transfer to %d: %w", target, e.Err)
		}
		return t, nil
	case <-ctx.Done():
		_ = n.call(func() {
			if n.xferCh == ch {
				n.xferCh = nil
			}
			n.r.AbortTransfer(n.clock())
		})
		return Transfer{Took: time.Since(start)}, ctx.Err()
	case <-n.done:
		return Transfer{Took: time.Since(start)}, n.stoppedErr()
	}
}

func (n *Node) electionTimeout() time.Duration {
	if et := n.cfg.Kraft.ElectionTimeout; et > 0 {
		return et
	}
	return kraft.DefaultElectionTimeout
}

// transferRefusal maps a refusal of the replica layer during a transfer
// (replica.ErrTransferring) to a *NotLeaderError naming no leader: the
// leadership is about to move, so the caller retries.
func transferRefusal(st kraft.State, err error) error {
	if errors.Is(err, replica.ErrTransferring) {
		return &NotLeaderError{Leader: kraft.NoNode, Epoch: st.Epoch()}
	}
	return err
}
