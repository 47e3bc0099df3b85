package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocExamplesRun runs the kraftsim command lines of docs/simulator.md's
// first block as written (docs/design.md D192), with the files they write
// in a temporary directory: each exits 0, and the replay reproduces the
// trace written before it.
func TestDocExamplesRun(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "simulator.md"))
	require.NoError(t, err)
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(string(b))
	require.NotNil(t, block, "docs/simulator.md has no sh block")
	dir := t.TempDir()
	var ran []string
	for _, line := range strings.Split(block[1], "\n") {
		code, _, _ := strings.Cut(line, "#")
		f := strings.Fields(code)
		if len(f) < 3 || f[0] != "go" || f[1] != "run" || f[2] != "./cmd/kraftsim" {
			continue
		}
		args := f[3:]
		for i, a := range args {
			if strings.HasSuffix(a, ".jsonl") || strings.HasSuffix(a, ".svg") {
				args[i] = filepath.Join(dir, a)
			}
		}
		var out, errb bytes.Buffer
		require.Equal(t, exitOK, run(args, &out, &errb), "kraftsim %v:\n%s\n%s", args, out.String(), errb.String())
		ran = append(ran, strings.Join(args, " "))
	}
	require.GreaterOrEqual(t, len(ran), 6, "the kraftsim lines of docs/simulator.md: %v", ran)
	for _, f := range []string{"run.jsonl", "run.svg", "snap.svg"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, "%s was written", f)
	}
}
