package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
)

// Follower reads (docs/design.md D152). KRaft has no request for a read
// point, so kraftd forwards one over HTTP, as etcd's followers forward
// ReadIndex to their leader: a follower asked for a linearizable GET
// /kv/{key} asks the leader's GET /readindex (node.Node.ReadIndex at the
// leader: the point is taken and confirmed after the follower's request
// arrived, hence after the client's read began), waits until its own
// application has applied every record below the point, and answers from
// its own map. Records below the point are committed, and a replica
// applies committed records only, the same ones at every replica, so the
// follower's map then holds every write acknowledged anywhere before the
// read began. A follower that cannot get a point (no -peer-http address
// for the leader, the leader unreachable or no longer leading) answers
// 421 naming the leader, as before.
//
//	GET /readindex  200 {"offset", "epoch"} at the leader; 421 elsewhere;
//	                503 when the leader could not confirm its leadership

// readIndexBody is GET /readindex's answer.
type readIndexBody struct {
	Offset int64       `json:"offset"`
	Epoch  kraft.Epoch `json:"epoch"`
}

// readPointTimeout bounds a follower's request for a read point.
const readPointTimeout = 2 * time.Second

// handlerOption configures newHandler.
type handlerOption func(*handlerOptions)

type handlerOptions struct {
	// peerHTTP is the HTTP address (host:port) of another replica's API,
	// for follower reads; nil: followers answer 421.
	peerHTTP func(kraft.NodeID) (string, bool)
	client   *http.Client
}

// withPeerHTTP makes the followers' linearizable reads ask the leader's
// GET /readindex at the address peers gives for it.
func withPeerHTTP(peers func(kraft.NodeID) (string, bool)) handlerOption {
	return func(o *handlerOptions) { o.peerHTTP = peers }
}

func staticPeers(m map[kraft.NodeID]string) func(kraft.NodeID) (string, bool) {
	return func(id kraft.NodeID) (string, bool) {
		a, ok := m[id]
		return a, ok
	}
}

// readIndexHandler serves GET /readindex.
func readIndexHandler(r replica) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodGet) {
			return
		}
		st, err := r.Status()
		if err != nil {
			writeError(w, err)
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), readPointTimeout)
		defer cancel()
		offset, err := r.ReadIndex(ctx)
		if err != nil {
			var nl *node.NotLeaderError
			if errors.As(err, &nl) {
				writeError(w, err)
				return
			}
			writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error() + " (try again)"})
			return
		}
		writeJSON(w, http.StatusOK, readIndexBody{Offset: offset, Epoch: st.Epoch})
	}
}

// errNoPoint says a follower got no read point from the leader: it
// answers 421 with the leader's id.
var errNoPoint = errors.New("no read point from the leader")

// followerRead gets a read point from the leader nl names and waits until
// this replica has applied every record below it. It fails with
// errNoPoint (wrapped) when the leader is unknown, has no address, cannot
// be reached or does not lead; with another error when the point came but
// was not applied in time, or the leader could not confirm it.
func followerRead(ctx context.Context, r replica, o *handlerOptions, nl *node.NotLeaderError) (int64, error) {
	if o.peerHTTP == nil || nl.Leader == kraft.NoNode {
		return 0, errNoPoint
	}
	addr, ok := o.peerHTTP(nl.Leader)
	if !ok {
		return 0, fmt.Errorf("%w: no -peer-http address for replica %d", errNoPoint, nl.Leader)
	}
	pctx, cancel := context.WithTimeout(ctx, readPointTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, "http://"+addr+"/readindex", nil)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errNoPoint, err)
	}
	client := o.client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", errNoPoint, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusServiceUnavailable:
		return 0, fmt.Errorf("the leader could not confirm a read point (%s)", resp.Status)
	default:
		return 0, fmt.Errorf("%w: the leader answered %s", errNoPoint, resp.Status)
	}
	var b readIndexBody
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		return 0, fmt.Errorf("%w: %v", errNoPoint, err)
	}
	if err := r.WaitApplied(ctx, b.Offset-1); err != nil {
		return 0, fmt.Errorf("read point %d of epoch %d not applied here yet: %w", b.Offset, b.Epoch, err)
	}
	return b.Offset, nil
}
