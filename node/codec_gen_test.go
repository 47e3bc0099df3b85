package node

import (
	"os"
	"testing"

	"github.com/kraftquorum/kraft/internal/gencodec"
	"github.com/stretchr/testify/require"
)

// TestCodecIsGenerated: codec_gen.go is what internal/cmd/gencodec writes
// from the catalogue of messages today, so a new message event, or a new
// field of one, fails here until `go generate ./node` is run (D270).
func TestCodecIsGenerated(t *testing.T) {
	have, err := os.ReadFile("codec_gen.go")
	require.NoError(t, err)
	want, err := gencodec.Generate(have)
	require.NoError(t, err)
	require.Equal(t, string(want), string(have), "node/codec_gen.go is stale: run `go generate ./node`")
}
