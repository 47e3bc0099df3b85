package kraft

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rpcTypes is every type the catalogue of messages names, by type name.
func rpcTypes() map[string]bool {
	named := map[string]bool{}
	add := func(v any) {
		if v != nil {
			named[reflect.TypeOf(v).Name()] = true
		}
	}
	for _, r := range RPCs() {
		add(r.Request)
		add(r.RequestEvent)
		add(r.Response)
		for _, e := range r.ResponseEvents {
			add(e)
		}
	}
	return named
}

// TestRPCsNameEveryMessage: the catalogue of messages (D230) names every
// message type the package defines, read from its source: each Send*
// action and each Receive* event is a request or a response of some row,
// so a new message type fails here until the catalogue has it. And
// IsMessage is true of exactly the Send* actions.
func TestRPCsNameEveryMessage(t *testing.T) {
	cat := loadCatalogue(t)
	named := rpcTypes()
	for _, name := range cat.Events {
		require.Equal(t, strings.HasPrefix(name, "Receive"), named[name], "event %s: a message exactly when named Receive*", name)
	}
	for _, name := range cat.Actions {
		require.Equal(t, strings.HasPrefix(name, "Send"), named[name], "action %s: a message exactly when named Send*", name)
		v := reflect.New(actionTypeByName(t, name)).Elem().Interface().(Action)
		require.Equal(t, named[name], IsMessage(v), "IsMessage(%s)", name)
	}
}

// TestRPCsAreKafkas: one row per API key, as Kafka's ApiKeys lists each
// API once, with its request kind, and RPCs returns a copy.
func TestRPCsAreKafkas(t *testing.T) {
	keys := map[int16]string{}
	for _, r := range RPCs() {
		require.NotContains(t, keys, r.APIKey, r.Name)
		keys[r.APIKey] = r.Name
		require.LessOrEqual(t, r.MinVersion, r.MaxVersion, r.Name)
	}
	require.Equal(t, "Fetch", keys[1])
	require.Equal(t, "Vote", keys[52])
	// A host keeps one request of each kind in flight per destination:
	// a follower's Fetch and FetchSnapshot share one (Kafka's
	// FollowerState), the other requests each have their own, and a
	// response is no request (D230, D77).
	require.Equal(t, InFlightFetch, InFlightOf(SendFetchSnapshot{}))
	require.Equal(t, InFlightFetch, InFlightOf(SendFetch{}))
	require.Equal(t, InFlightVote, InFlightOf(SendVoteRequest{}))
	require.Equal(t, InFlightAPIVersions, InFlightOf(SendAPIVersions{}))
	require.Equal(t, NotTracked, InFlightOf(SendFetchResponse{}))
	require.Equal(t, NotTracked, InFlightOf(Persist{}))
	seen := map[InFlight]string{}
	for _, r := range RPCs() {
		if r.InFlight == NotTracked || r.InFlight == InFlightFetch {
			continue
		}
		require.NotContains(t, seen, r.InFlight, "%s and %s share a kind", r.Name, seen[r.InFlight])
		seen[r.InFlight] = r.Name
	}
	rs := RPCs()
	rs[0].ResponseEvents[0] = nil
	require.NotNil(t, RPCs()[0].ResponseEvents[0], "RPCs returns a copy")
}

// actionTypeByName is the action type named name, from the Deliver
// table's rows (TestDeliverMapsEveryAction checks it has every action).
func actionTypeByName(t *testing.T, name string) reflect.Type {
	t.Helper()
	for _, c := range deliverCases() {
		if rt := reflect.TypeOf(c.action); rt.Name() == name {
			return rt
		}
	}
	t.Fatalf("no action %s", name)
	return nil
}
