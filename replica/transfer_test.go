package replica

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// Leadership transfer to a chosen voter (transfer.go; docs/design.md
// D135, D136).

// caughtUp runs until every replica's log end is the leader's and its
// high watermark too.
func (n *readNet) caughtUp(l *readHost) {
	n.runUntil(time.Second, "every replica caught up", func() bool {
		end := l.r.State().LogEnd().Offset
		for _, h := range n.hosts {
			if h.r.State().LogEnd().Offset != end || h.hwm != end {
				return false
			}
		}
		return true
	})
}

// endQuorumSent returns the EndQuorumEpoch requests sent from the index
// from of n.sent on, with their addressees.
func (n *readNet) endQuorumSent(from int) []Message {
	var out []Message
	for _, m := range n.sent[from:] {
		if _, ok := m.Event.(kraft.ReceiveEndQuorumEpoch); ok && !m.Response {
			out = append(out, m)
		}
	}
	return out
}

// rankOf is the successor rank an EndQuorumEpoch request gives its
// addressee.
func rankOf(m Message) kraft.SuccessorRank {
	return m.Event.(kraft.ReceiveEndQuorumEpoch).SuccessorRank
}

// lastFollower is the follower of l with the highest id: with every log
// equal, the one Resign ranks last (ties by replica key).
func (n *readNet) lastFollower(l *readHost) *readHost {
	for i := len(n.hosts) - 1; i >= 0; i-- {
		if n.hosts[i] != l {
			return n.hosts[i]
		}
	}
	return nil
}

// TestTransferToACaughtUpVoterElectsIt: a transfer to a voter that has
// fetched the whole log resigns at once with the target ranked first in
// every EndQuorumEpoch (although a plain resignation ranks it last), the
// target campaigns at once and wins the next epoch, and the transfer ends
// without error naming it. Writes are accepted again at the new leader.
func TestTransferToACaughtUpVoterElectsIt(t *testing.T) {
	n := newReadNet(t, 3, 0)
	l := n.elect()
	n.write(l, "a")
	n.caughtUp(l)
	target := n.lastFollower(l)
	epoch := l.r.State().Epoch()
	sent := len(n.sent)
	start := n.now

	require.NoError(t, l.r.TransferLeadership(n.now, target.id, 0))
	n.carry(l)
	require.Equal(t, kraft.Resigned, l.r.State().Role(), "caught up: it resigns at once")
	ends := n.endQuorumSent(sent)
	require.Len(t, ends, 2)
	for _, m := range ends {
		want := kraft.SuccessorRank{Position: 1, Of: 2}
		if m.To == target.id {
			want.Position = 0 // the target is ranked first
		}
		require.Equal(t, want, rankOf(m), "to %d", m.To)
	}

	n.runUntil(time.Second, "the transfer's end", func() bool { return len(n.ended) > 0 })
	require.Equal(t, []TransferEnded{{Target: target.id, Leader: target.id, Epoch: epoch + 1}}, n.ended)
	require.Equal(t, kraft.Leader, target.r.State().Role())
	require.Equal(t, epoch+1, target.r.State().Epoch())
	require.Less(t, n.now-start, 20*time.Millisecond, "a few round trips, no backoff or timeout")
	require.False(t, l.r.Transferring())
	n.write(target, "b")
}

// TestTransferWaitsForALaggingTargetToCatchUp: the leader does not resign
// while the target lags its log end (its Fetch answers are held back);
// meanwhile it refuses proposals and voter changes with ErrTransferring,
// and sends no EndQuorumEpoch. Once the target has fetched everything the
// leader resigns to it, and the target, holding every record, is elected.
func TestTransferWaitsForALaggingTargetToCatchUp(t *testing.T) {
	n := newReadNet(t, 3, 0)
	l := n.elect()
	n.caughtUp(l)
	target := n.lastFollower(l)
	// The target's Fetch answers are held back: it stops at the log end it
	// has, while the other follower commits the new records.
	n.hold = func(m Message) bool {
		_, ok := m.Event.(kraft.ReceiveFetchResponse)
		return ok && m.To == target.id
	}
	n.write(l, "a")
	n.write(l, "b")
	end := l.r.State().LogEnd().Offset
	require.Less(t, target.r.State().LogEnd().Offset, end)
	sent := len(n.sent)

	require.NoError(t, l.r.TransferLeadership(n.now, target.id, time.Second))
	n.carry(l)
	n.runFor(30 * time.Millisecond)
	require.Equal(t, kraft.Leader, l.r.State().Role(), "it waits for the target")
	require.Empty(t, n.endQuorumSent(sent))
	require.True(t, l.r.Transferring())
	_, err := l.r.Propose(n.now, DataRecords([][]byte{[]byte("c")}))
	require.ErrorIs(t, err, ErrTransferring)
	require.ErrorIs(t, err, ErrNotLeader, "retriable as a NotLeader answer")
	_, err = l.r.AddVoter(n.now, kraft.ReplicaKey{ID: 7}, "x:1")
	require.ErrorIs(t, err, ErrTransferring)
	require.Equal(t, end, l.r.State().LogEnd().Offset, "nothing appended meanwhile")

	n.hold = nil
	n.release(nil)
	n.runUntil(time.Second, "the transfer's end", func() bool { return len(n.ended) > 0 })
	require.NoError(t, n.ended[0].Err)
	require.Equal(t, target.id, n.ended[0].Leader)
	require.Equal(t, kraft.Leader, target.r.State().Role())
	require.GreaterOrEqual(t, target.r.State().LogEnd().Offset, end, "the target holds every record of the old leader")
	ends := n.endQuorumSent(sent)
	require.Len(t, ends, 2)
	for _, m := range ends {
		require.Equal(t, m.To == target.id, rankOf(m).Position == 0, "to %d: %+v", m.To, rankOf(m))
	}
}

// TestTransferTimeoutResumesLeadership: a target that cannot catch up
// (every message to it is lost) makes the transfer end with
// ErrTransferTimeout at its deadline; the replica never resigned, leads
// the same epoch on, and takes proposals again.
func TestTransferTimeoutResumesLeadership(t *testing.T) {
	n := newReadNet(t, 3, 0)
	l := n.elect()
	n.caughtUp(l)
	target := n.lastFollower(l)
	for _, h := range n.hosts {
		n.cut[[2]kraft.NodeID{h.id, target.id}] = true
	}
	n.write(l, "a")
	epoch, sent := l.r.State().Epoch(), len(n.sent)
	start := n.now

	require.NoError(t, l.r.TransferLeadership(n.now, target.id, 50*time.Millisecond))
	n.carry(l)
	n.runUntil(time.Second, "the transfer's end", func() bool { return len(n.ended) > 0 })
	require.Equal(t, 50*time.Millisecond, n.now-start, "ended at its deadline")
	require.ErrorIs(t, n.ended[0].Err, ErrTransferTimeout)
	require.Equal(t, l.id, n.ended[0].Leader)
	require.Equal(t, kraft.Leader, l.r.State().Role())
	require.Equal(t, epoch, l.r.State().Epoch())
	require.Empty(t, n.endQuorumSent(sent))
	require.False(t, l.r.Transferring())
	n.write(l, "b")
}

// TestTransferRefusesTargetsThatAreNoOtherVoter: a transfer to the leader
// itself or to a replica outside the voter set fails at once and starts
// nothing; a transfer off the leader fails with ErrNotLeader, and a second
// one while the first runs with ErrTransferring.
func TestTransferRefusesTargetsThatAreNoOtherVoter(t *testing.T) {
	n := newReadNet(t, 3, 0)
	l := n.elect()
	n.caughtUp(l)
	require.ErrorIs(t, l.r.TransferLeadership(n.now, l.id, 0), ErrTransferTarget)
	require.ErrorIs(t, l.r.TransferLeadership(n.now, 9, 0), ErrTransferTarget)
	require.False(t, l.r.Transferring())
	n.carry(l)
	require.Empty(t, n.ended)
	require.Equal(t, kraft.Leader, l.r.State().Role())
	f := n.lastFollower(l)
	require.ErrorIs(t, f.r.TransferLeadership(n.now, l.id, 0), ErrNotLeader)

	for _, h := range n.hosts {
		n.cut[[2]kraft.NodeID{h.id, f.id}] = true
	}
	n.write(l, "a")
	require.NoError(t, l.r.TransferLeadership(n.now, f.id, 0))
	require.ErrorIs(t, l.r.TransferLeadership(n.now, f.id, 0), ErrTransferring)
	l.r.AbortTransfer(n.now)
	n.carry(l)
	require.Len(t, n.ended, 1)
	require.ErrorIs(t, n.ended[0].Err, ErrTransferAborted)
	require.False(t, l.r.Transferring())
	n.write(l, "b")
}
