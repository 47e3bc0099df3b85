package kraft

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
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

// TestEveryMessageCarriesItsMethods: each message action of the
// catalogue says beside its type what its addressee steps (deliver), and
// each message event gives its header, field by field: a new RPC's types
// fail here until they have the methods (D280). Local actions and events
// have neither. IsRequest is true of exactly the rows' requests.
func TestEveryMessageCarriesItsMethods(t *testing.T) {
	requests := map[string]bool{}
	for _, r := range RPCs() {
		if r.Request != nil {
			requests[reflect.TypeOf(r.Request).Name()] = true
		}
	}
	for _, name := range loadCatalogue(t).Actions {
		v := reflect.New(actionTypeByName(t, name)).Elem().Interface().(Action)
		_, isSent := v.(sent)
		require.Equal(t, IsMessage(v), isSent, "action %s: a message %v, with deliver %v", name, IsMessage(v), isSent)
		require.Equal(t, requests[name], IsRequest(v), "IsRequest(%s)", name)
	}
	cluster := uuid.NullUUID{UUID: uuid.MustParse("00000000-0000-0000-0000-0000000000cc"), Valid: true}
	for _, r := range RPCs() {
		events := append([]Event{r.RequestEvent}, r.ResponseEvents...)
		for i, e := range events {
			if e == nil {
				continue
			}
			name := reflect.TypeOf(e).Name()
			_, isReceived := e.(received)
			require.True(t, isReceived, "event %s has no header method", name)
			// Set the header's fields the event has, and read them back.
			v := reflect.New(reflect.TypeOf(e)).Elem()
			want := Header{API: r.Name, APIKey: r.APIKey, Response: i > 0, From: NoNode, LeaderID: NoNode}
			if f := v.FieldByName("From"); f.IsValid() {
				f.SetInt(7)
				want.From = 7
			}
			if f := v.FieldByName("ClusterID"); f.IsValid() {
				f.Set(reflect.ValueOf(cluster))
				want.ClusterID = cluster
			}
			if f := v.FieldByName("Error"); f.IsValid() {
				f.SetInt(int64(ErrInconsistentClusterID))
				want.Error = ErrInconsistentClusterID
			}
			if f := v.FieldByName("LeaderID"); f.IsValid() && want.Response {
				f.SetInt(3)
				want.LeaderID = 3
			}
			got, ok := MessageHeader(v.Interface().(Event))
			require.True(t, ok, name)
			if got.APIKey == -1 {
				// An event two rows share names both.
				require.Contains(t, got.API, r.Name, name)
				got.API, got.APIKey = want.API, want.APIKey
			}
			require.Equal(t, want, got, name)
		}
	}
	for _, e := range []Event{ElectionTimeout{}, FetchTimeout{}, LogAppended{}, LogFlushed{}, SnapshotCreated{}, LogStartMoved{}, VotersAppended{}, Resign{}, VoterChangeTimeout{}} {
		_, ok := MessageHeader(e)
		require.False(t, ok, "%T is no message", e)
	}
}

// TestMessageHeaderNamesTheAPI: a request names its API and key, a
// response event two APIs share names both (D280).
func TestMessageHeaderNamesTheAPI(t *testing.T) {
	h, ok := MessageHeader(ReceiveFetchSnapshot{From: 2})
	require.True(t, ok)
	require.Equal(t, Header{API: "FetchSnapshot", APIKey: 59, From: 2, LeaderID: NoNode}, h)
	h, ok = MessageHeader(ReceiveQuorumResponse{From: 2, Error: ErrFencedLeaderEpoch, Epoch: 4, LeaderID: 1})
	require.True(t, ok)
	require.Equal(t, Header{API: "BeginQuorumEpoch or EndQuorumEpoch", APIKey: -1, Response: true, From: 2, Error: ErrFencedLeaderEpoch, LeaderID: 1}, h)
	h, ok = MessageHeader(ReceiveUpdateVoter{From: NoNode})
	require.True(t, ok)
	require.Equal(t, int16(82), h.APIKey)
	require.False(t, h.Response)
}
