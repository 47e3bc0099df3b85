package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"
)

// TestCleanup starts and stops every kind of cluster twice and checks that
// each append commits, and that nothing is left behind: no goroutine, no
// file in the temporary directory.
func TestCleanup(t *testing.T) {
	for _, durable := range []bool{false, true} {
		for _, lib := range libs {
			t.Run(fmt.Sprintf("lib=%s/durable=%v", lib, durable), func(t *testing.T) {
				base := runtime.NumGoroutine()
				tmp := t.TempDir()
				for i := 0; i < 2; i++ {
					c, err := startCluster(lib, durable, tmp)
					if err != nil {
						t.Fatal(err)
					}
					for j := 0; j < 20; j++ {
						if err := c.append([]byte{byte(j)}); err != nil {
							t.Fatal(err)
						}
					}
					if err := c.close(); err != nil {
						t.Fatal(err)
					}
				}
				deadline := time.Now().Add(5 * time.Second)
				for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if n := runtime.NumGoroutine(); n > base {
					at, _ := goroutineSummary()
					t.Errorf("%d goroutines left: %s", n-base, at)
				}
				if left, _ := os.ReadDir(tmp); len(left) > 0 {
					t.Errorf("%d entries left in %s", len(left), tmp)
				}
			})
		}
	}
}

// TestMeasure runs one short measurement of each library.
func TestMeasure(t *testing.T) {
	for _, lib := range libs {
		res := measure(spec{Lib: lib, Cell: allCells[0], Clients: 4, Duration: 200 * time.Millisecond, Records: 100, TmpDir: t.TempDir()})
		if res.Err != "" || res.Errors > 0 || res.Appends == 0 || res.Leaked > 0 {
			t.Errorf("%s: %+v", lib, res)
		}
	}
}

// BenchmarkAppend is the program's cells as testing benchmarks, in one
// process (no heap figure: the libraries' heaps would mix). b.N is the
// number of committed appends, shared by the clients. Allocations count
// the harness's one record per append.
//
//	go test -run '^$' -bench 'Append/cell=mem-100/clients=16' -benchmem
func BenchmarkAppend(b *testing.B) {
	for _, c := range allCells {
		for _, clients := range []int{1, 16, 64} {
			for _, lib := range libs {
				b.Run(fmt.Sprintf("cell=%s/clients=%d/lib=%s", c.Name, clients, lib), func(b *testing.B) {
					benchAppend(b, lib, c, clients)
				})
			}
		}
	}
}

func benchAppend(b *testing.B, lib string, c cell, clients int) {
	cl, err := startCluster(lib, c.Durable, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := cl.close(); err != nil {
			b.Error(err)
		}
	}()
	per := (b.N + clients - 1) / clients
	lats := make([][]time.Duration, clients)
	b.ReportAllocs()
	b.SetBytes(int64(c.Size))
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lats[i] = make([]time.Duration, 0, per)
			for j := 0; j < per; j++ {
				rec := make([]byte, c.Size)
				binary.LittleEndian.PutUint64(rec, uint64(i)<<40|uint64(j))
				t := time.Now()
				if err := cl.append(rec); err != nil {
					errs <- err
					return
				}
				lats[i] = append(lats[i], time.Since(t))
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "appends/s")
	b.ReportMetric(float64(quantile(all, 0.99).Microseconds()), "p99-µs")
}
