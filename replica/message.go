package replica

import (
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Message is one RPC between two replicas: a request or its response,
// carrying the event the receiver steps (kraft.Deliver made it from the
// sender's action). A Fetch response also carries the records the leader
// attached, and a FetchSnapshot response the snapshot bytes; a Fetch
// request carries the follower's high watermark, so the leader can park it
// until it has news (long poll).
type Message struct {
	From, To kraft.NodeID
	// Corr is the request's correlation id; a response carries its
	// request's. The sender picks it; it is unique per sender.
	Corr     uint64
	Response bool
	Event    kraft.Event
	// Records are a Fetch response's records, from the request's fetch
	// offset on.
	Records []storage.Entry
	// HighWatermark is a Fetch request's sender's high watermark.
	HighWatermark int64
	// Chunk is a FetchSnapshot response's bytes of the snapshot, from the
	// response's Position on (only with a kraft.ReceiveFetchSnapshotResponse).
	Chunk []byte
	// APIVersions marks an ApiVersions request (with no Event); its
	// response carries a kraft.ReceiveAPIVersionsResponse.
	APIVersions bool
	// Endpoint is the endpoint of the voter an AddRaftVoter request
	// (kraft.ReceiveAddVoter) adds: the requester's own, for auto-join.
	Endpoint string
}
