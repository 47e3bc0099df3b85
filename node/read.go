package node

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
)

// readAnswer is the replica's answer to a ReadIndex call: its point, or
// why it failed.
type readAnswer struct {
	offset int64
	err    error
}

// ReadIndex makes a read of this replica's application linearizable
// without writing anything (etcd's ReadIndex; Kafka's KafkaRaftClient has
// no linearizable read). At the leader, the read's point is the high
// watermark when the call arrives; the leader confirms that it still
// leads with a round of BeginQuorumEpoch requests to the voters sent
// after that (one round serves every read that arrived while the previous
// one was in flight), then ReadIndex waits until the application has
// applied every record below the point, and returns the point: every
// write committed anywhere before the call is below it, and applied here
// (docs/design.md D120-D122).
//
// A replica that does not lead fails with a *NotLeaderError naming the
// leader if known: ask it. It fails with ErrLeadershipLost when the
// replica stops leading first, with replica.ErrReadTimedOut (wrapped)
// when the round found no majority within the request timeout, with
// replica.ErrReadNotConfirmed when the voters refused it, with
// replica.ErrTooManyReads past replica.MaxPendingReads reads waiting, and
// with ctx's error: all of them may be retried.
func (n *Node) ReadIndex(ctx context.Context) (int64, error) {
	ch := make(chan readAnswer, 1)
	// Callers that arrive before the loop takes the batch share one read
	// of the replica's, taken after all of them arrived (D122).
	n.readMu.Lock()
	n.readBatch = append(n.readBatch, ch)
	first := len(n.readBatch) == 1
	n.readMu.Unlock()
	if first {
		// Let the callers that are ready to run join the batch before the
		// loop takes it: callers a read answered wake together, and each
		// batch costs a loop pass (D153).
		runtime.Gosched()
	}
	if first && !n.post(n.takeReads) {
		return 0, n.stoppedErr()
	}
	var a readAnswer
	select {
	case a = <-ch:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.done:
		return 0, n.stoppedErr()
	}
	if a.err != nil {
		return 0, a.err
	}
	// The records below the point are committed; wait for the applier.
	return a.offset, n.WaitApplied(ctx, a.offset-1)
}

// takeReads, on the loop, takes one read of the replica's for the
// ReadIndex callers waiting in the batch.
func (n *Node) takeReads() {
	n.readMu.Lock()
	batch := n.readBatch
	n.readBatch = nil
	n.readMu.Unlock()
	var refused error
	if n.st.Role() != kraft.Leader {
		refused = &NotLeaderError{Leader: leaderOrNone(n.st), Epoch: n.st.Epoch()}
	} else if ref, err := n.r.ReadIndex(n.clock()); err != nil {
		refused = fmt.Errorf("node: %w", err)
	} else {
		if n.reads == nil {
			n.reads = map[uint64][]chan<- readAnswer{}
		}
		n.reads[ref] = batch
		return
	}
	for _, ch := range batch {
		ch <- readAnswer{err: refused}
	}
}

// readAnswered hands the replica's answer to the ReadIndex call ref.
func (n *Node) readAnswered(ref uint64, offset int64, err error) {
	batch, ok := n.reads[ref]
	if !ok {
		return
	}
	delete(n.reads, ref)
	switch {
	case errors.Is(err, replica.ErrReadLeadershipLost):
		err = ErrLeadershipLost
	case err != nil:
		err = fmt.Errorf("node: %w", err)
	}
	for _, ch := range batch {
		ch <- readAnswer{offset: offset, err: err}
	}
}
