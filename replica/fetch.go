package replica

import (
	"fmt"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// parkedFetch is a Fetch held until the leader has news or its wait
// (FetchMaxWait) is up.
type parkedFetch struct {
	msg      Message
	deadline time.Duration
}

// onResponse matches a response with the request in flight and steps it;
// a response to no request in flight (stale, duplicated, from before the
// latest role change) is dropped.
func (r *Replica) onResponse(m Message) {
	q, ok := r.match(m)
	if !ok && !r.planted(bugKeepStale) {
		return
	}
	if ok && q.kind == kindRead {
		// A read round's BeginQuorumEpoch (read.go): the state steps the
		// answer as it does its own BeginQuorumEpoch's (a newer epoch
		// ends the leadership), then the round counts it.
		if m.Event != nil && !refusedForCluster(m.Event) {
			r.step(m.Event)
		}
		r.onReadAnswer(q, m)
		return
	}
	if m.Event == nil {
		return // an answer without an event (D28)
	}
	if ok && refusedForCluster(m.Event) {
		// INCONSISTENT_CLUSTER_ID is a top-level error in Kafka (every
		// response puts it in its top-level error_code), which
		// KafkaRaftClient.handleTopLevelError never hands to the state:
		// the epoch and leader of another cluster's replica must not move
		// this one. The request goes again after the backoff, as after a
		// timeout (docs/design.md D67).
		r.timedOut(q)
		return
	}
	if sr, ok := m.Event.(kraft.ReceiveFetchSnapshotResponse); ok {
		r.onFetchSnapshotResponse(sr, m.Chunk)
		return
	}
	resp, isFetch := m.Event.(kraft.ReceiveFetchResponse)
	if !isFetch {
		r.step(m.Event)
		return
	}
	if len(m.Records) > 0 && r.st.AcceptsRecords(resp) {
		if r.planted(bugWrongOffset) && len(m.Records) > 1 {
			// An off-by-one: the second record appended where the first
			// belongs, and so on.
			end := r.cfg.Log.End().Offset
			m.Records = append([]storage.Entry(nil), m.Records[1:]...)
			for i := range m.Records {
				m.Records[i].Offset = end + int64(i)
			}
		}
		if m.Records[0].Offset != r.cfg.Log.End().Offset {
			// The log moved since the fetch was sent: fetch again.
			r.retryFetch()
			return
		}
		if _, err := r.cfg.Log.AppendEntries(m.Records...); err != nil {
			r.fail(fmt.Errorf("replica: appending fetched records: %w", err))
			return
		}
		r.stepFetched(m.Records)
	}
	r.step(resp)
	if resp.Error != kraft.ErrNone {
		// D25: the state sends no new Fetch after an error answer; the
		// latest one goes again after the backoff.
		r.retryFetch()
	}
}

// stepFetched reports records a follower appended: each LogAppended, then
// a VotersAppended for every VotersRecord it covers.
func (r *Replica) stepFetched(records []storage.Entry) {
	i := 0
	for _, e := range storage.AppendedEvents(records) {
		r.step(e)
		for ; i < len(records) && records[i].Offset < e.End.Offset; i++ {
			rec := records[i]
			if !IsVotersRecord(rec.Data) {
				continue
			}
			vs, err := DecodeVoters(rec.Data[1:])
			if err != nil {
				r.fail(fmt.Errorf("replica: the fetched VotersRecord at %d: %w", rec.Offset, err))
				return
			}
			r.addVoterSet(rec.Offset, vs)
			r.step(kraft.VotersAppended{Offset: rec.Offset, Voters: KeysOf(vs)})
		}
	}
}

// fetchResponse answers a Fetch: records from the written log at the fetch
// offset, up to the state's log end and FetchMaxBytes; a caught-up Fetch
// with nothing new is parked up to FetchMaxWait (Kafka's long poll).
func (r *Replica) fetchResponse(a kraft.SendFetchResponse) {
	req := r.cur
	if req == nil || req.From != a.To {
		return
	}
	f, _ := req.Event.(kraft.ReceiveFetch)
	var records []storage.Entry
	// Records only with a valid position: a diverging or snapshot answer
	// carries none (and a snapshot answer's fetch offset may be below the
	// log start).
	valid := a.Error == kraft.ErrNone && a.Diverging == nil && a.Snapshot == nil
	if valid && f.FetchOffset < r.st.LogEnd().Offset {
		rs, err := r.readShared(f.FetchOffset, r.cfg.FetchMaxBytes)
		if err != nil {
			r.fail(fmt.Errorf("replica: reading the log at %d: %w", f.FetchOffset, err))
			return
		}
		records = rs
	}
	if len(records) == 0 && valid && a.HighWatermark <= req.HighWatermark &&
		!r.noPark && r.st.Role() == kraft.Leader {
		if len(r.parked) < MaxParkedFetches {
			r.parked = append(r.parked, parkedFetch{msg: *req, deadline: r.now + r.cfg.FetchMaxWait})
			return
		}
		// Full (D202): answered at once, empty; the fetcher asks again.
		r.parkRefused++
	}
	r.respond(a, records, nil)
}

// MaxParkedFetches is the most Fetches a leader holds parked (long poll);
// one more is answered at once with no records, and the fetcher, which
// has one Fetch in flight to the leader (Kafka's RequestManager), sends
// its next after it. Each replica has at most one Fetch parked at a time
// but for duplicates the network delivers, so 1024 leaves room for a
// thousand replicas (docs/design.md D202). ParkRefused counts the
// Fetches answered at once for it.
const MaxParkedFetches = 1024

// ParkRefused counts the Fetches a full park answered at once
// (MaxParkedFetches).
func (r *Replica) ParkRefused() uint64 { return r.parkRefused }

// readShared reads the log for a Fetch response, without copying the
// payloads when the log can share them (storage.SharedReader): the host
// encodes the response before the next input and never modifies them.
func (r *Replica) readShared(from int64, maxBytes int) ([]storage.Entry, error) {
	if sr, ok := r.cfg.Log.(storage.SharedReader); ok {
		return sr.ReadShared(from, maxBytes)
	}
	return r.cfg.Log.Read(from, maxBytes)
}

// wakeParked steps every parked Fetch again (the leader's log end or high
// watermark moved, or it stopped leading).
func (r *Replica) wakeParked() {
	if r.planted(bugParkForever) {
		return
	}
	for _, p := range r.parked {
		p := p
		r.queue = append(r.queue, inbound{msg: &p.msg, noPark: true})
	}
	r.parked = r.parked[:0]
}
