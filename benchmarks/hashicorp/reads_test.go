package main

import (
	"testing"
	"time"
)

// TestMeasureReads runs one short read measurement of each library, in
// memory: every phase of the library ran without a failure, and the
// cluster left no goroutine behind.
func TestMeasureReads(t *testing.T) {
	for _, lib := range libs {
		res := measureReads(readSpec{Lib: lib, Cell: allCells[0], Clients: 4, Duration: 200 * time.Millisecond, Warmup: 50, TmpDir: t.TempDir()})
		if res.Err != "" || res.Leaked > 0 || len(res.Phases) != len(readOps(lib)) {
			t.Fatalf("%s: %+v", lib, res)
		}
		for _, p := range res.Phases {
			if p.Ops == 0 || p.Errors > 0 {
				t.Errorf("%s %s: %+v", lib, p.Op, p)
			}
		}
	}
}
