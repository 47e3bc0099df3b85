package jepsen

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// envInt reads an integer environment variable, def if unset.
func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, "%s=%q", name, v)
	return n
}

// runConfig is one run: the kraftd binary and its environment, the
// seed of the nemesis and the clients, and how long it runs.
type runConfig struct {
	name     string
	bin      string
	env      []string
	seed     int64
	nodes    int
	workers  int
	duration time.Duration
	// checkEvery > 0 checks the history so far that often and ends the
	// run at the first check that is not linearizable (the planted bugs).
	checkEvery time.Duration
	// converge: heal, then require every replica's state to be the same.
	converge bool
	// dynamic: a KIP-853 quorum, whose voters the nemesis removes and
	// adds back (D161).
	dynamic bool
}

type runResult struct {
	result  porcupine.CheckResult
	caught  time.Duration // when a check first found the history not linearizable
	ops     int
	counts  map[outcome]int
	viz     string // the visualisation written, if any
	nemesis []string
	faults  map[fault]int
	// slowStarts counts the starts whose kraftd logged the sync delay
	// (its stderr's "fault injection" line).
	slowStarts int
}

// checkTimeout bounds one Porcupine check.
const checkTimeout = 2 * time.Minute

func check(ops []porcupine.Operation) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	return porcupine.CheckOperationsVerbose(kvModel, ops, checkTimeout)
}

// keepViz writes Porcupine's visualisation of a history outside the
// test's temporary directory, which the test removes.
func keepViz(t *testing.T, name string, seed int64, info porcupine.LinearizationInfo) string {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("kraft-jepsen-%s-seed%d-%s.html", name, seed, time.Now().Format("20060102-150405")))
	if err := porcupine.VisualizePath(kvModel, info, path); err != nil {
		t.Logf("writing the visualisation: %v", err)
		return ""
	}
	return path
}

func run(t *testing.T, cfg runConfig) runResult {
	t.Logf("%s: seed %d (KRAFT_JEPSEN_SEED=%d repeats the schedule), %d nodes, %d clients, %v, dynamic quorum %v",
		cfg.name, cfg.seed, cfg.seed, cfg.nodes, cfg.workers, cfg.duration, cfg.dynamic)
	c := newCluster(t, cfg.bin, t.TempDir(), cfg.nodes, cfg.env, cfg.dynamic)
	c.startAll()
	deadline := time.Now().Add(20 * time.Second)
	for c.leader() == 0 {
		require.True(t, time.Now().Before(deadline), "no leader within 20s")
		time.Sleep(20 * time.Millisecond)
	}
	h := newHistory()
	cl := startClients(c, h, cfg.workers, 3, cfg.seed)
	nm := startNemesis(c, cfg.seed, h.start)
	res := runResult{}
	end := time.Now().Add(cfg.duration)
	var info porcupine.LinearizationInfo
	for time.Now().Before(end) {
		wait := time.Until(end)
		if cfg.checkEvery > 0 && cfg.checkEvery < wait {
			wait = cfg.checkEvery
		}
		time.Sleep(wait)
		if cfg.checkEvery > 0 {
			at := time.Since(h.start)
			ops, _ := h.snapshot()
			began := time.Now()
			r, i := porcupine.CheckOperationsVerbose(kvModel, ops, 30*time.Second)
			t.Logf("%s: at %v: %d operations: %s (checked in %v)", cfg.name, at.Round(time.Millisecond), len(ops), r, time.Since(began).Round(time.Millisecond))
			if r == porcupine.Illegal {
				res.result, res.caught, info = r, at, i
				break
			}
		}
	}
	nm.halt()
	cl.halt()
	res.nemesis, res.faults = nm.log, nm.counts
	for _, p := range c.procs {
		if b, err := os.ReadFile(p.stderr); err == nil {
			res.slowStarts += strings.Count(string(b), "KRAFTD_SYNC_DELAY=")
		}
	}

	// Heal everything: the network, paused and killed processes.
	c.net.set(nil)
	for _, p := range c.procs {
		p.resume()
		require.NoError(t, p.start())
	}
	for _, p := range c.procs {
		if u := p.unexpectedExit(); u != "" {
			t.Errorf("kraftd %d exited by itself: %s\n%s", p.id, u, p.tail(40))
		}
	}
	require.Empty(t, cl.odd, "answers outside the API's table")
	if c.dynamic {
		// Every node a voter again (the nemesis's healing adds back the
		// one it removed; this covers an add that had not committed).
		for id := 1; id <= c.n; id++ {
			ok, how := c.addVoter(id, 30*time.Second)
			require.True(t, ok, "node %d not a voter again within 30s: %s", id, how)
		}
	}

	// A last read of every key, at the leader, once the cluster is whole.
	if res.result != porcupine.Illegal {
		for _, k := range cl.keys {
			require.True(t, cl.definite(input{Kind: opGet, Key: k}, 30*time.Second), "no definite read of %s within 30s", k)
		}
		ops, counts := h.snapshot()
		res.ops, res.counts = len(ops), counts
		start := time.Now()
		res.result, info = check(ops)
		t.Logf("%s: checked %d operations in %v: %s", cfg.name, len(ops), time.Since(start).Round(time.Millisecond), res.result)
	} else {
		ops, counts := h.snapshot()
		res.ops, res.counts = len(ops), counts
	}
	t.Logf("%s: outcomes %v; faults %v", cfg.name, res.counts, nm.counts)
	if res.result != porcupine.Ok {
		res.viz = keepViz(t, cfg.name, cfg.seed, info)
		if res.viz != "" {
			h.dump(t, strings.TrimSuffix(res.viz, ".html")+".jsonl")
		}
	}
	if cfg.converge {
		converged(t, c, cl)
	}
	return res
}

// definite sends in until it gets a definite answer (following 421's
// leader hints), recording every attempt in the history.
func (cl *clients) definite(in input, within time.Duration) bool {
	hc := &http.Client{Timeout: clientTimeout}
	proc := int(cl.nextProc.Add(1)) - 1
	target := 1
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		out, leader := cl.do(hc, proc, target, in)
		switch out.Outcome {
		case outRefused:
			if leader > 0 {
				target = leader
			} else {
				target = target%cl.c.n + 1
			}
		case outUnknown:
			proc = int(cl.nextProc.Add(1)) - 1
			target = target%cl.c.n + 1
		default:
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// converged requires every replica to reach the same applied offset and
// state digest (GET /status), at or past a write made after healing
// (D144).
func converged(t *testing.T, c *cluster, cl *clients) {
	require.True(t, cl.definite(input{Kind: opPut, Key: "k0", Value: "converged"}, 30*time.Second), "no write after healing")
	deadline := time.Now().Add(30 * time.Second)
	var last []string
	for time.Now().Before(deadline) {
		last = last[:0]
		same := true
		var first status
		for id := 1; id <= c.n; id++ {
			st, err := c.status(id)
			if err != nil {
				same = false
				last = append(last, fmt.Sprintf("node %d: %v", id, err))
				continue
			}
			last = append(last, fmt.Sprintf("node %d: %s epoch %d applied %d digest %.16s", id, st.Role, st.Epoch, st.State.Applied, st.State.Digest))
			if id == 1 {
				first = st
			} else if st.State.Applied != first.State.Applied || st.State.Digest != first.State.Digest {
				same = false
			}
		}
		if same && first.State.Applied > 0 {
			t.Logf("converged: %s", strings.Join(last, "; "))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the replicas did not converge within 30s of healing:\n%s", strings.Join(last, "\n"))
}

// TestKVLinearizableUnderFaults is the Jepsen-style test of kraftd's
// key-value API (D140): concurrent clients on three keys, the nemesis's
// kills, pauses, partitions (symmetric, one-way, bridge, the leader
// isolated), resignations, slow disks and, in a dynamic quorum, voter
// removals and additions, then Porcupine's check of the whole history,
// which must be linearizable, and the replicas' convergence. It runs a
// static quorum and a dynamic one (KIP-853) for half the time each (D163).
// KRAFT_JEPSEN_SECONDS (default 30, both runs together),
// KRAFT_JEPSEN_QUORUM (both, static or dynamic), KRAFT_JEPSEN_SEED
// (default 1), KRAFT_JEPSEN_NODES (3 or 5) and KRAFT_JEPSEN_CLIENTS
// (default 6) set the runs.
func TestKVLinearizableUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	bin := buildKraftd(t, t.TempDir(), "")
	kinds := []string{"static", "dynamic"}
	switch q := os.Getenv("KRAFT_JEPSEN_QUORUM"); q {
	case "", "both":
	case "static", "dynamic":
		kinds = []string{q}
	default:
		t.Fatalf("KRAFT_JEPSEN_QUORUM=%q: want both, static or dynamic", q)
	}
	total := time.Duration(envInt(t, "KRAFT_JEPSEN_SECONDS", 30)) * time.Second
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			res := run(t, runConfig{
				name: "release-" + kind, bin: bin,
				seed:     envInt(t, "KRAFT_JEPSEN_SEED", 1),
				nodes:    int(envInt(t, "KRAFT_JEPSEN_NODES", 3)),
				workers:  int(envInt(t, "KRAFT_JEPSEN_CLIENTS", 6)),
				duration: total / time.Duration(len(kinds)),
				converge: true,
				dynamic:  kind == "dynamic",
			})
			require.Equal(t, porcupine.Ok, res.result,
				"the history of %d operations is not linearizable (or the check timed out): visualisation in %s\nnemesis:\n%s",
				res.ops, res.viz, strings.Join(res.nemesis, "\n"))
			require.Greater(t, res.counts[outOK], 100, "too few successful operations to mean anything")
			require.Equal(t, res.faults[faultSlowDisk], res.slowStarts, "every slow-disk start runs with the sync delay")
			t.Logf("nemesis:\n%s", strings.Join(res.nemesis, "\n"))
		})
	}
}
