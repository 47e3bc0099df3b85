package replica

import (
	"github.com/kraftquorum/kraft"
)

// checkInvariants checks what holds of a Replica between inputs; the
// tests run it after every input.
//   - inflight: at most one request per destination and kind (Kafka's
//     RequestManager), each with a correlation id the replica issued.
//   - parked: Fetches are parked only at a leader.
//   - lastFetch: the latest Fetch sent has a correlation id the replica
//     issued.
//   - queue: empty (every event owed to the state was stepped).
//   - out: a stopped replica's last output is Stopped.
//   - reads: see checkReads.
func (r *Replica) checkInvariants() error {
	if r.err != nil {
		return nil
	}
	for i, q := range r.inflight {
		if q.corr == 0 || q.corr > r.corr {
			return broken("inflight-corr", "request %d in flight has correlation id %d, issued up to %d", i, q.corr, r.corr)
		}
		for _, p := range r.inflight[:i] {
			if p.kind == q.kind && p.msg.To == q.msg.To {
				return broken("inflight-one-per-kind", "two requests of kind %d in flight to %d (%d and %d)", q.kind, q.msg.To, p.corr, q.corr)
			}
		}
	}
	if len(r.parked) > 0 && r.st.Role() != kraft.Leader {
		return broken("parked-at-leader", "%d Fetches parked at a %v", len(r.parked), r.st.Role())
	}
	if r.lastFetch != nil && (r.lastFetch.Corr == 0 || r.lastFetch.Corr > r.corr) {
		return broken("last-fetch-corr", "the latest Fetch has correlation id %d, issued up to %d", r.lastFetch.Corr, r.corr)
	}
	if len(r.queue) > 0 {
		return broken("queue-drained", "%d events owed to the state after the input", len(r.queue))
	}
	return r.checkReads()
}
