//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// README.md's "A three-node cluster in a few commands" is run as written:
// its kraftd formats and starts, then its curl lines, each against the
// leader where the README sends it to replica 3 (the leader in its story).

const readmeClusterHeading = "## A three-node cluster in a few commands"

// docCurls returns the curl lines of the section heading of README.md,
// after subst, each split into its arguments (no argument there holds a
// space).
func docCurls(t *testing.T, heading string, subst map[string]string) [][]string {
	t.Helper()
	var cmds [][]string
	for _, block := range docBlocks(t, "README.md", heading, subst) {
		for _, line := range strings.Split(block, "\n") {
			if code, _, _ := strings.Cut(line, "#"); strings.HasPrefix(code, "curl ") {
				cmds = append(cmds, strings.Fields(code)[1:])
			}
		}
	}
	return cmds
}

// curl does what the curl arguments args (-s, -X METHOD, --data BODY and a
// URL without a scheme) ask, and returns the status and body.
func curl(t *testing.T, args []string) (int, []byte) {
	t.Helper()
	method, body, url := "", "", ""
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-s":
		case "-X":
			i++
			method = args[i]
		case "--data":
			i++
			body = args[i]
		default:
			require.Empty(t, url, "curl %v: two URLs", args)
			url = "http://" + args[i]
		}
	}
	if method == "" {
		method = http.MethodGet
		if body != "" {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body)) //nolint:noctx // a test against a local server
	require.NoError(t, err)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err, "curl %v", args)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestProcessClusterAsDocumented runs README.md's three-node cluster: the
// three formats and starts elect a leader, /status answers, the append and
// the key-value write are acknowledged with an offset, the read returns the
// value written, and after /resign another epoch gets a leader.
func TestProcessClusterAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	bin := buildKraftd(t)
	base := t.TempDir()
	ports := freePorts(t, 6)
	subst := map[string]string{"/tmp/kraftd": bin, "/tmp/kraft-static": base}
	for i := 0; i < 3; i++ {
		subst[fmt.Sprintf("127.0.0.1:909%d", i+1)] = ports[i]
		subst[fmt.Sprintf("127.0.0.1:808%d", i+1)] = ports[3+i]
	}
	blocks := docCommands(t, "README.md", readmeClusterHeading, subst)
	require.Len(t, blocks, 2, "the section's kraftd commands: the formats, then the starts")
	require.Len(t, blocks[0], 3)
	require.Len(t, blocks[1], 3)
	curls := docCurls(t, readmeClusterHeading, subst)
	require.Len(t, curls, 5, "status, append, kv write, kv read, resign")

	c := &cluster{t: t, procs: map[int]*proc{}, status: &http.Client{Timeout: 500 * time.Millisecond}}
	for _, args := range blocks[0] {
		require.Equal(t, "format", args[0])
		out, err := exec.Command(bin, args...).CombinedOutput()
		require.NoError(t, err, "kraftd %v: %s", args, out)
	}
	for _, args := range blocks[1] {
		id, err := strconv.Atoi(flagOf(args, "-id"))
		require.NoError(t, err)
		p := &proc{t: t, id: id, bin: bin, args: args, noFormat: true, dir: flagOf(args, "-dir"), http: flagOf(args, "-http"),
			raft: ports[id-1], stderr: filepath.Join(base, fmt.Sprintf("node%d.stderr", id))}
		c.procs[id] = p
		c.ids = append(c.ids, id)
	}
	require.Equal(t, []int{1, 2, 3}, c.ids)
	t.Cleanup(func() {
		for _, id := range c.ids {
			c.procs[id].kill()
		}
		if t.Failed() {
			for _, id := range c.ids {
				c.procs[id].dump()
			}
		}
	})
	for _, id := range c.ids {
		c.procs[id].start()
	}
	leader, st := c.waitLeader(20 * time.Second)

	// The README sends the leader's requests to replica 3.
	for i, args := range curls {
		for k, a := range args {
			if a == c.procs[3].http || strings.HasPrefix(a, c.procs[3].http+"/") {
				args[k] = c.procs[leader].http + strings.TrimPrefix(a, c.procs[3].http)
			}
		}
		var code int
		var body []byte
		require.Eventually(t, func() bool {
			code, body = curl(t, args)
			return code == http.StatusOK
		}, 10*time.Second, 50*time.Millisecond, "curl %v", args)
		switch i {
		case 0:
			var s struct{ Role string }
			require.NoError(t, json.Unmarshal(body, &s), "%s", body)
			require.NotEmpty(t, s.Role, "%s", body)
		case 1, 2:
			require.Positive(t, decodeOffset(t, body), "%s", body)
		case 3:
			var kv struct{ Value string }
			require.NoError(t, json.Unmarshal(body, &kv), "%s", body)
			require.Equal(t, "blue", kv.Value)
		}
	}
	require.Eventually(t, func() bool {
		for _, s := range c.statuses() {
			if s.Role == "Leader" && s.Epoch > st.Epoch {
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond, "a leader in a later epoch after /resign")
	c.checkExits()
}
