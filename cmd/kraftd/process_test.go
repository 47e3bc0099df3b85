//go:build unix

package main

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// The real-process tests build kraftd, run three of them on loopback with
// short kraft timeouts, append through the HTTP API while they kill, pause
// and restart replicas, and then check every replica's log on disk: every
// append acknowledged with 200 is at its offset in every log, and the logs
// agree up to the high watermark.

// testClusterID is the cluster id of the tests' replicas.
const testClusterID = "MkU3OEVBNTcwNTJENDM2Qg"

// Short kraft timeouts, so that a failover takes a fraction of a second.
var testTimeouts = []string{"-election-timeout", "200ms", "-fetch-timeout", "400ms", "-election-backoff-max", "200ms"}

// TestProcessFailover kills the leader with SIGKILL five times (or
// KRAFTD_KILLS times), restarting it each time once a new leader has
// committed an append.
func TestProcessFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	kills := 5
	if s := os.Getenv("KRAFTD_KILLS"); s != "" {
		var err error
		kills, err = strconv.Atoi(s)
		require.NoError(t, err, "KRAFTD_KILLS")
	}
	events := make([]fault, kills)
	for i := range events {
		events[i] = killLeader
	}
	runChaos(t, events, nil)
}

// TestProcessSoak is the long version, off by default: KRAFTD_SOAK=N runs
// N random faults (SIGKILL of the leader, of a follower or of all three;
// SIGSTOP/SIGCONT of the leader or a follower for a random time), and
// KRAFTD_SOAK_DURATION=D (a Go duration, e.g. 10m) runs them until D has
// passed (the first of the two limits set ends it). KRAFTD_SOAK_SEED picks
// the seed (default: the clock). Throughout, it samples every replica's
// /metrics and checks that throughput, heap and goroutines stay flat
// (soak_test.go, docs/design.md D165).
func TestProcessSoak(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KRAFTD_SOAK"))
	var dur time.Duration
	if s := os.Getenv("KRAFTD_SOAK_DURATION"); s != "" {
		var err error
		dur, err = time.ParseDuration(s)
		require.NoError(t, err, "KRAFTD_SOAK_DURATION")
	}
	if n <= 0 && dur <= 0 {
		t.Skip("set KRAFTD_SOAK=N (faults) or KRAFTD_SOAK_DURATION=D (e.g. 10m) to run random faults against three kraftd processes")
	}
	seed := time.Now().UnixNano()
	if s := os.Getenv("KRAFTD_SOAK_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "KRAFTD_SOAK_SEED")
	}
	t.Logf("soak: %d faults, %v, KRAFTD_SOAK_SEED=%d", n, dur, seed)
	rng := rand.New(rand.NewSource(seed))
	var began time.Time
	next := func(i int) (fault, bool) {
		if i == 0 {
			began = time.Now()
		}
		if (n > 0 && i >= n) || (dur > 0 && time.Since(began) >= dur) {
			return 0, false
		}
		return fault(rng.Intn(numFaults)), true
	}
	runChaosWith(t, next, rng, startFlatness(t, soakSampleInterval(t)))
}

// fault is one thing done to the cluster.
type fault int

const (
	killLeader fault = iota
	killFollower
	killAll
	pauseLeader
	pauseFollower
)

const numFaults = int(pauseFollower) + 1

func (f fault) String() string {
	return [...]string{"kill leader", "kill follower", "kill all", "pause leader", "pause follower"}[f]
}

// runChaos runs three kraftd processes and a client, carries out events,
// then checks the logs and reports the figures. rng nil: no random
// delays (the default test).
func runChaos(t *testing.T, events []fault, rng *rand.Rand) {
	next := func(i int) (fault, bool) {
		if i >= len(events) {
			return 0, false
		}
		return events[i], true
	}
	runChaosWith(t, next, rng, nil)
}

// runChaosWith is runChaos with the events drawn from next until it says
// no more. watch, if not nil, starts once the first append is
// acknowledged, and the function it returns is called after the last
// fault, with the client still appending.
func runChaosWith(t *testing.T, next func(i int) (fault, bool), rng *rand.Rand, watch func(*cluster) func()) {
	bin := buildKraftd(t)
	c := newCluster(t, bin, 3)
	began := time.Now()
	c.startAll()
	leader, _ := c.waitLeader(15 * time.Second)
	firstElection := time.Since(began)

	cl := startClient(c, 4)
	if _, ok := cl.waitAck(began, 0, 15*time.Second); !ok {
		c.fatalf("no append was acknowledged within 15s of the first leader (%d) being elected", leader)
	}
	firstAck := time.Since(began)
	var stopWatch func()
	if watch != nil {
		stopWatch = watch(c)
	}

	random := func(lo, hi time.Duration) time.Duration {
		if rng == nil {
			return lo
		}
		return lo + time.Duration(rng.Int63n(int64(hi-lo)+1))
	}
	recovery := map[fault][]time.Duration{}
	var rejoin []time.Duration
	for i := 0; ; i++ {
		ev, more := next(i)
		if !more {
			break
		}
		time.Sleep(random(300*time.Millisecond, time.Second)) // appends flow
		leader, _ := c.waitLeader(15 * time.Second)
		follower := c.follower(leader, rng)
		// start is when the fault began; an append counts as the next
		// one if it was sent after the fault took effect.
		start := time.Now()
		var got ack
		var ok bool
		switch ev {
		case killLeader:
			c.procs[leader].kill()
			got, ok = cl.waitAck(time.Now(), leader, 20*time.Second)
			time.Sleep(random(0, time.Second))
			restarted := time.Now()
			c.procs[leader].start()
			if d, back := c.waitRejoined(c.procs[leader], restarted, 20*time.Second); back {
				rejoin = append(rejoin, d)
			} else {
				c.fatalf("fault %d: the restarted replica %d did not rejoin within 20s", i+1, leader)
			}
		case killFollower:
			c.procs[follower].kill()
			got, ok = cl.waitAck(time.Now(), 0, 20*time.Second)
			time.Sleep(random(0, time.Second))
			c.procs[follower].start()
		case killAll:
			for _, p := range c.procs {
				p.kill()
			}
			killed := time.Now()
			time.Sleep(random(0, 500*time.Millisecond))
			for _, p := range c.procs {
				p.start()
			}
			got, ok = cl.waitAck(killed, 0, 20*time.Second)
		case pauseLeader, pauseFollower:
			victim := leader
			if ev == pauseFollower {
				victim = follower
			}
			c.procs[victim].pause()
			paused := time.Now()
			d := random(100*time.Millisecond, 3*time.Second)
			resumed := make(chan struct{})
			go func() {
				time.Sleep(d)
				c.procs[victim].resume()
				close(resumed)
			}()
			got, ok = cl.waitAck(paused, 0, d+20*time.Second)
			<-resumed
		}
		if !ok {
			c.fatalf("fault %d (%v, leader was %d): no append was acknowledged within 20s: the cluster did not recover", i+1, ev, leader)
		}
		d := got.at.Sub(start)
		recovery[ev] = append(recovery[ev], d)
		t.Logf("fault %d: %v (leader was %d): next append acknowledged by %d after %v", i+1, ev, leader, got.from, d.Round(time.Millisecond))
		c.waitAllCaughtUp(20 * time.Second)
	}

	if stopWatch != nil {
		stopWatch()
	}
	cl.stop()
	final := c.waitConverged(20 * time.Second)
	hwm := final[1].HighWatermark
	stopStart := time.Now()
	handover := c.stopAll()
	stopTime := time.Since(stopStart)
	acks := cl.acknowledged()
	checkLogs(t, c, acks, hwm)

	t.Logf("time to the first election: %v; to the first acknowledged append: %v", firstElection.Round(time.Millisecond), firstAck.Round(time.Millisecond))
	t.Logf("appends: %d acknowledged, %d refused with 421, %d failed (503, timeouts, connection errors); high watermark %d",
		len(acks), cl.misdirected, cl.failed, hwm)
	for f := fault(0); int(f) < numFaults; f++ {
		ds := recovery[f]
		if len(ds) == 0 {
			continue
		}
		what := "fault -> next acknowledged append"
		if f == killLeader {
			what = "failover (SIGKILL of the leader -> an append acknowledged by a new leader)"
		}
		med, worst := medianMax(ds)
		t.Logf("%v x%d: %s: median %v, max %v", f, len(ds), what, med.Round(time.Millisecond), worst.Round(time.Millisecond))
	}
	if len(rejoin) > 0 {
		med, worst := medianMax(rejoin)
		t.Logf("rejoin of a restarted former leader (process start -> following the leader, caught up with its high watermark): median %v, max %v over %d",
			med.Round(time.Millisecond), worst.Round(time.Millisecond), len(rejoin))
	}
	t.Logf("graceful stop: the leader's handover (SIGTERM -> exit) took %v; all three stopped in %v", handover.Round(time.Millisecond), stopTime.Round(time.Millisecond))
}

func medianMax(ds []time.Duration) (time.Duration, time.Duration) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[len(s)-1]
}

// checkLogs opens every replica's log and checks the acknowledged appends
// and the agreement of the logs below hwm.
func checkLogs(t *testing.T, c *cluster, acks []ack, hwm int64) {
	logs := map[int][]storage.Entry{}
	for _, p := range c.procs {
		l, rec, err := storage.Open(filepath.Join(p.dir, "log"), storage.Options{})
		require.NoError(t, err, "opening node %d's log", p.id)
		if rec.DroppedBytes > 0 {
			t.Errorf("node %d's log had a torn tail after a graceful stop: %d bytes (%s)", p.id, rec.DroppedBytes, rec.Cause)
		}
		var es []storage.Entry
		for {
			batch, err := l.Read(int64(len(es)), 1<<20)
			require.NoError(t, err, "reading node %d's log", p.id)
			if len(batch) == 0 {
				break
			}
			es = append(es, batch...)
		}
		require.NoError(t, l.Close())
		for i, e := range es {
			if e.Offset != int64(i) {
				t.Fatalf("node %d's log: entry %d has offset %d", p.id, i, e.Offset)
			}
		}
		logs[p.id] = es
	}

	failures := 0
	fail := func(format string, args ...interface{}) {
		failures++
		if failures <= 20 {
			t.Errorf(format, args...)
		}
	}
	for _, a := range acks {
		for _, id := range c.ids {
			es := logs[id]
			if a.offset >= int64(len(es)) {
				fail("LOST ACKNOWLEDGED APPEND: %q, acknowledged by node %d at offset %d, is missing from node %d's log, which ends at %d", a.payload, a.from, a.offset, id, len(es))
				continue
			}
			if e := es[a.offset]; !isData(e, a.payload) {
				fail("LOST ACKNOWLEDGED APPEND: %q, acknowledged by node %d at offset %d; node %d's log has %s there", a.payload, a.from, a.offset, id, describe(e))
			}
		}
	}
	for off := int64(0); off < hwm; off++ {
		var first storage.Entry
		for i, id := range c.ids {
			es := logs[id]
			if off >= int64(len(es)) {
				fail("DIVERGENT LOGS: node %d's log ends at %d, below the high watermark %d", id, len(es), hwm)
				continue
			}
			if i == 0 {
				first = es[off]
			} else if es[off].Epoch != first.Epoch || !bytes.Equal(es[off].Data, first.Data) {
				fail("DIVERGENT LOGS at offset %d (below the high watermark %d): node %d has %s, node %d has %s",
					off, hwm, c.ids[0], describe(first), id, describe(es[off]))
			}
		}
	}
	seen := map[string]int64{}
	if es := logs[c.ids[0]]; int64(len(es)) >= hwm {
		for _, e := range es[:hwm] {
			if len(e.Data) > 0 && e.Data[0] == 0 {
				if prev, dup := seen[string(e.Data[1:])]; dup {
					fail("DUPLICATE RECORD: %q is committed at offsets %d and %d", e.Data[1:], prev, e.Offset)
				}
				seen[string(e.Data[1:])] = e.Offset
			}
		}
	}
	if failures > 0 {
		t.Fatalf("%d violations of the logs' safety (the first 20 are above)", failures)
	}
}

// isData says whether e is the data record with payload (the node
// prefixes a data record's payload with the type byte 0).
func isData(e storage.Entry, payload string) bool {
	return len(e.Data) > 0 && e.Data[0] == 0 && string(e.Data[1:]) == payload
}

func describe(e storage.Entry) string {
	if len(e.Data) > 0 && e.Data[0] == 0 {
		return fmt.Sprintf("data %q (epoch %d)", e.Data[1:], e.Epoch)
	}
	return fmt.Sprintf("a control record %q (epoch %d)", e.Data, e.Epoch)
}
