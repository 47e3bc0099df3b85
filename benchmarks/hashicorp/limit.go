package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// limit is the physical limit of one durable append, measured on the
// machine and disk of the run, in the same run (issue 38): a durable
// record needs, at the least, a follower to receive it over loopback
// (half a round trip), write and fsync it, fsync the claim that it is
// durable (the recovery point, docs/design.md D102: a second fsync after
// the first), and tell the leader (the other half). The leader's own
// fsyncs run beside the follower's: the leader's runtime syncs off its
// loop and sends the records to the followers at once (node.Node.sync,
// Raft thesis 10.2.1). So the limit is two fsyncs and a loopback round
// trip.
type limit struct {
	Fsync time.Duration `json:"fsync_p50"` // p50 of a write of size bytes appended to a file, then fsync
	RTT   time.Duration `json:"rtt_p50"`   // p50 of a 64-byte TCP ping-pong on 127.0.0.1
	// Shared is what the benchmark's three replicas on one disk pay: three
	// goroutines each append size bytes to a file of their own, fsync it,
	// write 512 bytes in place in a second file and fsync that (a durable
	// Sync with its recovery point, D102), all at once; the p50 over
	// rounds of the second of the three to finish (a majority of three).
	Shared time.Duration `json:"shared_p50"`
}

// Limit is two fsyncs and a round trip.
func (l limit) Limit() time.Duration { return 2*l.Fsync + l.RTT }

// measureLimit measures fsync and loopback round trips: n of each, in dir.
func measureLimit(dir string, size, n int) (limit, error) {
	fs, err := fsyncTimes(dir, size, n)
	if err != nil {
		return limit{}, err
	}
	rs, err := rttTimes(n)
	if err != nil {
		return limit{}, err
	}
	ss, err := sharedTimes(dir, size, n/2)
	if err != nil {
		return limit{}, err
	}
	return limit{Fsync: p50(fs), RTT: p50(rs), Shared: p50(ss)}, nil
}

// sharedTimes runs n rounds of three concurrent two-fsync syncs (see
// limit.Shared) and returns, per round, when the second one finished.
func sharedTimes(dir string, size, n int) ([]time.Duration, error) {
	type pair struct{ log, point *os.File }
	var ps [3]pair
	for i := range ps {
		a, err := os.CreateTemp(dir, "shared-log-")
		if err != nil {
			return nil, err
		}
		defer os.Remove(a.Name())
		defer a.Close()
		b, err := os.CreateTemp(dir, "shared-point-")
		if err != nil {
			return nil, err
		}
		defer os.Remove(b.Name())
		defer b.Close()
		if _, err := b.Write(make([]byte, 1024)); err != nil {
			return nil, err
		}
		ps[i] = pair{a, b}
	}
	buf, slot := make([]byte, size), make([]byte, 512)
	out := make([]time.Duration, 0, n)
	for r := 0; r < n; r++ {
		start := time.Now()
		done := make(chan error, 3)
		for _, p := range ps {
			go func(p pair) {
				_, err := p.log.Write(buf)
				if err == nil {
					err = p.log.Sync()
				}
				if err == nil {
					_, err = p.point.WriteAt(slot, int64(r%2)*512)
				}
				if err == nil {
					err = p.point.Sync()
				}
				done <- err
			}(p)
		}
		var second time.Duration
		for i := 0; i < 3; i++ {
			if err := <-done; err != nil {
				return nil, err
			}
			if i == 1 {
				second = time.Since(start)
			}
		}
		out = append(out, second)
	}
	return out, nil
}

func p50(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

// fsyncTimes appends size bytes to a file n times, each followed by an
// fsync, as a log's Sync after one append does, and times the fsyncs.
func fsyncTimes(dir string, size, n int) ([]time.Duration, error) {
	f, err := os.CreateTemp(dir, "fsync-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, size)
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		if _, err := f.Write(buf); err != nil {
			return nil, err
		}
		start := time.Now()
		if err := f.Sync(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// rttTimes times n ping-pongs of 64 bytes over one TCP connection on
// 127.0.0.1 (Nagle off, as Go sets it).
func rttTimes(n int) ([]time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		b := make([]byte, 64)
		for {
			if _, err := io.ReadFull(c, b); err != nil {
				done <- nil
				return
			}
			if _, err := c.Write(b); err != nil {
				done <- err
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, err
	}
	b := make([]byte, 64)
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := c.Write(b); err != nil {
			c.Close()
			return nil, err
		}
		if _, err := io.ReadFull(c, b); err != nil {
			c.Close()
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	c.Close()
	return out, <-done
}

// limitTable prints the limit measured in each round beside the one-client
// durable cells' p50 (median over rounds) and their ratio to it.
func (p parent) limitTable(w io.Writer, lims []limit, results map[key][]result) {
	if len(lims) == 0 {
		return
	}
	var fs, rs, ss []float64
	for _, l := range lims {
		fs = append(fs, float64(l.Fsync))
		rs = append(rs, float64(l.RTT))
		ss = append(ss, float64(l.Shared))
	}
	l := limit{Fsync: time.Duration(median(fs)), RTT: time.Duration(median(rs)), Shared: time.Duration(median(ss))}
	if voters == 1 {
		p.oneWriterTable(w, l, len(lims), results)
		return
	}
	shared := l.Shared + l.RTT
	fmt.Fprintf(w, "\nPhysical limit of one durable append (medians of %d rounds, in the run's temporary directory): fsync p50 %s, loopback round trip p50 %s; limit = 2 fsyncs + a round trip = %s. Three replicas syncing at once on this one disk: the second of three two-fsync syncs done after %s (p50), + a round trip = %s (shared limit).\n\n",
		len(lims), dur(float64(l.Fsync)), dur(float64(l.RTT)), dur(float64(l.Limit())), dur(float64(l.Shared)), dur(float64(shared)))
	fmt.Fprintln(w, "| cell | clients | lib | p50 | p50 / limit | p50 / shared limit |")
	fmt.Fprintln(w, "| --- | ---: | --- | ---: | ---: | ---: |")
	for _, c := range p.cells {
		if !c.Durable {
			continue
		}
		for _, lib := range p.libs {
			m, ok := medianP50(results[key{c.Name, 1, lib}])
			if !ok {
				continue
			}
			fmt.Fprintf(w, "| %s | 1 | %s | %s | %.2f | %.2f |\n", c.Label, lib, dur(m), m/float64(l.Limit()), m/float64(shared))
		}
	}
}

// oneWriterTable is limitTable for clusters of one voter (-voters 1): the
// leader is the only writer on the disk and nothing crosses the network,
// so the limit of one durable append is its Sync's two fsyncs (D102).
func (p parent) oneWriterTable(w io.Writer, l limit, rounds int, results map[key][]result) {
	one := 2 * l.Fsync
	fmt.Fprintf(w, "\nOne voter, so one writer on the disk and no network on the append's path (medians of %d rounds, in the run's temporary directory): fsync p50 %s; limit = 2 fsyncs = %s.\n\n",
		rounds, dur(float64(l.Fsync)), dur(float64(one)))
	fmt.Fprintln(w, "| cell | clients | lib | p50 | p50 / limit |")
	fmt.Fprintln(w, "| --- | ---: | --- | ---: | ---: |")
	for _, c := range p.cells {
		if !c.Durable {
			continue
		}
		for _, lib := range p.libs {
			if m, ok := medianP50(results[key{c.Name, 1, lib}]); ok {
				fmt.Fprintf(w, "| %s | 1 | %s | %s | %.2f |\n", c.Label, lib, dur(m), m/float64(one))
			}
		}
	}
}

// medianP50 is the median over rounds of the results' p50s.
func medianP50(rs []result) (float64, bool) {
	if len(rs) == 0 {
		return 0, false
	}
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = float64(r.P50)
	}
	return median(vs), true
}

// limitDir is where the fsyncs of the limit are measured: the durable
// cells' directory.
func limitDir(tmpdir string) string {
	if tmpdir != "" {
		return tmpdir
	}
	return filepath.Clean(os.TempDir())
}

func (p parent) anyDurable() bool {
	for _, c := range p.cells {
		if c.Durable {
			return true
		}
	}
	return false
}
