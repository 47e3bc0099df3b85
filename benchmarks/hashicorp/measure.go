package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// cell is one configuration both libraries run.
type cell struct {
	Name    string // flag name
	Label   string // table label
	Durable bool   // TCP on loopback and fsynced logs; else all in memory
	Size    int    // record bytes
}

var allCells = []cell{
	{"mem-100", "in memory, 100 B", false, 100},
	{"mem-1k", "in memory, 1 KiB", false, 1024},
	{"durable-100", "TCP + fsync, 100 B", true, 100},
	{"durable-1k", "TCP + fsync, 1 KiB", true, 1024},
}

func cellNamed(name string) (cell, bool) {
	for _, c := range allCells {
		if c.Name == name {
			return c, true
		}
	}
	return cell{}, false
}

// spec is one measurement: one library, one cell, one client count.
type spec struct {
	Lib        string
	Cell       cell
	Clients    int
	Duration   time.Duration // the timed phase
	Records    int           // appended before the heap is measured
	TmpDir     string
	CPUProfile string // the timed phase
	MemProfile string // written after the timed phase
}

// result is what one measurement found. Durations are in nanoseconds.
type result struct {
	Lib     string `json:"lib"`
	Cell    string `json:"cell"`
	Clients int    `json:"clients"`
	Round   int    `json:"round"`

	Appends     int64         `json:"appends"` // committed in the timed phase
	Seconds     float64       `json:"seconds"`
	PerSec      float64       `json:"per_sec"`
	P50         time.Duration `json:"p50"`
	P99         time.Duration `json:"p99"`
	Max         time.Duration `json:"max"`
	Allocs      float64       `json:"allocs_per_append"`
	Bytes       float64       `json:"bytes_per_append"`
	HeapRecords int           `json:"heap_records"`
	Heap        float64       `json:"heap_per_replica"` // bytes
	Errors      int64         `json:"errors"`
	FirstError  string        `json:"first_error,omitempty"`
	Startup     time.Duration `json:"startup"`    // start to first committed record
	Goroutines  int           `json:"goroutines"` // at the end of the timed phase
	// GoroutinesAt summarizes them when there are more than manyGoroutines.
	GoroutinesAt string `json:"goroutines_at,omitempty"`
	Leaked       int    `json:"leaked"` // goroutines left after close
	LeakedAt     string `json:"leaked_at,omitempty"`
	Err          string `json:"err,omitempty"`
}

// manyGoroutines is more goroutines than either library's three voters
// and the clients need at rest: beyond it, the result says where they are.
const manyGoroutines = 200

// measure starts a cluster, appends s.Records records and measures the
// live heap, then appends from s.Clients clients for s.Duration and
// measures throughput, latency and allocations, and closes the cluster.
func measure(s spec) (res result) {
	res = result{Lib: s.Lib, Cell: s.Cell.Name, Clients: s.Clients, HeapRecords: s.Records}
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	baseGoroutines := runtime.NumGoroutine()
	runtime.ReadMemStats(&ms)
	baseHeap := ms.HeapAlloc

	t0 := time.Now()
	c, err := startCluster(s.Lib, s.Cell.Durable, s.TmpDir)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	res.Startup = time.Since(t0)
	closed := false
	defer func() {
		if !closed {
			_ = c.close()
		}
	}()

	var errs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		if errs.Add(1) == 1 {
			firstErr.Store(err.Error())
		}
		_ = c.relead()
	}
	newRecord := func(seq uint64) []byte {
		// A fresh record for every append, on both sides: hashicorp keeps
		// the caller's slice in its log, kraft copies it.
		rec := make([]byte, s.Cell.Size)
		binary.LittleEndian.PutUint64(rec, seq)
		return rec
	}

	// Phase 1: s.Records records, then the live heap.
	appendRecords(c, s, newRecord, fail)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	res.Heap = (float64(ms.HeapAlloc) - float64(baseHeap)) / float64(voters)

	// Phase 2: the timed appends.
	if !res.measureTimed(c, s, newRecord, fail) {
		return res
	}
	res.Errors = errs.Load()
	if v, ok := firstErr.Load().(string); ok {
		res.FirstError = v
	}
	if s.MemProfile != "" {
		runtime.GC()
		if err := writeHeapProfile(s.MemProfile); err != nil {
			res.Err = err.Error()
		}
	}

	closed = true
	res.closeAndCountLeaks(c, baseGoroutines)
	return res
}

// measureTimed runs the timed appends of s (phase 2), with a CPU profile
// if s asks for one, and sets r's figures; false if it could not start.
func (r *result) measureTimed(c cluster, s spec, newRecord func(uint64) []byte, fail func(error)) bool {
	lats := make([][]time.Duration, s.Clients)
	for i := range lats {
		lats[i] = make([]time.Duration, 0, 1<<14)
	}
	if s.CPUProfile != "" {
		f, err := os.Create(s.CPUProfile)
		if err != nil {
			r.Err = err.Error()
			return false
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			r.Err = err.Error()
			return false
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs0, bytes0 := ms.Mallocs, ms.TotalAlloc
	elapsed := timedAppends(c, s, lats, newRecord, fail)
	runtime.ReadMemStats(&ms)
	if s.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	r.Goroutines = runtime.NumGoroutine()
	if r.Goroutines > manyGoroutines {
		// The count from the same dump as the summary: more may have
		// started since NumGoroutine.
		r.GoroutinesAt, r.Goroutines = goroutineSummary()
	}

	r.summarize(lats, elapsed, ms.Mallocs-mallocs0, ms.TotalAlloc-bytes0)
	return true
}

// appendRecords appends s.Records records from s.Clients clients.
func appendRecords(c cluster, s spec, newRecord func(uint64) []byte, fail func(error)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < s.Clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := next.Add(1)
				if k > int64(s.Records) {
					return
				}
				if err := c.append(newRecord(uint64(k))); err != nil {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
}

// timedAppends appends from s.Clients clients for s.Duration, recording
// client i's latencies in lats[i], and returns the time it took.
func timedAppends(c cluster, s spec, lats [][]time.Duration, newRecord func(uint64) []byte, fail func(error)) time.Duration {
	var wg sync.WaitGroup
	var stop atomic.Bool
	start := time.Now()
	timer := time.AfterFunc(s.Duration, func() { stop.Store(true) })
	for i := 0; i < s.Clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			seq := uint64(i) << 40
			for !stop.Load() {
				seq++
				rec := newRecord(seq)
				t := time.Now()
				err := c.append(rec)
				if err != nil {
					fail(err)
					continue
				}
				lats[i] = append(lats[i], time.Since(t))
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	timer.Stop()
	return elapsed
}

// summarize sets r's throughput, latency quantiles and allocations per
// append from the latencies lats of appends over elapsed that made
// mallocs allocations of bytes bytes in all.
func (r *result) summarize(lats [][]time.Duration, elapsed time.Duration, mallocs, bytes uint64) {
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	r.Appends = int64(len(all))
	r.Seconds = elapsed.Seconds()
	r.PerSec = float64(r.Appends) / elapsed.Seconds()
	if r.Appends > 0 {
		r.Allocs = float64(mallocs) / float64(r.Appends)
		r.Bytes = float64(bytes) / float64(r.Appends)
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		r.P50 = quantile(all, 0.50)
		r.P99 = quantile(all, 0.99)
		r.Max = all[len(all)-1]
	}
}

// closeAndCountLeaks closes c and counts the goroutines left above base.
func (r *result) closeAndCountLeaks(c cluster, base int) {
	if err := c.close(); err != nil && r.Err == "" {
		r.Err = "close: " + err.Error()
	}
	// Goroutines stop shortly after close returns (hashicorp's in-memory
	// pipelines, kraft's timers): give them a moment before counting.
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	r.Leaked = runtime.NumGoroutine() - base
	if r.Leaked > 0 {
		r.LeakedAt, _ = goroutineSummary()
	}
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}

// goroutineSummary is the innermost function outside the runtime of every
// goroutine, with counts, and how many goroutines there are.
func goroutineSummary() (string, int) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	total := 0
	counts := map[string]int{}
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // this goroutine
		}
		total++
		lines := strings.Split(g, "\n")
		if len(lines) < 2 {
			continue
		}
		f := lines[1]
		if j := strings.LastIndex(f, "("); j > 0 {
			f = f[:j]
		}
		// The innermost frame outside the runtime says more.
		for k := 1; k+1 < len(lines); k += 2 {
			if !strings.HasPrefix(lines[k], "runtime.") && !strings.HasPrefix(lines[k], "internal/") {
				f = lines[k]
				if j := strings.LastIndex(f, "("); j > 0 {
					f = f[:j]
				}
				break
			}
		}
		counts[f]++
	}
	fs := make([]string, 0, len(counts))
	for f := range counts {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool {
		if counts[fs[i]] != counts[fs[j]] {
			return counts[fs[i]] > counts[fs[j]]
		}
		return fs[i] < fs[j]
	})
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = fmt.Sprintf("%d× %s", counts[f], f)
	}
	return strings.Join(out, "; "), total + 1
}
