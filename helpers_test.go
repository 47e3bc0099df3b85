package kraft

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// Shared test helpers. States are built by stepping real events, never by
// setting fields.

// Test durations: T_e = 1s, T_f = 2s, B_max = 1s (Kafka's defaults).
const (
	testTe = time.Second
	testTf = 2 * time.Second
)

// keys returns voter keys for the given ids, without directory ids.
func keys(ids ...NodeID) []ReplicaKey {
	out := make([]ReplicaKey, len(ids))
	for i, id := range ids {
		out[i] = ReplicaKey{ID: id}
	}
	return out
}

// config is a Config for local among voters. The scenario tests check
// Kafka's exact rules, so it runs failovers as Kafka does (D39 has tests of
// its own).
func config(local NodeID, voters ...NodeID) Config {
	return Config{Local: ReplicaKey{ID: local}, Voters: keys(voters...), Seed: uint64(local) + 1, KafkaFailover: true}
}

// observerConfig is a Config for an observer with id local.
func observerConfig(local NodeID, voters ...NodeID) Config {
	return Config{Local: ReplicaKey{ID: local}, Observer: true, Voters: keys(voters...), Seed: uint64(local) + 100}
}

// start builds a fresh replica (no record, empty log).
func start(t *testing.T, cfg Config) State {
	t.Helper()
	s, _, err := NewState(cfg, nil, LogState{})
	require.NoError(t, err)
	return s
}

// restart builds a replica from a record and a log.
func restart(t *testing.T, cfg Config, rec QuorumRecord, log LogState) (State, []Action) {
	t.Helper()
	s, acts, err := NewState(cfg, &rec, log)
	require.NoError(t, err)
	return s, acts
}

// step steps s with e and checks that s itself did not change.
func step(t *testing.T, s State, e Event) (State, []Action) {
	t.Helper()
	before := deepCopy(s)
	next, acts := Step(s, e)
	require.True(t, reflect.DeepEqual(before, s), "Step mutated its input state")
	again, acts2 := Step(s, e)
	require.Equal(t, next, again, "Step is not deterministic")
	require.Equal(t, acts, acts2, "Step is not deterministic")
	return next, acts
}

// deepCopy copies every slice a State refers to, so that a later in-place
// write into a shared slice shows up as a difference. A nil slice stays nil
// and an empty one empty (reflect.DeepEqual tells them apart).
func deepCopy(s State) State {
	c := s
	c.ends = cloneSlice(s.ends)
	c.log.epochs = cloneSlice(s.log.epochs)
	if s.c != nil {
		cc := *s.c
		cc.voters = cloneSlice(s.c.voters)
		c.c = &cc
	}
	return c
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// ofType returns the actions of type T, in order.
func ofType[T Action](acts []Action) []T {
	var out []T
	for _, a := range acts {
		if x, ok := a.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

var dirA = uuid.MustParse("00000000-0000-0000-0000-00000000000a")

// durable reports a write that ends at end and its flush, as a host that
// flushes at once does: LogAppended, then LogFlushed. The actions of both
// steps are returned in order.
func durable(t *testing.T, s State, end LogEnd) (State, []Action) {
	t.Helper()
	s, acts := step(t, s, LogAppended{End: end})
	s, more := step(t, s, LogFlushed{Offset: end.Offset})
	return s, append(acts, more...)
}
