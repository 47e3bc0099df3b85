package kafkawire

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
)

// sends is the version table the transport negotiates its requests with:
// the configured one and the voter changes, which a replica sends
// (auto-join, an endpoint update) whether or not it serves them
// (docs/design.md D170).
func (t *Transport) sends() Versions {
	vs := Versions{}
	for k, v := range t.cfg.Versions {
		vs[k] = v
	}
	for _, k := range []int16{AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter} {
		if _, ok := vs[k]; !ok {
			vs[k] = Supported[k]
		}
	}
	return vs
}

// callBit marks the Corr of the transport's own requests (SendVoterRequest)
// so it never meets a runtime's Corr, which counts up from 1.
const callBit = uint64(1) << 63

// SendVoterRequest sends a voter-change request event (kraft's
// ReceiveAddVoter, ReceiveRemoveVoter or ReceiveUpdateVoter) to replica to
// on Kafka's wire, with the transport's own endpoint as the voter's
// listener, and waits for the answer: Kafka's code, message and, for
// UpdateRaftVoter, CurrentLeader. A leader that does not list the API in
// its ApiVersions answers UNSUPPORTED_VERSION (as Kafka's NetworkClient
// does); no answer by ctx's end is ctx's error.
func (t *Transport) SendVoterRequest(ctx context.Context, to kraft.NodeID, ev kraft.Event) (VoterAnswer, error) {
	corr := callBit | t.callSeq.Add(1)
	ch := make(chan VoterAnswer, 1)
	t.mu.Lock()
	t.calls[corr] = ch
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.calls, corr)
		t.mu.Unlock()
	}()
	t.Send(node.Message{From: t.cfg.ID, To: to, Corr: corr, Event: ev})
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return VoterAnswer{}, ctx.Err()
	case <-t.l.Done():
		return VoterAnswer{}, net.ErrClosed
	}
}

// voterAnswer hands a voter-change answer to the SendVoterRequest waiting
// for it. Any other is the answer to an auto-joining observer's request,
// which its kraft state does not take (kraft.Deliver; docs/design.md
// D54): it is logged, and the state asks again on its voter-change timer.
func (t *Transport) voterAnswer(from kraft.NodeID, corr uint64, a VoterAnswer) {
	t.mu.Lock()
	ch := t.calls[corr]
	delete(t.calls, corr)
	t.mu.Unlock()
	if ch != nil {
		ch <- a
		return
	}
	t.logf("%s answer from %d to this replica's request: %v %q", apiName(a.API), from, a.Code, a.Message)
}

func apiName(api int16) string {
	switch api {
	case AddRaftVoter:
		return "AddRaftVoter"
	case RemoveRaftVoter:
		return "RemoveRaftVoter"
	case UpdateRaftVoter:
		return "UpdateRaftVoter"
	}
	return strconv.Itoa(int(api))
}

// leaderEpoch is a leader in an epoch.
type leaderEpoch struct {
	leader kraft.NodeID
	epoch  kraft.Epoch
}

// UpdateEndpoints makes the transport keep this replica's endpoint in the
// voter set up to date, as Kafka's followers do
// (KafkaRaftClient.maybeSendUpdateVoterRequest, on FollowerState's
// update-voter timer): once every period (the fetch timeout), a voter that
// follows a leader at kraft.version 1, whose entry in the voter set nd
// holds (its id and directory id) has another endpoint than the
// transport's own, sends UpdateRaftVoter v0 to the leader. An answer NONE,
// or UNSUPPORTED_VERSION, ends it for that leader and epoch (Kafka's
// hasUpdatedLeader); any other (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH
// or UNKNOWN_LEADER_EPOCH while the leader moves, VOTER_NOT_FOUND) or
// none is logged and the next period asks again, the leader nd then
// follows (docs/design.md D171); an answer that names another leader
// first sends the request there once (namedLeader, D311). It stops with
// the transport.
func (t *Transport) UpdateEndpoints(nd *node.Node, clusterID uuid.NullUUID, period time.Duration) {
	t.l.Go(func() {
		var done leaderEpoch
		for t.l.Sleep(period) {
			ctx, cancel := context.WithTimeout(t.l.Context(), period)
			t.updateEndpoint(ctx, nd, clusterID, &done)
			cancel()
		}
	})
}

// updateEndpoint is one period of UpdateEndpoints: it reports whether it
// sent UpdateRaftVoter, and its answer.
func (t *Transport) updateEndpoint(ctx context.Context, nd *node.Node, clusterID uuid.NullUUID, done *leaderEpoch) (bool, VoterAnswer) {
	st, err := nd.Status()
	if err != nil || st.Role != kraft.Follower.String() || st.KRaftVersion < kraft.KRaftVersionReconfig ||
		st.Leader < 0 || st.Leader == t.cfg.ID {
		return false, VoterAnswer{}
	}
	at := leaderEpoch{st.Leader, st.Epoch}
	if *done == at {
		return false, VoterAnswer{}
	}
	own := net.JoinHostPort(t.self.Host, strconv.Itoa(int(t.self.Port)))
	key := kraft.ReplicaKey{ID: t.cfg.ID, DirectoryID: t.cfg.DirectoryID}
	var entry *node.VoterInfo
	for i, v := range st.VoterSet {
		if v.ID == key.ID && v.DirectoryID == key.DirectoryID {
			entry = &st.VoterSet[i]
		}
	}
	if entry == nil || entry.Endpoint == own {
		return false, VoterAnswer{}
	}
	ev := kraft.ReceiveUpdateVoter{
		From: t.cfg.ID, ClusterID: clusterID, CurrentLeaderEpoch: st.Epoch,
		Voter: key, Listener: true, KRaftVersions: *t.cfg.KRaftVersions,
	}
	a, err := t.SendVoterRequest(ctx, st.Leader, ev)
	if err != nil {
		t.logf("UpdateRaftVoter of endpoint %s (the voter set has %s) to leader %d in epoch %d: no answer: %v", own, entry.Endpoint, st.Leader, st.Epoch, err)
		return true, VoterAnswer{API: UpdateRaftVoter, Code: kraft.ErrRequestTimedOut, LeaderID: kraft.NoNode, LeaderEpoch: -1}
	}
	if next, ok := t.namedLeader(a, at); ok {
		// The leader moved and the answer names the new one (D311).
		t.logf("UpdateRaftVoter of endpoint %s to leader %d in epoch %d: %v, current leader %d in epoch %d: asking it",
			own, st.Leader, st.Epoch, a.Code, next.leader, next.epoch)
		ev.CurrentLeaderEpoch = next.epoch
		if again, err := t.SendVoterRequest(ctx, next.leader, ev); err == nil {
			a, at = again, next
		} else {
			t.logf("UpdateRaftVoter of endpoint %s to leader %d in epoch %d: no answer: %v", own, next.leader, next.epoch, err)
		}
	}
	switch a.Code {
	case kraft.ErrNone, kraft.ErrUnsupportedVersion:
		*done = at
	}
	t.logf("UpdateRaftVoter of endpoint %s (the voter set has %s) to leader %d in epoch %d: %v (current leader %d in epoch %d)",
		own, entry.Endpoint, at.leader, at.epoch, a.Code, a.LeaderID, a.LeaderEpoch)
	return true, a
}

// namedLeader is the leader an UpdateRaftVoter answer from the leader at
// names instead, to send the request to once more (docs/design.md D311):
// an answer NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH whose
// CurrentLeader is another replica, in an epoch no older than at's, that
// the transport can reach (its endpoint in the answer, learned as
// node_endpoints are, or an address it has). Kafka's follower moves to
// that leader on such an answer (KafkaRaftClient.maybeHandleCommonResponse)
// and asks it on its next update-voter timer; the transport cannot move
// the node's kraft state, so it asks the named leader at once, and the
// node finds it through Fetch and BeginQuorumEpoch as before.
func (t *Transport) namedLeader(a VoterAnswer, at leaderEpoch) (leaderEpoch, bool) {
	if a.Code != kraft.ErrNotLeaderOrFollower && a.Code != kraft.ErrFencedLeaderEpoch {
		return leaderEpoch{}, false
	}
	if a.LeaderID < 0 || a.LeaderID == at.leader || a.LeaderID == t.cfg.ID || a.LeaderEpoch < at.epoch {
		return leaderEpoch{}, false
	}
	if a.Leader != nil {
		t.learn([]Endpoint{*a.Leader})
	}
	if _, ok := t.l.PeerAddr(a.LeaderID); !ok {
		return leaderEpoch{}, false
	}
	return leaderEpoch{a.LeaderID, a.LeaderEpoch}, true
}
