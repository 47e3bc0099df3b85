//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kraftquorum/kraft/node"
	"github.com/stretchr/testify/require"
)

// The harness of the real-process tests: the kraftd binary, a cluster of
// kraftd processes, and an appending client.

// buildKraftd builds the kraftd binary into a temporary directory.
func buildKraftd(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "kraftd")
	start := time.Now()
	output, err := exec.Command(goBin, "build", "-o", out, ".").CombinedOutput()
	require.NoError(t, err, "go build:\n%s", output)
	t.Logf("built kraftd in %v", time.Since(start).Round(time.Millisecond))
	return out
}

// freePorts returns n distinct free ports on 127.0.0.1, for kraftd
// processes to listen on later. A port is checked by listening on it and
// closing it again, so until the process binds it anything else may take
// it: the ports the system hands out for listening on port 0 and for the
// local end of outgoing connections come from its ephemeral range
// (ip_local_port_range), and with other tests connecting on the same
// machine one of those was taken in the meantime (a kraftd failed with
// "address already in use"). So the ports are drawn at random below that
// range, where the system hands none out, and port 0 is the fallback.
func freePorts(t *testing.T, n int) []string {
	low := ephemeralLow()
	var lns []net.Listener
	var addrs []string
	for tries := 0; len(addrs) < n && low > 10000 && tries < 1000; tries++ {
		port := 10000 + rand.Intn(low-10000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for len(addrs) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	for _, ln := range lns {
		require.NoError(t, ln.Close())
	}
	return addrs
}

// ephemeralLow is the first port of the system's ephemeral range (0 if
// unknown).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return low
}

// cluster is a set of kraftd processes, one per voter.
type cluster struct {
	t      *testing.T
	procs  map[int]*proc // by node id, 1 to n
	ids    []int
	status *http.Client
}

func newCluster(t *testing.T, bin string, n int) *cluster {
	c := &cluster{t: t, procs: map[int]*proc{}, status: &http.Client{Timeout: 500 * time.Millisecond}}
	ports := freePorts(t, 2*n)
	var voters []string
	for i := 1; i <= n; i++ {
		voters = append(voters, fmt.Sprintf("%d@%s", i, ports[i-1]))
	}
	base := t.TempDir()
	for i := 1; i <= n; i++ {
		p := &proc{
			t: t, id: i, bin: bin, raft: ports[i-1], http: ports[n+i-1],
			dir:    filepath.Join(base, fmt.Sprintf("node%d", i)),
			stderr: filepath.Join(base, fmt.Sprintf("node%d.stderr", i)),
		}
		p.args = append([]string{
			"-id", strconv.Itoa(i), "-voters", strings.Join(voters, ","),
			"-dir", p.dir, "-http", p.http, "-cluster-id", testClusterID,
		}, testTimeouts...)
		c.procs[i] = p
		c.ids = append(c.ids, i)
	}
	// Runs before t.TempDir's removal (cleanups run last first).
	t.Cleanup(func() {
		for _, id := range c.ids {
			c.procs[id].kill()
		}
		if t.Failed() {
			for _, id := range c.ids {
				c.procs[id].dump()
			}
		}
	})
	return c
}

func (c *cluster) startAll() {
	for _, id := range c.ids {
		c.procs[id].start()
	}
}

// fatalf fails the test with msg, the processes' exits and their statuses.
func (c *cluster) fatalf(format string, args ...interface{}) {
	c.t.Helper()
	var b strings.Builder
	for _, id := range c.ids {
		p := c.procs[id]
		st, err := c.statusOf(p)
		if err != nil {
			fmt.Fprintf(&b, "\n  node %d: %s; status: %v", id, p.describe(), err)
		} else {
			js, _ := json.Marshal(st)
			fmt.Fprintf(&b, "\n  node %d: %s; status: %s", id, p.describe(), js)
		}
	}
	c.t.Fatalf("%s%s\n(each process's stderr follows)", fmt.Sprintf(format, args...), b.String())
}

// checkExits fails the test if a process exited without being told to.
func (c *cluster) checkExits() {
	c.t.Helper()
	for _, id := range c.ids {
		p := c.procs[id]
		p.mu.Lock()
		u := p.unexpected
		p.mu.Unlock()
		if u != "" {
			c.fatalf("kraftd %d exited by itself: %s", id, u)
		}
	}
}

func (c *cluster) statusOf(p *proc) (node.Status, error) {
	var st node.Status
	resp, err := c.status.Get("http://" + p.http + "/status")
	if err != nil {
		return st, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return st, fmt.Errorf("%s: %s", resp.Status, body)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

// statuses polls every live process.
func (c *cluster) statuses() map[int]node.Status {
	out := map[int]node.Status{}
	for _, id := range c.ids {
		p := c.procs[id]
		if !p.live() {
			continue
		}
		if st, err := c.statusOf(p); err == nil {
			out[id] = st
		}
	}
	return out
}

// waitLeader waits until a live process leads, and returns the one of the
// highest epoch.
func (c *cluster) waitLeader(timeout time.Duration) (int, node.Status) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c.checkExits()
		best := 0
		var bst node.Status
		for id, st := range c.statuses() {
			if st.Role == "Leader" && (best == 0 || st.Epoch > bst.Epoch) {
				best, bst = id, st
			}
		}
		if best != 0 {
			return best, bst
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.fatalf("no leader within %v", timeout)
	return 0, node.Status{}
}

// follower picks a voter other than leader.
func (c *cluster) follower(leader int, rng *rand.Rand) int {
	var fs []int
	for _, id := range c.ids {
		if id != leader {
			fs = append(fs, id)
		}
	}
	if rng == nil {
		return fs[0]
	}
	return fs[rng.Intn(len(fs))]
}

// waitAllCaughtUp waits until every process runs and knows a high
// watermark at least the leader's when the wait began.
func (c *cluster) waitAllCaughtUp(timeout time.Duration) {
	c.t.Helper()
	_, lst := c.waitLeader(timeout)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c.checkExits()
		sts := c.statuses()
		ok := len(sts) == len(c.ids)
		for _, st := range sts {
			ok = ok && st.HighWatermark >= lst.HighWatermark
		}
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.fatalf("the replicas did not reach the leader's high watermark %d within %v", lst.HighWatermark, timeout)
}

// waitRejoined waits until p, just restarted, follows the current leader
// and its high watermark has reached the leader's at the restart, and
// returns how long that took from since.
func (c *cluster) waitRejoined(p *proc, since time.Time, timeout time.Duration) (time.Duration, bool) {
	_, first := c.waitLeader(timeout)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		// The leadership may move meanwhile (on a loaded machine a
		// follower's fetch timer fires now and then): p must follow the
		// leader of the moment, with the high watermark of the start.
		_, lst := c.waitLeader(timeout)
		st, err := c.statusOf(p)
		if err == nil && st.Role == "Follower" && st.Leader == lst.ID && st.Epoch == lst.Epoch && st.HighWatermark >= first.HighWatermark {
			return time.Since(since), true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return 0, false
}

// waitConverged waits until one process leads and every one has its log
// end and high watermark.
func (c *cluster) waitConverged(timeout time.Duration) map[int]node.Status {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var sts map[int]node.Status
	for time.Now().Before(deadline) {
		c.checkExits()
		sts = c.statuses()
		leaders, ok := 0, len(sts) == len(c.ids)
		for _, st := range sts {
			if st.Role == "Leader" {
				leaders++
			}
			ok = ok && st.HighWatermark == st.LogEnd && st.LogEnd == sts[c.ids[0]].LogEnd && st.Epoch == sts[c.ids[0]].Epoch
		}
		if ok && leaders == 1 {
			return sts
		}
		time.Sleep(10 * time.Millisecond)
	}
	js, _ := json.Marshal(sts)
	c.fatalf("the replicas did not converge on one log end and high watermark within %v: %s", timeout, js)
	return nil
}

// stopAll stops every process with SIGTERM and checks they exit with
// status 0: the leader first (it hands leadership over while the others
// run: the returned duration), then the followers of the new leader, and
// last the new leader once check-quorum has made it step down (a leader
// alone would wait out its handover timeout).
func (c *cluster) stopAll() time.Duration {
	c.t.Helper()
	leader, _ := c.waitLeader(10 * time.Second)
	start := time.Now()
	c.procs[leader].stop()
	handover := time.Since(start)
	if handover > 3*time.Second {
		// kraftd's handover timeout is 5s; with both followers up a new
		// leader takes a few election timeouts at most.
		c.t.Errorf("the leader (%d) took %v to stop on SIGTERM with both followers running", leader, handover)
	}
	next := 0
	deadline := time.Now().Add(5 * time.Second)
	for next == 0 && time.Now().Before(deadline) {
		for id, st := range c.statuses() {
			if st.Role == "Leader" {
				next = id
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, id := range c.ids {
		if id != next && c.procs[id].live() {
			c.procs[id].stop()
		}
	}
	if next != 0 {
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if st, err := c.statusOf(c.procs[next]); err != nil || st.Role != "Leader" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		c.procs[next].stop()
	}
	for _, id := range c.ids {
		p := c.procs[id]
		p.mu.Lock()
		err := p.exitErr
		p.mu.Unlock()
		if err != nil {
			c.fatalf("kraftd %d did not stop cleanly on SIGTERM: %v", id, err)
		}
	}
	return handover
}

// proc is one kraftd process, started and restarted with the same flags.
type proc struct {
	t               *testing.T
	id              int
	bin, raft, http string
	dir, stderr     string
	args            []string
	// noFormat: the first start does not format the directory first
	// (kraftd format, with the flags formatArgs derives from args).
	noFormat bool

	mu              sync.Mutex
	cmd             *exec.Cmd
	exited          chan struct{}
	running, paused bool
	expectExit      bool // killed or stopped by the test
	starts          int
	exitErr         error  // the last exit's
	unexpected      string // the first exit the test did not ask for
}

func (p *proc) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return
	}
	if p.starts == 0 && !p.noFormat {
		// Every replica's directory is formatted once, before its first
		// start (docs/design.md D108).
		out, err := exec.Command(p.bin, append([]string{"format"}, formatArgs(p.args)...)...).CombinedOutput()
		require.NoError(p.t, err, "kraftd format for %d: %s", p.id, out)
	}
	f, err := os.OpenFile(p.stderr, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(p.t, err)
	p.starts++
	_, _ = fmt.Fprintf(f, "--- start %d at %s\n", p.starts, time.Now().Format("15:04:05.000000"))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		p.t.Fatalf("starting kraftd %d: %v", p.id, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.running, p.paused, p.expectExit = cmd, exited, true, false, false
	n := p.starts
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		p.mu.Lock()
		p.running, p.paused, p.exitErr = false, false, err
		if !p.expectExit && p.unexpected == "" {
			p.unexpected = fmt.Sprintf("start %d: %v", n, err)
		}
		p.mu.Unlock()
		close(exited)
	}()
}

// live: running and not paused.
func (p *proc) live() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running && !p.paused
}

func (p *proc) describe() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.paused:
		return "paused (SIGSTOP)"
	case p.running:
		return fmt.Sprintf("running (start %d)", p.starts)
	case p.unexpected != "":
		return "exited by itself: " + p.unexpected
	}
	return "stopped"
}

// signal sends sig if the process runs, and returns its exit channel.
func (p *proc) signal(sig os.Signal, expectExit bool) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return nil
	}
	if expectExit {
		p.expectExit = true
	}
	_ = p.cmd.Process.Signal(sig)
	return p.exited
}

// kill kills the process with SIGKILL and waits for it.
func (p *proc) kill() {
	if ch := p.signal(syscall.SIGKILL, true); ch != nil {
		<-ch
	}
}

// stop sends SIGTERM and waits up to 10s for the exit, then kills it.
func (p *proc) stop() {
	p.t.Helper()
	ch := p.signal(syscall.SIGTERM, true)
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		p.kill()
		p.t.Errorf("kraftd %d did not exit within 10s of SIGTERM; killed", p.id)
	}
}

// pause stops the process with SIGSTOP.
func (p *proc) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
		p.paused = true
		waitStopped(p.cmd.Process.Pid)
	}
}

// waitStopped waits, up to 200ms, until every thread of process pid is
// stopped: SIGSTOP takes effect asynchronously. Without Linux's /proc it
// waits 10ms.
func waitStopped(pid int) {
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(stats) == 0 {
			time.Sleep(10 * time.Millisecond)
			return
		}
		stopped := true
		for _, f := range stats {
			b, err := os.ReadFile(f)
			i := bytes.LastIndexByte(b, ')') // the state follows the command name
			if err != nil || i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (p *proc) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running && p.paused {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		p.paused = false
	}
}

// dump logs the process's stderr, the last 300 lines.
func (p *proc) dump() {
	data, err := os.ReadFile(p.stderr)
	if err != nil {
		p.t.Logf("kraftd %d stderr: %v", p.id, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 300 {
		lines = append([]string{fmt.Sprintf("[%d earlier lines left out]", len(lines)-300)}, lines[len(lines)-300:]...)
	}
	p.t.Logf("kraftd %d stderr (%s):\n%s", p.id, p.stderr, strings.Join(lines, "\n"))
}

// clientTimeout bounds one append request: a paused leader holds the
// client that long.
const clientTimeout = time.Second

// ack is an append acknowledged with 200.
type ack struct {
	payload string
	offset  int64
	from    int       // the node that answered
	sent    time.Time // when the request was sent
	at      time.Time // when the answer came
}

// client appends unique payloads through the HTTP API from several
// goroutines, to whichever node it believes leads: it follows the leader
// hints of 421 answers, and a watcher polls /status and moves every worker
// to a newly elected leader (abandoning requests to the old one, which
// may be paused).
type client struct {
	c    *cluster
	http *http.Client
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup

	mu          sync.Mutex
	guess       int
	ctx         context.Context // of the requests to guess
	cancel      context.CancelFunc
	acks        []ack
	misdirected int
	failed      int
}

func startClient(c *cluster, workers int) *client {
	cl := &client{
		c: c, guess: c.ids[0], done: make(chan struct{}),
		http: &http.Client{Timeout: clientTimeout},
	}
	cl.ctx, cl.cancel = context.WithCancel(context.Background())
	for w := 0; w < workers; w++ {
		cl.wg.Add(1)
		go cl.run(w)
	}
	cl.wg.Add(1)
	go cl.watch()
	c.t.Cleanup(cl.stop)
	return cl
}

func (cl *client) stop() {
	cl.once.Do(func() { close(cl.done) })
	cl.wg.Wait()
	cl.mu.Lock()
	cl.cancel()
	cl.mu.Unlock()
}

// watch polls /status every 50ms; when a node other than the guess leads
// in the highest epoch, it becomes the guess.
func (cl *client) watch() {
	defer cl.wg.Done()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-cl.done:
			return
		case <-tick.C:
		}
		leader := 0
		var epoch int32
		for id, st := range cl.c.statuses() {
			if st.Role == "Leader" && (leader == 0 || int32(st.Epoch) > epoch) {
				leader, epoch = id, int32(st.Epoch)
			}
		}
		cl.mu.Lock()
		if leader != 0 && leader != cl.guess {
			cl.guess = leader
			cl.cancel()
			cl.ctx, cl.cancel = context.WithCancel(context.Background())
		}
		cl.mu.Unlock()
	}
}

func (cl *client) run(worker int) {
	defer cl.wg.Done()
	for seq := 0; ; seq++ {
		select {
		case <-cl.done:
			return
		default:
		}
		cl.mu.Lock()
		target, ctx := cl.guess, cl.ctx
		cl.mu.Unlock()
		payload := fmt.Sprintf("w%d-%06d", worker, seq)
		sent := time.Now()
		code, body, err := cl.post(ctx, target, payload)
		at := time.Now()
		var res struct {
			Offset int64 `json:"offset"`
			Leader int   `json:"leader"`
		}
		if err == nil {
			err = json.Unmarshal(body, &res)
		}
		cl.mu.Lock()
		switch {
		case err == nil && code == http.StatusOK:
			cl.acks = append(cl.acks, ack{payload: payload, offset: res.Offset, from: target, sent: sent, at: at})
		case err == nil && code == http.StatusMisdirectedRequest:
			cl.misdirected++
			if cl.c.procs[res.Leader] != nil && res.Leader != target {
				cl.guess = res.Leader
			} else if cl.guess == target {
				cl.guess = cl.next(target)
			}
		default:
			cl.failed++
			if cl.guess == target {
				cl.guess = cl.next(target)
			}
		}
		cl.mu.Unlock()
		if code != http.StatusOK {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func (cl *client) next(id int) int {
	ids := cl.c.ids
	for i, x := range ids {
		if x == id {
			return ids[(i+1)%len(ids)]
		}
	}
	return ids[0]
}

func (cl *client) post(ctx context.Context, id int, payload string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+cl.c.procs[id].http+"/append", strings.NewReader(payload))
	if err != nil {
		return 0, nil, err
	}
	resp, err := cl.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// waitAck waits for an append sent after after and acknowledged by a
// node other than exclude (0: any), and returns the first.
func (cl *client) waitAck(after time.Time, exclude int, timeout time.Duration) (ack, bool) {
	deadline := time.Now().Add(timeout)
	for {
		var found *ack
		cl.mu.Lock()
		// Acks are kept in the order of their answers, within a few
		// microseconds: scan back until they are well before after.
		for i := len(cl.acks) - 1; i >= 0 && cl.acks[i].at.After(after.Add(-time.Second)); i-- {
			a := cl.acks[i]
			if a.sent.After(after) && a.from != exclude && (found == nil || a.at.Before(found.at)) {
				found = &a
			}
		}
		cl.mu.Unlock()
		if found != nil {
			return *found, true
		}
		if time.Now().After(deadline) {
			return ack{}, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (cl *client) acknowledged() []ack {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return append([]ack(nil), cl.acks...)
}
