package kraft_test

// An end-to-end regression test for Raft's figure 8 under a slow disk:
// three States and a hand-routed host that keeps the host contract of the
// README, where one leader's flush of client records is delayed across a
// resignation and two elections. Before the log model kept the written log
// apart from the flushed offset (docs/design.md D30), a record the epoch-3
// leader reported committed was gone from all three logs at the end.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kraftquorum/kraft"
)

type f8Rec struct {
	Epoch   kraft.Epoch
	Payload string
}

type f8Node struct {
	id      kraft.NodeID
	cfg     kraft.Config
	s       kraft.State
	up      bool
	rec     *kraft.QuorumRecord
	log     []f8Rec // host log, every record reported; log[:flushed] is durable
	flushed int
	hwmSeen int64 // highest HighWatermarkChanged this life
	applied []f8Rec
	faults  []string
}

type f8Msg struct {
	from, to kraft.NodeID
	ev       kraft.Event
	records  []f8Rec // fetch response records
	fetchOff int64
}

type f8Net struct {
	t      *testing.T
	nodes  []*f8Node
	q      []f8Msg
	maxRec int
	trace  []string
}

func newF8(t *testing.T) *f8Net {
	n := &f8Net{t: t, maxRec: 1}
	voters := []kraft.ReplicaKey{{ID: 0}, {ID: 1}, {ID: 2}}
	for i := 0; i < 3; i++ {
		nd := &f8Node{id: kraft.NodeID(i), cfg: kraft.Config{Local: voters[i], Voters: voters, Seed: uint64(i) + 11}}
		n.nodes = append(n.nodes, nd)
		n.start(nd)
	}
	return n
}

func (n *f8Net) logf(format string, args ...interface{}) {
	n.trace = append(n.trace, fmt.Sprintf(format, args...))
}

func f8State(log []f8Rec, k int) kraft.LogState {
	var ls kraft.LogState
	for i := 0; i < k; i++ {
		if i == 0 || log[i].Epoch != log[i-1].Epoch {
			ls.Epochs = append(ls.Epochs, kraft.EpochStart{Epoch: log[i].Epoch, StartOffset: int64(i)})
		}
	}
	if k > 0 {
		ls.End = kraft.LogEnd{Offset: int64(k), Epoch: log[k-1].Epoch}
	}
	return ls
}

func (n *f8Net) start(nd *f8Node) {
	nd.log = nd.log[:nd.flushed:nd.flushed] // a crash loses the unflushed tail
	var rec *kraft.QuorumRecord
	if nd.rec != nil {
		r := *nd.rec
		rec = &r
	}
	s, acts, err := kraft.NewState(nd.cfg, rec, f8State(nd.log, nd.flushed))
	if err != nil {
		n.t.Fatal(err)
	}
	nd.s, nd.up, nd.hwmSeen = s, true, -1
	n.logf("start %d -> %v", nd.id, s)
	n.carry(nd, acts, nil)
}

func (n *f8Net) step(nd *f8Node, e kraft.Event, m *f8Msg) {
	if !nd.up {
		return
	}
	next, acts := kraft.Step(nd.s, e)
	for _, a := range acts {
		if f, ok := a.(kraft.Fault); ok {
			nd.faults = append(nd.faults, f.Reason)
			n.logf("FAULT at %d on %s: %s", nd.id, short(e), f.Reason)
			return
		}
	}
	nd.s = next
	n.logf("%d <- %s => %v", nd.id, short(e), next)
	n.carry(nd, acts, m)
}

// flush makes the whole host log durable and reports it, one LogAppended
// per epoch run (README rule 7).
func short(e kraft.Event) string {
	switch x := e.(type) {
	case kraft.ReceiveVoteRequest:
		return fmt.Sprintf("VoteReq{from %d epoch %d log %+v pre %v}", x.Candidate, x.CandidateEpoch, x.CandidateLogEnd, x.PreVote)
	case kraft.ReceiveVoteResponse:
		return fmt.Sprintf("VoteResp{from %d %v epoch %d granted %v leader %d}", x.From, x.Error, x.Epoch, x.VoteGranted, x.LeaderID)
	case kraft.ReceiveFetch:
		return fmt.Sprintf("Fetch{from %d epoch %d at %d@%d}", x.From, x.CurrentLeaderEpoch, x.FetchOffset, x.FetchEpoch)
	case kraft.ReceiveFetchResponse:
		d := ""
		if x.Diverging != nil {
			d = fmt.Sprintf(" diverging %+v", *x.Diverging)
		}
		return fmt.Sprintf("FetchResp{from %d %v leader %d epoch %d hwm %d%s}", x.From, x.Error, x.LeaderID, x.LeaderEpoch, x.HighWatermark, d)
	case kraft.ReceiveBeginQuorumEpoch:
		return fmt.Sprintf("BeginQuorumEpoch{leader %d epoch %d}", x.LeaderID, x.LeaderEpoch)
	case kraft.ReceiveEndQuorumEpoch:
		return fmt.Sprintf("EndQuorumEpoch{leader %d epoch %d rank %+v}", x.LeaderID, x.LeaderEpoch, x.SuccessorRank)
	}
	return fmt.Sprintf("%T%+v", e, e)
}

// flush makes the whole host log durable and reports it with LogFlushed.
func (n *f8Net) flush(nd *f8Node) {
	if nd.flushed == len(nd.log) {
		return
	}
	nd.flushed = len(nd.log)
	n.step(nd, kraft.LogFlushed{Offset: int64(nd.flushed)}, nil)
}

// write appends records to the host log and reports them at once, one
// LogAppended per epoch run; the flush comes later.
func (n *f8Net) write(nd *f8Node, recs ...f8Rec) {
	from := len(nd.log)
	nd.log = append(nd.log, recs...)
	for i := from; i < len(nd.log); i++ {
		if i == len(nd.log)-1 || nd.log[i+1].Epoch != nd.log[i].Epoch {
			n.step(nd, kraft.LogAppended{End: kraft.LogEnd{Offset: int64(i + 1), Epoch: nd.log[i].Epoch}}, nil)
		}
	}
}

func (n *f8Net) carry(nd *f8Node, acts []kraft.Action, m *f8Msg) {
	var written []f8Rec
	defer func() {
		if len(written) > 0 {
			n.write(nd, written...)
		}
	}()
	for _, a := range acts {
		switch x := a.(type) {
		case kraft.Persist:
			r := x.Record
			nd.rec = &r
		case kraft.SendVoteRequest:
			n.q = append(n.q, f8Msg{from: nd.id, to: x.To.ID, ev: kraft.ReceiveVoteRequest{
				From: nd.id, VoterID: x.To.ID,
				CandidateEpoch: x.CandidateEpoch, Candidate: x.Candidate.ID, CandidateLogEnd: x.CandidateLogEnd, PreVote: x.PreVote,
			}})
		case kraft.SendVoteResponse:
			n.q = append(n.q, f8Msg{from: nd.id, to: x.To, ev: kraft.ReceiveVoteResponse{From: nd.id, Error: x.Error, Epoch: x.Epoch, VoteGranted: x.VoteGranted, LeaderID: x.LeaderID}})
		case kraft.SendBeginQuorumEpoch:
			n.q = append(n.q, f8Msg{from: nd.id, to: x.To.ID, ev: kraft.ReceiveBeginQuorumEpoch{From: nd.id, LeaderID: x.LeaderID, LeaderEpoch: x.Epoch, VoterID: x.To.ID}})
		case kraft.SendEndQuorumEpoch:
			rank := kraft.SuccessorRank{Position: len(x.PreferredSuccessors), Of: len(x.PreferredSuccessors)}
			for i, k := range x.PreferredSuccessors {
				if k.ID == x.To.ID {
					rank.Position = i
					break
				}
			}
			n.q = append(n.q, f8Msg{from: nd.id, to: x.To.ID, ev: kraft.ReceiveEndQuorumEpoch{From: nd.id, LeaderID: x.LeaderID, LeaderEpoch: x.Epoch, SuccessorRank: rank}})
		case kraft.SendFetch:
			n.q = append(n.q, f8Msg{from: nd.id, to: x.To, fetchOff: x.FetchOffset, ev: kraft.ReceiveFetch{
				From:               nd.id,
				CurrentLeaderEpoch: x.CurrentLeaderEpoch, FetchEpoch: x.FetchEpoch, FetchOffset: x.FetchOffset,
			}})
		case kraft.AppendFetched:
			if int64(len(nd.log)) == x.Offset && x.Offset == m.fetchOff {
				n.write(nd, m.records...)
				n.flush(nd) // followers flush at once here
			}
			n.step(nd, x.Then, m)
		case kraft.SendFetchResponse:
			f := m.ev.(kraft.ReceiveFetch)
			r := f8Msg{from: nd.id, to: x.To, fetchOff: f.FetchOffset, ev: kraft.ReceiveFetchResponse{
				From: nd.id, Error: x.Error,
				LeaderID: x.LeaderID, LeaderEpoch: x.Epoch, HighWatermark: x.HighWatermark, Diverging: x.Diverging,
			}}
			if x.Error == kraft.ErrNone && x.Diverging == nil {
				// records from the written log at the fetch offset, up to
				// the state's log end (the README's contract)
				end := nd.s.LogEnd().Offset
				for o := f.FetchOffset; o < end && len(r.records) < n.maxRec; o++ {
					r.records = append(r.records, nd.log[o])
				}
			}
			n.q = append(n.q, r)
		case kraft.TruncateLog:
			if x.To < int64(len(nd.log)) {
				nd.log = nd.log[:x.To:x.To]
				if nd.flushed > len(nd.log) {
					nd.flushed = len(nd.log)
				}
			}
		case kraft.AppendLeaderChange:
			written = append(written, f8Rec{Epoch: x.Epoch, Payload: fmt.Sprintf("LC%d", x.Epoch)})
		case kraft.HighWatermarkChanged:
			nd.hwmSeen = x.HighWatermark
			for int64(len(nd.applied)) < x.HighWatermark {
				nd.applied = append(nd.applied, nd.log[len(nd.applied)])
			}
			n.logf("   %d reports records below %d committed: %v", nd.id, x.HighWatermark, nd.applied)
		}
	}
}

// deliver delivers, in rounds, the queued messages matching keep (a round
// is the matching messages queued when it starts); non-matching messages
// stay queued. It stops after rounds rounds or when nothing matches.
func (n *f8Net) deliver(keep func(m f8Msg) bool) { n.rounds(8, keep) }

func (n *f8Net) rounds(rounds int, keep func(m f8Msg) bool) {
	for r := 0; r < rounds; r++ {
		var now, rest []f8Msg
		for _, m := range n.q {
			if keep(m) {
				now = append(now, m)
			} else {
				rest = append(rest, m)
			}
		}
		if len(now) == 0 {
			return
		}
		n.q = rest
		for i := range now {
			m := now[i]
			to := n.nodes[m.to]
			if !to.up {
				continue
			}
			if r, ok := m.ev.(kraft.ReceiveFetchResponse); ok && len(m.records) > 0 {
				// appended when the state asks (AppendFetched)
				r.Records = true
				m.ev = r
			}
			n.step(to, m.ev, &m)
		}
	}
}

func (n *f8Net) drop(pred func(m f8Msg) bool) {
	var q []f8Msg
	for _, m := range n.q {
		if !pred(m) {
			q = append(q, m)
		}
	}
	n.q = q
}

func isVote(m f8Msg) bool {
	switch m.ev.(type) {
	case kraft.ReceiveVoteRequest, kraft.ReceiveVoteResponse:
		return true
	}
	return false
}

func both(a, b func(m f8Msg) bool) func(m f8Msg) bool {
	return func(m f8Msg) bool { return a(m) && b(m) }
}

func among(ids ...kraft.NodeID) func(m f8Msg) bool {
	return func(m f8Msg) bool {
		in := func(x kraft.NodeID) bool {
			for _, i := range ids {
				if i == x {
					return true
				}
			}
			return false
		}
		return in(m.from) && in(m.to)
	}
}

// TestSlowLeaderFlushKeepsCommittedRecords replays the schedule that lost a
// committed record before D30: a leader writes client records that its disk
// does not flush for a long time, resigns, and elections follow while the
// tail stays unflushed; then the tail is flushed, one replica crashes and
// another election follows. With the written log in votes and at the epoch
// start, and only flushed positions counted toward the high watermark,
// every record any leader reported committed is on every log at the end,
// and no replica faults.
// Reference: Raft figure 8; Kafka's KafkaRaftClient.appendAsFollower and
// flushLeaderLog; docs/design.md D30.
func TestSlowLeaderFlushKeepsCommittedRecords(t *testing.T) {
	n := newF8(t)
	n0, n1, n2 := n.nodes[0], n.nodes[1], n.nodes[2]
	all := func(f8Msg) bool { return true }
	defer func() {
		if t.Failed() {
			t.Log("trace:\n  " + strings.Join(n.trace, "\n  "))
		}
	}()

	// Phase 1: node 0 leads epoch 1; everyone holds LC1; committed = [LC1].
	n.step(n0, kraft.ElectionTimeout{}, nil)
	n.rounds(4, all) // pre-vote, vote, BeginQuorumEpoch
	n.flush(n0)      // LC1 durable
	n.maxRec = 32
	n.rounds(6, all) // fetch rounds
	if n0.s.Role() != kraft.Leader || n0.s.HighWatermark() != 1 {
		t.Fatalf("phase 1: %v", n0.s)
	}
	n.drop(all) // parked fetches: forget them

	// Phase 2: the leader writes 5 client records; its disk is slow, so
	// they are written and reported, not flushed.
	for i := 1; i <= 5; i++ {
		n.write(n0, f8Rec{Epoch: 1, Payload: fmt.Sprintf("c%d", i)})
	}
	if n0.s.LogEnd() != (kraft.LogEnd{Offset: 6, Epoch: 1}) || n0.s.FlushedOffset() != 1 {
		t.Fatalf("phase 2: node 0 sees log %+v flushed %d", n0.s.LogEnd(), n0.s.FlushedOffset())
	}

	// Phase 3: node 0 resigns gracefully; node 1 (rank 0) runs for epoch 2,
	// but node 0 compares votes with its written log (6@1 against node 1's
	// 1@1) and refuses: node 1 cannot lead with a log that lacks records a
	// former leader still holds (before D30 it won and wrote LC2 at 1).
	n.step(n0, kraft.Resign{}, nil)
	n.deliver(func(m f8Msg) bool { _, ok := m.ev.(kraft.ReceiveEndQuorumEpoch); return ok })
	n.step(n1, kraft.FetchTimeout{}, nil) // rank 0: backoff 0
	n.rounds(4, both(among(0, 1), isVote))
	if n1.s.Role() == kraft.Leader {
		t.Fatalf("phase 3: node 1 won with a log behind node 0's written log: %v", n1.s)
	}
	n.drop(func(m f8Msg) bool { return m.from == 1 || m.to == 1 }) // node 1 partitioned
	n.flush(n1)

	// Phase 4: node 0 campaigns again and wins with node 2's vote; its
	// epoch starts at its written log end, where its host writes the
	// LeaderChange, after the unflushed tail.
	n.step(n0, kraft.ElectionTimeout{}, nil)
	n.step(n0, kraft.ElectionTimeout{}, nil)
	n.drop(func(m f8Msg) bool { return m.from == 1 || m.to == 1 })
	n.rounds(4, both(among(0, 2), isVote))
	if n0.s.Role() != kraft.Leader {
		t.Fatalf("phase 4: node 0 %v", n0.s)
	}
	if n0.s.LogEnd().Offset != 7 || n0.log[6].Epoch != n0.s.Epoch() {
		t.Fatalf("phase 4: the LeaderChange is not at the written end 6: %v, log %v", n0.s, n0.log)
	}
	n.maxRec = 1 // small fetch responses (a byte limit)
	n.drop(func(m f8Msg) bool { return m.from == 1 || m.to == 1 })
	// Phase 5: node 2 follows and fetches one record per response: with
	// the leader's own records still unflushed, nothing commits.
	n.rounds(4, among(0, 2))
	if n0.hwmSeen > 1 {
		t.Fatalf("phase 5: node 0 committed %d while its flushed log ends at %d and node 2 holds %d records", n0.hwmSeen, n0.flushed, len(n2.log))
	}
	// Phase 6: the slow flush completes and node 2 catches up: the leader
	// commits through its LeaderChange.
	n.flush(n0)
	n.maxRec = 32
	n.rounds(8, among(0, 2))
	if n0.hwmSeen != 7 {
		t.Fatalf("phase 6: node 0 hwm %d (%v), node 2 log %v", n0.hwmSeen, n0.s, n2.log)
	}
	committed := append([]f8Rec(nil), n0.applied...)

	// Phase 7: node 0 crashes; nodes 1 and 2 elect a leader between them.
	n0.up = false
	n.drop(all)
	for i := 0; i < 6 && n1.s.Role() != kraft.Leader && n2.s.Role() != kraft.Leader; i++ {
		for _, nd := range []*f8Node{n1, n2} {
			switch nd.s.Role() {
			case kraft.Follower:
				n.step(nd, kraft.FetchTimeout{}, nil)
			case kraft.Leader:
				n.step(nd, kraft.CheckQuorumTimeout{}, nil)
			case kraft.Unattached, kraft.Prospective, kraft.Candidate, kraft.Resigned:
				n.step(nd, kraft.ElectionTimeout{}, nil)
			}
		}
		n.rounds(4, among(1, 2))
	}
	if n1.s.Role() != kraft.Leader && n2.s.Role() != kraft.Leader {
		t.Fatalf("phase 7: no leader: %v / %v", n1.s, n2.s)
	}
	if n1.s.Role() == kraft.Leader {
		n.flush(n1)
	} else {
		n.flush(n2)
	}
	n.rounds(8, among(1, 2))

	// Phase 8: node 0 restarts and follows the new leader.
	n.start(n0)
	n.drop(func(m f8Msg) bool { return m.from == 0 })
	for _, nd := range []*f8Node{n1, n2} {
		if nd.s.Role() == kraft.Leader {
			n.step(nd, kraft.BeginQuorumEpochTimeout{}, nil)
		}
	}
	n.rounds(10, all)
	for _, nd := range n.nodes {
		if len(nd.faults) > 0 {
			t.Fatalf("node %d faulted: %v", nd.id, nd.faults)
		}
	}
	for _, nd := range n.nodes {
		if len(nd.applied) > len(committed) {
			committed = nd.applied
		}
	}
	for i, r := range committed {
		for _, nd := range n.nodes {
			if i >= len(nd.log) || nd.log[i] != r {
				t.Fatalf("record %d %v, reported committed, is gone from node %d (log %v)", i, r, nd.id, nd.log)
			}
		}
	}
}
