package kafkawire

import (
	"net"
	"reflect"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// serve answers requests on one connection as a replica that supports
// table would: ApiVersions from the table, a Vote with a granted vote.
func serve(t *testing.T, c net.Conn, table Versions) {
	defer c.Close()
	for {
		frame, err := ReadFrame(c, 0)
		if err != nil {
			return
		}
		h, req, err := ReadRequest(frame)
		if err != nil {
			t.Errorf("server: %v", err)
			return
		}
		var resp kmsg.Response
		switch req.(type) {
		case *kmsg.ApiVersionsRequest:
			resp = apiVersionsAnswer(table, h.APIVersion, &kraft.VersionRange{Min: 0, Max: 1})
		case *kmsg.VoteRequest:
			m, err := DecodeRequest(req, kraft.ReplicaKey{ID: 1})
			if err != nil {
				t.Errorf("server: %v", err)
				return
			}
			e := m.Event.(kraft.ReceiveVoteRequest)
			resp, err = EncodeResponse(Msg{Event: kraft.ReceiveVoteResponse{
				Epoch: e.CandidateEpoch, VoteGranted: true, LeaderID: kraft.NoNode,
			}}, h.APIVersion)
			if err != nil {
				t.Errorf("server: %v", err)
				return
			}
		}
		if _, err := c.Write(AppendResponse(nil, h.CorrelationID, resp)); err != nil {
			return
		}
	}
}

// call sends one request and reads its answer.
func call(t *testing.T, c net.Conn, corr int32, req kmsg.Request) kmsg.Response {
	t.Helper()
	client := "raft-client-2"
	if _, err := c.Write(AppendRequest(nil, corr, &client, req)); err != nil {
		t.Fatal(err)
	}
	frame, err := ReadFrame(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, resp, err := ReadResponse(frame, req.Key(), req.GetVersion())
	if err != nil || got != corr {
		t.Fatalf("response %d to %d: %v", got, corr, err)
	}
	return resp
}

// TestExchange runs a connection as kraft's transport will: ApiVersions
// first, negotiation, then a Vote at the negotiated version; against a peer
// with Vote v2 the pre-vote goes out, against one without it cannot.
func TestExchange(t *testing.T) {
	old := Versions{APIVersions: {0, 3}, Vote: {0, 1}, BeginQuorumEpoch: {0, 0}, EndQuorumEpoch: {0, 0}, Fetch: {0, 16}, FetchSnapshot: {0, 0}}
	for _, tc := range []struct {
		name    string
		peer    Versions
		apiVer  int16
		preVote bool
	}{{"kraft", Supported, 4, true}, {"older", old, 3, false}} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			go serve(t, server, tc.peer)
			// The client sends its newest ApiVersions; an older server
			// answers UNSUPPORTED_VERSION v0 and the client retries.
			resp := call(t, client, 1, APIVersionsRequest(Supported[APIVersions].Max, "test"))
			av := resp.(*kmsg.ApiVersionsResponse)
			if v, retry, err := APIVersionsRetry(av); err != nil {
				t.Fatal(err)
			} else if retry {
				av = call(t, client, 2, APIVersionsRequest(v, "test")).(*kmsg.ApiVersionsResponse)
			}
			if av.Version != tc.apiVer || av.ErrorCode != 0 {
				t.Fatalf("ApiVersions v%d error %d", av.Version, av.ErrorCode)
			}
			neg := Negotiate(Supported, VersionsOf(av))
			if PreVote(neg) != tc.preVote {
				t.Fatalf("pre-vote %v with %v", PreVote(neg), neg)
			}
			vote := Msg{Event: kraft.ReceiveVoteRequest{
				VoterID: 1, CandidateEpoch: 5, Candidate: 2, CandidateLogEnd: kraft.LogEnd{Offset: 10, Epoch: 4}, PreVote: tc.preVote,
			}}
			req, err := EncodeRequest(vote, neg[Vote])
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeResponse(call(t, client, 3, req), 1)
			if err != nil {
				t.Fatal(err)
			}
			want := kraft.ReceiveVoteResponse{From: 1, Epoch: 5, VoteGranted: true, LeaderID: kraft.NoNode}
			if !reflect.DeepEqual(got.Event, want) {
				t.Fatalf("%+v", got.Event)
			}
		})
	}
}
