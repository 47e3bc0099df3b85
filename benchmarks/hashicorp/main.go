// Command runtimebench runs kraft's runtime (package node) and
// hashicorp/raft side by side: three voters in one process, clients
// appending at the leader until their record is committed, in memory and
// durably (TCP on loopback, fsynced logs). See ../README.md.
//
// Every measurement runs in a fresh child process (this program run with
// -child), so that the libraries' heaps never mix; the parent runs the
// rounds in turns (kraft, hashicorp, kraft, hashicorp, ...) and prints the
// medians as a markdown table.
//
//	go run . [-d 2s] [-rounds 3] [-records 2000] [-cells mem-100,...] [-clients 1,16,64]
package main

import (
	"bufio"
	"bytes"
	"context"
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
	"time"
)

var libs = []string{"kraft", "hashicorp"}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "reads" {
		readsMain(os.Args[2:]) // reads.go
		return
	}
	var (
		child      = flag.Bool("child", false, "run one measurement in this process and print it as JSON (used by the parent)")
		lib        = flag.String("lib", "", "with -child: kraft or hashicorp")
		round      = flag.Int("round", 0, "with -child: the round number, echoed in the result")
		dur        = flag.Duration("d", 2*time.Second, "length of the timed phase of one measurement")
		rounds     = flag.Int("rounds", 3, "rounds; each runs every cell once per library, kraft first")
		records    = flag.Int("records", 2000, "records appended before the live heap is measured (also the warm-up)")
		cellsFlag  = flag.String("cells", "mem-100,mem-1k,durable-100,durable-1k", "cells to run")
		clientsArg = flag.String("clients", "1,16,64", "concurrent clients at the leader")
		libsFlag   = flag.String("libs", "kraft,hashicorp", "libraries to run")
		tmpdir     = flag.String("tmpdir", "", "where the durable cells keep their files (default: the system's temporary directory)")
		cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of each timed phase to `file` (the parent adds .<lib>.<cell>.c<clients>.r<round>)")
		memprofile = flag.String("memprofile", "", "write a heap profile after each timed phase to `file` (suffixed like -cpuprofile)")
		stall      = flag.Duration("stall", 3*time.Minute, "a measurement that takes longer is stopped: its goroutines are summarized and it counts as failed")
		jsonOut    = flag.String("json", "", "also write every measurement as a JSON line to `file`")
		verbose    = flag.Bool("v", false, "print every measurement as it ends")
		nVoters    = flag.Int("voters", 3, "voters in each cluster (1: one writer on the disk, no network on the append's path)")
	)
	flag.Parse()
	if *nVoters < 1 {
		fatalf("-voters: at least 1")
	}
	voters = *nVoters
	clients, err := parseInts(*clientsArg)
	if err != nil {
		fatalf("-clients: %v", err)
	}
	cells := parseCells(*cellsFlag)
	if *child {
		if len(cells) != 1 || len(clients) != 1 {
			fatalf("-child needs one cell and one client count")
		}
		runChild(spec{
			Lib: *lib, Cell: cells[0], Clients: clients[0], Duration: *dur, Records: *records,
			TmpDir: *tmpdir, CPUProfile: *cpuprofile, MemProfile: *memprofile,
		}, *round, *stall)
		return
	}
	run := parseLibs(*libsFlag)
	p := parent{
		cells: cells, clients: clients, libs: run, rounds: *rounds,
		args: []string{
			"-d", dur.String(), "-records", strconv.Itoa(*records), "-stall", stall.String(),
			"-voters", strconv.Itoa(voters),
		},
		tmpdir: *tmpdir, cpuprofile: *cpuprofile, memprofile: *memprofile,
		jsonOut: *jsonOut, verbose: *verbose,
	}
	if err := p.run(); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "runtimebench: "+format+"\n", args...)
	os.Exit(2)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseCells is the cells -cells names; it exits on an unknown one.
func parseCells(list string) []cell {
	var cells []cell
	for _, name := range splitList(list) {
		c, ok := cellNamed(name)
		if !ok {
			fatalf("-cells: unknown cell %q", name)
		}
		cells = append(cells, c)
	}
	return cells
}

// parseLibs is the libraries -libs names; it exits on an unknown one.
func parseLibs(list string) []string {
	var run []string
	for _, l := range splitList(list) {
		if l != "kraft" && l != "hashicorp" {
			fatalf("-libs: unknown library %q", l)
		}
		run = append(run, l)
	}
	return run
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runChild runs one measurement and prints its result as one JSON line on
// stdout. A measurement that takes longer than stall is cut short: the
// goroutines are summarized on stderr and the process exits with 3.
func runChild(s spec, round int, stall time.Duration) {
	watchdog := time.AfterFunc(stall, func() {
		fmt.Fprintf(os.Stderr, "runtimebench: %s %s clients=%d stalled after %v; %d goroutines:\n",
			s.Lib, s.Cell.Name, s.Clients, stall, runtime.NumGoroutine())
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		os.Exit(3)
	})
	res := measure(s)
	watchdog.Stop()
	res.Round = round
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fatalf("%v", err)
	}
}

type parent struct {
	cells      []cell
	clients    []int
	libs       []string
	rounds     int
	args       []string
	tmpdir     string
	cpuprofile string
	memprofile string
	jsonOut    string
	verbose    bool
}

type key struct {
	cell    string
	clients int
	lib     string
}

func (p parent) run() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var js io.Writer = io.Discard
	if p.jsonOut != "" {
		f, err := os.Create(p.jsonOut)
		if err != nil {
			return err
		}
		defer f.Close()
		js = f
	}
	results := map[key][]result{}
	var odd []string
	start := time.Now()
	total := p.rounds * len(p.cells) * len(p.clients) * len(p.libs)
	done := 0
	var lims []limit
	for r := 1; r <= p.rounds; r++ {
		if p.anyDurable() {
			l, err := measureLimit(limitDir(p.tmpdir), 100, 500)
			if err != nil {
				return fmt.Errorf("measuring the physical limit: %w", err)
			}
			fmt.Fprintf(os.Stderr, "round %d: fsync p50 %v, loopback round trip p50 %v, three syncs at once p50 %v\n", r, l.Fsync, l.RTT, l.Shared)
			lims = append(lims, l)
		}
		for _, c := range p.cells {
			for _, n := range p.clients {
				for _, lib := range p.libs {
					done++
					fmt.Fprintf(os.Stderr, "[%d/%d %s] round %d %s clients=%d %s\n",
						done, total, time.Since(start).Round(time.Second), r, c.Name, n, lib)
					res, err := p.child(self, lib, c, n, r)
					if err != nil {
						odd = append(odd, fmt.Sprintf("round %d %s clients=%d %s: %v", r, c.Name, n, lib, err))
						fmt.Fprintf(os.Stderr, "  failed: %v\n", err)
						continue
					}
					line, _ := json.Marshal(res)
					fmt.Fprintf(js, "%s\n", line)
					if p.verbose {
						fmt.Fprintf(os.Stderr, "  %.0f appends/s p50 %v p99 %v max %v heap/replica %s allocs/append %.1f startup %v goroutines %d errors %d\n",
							res.PerSec, res.P50, res.P99, res.Max, human(res.Heap), res.Allocs, res.Startup.Round(time.Millisecond), res.Goroutines, res.Errors)
					}
					if res.Errors > 0 {
						odd = append(odd, fmt.Sprintf("round %d %s clients=%d %s: %d failed appends (first: %s)", r, c.Name, n, lib, res.Errors, res.FirstError))
					}
					if res.Leaked > 0 {
						odd = append(odd, fmt.Sprintf("round %d %s clients=%d %s: %d goroutines left after close", r, c.Name, n, lib, res.Leaked))
					}
					if res.GoroutinesAt != "" {
						odd = append(odd, fmt.Sprintf("round %d %s clients=%d %s: %d goroutines at the end of the timed phase (%s)", r, c.Name, n, lib, res.Goroutines, res.GoroutinesAt))
					}
					if res.Max > time.Second {
						odd = append(odd, fmt.Sprintf("round %d %s clients=%d %s: slowest append took %v (p99 %v)", r, c.Name, n, lib, res.Max.Round(time.Millisecond), res.P99))
					}
					k := key{c.Name, n, lib}
					results[k] = append(results[k], res)
				}
			}
		}
	}
	wall := time.Since(start)
	p.print(os.Stdout, results)
	p.limitTable(os.Stdout, lims, results)
	fmt.Printf("\n%d measurements in %v (%d rounds, %s per timed phase, %s).\n",
		total, wall.Round(time.Second), p.rounds, p.args[1], strings.Join(p.args[2:4], " "))
	printNoted(odd)
	return nil
}

// printNoted prints what was odd about the measurements, if anything.
func printNoted(odd []string) {
	if len(odd) > 0 {
		fmt.Printf("\nNoted:\n\n")
		for _, o := range odd {
			fmt.Printf("- %s\n", o)
		}
	}
}

// child runs one measurement in a fresh process, with its own temporary
// directory, which is removed afterwards whatever the child left there.
func (p parent) child(self, lib string, c cell, clients, round int) (result, error) {
	tmp, err := os.MkdirTemp(p.tmpdir, "runtimebench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(tmp)
	args := append([]string{
		"-child", "-lib", lib, "-cells", c.Name, "-clients", strconv.Itoa(clients),
		"-round", strconv.Itoa(round), "-tmpdir", tmp,
	}, p.args...)
	suffix := fmt.Sprintf(".%s.%s.c%d.r%d", lib, c.Name, clients, round)
	if p.cpuprofile != "" {
		args = append(args, "-cpuprofile", p.cpuprofile+suffix)
	}
	if p.memprofile != "" {
		args = append(args, "-memprofile", p.memprofile+suffix)
	}
	cmd := exec.CommandContext(context.Background(), self, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	runErr := cmd.Run()
	var res result
	sc := bufio.NewScanner(&out)
	found := false
	for sc.Scan() {
		if err := json.Unmarshal(sc.Bytes(), &res); err == nil {
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
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		return res, fmt.Errorf("child left %d entries in its temporary directory", len(left))
	}
	return res, nil
}

func (p parent) print(w io.Writer, results map[key][]result) {
	med := func(k key, f func(result) float64) (float64, bool) {
		rs := results[k]
		if len(rs) == 0 {
			return 0, false
		}
		vs := make([]float64, len(rs))
		for i, r := range rs {
			vs[i] = f(r)
		}
		return median(vs), true
	}
	perSec := func(r result) float64 { return r.PerSec }
	p99 := func(r result) float64 { return float64(r.P99) }
	p50 := func(r result) float64 { return float64(r.P50) }
	maxLat := func(r result) float64 { return float64(r.Max) }
	heap := func(r result) float64 { return r.Heap }
	allocs := func(r result) float64 { return r.Allocs }
	bytesPer := func(r result) float64 { return r.Bytes }

	fmt.Fprintln(w, "| cell | clients | kraft appends/s | hashicorp appends/s | ratio | kraft p99 | hashicorp p99 | ratio | heap/replica k/h | allocs/append k/h |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, c := range p.cells {
		for _, n := range p.clients {
			k, h := key{c.Name, n, "kraft"}, key{c.Name, n, "hashicorp"}
			ka, kok := med(k, perSec)
			ha, hok := med(h, perSec)
			kp, _ := med(k, p99)
			hp, _ := med(h, p99)
			kh, _ := med(k, heap)
			hh, _ := med(h, heap)
			kal, _ := med(k, allocs)
			hal, _ := med(h, allocs)
			cellf := func(ok bool, s string) string {
				if !ok {
					return "-"
				}
				return s
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n",
				c.Label, n,
				cellf(kok, fmt.Sprintf("%.0f", ka)), cellf(hok, fmt.Sprintf("%.0f", ha)), ratio(ka, ha, kok && hok),
				cellf(kok, dur(kp)), cellf(hok, dur(hp)), ratio(kp, hp, kok && hok),
				cellf(kok, human(kh)), cellf(hok, human(hh)),
				cellf(kok, fmt.Sprintf("%.1f", kal)), cellf(hok, fmt.Sprintf("%.1f", hal)))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| cell | clients | kraft p50 | hashicorp p50 | kraft max | hashicorp max | B/append k/h | rounds k/h |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, c := range p.cells {
		for _, n := range p.clients {
			k, h := key{c.Name, n, "kraft"}, key{c.Name, n, "hashicorp"}
			kp, kok := med(k, p50)
			hp, hok := med(h, p50)
			km, _ := med(k, maxLat)
			hm, _ := med(h, maxLat)
			kb, _ := med(k, bytesPer)
			hb, _ := med(h, bytesPer)
			cellf := func(ok bool, s string) string {
				if !ok {
					return "-"
				}
				return s
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s / %s | %d / %d |\n",
				c.Label, n, cellf(kok, dur(kp)), cellf(hok, dur(hp)), cellf(kok, dur(km)), cellf(hok, dur(hm)),
				cellf(kok, human(kb)), cellf(hok, human(hb)), len(results[k]), len(results[h]))
		}
	}
}

func median(vs []float64) float64 {
	sort.Float64s(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

func ratio(a, b float64, ok bool) string {
	if !ok || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func dur(ns float64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	}
	return fmt.Sprintf("%.2f s", ns/1e9)
}

func human(b float64) string {
	switch {
	case b < 0:
		return "0 B"
	case b < 1<<10:
		return fmt.Sprintf("%.0f B", b)
	case b < 1<<20:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	case b < 1<<30:
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", b/(1<<30))
}
