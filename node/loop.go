package node

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
)

// run is the loop.
func (n *Node) run() {
	defer close(n.done)
	inbox := n.cfg.Transport.Inbox()
	var downs <-chan kraft.NodeID
	if pd, ok := n.cfg.Transport.(PeerDownReporter); ok {
		downs = pd.PeerDowns()
	}
	for {
		if n.Err() != nil {
			return
		}
		n.pollStart()
		select {
		case <-n.stop:
			return
		case m, ok := <-inbox:
			if !ok {
				n.fail(errors.New("node: transport closed"))
				return
			}
			n.pollEnd()
			n.noteFetch(m)
			n.r.Receive(n.clock(), m)
		case id := <-downs:
			n.pollEnd()
			n.r.PeerDown(n.clock(), id)
		case f := <-n.calls:
			n.pollEnd()
			f()
		case <-n.wake:
			n.pollEnd()
			n.runInternal()
		}
		n.carry()
	}
}

// internalCall runs f on the loop, after the input being handled. It
// never blocks (the timer, the syncer and the applier call it); after the
// loop stopped, f never runs.
func (n *Node) internalCall(f func()) {
	n.internalMu.Lock()
	n.internal = append(n.internal, f)
	n.internalMu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default: // a wake-up is pending: it runs f too
	}
}

// runInternal runs the functions internalCall queued.
func (n *Node) runInternal() {
	n.internalMu.Lock()
	fs := n.internal
	n.internal = nil
	n.internalMu.Unlock()
	for _, f := range fs {
		if n.Err() != nil {
			return
		}
		f()
		n.carry()
	}
}

// post runs f on the loop; it gives up when the node has stopped.
func (n *Node) post(f func()) bool {
	select {
	case n.calls <- f:
		return true
	case <-n.done:
		return false
	}
}

// call runs f on the loop and waits for it.
func (n *Node) call(f func()) error {
	ran := make(chan struct{})
	if !n.post(func() { f(); close(ran) }) {
		return n.stoppedErr()
	}
	select {
	case <-ran:
		return nil
	case <-n.done:
		return n.stoppedErr()
	}
}

func (n *Node) stoppedErr() error {
	if err := n.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrStopped, err)
	}
	return ErrStopped
}

func (n *Node) fail(err error) {
	n.mu.Lock()
	if n.err == nil {
		n.err = err
		n.logEvent(slog.LevelError, EventStopped, adviceStopped, fmt.Sprintf("stopping: %v", err), "err", err.Error())
	}
	n.mu.Unlock()
	n.stopOnce.Do(func() { close(n.stop) })
}

// carry carries out the replica's outputs in order, then arms the one
// timer at the replica's next deadline.
func (n *Node) carry() {
	for {
		n.carryOutputs()
		if !n.syncDue || n.Err() != nil {
			break
		}
		n.syncDue = false
		n.syncHere()
	}
	n.observeState(n.r.State())
	n.st = n.r.State()
	n.watchState()
	n.armTimer()
}

// carryOutputs carries out the outputs the replica has.
func (n *Node) carryOutputs() {
	for _, o := range n.r.Take() {
		if n.Err() != nil {
			return
		}
		n.observe(o)
		switch o := o.(type) {
		case replica.Send:
			n.cfg.Transport.Send(o.Message)
		case replica.Sync:
			if n.syncOnLoop {
				n.syncDue = true
				continue
			}
			n.sync()
		case replica.Commit:
			n.hwm = o.HighWatermark
			n.completeWaiters()
			n.commitMu.Lock()
			n.commitHWM = o.HighWatermark
			n.commitCond.Broadcast()
			n.commitMu.Unlock()
		case replica.Installed:
			// After the log reset: the applier reads the log from the
			// snapshot on.
			n.commitMu.Lock()
			n.restore = &o.Snapshot
			n.commitCond.Broadcast()
			n.commitMu.Unlock()
		case replica.RoleChange:
			n.onRoleChanged(o.RoleChanged)
		case replica.VoterChangeAnswer:
			n.voterChangeResponse(o.Response)
		case replica.ReadReady:
			n.readAnswered(o.Ref, o.Offset, nil)
		case replica.ReadFailed:
			n.readAnswered(o.Ref, 0, o.Err)
		case replica.TransferEnded:
			if n.xferCh != nil {
				n.xferCh <- o
				n.xferCh = nil
			}
		case replica.Peer:
			if pb, ok := n.cfg.Transport.(peerBook); ok {
				pb.SetPeer(o.ID, o.Endpoint)
			}
		case replica.Stopped:
			n.fail(fmt.Errorf("node: %w", o.Err))
			return
		}
	}
}

// armTimer arms the one timer at the replica's next deadline, unless it
// is armed there already. The timer is made once and re-armed with Reset,
// so arming allocates nothing.
func (n *Node) armTimer() {
	at, ok := n.r.NextDeadline()
	if !ok || (n.armed && at == n.timerAt) {
		return
	}
	d := at - n.clock()
	if d < 0 {
		d = 0
	}
	n.timerAt, n.armed = at, true
	if n.timer == nil {
		atomic.AddInt64(&n.timersLive, 1)
		atomic.StoreInt64(&n.timersMax, atomic.LoadInt64(&n.timersLive))
		tick := func() {
			// A firing of an earlier arming may come late: Tick with
			// nothing due does nothing, and the timer is armed again.
			n.armed = false
			n.r.Tick(n.clock())
		}
		n.timer = time.AfterFunc(d, func() { n.internalCall(tick) })
		return
	}
	n.timer.Reset(d)
}

// sync makes the log durable off the loop and reports it (group commit:
// one Sync for every write made while the previous one ran).
func (n *Node) sync() {
	go func() {
		err := n.syncLog()
		n.internalCall(func() {
			if err != nil {
				n.fail(fmt.Errorf("node: syncing the log: %w", err))
				return
			}
			n.r.Synced(n.clock())
		})
	}()
}

// syncHere syncs a log that syncs without I/O on the loop and reports it
// at once: the goroutine and the two wake-ups of sync would cost more than
// the Sync (D146).
func (n *Node) syncHere() {
	start := time.Now()
	err := n.cfg.Log.Sync()
	took := time.Since(start)
	n.met.fsync.observe(took)
	n.slowSync(took)
	if err != nil {
		n.fail(fmt.Errorf("node: syncing the log: %w", err))
		return
	}
	n.r.Synced(n.clock())
}

func (n *Node) onRoleChanged(a kraft.RoleChanged) {
	n.logEvent(slog.LevelInfo, EventRoleChanged, "", fmt.Sprintf("%v -> %v in epoch %d, leader %d (%s)", a.From, a.To, a.Epoch, a.LeaderID, a.Reason),
		"from", a.From.String(), "to", a.To.String(), "epoch", int32(a.Epoch), "leader", int32(a.LeaderID), "reason", a.Reason)
	if a.From == kraft.Leader {
		for _, w := range n.waiters {
			w.ch <- ErrLeadershipLost
		}
		n.waiters = nil
	}
	if a.LeaderID != kraft.NoNode && a.LeaderID != n.local.ID {
		for _, ch := range n.leaderCh {
			ch <- Handover{WasLeader: true, Successor: a.LeaderID, Epoch: a.Epoch}
		}
		n.leaderCh = nil
	}
}
