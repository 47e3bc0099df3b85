//go:build unix

package kafkawire

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kraftdProc is a kraftd process (the repository's cmd/kraftd, built by
// the test) in Kafka's wire protocol.
type kraftdProc struct {
	t    *testing.T
	bin  string
	args []string
	http string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func buildKraftdBinary(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("..", "cmd", "kraftd"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		t.Skipf("no kraftd module at %s: %v", src, err)
	}
	out := filepath.Join(t.TempDir(), "kraftd")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building kraftd: %v\n%s", err, b)
	}
	return out
}

func (p *kraftdProc) start() {
	p.t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() {
		_ = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
}

func (p *kraftdProc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		p.cmd = nil
	}
}

type kraftdStatus struct {
	Role          string `json:"role"`
	Epoch         int    `json:"epoch"`
	Leader        int    `json:"leader"`
	HighWatermark int64  `json:"high_watermark"`
	State         *struct {
		Records int64 `json:"records"`
	} `json:"state"`
}

func (p *kraftdProc) status() (kraftdStatus, error) {
	var st kraftdStatus
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + p.http + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

func (p *kraftdProc) post(path, body string) (int, error) {
	c := http.Client{Timeout: 15 * time.Second}
	resp, err := c.Post("http://"+p.http+path, "text/plain", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestMixedKraftd: a kraftd process with -wire kafka and two Kafka KRaft
// replicas form a quorum. Records appended at a Kafka leader and at
// kraftd (over its HTTP API) commit everywhere; a Kafka node describes
// the quorum through the kraftd leader (DescribeQuorum to kraftd, as
// kafka-metadata-quorum would); kraftd is killed with SIGKILL while it
// leads, a Kafka node takes over, and kraftd rejoins from its disk; the
// Kafka nodes snapshot while kraftd is down, and it catches up through
// their snapshot.
func TestMixedKraftd(t *testing.T) {
	kbin := kafkaNodeDir(t)
	bin := buildKraftdBinary(t)
	addrs := freePorts(t, 4)
	voters := voterList(addrs[:3])
	cluster := "MkU3OEVBNTcwNTJENDM2Qg"
	base := t.TempDir()
	kafka := map[int]*kafkaNode{}
	startKafka := func(id int) {
		kafka[id] = startKafkaNode(t, kbin, id, addrs[id-1], voters, cluster, filepath.Join(base, fmt.Sprint(id)),
			"--election-timeout-ms", "500", "--fetch-timeout-ms", "1000", "--election-backoff-max-ms", "500")
	}
	startKafka(1)
	startKafka(2)
	kd := &kraftdProc{t: t, bin: bin, http: addrs[3], log: filepath.Join(base, "kraftd.log"), args: []string{
		"-wire", "kafka", "-cluster-id", cluster, "-id", "3", "-voters", voters, "-dir", filepath.Join(base, "3"),
		"-http", addrs[3], "-election-timeout", "500ms", "-fetch-timeout", "1s", "-election-backoff-max", "500ms",
	}}
	// kraftd's data directory is formatted once before its first start,
	// as Kafka's nodes' are (kraftd format, docs/design.md D108).
	if b, err := exec.Command(bin, "format", "-cluster-id", cluster, "-id", "3", "-voters", voters, "-dir", filepath.Join(base, "3")).CombinedOutput(); err != nil {
		t.Fatalf("kraftd format: %v\n%s", err, b)
	}
	kd.start()
	t.Cleanup(func() {
		kd.kill()
		if t.Failed() {
			b, _ := os.ReadFile(kd.log)
			t.Logf("kraftd's log:\n%s", b)
		}
	})

	// leader waits for an agreed leader and returns it with its epoch.
	leader := func() (int, int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			l, e, agree := -1, -1, true
			views := map[int][2]int{}
			for id, k := range kafka {
				a := k.call("status", 10*time.Second)
				views[id] = [2]int{int(a["leaderId"].(float64)), int(a["epoch"].(float64))}
				if a["role"] == "Leader" {
					l, e = id, int(a["epoch"].(float64))
				}
			}
			if kd.cmd != nil {
				st, err := kd.status()
				if err != nil {
					agree = false
				}
				views[3] = [2]int{st.Leader, st.Epoch}
				if st.Role == "Leader" {
					l, e = 3, st.Epoch
				}
			}
			for _, v := range views {
				agree = agree && v == [2]int{l, e}
			}
			if agree && l > 0 {
				return l, e
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no agreed leader within 30s")
		return -1, -1
	}
	appended := 0
	appendAt := func(l int, text string) {
		t.Helper()
		if l == 3 {
			code, err := kd.post("/append", text)
			if err != nil || code != http.StatusOK {
				t.Fatalf("kraftd append: %d %v", code, err)
			}
		} else if a := kafka[l].call("append "+text, 35*time.Second); a["ok"] != true {
			t.Fatalf("kafka node %d append: %v", l, a)
		}
		appended++
	}
	// sameCount waits until every node has committed appended records.
	sameCount := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok := true
			for _, k := range kafka {
				ok = ok && len(k.committed()) == appended
			}
			if kd.cmd != nil {
				st, err := kd.status()
				ok = ok && err == nil && st.State != nil && st.State.Records == int64(appended)
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				st, _ := kd.status()
				t.Fatalf("not every node committed %d records (kraftd: %+v)", appended, st)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	l, epoch := leader()
	t.Logf("leader %d in epoch %d", l, epoch)
	for i := 0; i < 3; i++ {
		appendAt(l, fmt.Sprintf("first-%d", i))
	}
	sameCount()

	// kraftd leads: a Kafka leader resigns with the other Kafka node down.
	for l != 3 {
		other := 3 - l
		kafka[other].kill()
		delete(kafka, other)
		if a := kafka[l].call("resign", 10*time.Second); a["ok"] != true {
			t.Fatalf("resign: %v", a)
		}
		for {
			if nl, ne := leader(); ne > epoch {
				l, epoch = nl, ne
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		startKafka(other)
		l, epoch = leader()
	}
	for i := 0; i < 3; i++ {
		appendAt(3, fmt.Sprintf("kraftd-%d", i))
	}
	sameCount()
	for id, k := range kafka {
		a := k.call("describe "+addrs[2], 10*time.Second)
		vs, _ := a["voters"].([]any)
		if a["ok"] != true || int(a["leaderId"].(float64)) != 3 || int(a["leaderEpoch"].(float64)) != epoch || len(vs) != 3 {
			t.Fatalf("kafka node %d describes kraftd: %v", id, a)
		}
	}

	// kill -9 of kraftd as the leader.
	killed := time.Now()
	kd.kill()
	for {
		if nl, ne := leader(); ne > epoch {
			t.Logf("kraftd killed as the leader in epoch %d: %d leads in epoch %d after %v", epoch, nl, ne, time.Since(killed).Round(time.Millisecond))
			l, epoch = nl, ne
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		appendAt(l, fmt.Sprintf("after-kill-%d", i))
	}
	kd.start()
	sameCount()

	// The Kafka nodes snapshot and delete their logs before the snapshot
	// while kraftd is down: kraftd catches up through a Kafka node's
	// snapshot, rebuilding its state from the records it holds
	// (docs/design.md D158).
	kd.kill()
	l, _ = leader()
	for i := 0; i < 3; i++ {
		appendAt(l, fmt.Sprintf("kafka-snapshot-%d", i))
	}
	for id, k := range kafka {
		if a := k.call("snapshot clean", 10*time.Second); a["ok"] != true {
			t.Fatalf("kafka node %d snapshot: %v", id, a)
		}
	}
	kd.start()
	sameCount()
	var st struct {
		SnapshotsInstalled int `json:"snapshots_installed"`
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + kd.http + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.SnapshotsInstalled != 1 {
		t.Fatalf("kraftd installed %d snapshots (%v), want the Kafka leader's", st.SnapshotsInstalled, err)
	}
}
