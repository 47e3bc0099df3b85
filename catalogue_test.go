package kraft

import (
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft/internal/catalogue"
	"github.com/stretchr/testify/require"
)

// The catalogue tests: every event and action type the package defines,
// read from its source (an isEvent or isAction method), is handled where
// the package must handle it. Adding a type without its handling fails one
// of them; docs/design.md ("Adding an RPC") lists the places.

func loadCatalogue(t *testing.T) catalogue.Catalogue {
	t.Helper()
	c, err := catalogue.Load(".")
	require.NoError(t, err)
	return c
}

// eventSource says where each event comes from, which says where it must
// be handled beyond Step:
//   - timer: a Timer's Timeout (the host arms it from ResetTimer);
//   - delivered: Deliver makes it from a message action of a peer;
//   - hostMessage: a message the host builds itself, not from a peer's
//     action (a response to a request the host sent, or a request the
//     host's API takes);
//   - hostReport: the host reports its own I/O;
//   - hostRequest: the host's user asks for something.
var eventSource = map[string]string{
	"ElectionTimeout":         "timer",
	"FetchTimeout":            "timer",
	"CheckQuorumTimeout":      "timer",
	"BeginQuorumEpochTimeout": "timer",
	"VoterChangeTimeout":      "timer",

	"ReceiveVoteRequest":           "delivered",
	"ReceiveVoteResponse":          "delivered",
	"ReceiveBeginQuorumEpoch":      "delivered",
	"ReceiveEndQuorumEpoch":        "delivered",
	"ReceiveFetch":                 "delivered",
	"ReceiveFetchResponse":         "delivered",
	"ReceiveFetchSnapshot":         "delivered",
	"ReceiveFetchSnapshotResponse": "delivered",
	"ReceiveQuorumResponse":        "delivered",
	"ReceiveAddVoter":              "delivered",
	"ReceiveRemoveVoter":           "delivered",

	// The leaderless case of a response (D28), kept for older hosts.
	"ReceiveLeaderlessEpoch": "hostMessage",
	// The answer to SendAPIVersions, which the addressee's host answers.
	"ReceiveAPIVersionsResponse": "hostMessage",
	// An admin's request; replicas do not send it to each other.
	"ReceiveUpdateVoter": "hostMessage",

	"LogAppended":     "hostReport",
	"LogFlushed":      "hostReport",
	"SnapshotCreated": "hostReport",
	"LogStartMoved":   "hostReport",
	"VotersAppended":  "hostReport",

	"Resign": "hostRequest",
}

// TestCatalogueIsSealed: Event and Action have one unexported marker
// method each, so only this package's types implement them, and the
// catalogue read from the source is every one of them.
func TestCatalogueIsSealed(t *testing.T) {
	for _, it := range []reflect.Type{reflect.TypeOf((*Event)(nil)).Elem(), reflect.TypeOf((*Action)(nil)).Elem()} {
		require.Equal(t, 1, it.NumMethod(), "%v", it)
		require.NotEmpty(t, it.Method(0).PkgPath, "%v's method is exported: other packages could implement it", it)
	}
	c := loadCatalogue(t)
	require.Contains(t, c.Events, "ReceiveFetch")
	require.Contains(t, c.Actions, "SendFetchResponse")
}

// TestStepHandlesEveryEvent: Step's dispatch (stepTo's type switch) has a
// case that does something for every event type, and names nothing else.
// Step has no default case: an event it does not list is dropped without
// a word, which is why this is checked on the source.
func TestStepHandlesEveryEvent(t *testing.T) {
	cases, err := catalogue.TypeSwitch(".", "stepTo")
	require.NoError(t, err)
	handled := map[string]bool{}
	for _, c := range cases {
		require.NotEmpty(t, c.Types, "stepTo has a default case")
		require.False(t, c.Empty, "stepTo does nothing for %v", c.Types)
		for _, name := range c.Types {
			require.False(t, handled[name], "stepTo lists %s twice", name)
			handled[name] = true
		}
	}
	events := loadCatalogue(t).Events
	for _, name := range events {
		require.True(t, handled[name], "event %s is not handled by Step (stepTo)", name)
	}
	require.Len(t, handled, len(events), "stepTo lists types that are not events")
}

// TestEveryEventHasASource: each event type is in eventSource, and the
// source is right: timer events are what the timers fire, and the
// delivered ones exactly the events Deliver makes from the rows of its
// table (so every delivered event has a Deliver mapping, and no other
// event claims one).
func TestEveryEventHasASource(t *testing.T) {
	events := loadCatalogue(t).Events
	for _, name := range events {
		_, ok := eventSource[name]
		require.True(t, ok, "event %s: say where it comes from in eventSource", name)
	}
	require.Len(t, eventSource, len(events), "eventSource names types that are not events")

	fired := map[string]bool{}
	for tm := 0; tm < 256; tm++ {
		if e := Timer(tm).Timeout(); e != nil {
			fired[reflect.TypeOf(e).Name()] = true
		}
	}
	delivered := map[string]bool{}
	for _, c := range deliverCases() {
		if c.want != nil {
			delivered[reflect.TypeOf(c.want).Name()] = true
		}
	}
	for _, name := range events {
		src := eventSource[name]
		require.Equal(t, src == "timer", fired[name], "event %s: source %s, fired by a timer %v", name, src, fired[name])
		require.Equal(t, src == "delivered", delivered[name], "event %s: source %s, made by Deliver %v", name, src, delivered[name])
	}
}

// persistFree are the actions that may come between a Persist and the
// Persist that rewrites it in place (stepper.persist): reports and timer
// changes, which rely on nothing durable. Every other action (a message,
// a write to the log or a snapshot) falls to persist's default case, so
// that a Persist before it is never rewritten after it went out; a new
// action, a new RPC's messages among them, needs no edit there (D281).
var persistFree = []string{"Fault", "HighWatermarkChanged", "LeaderRefused", "ResetTimer", "RoleChanged", "StopTimer"}

// TestPersistKnowsEveryAction: stepper.persist's switch names Persist and
// exactly the persistFree actions, and its default case, which every
// other action of the package falls to, keeps the Persist (it does
// something).
func TestPersistKnowsEveryAction(t *testing.T) {
	cases, err := catalogue.TypeSwitch(".", "persist")
	require.NoError(t, err)
	listed := map[string]bool{}
	hasDefault := false
	for _, c := range cases {
		if len(c.Types) == 0 {
			hasDefault = true
			require.False(t, c.Empty, "persist's default case does nothing")
		}
		for _, name := range c.Types {
			listed[name] = true
		}
	}
	require.True(t, hasDefault, "persist's switch has no default case")
	want := map[string]bool{"Persist": true}
	for _, name := range persistFree {
		want[name] = true
	}
	require.Equal(t, want, listed, "persist's switch names Persist and the persistFree actions only")
	actions := map[string]bool{}
	for _, name := range loadCatalogue(t).Actions {
		actions[name] = true
	}
	for name := range listed {
		require.True(t, actions[name], "persist names %s, not an action", name)
	}
}

// TestPersistIsRewrittenOnlyAcrossPersistFreeActions: for each action
// type of the package, a Persist, that action, then a second persist in
// the same step: the first Persist is rewritten in place exactly when the
// action between is persistFree; after a message, a write to the log or a
// snapshot the step has two Persists (D1, D281).
func TestPersistIsRewrittenOnlyAcrossPersistFreeActions(t *testing.T) {
	free := map[string]bool{}
	for _, name := range persistFree {
		free[name] = true
	}
	s := start(t, config(1, 1, 2, 3))
	for _, name := range loadCatalogue(t).Actions {
		if name == "Persist" {
			continue
		}
		between := reflect.New(actionTypeByName(t, name)).Elem().Interface().(Action)
		next := s
		st := stepper{s: &next, buf: &Buffer{}}
		st.emitPersist(Persist{Record: EmptyRecord()})
		st.emit(between)
		st.persist()
		acts := st.actions()
		if free[name] {
			require.Len(t, acts, 2, "%s: the first Persist is rewritten", name)
			require.Equal(t, Persist{Record: next.Record()}, acts[0], name)
		} else {
			require.Len(t, acts, 3, "%s: the Persist before it stays", name)
			require.Equal(t, Persist{Record: EmptyRecord()}, acts[0], name)
			require.Equal(t, Persist{Record: next.Record()}, acts[2], name)
		}
	}
}
