package kafkawire

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// KafkaNodeEnv names the directory of a Kafka KRaft replica process
// (run.sh starting Kafka's KafkaRaftClient with a JSON-lines control
// interface on stdin and stdout) for the mixed-quorum tests; without it
// they are skipped.
const KafkaNodeEnv = "KRAFT_KAFKA_NODE"

// kafkaNodeDir returns the directory KafkaNodeEnv names, or skips t.
func kafkaNodeDir(t *testing.T) string {
	dir := os.Getenv(KafkaNodeEnv)
	if dir == "" {
		t.Skipf("%s is not set: no Kafka KRaft replica to run a mixed quorum with", KafkaNodeEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil {
		t.Skipf("%s=%s: %v", KafkaNodeEnv, dir, err)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skipf("%s=%s but no java: %v", KafkaNodeEnv, dir, err)
	}
	// run.sh checks java and its jars before it starts Java, and says so
	// with a "run.sh:" line (--help itself exits 2 with the usage).
	if out, err := exec.Command(filepath.Join(dir, "run.sh"), "--help").CombinedOutput(); err != nil && strings.Contains(string(out), "run.sh:") {
		t.Skipf("%s=%s: run.sh cannot start: %v: %s", KafkaNodeEnv, dir, err, strings.TrimSpace(string(out)))
	}
	return dir
}

// kafkaNode is one Kafka KRaft replica process.
type kafkaNode struct {
	t    *testing.T
	id   int
	cmd  *exec.Cmd
	in   io.WriteCloser
	done chan struct{}

	stderr string // the process's stderr file

	mu      sync.Mutex
	req     int
	answers map[int]map[string]any
	events  []map[string]any
	cond    *sync.Cond
}

// startKafkaNode starts node id of a static quorum (voters), or of a
// dynamic one (voters empty, --initial-voters or --bootstrap-servers in
// extra).
func startKafkaNode(t *testing.T, bin string, id int, listen, voters, cluster, dataDir string, extra ...string) *kafkaNode {
	t.Helper()
	args := []string{"--node-id", fmt.Sprint(id), "--listen", listen}
	if voters != "" { // "": a dynamic quorum's node, its flags in extra
		args = append(args, "--voters", voters)
	}
	args = append(append(args, "--cluster-id", cluster, "--data-dir", dataDir, "--stdin-eof", "quit"), extra...)
	cmd := exec.Command(filepath.Join(bin, "run.sh"), args...)
	level := "warn"
	if l := os.Getenv("KAFKA_RAFT_NODE_LOG_LEVEL"); l != "" {
		level = l
	}
	cmd.Env = append(os.Environ(), "KAFKA_RAFT_NODE_LOG_LEVEL="+level)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dataDir + ".stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &kafkaNode{t: t, id: id, cmd: cmd, in: in, done: make(chan struct{}), answers: map[int]map[string]any{}, stderr: dataDir + ".stderr"}
	k.cond = sync.NewCond(&k.mu)
	go func() {
		defer close(k.done)
		defer logf.Close()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				continue
			}
			k.mu.Lock()
			if r, ok := m["req"].(float64); ok {
				k.answers[int(r)] = m
			} else {
				k.events = append(k.events, m)
			}
			k.cond.Broadcast()
			k.mu.Unlock()
		}
		_ = cmd.Wait()
		k.mu.Lock()
		k.cond.Broadcast()
		k.mu.Unlock()
	}()
	t.Cleanup(func() { k.kill() })
	k.waitEvent("started", 30*time.Second)
	return k
}

// exitReport is what the process said before it exited: its last events
// and the tail of its stderr.
func (k *kafkaNode) exitReport() string {
	k.mu.Lock()
	evs := k.events
	if len(evs) > 3 {
		evs = evs[len(evs)-3:]
	}
	k.mu.Unlock()
	b, _ := os.ReadFile(k.stderr)
	if len(b) > 20000 {
		b = b[len(b)-20000:]
	}
	return fmt.Sprintf("last events %v; stderr:\n%s", evs, b)
}

func (k *kafkaNode) exited() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// waitEvent waits for an event named name.
func (k *kafkaNode) waitEvent(name string, d time.Duration) map[string]any {
	k.t.Helper()
	return k.waitEventWhere(name, func(map[string]any) bool { return true }, d)
}

// waitEventWhere waits for an event named name for which ok holds.
func (k *kafkaNode) waitEventWhere(name string, ok func(map[string]any) bool, d time.Duration) map[string]any {
	k.t.Helper()
	deadline := time.Now().Add(d)
	for {
		k.mu.Lock()
		for _, e := range k.events {
			if e["event"] == name && ok(e) {
				k.mu.Unlock()
				return e
			}
		}
		k.mu.Unlock()
		if k.exited() {
			k.t.Fatalf("kafka node %d exited before %q: %s", k.id, name, k.exitReport())
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("kafka node %d: no %q within %v", k.id, name, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// call sends one command line and returns its answer.
func (k *kafkaNode) call(line string, d time.Duration) map[string]any {
	k.t.Helper()
	k.mu.Lock()
	k.req++
	n := k.req
	k.mu.Unlock()
	if _, err := io.WriteString(k.in, line+"\n"); err != nil {
		k.t.Fatalf("kafka node %d: %v", k.id, err)
	}
	deadline := time.Now().Add(d)
	k.mu.Lock()
	defer k.mu.Unlock()
	for {
		if a, ok := k.answers[n]; ok {
			return a
		}
		if k.exited() {
			k.mu.Unlock()
			report := k.exitReport()
			k.mu.Lock()
			k.t.Fatalf("kafka node %d exited before answering %q: %s", k.id, line, report)
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("kafka node %d: no answer to %q within %v", k.id, line, d)
		}
		k.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		k.mu.Lock()
	}
}

// kill stops the process as kill -9 does.
func (k *kafkaNode) kill() {
	if k.cmd.Process != nil && !k.exited() {
		_ = k.cmd.Process.Signal(syscall.SIGKILL)
		<-k.done
	}
}

// committed is the node's committed data records, in order, each as
// "offset@epoch:text".
func (k *kafkaNode) committed() []string {
	a := k.call("records", 10*time.Second)
	var out []string
	rs, _ := a["records"].([]any)
	for _, r := range rs {
		m, _ := r.(map[string]any)
		out = append(out, fmt.Sprintf("%v@%v:%v", m["offset"], m["epoch"], m["text"]))
	}
	return out
}

// freePorts returns n loopback addresses with free ports.
func freePorts(t *testing.T, n int) []string {
	var out []string
	var lns []net.Listener
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return out
}

func voterList(addrs []string) string {
	var parts []string
	for i, a := range addrs {
		parts = append(parts, fmt.Sprintf("%d@%s", i+1, a))
	}
	return strings.Join(parts, ",")
}
