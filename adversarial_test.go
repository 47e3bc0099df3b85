package kraft_test

// Adversarial sequences at the single-replica level, against the public API
// only. Each test names the rule it tries to break.

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
)

func rk(id kraft.NodeID) kraft.ReplicaKey { return kraft.ReplicaKey{ID: id} }

func rcfg(local kraft.NodeID, voters ...kraft.NodeID) kraft.Config {
	ks := make([]kraft.ReplicaKey, len(voters))
	for i, v := range voters {
		ks[i] = rk(v)
	}
	return kraft.Config{Local: rk(local), Voters: ks, Seed: uint64(local) + 7}
}

// rstep steps and checks purity and determinism.
func rstep(t *testing.T, s kraft.State, e kraft.Event) (kraft.State, []kraft.Action) {
	t.Helper()
	before := kraft.CloneState(s)
	n, a := kraft.Step(s, e)
	if !reflect.DeepEqual(before, s) {
		t.Fatalf("Step mutated its input on %T%+v", e, e)
	}
	n2, a2 := kraft.Step(s, e)
	if !reflect.DeepEqual(n, n2) || !reflect.DeepEqual(a, a2) {
		t.Fatalf("Step not deterministic on %T%+v", e, e)
	}
	return n, a
}

func lastPersist(t *testing.T, acts []kraft.Action) (kraft.QuorumRecord, bool) {
	t.Helper()
	var r kraft.QuorumRecord
	ok := false
	for _, a := range acts {
		if p, is := a.(kraft.Persist); is {
			r, ok = p.Record, true
		}
	}
	return r, ok
}

func voteAnswer(t *testing.T, acts []kraft.Action) (kraft.SendVoteResponse, bool) {
	t.Helper()
	for _, a := range acts {
		if v, ok := a.(kraft.SendVoteResponse); ok {
			return v, true
		}
	}
	return kraft.SendVoteResponse{}, false
}

func std(cand kraft.NodeID, epoch kraft.Epoch, last kraft.LogEnd) kraft.ReceiveVoteRequest {
	return kraft.ReceiveVoteRequest{From: cand, VoterID: kraft.NoNode, CandidateEpoch: epoch, Candidate: cand, CandidateLogEnd: last}
}

func pre(cand kraft.NodeID, epoch kraft.Epoch, last kraft.LogEnd) kraft.ReceiveVoteRequest {
	r := std(cand, epoch, last)
	r.PreVote = true
	return r
}

func mustNew(t *testing.T, cfg kraft.Config, rec *kraft.QuorumRecord, ls kraft.LogState) (kraft.State, []kraft.Action) {
	t.Helper()
	s, a, err := kraft.NewState(cfg, rec, ls)
	if err != nil {
		t.Fatal(err)
	}
	return s, a
}

// restartFrom rebuilds from the last persisted record seen in acts (or rec).
func restartFrom(t *testing.T, cfg kraft.Config, rec kraft.QuorumRecord, ls kraft.LogState) kraft.State {
	t.Helper()
	s, acts := mustNew(t, cfg, &rec, ls)
	if r, ok := lastPersist(t, acts); !ok || r != rec && r.Epoch == rec.Epoch && r.VotedKey != rec.VotedKey && r.LeaderID != rec.LeaderID {
		t.Fatalf("restart did not write back %+v: %+v", rec, acts)
	}
	return s
}

// 1. Double vote in one epoch across restarts, in every way the vote can be
// recorded: Unattached, Prospective, Candidate (self-vote), Follower keeping
// the vote, and after a Candidate lost and went back to Prospective and
// Unattached.
func TestNoDoubleVoteAcrossRestarts(t *testing.T) {
	cfg := rcfg(1, 1, 2, 3)
	ls := kraft.LogState{}
	up := kraft.LogEnd{Offset: 5, Epoch: 1}

	type path struct {
		name string
		run  func(t *testing.T) (kraft.State, kraft.QuorumRecord, kraft.ReplicaKey)
	}
	paths := []path{
		{"unattached grants", func(t *testing.T) (kraft.State, kraft.QuorumRecord, kraft.ReplicaKey) {
			s, _ := mustNew(t, cfg, nil, ls)
			s, a := rstep(t, s, std(2, 5, up))
			r, _ := lastPersist(t, a)
			return s, r, rk(2)
		}},
		{"prospective grants", func(t *testing.T) (kraft.State, kraft.QuorumRecord, kraft.ReplicaKey) {
			s, _ := mustNew(t, cfg, nil, ls)
			s, _ = rstep(t, s, kraft.ReceiveLeaderlessEpoch{From: 2, Epoch: 5})
			s, _ = rstep(t, s, kraft.ElectionTimeout{})
			if s.Role() != kraft.Prospective {
				t.Fatalf("want Prospective, got %v", s)
			}
			s, a := rstep(t, s, std(2, 5, up))
			r, _ := lastPersist(t, a)
			return s, r, rk(2)
		}},
		{"candidate self-vote", func(t *testing.T) (kraft.State, kraft.QuorumRecord, kraft.ReplicaKey) {
			s, _ := mustNew(t, cfg, nil, ls)
			s, _ = rstep(t, s, kraft.ReceiveLeaderlessEpoch{From: 2, Epoch: 4})
			s, _ = rstep(t, s, kraft.ElectionTimeout{})
			s, a := rstep(t, s, kraft.ReceiveVoteResponse{From: 2, Epoch: 4, VoteGranted: true, LeaderID: kraft.NoNode})
			if s.Role() != kraft.Candidate || s.Epoch() != 5 {
				t.Fatalf("want Candidate(5), got %v", s)
			}
			r, _ := lastPersist(t, a)
			return s, r, rk(1)
		}},
		{"follower keeps vote", func(t *testing.T) (kraft.State, kraft.QuorumRecord, kraft.ReplicaKey) {
			s, _ := mustNew(t, cfg, nil, ls)
			s, _ = rstep(t, s, std(2, 5, up))
			s, a := rstep(t, s, kraft.ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 5, VoterID: kraft.NoNode})
			r, _ := lastPersist(t, a)
			return s, r, rk(2)
		}},
		{"candidate lost, back to unattached", func(t *testing.T) (kraft.State, kraft.QuorumRecord, kraft.ReplicaKey) {
			s, _ := mustNew(t, cfg, nil, ls)
			s, _ = rstep(t, s, kraft.ReceiveLeaderlessEpoch{From: 2, Epoch: 4})
			s, _ = rstep(t, s, kraft.ElectionTimeout{})
			s, a := rstep(t, s, kraft.ReceiveVoteResponse{From: 2, Epoch: 4, VoteGranted: true, LeaderID: kraft.NoNode})
			r, _ := lastPersist(t, a)
			s, _ = rstep(t, s, kraft.ElectionTimeout{}) // Candidate -> Prospective(5)
			s, _ = rstep(t, s, kraft.ReceiveVoteResponse{From: 2, Epoch: 5, VoteGranted: false, LeaderID: kraft.NoNode})
			s, _ = rstep(t, s, kraft.ReceiveVoteResponse{From: 3, Epoch: 5, VoteGranted: false, LeaderID: kraft.NoNode})
			if s.Role() != kraft.Unattached || s.Epoch() != 5 {
				t.Fatalf("want Unattached(5), got %v", s)
			}
			return s, r, rk(1)
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			s, rec, voted := p.run(t)
			if v, ok := s.VotedKey(); !ok || v != voted {
				t.Fatalf("state %v: vote %v, want %v", s, v, voted)
			}
			if rec.VotedKey != voted || rec.Epoch != 5 {
				t.Fatalf("persisted %+v, want a vote for %v in 5", rec, voted)
			}
			// Before and after a restart: no other candidate gets a standard
			// vote in epoch 5, however up to date.
			for _, st := range []kraft.State{s, restartFrom(t, cfg, rec, ls)} {
				for _, other := range []kraft.NodeID{2, 3, 4, 1} {
					if other == voted.ID {
						continue
					}
					for _, last := range []kraft.LogEnd{up, {Offset: 100, Epoch: 4}} {
						_, a := rstep(t, st, std(other, 5, last))
						if v, ok := voteAnswer(t, a); ok && v.VoteGranted {
							t.Fatalf("%v granted a second vote in epoch 5 to %d (first %v)", st, other, voted)
						}
					}
				}
			}
		})
	}
}

// 2. Granting a standard vote to a stale log, per role that can grant, and
// for pre-votes: the comparison is (epoch, offset) against the local log.
func TestNoVoteForStaleLog(t *testing.T) {
	cfg := rcfg(1, 1, 2, 3)
	ls := kraft.LogState{End: kraft.LogEnd{Offset: 10, Epoch: 3}, Epochs: []kraft.EpochStart{{Epoch: 1}, {Epoch: 3, StartOffset: 6}}}
	stale := []kraft.LogEnd{{Offset: 9, Epoch: 3}, {Offset: 50, Epoch: 2}, {Offset: 0, Epoch: 0}, {Offset: 10, Epoch: 1}}
	rec := kraft.QuorumRecord{Epoch: 4, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}
	s0, _ := mustNew(t, cfg, &rec, ls)
	pros, _ := rstep(t, s0, kraft.ElectionTimeout{})
	for _, s := range []kraft.State{s0, pros} {
		for _, last := range stale {
			for _, epoch := range []kraft.Epoch{4, 5, 9} {
				for _, isPre := range []bool{false, true} {
					req := std(2, epoch, last)
					req.PreVote = isPre
					_, a := rstep(t, s, req)
					if v, ok := voteAnswer(t, a); ok && v.VoteGranted {
						t.Fatalf("%v granted (pre=%v) epoch %d to stale log %+v (local %+v)", s, isPre, epoch, last, s.LogEnd())
					}
				}
			}
		}
	}
}

// 3a. A leader never commits an older-epoch record by counting replicas: the
// high watermark waits for a record of its own epoch on a majority.
func TestLeaderDoesNotCommitOlderEpochByCounting(t *testing.T) {
	cfg := rcfg(1, 1, 2, 3)
	ls := kraft.LogState{End: kraft.LogEnd{Offset: 10, Epoch: 2}, Epochs: []kraft.EpochStart{{Epoch: 1}, {Epoch: 2, StartOffset: 5}}}
	rec := kraft.QuorumRecord{Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}
	s, _ := mustNew(t, cfg, &rec, ls)
	s, _ = rstep(t, s, kraft.ElectionTimeout{})
	s, _ = rstep(t, s, kraft.ReceiveVoteResponse{From: 2, Epoch: 2, VoteGranted: true, LeaderID: kraft.NoNode})
	s, _ = rstep(t, s, kraft.ReceiveVoteResponse{From: 2, Epoch: 3, VoteGranted: true, LeaderID: kraft.NoNode})
	if s.Role() != kraft.Leader || s.Epoch() != 3 {
		t.Fatalf("want Leader(3), got %v", s)
	}
	for _, f := range []kraft.ReceiveFetch{
		{From: 2, CurrentLeaderEpoch: 3, FetchEpoch: 2, FetchOffset: 10},
		{From: 3, CurrentLeaderEpoch: 3, FetchEpoch: 2, FetchOffset: 10},
		{From: 3, CurrentLeaderEpoch: 3, FetchEpoch: 2, FetchOffset: 8},
	} {
		var a []kraft.Action
		s, a = rstep(t, s, f)
		for _, x := range a {
			if h, ok := x.(kraft.HighWatermarkChanged); ok {
				t.Fatalf("leader of 3 committed %d with only epoch-2 records replicated", h.HighWatermark)
			}
		}
	}
	if s.HighWatermark() != -1 {
		t.Fatalf("hwm %d", s.HighWatermark())
	}
	s, _ = rstep(t, s, kraft.LogAppended{End: kraft.LogEnd{Offset: 11, Epoch: 3}})
	s, _ = rstep(t, s, kraft.LogFlushed{Offset: 11})
	if s.HighWatermark() != -1 {
		t.Fatalf("leader alone committed its own record: hwm %d", s.HighWatermark())
	}
	s, a := rstep(t, s, kraft.ReceiveFetch{From: 2, CurrentLeaderEpoch: 3, FetchEpoch: 3, FetchOffset: 11})
	if s.HighWatermark() != 11 || len(a) == 0 {
		t.Fatalf("hwm %d after a majority holds the epoch-3 record", s.HighWatermark())
	}
}

// 3b. A leader writes only records of its own epoch past its epoch start.
// A report of an older-epoch write there (a host that kept a former
// leadership's tail unreported, or appended the LeaderChange somewhere
// else than the written end) is a Fault with the state unchanged: taking
// it would let the high watermark end in an older-epoch record that no
// record of the leader's epoch protects (Raft figure 8).
// Reference: docs/design.md D30.
func TestLeaderFaultsOnOlderEpochWritePastEpochStart(t *testing.T) {
	cfg := rcfg(1, 1, 2, 3)
	ls := kraft.LogState{End: kraft.LogEnd{Offset: 10, Epoch: 2}, Epochs: []kraft.EpochStart{{Epoch: 1}, {Epoch: 2, StartOffset: 5}}}
	rec := kraft.QuorumRecord{Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}
	s, _ := mustNew(t, cfg, &rec, ls)
	s, _ = rstep(t, s, kraft.ElectionTimeout{})
	s, _ = rstep(t, s, kraft.ReceiveVoteResponse{From: 2, Epoch: 2, VoteGranted: true, LeaderID: kraft.NoNode})
	s, _ = rstep(t, s, kraft.ReceiveVoteResponse{From: 2, Epoch: 3, VoteGranted: true, LeaderID: kraft.NoNode})
	if s.Role() != kraft.Leader {
		t.Fatalf("not leader: %v", s)
	}
	// The host reports epoch-2 records past the epoch start 10.
	n, a := rstep(t, s, kraft.LogAppended{End: kraft.LogEnd{Offset: 20, Epoch: 2}})
	if len(a) != 1 || !reflect.DeepEqual(n, s) {
		t.Fatalf("want a lone Fault and the state unchanged, got %v -> %v %v", s, n, a)
	}
	if _, ok := a[0].(kraft.Fault); !ok {
		t.Fatalf("want a Fault, got %v", a)
	}
	// The honest sequence: the LeaderChange at 10, flushed, then a voter
	// fetching past it commits through it, never through an epoch-2 record.
	s, _ = rstep(t, s, kraft.LogAppended{End: kraft.LogEnd{Offset: 11, Epoch: 3}})
	s, _ = rstep(t, s, kraft.LogFlushed{Offset: 11})
	s, a = rstep(t, s, kraft.ReceiveFetch{From: 2, CurrentLeaderEpoch: 3, FetchEpoch: 2, FetchOffset: 10})
	for _, x := range a {
		if h, ok := x.(kraft.HighWatermarkChanged); ok {
			t.Fatalf("committed %d with no epoch-3 record on a majority", h.HighWatermark)
		}
	}
	_, a = rstep(t, s, kraft.ReceiveFetch{From: 2, CurrentLeaderEpoch: 3, FetchEpoch: 3, FetchOffset: 11})
	var got []kraft.HighWatermarkChanged
	for _, x := range a {
		if h, ok := x.(kraft.HighWatermarkChanged); ok {
			got = append(got, h)
		}
	}
	if !reflect.DeepEqual(got, []kraft.HighWatermarkChanged{{HighWatermark: 11}}) {
		t.Fatalf("want the high watermark at 11, got %v", a)
	}
}

// 4. Truncation below the high watermark never happens, by the diverging
// offset and by the local truncation point, and also for a former leader
// whose own high watermark was reset: the follower refuses the leader
// (docs/design.md D113).
func TestNoTruncationBelowHighWatermark(t *testing.T) {
	cfg := rcfg(1, 1, 2, 3)
	ls := kraft.LogState{End: kraft.LogEnd{Offset: 10, Epoch: 2}, Epochs: []kraft.EpochStart{{Epoch: 1}, {Epoch: 2, StartOffset: 3}}}
	rec := kraft.QuorumRecord{Epoch: 2, LeaderID: 2, VotedKey: kraft.NoReplica}
	s, _ := mustNew(t, cfg, &rec, ls)
	s, _ = rstep(t, s, kraft.ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: 8})
	if s.HighWatermark() != 8 {
		t.Fatalf("hwm %d", s.HighWatermark())
	}
	for _, d := range []kraft.LogOffsetMetadata{{Offset: 5, Epoch: 2}, {Offset: 9, Epoch: 1}, {Offset: 0, Epoch: 0}, {Offset: 7, Epoch: 2}} {
		n, a := rstep(t, s, kraft.ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: 8, Diverging: &d})
		for _, x := range a {
			if tr, ok := x.(kraft.TruncateLog); ok && tr.To < 8 {
				t.Fatalf("truncated to %d below hwm 8 on diverging %+v", tr.To, d)
			}
		}
		if n.LogEnd().Offset < 8 {
			t.Fatalf("log end %d below hwm 8", n.LogEnd().Offset)
		}
	}
}

// 5. A Fault never changes the state (a message naming a second leader of
// the epoch, a response calling a request invalid), also with StepInto's
// buffer. (An observer attaching to a leader that asks it to truncate below
// its high watermark refuses it instead: D113, follower_test.go.)
func TestFaultLeavesWholeStateUnchanged(t *testing.T) {
	cfg := kraft.Config{Local: rk(4), Observer: true, Voters: []kraft.ReplicaKey{rk(1), rk(2), rk(3)}, Seed: 9}
	ls := kraft.LogState{End: kraft.LogEnd{Offset: 10, Epoch: 2}, Epochs: []kraft.EpochStart{{Epoch: 1}, {Epoch: 2, StartOffset: 4}}}
	rec := kraft.QuorumRecord{Epoch: 2, LeaderID: 1, VotedKey: kraft.NoReplica}
	s, _ := mustNew(t, cfg, &rec, ls)
	s, _ = rstep(t, s, kraft.ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 2, HighWatermark: 9})
	s, _ = rstep(t, s, kraft.FetchTimeout{}) // observer -> Unattached, leader kept
	if s.Role() != kraft.Unattached || s.HighWatermark() != 9 {
		t.Fatalf("got %v", s)
	}
	cases := []kraft.Event{
		kraft.ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 2, Diverging: &kraft.LogOffsetMetadata{Offset: 3, Epoch: 1}},
		kraft.ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2},
		kraft.ReceiveBeginQuorumEpoch{From: 3, LeaderID: 3, LeaderEpoch: 2, VoterID: kraft.NoNode},
		kraft.ReceiveBeginQuorumEpoch{From: 3, LeaderID: 4, LeaderEpoch: 7, VoterID: kraft.NoNode},
		kraft.ReceiveVoteResponse{From: 2, Error: kraft.ErrInvalidRequest, Epoch: 2, LeaderID: kraft.NoNode},
	}
	for _, e := range cases {
		before := kraft.CloneState(s)
		n, a := rstep(t, s, e)
		isFault := len(a) > 0
		for _, x := range a {
			if _, ok := x.(kraft.Fault); !ok {
				isFault = false
			}
		}
		if !isFault {
			t.Logf("no fault for %T%+v: %v", e, e, a)
			continue
		}
		if len(a) != 1 || !reflect.DeepEqual(n, before) {
			t.Fatalf("Fault changed the state or came with other actions on %T%+v: %v -> %v %v", e, e, s, n, a)
		}
		var buf kraft.Buffer
		kraft.StepInto(&buf, s, kraft.ElectionTimeout{})
		n2, a2 := kraft.StepInto(&buf, s, e)
		if len(a2) != 1 || !reflect.DeepEqual(a2, a) || !reflect.DeepEqual(n2, before) {
			t.Fatalf("StepInto fault: %v", a2)
		}
	}
}

// 6. A response whose records the state takes leaves the state as it was
// (PRNG included): the one action is AppendFetched (D240).
func TestAppendFetchedLeavesTheStateAsItWas(t *testing.T) {
	cfg := kraft.Config{Local: rk(4), Observer: true, Voters: []kraft.ReplicaKey{rk(1), rk(2), rk(3)}, Seed: 9}
	s, _ := mustNew(t, cfg, nil, kraft.LogState{})
	before := kraft.CloneState(s)
	r := kraft.ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 0, HighWatermark: 0, Records: true}
	next, acts := kraft.Step(s, r)
	if !reflect.DeepEqual(before, s) {
		t.Fatalf("Step mutated the state")
	}
	if !reflect.DeepEqual(next, s) || len(acts) != 1 {
		t.Fatalf("AppendFetched step changed the state or came with more actions: %v", acts)
	}
	if _, ok := acts[0].(kraft.AppendFetched); !ok {
		t.Fatalf("not AppendFetched: %v", acts)
	}
	// Stepping after it gives the same as without it.
	a1, x1 := kraft.Step(s, kraft.ElectionTimeout{})
	a2, x2 := kraft.Step(next, kraft.ElectionTimeout{})
	if !reflect.DeepEqual(a1, a2) || !reflect.DeepEqual(x1, x2) {
		t.Fatalf("AppendFetched step changed later steps")
	}
}

// 7. KIP-853: a vote recorded for (2, dirA) is never re-granted to (2, dirB)
// (a different replica with the same id), before or after a restart; and a
// vote request addressed to our id with another directory id is refused.
func TestDirectoryIDVoteMatching(t *testing.T) {
	dirA := uuid.MustParse("00000000-0000-0000-0000-00000000000a")
	dirB := uuid.MustParse("00000000-0000-0000-0000-00000000000b")
	cfg := kraft.Config{
		Local:  kraft.ReplicaKey{ID: 1, DirectoryID: dirA},
		Voters: []kraft.ReplicaKey{{ID: 1, DirectoryID: dirA}, {ID: 2, DirectoryID: dirA}, {ID: 3, DirectoryID: dirA}}, Seed: 1,
	}
	s, _ := mustNew(t, cfg, nil, kraft.LogState{})
	req := std(2, 5, kraft.LogEnd{})
	req.CandidateDirectoryID = dirA
	s, a := rstep(t, s, req)
	rec, _ := lastPersist(t, a)
	if v, _ := voteAnswer(t, a); !v.VoteGranted || rec.VotedKey != (kraft.ReplicaKey{ID: 2, DirectoryID: dirA}) {
		t.Fatalf("first vote: %v %+v", a, rec)
	}
	other := req
	other.CandidateDirectoryID = dirB
	for _, st := range []kraft.State{s, restartFrom(t, cfg, rec, kraft.LogState{})} {
		_, a := rstep(t, st, other)
		if v, _ := voteAnswer(t, a); v.VoteGranted {
			t.Fatalf("%v re-granted its vote for 2/%v to 2/%v", st, dirA, dirB)
		}
	}
	wrong := std(3, 6, kraft.LogEnd{})
	wrong.VoterID, wrong.VoterDirectoryID = 1, dirB
	_, a = rstep(t, s, wrong)
	if v, _ := voteAnswer(t, a); v.VoteGranted || v.Error != kraft.ErrInvalidVoterKey {
		t.Fatalf("request addressed to 1/%v answered %+v", dirB, v)
	}
}

// 8. KIP-853 disk replacement: a former leader that lost its disk comes
// back with a new directory id, so it is an observer. The voters still name
// its id leader of its old epoch in their Fetch answers; the observer takes
// that epoch as leaderless and keeps searching, instead of faulting (Kafka
// would fail on it; docs/design.md D31).
func TestObserverWithReplacedDiskIgnoresItsOldLeadership(t *testing.T) {
	dirOld := uuid.MustParse("00000000-0000-0000-0000-0000000000a1")
	dirNew := uuid.MustParse("00000000-0000-0000-0000-0000000000a2")
	cfg := kraft.Config{
		Local: kraft.ReplicaKey{ID: 3, DirectoryID: dirNew}, Observer: true,
		Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3, DirectoryID: dirOld}}, Seed: 1,
	}
	s, acts := mustNew(t, cfg, nil, kraft.LogState{})
	var f kraft.SendFetch
	for _, a := range acts {
		if x, ok := a.(kraft.SendFetch); ok {
			f = x
		}
	}
	if f.To != kraft.NoNode || s.IsVoter() {
		t.Fatalf("expected an observer searching for the leader: %v %v", s, acts)
	}
	// Voter 1 is still Follower/Prospective of 3 in epoch 4.
	n, a := rstep(t, s, kraft.ReceiveFetchResponse{From: 1, Error: kraft.ErrNotLeaderOrFollower, LeaderID: 3, LeaderEpoch: 4, HighWatermark: -1})
	for _, x := range a {
		if f, ok := x.(kraft.Fault); ok {
			t.Fatalf("observer with a replaced disk faults: %s", f.Reason)
		}
	}
	if n.Role() != kraft.Unattached || n.Epoch() != 4 || n.Leader() != kraft.NoNode {
		t.Fatalf("want Unattached in epoch 4 with no leader, got %v", n)
	}
}

// 9. Timers: after any transition, the role's timers are armed. A voter in
// Unattached reached through "keep the remaining time" must have had an
// election timer running. Walk every role into Unattached through a
// higher-epoch vote request and check some election timer is pending
// (host-model: armed and not stopped since).
func TestUnattachedVoterAlwaysHasElectionTimer(t *testing.T) {
	cfg := rcfg(1, 1, 2, 3)
	type host struct{ armed map[kraft.Timer]bool }
	apply := func(h *host, acts []kraft.Action) {
		for _, a := range acts {
			switch x := a.(type) {
			case kraft.ResetTimer:
				h.armed[x.Timer] = true
			case kraft.StopTimer:
				delete(h.armed, x.Timer)
			}
		}
	}
	fire := func(h *host, t kraft.Timer) { delete(h.armed, t) }
	s, acts := mustNew(t, cfg, nil, kraft.LogState{})
	h := &host{armed: map[kraft.Timer]bool{}}
	apply(h, acts)
	// Walk: Unattached -> Prospective -> Candidate -> Leader -> (vote req
	// newer) Unattached -> Prospective (timeout) -> Unattached(timeout) ...
	seq := []kraft.Event{
		kraft.ElectionTimeout{},
		kraft.ReceiveVoteResponse{From: 2, Epoch: 0, VoteGranted: true, LeaderID: kraft.NoNode},
		kraft.ReceiveVoteResponse{From: 2, Epoch: 1, VoteGranted: true, LeaderID: kraft.NoNode},
		pre(3, 5, kraft.LogEnd{Offset: 0, Epoch: 0}), // leader -> Unattached(5)
		kraft.ElectionTimeout{}, // -> Prospective(5)
		kraft.ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 6, VoterID: kraft.NoNode},
		kraft.FetchTimeout{}, // Follower -> Prospective(6)
		kraft.ReceiveVoteResponse{From: 2, Epoch: 6, VoteGranted: false, LeaderID: kraft.NoNode},
		kraft.ReceiveVoteResponse{From: 3, Epoch: 6, VoteGranted: false, LeaderID: kraft.NoNode}, // lost -> Follower(6,2)
		std(3, 7, kraft.LogEnd{}), // Follower -> Unattached(7), grant
		kraft.ElectionTimeout{},   // -> Prospective(7)
		kraft.ElectionTimeout{},   // -> Unattached(7) timer 0
		kraft.ElectionTimeout{},   // -> Prospective(7)
		kraft.ReceiveVoteResponse{From: 2, Epoch: 7, VoteGranted: true, LeaderID: kraft.NoNode},
		kraft.ElectionTimeout{}, // Candidate(8) -> Prospective(8)
		kraft.ReceiveLeaderlessEpoch{From: 2, Epoch: 9},
	}
	for i, e := range seq {
		switch e.(type) {
		case kraft.ElectionTimeout:
			fire(h, kraft.ElectionTimer)
		case kraft.FetchTimeout:
			fire(h, kraft.FetchTimer)
		}
		s, acts = rstep(t, s, e)
		apply(h, acts)
		switch s.Role() {
		case kraft.Unattached, kraft.Prospective, kraft.Candidate, kraft.Resigned:
			if !h.armed[kraft.ElectionTimer] {
				t.Fatalf("step %d (%T): %v has no election timer armed", i, e, s)
			}
		case kraft.Follower:
			if !h.armed[kraft.FetchTimer] {
				t.Fatalf("step %d: %v has no fetch timer", i, s)
			}
		case kraft.Leader:
			if !h.armed[kraft.CheckQuorumTimer] {
				t.Fatalf("step %d: %v has no check-quorum timer", i, s)
			}
		}
	}
	_ = time.Second
}
