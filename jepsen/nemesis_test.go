package jepsen

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"
)

// The nemesis: one fault at a time, drawn from a seeded schedule, each
// held for a while and then undone, with a quiet spell between faults
// (D142). The schedule (which fault, which nodes, how long) is a function
// of the seed; when the processes and the clients act within it depends
// on timing, as in any test of real processes.

// fault is one kind of fault.
type fault string

const (
	faultKill      fault = "kill"      // kill -9, restarted when healed
	faultPause     fault = "pause"     // SIGSTOP, SIGCONT when healed
	faultPartition fault = "partition" // halves that cannot talk, both ways
	faultOneWay    fault = "one-way"   // one half's messages to the other lost
	faultBridge    fault = "bridge"    // two halves and a node that sees both
	faultIsolate   fault = "isolate"   // the leader alone, both ways
	faultResign    fault = "resign"    // POST /resign at the leader
	faultSlowDisk  fault = "slow-disk" // restarted with KRAFTD_SYNC_DELAY, restarted without when healed (D162)
	faultVoter     fault = "voter"     // POST /voters/remove, /voters/add when healed: a dynamic quorum's (D161)
)

// faultsFor returns the faults the nemesis draws from: a static quorum
// has no voter changes.
func faultsFor(dynamic bool) []fault {
	fs := []fault{faultKill, faultPause, faultPartition, faultOneWay, faultBridge, faultIsolate, faultResign, faultSlowDisk}
	if dynamic {
		fs = append(fs, faultVoter)
	}
	return fs
}

type nemesis struct {
	c    *cluster
	rng  *rand.Rand
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	log  []string
	// healing undoes the current fault.
	healing func()
	counts  map[fault]int
}

func startNemesis(c *cluster, seed int64, start time.Time) *nemesis {
	nm := &nemesis{c: c, rng: rand.New(rand.NewSource(seed)), stop: make(chan struct{}),
		done: make(chan struct{}), counts: map[fault]int{}}
	go nm.run(start)
	return nm
}

func (nm *nemesis) logf(start time.Time, format string, args ...interface{}) {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	nm.log = append(nm.log, fmt.Sprintf("%7.3fs ", time.Since(start).Seconds())+fmt.Sprintf(format, args...))
}

// halt stops the schedule and undoes the current fault.
func (nm *nemesis) halt() {
	close(nm.stop)
	<-nm.done
}

func (nm *nemesis) sleep(d time.Duration) bool {
	select {
	case <-nm.stop:
		return false
	case <-time.After(d):
		return true
	}
}

// between returns a duration in [lo, hi) ms.
func (nm *nemesis) between(lo, hi int) time.Duration {
	return time.Duration(lo+nm.rng.Intn(hi-lo)) * time.Millisecond
}

func (nm *nemesis) run(start time.Time) {
	defer close(nm.done)
	n := nm.c.n
	faults := faultsFor(nm.c.dynamic)
	for {
		if !nm.sleep(nm.between(500, 1500)) {
			return
		}
		f := faults[nm.rng.Intn(len(faults))]
		hold := nm.between(500, 2500)
		perm := nm.rng.Perm(n)
		for i := range perm {
			perm[i]++
		}
		// Half of the faults aim at the leader: perm[0] is the node a
		// kill or a pause hits, and the minority side of a partition.
		if nm.rng.Intn(2) == 0 {
			if l := nm.c.leader(); l != 0 {
				for i := range perm {
					if perm[i] == l {
						perm[0], perm[i] = perm[i], perm[0]
					}
				}
			}
		}
		var heal func()
		switch f {
		case faultKill:
			p := nm.c.proc(perm[0])
			nm.logf(start, "kill -9 node %d for %v", p.id, hold)
			p.kill()
			heal = func() { _ = p.start() }
		case faultPause:
			p := nm.c.proc(perm[0])
			nm.logf(start, "SIGSTOP node %d for %v", p.id, hold)
			p.pause()
			heal = p.resume
		case faultPartition, faultOneWay:
			small := perm[:(n-1)/2] // a minority
			big := perm[len(small):]
			if f == faultOneWay && nm.rng.Intn(2) == 0 {
				small, big = big, small // the majority's messages lost
			}
			cuts := map[[2]int]bool{}
			for _, a := range small {
				for _, b := range big {
					cuts[[2]int{a, b}] = true
					if f == faultPartition {
						cuts[[2]int{b, a}] = true
					}
				}
			}
			nm.logf(start, "%s %v | %v (cut %s) for %v", f, sorted(small), sorted(big), describeCuts(cuts), hold)
			nm.c.net.set(cuts)
			heal = func() { nm.c.net.set(nil) }
		case faultBridge:
			bridge, rest := perm[0], perm[1:]
			a, b := rest[:len(rest)/2], rest[len(rest)/2:]
			cuts := map[[2]int]bool{}
			for _, x := range a {
				for _, y := range b {
					cuts[[2]int{x, y}], cuts[[2]int{y, x}] = true, true
				}
			}
			nm.logf(start, "bridge %v - %d - %v for %v", sorted(a), bridge, sorted(b), hold)
			nm.c.net.set(cuts)
			heal = func() { nm.c.net.set(nil) }
		case faultSlowDisk:
			// kraftd's only disk hook: every sync of the log takes this
			// much longer (cmd/kraftd/faults.go); kill -9 and a restart
			// put it in and take it out.
			p := nm.c.proc(perm[0])
			delay := nm.between(50, 200)
			nm.logf(start, "slow disk (sync +%v) at node %d for %v", delay, p.id, hold)
			p.kill()
			p.setSlowSync(delay.String())
			_ = p.start()
			heal = func() {
				p.kill()
				p.setSlowSync("")
				_ = p.start()
			}
		case faultVoter:
			// Remove one voter of the full set (never below a majority of
			// it: one change at a time, and the healing adds it back),
			// the leader itself half the time; the answer comes once the
			// removal is committed.
			l := nm.c.leader()
			if l == 0 {
				nm.logf(start, "%s: no leader now", f)
				continue
			}
			if vs, err := nm.c.voters(l); err != nil || len(vs) != n {
				nm.logf(start, "%s: voter set at leader %d is %v (%v): adding the missing back", f, l, vs, err)
				for id := 1; id <= n; id++ {
					if err == nil && !containsInt(vs, id) {
						ok, how := nm.c.addVoter(id, 20*time.Second)
						nm.logf(start, "add node %d back: %v, %s", id, ok, how)
					}
				}
				continue
			}
			id := perm[0]
			code, body := nm.c.changeVoter(l, "remove", id)
			nm.logf(start, "POST /voters/remove node %d at leader %d: %d %s; for %v", id, l, code, body, hold)
			if code != 200 {
				continue
			}
			heal = func() {
				began := time.Now()
				ok, how := nm.c.addVoter(id, 20*time.Second)
				nm.logf(start, "node %d added back: %v, %s (in %v)", id, ok, how, time.Since(began).Round(time.Millisecond))
			}
		case faultIsolate, faultResign:
			l := nm.c.leader()
			if l == 0 {
				nm.logf(start, "%s: no leader now", f)
				continue
			}
			if f == faultResign {
				nm.logf(start, "POST /resign at leader %d: %d", l, nm.c.resign(l))
				nm.counts[f]++
				continue
			}
			cuts := map[[2]int]bool{}
			for id := 1; id <= n; id++ {
				if id != l {
					cuts[[2]int{l, id}], cuts[[2]int{id, l}] = true, true
				}
			}
			nm.logf(start, "isolate leader %d for %v", l, hold)
			nm.c.net.set(cuts)
			heal = func() { nm.c.net.set(nil) }
		}
		nm.counts[f]++
		ok := nm.sleep(hold)
		heal()
		nm.logf(start, "healed")
		if !ok {
			return
		}
	}
}

func sorted(ids []int) []int {
	s := append([]int(nil), ids...)
	sort.Ints(s)
	return s
}

func describeCuts(cuts map[[2]int]bool) string {
	var s []string
	for k, v := range cuts {
		if v {
			s = append(s, fmt.Sprintf("%d->%d", k[0], k[1]))
		}
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}
