// Command wirebench measures the throughput of three kraftd processes on
// Kafka's wire (-wire kafka) beside three on kraft's own wire (-wire
// kraft): the same clients, each appending records of the same size at the
// leader over HTTP (POST /append, answered once committed), a fresh static
// quorum of three processes per measurement, the wires in turns. It prints
// appends/s, p50 and p99 per wire, the median over rounds, and the ratio
// kafka/kraft (docs/design.md D172). Run it with benchmarks/wire.sh.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	bin := flag.String("kraftd", "", "the kraftd binary")
	d := flag.Duration("d", 3*time.Second, "timed phase of one measurement")
	rounds := flag.Int("rounds", 3, "rounds (each: kraft's wire, then Kafka's)")
	clients := flag.Int("clients", 16, "concurrent clients")
	size := flag.Int("size", 100, "record size in bytes")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "wirebench: -kraftd is required")
		os.Exit(2)
	}
	res := map[string][]result{}
	for r := 0; r < *rounds; r++ {
		for _, wire := range []string{"kraft", "kafka"} {
			m, err := measure(*bin, wire, *d, *clients, *size)
			if err != nil {
				fmt.Fprintf(os.Stderr, "wirebench: %s wire, round %d: %v\n", wire, r+1, err)
				os.Exit(1)
			}
			fmt.Fprintf(os.Stderr, "round %d %-5s %8.0f appends/s p50 %v p99 %v\n", r+1, wire, m.rate, m.p50, m.p99)
			res[wire] = append(res[wire], m)
		}
	}
	k, f := median(res["kraft"]), median(res["kafka"])
	fmt.Printf("| wire | clients | record | appends/s | p50 | p99 |\n|---|---|---|---|---|---|\n")
	for _, row := range []struct {
		name string
		m    result
	}{{"kraft", k}, {"kafka", f}} {
		fmt.Printf("| %s | %d | %d B | %.0f | %v | %v |\n", row.name, *clients, *size, row.m.rate, row.m.p50, row.m.p99)
	}
	fmt.Printf("\nkafka/kraft: appends/s %.2fx, p50 %.2fx, p99 %.2fx (medians of %d rounds of %v)\n",
		f.rate/k.rate, float64(f.p50)/float64(k.p50), float64(f.p99)/float64(k.p99), *rounds, *d)
}

type result struct {
	rate     float64
	p50, p99 time.Duration
}

// median is the median of each figure over the rounds.
func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	return result{
		rate: pick(func(r result) float64 { return r.rate }),
		p50:  time.Duration(pick(func(r result) float64 { return float64(r.p50) })),
		p99:  time.Duration(pick(func(r result) float64 { return float64(r.p99) })),
	}
}

func freePorts(n int) ([]string, error) {
	var out []string
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// measure starts a fresh static quorum of three kraftd processes on wire,
// waits for a leader, runs the clients at it for d and stops the quorum.
func measure(bin, wire string, d time.Duration, clients, size int) (result, error) {
	base, err := os.MkdirTemp("", "wirebench-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(base)
	addrs, err := freePorts(6)
	if err != nil {
		return result{}, err
	}
	var voters []string
	for i := 0; i < 3; i++ {
		voters = append(voters, fmt.Sprintf("%d@%s", i+1, addrs[i]))
	}
	const cluster = "MkU3OEVBNTcwNTJENDM2Qg"
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_, _ = p.Process.Wait()
		}
	}()
	for i := 0; i < 3; i++ {
		dir := filepath.Join(base, fmt.Sprint(i+1))
		if b, err := exec.Command(bin, "format", "-cluster-id", cluster, "-id", fmt.Sprint(i+1), "-voters", strings.Join(voters, ","), "-dir", dir).CombinedOutput(); err != nil {
			return result{}, fmt.Errorf("format: %v: %s", err, b)
		}
		logf, err := os.Create(filepath.Join(base, fmt.Sprintf("kraftd%d.log", i+1)))
		if err != nil {
			return result{}, err
		}
		defer logf.Close()
		p := exec.Command(bin, "-wire", wire, "-cluster-id", cluster, "-id", fmt.Sprint(i+1), "-voters", strings.Join(voters, ","),
			"-dir", dir, "-listen", addrs[i], "-http", addrs[3+i])
		p.Stdout, p.Stderr = logf, logf
		if err := p.Start(); err != nil {
			return result{}, err
		}
		procs = append(procs, p)
	}
	leader, err := waitLeader(addrs[3:])
	if err != nil {
		return result{}, err
	}
	url := "http://" + leader + "/append"
	body := bytes.Repeat([]byte("x"), size)
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	// A short warm-up, then the timed phase.
	if _, err := appendFor(hc, url, body, clients, d/4); err != nil {
		return result{}, err
	}
	start := time.Now()
	lat, err := appendFor(hc, url, body, clients, d)
	if err != nil {
		return result{}, err
	}
	el := time.Since(start)
	if len(lat) == 0 {
		return result{}, fmt.Errorf("no append completed")
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return result{rate: float64(len(lat)) / el.Seconds(), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}, nil
}

// appendFor posts body to url from clients clients for dur and returns
// the latencies of the appends; a client stops at its first error, which
// is returned.
func appendFor(hc *http.Client, url string, body []byte, clients int, dur time.Duration) ([]time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	end := time.Now().Add(dur)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(end) {
				t0 := time.Now()
				resp, err := hc.Post(url, "application/octet-stream", bytes.NewReader(body))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("append: HTTP %d", resp.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, firstErr
}

// waitLeader waits until a replica reports itself the leader and returns
// its HTTP address.
func waitLeader(https []string) (string, error) {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, h := range https {
			resp, err := hc.Get("http://" + h + "/status")
			if err != nil {
				continue
			}
			var st struct {
				Role string `json:"role"`
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && st.Role == "Leader" {
				return h, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "", fmt.Errorf("no leader within 30s")
}
