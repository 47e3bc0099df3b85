package kraft

import (
	"bytes"
	"math/rand"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// canonicalStates drives a 3-voter cluster with random deliveries, timer
// firings, writes and flushes, and returns every state it passes through,
// by replica.
func canonicalStates(t *testing.T, seed int64, steps int) [][]State {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	type msg struct {
		to NodeID
		e  Event
	}
	var (
		net  []msg
		sts  = make([]State, 3)
		logs = make([][]Epoch, 3)
		out  = make([][]State, 3)
	)
	var carry func(i int, acts []Action)
	stepTo := func(i int, e Event) {
		next, acts := Step(sts[i], e)
		sts[i] = next
		out[i] = append(out[i], next)
		carry(i, acts)
	}
	carry = func(i int, acts []Action) {
		for _, a := range acts {
			switch a := a.(type) {
			case AppendLeaderChange:
				logs[i] = append(logs[i], a.Epoch)
			case TruncateLog:
				if int(a.To) < len(logs[i]) {
					logs[i] = logs[i][:a.To]
				}
			default:
				if to, e, ok := Deliver(sts[i].Local(), a); ok && to >= 0 {
					net = append(net, msg{to, e})
				}
			}
		}
		if n := len(logs[i]); int64(n) > sts[i].LogEnd().Offset {
			stepTo(i, LogAppended{End: LogEnd{Offset: int64(n), Epoch: logs[i][n-1]}})
		}
	}
	for i := range sts {
		s, acts, err := NewState(config(NodeID(i), 0, 1, 2), nil, LogState{})
		require.NoError(t, err)
		sts[i] = s
		out[i] = append(out[i], s)
		carry(i, acts)
	}
	for k := 0; k < steps; k++ {
		i := rng.Intn(3)
		switch r := rng.Intn(10); {
		case r < 5 && len(net) > 0:
			j := rng.Intn(len(net))
			m := net[j]
			net = append(net[:j], net[j+1:]...)
			stepTo(int(m.to), m.e)
		case r < 6:
			stepTo(i, ElectionTimeout{})
		case r < 7:
			stepTo(i, FetchTimeout{})
		case r < 8:
			if sts[i].Role() == Leader {
				logs[i] = append(logs[i], sts[i].Epoch())
				carry(i, nil)
			}
		default:
			stepTo(i, LogFlushed{Offset: int64(len(logs[i]))})
		}
	}
	return out
}

func TestCanonicalEqualIffDeepEqual(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		for _, states := range canonicalStates(t, seed, 400) {
			enc := make([][]byte, len(states))
			for i, s := range states {
				enc[i] = s.AppendCanonical(nil)
				require.Equal(t, enc[i], s.AppendCanonical(nil), "encoding is deterministic")
				require.Equal(t, enc[i], deepCopy(s).AppendCanonical(nil), "a copy encodes equal")
			}
			for i := range states {
				for j := range states {
					same := reflect.DeepEqual(states[i], states[j])
					if same {
						require.Equal(t, enc[i], enc[j], "DeepEqual states %v and %v encode differently", states[i], states[j])
					} else if bytes.Equal(enc[i], enc[j]) {
						// Equal encodings: the states may differ only in
						// a nil versus an empty slice.
						a, b := states[i], states[j]
						a.ends.large, b.ends.large = nil, nil
						require.True(t, reflect.DeepEqual(a, b), "states %v and %v differ but encode equal", states[i], states[j])
						require.Equal(t, states[i].VoterEndOffsets(), states[j].VoterEndOffsets())
					}
				}
			}
		}
	}
}

// TestCanonicalEveryField changes one field at a time of real states (a
// leader's, a candidate's, a follower's) and checks that the encoding
// changes; it fails when State gains a field this list does not know.
func TestCanonicalEveryField(t *testing.T) {
	mutations := map[string]func(s *State){
		"role":           func(s *State) { s.role++ },
		"epoch":          func(s *State) { s.epoch++ },
		"leader":         func(s *State) { s.leader++ },
		"voted":          func(s *State) { s.voted.DirectoryID = uuid.UUID{1} },
		"endpoints":      func(s *State) { s.endpoints = !s.endpoints },
		"hwm":            func(s *State) { s.hwm++ },
		"committed":      func(s *State) { s.committed++ },
		"log":            func(s *State) { s.log.flushed++ },
		"rng":            func(s *State) { s.rng++ },
		"fetched":        func(s *State) { s.fetched = !s.fetched },
		"leaderResigned": func(s *State) { s.leaderResigned = !s.leaderResigned },
		"lowerAsked":     func(s *State) { s.lowerAsked = !s.lowerAsked },
		"fetchPending":   func(s *State) { s.fetchPending = !s.fetchPending },
		"download": func(s *State) {
			if s.download == nil {
				s.download = &snapshotDownload{}
			} else {
				s.download = nil
			}
		},
		"granted":      func(s *State) { s.granted ^= 2 },
		"rejected":     func(s *State) { s.rejected ^= 4 },
		"rival":        func(s *State) { s.rival++ },
		"rivalEpoch":   func(s *State) { s.rivalEpoch++ },
		"rivalOffset":  func(s *State) { s.rivalOffset++ },
		"rivalHeld":    func(s *State) { s.rivalHeld++ },
		"epochStart":   func(s *State) { s.epochStart++ },
		"ends":         func(s *State) { s.ends.small[0]++ },
		"fetchedCheck": func(s *State) { s.fetchedCheck ^= 1 },
		"fetchedBegin": func(s *State) { s.fetchedBegin ^= 1 },
		"joinWait":     func(s *State) { s.joinWait = !s.joinWait },
		"refused":      func(s *State) { s.refused = !s.refused },
		"change": func(s *State) {
			if s.change == nil {
				s.change = &voterChange{}
			} else {
				s.change = nil
			}
		},
	}
	logMutations := []func(s *State){
		func(s *State) { s.log.end.Offset++ },
		func(s *State) { s.log.end.Epoch++ },
		func(s *State) { s.log.flushed++ },
		func(s *State) { h := s.log.history(); h.start++; s.log.withHistory(h) },
		func(s *State) { h := s.log.history(); h.snapshots = !h.snapshots; s.log.withHistory(h) },
		func(s *State) { h := s.log.history(); h.latest.Offset++; s.log.withHistory(h) },
		func(s *State) { h := s.log.history(); h.latest.Epoch++; s.log.withHistory(h) },
		func(s *State) { h := s.log.history(); h.earliest.Offset++; s.log.withHistory(h) },
		func(s *State) { h := s.log.history(); h.earliest.Epoch++; s.log.withHistory(h) },
		func(s *State) { s.download = &snapshotDownload{id: LogEnd{Offset: 1}} },
		func(s *State) { s.download = &snapshotDownload{id: LogEnd{Epoch: 1}} },
		func(s *State) { s.download = &snapshotDownload{written: 1} },
		func(s *State) {
			h := s.log.history()
			h.epochs = append(append([]EpochStart(nil), h.epochs...), EpochStart{Epoch: 9, StartOffset: 9})
			s.log.withHistory(h)
		},
		func(s *State) {
			h := s.log.history()
			h.voters = append(append([]VoterSetAt(nil), h.voters...), VoterSetAt{Offset: 9, Voters: keys(1)})
			s.log.withHistory(h)
		},
		func(s *State) {
			h := s.log.history()
			h.voters = []VoterSetAt{{Offset: 9, Voters: keys(1)}}
			s.log.withHistory(h)
			m := h
			m.voters = []VoterSetAt{{Offset: 9, Voters: []ReplicaKey{{ID: 1, DirectoryID: uuid.UUID{1}}}}}
			*s = deepCopy(*s)
			s.log.withHistory(m)
		},
	}
	// A pending voter change, one field at a time.
	changeMutations := []func(c *voterChange){
		func(c *voterChange) { c.kind++ },
		func(c *voterChange) { c.ref++ },
		func(c *voterChange) { c.from++ },
		func(c *voterChange) { c.key.ID++ },
		func(c *voterChange) { c.key.DirectoryID = uuid.UUID{2} },
		func(c *voterChange) { c.versions.Min++ },
		func(c *voterChange) { c.versions.Max++ },
		func(c *voterChange) { c.stage++ },
		func(c *voterChange) { c.offset++ },
		func(c *voterChange) { c.caughtUp = !c.caughtUp },
		func(c *voterChange) { c.lastEnd++ },
	}
	ct := reflect.TypeOf(voterChange{})
	// Nine fields (key and versions have two parts each), each mutated
	// above.
	require.Equal(t, 9, ct.NumField(), "voterChange gained a field: does the canonical encoding cover it?")
	for i, mutate := range changeMutations {
		base := voterChange{kind: AddVoter, stage: awaitingVersions, offset: -1, lastEnd: -1}
		m := base
		mutate(&m)
		a, b := State{change: &base}, State{change: &m}
		require.NotEqual(t, a.AppendCanonical(nil), b.AppendCanonical(nil), "voter change mutation %d does not change the encoding", i)
	}
	typ := reflect.TypeOf(State{})
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		if name == "c" {
			continue
		}
		_, ok := mutations[name]
		require.True(t, ok, "State field %s has no mutation here: does the canonical encoding cover it?", name)
	}
	require.Len(t, mutations, typ.NumField()-1)
	// The log view's fields, each changed by a log mutation below.
	logFields := map[string]bool{"end": true, "flushed": true, "h": true}
	lt := reflect.TypeOf(logView{})
	for i := 0; i < lt.NumField(); i++ {
		require.True(t, logFields[lt.Field(i).Name], "logView field %s has no log mutation here: does the canonical encoding cover it?", lt.Field(i).Name)
	}
	historyFields := map[string]bool{"epochs": true, "start": true, "snapshots": true, "latest": true, "earliest": true, "voters": true}
	ht := reflect.TypeOf(logHistory{})
	for i := 0; i < ht.NumField(); i++ {
		require.True(t, historyFields[ht.Field(i).Name], "logHistory field %s has no log mutation here: does the canonical encoding cover it?", ht.Field(i).Name)
	}

	roles := map[Role]State{}
	for _, states := range canonicalStates(t, 3, 600) {
		for _, s := range states {
			if _, ok := roles[s.role]; !ok {
				roles[s.role] = s
			}
		}
	}
	require.Contains(t, roles, Leader)
	require.Contains(t, roles, Follower)
	for role, s := range roles {
		base := s.AppendCanonical(nil)
		for name, mutate := range mutations {
			m := deepCopy(s)
			mutate(&m)
			require.NotEqual(t, base, m.AppendCanonical(nil), "%s state: changing %s does not change the encoding", role, name)
			if name != "rng" {
				require.NotEqual(t, s.AppendCanonicalUntimed(nil), m.AppendCanonicalUntimed(nil), "%s state: changing %s does not change the encoding without the PRNG", role, name)
			}
		}
		for i, mutate := range logMutations {
			m := deepCopy(s)
			mutate(&m)
			require.NotEqual(t, base, m.AppendCanonical(nil), "%s state: log mutation %d does not change the encoding", role, i)
		}
		m := deepCopy(s)
		m.rng++
		require.Equal(t, s.AppendCanonicalUntimed(nil), m.AppendCanonicalUntimed(nil))
	}
}
