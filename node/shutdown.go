package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kraftquorum/kraft"
)

// Resign makes the leader give up leadership gracefully (kraft.Resign);
// it fails with a *NotLeaderError on any other role.
func (n *Node) Resign() error {
	var res error
	if err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			res = &NotLeaderError{Leader: leaderOrNone(n.st), Epoch: n.st.Epoch()}
			return
		}
		n.r.Resign(n.clock())
	}); err != nil {
		return err
	}
	return res
}

// Handover says how Shutdown left leadership.
type Handover struct {
	// WasLeader: the node led when Shutdown was called.
	WasLeader bool
	// Successor is the replica that led after it, in Epoch; kraft.NoNode
	// when Shutdown closed the node before another replica led.
	Successor kraft.NodeID
	Epoch     kraft.Epoch
}

// HandedOver reports whether another replica took over the leadership
// the node had.
func (h Handover) HandedOver() bool { return h.WasLeader && h.Successor != kraft.NoNode }

// Shutdown stops the node gracefully and says how it left leadership. A
// leader first hands leadership over (docs/design.md D27, D64): it
// resigns, stops taking election and fetch timeouts, and waits until
// another replica leads, ctx is done, or no handover can happen: it is the
// only voter, or no successor appeared within the handover bound (twice
// the fetch timeout plus the election timeout: a majority of the voters is
// then likely gone). Then it closes the node; the error is Close's.
func (n *Node) Shutdown(ctx context.Context) (Handover, error) {
	ch := make(chan Handover, 1)
	h := Handover{Successor: kraft.NoNode}
	alone := false
	if err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			return
		}
		h.WasLeader, h.Epoch = true, n.st.Epoch()
		alone = true
		for _, v := range n.st.Voters() {
			if v.ID != n.local.ID {
				alone = false
			}
		}
		if alone {
			return // nobody to hand over to
		}
		n.r.HoldTimeouts()
		n.leaderCh = append(n.leaderCh, ch)
		n.r.Resign(n.clock())
	}); err != nil {
		return h, n.Close()
	}
	if h.WasLeader && !alone {
		bound := time.NewTimer(n.handoverBound())
		defer bound.Stop()
		select {
		case got := <-ch:
			h = got
		case <-ctx.Done():
		case <-bound.C:
			n.logEvent(slog.LevelWarn, EventNoSuccessor, adviceNoSuccessor,
				fmt.Sprintf("no successor within %v of resigning: closing without a handover", n.handoverBound()))
		case <-n.done:
		}
	}
	return h, n.Close()
}

// handoverBound is how long Shutdown waits for a successor at most: twice
// the fetch timeout plus the election timeout. A follower that got the
// EndQuorumEpoch campaigns within an election timeout, or, had it missed
// it, after its fetch timeout; an election takes round trips on top.
func (n *Node) handoverBound() time.Duration {
	ft, et := n.cfg.Kraft.FetchTimeout, n.cfg.Kraft.ElectionTimeout
	if ft == 0 {
		ft = kraft.DefaultFetchTimeout
	}
	if et == 0 {
		et = kraft.DefaultElectionTimeout
	}
	return 2*ft + et
}
