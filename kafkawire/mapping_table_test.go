package kafkawire

import (
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// notMappedResponses are response events of the catalogue that the
// mappers do not encode: ApiVersions' answer is the transport's, and
// ReceiveLeaderlessEpoch is what kraft.Deliver makes of a response in
// kraft's own simulator, never on Kafka's wire.
var notMappedResponses = map[string]bool{"ReceiveAPIVersionsResponse": true, "ReceiveLeaderlessEpoch": true}

// TestMappersCoverTheCatalogue: every request event of kraft's catalogue
// of messages (D230) is encoded by the mapper of its row's API key at each
// supported version and decodes back under that key, and so is every
// response event but notMappedResponses, which are refused with an error
// (D272).
func TestMappersCoverTheCatalogue(t *testing.T) {
	for _, r := range kraft.RPCs() {
		for v := r.MinVersion; v <= r.MaxVersion; v++ {
			if r.RequestEvent != nil {
				req, err := EncodeRequest(Msg{Event: r.RequestEvent, API: r.APIKey}, v)
				require.NoError(t, err, "%s v%d", r.Name, v)
				require.Equal(t, r.APIKey, req.Key(), r.Name)
				m, err := DecodeRequest(req, kraft.ReplicaKey{ID: 1})
				require.NoError(t, err, "%s v%d", r.Name, v)
				require.Equal(t, r.APIKey, m.API, r.Name)
				require.IsType(t, r.RequestEvent, m.Event, r.Name)
			}
			for _, e := range r.ResponseEvents {
				msg := Msg{Event: e, API: r.APIKey}
				if notMappedResponses[reflect.TypeOf(e).Name()] {
					_, err := EncodeResponse(msg, v)
					require.ErrorContains(t, err, "is not a response event", "%s %T", r.Name, e)
					continue
				}
				resp, err := EncodeResponse(msg, v)
				require.NoError(t, err, "%s v%d", r.Name, v)
				require.Equal(t, r.APIKey, resp.Key(), r.Name)
				m, err := DecodeResponse(resp, 2)
				require.NoError(t, err, "%s v%d", r.Name, v)
				require.Equal(t, r.APIKey, m.API, r.Name)
				require.IsType(t, e, m.Event, r.Name)
			}
		}
	}
}

// TestMappersRefuseOtherTypes: a message of an API kraft does not map, or
// an event that is not the mapper's, is an error, not a panic.
func TestMappersRefuseOtherTypes(t *testing.T) {
	_, err := EncodeRequest(Msg{Event: kraft.ReceiveVoteResponse{}}, 0)
	require.ErrorContains(t, err, "is not a request event")
	_, err = EncodeResponse(Msg{Event: kraft.ReceiveVoteRequest{}}, 0)
	require.ErrorContains(t, err, "is not a response event")
	_, err = EncodeResponse(Msg{Event: kraft.ReceiveQuorumResponse{}, API: Vote}, 0)
	require.ErrorContains(t, err, "needs API BeginQuorumEpoch or EndQuorumEpoch")
	_, err = DecodeRequest(kmsg.NewPtrDescribeQuorumRequest(), kraft.ReplicaKey{})
	require.ErrorContains(t, err, "is not a raft request kraft maps")
	_, err = DecodeResponse(kmsg.NewPtrMetadataResponse(), 1)
	require.ErrorContains(t, err, "is not a raft response kraft maps")
}
