//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The operations guide (docs/operations.md) runs: its shell blocks marked
// "<!-- ops-test -->" are run in order, as one bash script, against a
// built kraftd, with the guide's paths and ports replaced by a temporary
// directory and free ports (docs/design.md D87).

// opsGuideMarker marks a shell block of the guide that the test runs.
const opsGuideMarker = "<!-- ops-test -->"

// guideBlocks returns the marked shell blocks of a markdown text, in
// order.
func guideBlocks(t *testing.T, doc string) []string {
	t.Helper()
	var blocks []string
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != opsGuideMarker {
			continue
		}
		require.Less(t, i+1, len(lines), "a marker at the end")
		require.Equal(t, "```sh", strings.TrimSpace(lines[i+1]), "line %d: a marker must precede a ```sh block", i+1)
		var b []string
		j := i + 2
		for ; j < len(lines) && strings.TrimSpace(lines[j]) != "```"; j++ {
			b = append(b, lines[j])
		}
		require.Less(t, j, len(lines), "line %d: the block does not end", i+2)
		blocks = append(blocks, strings.Join(b, "\n"))
		i = j
	}
	return blocks
}

// localAddr matches the guide's loopback addresses.
var localAddr = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// guideScript is the guide's blocks as one script, with the binary, the
// data directory and the ports replaced.
func guideScript(t *testing.T, blocks []string, bin, dir string) string {
	script := strings.Join(blocks, "\n\n")
	addrs := localAddr.FindAllString(script, -1)
	sort.Strings(addrs)
	var distinct []string
	for i, a := range addrs {
		if i == 0 || a != addrs[i-1] {
			distinct = append(distinct, a)
		}
	}
	free := freePorts(t, len(distinct))
	script = localAddr.ReplaceAllStringFunc(script, func(a string) string {
		return free[sort.SearchStrings(distinct, a)]
	})
	script = strings.ReplaceAll(script, "/tmp/kraft-ops", dir)
	script = strings.ReplaceAll(script, "/tmp/kraftd", bin)
	return "set -eu\n" + script + "\n"
}

// TestOperationsGuide runs docs/operations.md: start, grow, replace a dead
// voter, a wiped disk, a slow disk, a replica of another cluster, an
// upgrade, a backup and a restore, with real kraftd processes; the logs
// name the incidents.
func TestOperationsGuide(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	for _, tool := range []string{"bash", "curl", "jq", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("KRAFT_REQUIRE_OPS_GUIDE") != "" { // CI (.ci/run)
				t.Fatalf("the guide needs %s", tool)
			}
			t.Skipf("the guide needs %s", tool)
		}
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	blocks := guideBlocks(t, string(doc))
	require.GreaterOrEqual(t, len(blocks), 9, "the guide's runnable blocks")
	bin := buildKraftd(t)
	dir := filepath.Join(t.TempDir(), "ops")
	script := guideScript(t, blocks, bin, dir)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the kraftd processes too
	// A file, not a pipe: the kraftd processes the script leaves running
	// would hold a pipe open, and Wait would wait for them.
	out, err := os.Create(filepath.Join(t.TempDir(), "output"))
	require.NoError(t, err)
	defer func() { _ = out.Close() }()
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	require.NoError(t, cmd.Start())
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }() // what the script left running
	err = cmd.Wait()
	t.Logf("the guide ran in %v", time.Since(start).Round(time.Millisecond))
	output, rerr := os.ReadFile(out.Name())
	require.NoError(t, rerr)
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		var b strings.Builder
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(lines) > 40 {
				lines = lines[len(lines)-40:]
			}
			fmt.Fprintf(&b, "\n--- %s (last lines)\n%s", l, strings.Join(lines, "\n"))
		}
		t.Fatalf("the guide failed: %v\n--- output\n%s%s", err, string(output), b.String())
	}
	t.Logf("output:\n%s", string(output))

	// The incidents are named in the logs.
	read := func(n int) string {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.log", n)))
		require.NoError(t, err)
		return string(b)
	}
	require.Contains(t, read(4), `"event":"slow_sync"`)
	require.Regexp(t, `"event":"cluster_id_refused","peer":5,"request":"Fetch","direction":"inbound","peer_cluster_id":"[0-9a-f-]{36}"`, read(1))
	require.Regexp(t, `"event":"cluster_id_refused","peer":1,"request":"Fetch","direction":"outbound"`, read(5))
	require.Regexp(t, `"msg":"voter set changed: removed 3:[^"]*","node":1,"event":"voter_set_changed"`, read(1))
	require.Regexp(t, `"event":"voter_change_started".*"kind":"RemoveRaftVoter","voter":"2:`, read(1)+read(4))
}
