package replica

import (
	"errors"
	"fmt"
	"time"

	"github.com/kraftquorum/kraft"
)

// Leadership transfer to a chosen voter (docs/design.md D135, D136): the
// leader stops taking proposals and voter changes, waits until the target
// has fetched its whole log, then resigns with the target ranked first in
// EndQuorumEpoch's preferred successors, so that the target campaigns at
// once. Only EndQuorumEpoch goes on the wire, as in Kafka's resign.

var (
	// ErrTransferring answers Propose and the voter changes while a
	// leadership transfer is in progress: retriable, the leadership is
	// about to move (errors.Is(err, ErrNotLeader) holds).
	ErrTransferring = fmt.Errorf("%w: a leadership transfer is in progress", ErrNotLeader)
	// ErrTransferTarget: the target is not another voter of the quorum.
	ErrTransferTarget = errors.New("replica: the transfer target is not another voter")
	// ErrTransferTimeout: the target did not catch up (the replica still
	// leads), or no leader was elected, within the transfer's time.
	ErrTransferTimeout = errors.New("replica: leadership transfer timed out")
	// ErrTransferOvertaken: another replica than the target took the
	// leadership, or the replica lost it before the target caught up.
	ErrTransferOvertaken = errors.New("replica: another replica took the leadership")
	// ErrTransferAborted: the host gave the transfer up before it
	// resigned (AbortTransfer); the replica leads on.
	ErrTransferAborted = errors.New("replica: leadership transfer aborted")
)

// TransferEnded reports the end of a leadership transfer: Err is nil when
// Target leads in Epoch; otherwise Leader is the leader known then
// (kraft.NoNode if none; the local id when it leads on).
type TransferEnded struct {
	Target kraft.NodeID
	Leader kraft.NodeID
	Epoch  kraft.Epoch
	Err    error
}

func (TransferEnded) isOutput() {}

// transferState is the transfer in progress, if any.
type transferState struct {
	active   bool
	resigned bool // the Resign went out: waiting for the election
	target   kraft.ReplicaKey
	epoch    kraft.Epoch   // the epoch the replica led in when it began
	deadline time.Duration // of the catch-up, then of the election
}

// TransferLeadership starts, at time now, a transfer of this replica's
// leadership to the voter target. Until the target has fetched up to the
// leader's log end, Propose and the voter changes fail with
// ErrTransferring; then the replica resigns with the target ranked first
// (kraft.Resign's Successor). timeout bounds the catch-up (0: the election
// timeout); when it passes first the replica leads on and the transfer
// ends with ErrTransferTimeout. After the resignation the election has an
// election timeout. The end comes as a TransferEnded output.
//
// It fails at once with ErrNotLeader off the leader, ErrTransferring while
// another transfer runs, and ErrTransferTarget when target is this
// replica or no voter.
func (r *Replica) TransferLeadership(now time.Duration, target kraft.NodeID, timeout time.Duration) error {
	if !r.input(now) {
		return r.err
	}
	if r.st.Role() != kraft.Leader {
		return ErrNotLeader
	}
	if r.xfer.active {
		return ErrTransferring
	}
	if target == r.local.ID {
		return fmt.Errorf("%w: %d is this replica", ErrTransferTarget, target)
	}
	i := kraft.VoterByID(r.st.Voters(), target)
	if i < 0 {
		return fmt.Errorf("%w: %d is not a voter", ErrTransferTarget, target)
	}
	if timeout <= 0 {
		timeout = r.electionTimeout()
	}
	r.xfer = transferState{active: true, target: r.st.Voters()[i], epoch: r.st.Epoch(), deadline: r.now + timeout}
	r.cfg.Logf("replica %d: transferring the leadership of epoch %d to %d", r.local.ID, r.xfer.epoch, target)
	r.settle()
	return nil
}

// AbortTransfer gives up, at time now, the transfer in progress if the
// replica has not resigned yet: it leads on, and the transfer ends with
// ErrTransferAborted. After the resignation it does nothing.
func (r *Replica) AbortTransfer(now time.Duration) {
	if !r.input(now) || !r.xfer.active || r.xfer.resigned {
		return
	}
	r.endTransfer(ErrTransferAborted)
	r.settle()
}

// Transferring reports whether a leadership transfer is in progress.
func (r *Replica) Transferring() bool { return r.xfer.active }

func (r *Replica) electionTimeout() time.Duration {
	if t := r.cfg.Kraft.ElectionTimeout; t > 0 {
		return t
	}
	return kraft.DefaultElectionTimeout
}

// checkTransfer moves the transfer in progress on after an input: it
// resigns once the target has caught up, and ends the transfer when a
// leader of a later epoch is known, or the leadership was lost first.
func (r *Replica) checkTransfer() {
	x := &r.xfer
	if !x.active || r.err != nil {
		return
	}
	if !x.resigned {
		if r.st.Role() != kraft.Leader || r.st.Epoch() != x.epoch {
			r.endTransfer(ErrTransferOvertaken)
			return
		}
		i := kraft.VoterByID(r.st.Voters(), x.target.ID)
		if i < 0 || r.st.Voters()[i] != x.target {
			r.endTransfer(fmt.Errorf("%w: %d left the voter set", ErrTransferTarget, x.target.ID))
			return
		}
		if ends := r.st.VoterEndOffsets(); ends[i] < r.st.LogEnd().Offset {
			return // the target's next Fetch tells
		}
		x.resigned = true
		x.deadline = r.now + r.electionTimeout()
		target := x.target
		r.step(kraft.Resign{Successor: &target})
		r.drain()
		return
	}
	if r.st.Epoch() == x.epoch {
		return // Resigned, or a Follower of it: the election is on
	}
	switch l := r.st.Leader(); {
	case l == x.target.ID && r.st.Role() == kraft.Follower:
		r.endTransfer(nil)
	case l != kraft.NoNode && (r.st.Role() == kraft.Follower || r.st.Role() == kraft.Leader):
		r.endTransfer(ErrTransferOvertaken)
	}
}

// transferExpired runs the transfer's deadline.
func (r *Replica) transferExpired() {
	if !r.xfer.active {
		return
	}
	r.endTransfer(ErrTransferTimeout)
}

// endTransfer ends the transfer in progress with err and reports it.
func (r *Replica) endTransfer(err error) {
	x := r.xfer
	r.xfer = transferState{}
	leader := r.st.Leader()
	if r.st.Role() == kraft.Resigned {
		leader = kraft.NoNode
	}
	if err != nil {
		r.cfg.Logf("replica %d: the leadership transfer to %d ended: %v", r.local.ID, x.target.ID, err)
	}
	r.emit(TransferEnded{Target: x.target.ID, Leader: leader, Epoch: r.st.Epoch(), Err: err})
}
