package kafkawire

import (
	"errors"
	"sort"

	"github.com/kraftquorum/kraft"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's API keys of the APIs a KRaft replica serves (Kafka's ApiKeys).
const (
	Fetch            int16 = 1
	APIVersions      int16 = 18
	Vote             int16 = 52
	BeginQuorumEpoch int16 = 53
	EndQuorumEpoch   int16 = 54
	DescribeQuorum   int16 = 55
	FetchSnapshot    int16 = 59
	AddRaftVoter     int16 = 80
	RemoveRaftVoter  int16 = 81
	UpdateRaftVoter  int16 = 82
)

// VersionRange is an inclusive range of versions of one API.
type VersionRange struct {
	Min, Max int16
}

// Versions maps API keys to version ranges: what one side supports.
type Versions map[int16]VersionRange

// Supported is what kraft sends and accepts, per API (the table in this
// package's documentation):
//
//   - Vote 0-2 (v1 KIP-853 directory ids, v2 KIP-996 pre-vote),
//   - BeginQuorumEpoch 0-1 and EndQuorumEpoch 0-1 (v1 KIP-853),
//   - Fetch 12-17: v12 is the first with the KIP-595 fields the quorum
//     needs (cluster id, last fetched epoch, diverging epoch, current
//     leader, snapshot id); v13 names the partition by topic id, v15 moves
//     the replica id into ReplicaState, v16 adds node endpoints, v17 the
//     replica directory id. Fetch v18 (KIP-1166's high watermark) is not
//     supported yet.
//   - FetchSnapshot 0-1 (KIP-630; v1 KIP-853),
//   - DescribeQuorum 0-2,
//   - AddRaftVoter 0, RemoveRaftVoter 0, UpdateRaftVoter 0 (KIP-853),
//   - ApiVersions 0-4.
//
// The ranges are kraft's catalogue of messages (kraft.RPCs,
// docs/design.md D230); TestSupportedIsTheCatalogue checks the API keys
// above against it.
var Supported = func() Versions {
	vs := Versions{}
	for _, r := range kraft.RPCs() {
		vs[r.APIKey] = VersionRange{r.MinVersion, r.MaxVersion}
	}
	return vs
}()

// KRaftVersionFeature is the name of the kraft.version feature (KIP-853)
// in ApiVersions' supported features.
const KRaftVersionFeature = "kraft.version"

// ClientSoftwareName is what kraft sends as ApiVersions'
// client_software_name (KIP-511).
const ClientSoftwareName = "kraft-go"

// Negotiate returns, per API both sides know, the highest version both
// support (Kafka's NodeApiVersions.latestUsableVersion); an API without a
// common version is left out.
func Negotiate(ours, theirs Versions) map[int16]int16 {
	out := make(map[int16]int16)
	for k, o := range ours {
		t, ok := theirs[k]
		if !ok {
			continue
		}
		lo, hi := max(o.Min, t.Min), min(o.Max, t.Max)
		if lo <= hi {
			out[k] = hi
		}
	}
	return out
}

// PreVote reports whether negotiated versions allow a pre-vote: Vote v2
// (KIP-996). Toward a voter without it a Prospective skips the pre-vote
// (kraft's ReceiveVoteResponse with UNSUPPORTED_VERSION).
func PreVote(negotiated map[int16]int16) bool {
	v, ok := negotiated[Vote]
	return ok && v >= 2
}

// VersionsOf reads the API version ranges of an ApiVersions response.
func VersionsOf(r *kmsg.ApiVersionsResponse) Versions {
	vs := make(Versions, len(r.ApiKeys))
	for _, k := range r.ApiKeys {
		vs[k.ApiKey] = VersionRange{k.MinVersion, k.MaxVersion}
	}
	return vs
}

// KRaftVersionsOf returns the kraft.version range an ApiVersions response
// advertises in its supported features (v3+), or nil: what kraft's
// ReceiveAPIVersionsResponse.KRaftVersions carries.
func KRaftVersionsOf(r *kmsg.ApiVersionsResponse) *kraft.VersionRange {
	for _, f := range r.SupportedFeatures {
		if f.Name == KRaftVersionFeature {
			return &kraft.VersionRange{Min: f.MinVersion, Max: f.MaxVersion}
		}
	}
	return nil
}

// APIVersionsRequest is the ApiVersions request kraft sends first on each
// connection, at version (3+ carries the software name and version).
func APIVersionsRequest(version int16, softwareVersion string) *kmsg.ApiVersionsRequest {
	r := kmsg.NewPtrApiVersionsRequest()
	r.Version = version
	r.ClientSoftwareName = ClientSoftwareName
	r.ClientSoftwareVersion = softwareVersion
	return r
}

// APIVersionsAnswer is a server's answer to an ApiVersions request of
// requestVersion: the Supported table (sorted by API key) and kraft.version
// feature range kraftVersions (nil: not advertised), at requestVersion; or,
// for a version above Supported's (KIP-511), an ApiVersions v0 response
// with UNSUPPORTED_VERSION and the table, so the client can retry at the
// highest version it finds there.
func APIVersionsAnswer(requestVersion int16, kraftVersions *kraft.VersionRange) *kmsg.ApiVersionsResponse {
	return apiVersionsAnswer(Supported, requestVersion, kraftVersions)
}

func apiVersionsAnswer(table Versions, requestVersion int16, kraftVersions *kraft.VersionRange) *kmsg.ApiVersionsResponse {
	r := kmsg.NewPtrApiVersionsResponse()
	r.Version = requestVersion
	own := table[APIVersions]
	if requestVersion < own.Min || requestVersion > own.Max {
		r.Version = 0
		r.ErrorCode = int16(kraft.ErrUnsupportedVersion)
	}
	keys := make([]int16, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		v := table[k]
		r.ApiKeys = append(r.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: v.Min, MaxVersion: v.Max})
	}
	if kraftVersions != nil && r.Version >= 3 {
		r.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{{
			Name: KRaftVersionFeature, MinVersion: kraftVersions.Min, MaxVersion: kraftVersions.Max,
		}}
	}
	return r
}

// APIVersionsRetry reads a server's answer to kraft's ApiVersions request:
// if it is UNSUPPORTED_VERSION (the server does not know the version kraft
// sent, KIP-511), ok is true and version is the version to send again, the
// highest both support by the answer's table (Kafka's NetworkClient does
// the same); the connection fails if there is none.
func APIVersionsRetry(r *kmsg.ApiVersionsResponse) (version int16, ok bool, err error) {
	if r.ErrorCode != int16(kraft.ErrUnsupportedVersion) {
		return 0, false, nil
	}
	v, found := Negotiate(Versions{APIVersions: Supported[APIVersions]}, VersionsOf(r))[APIVersions]
	if !found {
		return 0, false, errors.New("kafkawire: the server supports no ApiVersions version kraft does")
	}
	return v, true, nil
}
