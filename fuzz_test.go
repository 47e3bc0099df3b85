package kraft_test

import (
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft"
	"pgregory.net/rapid"
)

// FuzzStep: sequences of arbitrary events (genEvent) on a fresh replica of a
// 1-5 voter cluster, or on an observer, never make Step panic, never change
// its input state, always give the same answer, never lower the epoch, and
// never send a message of a newer epoch (or a granted vote) before the
// Persist that records it. A Fault leaves the state unchanged.
//
// Run with: go test -run '^$' -fuzz FuzzStep -fuzztime 60s .
// Without -fuzz, `go test` runs the seed corpus below.
func FuzzStep(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 0, 0, 0, 0, 0, 0, 0},
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		{0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 0x80, 0x40, 0x20, 0x10},
		[]byte("kraft: vote, fetch, resign, truncate, fault"),
	} {
		f.Add(seed)
	}
	f.Fuzz(rapid.MakeFuzz(fuzzBody))
}

func fuzzBody(t *rapid.T) {
	voters := rapid.IntRange(1, 5).Draw(t, "voters")
	keys := make([]kraft.ReplicaKey, voters)
	for i := range keys {
		keys[i] = kraft.ReplicaKey{ID: kraft.NodeID(i)}
	}
	observer := rapid.Bool().Draw(t, "observer")
	cfg := kraft.Config{Local: kraft.ReplicaKey{ID: 0}, Voters: keys, Seed: rapid.Uint64().Draw(t, "seed")}
	if observer {
		cfg.Local, cfg.Observer = kraft.ReplicaKey{ID: kraft.NodeID(voters)}, true
	}
	s, _, err := kraft.NewState(cfg, nil, kraft.LogState{})
	if err != nil {
		t.Fatalf("NewState: %v", err)
	}
	n := rapid.IntRange(1, 60).Draw(t, "events")
	for i := 0; i < n; i++ {
		e := genEvent.Draw(t, "event")
		next, acts := stepChecked(t, s, e)
		checkStepLocally(t, s, e, next, acts)
		s = next
	}
}

// checkStepLocally checks what one step alone must respect.
func checkStepLocally(t *rapid.T, s kraft.State, e kraft.Event, next kraft.State, acts []kraft.Action) {
	if next.Epoch() < s.Epoch() {
		t.Fatalf("epoch went down from %d to %d on %T%+v", s.Epoch(), next.Epoch(), e, e)
	}
	persisted := s.Record()
	for _, a := range acts {
		var epoch kraft.Epoch
		switch a := a.(type) {
		case kraft.Fault:
			if len(acts) != 1 || !sameState(s, next) {
				t.Fatalf("a Fault must come alone with the state unchanged: %+v", acts)
			}
			return
		case kraft.Persist:
			if a.Record.Epoch < persisted.Epoch {
				t.Fatalf("persisted epoch went down from %d to %d", persisted.Epoch, a.Record.Epoch)
			}
			persisted = a.Record
			continue
		case kraft.SendVoteResponse:
			if req, ok := e.(kraft.ReceiveVoteRequest); ok && a.VoteGranted && !req.PreVote &&
				(persisted.Epoch != a.Epoch || persisted.VotedKey.ID != req.Candidate) {
				t.Fatalf("vote granted to %d in epoch %d before it was persisted (record %+v)", req.Candidate, a.Epoch, persisted)
			}
			epoch = a.Epoch
		case kraft.SendVoteRequest:
			epoch = a.CandidateEpoch
		case kraft.SendBeginQuorumEpoch:
			epoch = a.Epoch
		case kraft.SendEndQuorumEpoch:
			epoch = a.Epoch
		case kraft.SendFetch:
			epoch = a.CurrentLeaderEpoch
		case kraft.SendFetchResponse:
			epoch = a.Epoch
		case kraft.SendFetchSnapshot:
			epoch = a.CurrentLeaderEpoch
		case kraft.SendFetchSnapshotResponse:
			epoch = a.Epoch
		default:
			continue
		}
		if epoch > persisted.Epoch {
			t.Fatalf("%T of epoch %d sent before the epoch was persisted (record %+v)", a, epoch, persisted)
		}
	}
	if next.Record() != persisted {
		t.Fatalf("state record %+v, but the last Persist of the step left %+v (after %T%+v)", next.Record(), persisted, e, e)
	}
}

// sameState compares whole states, every field and every slice they hold
// (not their printed forms, which leave fields out).
func sameState(a, b kraft.State) bool {
	return reflect.DeepEqual(a, b)
}
