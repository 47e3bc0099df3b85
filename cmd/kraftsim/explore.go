package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/sim/explore"
)

// exploreConfig is what the -explore flags ask for.
type exploreConfig struct {
	on                                  bool
	maxEpoch                            int
	maxMessages, maxCrashes, maxAppends int
	maxDups, maxDepth, maxStates        int
	workers                             int
	timeout                             time.Duration
	liveness, full                      bool
	peerDowns                           bool
	maxDamages                          int
}

// exploreFlags registers the -explore flags on fs.
func exploreFlags(fs *flag.FlagSet) *exploreConfig {
	x := &exploreConfig{}
	fs.BoolVar(&x.on, "explore", false, "explore every reachable state of a small cluster (package sim/explore) instead of simulating; -voters (default 3 here) and -observers (default 0 here) set its size, -trace FILE writes a violation's path")
	fs.IntVar(&x.maxEpoch, "max-epoch", 2, "-explore: no replica's epoch goes past this")
	fs.IntVar(&x.maxMessages, "max-messages", 3, "-explore: at most this many messages in flight")
	fs.IntVar(&x.maxCrashes, "max-crashes", 1, "-explore: at most this many crashes along a path")
	fs.IntVar(&x.maxAppends, "max-appends", 1, "-explore: at most this many client appends along a path")
	fs.IntVar(&x.maxDups, "max-dups", 0, "-explore: at most this many duplicated messages along a path")
	fs.IntVar(&x.maxDepth, "max-depth", 0, "-explore: at most this many moves from the initial state (0: no limit)")
	fs.IntVar(&x.maxStates, "max-states", 0, "-explore: stop, incomplete, after this many distinct states (0: no limit)")
	fs.DurationVar(&x.timeout, "explore-timeout", 0, "-explore: stop, incomplete, after this wall time (0: no limit)")
	fs.BoolVar(&x.liveness, "liveness", false, "-explore: also check that a state with a leader is reachable from every explored state (keeps the state graph: more memory)")
	fs.IntVar(&x.workers, "workers", 0, "-explore: goroutines that expand the states (0: GOMAXPROCS); the result does not depend on it")
	fs.IntVar(&x.maxDamages, "max-damages", 0, "-explore: at most this many restarts on a disk whose synced records are damaged along a path (D98)")
	fs.BoolVar(&x.peerDowns, "peer-downs", false, "-explore: a follower's host may report its leader's process gone at any moment, true or not (D101)")
	fs.BoolVar(&x.full, "full-model", false, "-explore: turn the reductions off (every drop a move of its own, dead messages kept): for comparison")
	return x
}

// exploreFlagNames are the flags -explore takes.
var exploreFlagNames = map[string]bool{
	"explore": true, "voters": true, "observers": true, "max-epoch": true, "max-messages": true, "max-crashes": true,
	"max-appends": true, "max-dups": true, "max-depth": true, "max-states": true, "explore-timeout": true,
	"liveness": true, "full-model": true, "workers": true, "trace": true, "q": true, "wall": true, "peer-downs": true, "max-damages": true,
}

// exploreRun is kraftsim -explore. The output depends only on the flags,
// apart from the wall-clock and memory figures (left out with -wall=false).
func exploreRun(cfg config, x *exploreConfig, stdout, stderr *printer) int {
	for name := range cfg.set {
		if !exploreFlagNames[name] {
			return badUsage(stderr, "-explore cannot be combined with -%s", name)
		}
	}
	voters, observers := 3, 0
	if cfg.set["voters"] {
		voters = cfg.voters
	}
	if cfg.set["observers"] {
		observers = cfg.observers
	}
	b := explore.Bounds{
		Voters: voters, Observers: observers, MaxEpoch: kraft.Epoch(x.maxEpoch),
		MaxMessages: x.maxMessages, MaxCrashes: x.maxCrashes, MaxAppends: x.maxAppends,
		MaxDuplicates: x.maxDups, MaxDepth: x.maxDepth, PeerDowns: x.peerDowns, MaxDamages: x.maxDamages,
	}
	if x.maxStates < 0 || x.timeout < 0 || x.workers < 0 || x.maxDamages < 0 {
		return badUsage(stderr, "-max-states, -max-damages, -explore-timeout and -workers: want 0 or more")
	}
	opts := explore.Options{Bounds: b, Liveness: x.liveness, Full: x.full, MaxStates: x.maxStates, Timeout: x.timeout, Workers: x.workers}
	if !cfg.quiet {
		opts.Progress = func(s explore.Stats) {
			if cfg.wall {
				stdout.printf("  depth %3d: %s distinct states, %s transitions, %v, heap %s MB\n",
					s.Depth, thousands(s.Distinct), thousands(int(s.Transitions)), s.Elapsed.Round(time.Millisecond), thousands(int(s.PeakHeap>>20)))
			} else {
				stdout.printf("  depth %3d: %s distinct states, %s transitions\n", s.Depth, thousands(s.Distinct), thousands(int(s.Transitions)))
			}
		}
	}
	m, err := explore.New(opts)
	if err != nil {
		return badUsage(stderr, "-explore: %v", err)
	}
	downs := ""
	if b.MaxDamages > 0 {
		downs += fmt.Sprintf(", <= %d disk damages", b.MaxDamages)
	}
	if b.PeerDowns {
		downs += ", leader-down reports"
	}
	stdout.printf("explore: %d voters, %d observers, epoch <= %d, <= %d messages in flight, <= %d crashes, <= %d appends, <= %d duplicates, depth <= %s%s\n",
		b.Voters, b.Observers, b.MaxEpoch, b.MaxMessages, b.MaxCrashes, b.MaxAppends, b.MaxDuplicates, depthText(b.MaxDepth), downs)
	r := m.Run()
	printExploreSummary(stdout, cfg, b, r)
	if r.Violation == nil {
		printExplorePass(stdout, cfg, b, r)
		return exitOK
	}
	return exploreFailed(cfg, m, r, stdout, stderr)
}

// printExploreSummary prints the search's figures and how far into the
// bounds it went.
func printExploreSummary(stdout *printer, cfg config, b explore.Bounds, r explore.Result) {
	stdout.printf("\nSummary\n")
	stdout.printf("  distinct states        %s\n", thousands(r.Distinct))
	stdout.printf("  transitions            %s (%s cut off by a bound)\n", thousands(int(r.Transitions)), thousands(int(r.Pruned)))
	stdout.printf("  depth reached          %d\n", r.Depth)
	switch {
	case r.Complete:
		stdout.printf("  complete               true\n")
	case r.DepthLimited:
		stdout.printf("  complete               only within depth %d (the depth limit cut deeper states off)\n", b.MaxDepth)
	default:
		stdout.printf("  complete               false\n")
	}
	wt := r.Witness
	var leaders []string
	for e := kraft.Epoch(0); e < 64; e++ {
		if wt.HadLeader(e) {
			leaders = append(leaders, fmt.Sprint(e))
		}
	}
	if len(leaders) == 0 {
		leaders = []string{"none"}
	}
	stdout.printf("  highest epoch          %d (a leader in epoch %s)\n", wt.MaxEpoch, strings.Join(leaders, ", "))
	stdout.printf("  most in flight         %d\n", wt.MaxInFlight)
	stdout.printf("  states after a crash   %s (%s first reached by a crash that lost an unflushed tail)\n", thousands(wt.Crashed), thousands(wt.TailLosses))
	stdout.printf("  states after an append %s (at most %d client records committed)\n", thousands(wt.Appended), wt.MaxCommittedAppends)
	if r.LivenessChecked {
		stdout.printf("  stuck without leader   %s\n", thousands(r.Leaderless))
	}
	if cfg.wall {
		stdout.printf("  workers                %d\n", r.Workers)
		stdout.printf("  wall time              %v\n", r.Elapsed.Round(time.Millisecond))
		stdout.printf("  states per second      %s\n", thousands(int(r.StatesPerSec)))
		stdout.printf("  memory                 %s MB peak heap in use, %s MB from the OS\n", thousands(int(r.PeakHeap>>20)), thousands(int(r.Sys>>20)))
	}
}

// printExplorePass prints the verdict of a search without a violation.
func printExplorePass(stdout *printer, cfg config, b explore.Bounds, r explore.Result) {
	switch {
	case r.Complete:
		stdout.printf("\nPASS: every invariant held in every reachable state within the bounds\n")
	case r.DepthLimited:
		stdout.printf("\nPASS (incomplete): every invariant held in every state reachable within %d moves and the other bounds; the depth limit cut the search off\n", b.MaxDepth)
	default:
		stdout.printf("\nPASS (incomplete): every invariant held in every explored state; the search stopped early\n")
	}
	if cfg.trace != "" {
		stdout.printf("no violation: no trace written to %s\n", cfg.trace)
	}
}

// exploreFailed prints the violation's shortest path and writes its trace
// when asked.
func exploreFailed(cfg config, m *explore.Model, r explore.Result, stdout, stderr *printer) int {
	stdout.printf("\nFAIL: %v\nshortest path (%d moves):\n", r.Violation, len(r.Path))
	d, err := m.Describe(r.Path)
	stdout.printf("%s", d)
	if err != nil {
		stdout.printf("(describing the path failed: %v)\n", err)
	}
	if cfg.trace != "" {
		f, err := os.Create(cfg.trace)
		if err != nil {
			return badInput(stderr, "-trace: %v", err)
		}
		bw := bufio.NewWriter(f)
		err = m.WriteTrace(bw, r.Path)
		if err == nil {
			err = bw.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return badInput(stderr, "-trace: %v", err)
		}
		stdout.printf("trace of the path written to %s (kraftsim -replay %s plays it back)\n", cfg.trace, cfg.trace)
	}
	return exitFail
}

// exploreOnly returns a flag of set that only -explore takes, or "".
func exploreOnly(set map[string]bool) string {
	for _, name := range []string{"max-epoch", "max-messages", "max-crashes", "max-appends", "max-dups", "max-depth", "max-states", "explore-timeout", "liveness", "full-model", "workers", "peer-downs", "max-damages"} {
		if set[name] {
			return name
		}
	}
	return ""
}

func depthText(d int) string {
	if d == 0 {
		return "unlimited"
	}
	return fmt.Sprint(d)
}
