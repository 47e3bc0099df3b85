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
	// The response's records wait for the state's AppendFetched, which
	// comes alone and only if the state takes them (D240).
	resp.Records = len(m.Records) > 0
	r.fetched = m.Records
	r.step(resp)
	r.fetched = nil
	if resp.Error != kraft.ErrNone {
		// D25: the state sends no new Fetch after an error answer; the
		// latest one goes again after the backoff.
		r.retryFetch()
	}
}

// appendFetched carries out AppendFetched: the records of the Fetch
// response being stepped go into the log at a.Offset, and their reports
// (each LogAppended, then a VotersAppended for every VotersRecord it
// covers) and then the response itself, a.Then, are owed to the state.
// Records that no longer start at the log end are dropped, and the Fetch
// goes again (docs/design.md D240).
func (r *Replica) appendFetched(a kraft.AppendFetched) {
	records := r.fetched
	r.fetched = nil
	if len(records) == 0 {
		r.fail(fmt.Errorf("replica: AppendFetched at %d for a response without records", a.Offset))
		return
	}
	if r.planted(bugWrongOffset) && len(records) > 1 {
		// An off-by-one: the second record appended where the first
		// belongs, and so on.
		end := r.cfg.Log.End().Offset
		records = append([]storage.Entry(nil), records[1:]...)
		for i := range records {
			records[i].Offset = end + int64(i)
		}
	}
	if records[0].Offset != a.Offset || a.Offset != r.cfg.Log.End().Offset {
		// The log moved since the fetch was sent: fetch again.
		r.retryFetch()
		return
	}
	if _, err := r.cfg.Log.AppendEntries(records...); err != nil {
		r.fail(fmt.Errorf("replica: appending fetched records: %w", err))
		return
	}
	i := 0
	for _, e := range storage.AppendedEvents(records) {
		r.queue = append(r.queue, inbound{ev: e})
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
			r.queue = append(r.queue, inbound{ev: kraft.VotersAppended{Offset: rec.Offset, Voters: KeysOf(vs)}})
		}
	}
	r.queue = append(r.queue, inbound{ev: a.Then})
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
