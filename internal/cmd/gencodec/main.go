// Command gencodec writes node/codec_gen.go, the event tags, encoders and
// decoders of kraft's own wire format, from the catalogue of messages
// (kraft.RPCs; docs/design.md D270). node/codec.go runs it with
// `go generate ./node`; it reads the file it replaces to keep its tags
// (D271). With -canonical it writes replica/canonical_gen.go instead, the
// explorer's canonical encoding of the message events (D320), which
// replica/model.go runs; `go generate ./...` writes both.
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
	out := flag.String("o", "", "the file to write (codec_gen.go, or canonical_gen.go with -canonical); a codec's current tags are kept")
	canonical := flag.Bool("canonical", false, "write the explorer's canonical encoding (replica/canonical_gen.go) instead of the wire codec")
	flag.Parse()
	var err error
	switch {
	case *canonical:
		err = runCanonical(or(*out, "canonical_gen.go"))
	default:
		err = run(or(*out, "codec_gen.go"))
	}
	if err != nil {
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

func runCanonical(out string) error {
	src, err := gencodec.GenerateCanonical()
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// or is s, or def if s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
