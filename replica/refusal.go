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

// requestOf is the kind (Kafka's API name) and the cluster id of a
// request event; ok is false for any other event.
func requestOf(e kraft.Event) (kind string, cluster uuid.NullUUID, ok bool) {
	switch e := e.(type) {
	case kraft.ReceiveVoteRequest:
		return "Vote", e.ClusterID, true
	case kraft.ReceiveBeginQuorumEpoch:
		return "BeginQuorumEpoch", e.ClusterID, true
	case kraft.ReceiveEndQuorumEpoch:
		return "EndQuorumEpoch", e.ClusterID, true
	case kraft.ReceiveFetch:
		return "Fetch", e.ClusterID, true
	case kraft.ReceiveFetchSnapshot:
		return "FetchSnapshot", e.ClusterID, true
	case kraft.ReceiveAddVoter:
		return "AddRaftVoter", e.ClusterID, true
	case kraft.ReceiveRemoveVoter:
		return "RemoveRaftVoter", e.ClusterID, true
	case kraft.ReceiveUpdateVoter:
		return "UpdateRaftVoter", e.ClusterID, true
	}
	return "", uuid.NullUUID{}, false
}

// responseOf is the kind and the error code of a response event; ok is
// false for any other event.
func responseOf(e kraft.Event) (kind string, code kraft.ErrorCode, ok bool) {
	switch e := e.(type) {
	case kraft.ReceiveVoteResponse:
		return "Vote", e.Error, true
	case kraft.ReceiveQuorumResponse:
		return "BeginQuorumEpoch or EndQuorumEpoch", e.Error, true
	case kraft.ReceiveFetchResponse:
		return "Fetch", e.Error, true
	case kraft.ReceiveFetchSnapshotResponse:
		return "FetchSnapshot", e.Error, true
	}
	return "", kraft.ErrNone, false
}

// refusedForCluster: a response that refuses this replica's request for
// its cluster id.
func refusedForCluster(e kraft.Event) bool {
	_, code, ok := responseOf(e)
	return ok && code == kraft.ErrInconsistentClusterID
}

// note notes what a message from the network says before it is taken:
// a refusal either way, and the high watermark of the current leader's
// Fetch answers.
func (r *Replica) note(m Message) {
	ours := r.cfg.Kraft.ClusterID
	if !m.Response {
		if kind, theirs, ok := requestOf(m.Event); ok && theirs.Valid && ours.Valid && theirs.UUID != ours.UUID {
			r.emit(ClusterIDRefused{Peer: m.From, Request: kind, Inbound: true, Theirs: theirs})
		}
		return
	}
	if kind, code, ok := responseOf(m.Event); ok && code == kraft.ErrInconsistentClusterID {
		r.emit(ClusterIDRefused{Peer: m.From, Request: kind})
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
