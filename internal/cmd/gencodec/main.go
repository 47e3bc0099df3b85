// Command gencodec writes node/codec_gen.go, the event tags, encoders and
// decoders of kraft's own wire format, from the catalogue of messages
// (kraft.RPCs; docs/design.md D270). node/codec.go runs it with
// `go generate ./node`; it reads the file it replaces to keep its tags
// (D271).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"

	"github.com/kraftquorum/kraft/internal/gencodec"
)

func main() {
	out := flag.String("o", "codec_gen.go", "the file to write; its current tags are kept")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(out string) error {
	prev, err := os.ReadFile(out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	src, err := gencodec.Generate(prev)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
