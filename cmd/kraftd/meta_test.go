//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunChecksMetaProperties: the first start writes the cluster id and
// the node id into DIR/meta.properties; a later start with another
// -cluster-id or -id is refused, saying which cluster and node the
// directory belongs to, and the right ones start.
func TestRunChecksMetaProperties(t *testing.T) {
	dir := t.TempDir()
	start := func(cluster, id string) (int, string) {
		addrs := []string{freeAddr(t), freeAddr(t)}
		sigs := make(chan os.Signal, 1)
		var stderr syncBuffer
		code := make(chan int, 1)
		go func() {
			code <- run([]string{"-cluster-id", cluster, "-id", id, "-voters", id + "@" + addrs[0], "-dir", dir, "-http", addrs[1],
				"-election-timeout", "50ms", "-fetch-timeout", "100ms"}, os.Stdout, &stderr, sigs)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case c := <-code:
				return c, stderr.String()
			default:
			}
			if c, _ := httpPost(t, "http://"+addrs[1]+"/append", "x"); c == 200 {
				sigs <- os.Interrupt
				return <-code, stderr.String()
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("kraftd neither served nor exited:\n%s", stderr.String())
		return 0, ""
	}
	code, out := start(testClusterID, "1")
	require.Equal(t, exitOK, code, out)
	b, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
	require.NoError(t, err)
	require.Contains(t, string(b), "cluster.id="+testClusterID+"\n")
	require.Contains(t, string(b), "node.id=1\n")
	require.Contains(t, string(b), "version=1\n")

	other := "AAECAwQFBgcICQoLDA0ODw"
	code, out = start(other, "1")
	require.Equal(t, exitFail, code, out)
	require.Contains(t, out, "belongs to cluster "+testClusterID+", not to -cluster-id "+other)
	require.Contains(t, out, "level=ERROR")

	code, out = start(testClusterID, "2")
	require.Equal(t, exitFail, code, out)
	require.Contains(t, out, "belongs to node 1, not to -id 2")

	code, out = start(testClusterID, "1")
	require.Equal(t, exitOK, code, out)
	require.False(t, strings.Contains(out, "wrote "), "written once: %s", out)
}
