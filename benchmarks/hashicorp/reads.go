package main

// runtimebench reads: linearizable reads against committed writes, at the
// same concurrency, on the same three-voter cluster (issue 35 item 2: reads
// at least 5x the writes with 16 clients). See ../README.md, "Reads".

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The operations a read measurement times, one phase each, in this order,
// on one cluster:
//
//   - opWrite: an append committed at the leader (kraft Node.Append;
//     hashicorp Apply(...).Error(), which waits for the leader's FSM);
//   - opRead: a linearizable read that writes nothing (kraft
//     Node.ReadIndex, which waits until the point is applied; hashicorp
//     CommitIndex, then VerifyLeader().Error(), then a wait until
//     AppliedIndex reaches that commit index: the read index of the Raft
//     paper, which CommitIndex's documentation points to);
//   - opBarrier (hashicorp only): Barrier(0).Error(), the read barrier
//     hashicorp documents ("blocks until all preceding operations have
//     been applied to the FSM"), which appends a log entry and waits for
//     its commit and application. kraft's ReadBarrier is ReadIndex
//     (docs/design.md D122), so it has no phase of its own.
const (
	opWrite   = "write"
	opRead    = "read"
	opBarrier = "barrier"
)

func readOps(lib string) []string {
	if lib == "hashicorp" {
		return []string{opWrite, opRead, opBarrier}
	}
	return []string{opWrite, opRead}
}

// readSpec is one read measurement: one library, one cell, every phase.
type readSpec struct {
	Lib        string
	Cell       cell
	Clients    int
	Duration   time.Duration // each phase
	Warmup     int           // appends before the first phase
	TmpDir     string
	CPUProfile string // of the read phase
}

// phaseResult is one phase's figures.
type phaseResult struct {
	Op         string        `json:"op"`
	Ops        int64         `json:"ops"`
	PerSec     float64       `json:"per_sec"`
	P50        time.Duration `json:"p50"`
	P99        time.Duration `json:"p99"`
	Max        time.Duration `json:"max"`
	Errors     int64         `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
}

// readResult is what one read measurement found.
type readResult struct {
	Lib     string        `json:"lib"`
	Cell    string        `json:"cell"`
	Clients int           `json:"clients"`
	Round   int           `json:"round"`
	Phases  []phaseResult `json:"phases"`
	Leaked  int           `json:"leaked"`
	Err     string        `json:"err,omitempty"`
}

func (r readResult) phase(op string) (phaseResult, bool) {
	for _, p := range r.Phases {
		if p.Op == op {
			return p, true
		}
	}
	return phaseResult{}, false
}

// read does one linearizable read of the leader's (empty) state machine.
func (c *kraftCluster) read(op string) error {
	if op != opRead {
		return fmt.Errorf("kraft: no read %q", op)
	}
	c.mu.Lock()
	l := c.leader
	c.mu.Unlock()
	_, err := l.ReadIndex(context.Background())
	return err
}

// appliedWait bounds hashicorp's wait for AppliedIndex in a read.
const appliedWait = 10 * time.Second

func (c *hashiCluster) read(op string) error {
	c.mu.Lock()
	l := c.leader
	c.mu.Unlock()
	switch op {
	case opBarrier:
		return l.Barrier(0).Error()
	case opRead:
		ci := l.CommitIndex()
		if err := l.VerifyLeader().Error(); err != nil {
			return err
		}
		// AppliedIndex has no notification: poll (in a read-only phase
		// it is at the commit index already).
		deadline := time.Now().Add(appliedWait)
		for l.AppliedIndex() < ci {
			if time.Now().After(deadline) {
				return errors.New("hashicorp: commit index not applied")
			}
			time.Sleep(20 * time.Microsecond)
		}
		return nil
	}
	return fmt.Errorf("hashicorp: no read %q", op)
}

// measureReads starts a cluster, appends s.Warmup records, then times each
// of the library's phases for s.Duration with s.Clients clients, and
// closes the cluster.
func measureReads(s readSpec) (res readResult) {
	res = readResult{Lib: s.Lib, Cell: s.Cell.Name, Clients: s.Clients}
	runtime.GC()
	base := runtime.NumGoroutine()
	c, err := startCluster(s.Lib, s.Cell.Durable, s.TmpDir)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	closed := false
	defer func() {
		if !closed {
			_ = c.close()
		}
	}()
	rd, ok := c.(interface{ read(string) error })
	if !ok {
		res.Err = "no reads"
		return res
	}
	newRecord := func(seq uint64) []byte {
		rec := make([]byte, s.Cell.Size)
		binary.LittleEndian.PutUint64(rec, seq)
		return rec
	}
	for i := 0; i < s.Warmup; i++ {
		if err := c.append(newRecord(uint64(i))); err != nil {
			_ = c.relead()
		}
	}
	for _, op := range readOps(s.Lib) {
		var do func(seq uint64) error
		if op == opWrite {
			do = func(seq uint64) error { return c.append(newRecord(seq)) }
		} else {
			op := op
			do = func(uint64) error { return rd.read(op) }
		}
		var prof *os.File
		if op == opRead && s.CPUProfile != "" {
			if prof, err = os.Create(s.CPUProfile); err != nil {
				res.Err = err.Error()
				return res
			}
			if err := pprof.StartCPUProfile(prof); err != nil {
				res.Err = err.Error()
				return res
			}
		}
		p := timedPhase(s.Clients, s.Duration, do, func() { _ = c.relead() })
		if prof != nil {
			pprof.StopCPUProfile()
			_ = prof.Close()
		}
		p.Op = op
		res.Phases = append(res.Phases, p)
	}
	closed = true
	if err := c.close(); err != nil {
		res.Err = "close: " + err.Error()
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	res.Leaked = runtime.NumGoroutine() - base
	return res
}

// timedPhase runs do from clients goroutines for d and measures it; after
// a failed call it runs relead.
func timedPhase(clients int, d time.Duration, do func(seq uint64) error, relead func()) phaseResult {
	var (
		res      phaseResult
		errs     atomic.Int64
		firstErr atomic.Value
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	lats := make([][]time.Duration, clients)
	start := time.Now()
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	for i := 0; i < clients; i++ {
		lats[i] = make([]time.Duration, 0, 1<<15)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			seq := uint64(i) << 40
			for !stop.Load() {
				seq++
				t := time.Now()
				if err := do(seq); err != nil {
					if errs.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					relead()
					continue
				}
				lats[i] = append(lats[i], time.Since(t))
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	timer.Stop()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	res.Ops = int64(len(all))
	res.PerSec = float64(res.Ops) / elapsed.Seconds()
	if len(all) > 0 {
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		res.P50, res.P99, res.Max = quantile(all, 0.50), quantile(all, 0.99), all[len(all)-1]
	}
	res.Errors = errs.Load()
	if v, ok := firstErr.Load().(string); ok {
		res.FirstError = v
	}
	return res
}

// readsMain is "runtimebench reads [flags]".
func readsMain(args []string) {
	fs := flag.NewFlagSet("reads", flag.ExitOnError)
	var (
		child      = fs.Bool("child", false, "run one measurement in this process and print it as JSON (used by the parent)")
		lib        = fs.String("lib", "", "with -child: kraft or hashicorp")
		round      = fs.Int("round", 0, "with -child: the round number, echoed in the result")
		dur        = fs.Duration("d", 2*time.Second, "length of each timed phase")
		rounds     = fs.Int("rounds", 3, "rounds; each runs every cell once per library, kraft first")
		warmup     = fs.Int("warmup", 1000, "records appended before the first phase")
		cellsFlag  = fs.String("cells", "mem-100,durable-100", "cells to run (the record size is the writes')")
		clients    = fs.Int("clients", 16, "concurrent clients at the leader, in every phase")
		libsFlag   = fs.String("libs", "kraft,hashicorp", "libraries to run")
		tmpdir     = fs.String("tmpdir", "", "where the durable cells keep their files")
		cpuprofile = fs.String("cpuprofile", "", "write a CPU profile of each read phase to `file` (the parent adds .<lib>.<cell>.r<round>)")
		stall      = fs.Duration("stall", 3*time.Minute, "a measurement that takes longer is stopped")
		jsonOut    = fs.String("json", "", "also write every measurement as a JSON line to `file`")
		verbose    = fs.Bool("v", false, "print every measurement as it ends")
	)
	_ = fs.Parse(args)
	cells := parseCells(*cellsFlag)
	if *child {
		if len(cells) != 1 {
			fatalf("-child needs one cell")
		}
		runReadChild(readSpec{Lib: *lib, Cell: cells[0], Clients: *clients, Duration: *dur,
			Warmup: *warmup, TmpDir: *tmpdir, CPUProfile: *cpuprofile}, *round, *stall)
		return
	}
	run := parseLibs(*libsFlag)
	self, err := os.Executable()
	if err != nil {
		fatalf("%v", err)
	}
	var js io.Writer = io.Discard
	if *jsonOut != "" {
		f, err := os.Create(*jsonOut)
		if err != nil {
			fatalf("%v", err)
		}
		defer f.Close()
		js = f
	}
	results := map[string][]readResult{} // lib/cell
	var odd []string
	start := time.Now()
	total, done := *rounds*len(cells)*len(run), 0
	for r := 1; r <= *rounds; r++ {
		for _, c := range cells {
			for _, l := range run {
				done++
				fmt.Fprintf(os.Stderr, "[%d/%d %s] round %d %s %s\n", done, total, time.Since(start).Round(time.Second), r, c.Name, l)
				cargs := []string{"reads", "-child", "-lib", l, "-cells", c.Name, "-round", strconv.Itoa(r),
					"-clients", strconv.Itoa(*clients), "-d", dur.String(), "-warmup", strconv.Itoa(*warmup),
					"-stall", stall.String()}
				if *cpuprofile != "" {
					cargs = append(cargs, "-cpuprofile", fmt.Sprintf("%s.%s.%s.r%d", *cpuprofile, l, c.Name, r))
				}
				res, err := readChildInTemp(self, *tmpdir, cargs)
				if err != nil {
					odd = append(odd, fmt.Sprintf("round %d %s %s: %v", r, c.Name, l, err))
					fmt.Fprintf(os.Stderr, "  failed: %v\n", err)
					continue
				}
				odd = append(odd, noteRead(js, res, fmt.Sprintf("round %d %s %s", r, c.Name, l), *verbose)...)
				results[l+"/"+c.Name] = append(results[l+"/"+c.Name], res)
			}
		}
	}
	printReads(os.Stdout, cells, *clients, results)
	fmt.Printf("\n%d measurements in %v (%d rounds, %v per phase, %d clients).\n",
		total, time.Since(start).Round(time.Second), *rounds, *dur, *clients)
	printNoted(odd)
}

// readChildInTemp runs readChild with args and -tmpdir, a fresh temporary
// directory under tmpdir, which is removed afterwards; a child that left
// files there failed.
func readChildInTemp(self, tmpdir string, args []string) (readResult, error) {
	tmp, err := os.MkdirTemp(tmpdir, "runtimebench-")
	if err != nil {
		fatalf("%v", err)
	}
	res, err := readChild(self, append(args, "-tmpdir", tmp))
	if left, _ := os.ReadDir(tmp); err == nil && len(left) > 0 {
		err = fmt.Errorf("child left %d entries in its temporary directory", len(left))
	}
	_ = os.RemoveAll(tmp)
	return res, err
}

// runReadChild runs one measurement and prints its result as one JSON
// line on stdout; one that takes longer than stall exits with 3.
func runReadChild(s readSpec, round int, stall time.Duration) {
	watchdog := time.AfterFunc(stall, func() {
		fmt.Fprintf(os.Stderr, "runtimebench reads: %s %s stalled after %v:\n", s.Lib, s.Cell.Name, stall)
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		os.Exit(3)
	})
	res := measureReads(s)
	watchdog.Stop()
	res.Round = round
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fatalf("%v", err)
	}
}

// noteRead writes res as a JSON line to js, prints its phases if
// verbose, and returns what was odd about it, each line starting with
// what, the measurement.
func noteRead(js io.Writer, res readResult, what string, verbose bool) []string {
	var odd []string
	line, _ := json.Marshal(res)
	fmt.Fprintf(js, "%s\n", line)
	for _, p := range res.Phases {
		if verbose {
			fmt.Fprintf(os.Stderr, "  %-7s %8.0f/s p50 %v p99 %v max %v errors %d\n", p.Op, p.PerSec, p.P50, p.P99, p.Max, p.Errors)
		}
		if p.Errors > 0 {
			odd = append(odd, fmt.Sprintf("%s %s: %d failed (first: %s)", what, p.Op, p.Errors, p.FirstError))
		}
	}
	if res.Leaked > 0 {
		odd = append(odd, fmt.Sprintf("%s: %d goroutines left after close", what, res.Leaked))
	}
	return odd
}

func readChild(self string, args []string) (readResult, error) {
	cmd := exec.CommandContext(context.Background(), self, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	runErr := cmd.Run()
	var res readResult
	found := false
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if json.Unmarshal(sc.Bytes(), &res) == nil {
			found = true
		}
	}
	switch {
	case runErr != nil:
		return res, fmt.Errorf("child: %w", runErr)
	case !found:
		return res, errors.New("child printed no result")
	case res.Err != "":
		return res, errors.New(res.Err)
	}
	return res, nil
}

// printReads prints the medians over rounds: per cell and library, the
// writes/s, the reads/s and their ratio (the ratio is the median of the
// rounds' ratios, each from one cluster), and the latencies.
func printReads(w io.Writer, cells []cell, clients int, results map[string][]readResult) {
	med := func(rs []readResult, f func(readResult) (float64, bool)) (float64, bool) {
		var vs []float64
		for _, r := range rs {
			if v, ok := f(r); ok {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			return 0, false
		}
		return median(vs), true
	}
	rate := func(op string) func(readResult) (float64, bool) {
		return func(r readResult) (float64, bool) {
			p, ok := r.phase(op)
			return p.PerSec, ok && p.Ops > 0
		}
	}
	ratioOf := func(op string) func(readResult) (float64, bool) {
		return func(r readResult) (float64, bool) {
			p, ok := r.phase(op)
			wp, wok := r.phase(opWrite)
			return p.PerSec / wp.PerSec, ok && wok && wp.Ops > 0
		}
	}
	lat := func(op string, q func(phaseResult) time.Duration) func(readResult) (float64, bool) {
		return func(r readResult) (float64, bool) {
			p, ok := r.phase(op)
			return float64(q(p)), ok && p.Ops > 0
		}
	}
	num := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%.0f", v)
	}
	rat := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("**%.2f**", v)
	}
	durOK := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return dur(v)
	}
	p50 := func(p phaseResult) time.Duration { return p.P50 }
	p99 := func(p phaseResult) time.Duration { return p.P99 }
	fmt.Fprintf(w, "%d clients. kraft: Append, ReadIndex. hashicorp: Apply; CommitIndex + VerifyLeader + AppliedIndex wait; Barrier.\n\n", clients)
	fmt.Fprintln(w, "| cell | library | writes/s | reads/s | reads/writes | barriers/s | barriers/writes | write p50 / p99 | read p50 / p99 | barrier p50 / p99 | rounds |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, c := range cells {
		for _, l := range libs {
			rs, ok := results[l+"/"+c.Name]
			if !ok {
				continue
			}
			lats := func(op string) string {
				a, aok := med(rs, lat(op, p50))
				b, bok := med(rs, lat(op, p99))
				if !aok || !bok {
					return "-"
				}
				return durOK(a, aok) + " / " + durOK(b, bok)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
				c.Label, l,
				num(med(rs, rate(opWrite))), num(med(rs, rate(opRead))), rat(med(rs, ratioOf(opRead))),
				num(med(rs, rate(opBarrier))), strings.ReplaceAll(rat(med(rs, ratioOf(opBarrier))), "**", ""),
				lats(opWrite), lats(opRead), lats(opBarrier), len(rs))
		}
	}
}
