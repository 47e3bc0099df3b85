package main

import (
	"os"
	"sort"
	"strconv"
	"testing"
	"time"
)

// TestProcessHandovers measures graceful handovers of kraftd processes:
// three voters with kraftd's default timeouts (T_e 1 s, T_f 2 s); the
// leader is stopped with SIGTERM and timed until it exits, then started
// again, and the next leader is stopped once every replica has caught up.
// It runs only with KRAFTD_HANDOVERS=N (N handovers; with
// KRAFTD_HANDOVER_CLIENTS=W, W clients append meanwhile) and logs the
// distribution: a measurement, not a check.
func TestProcessHandovers(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("KRAFTD_HANDOVERS"))
	if rounds <= 0 {
		t.Skip("set KRAFTD_HANDOVERS=N to measure N SIGTERM handovers")
	}
	saved := testTimeouts
	if os.Getenv("KRAFTD_HANDOVER_FAST") == "" {
		testTimeouts = nil // kraftd's defaults
	}
	defer func() { testTimeouts = saved }()
	c := newCluster(t, buildKraftd(t), 3)
	c.startAll()
	if w, _ := strconv.Atoi(os.Getenv("KRAFTD_HANDOVER_CLIENTS")); w > 0 {
		// Appends keep coming while the leader hands over.
		cl := startClient(c, w)
		defer cl.stop()
	}
	var took []time.Duration
	for i := 0; i < rounds; i++ {
		c.waitAllCaughtUp(30 * time.Second)
		leader, _ := c.waitLeader(10 * time.Second)
		start := time.Now()
		c.procs[leader].stop()
		d := time.Since(start)
		took = append(took, d)
		if d > time.Second {
			t.Logf("round %d: kraftd %d took %v to hand over and exit", i, leader, d)
		}
		c.procs[leader].start()
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	slow := 0
	for _, d := range took {
		if d > time.Second {
			slow++
		}
	}
	t.Logf("%d SIGTERM handovers: p50 %v p99 %v max %v; over 1s: %d",
		len(took), took[len(took)/2], took[len(took)*99/100], took[len(took)-1], slow)
}
