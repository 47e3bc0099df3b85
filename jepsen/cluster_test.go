package jepsen

import (
	"bytes"
	crand "crypto/rand"
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

	"github.com/stretchr/testify/require"
)

const clusterID = "MkU3OEVBNTcwNTJENDM2Qg"

// timeouts are the processes' raft timeouts: short, so that a run sees
// many elections (as cmd/kraftd's process tests run them).
var timeouts = []string{"-election-timeout", "200ms", "-fetch-timeout", "400ms", "-election-backoff-max", "200ms", "-snapshot-every", "500"}

// buildKraftd builds kraftd from ../cmd/kraftd into dir, with the build
// tags given (kraftdbug: the planted bugs, D141).
func buildKraftd(t *testing.T, dir, tags string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	name := "kraftd"
	if tags != "" {
		name += "-" + tags
	}
	out := filepath.Join(dir, name)
	src, err := filepath.Abs(filepath.Join("..", "cmd", "kraftd"))
	require.NoError(t, err)
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	start := time.Now()
	cmd := exec.Command(goBin, append(args, ".")...)
	cmd.Dir = src
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %v:\n%s", args, output)
	t.Logf("built %s in %v", name, time.Since(start).Round(time.Millisecond))
	return out
}

// freePorts returns n free ports, drawn below the system's ephemeral
// range so that no outgoing connection takes one before kraftd binds it
// (as cmd/kraftd's harness_test.go does).
func freePorts(t *testing.T, n int) []string {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				low = v
			}
		}
	}
	var lns []net.Listener
	var addrs []string
	for tries := 0; len(addrs) < n && low > 10000 && tries < 1000; tries++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(10000+rand.Intn(low-10000))))
		if err != nil {
			continue
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	require.Len(t, addrs, n)
	for _, ln := range lns {
		require.NoError(t, ln.Close())
	}
	return addrs
}

// status is the part of kraftd's GET /status the test reads.
type status struct {
	ID     int    `json:"id"`
	Role   string `json:"role"`
	Epoch  int    `json:"epoch"`
	Leader int    `json:"leader"`
	State  struct {
		Applied int64  `json:"applied"`
		Digest  string `json:"digest"`
	} `json:"state"`
}

// proc is one kraftd process.
type proc struct {
	id              int
	bin, dir, http  string
	stderr          string
	args, env       []string
	mu              sync.Mutex
	cmd             *exec.Cmd
	exited          chan struct{}
	running, paused bool
	expectExit      bool
	starts          int
	// slowSync, if set, is the KRAFTD_SYNC_DELAY of the next starts (D162).
	slowSync   string
	unexpected string
}

// cluster is n kraftd processes of a static or dynamic quorum and the
// network of proxies between them.
type cluster struct {
	t       *testing.T
	n       int
	procs   []*proc // procs[i-1] is node i
	net     *network
	http    *http.Client
	dynamic bool
	dirIDs  []string // a dynamic quorum's directory ids: dirIDs[i-1] is node i's
}

// newCluster formats n data directories under base and prepares the
// processes. In a static quorum node i's -voters names itself at its real
// address and every other node j at the link (i, j). In a dynamic one
// (KIP-853, D161) every node is formatted with the same -initial-voters,
// which names node j at its router, and listens at its real address.
func newCluster(t *testing.T, bin, base string, n int, env []string, dynamic bool) *cluster {
	c := &cluster{t: t, n: n, net: &network{n: n, links: map[[2]int]*link{}},
		http: &http.Client{Timeout: 500 * time.Millisecond}, dynamic: dynamic}
	ports := freePorts(t, 2*n)
	for i := 1; i <= n; i++ {
		for j := 1; j <= n; j++ {
			if i != j {
				var l *link
				var err error
				if dynamic {
					l = &link{from: i, to: j, target: ports[j-1], conns: map[net.Conn]struct{}{}}
				} else {
					l, err = newLink(i, j, ports[j-1])
				}
				require.NoError(t, err)
				c.net.links[[2]int{i, j}] = l
			}
		}
	}
	if dynamic {
		c.newDynamic(bin, base, ports, env)
		return c
	}
	for i := 1; i <= n; i++ {
		var voters []string
		for j := 1; j <= n; j++ {
			addr := ports[j-1]
			if j != i {
				addr = c.net.links[[2]int{i, j}].addr()
			}
			voters = append(voters, fmt.Sprintf("%d@%s", j, addr))
		}
		p := &proc{id: i, bin: bin, http: ports[n+i-1],
			dir:    filepath.Join(base, fmt.Sprintf("node%d", i)),
			stderr: filepath.Join(base, fmt.Sprintf("node%d.stderr", i)),
			env:    env}
		p.args = append([]string{"-id", strconv.Itoa(i), "-voters", strings.Join(voters, ","),
			"-dir", p.dir, "-http", p.http, "-cluster-id", clusterID}, timeouts...)
		out, err := exec.Command(bin, "format", "-cluster-id", clusterID, "-id", strconv.Itoa(i),
			"-dir", p.dir, "-voters", strings.Join(voters, ",")).CombinedOutput()
		require.NoError(t, err, "kraftd format: %s", out)
		c.procs = append(c.procs, p)
	}
	t.Cleanup(func() {
		for _, p := range c.procs {
			p.kill()
		}
		c.net.close()
	})
	return c
}

// newDynamic formats and prepares a dynamic quorum of c.n voters, all of
// them in the bootstrap voter set (kraftd format -initial-voters).
func (c *cluster) newDynamic(bin, base string, ports []string, env []string) {
	t, n := c.t, c.n
	var initial []string
	for j := 1; j <= n; j++ {
		links := map[int]*link{}
		for i := 1; i <= n; i++ {
			if i != j {
				links[i] = c.net.links[[2]int{i, j}]
			}
		}
		r, err := newRouter(j, links)
		require.NoError(t, err)
		c.net.routers = append(c.net.routers, r)
		b := make([]byte, 16)
		_, _ = crand.Read(b)
		id := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
		c.dirIDs = append(c.dirIDs, id)
		initial = append(initial, fmt.Sprintf("%d:%s@%s", j, id, r.addr()))
	}
	for i := 1; i <= n; i++ {
		p := &proc{id: i, bin: bin, http: ports[n+i-1],
			dir:    filepath.Join(base, fmt.Sprintf("node%d", i)),
			stderr: filepath.Join(base, fmt.Sprintf("node%d.stderr", i)),
			env:    env}
		p.args = append([]string{"-id", strconv.Itoa(i), "-initial-voters", strings.Join(initial, ","),
			"-listen", ports[i-1], "-dir", p.dir, "-http", p.http, "-cluster-id", clusterID}, timeouts...)
		out, err := exec.Command(bin, "format", "-cluster-id", clusterID, "-id", strconv.Itoa(i),
			"-dir", p.dir, "-initial-voters", strings.Join(initial, ",")).CombinedOutput()
		require.NoError(t, err, "kraftd format: %s", out)
		c.procs = append(c.procs, p)
	}
	t.Cleanup(func() {
		for _, p := range c.procs {
			p.kill()
		}
		c.net.close()
	})
}

func (c *cluster) proc(id int) *proc { return c.procs[id-1] }

func (c *cluster) startAll() {
	for _, p := range c.procs {
		require.NoError(c.t, p.start())
	}
}

func (p *proc) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return nil
	}
	f, err := os.OpenFile(p.stderr, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	p.starts++
	_, _ = fmt.Fprintf(f, "--- start %d at %s\n", p.starts, time.Now().Format("15:04:05.000000"))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Env = append(os.Environ(), p.env...)
	if p.slowSync != "" {
		cmd.Env = append(cmd.Env, "KRAFTD_SYNC_DELAY="+p.slowSync)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return err
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.running, p.paused, p.expectExit = cmd, exited, true, false, false
	n := p.starts
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		p.mu.Lock()
		p.running, p.paused = false, false
		if !p.expectExit && p.unexpected == "" {
			p.unexpected = fmt.Sprintf("start %d: %v", n, err)
		}
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// kill sends SIGKILL (kill -9) and waits for the exit.
func (p *proc) kill() {
	p.mu.Lock()
	if !p.running {
		p.mu.Unlock()
		return
	}
	p.expectExit = true
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	ch := p.exited
	p.mu.Unlock()
	<-ch
}

// pause sends SIGSTOP, resume SIGCONT.
func (p *proc) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running && !p.paused {
		_ = p.cmd.Process.Signal(syscall.SIGSTOP)
		p.paused = true
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

func (p *proc) setSlowSync(d string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slowSync = d
}

func (p *proc) unexpectedExit() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unexpected
}

// tail returns the last lines of the process's stderr.
func (p *proc) tail(lines int) string {
	b, err := os.ReadFile(p.stderr)
	if err != nil {
		return err.Error()
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func (c *cluster) status(id int) (status, error) {
	var st status
	resp, err := c.http.Get("http://" + c.proc(id).http + "/status")
	if err != nil {
		return st, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return st, fmt.Errorf("%s: %s", resp.Status, b)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// leader returns the node that a replica reports leading itself, or 0.
func (c *cluster) leader() int {
	for id := 1; id <= c.n; id++ {
		if st, err := c.status(id); err == nil && st.Role == "Leader" {
			return id
		}
	}
	return 0
}

// resign asks node id to resign (POST /resign): 200 on the leader.
func (c *cluster) resign(id int) int {
	resp, err := c.http.Post("http://"+c.proc(id).http+"/resign", "", nil)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// voters returns the ids of the voter set in force as node id knows it
// (GET /voters).
func (c *cluster) voters(id int) ([]int, error) {
	resp, err := c.http.Get("http://" + c.proc(id).http + "/voters")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Voters []struct {
			ID int `json:"id"`
		} `json:"voters"`
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: %s", resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	var ids []int
	for _, v := range body.Voters {
		ids = append(ids, v.ID)
	}
	return ids, nil
}

// changeVoter sends POST /voters/add or /voters/remove (kind "add" or
// "remove") of node id, its directory id and, to add, its router's
// address, to the leader; kraftd answers 200 once the change is committed.
// It returns the status code (0: no answer) and the body.
func (c *cluster) changeVoter(leader int, kind string, id int) (int, string) {
	body := fmt.Sprintf(`{"id": %d, "directory_id": %q`, id, c.dirIDs[id-1])
	if kind == "add" {
		body += fmt.Sprintf(`, "endpoint": %q`, c.net.routers[id-1].addr())
	}
	body += "}"
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Post("http://"+c.proc(leader).http+"/voters/"+kind, "application/json", bytes.NewBufferString(body))
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// addVoter adds node id back until the change commits or within passes:
// the leader may change, refuse while an earlier change is not committed,
// or time out while id catches up. It returns whether id is a voter and
// how it learnt so.
func (c *cluster) addVoter(id int, within time.Duration) (bool, string) {
	deadline := time.Now().Add(within)
	tries := 0
	for time.Now().Before(deadline) {
		if l := c.leader(); l != 0 {
			if vs, err := c.voters(l); err == nil && containsInt(vs, id) {
				return true, fmt.Sprintf("a voter at leader %d (%v) after %d tries", l, vs, tries)
			}
			tries++
			if code, _ := c.changeVoter(l, "add", id); code == http.StatusOK {
				return true, fmt.Sprintf("POST /voters/add at leader %d: 200 after %d tries", l, tries)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false, fmt.Sprintf("not a voter after %d tries", tries)
}

func containsInt(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
