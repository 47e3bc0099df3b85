package explore

import (
	"encoding/binary"

	"github.com/kraftquorum/kraft"
	layer "github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// rec is one log record: its epoch and an identity. A LeaderChange record
// has ID 0 (one per epoch while one-leader-per-epoch holds); client records
// are numbered from 1 in the order they were appended.
type rec struct {
	Epoch kraft.Epoch
	ID    int32
}

// replica is one replica and its host. The replica's protocol runs in
// rep, package replica's layer, as in the runtime and the simulator; the
// host keeps its storage (the durable record, the written log) and the
// checker's data.
type replica struct {
	// rep is nil while the replica is down. Worlds share it until a move
	// changes the replica (engine.own copies it first).
	rep *layer.Replica
	st  kraft.State // rep's State; meaningless while down
	up  bool
	// hasRecord and record are the durable quorum-state record.
	hasRecord bool
	record    kraft.QuorumRecord
	// mem is the host's log (docs/design.md D126), shared by the worlds
	// until a transition changes it (hostLog.writable copies it first).
	mem *storage.MemLog
	// log and flushed are the world's view of mem, kept in step by
	// hostLog: its written records, never changed in place (appends
	// copy), and its flushed offset; log[:flushed] is durable.
	log     []rec
	flushed int
	// held is the checker's: the longest prefix of the committed log this
	// replica has held durably.
	held int
}

func (r *replica) durable() kraft.QuorumRecord {
	if !r.hasRecord {
		return kraft.EmptyRecord()
	}
	return r.record
}

// msg is a message in flight. Its correlation id is renamed after every
// move (engine.canonicalize): 0 for an id its requester no longer
// matches, so a request with 0 is stale (its answer will be dropped) and
// a response with 0 is dropped.
type msg struct {
	m   layer.Message
	enc string // canonical encoding, the sort key of the network
}

func (m *msg) from() kraft.NodeID { return m.m.From }
func (m *msg) to() kraft.NodeID   { return m.m.To }
func (m *msg) ev() kraft.Event    { return m.m.Event }

// stale: a request whose answer its requester will drop.
func (m *msg) stale() bool { return !m.m.Response && m.m.Corr == 0 }

// world is the whole cluster: replicas, network and the checker's history.
type world struct {
	reps             []replica
	net              []msg // sorted by enc
	crashes, appends int
	dups             int
	damages          int            // Damage moves so far
	leaders          []kraft.NodeID // checker: leader of each epoch, NoNode
	committed        []rec          // checker: the committed log
	// ids: each replica's index in the search's table of replicas (see
	// store.go), -1 when the replica changed since; nil when not kept.
	ids []int32
	// lostTail: the transition that made this world crashed a replica
	// with an unflushed tail (a witness, not part of the world).
	lostTail bool
}

func (w *world) clone() *world {
	c := *w
	c.reps = append([]replica(nil), w.reps...)
	c.net = append(make([]msg, 0, len(w.net)+4), w.net...)
	if w.ids != nil {
		c.ids = append([]int32(nil), w.ids...)
	}
	c.lostTail = false
	return &c
}

// touch notes that replica id changed.
func (w *world) touch(id kraft.NodeID) {
	if w.ids != nil && id >= 0 && int(id) < len(w.ids) {
		w.ids[id] = -1
	}
}

// sortNet sorts the network by encoding (stable; an insertion sort, the
// network being a few messages).
func (w *world) sortNet() {
	for i := 1; i < len(w.net); i++ {
		for j := i; j > 0 && w.net[j].enc < w.net[j-1].enc; j-- {
			w.net[j], w.net[j-1] = w.net[j-1], w.net[j]
		}
	}
}

func putV(dst []byte, x int64) []byte {
	var b [binary.MaxVarintLen64]byte
	return append(dst, b[:binary.PutVarint(b[:], x)]...)
}

func putRecs(dst []byte, rs []rec) []byte {
	dst = putV(dst, int64(len(rs)))
	for _, r := range rs {
		dst = putV(dst, int64(r.Epoch))
		dst = putV(dst, int64(r.ID))
	}
	return dst
}

func putKey(dst []byte, k kraft.ReplicaKey) []byte {
	dst = putV(dst, int64(k.ID))
	return append(dst, k.DirectoryID[:]...)
}

func putBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// encodeMsg is a message's canonical encoding.
func encodeMsg(m *msg) string {
	return string(layer.Model{}.AppendCanonicalMessage(make([]byte, 0, 64), m.m))
}

// encode is the world's canonical encoding. A replica's layer and State
// are encoded without their times, the State's PRNG and fetch jitter
// (AppendCanonicalUntimed): the model is untimed, and they feed only
// deadlines. A down replica's layer is left out: a restart rebuilds it
// from the record and the flushed log.
func (w *world) encode() []byte {
	var dst []byte
	for i := range w.reps {
		dst = w.reps[i].encode(dst)
	}
	dst = putV(dst, int64(len(w.net)))
	for i := range w.net {
		dst = putV(dst, int64(len(w.net[i].enc)))
		dst = append(dst, w.net[i].enc...)
	}
	dst = putV(dst, int64(w.crashes))
	dst = putV(dst, int64(w.appends))
	dst = putV(dst, int64(w.dups))
	dst = putV(dst, int64(w.damages))
	return w.encodeHistory(dst)
}

// encode appends the replica's part of the world's canonical encoding.
func (r *replica) encode(dst []byte) []byte {
	dst = putBool(dst, r.up)
	dst = putBool(dst, r.hasRecord)
	dst = putV(dst, int64(r.record.Epoch))
	dst = putV(dst, int64(r.record.LeaderID))
	dst = putKey(dst, r.record.VotedKey)
	dst = putRecs(dst, r.log)
	dst = putV(dst, int64(r.flushed))
	dst = putV(dst, int64(r.held))
	if r.up {
		dst = r.model().AppendCanonicalUntimed(dst)
	}
	return dst
}

// encodeHistory appends the checker's history: the leader of each epoch
// and the committed log.
func (w *world) encodeHistory(dst []byte) []byte {
	for _, l := range w.leaders {
		dst = putV(dst, int64(l))
	}
	return putRecs(dst, w.committed)
}

func sameRecs(a, b []rec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func logEnd(log []rec) kraft.LogEnd {
	if len(log) == 0 {
		return kraft.LogEnd{}
	}
	return kraft.LogEnd{Offset: int64(len(log)), Epoch: log[len(log)-1].Epoch}
}

// reqEpoch is the epoch a request is judged by: a vote request's candidate
// epoch, a BeginQuorumEpoch's or EndQuorumEpoch's leader epoch, a Fetch's
// current leader epoch; ok is false for responses.
func reqEpoch(e kraft.Event) (kraft.Epoch, bool) {
	switch e := e.(type) {
	case kraft.ReceiveVoteRequest:
		return e.CandidateEpoch, true
	case kraft.ReceiveBeginQuorumEpoch:
		return e.LeaderEpoch, true
	case kraft.ReceiveEndQuorumEpoch:
		return e.LeaderEpoch, true
	case kraft.ReceiveFetch:
		return e.CurrentLeaderEpoch, true
	}
	return 0, false
}

// dead reports whether delivering m, in w and in every world reachable
// from w while m is in flight, changes nothing and sends nothing, so that
// m can be taken off the network at once (docs/verification.md, "dead
// messages"):
//
//   - a response whose correlation id its receiver no longer matches
//     (renamed 0): the replica layer drops it, and ids are never issued
//     twice;
//   - a stale request (its answer will be dropped by the requester) of
//     an epoch older than its receiver's: every request handler rejects
//     an older epoch first, with no change (validateVoterOnly,
//     validateLeaderOnly), answering at once, and the receiver's epoch
//     never goes down while it is up (a crash takes the message off
//     anyway);
//   - a stale Fetch of the receiver's epoch to a receiver that is neither
//     Leader nor Candidate: validateLeaderOnly rejects it with no change,
//     at once, and goes on doing so, since a replica becomes Leader of an
//     epoch only as its Candidate, and becomes Candidate only by moving to
//     a newer epoch (in the same life: a restart comes after a crash,
//     which takes the message off).
func dead(w *world, m *msg) bool {
	to := m.to()
	if to < 0 || int(to) >= len(w.reps) {
		return false
	}
	r := &w.reps[to]
	if !r.up {
		return false
	}
	if m.m.Response {
		return m.m.Corr == 0
	}
	if e, ok := reqEpoch(m.ev()); ok {
		if !m.stale() {
			return false
		}
		if e < r.st.Epoch() {
			return true
		}
		_, fetch := m.ev().(kraft.ReceiveFetch)
		role := r.st.Role()
		return fetch && e == r.st.Epoch() && role != kraft.Leader && role != kraft.Candidate
	}
	return false
}
