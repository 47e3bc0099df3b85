package kraft_test

// A randomized single-replica harness. Unlike FuzzStep it keeps a
// consistent host (durable record; a written log that LogAppended and
// TruncateLog keep equal to the state's view, flushed at random moments and
// reported with LogFlushed), restarts the replica from what is durable (a
// crash loses the unflushed tail), draws events near the replica's own epoch, log and
// voters, and checks across the whole history (restarts included):
//
//   - Step is pure and deterministic; a Fault comes alone, state unchanged;
//   - one standard vote per epoch (persisted records and granted answers);
//     a vote, once persisted, stays in every later record of the epoch
//     unless the record names the local replica leader;
//   - nothing that depends on a record leaves before it: granted votes,
//     standard vote requests, BeginQuorumEpoch/EndQuorumEpoch, Fetch to a
//     leader, any message carrying an epoch;
//   - persisted and in-memory epochs never decrease;
//   - the state's record equals the last Persist;
//   - HighWatermarkChanged strictly rises within a life; a leader's ends in
//     a record of its own epoch and is at most what a majority (its own
//     flushed offset and the offsets of valid voter fetches it answered) holds;
//   - TruncateLog never goes below the highest high watermark reported in
//     this life; the state's log end and flushed offset equal the host's;
//   - HighWatermark() <= LogEnd().Offset.
//
// Run: go test . -run TestModelWithRestarts -rapid.checks=20000

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"pgregory.net/rapid"
)

type mHost struct {
	cfg kraft.Config
	s   kraft.State
	rec *kraft.QuorumRecord
	log []kraft.Epoch // written; log[:flushed] is durable
	// appendFetched: the AppendFetched of the latest step, if any (D240)
	appendFetched *kraft.AppendFetched
	flush         int
	votes         map[kraft.Epoch]kraft.ReplicaKey
	maxRec        kraft.Epoch
	maxMem        kraft.Epoch
	// per life
	lastHWM int64
	// leader tracking, per leadership
	leading    bool
	epochStart int64
	fetched    map[kraft.NodeID]int64
	hist       []string
	pendingLC  bool
	lcEpoch    kraft.Epoch
}

func (h *mHost) durable() kraft.QuorumRecord {
	if h.rec == nil {
		return kraft.EmptyRecord()
	}
	return *h.rec
}

func mLogState(log []kraft.Epoch) kraft.LogState {
	var ls kraft.LogState
	for i, e := range log {
		if i == 0 || e != log[i-1] {
			ls.Epochs = append(ls.Epochs, kraft.EpochStart{Epoch: e, StartOffset: int64(i)})
		}
	}
	if len(log) > 0 {
		ls.End = kraft.LogEnd{Offset: int64(len(log)), Epoch: log[len(log)-1]}
	}
	return ls
}

func (h *mHost) fail(t *rapid.T, format string, args ...interface{}) {
	t.Fatalf("%s\nhistory:\n  %s", fmt.Sprintf(format, args...), joinLines(h.hist))
}

func joinLines(l []string) string {
	if len(l) > 60 {
		l = l[len(l)-60:]
	}
	out := ""
	for i, x := range l {
		if i > 0 {
			out += "\n  "
		}
		out += x
	}
	return out
}

func (h *mHost) start(t *rapid.T) {
	var rec *kraft.QuorumRecord
	if h.rec != nil {
		r := *h.rec
		rec = &r
	}
	h.flush = len(h.log) // what survives on disk is durable
	s, acts, err := kraft.NewState(h.cfg, rec, mLogState(h.log))
	if err != nil {
		h.fail(t, "NewState: %v", err)
	}
	h.hist = append(h.hist, fmt.Sprintf("RESTART rec=%+v log=%v -> %v", h.durable(), h.log, s))
	h.s = s
	h.lastHWM = -1
	h.leading = false
	h.apply(t, nil, acts)
	h.after(t)
}

func (h *mHost) after(t *rapid.T) {
	s := h.s
	if s.Epoch() < h.maxMem {
		h.fail(t, "in-memory epoch went down %d -> %d", h.maxMem, s.Epoch())
	}
	h.maxMem = s.Epoch()
	if s.Record() != h.durable() {
		h.fail(t, "state record %+v, durable %+v", s.Record(), h.durable())
	}
	ls := mLogState(h.log)
	if s.LogEnd() != ls.End || s.FlushedOffset() != int64(h.flush) {
		h.fail(t, "state log end %+v flushed %d, host %+v flushed %d", s.LogEnd(), s.FlushedOffset(), ls.End, h.flush)
	}
	if s.HighWatermark() > s.LogEnd().Offset {
		h.fail(t, "hwm %d past log end %+v in %v", s.HighWatermark(), s.LogEnd(), s)
	}
	if !s.IsVoter() && (s.Role() == kraft.Prospective || s.Role() == kraft.Candidate || s.Role() == kraft.Leader) {
		h.fail(t, "observer in role %v", s.Role())
	}
	if s.Role() == kraft.Leader && !h.leading {
		h.leading = true
		mst.leaders++
		h.epochStart = s.LogEnd().Offset
		h.fetched = map[kraft.NodeID]int64{}
	}
	if s.Role() != kraft.Leader {
		h.leading = false
	}
}

func (h *mHost) recordVote(t *rapid.T, epoch kraft.Epoch, k kraft.ReplicaKey, what string) {
	if prev, ok := h.votes[epoch]; ok && prev != k {
		h.fail(t, "two votes in epoch %d: %v and %v (%s)", epoch, prev, k, what)
	}
	h.votes[epoch] = k
}

// apply carries out actions in order, checking each against the durable
// record at that moment. e is the step's event (nil at start).
func (h *mHost) apply(t *rapid.T, e kraft.Event, acts []kraft.Action) {
	local := h.cfg.Local
	for _, a := range acts {
		d := h.durable()
		epochSent := func(what string, ep kraft.Epoch) {
			if ep > d.Epoch {
				h.fail(t, "%s of epoch %d before the record reached it (%+v)", what, ep, d)
			}
		}
		switch x := a.(type) {
		case kraft.Persist:
			r := x.Record
			if r.Epoch < h.maxRec {
				h.fail(t, "persisted epoch went down %d -> %d", h.maxRec, r.Epoch)
			}
			h.maxRec = r.Epoch
			if r.HasVote() {
				h.recordVote(t, r.Epoch, r.VotedKey, "persist")
			} else if v, ok := h.votes[r.Epoch]; ok && r.LeaderID != local.ID {
				h.fail(t, "record %+v forgets the vote for %v in epoch %d", r, v, r.Epoch)
			}
			h.rec = &r
		case kraft.SendVoteResponse:
			epochSent("vote response", x.Epoch)
			if req, ok := e.(kraft.ReceiveVoteRequest); ok && x.VoteGranted && !req.PreVote {
				cand := kraft.ReplicaKey{ID: req.Candidate, DirectoryID: req.CandidateDirectoryID}
				if d.Epoch != x.Epoch || !d.VotedKey.Matches(cand) {
					h.fail(t, "vote for %v in %d sent with durable %+v", cand, x.Epoch, d)
				}
				h.recordVote(t, x.Epoch, d.VotedKey, "granted answer")
				mst.votes++
				if x.Epoch != req.CandidateEpoch {
					h.fail(t, "granted vote in epoch %d for a request of epoch %d", x.Epoch, req.CandidateEpoch)
				}
			}
			if req, ok := e.(kraft.ReceiveVoteRequest); ok && x.VoteGranted {
				if req.CandidateLogEnd.Compare(h.s.LogEnd()) < 0 {
					if v, had := h.votes[x.Epoch]; !had || req.PreVote || !v.Matches(kraft.ReplicaKey{ID: req.Candidate, DirectoryID: req.CandidateDirectoryID}) {
						h.fail(t, "granted (pre=%v) to a stale log %+v < %+v", req.PreVote, req.CandidateLogEnd, h.s.LogEnd())
					}
				}
			}
		case kraft.SendVoteRequest:
			if x.PreVote {
				epochSent("pre-vote", x.CandidateEpoch)
			} else if d.Epoch != x.CandidateEpoch || !d.VotedKey.Matches(local) {
				h.fail(t, "vote request of %d with durable %+v", x.CandidateEpoch, d)
			}
			if x.CandidateLogEnd != mLogState(h.log).End {
				h.fail(t, "vote request carries log end %+v, host log %+v", x.CandidateLogEnd, mLogState(h.log).End)
			}
		case kraft.SendBeginQuorumEpoch:
			if d.Epoch != x.Epoch || d.LeaderID != local.ID {
				h.fail(t, "BeginQuorumEpoch %d with durable %+v", x.Epoch, d)
			}
		case kraft.SendEndQuorumEpoch:
			if d.Epoch != x.Epoch || d.LeaderID != local.ID {
				h.fail(t, "EndQuorumEpoch %d with durable %+v", x.Epoch, d)
			}
		case kraft.SendFetch:
			epochSent("fetch", x.CurrentLeaderEpoch)
			if x.To != kraft.NoNode && (d.LeaderID != x.To || d.Epoch != x.CurrentLeaderEpoch) {
				h.fail(t, "fetch to %d in %d with durable %+v", x.To, x.CurrentLeaderEpoch, d)
			}
		case kraft.SendFetchResponse:
			epochSent("fetch response", x.Epoch)
			if f, ok := e.(kraft.ReceiveFetch); ok && h.leading && x.Error == kraft.ErrNone && x.Diverging == nil && f.From != local.ID {
				for _, v := range h.cfg.Voters {
					if v.Matches(kraft.ReplicaKey{ID: f.From, DirectoryID: f.FromDirectoryID}) {
						h.fetched[f.From] = f.FetchOffset
					}
				}
			}
		case kraft.SendBeginQuorumEpochResponse:
			epochSent("BeginQuorumEpoch response", x.Epoch)
		case kraft.SendEndQuorumEpochResponse:
			epochSent("EndQuorumEpoch response", x.Epoch)
		case kraft.SendFetchSnapshotResponse:
			epochSent("FetchSnapshot response", x.Epoch)
		case kraft.TruncateLog:
			if x.To < h.lastHWM {
				h.fail(t, "truncate to %d below the reported hwm %d", x.To, h.lastHWM)
			}
			if x.To < int64(len(h.log)) {
				mst.truncs++
				h.log = h.log[:x.To:x.To]
				if h.flush > len(h.log) {
					h.flush = len(h.log)
				}
			}
		case kraft.AppendFetched:
			if len(acts) != 1 || x.Offset != int64(len(h.log)) || x.Then.Records {
				h.fail(t, "AppendFetched %+v at host log %d among %v", x, len(h.log), acts)
			}
			h.appendFetched = &x
		case kraft.AppendLeaderChange:
			// written at the host log end before the next event
			if int64(len(h.log)) != h.s.LogEnd().Offset {
				h.fail(t, "AppendLeaderChange with host log %d != state %d", len(h.log), h.s.LogEnd().Offset)
			}
			h.pendingLC, h.lcEpoch = true, x.Epoch
		case kraft.HighWatermarkChanged:
			if x.HighWatermark <= h.lastHWM {
				h.fail(t, "HighWatermarkChanged %d after %d", x.HighWatermark, h.lastHWM)
			}
			h.lastHWM = x.HighWatermark
			if h.s.Role() == kraft.Leader {
				mst.leaderHWM++
				hw := x.HighWatermark
				if hw <= 0 || hw > int64(len(h.log)) || h.log[hw-1] != h.s.Epoch() {
					h.fail(t, "leader of %d moved hwm to %d, log %v", h.s.Epoch(), hw, h.log)
				}
				// majority-th highest of own flushed offset and fetched voters
				var ends []int64
				for _, v := range h.cfg.Voters {
					if v.Matches(local) {
						ends = append(ends, int64(h.flush))
					} else if o, ok := h.fetched[v.ID]; ok {
						ends = append(ends, o)
					} else {
						ends = append(ends, -1)
					}
				}
				sort.Slice(ends, func(i, j int) bool { return ends[i] > ends[j] })
				if m := ends[len(ends)/2]; hw > m {
					h.fail(t, "leader hwm %d but a majority holds only %d (%v)", hw, m, ends)
				}
			}
		case kraft.Fault:
			if len(acts) != 1 {
				h.fail(t, "Fault with other actions: %v", acts)
			}
		}
	}
}

var mDirs = []uuid.UUID{uuid.Nil, uuid.MustParse("00000000-0000-0000-0000-00000000000a")}

// draw an event near the replica's own situation.
func (h *mHost) drawEvent(t *rapid.T) kraft.Event {
	s := h.s
	E := s.Epoch()
	nv := len(h.cfg.Voters)
	node := rapid.Custom(func(t *rapid.T) kraft.NodeID {
		return kraft.NodeID(rapid.IntRange(-1, nv+1).Draw(t, "node"))
	})
	epoch := rapid.Custom(func(t *rapid.T) kraft.Epoch {
		e := E + kraft.Epoch(rapid.IntRange(-1, 2).Draw(t, "depoch"))
		if e < 0 {
			e = 0
		}
		return e
	})
	// a log position: a prefix of the local log, or a bit past it
	pos := rapid.Custom(func(t *rapid.T) kraft.LogEnd {
		n := len(h.log)
		off := rapid.IntRange(0, n+3).Draw(t, "off")
		if off <= n {
			if off == 0 {
				return kraft.LogEnd{}
			}
			return kraft.LogEnd{Offset: int64(off), Epoch: h.log[off-1]}
		}
		last := kraft.Epoch(0)
		if n > 0 {
			last = h.log[n-1]
		}
		return kraft.LogEnd{Offset: int64(off), Epoch: last + kraft.Epoch(rapid.IntRange(0, 2).Draw(t, "ep+"))}
	})
	dir := rapid.SampledFrom(mDirs)
	switch rapid.IntRange(0, 16).Draw(t, "kind") {
	case 0:
		return kraft.ElectionTimeout{}
	case 1:
		return kraft.FetchTimeout{}
	case 2:
		return kraft.CheckQuorumTimeout{}
	case 3:
		return kraft.BeginQuorumEpochTimeout{}
	case 4, 5:
		isPre := rapid.Bool().Draw(t, "pre")
		ce := epoch.Draw(t, "cepoch")
		last := pos.Draw(t, "clog")
		if !isPre && last.Epoch >= ce && ce > 0 {
			last.Epoch = ce - 1
		}
		c := node.Draw(t, "cand")
		return kraft.ReceiveVoteRequest{
			From: c, VoterID: kraft.NodeID(rapid.SampledFrom([]int{-1, int(h.cfg.Local.ID)}).Draw(t, "voter")),
			VoterDirectoryID: dir.Draw(t, "vdir"), CandidateEpoch: ce, Candidate: c, CandidateDirectoryID: dir.Draw(t, "cdir"),
			CandidateLogEnd: last, PreVote: isPre,
		}
	case 6, 7:
		errc := rapid.SampledFrom([]kraft.ErrorCode{kraft.ErrNone, kraft.ErrNone, kraft.ErrNone, kraft.ErrFencedLeaderEpoch, kraft.ErrNotLeaderOrFollower, kraft.ErrInvalidVoterKey, kraft.ErrBrokerNotAvailable, kraft.ErrUnknownLeaderEpoch}).Draw(t, "err")
		return kraft.ReceiveVoteResponse{
			From: node.Draw(t, "from"), Error: errc, Epoch: epoch.Draw(t, "repoch"),
			VoteGranted: rapid.Bool().Draw(t, "granted"), LeaderID: kraft.NodeID(rapid.IntRange(-1, nv).Draw(t, "rleader")),
		}
	case 8:
		l := node.Draw(t, "leader")
		return kraft.ReceiveBeginQuorumEpoch{From: l, LeaderID: l, LeaderEpoch: epoch.Draw(t, "bepoch"), VoterID: kraft.NoNode}
	case 9:
		l := node.Draw(t, "leader")
		n := rapid.IntRange(0, nv).Draw(t, "of")
		return kraft.ReceiveEndQuorumEpoch{
			From: l, LeaderID: l, LeaderEpoch: epoch.Draw(t, "eepoch"),
			SuccessorRank: kraft.SuccessorRank{Position: rapid.IntRange(0, n).Draw(t, "pos"), Of: n},
		}
	case 10, 11:
		p := pos.Draw(t, "fpos")
		return kraft.ReceiveFetch{
			From: node.Draw(t, "ffrom"), FromDirectoryID: dir.Draw(t, "fdir"),
			CurrentLeaderEpoch: epoch.Draw(t, "fepoch"), FetchEpoch: p.Epoch, FetchOffset: p.Offset,
		}
	case 12, 13:
		l := kraft.NodeID(rapid.IntRange(-1, nv).Draw(t, "rleader"))
		if s.Role() == kraft.Follower && rapid.IntRange(0, 2).Draw(t, "own leader") > 0 {
			l = s.Leader()
		}
		re := epoch.Draw(t, "repoch")
		if s.Role() == kraft.Follower && l == s.Leader() && rapid.IntRange(0, 3).Draw(t, "same epoch") > 0 {
			re = E
		}
		r := kraft.ReceiveFetchResponse{
			From: l, LeaderID: l, LeaderEpoch: re,
			HighWatermark: int64(rapid.IntRange(-1, len(h.log)+4).Draw(t, "rhwm")),
		}
		if rapid.IntRange(0, 3).Draw(t, "err?") == 0 {
			r.Error = rapid.SampledFrom([]kraft.ErrorCode{kraft.ErrNotLeaderOrFollower, kraft.ErrFencedLeaderEpoch, kraft.ErrBrokerNotAvailable, kraft.ErrUnknownLeaderEpoch}).Draw(t, "rerr")
		}
		if rapid.IntRange(0, 2).Draw(t, "div?") == 0 {
			p := pos.Draw(t, "dpos")
			if p.Offset < s.HighWatermark() && rapid.Bool().Draw(t, "above hwm") {
				p.Offset = s.HighWatermark() + int64(rapid.IntRange(0, 3).Draw(t, "dd"))
			}
			if rapid.IntRange(0, 2).Draw(t, "lower epoch") == 0 && p.Epoch > 0 {
				p.Epoch -= kraft.Epoch(rapid.IntRange(1, int(p.Epoch)).Draw(t, "de"))
			}
			r.Diverging = &kraft.LogOffsetMetadata{Offset: p.Offset, Epoch: p.Epoch}
		}
		return r
	case 14:
		return kraft.ReceiveLeaderlessEpoch{From: 2, Epoch: epoch.Draw(t, "lepoch")}
	case 15:
		return kraft.Resign{}
	}
	return nil // restart
}

type mStats struct{ steps, restarts, leaders, votes, truncs, leaderHWM, faults int }

var mst mStats

func TestModelWithRestarts(t *testing.T) {
	rapid.Check(t, modelBody)
	t.Logf("steps %d restarts %d; leaderships %d, granted standard votes %d, truncations %d, leader hwm moves %d, faults %d", mst.steps, mst.restarts, mst.leaders, mst.votes, mst.truncs, mst.leaderHWM, mst.faults)
}

// FuzzModelWithRestarts: the same harness under Go's coverage-guided fuzzer.
func FuzzModelWithRestarts(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("restarts, votes, leaders, truncation"))
	f.Fuzz(rapid.MakeFuzz(modelBody))
}

func modelBody(t *rapid.T) {
	st := &mst
	{
		nv := rapid.IntRange(1, 5).Draw(t, "voters")
		voters := make([]kraft.ReplicaKey, nv)
		for i := range voters {
			voters[i] = kraft.ReplicaKey{ID: kraft.NodeID(i)}
		}
		cfg := kraft.Config{Local: kraft.ReplicaKey{ID: 0}, Voters: voters, Seed: rapid.Uint64().Draw(t, "seed")}
		if rapid.IntRange(0, 4).Draw(t, "observer?") == 0 {
			cfg.Local, cfg.Observer = kraft.ReplicaKey{ID: kraft.NodeID(nv)}, true
		}
		h := &mHost{cfg: cfg, votes: map[kraft.Epoch]kraft.ReplicaKey{}}
		if rapid.Bool().Draw(t, "initial disk?") {
			ep := kraft.Epoch(0)
			for k := rapid.IntRange(0, 4).Draw(t, "runs"); k > 0; k-- {
				ep += kraft.Epoch(rapid.IntRange(0, 2).Draw(t, "ep step"))
				for j := rapid.IntRange(1, 4).Draw(t, "run len"); j > 0; j-- {
					h.log = append(h.log, ep)
				}
			}
			r := kraft.QuorumRecord{
				Epoch:    ep + kraft.Epoch(rapid.IntRange(0, 2).Draw(t, "rec ep")),
				LeaderID: kraft.NodeID(rapid.IntRange(-1, nv-1).Draw(t, "rec leader")),
				VotedKey: kraft.ReplicaKey{ID: kraft.NodeID(rapid.IntRange(-1, nv-1).Draw(t, "rec vote"))},
			}
			if cfg.Observer && r.VotedKey.ID == cfg.Local.ID {
				r.VotedKey = kraft.NoReplica
			}
			if r.HasVote() {
				h.votes[r.Epoch] = r.VotedKey
			}
			h.rec = &r
			h.maxRec = r.Epoch
		}
		h.start(t)
		n := rapid.IntRange(1, 120).Draw(t, "steps")
		for i := 0; i < n; i++ {
			if h.flush < len(h.log) && rapid.IntRange(0, 3).Draw(t, "flush?") == 0 {
				h.flush = len(h.log)
				h.step(t, kraft.LogFlushed{Offset: int64(h.flush)})
				continue
			}
			if h.pendingLC {
				// the host writes the LeaderChange
				h.pendingLC = false
				h.log = append(h.log[:len(h.log):len(h.log)], h.lcEpoch)
				h.step(t, kraft.LogAppended{End: mLogState(h.log).End})
				continue
			}
			e := h.drawEvent(t)
			if e == nil {
				// crash: the record and the flushed log survive
				st.restarts++
				h.log = h.log[:h.flush:h.flush]
				h.start(t)
				continue
			}
			if h.s.Role() == kraft.Leader && rapid.IntRange(0, 3).Draw(t, "append?") == 0 {
				k := rapid.IntRange(1, 3).Draw(t, "records")
				for j := 0; j < k; j++ {
					h.log = append(h.log[:len(h.log):len(h.log)], h.s.Epoch())
				}
				h.step(t, kraft.LogAppended{End: mLogState(h.log).End})
				continue
			}
			if r, ok := e.(kraft.ReceiveFetchResponse); ok && rapid.IntRange(0, 1).Draw(t, "carries records?") == 1 {
				// The response carries records: appended only if the
				// state asks with AppendFetched (D240), then Then is
				// stepped.
				r.Records = true
				before := h.s
				h.step(t, r)
				st.steps++
				a := h.appendFetched
				h.appendFetched = nil
				if a == nil {
					continue
				}
				if !reflect.DeepEqual(before, h.s) {
					h.fail(t, "AppendFetched %+v with a changed state", *a)
				}
				e = a.Then
				// append fetched records of epochs in [last, response epoch]
				k := rapid.IntRange(1, 3).Draw(t, "frecords")
				last := kraft.Epoch(0)
				if len(h.log) > 0 {
					last = h.log[len(h.log)-1]
				}
				for j := 0; j < k; j++ {
					ep := last + kraft.Epoch(rapid.IntRange(0, int(r.LeaderEpoch-last)).Draw(t, "fep"))
					if r.LeaderEpoch < last {
						ep = last
					}
					last = ep
					from := len(h.log)
					h.log = append(h.log[:len(h.log):len(h.log)], ep)
					_ = from
					h.step(t, kraft.LogAppended{End: mLogState(h.log).End})
				}
			}
			h.step(t, e)
			st.steps++
		}
	}
}

func (h *mHost) step(t *rapid.T, e kraft.Event) {
	s := h.s
	before := fmt.Sprintf("%#v", s)
	next, acts := kraft.Step(s, e)
	if fmt.Sprintf("%#v", s) != before {
		h.fail(t, "Step mutated its input on %T%+v", e, e)
	}
	n2, a2 := kraft.Step(s, e)
	if !reflect.DeepEqual(next, n2) || !reflect.DeepEqual(acts, a2) {
		h.fail(t, "Step not deterministic on %T%+v", e, e)
	}
	h.hist = append(h.hist, fmt.Sprintf("%T%+v -> %v %v", e, e, next, acts))
	for _, a := range acts {
		if _, ok := a.(kraft.Fault); ok {
			if len(acts) != 1 || fmt.Sprintf("%#v", next) != before {
				h.fail(t, "Fault changed state or came with actions")
			}
			mst.faults++
			return // the host would stop; we drop the event
		}
	}
	h.s = next
	h.apply(t, e, acts)
	h.after(t)
}
