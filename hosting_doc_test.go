package kraft_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHostingQuickStartIsTheExample: the host code docs/hosting.md's Quick
// start shows is example_test.go's, which runs as the examples: the doc's
// first Go block appears there verbatim, so a change to the example (the
// handling of AppendFetched, docs/design.md D240, for one) cannot leave
// the doc's copy behind.
func TestHostingQuickStartIsTheExample(t *testing.T) {
	doc, err := os.ReadFile("docs/hosting.md")
	require.NoError(t, err)
	src, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), "```go\n")
	require.True(t, ok, "docs/hosting.md has no Go block")
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	require.Contains(t, block, "case kraft.AppendFetched:", "the Quick start's host handles AppendFetched")
	require.Contains(t, block, "e.Records = ", "the Quick start's host sets ReceiveFetchResponse.Records")
	require.Contains(t, string(src), block, "docs/hosting.md's Quick start differs from example_test.go's host")
}
