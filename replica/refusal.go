package replica

import (
	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
)

// Cluster id refusals and the leader's high watermark, noted as messages
// arrive, so that a host can count and log them without looking inside a
// message.

// ClusterIDRefused reports a request refused for its cluster id
// (INCONSISTENT_CLUSTER_ID, docs/design.md D67). Inbound: a request of
// kind Request from Peer, which sent cluster id Theirs, is refused here;
// otherwise Peer refused this replica's request of kind Request.
type ClusterIDRefused struct {
	Peer    kraft.NodeID
	Request string
	Inbound bool
	Theirs  uuid.NullUUID
}

func (ClusterIDRefused) isOutput() {}

// refusedForCluster: a response that refuses this replica's request for
// its cluster id.
func refusedForCluster(e kraft.Event) bool {
	h, ok := kraft.MessageHeader(e)
	return ok && h.Response && h.Error == kraft.ErrInconsistentClusterID
}

// note notes what a message from the network says before it is taken:
// a refusal either way, and the high watermark of the current leader's
// Fetch answers.
func (r *Replica) note(m Message) {
	ours := r.cfg.Kraft.ClusterID
	// The API, the cluster id and the error are every message's header,
	// from the catalogue (D280).
	h, ok := kraft.MessageHeader(m.Event)
	if !m.Response {
		if theirs := h.ClusterID; ok && !h.Response && theirs.Valid && ours.Valid && theirs.UUID != ours.UUID {
			r.emit(ClusterIDRefused{Peer: m.From, Request: h.API, Inbound: true, Theirs: theirs})
		}
		return
	}
	if ok && h.Response && h.Error == kraft.ErrInconsistentClusterID {
		r.emit(ClusterIDRefused{Peer: m.From, Request: h.API})
	}
	if f, ok := m.Event.(kraft.ReceiveFetchResponse); ok && f.Error == kraft.ErrNone && f.HighWatermark >= 0 &&
		m.From == r.st.Leader() && f.LeaderEpoch == r.st.Epoch() && f.HighWatermark > r.leaderHWM {
		r.leaderHWM = f.HighWatermark
	}
}

// LeaderHighWatermark is the highest high watermark the current leader
// sent in a Fetch answer since the latest role change, -1 if none (a
// follower's own is capped at its log end, so it cannot show its lag).
func (r *Replica) LeaderHighWatermark() int64 { return r.leaderHWM }
