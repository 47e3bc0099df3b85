//go:build unix

package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The soak's flatness check (issue 38, docs/design.md D165, D166): while
// TestProcessSoak's client appends and its faults run, every replica's
// /metrics is sampled every few seconds; at the end the run is cut into
// quarters and the last quarter is held against the first. A leak grows
// with the requests served or the faults survived, so over ten minutes it
// outgrows any bound a quiet run keeps with room to spare.

// Flatness bounds (D166): the last quarter's against the first's.
const (
	// soakHeapFactor and soakHeapSlack: the last quarter's smallest live
	// heap at most soakHeapFactor times the first's plus soakHeapSlack.
	soakHeapFactor = 2
	soakHeapSlack  = 8 << 20
	// soakGoroutineSlack: the last quarter's fewest goroutines at most the
	// first quarter's most plus soakGoroutineSlack.
	soakGoroutineSlack = 20
	// soakThroughputDivisor: the last quarter's committed records per
	// second at least the first's divided by soakThroughputDivisor.
	soakThroughputDivisor = 3
)

// soakSampleInterval is KRAFTD_SOAK_SAMPLE (a Go duration), default 5s.
func soakSampleInterval(t *testing.T) time.Duration {
	s := os.Getenv("KRAFTD_SOAK_SAMPLE")
	if s == "" {
		return 5 * time.Second
	}
	d, err := time.ParseDuration(s)
	require.NoError(t, err, "KRAFTD_SOAK_SAMPLE")
	require.Positive(t, d, "KRAFTD_SOAK_SAMPLE")
	return d
}

// soakSample is one scrape of one replica's /metrics.
type soakSample struct {
	at         time.Duration // since sampling began
	id         int
	hwm        float64 // kafka_raft_high_watermark
	heapLive   float64 // go_gc_heap_live_bytes
	heapAlloc  float64 // go_memstats_heap_alloc_bytes
	goroutines float64 // go_goroutines
}

// scrapeGauges reads the unlabelled samples of a /metrics answer.
func scrapeGauges(client *http.Client, addr string) (map[string]float64, error) {
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.ContainsRune(line, '{') {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// startFlatness returns the soak's watch: it samples every live replica
// every interval, and its stop prints the quarters' table and checks
// flatness.
func startFlatness(t *testing.T, interval time.Duration) func(*cluster) func() {
	return func(c *cluster) func() {
		client := &http.Client{Timeout: time.Second}
		began := time.Now()
		var mu sync.Mutex
		var samples []soakSample
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				for _, id := range c.ids {
					p := c.procs[id]
					if !p.live() {
						continue // killed or paused: no sample
					}
					g, err := scrapeGauges(client, p.http)
					if err != nil {
						continue
					}
					s := soakSample{at: time.Since(began), id: id, hwm: g["kafka_raft_high_watermark"],
						heapLive: g["go_gc_heap_live_bytes"], heapAlloc: g["go_memstats_heap_alloc_bytes"], goroutines: g["go_goroutines"]}
					mu.Lock()
					samples = append(samples, s)
					mu.Unlock()
				}
				select {
				case <-done:
					return
				case <-tick.C:
				}
			}
		}()
		return func() {
			close(done)
			wg.Wait()
			span := time.Since(began)
			mu.Lock()
			defer mu.Unlock()
			qs := soakQuarters(c.ids, samples, span)
			t.Logf("soak flatness over %v, %d samples every %v (rec/s: committed records per second, from each replica's high watermark; heap: go_gc_heap_live_bytes, the smallest of the quarter, MiB; alloc: the largest go_memstats_heap_alloc_bytes, MiB; goroutines: fewest-most):",
				span.Round(time.Second), len(samples), interval)
			for _, line := range soakTable(c.ids, qs) {
				t.Log(line)
			}
			for _, msg := range soakFlatnessViolations(c.ids, qs) {
				t.Errorf("NOT FLAT: %s", msg)
			}
		}
	}
}

// soakQuarter is one replica's figures over one quarter of the run.
type soakQuarter struct {
	n                  int     // samples
	records            float64 // high watermark growth credited in the quarter
	secs               float64 // the quarter's length
	heapMin, allocMax  float64
	goroMin, goroMax   float64
	heapSeen, goroSeen bool
}

func (q soakQuarter) rate() float64 { return q.records / q.secs }

// soakQuarters cuts samples into four quarters of span, per replica. A
// replica's throughput is its high watermark's growth: each sample above
// the highest seen before credits the difference to its quarter, so a
// restart (high watermark unknown, then caught up) neither loses nor
// counts records twice.
func soakQuarters(ids []int, samples []soakSample, span time.Duration) map[int]*[4]soakQuarter {
	out := map[int]*[4]soakQuarter{}
	top := map[int]float64{}
	for _, id := range ids {
		out[id] = &[4]soakQuarter{}
		top[id] = math.NaN()
		for q := range out[id] {
			out[id][q] = soakQuarter{secs: span.Seconds() / 4, heapMin: math.Inf(1), goroMin: math.Inf(1)}
		}
	}
	for _, s := range samples {
		qi := int(4 * s.at / span)
		if qi > 3 {
			qi = 3
		}
		q := &out[s.id][qi]
		q.n++
		if s.hwm >= 0 {
			if math.IsNaN(top[s.id]) {
				top[s.id] = s.hwm
			} else if s.hwm > top[s.id] {
				q.records += s.hwm - top[s.id]
				top[s.id] = s.hwm
			}
		}
		if s.heapLive > 0 {
			q.heapMin, q.heapSeen = math.Min(q.heapMin, s.heapLive), true
		}
		q.allocMax = math.Max(q.allocMax, s.heapAlloc)
		if s.goroutines > 0 {
			q.goroMin, q.goroMax, q.goroSeen = math.Min(q.goroMin, s.goroutines), math.Max(q.goroMax, s.goroutines), true
		}
	}
	return out
}

// soakTable renders the quarters, a line per quarter, a column per
// replica.
func soakTable(ids []int, qs map[int]*[4]soakQuarter) []string {
	head := "quarter"
	for _, id := range ids {
		head += fmt.Sprintf(" | node %d: rec/s heap alloc goroutines", id)
	}
	lines := []string{head}
	for qi := 0; qi < 4; qi++ {
		line := fmt.Sprintf("Q%d     ", qi+1)
		for _, id := range ids {
			q := qs[id][qi]
			if q.n == 0 {
				line += " | no samples"
				continue
			}
			line += fmt.Sprintf(" | %7.0f %5.1f %5.1f %4.0f-%-4.0f", q.rate(), q.heapMin/(1<<20), q.allocMax/(1<<20), q.goroMin, q.goroMax)
		}
		lines = append(lines, line)
	}
	return lines
}

// soakFlatnessViolations checks each replica's last quarter against its
// first (D166). It asks for samples in both: a replica with none in one
// of them is a violation too, since nothing was measured.
func soakFlatnessViolations(ids []int, qs map[int]*[4]soakQuarter) []string {
	var out []string
	for _, id := range ids {
		first, last := qs[id][0], qs[id][3]
		if !first.heapSeen || !last.heapSeen || !first.goroSeen || !last.goroSeen {
			out = append(out, fmt.Sprintf("node %d: no heap or goroutine samples in the first (%d) or the last quarter (%d)", id, first.n, last.n))
			continue
		}
		if limit := soakHeapFactor*first.heapMin + soakHeapSlack; last.heapMin > limit {
			out = append(out, fmt.Sprintf("node %d: the live heap grew from %.1f MiB (first quarter's smallest) to %.1f MiB (last quarter's smallest), above %d x + %d MiB = %.1f MiB",
				id, first.heapMin/(1<<20), last.heapMin/(1<<20), soakHeapFactor, soakHeapSlack>>20, limit/(1<<20)))
		}
		if limit := first.goroMax + soakGoroutineSlack; last.goroMin > limit {
			out = append(out, fmt.Sprintf("node %d: goroutines grew from at most %.0f in the first quarter to at least %.0f in the last, above %.0f + %d",
				id, first.goroMax, last.goroMin, first.goroMax, soakGoroutineSlack))
		}
		if last.rate() < first.rate()/soakThroughputDivisor {
			out = append(out, fmt.Sprintf("node %d: committed throughput fell from %.0f records/s in the first quarter to %.0f in the last, below 1/%d of it",
				id, first.rate(), last.rate(), soakThroughputDivisor))
		}
	}
	return out
}

// TestSoakFlatnessFlagsGrowthOnly: the flatness check passes a run whose
// figures wobble and a replica restarted mid-run, and flags a replica
// whose goroutines or live heap grow steadily or whose throughput
// collapses (D166).
func TestSoakFlatnessFlagsGrowthOnly(t *testing.T) {
	span := 100 * time.Second
	var flat []soakSample
	for i := 0; i < 100; i++ {
		at := time.Duration(i) * time.Second
		wobble := float64(i % 7)
		for _, id := range []int{1, 2, 3} {
			hwm := float64(1000 * i)
			if id == 3 && i >= 50 && i < 53 {
				hwm = -1 // restarted: unknown, then caught up
			}
			flat = append(flat, soakSample{at: at, id: id, hwm: hwm,
				heapLive: (2 + wobble/4) * (1 << 20), heapAlloc: 8 << 20, goroutines: 15 + wobble})
		}
	}
	ids := []int{1, 2, 3}
	qs := soakQuarters(ids, flat, span)
	require.Empty(t, soakFlatnessViolations(ids, qs))
	require.InDelta(t, 1000, qs[3][0].rate(), 50, "records/s from the high watermark")
	require.InDelta(t, 1000, qs[3][2].rate(), 50, "a restart neither loses nor doubles records")

	grow := func(f func(s *soakSample, i int)) []string {
		out := append([]soakSample(nil), flat...)
		for k := range out {
			if out[k].id == 2 {
				f(&out[k], int(out[k].at/time.Second))
			}
		}
		return soakFlatnessViolations(ids, soakQuarters(ids, out, span))
	}
	v := grow(func(s *soakSample, i int) { s.goroutines += float64(i) }) // one leaked per second
	require.Len(t, v, 1)
	require.Contains(t, v[0], "node 2: goroutines grew")
	v = grow(func(s *soakSample, i int) { s.heapLive += float64(i) * (200 << 10) }) // 200 KiB a second
	require.Len(t, v, 1)
	require.Contains(t, v[0], "node 2: the live heap grew")
	v = grow(func(s *soakSample, i int) {
		if i >= 75 {
			s.hwm = float64(75000 + 200*(i-75)) // a fifth of the rate
		}
	})
	require.Len(t, v, 1)
	require.Contains(t, v[0], "node 2: committed throughput fell")
	v = grow(func(s *soakSample, i int) {
		if i >= 75 {
			s.goroutines = 0 // no samples in the last quarter
			s.heapLive = 0
		}
	})
	require.Len(t, v, 1)
	require.Contains(t, v[0], "node 2: no heap or goroutine samples")
}
