package kafkawire

import (
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// TestSupportedIsTheCatalogue: the API keys this package names are the
// keys of kraft's catalogue of messages (docs/design.md D230), and
// Supported serves exactly the catalogue's APIs at its versions, the ones
// the package's documentation lists.
func TestSupportedIsTheCatalogue(t *testing.T) {
	keys := map[string]int16{
		"Fetch": Fetch, "ApiVersions": APIVersions, "Vote": Vote, "BeginQuorumEpoch": BeginQuorumEpoch,
		"EndQuorumEpoch": EndQuorumEpoch, "DescribeQuorum": DescribeQuorum, "FetchSnapshot": FetchSnapshot,
		"AddRaftVoter": AddRaftVoter, "RemoveRaftVoter": RemoveRaftVoter, "UpdateRaftVoter": UpdateRaftVoter,
	}
	rpcs := kraft.RPCs()
	require.Len(t, rpcs, len(keys))
	for _, r := range rpcs {
		require.Equal(t, keys[r.Name], r.APIKey, r.Name)
	}
	require.Equal(t, Versions{
		Fetch: {12, 17}, APIVersions: {0, 4}, Vote: {0, 2}, BeginQuorumEpoch: {0, 1}, EndQuorumEpoch: {0, 1},
		DescribeQuorum: {0, 2}, FetchSnapshot: {0, 1}, AddRaftVoter: {0, 0}, RemoveRaftVoter: {0, 0}, UpdateRaftVoter: {0, 0},
	}, Supported)
}
