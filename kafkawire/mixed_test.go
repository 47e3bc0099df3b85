package kafkawire

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/storage"
)

// The mixed quorum's timeouts, for every node (Kafka's
// controller.quorum.election.timeout.ms and fetch.timeout.ms, halved).
const (
	mixedElectionTimeout = 500 * time.Millisecond
	mixedFetchTimeout    = 1000 * time.Millisecond
)

// mixedQuorum is a static three-voter quorum: Kafka's own replicas 1 and
// 2, and a kraft runtime (node.Node over Transport) as 3.
type mixedQuorum struct {
	t       *testing.T
	bin     string
	cluster string
	addrs   []string
	dirs    []string
	kafka   map[int]*kafkaNode

	kraft *node.Node
	tr    *Transport
	// observer: Kafka's replicas are the only voters; the kraft runtime
	// observes their quorum.
	observer bool
	// kafkaArgs are extra arguments of the Kafka replicas; versions is
	// the kraft transport's version table (nil: TransportVersions).
	kafkaArgs []string
	versions  Versions
	listener  string // the kraft transport's listener name ("": CONTROLLER)

	mu      sync.Mutex
	applied []mixedRecord // the kraft node's state: its committed data records
}

// mixedRecord is a record of the state machine, and of its snapshots in
// Kafka's format, as Kafka's test replica keeps them: JSON
// {"offset","epoch","text"} per record.
type mixedRecord struct {
	Offset int64  `json:"offset"`
	Epoch  int64  `json:"epoch"`
	Text   string `json:"text"`
}

const kraftID = 3

func newMixedQuorum(t *testing.T) *mixedQuorum { return newMixed(t, false) }

func newMixed(t *testing.T, observer bool) *mixedQuorum {
	return newMixedWith(t, observer, nil, nil)
}

func newMixedWith(t *testing.T, observer bool, kafkaArgs []string, versions Versions) *mixedQuorum {
	bin := kafkaNodeDir(t)
	q := &mixedQuorum{t: t, bin: bin, cluster: "MkU3OEVBNTcwNTJENDM2Qg", addrs: freePorts(t, 3), kafka: map[int]*kafkaNode{},
		observer: observer, kafkaArgs: kafkaArgs, versions: versions}
	for i := 0; i < 3; i++ {
		q.dirs = append(q.dirs, t.TempDir())
	}
	q.startKafka(1)
	q.startKafka(2)
	q.startKraft()
	t.Cleanup(func() {
		if q.kraft != nil {
			_ = q.kraft.Close()
		}
	})
	return q
}

func (q *mixedQuorum) startKafka(id int) {
	voters := voterList(q.addrs)
	if q.observer {
		voters = voterList(q.addrs[:2])
	}
	args := append([]string{
		"--election-timeout-ms", fmt.Sprint(mixedElectionTimeout.Milliseconds()),
		"--fetch-timeout-ms", fmt.Sprint(mixedFetchTimeout.Milliseconds()),
		"--election-backoff-max-ms", "500"}, q.kafkaArgs...)
	q.kafka[id] = startKafkaNode(q.t, q.bin, id, q.addrs[id-1], voters, q.cluster, filepath.Join(q.dirs[id-1], "kafka"), args...)
}

func (q *mixedQuorum) startKraft() {
	q.t.Helper()
	cid, err := ParseClusterID(&q.cluster)
	if err != nil {
		q.t.Fatal(err)
	}
	peers := map[kraft.NodeID]string{}
	var voters []kraft.ReplicaKey
	for i, a := range q.addrs {
		if i+1 != kraftID || !q.observer {
			voters = append(voters, kraft.ReplicaKey{ID: kraft.NodeID(i + 1)})
		}
		if i+1 != kraftID {
			peers[kraft.NodeID(i+1)] = a
		}
	}
	var tr *Transport
	for try := 0; try < 100; try++ {
		tr, err = NewTransport(TransportConfig{ID: kraftID, Listen: q.addrs[kraftID-1], Peers: peers, Versions: q.versions,
			ListenerName: q.listener, Logf: q.t.Logf})
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		q.t.Fatal(err)
	}
	dir := q.dirs[kraftID-1]
	lg, _, err := storage.Open(filepath.Join(dir, "log"), storage.Options{})
	if err != nil {
		q.t.Fatal(err)
	}
	q.mu.Lock()
	q.applied = nil
	q.mu.Unlock()
	snaps, err := storage.OpenSnapshots(filepath.Join(dir, "snapshots"))
	if err != nil {
		q.t.Fatal(err)
	}
	// KafkaFailover: Kafka's election rules in a quorum with Kafka's
	// replicas (docs/design.md D84).
	nd, err := node.Start(node.Config{Config: replica.Config{SnapshotChunkBytes: 200,

		Kraft: kraft.Config{
			Local: kraft.ReplicaKey{ID: kraftID}, Observer: q.observer, KafkaFailover: true, Voters: voters, ClusterID: cid, Seed: uint64(time.Now().UnixNano()),
			ElectionTimeout: mixedElectionTimeout, FetchTimeout: mixedFetchTimeout, ElectionBackoffMax: 500 * time.Millisecond,
		},
		Log: lg, Records: node.FileRecords{Path: filepath.Join(dir, "quorum-state")}}, Snapshots: snaps, SnapshotEvery: 8,
		Snapshot: func(upTo kraft.LogEnd, w io.Writer) error {
			q.mu.Lock()
			recs := append([]mixedRecord(nil), q.applied...)
			q.mu.Unlock()
			now := time.Now().UnixMilli()
			sw, err := NewSnapshotWriter(w, upTo, now, now)
			if err != nil {
				return err
			}
			var values [][]byte
			for _, r := range recs {
				v, _ := json.Marshal(r)
				values = append(values, v)
			}
			if err := sw.Append(now, values...); err != nil {
				return err
			}
			return sw.Close(now)
		},
		Restore: func(id kraft.LogEnd, r io.Reader) error {
			c, err := ReadSnapshot(r)
			if err != nil {
				return err
			}
			var recs []mixedRecord
			for _, v := range c.Values {
				var m mixedRecord
				if err := json.Unmarshal(v, &m); err != nil {
					m = mixedRecord{Offset: -1, Text: string(v)}
				}
				recs = append(recs, m)
			}
			q.mu.Lock()
			q.applied = recs
			q.mu.Unlock()
			q.t.Logf("kraft node restored snapshot %+v: %d records", id, len(recs))
			return nil
		},

		Transport: tr,
		Logf:      q.t.Logf,
		OnCommit: func(rs []node.Record) {
			q.mu.Lock()
			defer q.mu.Unlock()
			for _, r := range rs {
				q.applied = append(q.applied, mixedRecord{Offset: r.Offset, Epoch: int64(r.Epoch), Text: string(r.Data)})
			}
		},
	})
	if err != nil {
		q.t.Fatal(err)
	}
	tr.ServeDescribeQuorum(nd)
	q.kraft, q.tr = nd, tr
}

// stopKraft closes the kraft node at once (no handover), as kill -9.
func (q *mixedQuorum) stopKraft() {
	_ = q.kraft.Close()
	q.kraft, q.tr = nil, nil
}

// view is one node's idea of the quorum.
type view struct {
	role   string
	epoch  int
	leader int
	hwm    int64
}

func (q *mixedQuorum) views() map[int]view {
	out := map[int]view{}
	for id, k := range q.kafka {
		if k.exited() {
			continue
		}
		a := k.call("status", 10*time.Second)
		out[id] = view{role: fmt.Sprint(a["role"]), epoch: int(a["epoch"].(float64)), leader: int(a["leaderId"].(float64)), hwm: int64(a["highWatermark"].(float64))}
	}
	if q.kraft != nil {
		st, err := q.kraft.Status()
		if err == nil {
			out[kraftID] = view{role: st.Role, epoch: int(st.Epoch), leader: int(st.Leader), hwm: st.HighWatermark}
		}
	}
	return out
}

// leader waits until one node leads and every running node follows it in
// its epoch, and returns its id and epoch.
func (q *mixedQuorum) leader() (int, int) {
	q.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var vs map[int]view
	for time.Now().Before(deadline) {
		vs = q.views()
		leader, epoch := -1, -1
		for id, v := range vs {
			if v.role == "Leader" {
				leader, epoch = id, v.epoch
			}
		}
		agree := leader >= 0
		for _, v := range vs {
			if v.leader != leader || v.epoch != epoch {
				agree = false
			}
		}
		if agree {
			return leader, epoch
		}
		time.Sleep(50 * time.Millisecond)
	}
	q.t.Fatalf("no agreed leader within 30s: %+v", vs)
	return -1, -1
}

// appendAt appends text at node id, which leads, and waits for its commit.
func (q *mixedQuorum) appendAt(id int, text string) error {
	if id == kraftID {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := q.kraft.Append(ctx, []byte(text))
		return err
	}
	a := q.kafka[id].call("append "+text, 35*time.Second)
	if a["ok"] != true {
		return fmt.Errorf("kafka node %d: %v", id, a["error"])
	}
	return nil
}

// appendCommitted appends text at whichever node leads until it commits.
func (q *mixedQuorum) appendCommitted(text string) int {
	q.t.Helper()
	for try := 0; try < 10; try++ {
		l, _ := q.leader()
		err := q.appendAt(l, text)
		if err == nil {
			return l
		}
		q.t.Logf("append %q at %d: %v", text, l, err)
		time.Sleep(100 * time.Millisecond)
	}
	q.t.Fatalf("append %q never committed", text)
	return -1
}

// kraftApplied is the kraft node's committed data records.
func (q *mixedQuorum) kraftApplied() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, r := range q.applied {
		out = append(out, r.Text)
	}
	return out
}

// kraftCommitted is the kraft node's state as kafkaNode.committed
// reports a Kafka node's.
func (q *mixedQuorum) kraftCommitted() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, r := range q.applied {
		out = append(out, fmt.Sprintf("%d@%d:%s", r.Offset, r.Epoch, r.Text))
	}
	return out
}

// waitSame waits until every running node has committed exactly want, at
// the same offsets in the same epochs.
func (q *mixedQuorum) waitSame(want []string) {
	q.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		bad := ""
		var ref []string
		if q.kraft != nil {
			if got := q.kraftApplied(); fmt.Sprint(got) != fmt.Sprint(want) {
				bad = fmt.Sprintf("kraft node %d committed %q, want %q", kraftID, got, want)
			}
			ref = q.kraftCommitted()
		}
		for id, k := range q.kafka {
			if k.exited() {
				continue
			}
			got := k.committed()
			if ref == nil {
				ref = got
			}
			var texts []string
			for _, g := range got {
				texts = append(texts, g[strings.Index(g, ":")+1:])
			}
			if fmt.Sprint(texts) != fmt.Sprint(want) {
				bad = fmt.Sprintf("kafka node %d committed %q, want %q", id, texts, want)
			} else if fmt.Sprint(got) != fmt.Sprint(ref) {
				bad = fmt.Sprintf("kafka node %d committed %q, the kraft node (or another) %q", id, got, ref)
			}
		}
		if bad == "" {
			return
		}
		if time.Now().After(deadline) {
			q.t.Fatal(bad)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leadBy waits for a leader that want accepts and returns it. While a
// Kafka node leads that want does not accept, it stops the other Kafka
// node (kill -9) and has the leader resign: the kraft node is then the
// one replica that can be elected; the stopped node restarts after. While
// the kraft node leads and want does not accept it, the kraft node
// resigns.
func (q *mixedQuorum) leadBy(want func(int) bool) int {
	q.t.Helper()
	for try := 0; try < 10; try++ {
		l, epoch := q.leader()
		if want(l) {
			return l
		}
		if l == kraftID {
			q.t.Logf("kraft leader %d resigns in epoch %d", l, epoch)
			if err := q.kraft.Resign(); err != nil {
				q.t.Logf("resign: %v", err)
			}
		} else {
			other := 3 - l
			q.t.Logf("kafka leader %d resigns in epoch %d, with kafka node %d stopped", l, epoch, other)
			q.kafka[other].kill()
			delete(q.kafka, other)
			if a := q.kafka[l].call("resign", 10*time.Second); a["ok"] != true {
				q.t.Logf("kafka node %d resign: %v", l, a)
			}
			q.waitEpochAfter(epoch)
			q.startKafka(other)
		}
		q.waitEpochAfter(epoch)
	}
	q.t.Fatal("could not get the wanted leader in 10 tries")
	return -1
}

// waitEpochAfter waits for an agreed leader in an epoch after epoch.
func (q *mixedQuorum) waitEpochAfter(epoch int) (int, int) {
	q.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l, e := q.leader()
		if e > epoch {
			return l, e
		}
		time.Sleep(20 * time.Millisecond)
	}
	q.t.Fatalf("no leader after epoch %d within 30s", epoch)
	return -1, -1
}

var _ = uuid.Nil

// describeKafka checks a Kafka leader's DescribeQuorum answer as kraft's
// Describe reads it.
func (q *mixedQuorum) describeKafka(leader int) {
	q.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := Describe(ctx, q.addrs[leader-1])
	if err != nil {
		q.t.Fatalf("describe kafka leader %d: %v", leader, err)
	}
	if r.Version != 2 || r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		q.t.Fatalf("describe kafka leader %d: %+v", leader, r)
	}
	p := r.Topics[0].Partitions[0]
	if int(p.LeaderID) != leader || len(p.CurrentVoters) != 3 || p.HighWatermark <= 0 || len(r.Nodes) != 3 {
		q.t.Fatalf("describe kafka leader %d: %+v", leader, r)
	}
	for _, v := range p.CurrentVoters {
		if v.LogEndOffset <= 0 || v.LastFetchTimestamp <= 0 {
			q.t.Fatalf("describe kafka leader %d: voter %+v", leader, v)
		}
	}
	q.t.Logf("kafka leader %d describes: epoch %d hwm %d voters %+v", leader, p.LeaderEpoch, p.HighWatermark, p.CurrentVoters)
}

// describeKraft has a Kafka node send DescribeQuorum to the kraft leader
// (Kafka's own request and response classes) and checks the answer.
func (q *mixedQuorum) describeKraft() {
	q.t.Helper()
	st, err := q.kraft.Status()
	if err != nil {
		q.t.Fatal(err)
	}
	for id, k := range q.kafka {
		a := k.call("describe "+q.addrs[kraftID-1], 10*time.Second)
		if a["ok"] != true {
			q.t.Fatalf("kafka node %d describe of the kraft leader: %v", id, a)
		}
		if int(a["leaderId"].(float64)) != kraftID || int(a["leaderEpoch"].(float64)) != int(st.Epoch) {
			q.t.Fatalf("kafka node %d describes the kraft leader: %v", id, a)
		}
		voters, _ := a["voters"].([]any)
		if len(voters) != 3 || int64(a["highWatermark"].(float64)) <= 0 {
			q.t.Fatalf("kafka node %d describes the kraft leader: %v", id, a)
		}
		for _, v := range voters {
			m := v.(map[string]any)
			if m["logEndOffset"].(float64) <= 0 {
				q.t.Fatalf("kafka node %d describes the kraft leader: voter %v", id, m)
			}
		}
		q.t.Logf("kafka node %d describes the kraft leader: %v", id, a["response"])
	}
}

// TestMixedQuorum: two Kafka KRaft replicas and a kraft runtime form a
// quorum in Kafka's wire protocol. They elect a leader, whichever it is;
// records appended at a Kafka leader reach kraft and the other way round,
// identical everywhere; each kind of leader resigns to the other kind and
// is killed (kill -9 for Kafka's; the kraft node is closed without a
// handover, and restarts from its disk), and the quorum goes on with the
// records it committed.
func TestMixedQuorum(t *testing.T) {
	q := newMixedQuorum(t)
	var want []string
	add := func(prefix string, n int) {
		for i := 0; i < n; i++ {
			want = append(want, fmt.Sprintf("%s%d", prefix, i))
			q.appendCommitted(want[len(want)-1])
		}
	}
	l, epoch := q.leader()
	t.Logf("first leader %d in epoch %d", l, epoch)
	add("first", 3)
	q.waitSame(want)

	// A Kafka leader: appends reach kraft.
	isKafka := func(id int) bool { return id != kraftID }
	isKraft := func(id int) bool { return id == kraftID }
	l = q.leadBy(isKafka)
	add("kafka-led", 5)
	q.waitSame(want)
	q.describeKafka(l)

	// A Kafka leader resigns, the kraft node is elected: appends reach
	// Kafka's nodes.
	q.leadBy(isKraft)
	add("kraft-led", 5)
	q.waitSame(want)
	q.describeKraft()
	// A read barrier at the kraft leader is confirmed by a round of
	// BeginQuorumEpoch requests, which Kafka's followers answer
	// (KafkaRaftClient.handleBeginQuorumEpochRequest); replication goes
	// on after it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if _, err := q.kraft.ReadBarrier(ctx); err != nil {
		t.Fatalf("read barrier: %v", err)
	}
	cancel()
	add("after-barrier", 2)
	q.waitSame(want)

	// The kraft leader resigns; a Kafka node is elected.
	_, epoch = q.leader()
	if err := q.kraft.Resign(); err != nil {
		t.Fatal(err)
	}
	l, _ = q.waitEpochAfter(epoch)
	if l == kraftID {
		t.Logf("the resigned kraft node was elected again")
	}
	add("after-kraft-resigned", 3)
	q.waitSame(want)

	// kill -9 of a Kafka leader.
	l, epoch = q.leadBy(isKafka), 0
	_, epoch = q.leader()
	t.Logf("kill -9 of kafka leader %d in epoch %d", l, epoch)
	killed := time.Now()
	q.kafka[l].kill()
	delete(q.kafka, l)
	nl, _ := q.waitEpochAfter(epoch)
	t.Logf("failover after kill -9 of kafka leader %d: %d leads after %v", l, nl, time.Since(killed).Round(time.Millisecond))
	add("after-kafka-kill", 3)
	q.startKafka(l)
	q.waitSame(want)

	// The kraft leader stops without a handover and restarts.
	q.leadBy(isKraft)
	_, epoch = q.leader()
	t.Logf("kraft leader stops in epoch %d", epoch)
	killed = time.Now()
	q.stopKraft()
	nl, _ = q.waitEpochAfter(epoch)
	t.Logf("failover after the kraft leader stopped: %d leads after %v", nl, time.Since(killed).Round(time.Millisecond))
	add("after-kraft-kill", 3)
	q.startKraft()
	q.waitSame(want)
}

// TestMixedSnapshots: a snapshot in Kafka's format goes each way. A Kafka
// leader snapshots and deletes its log past the stopped kraft node's end;
// the kraft node comes back, downloads the snapshot with FetchSnapshot,
// installs it and restores its state from it. Then the kraft node leads,
// a Kafka follower is killed, the kraft leader snapshots and deletes its
// log past it; the Kafka node comes back, downloads and loads the kraft
// leader's snapshot. Every node ends with the same records.
func TestMixedSnapshots(t *testing.T) {
	q := newMixedQuorum(t)
	var want []string
	add := func(prefix string, n int) {
		for i := 0; i < n; i++ {
			want = append(want, fmt.Sprintf("%s%d", prefix, i))
			q.appendCommitted(want[len(want)-1])
		}
	}
	isKafka := func(id int) bool { return id != kraftID }
	isKraft := func(id int) bool { return id == kraftID }

	// Kafka's snapshot to kraft.
	l := q.leadBy(isKafka)
	add("a", 3)
	q.waitSame(want)
	st, err := q.kraft.Status()
	if err != nil {
		t.Fatal(err)
	}
	q.stopKraft()
	add("b", 5)
	a := q.kafka[l].call("snapshot clean", 10*time.Second)
	if a["ok"] != true || int64(a["logStartOffset"].(float64)) <= st.LogEnd {
		t.Fatalf("kafka leader %d snapshot clean: %v (the kraft node's log ends at %d)", l, a, st.LogEnd)
	}
	t.Logf("kafka leader %d: %v", l, a)
	q.startKraft()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := q.kraft.Status()
		if err == nil && st.SnapshotsInstalled >= 1 {
			t.Logf("the kraft node installed snapshot %+v", st.LatestSnapshot)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kraft node installed no snapshot: %+v %v", st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	add("c", 2)
	q.waitSame(want)

	// kraft's snapshot to Kafka.
	q.leadBy(isKraft)
	follower := 1
	fst := q.kafka[follower].call("status", 10*time.Second)
	fEnd := int64(fst["logEndOffset"].(float64))
	q.kafka[follower].kill()
	delete(q.kafka, follower)
	add("d", 10)
	var snap int64
	deadline = time.Now().Add(30 * time.Second)
	for {
		st, err := q.kraft.Status()
		if err == nil && st.LogStart > fEnd {
			snap = st.LogStart
			t.Logf("the kraft leader's log starts at %d, snapshot %+v; kafka node %d's log ended at %d", st.LogStart, st.LatestSnapshot, follower, fEnd)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the kraft leader did not clean its log past %d: %+v %v", fEnd, st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	q.startKafka(follower)
	// Its own older snapshot loads first; then the kraft leader's.
	ev := q.kafka[follower].waitEventWhere("snapshot", func(e map[string]any) bool {
		return int64(e["endOffset"].(float64)) >= snap
	}, 30*time.Second)
	t.Logf("kafka node %d loaded the kraft leader's snapshot: end offset %v epoch %v", follower, ev["endOffset"], ev["epoch"])
	add("e", 2)
	q.waitSame(want)
}

// TestMixedObserver: the kraft runtime observes a quorum of two Kafka
// voters: it follows their leader, commits what they commit, follows the
// next leader after a resignation, and the Kafka leader's DescribeQuorum
// lists it as an observer.
func TestMixedObserver(t *testing.T) {
	q := newMixed(t, true)
	var want []string
	add := func(prefix string, n int) {
		for i := 0; i < n; i++ {
			want = append(want, fmt.Sprintf("%s%d", prefix, i))
			q.appendCommitted(want[len(want)-1])
		}
	}
	l, epoch := q.leader()
	if l == kraftID {
		t.Fatal("the observer leads")
	}
	add("a", 5)
	q.waitSame(want)
	if st, err := q.kraft.Status(); err != nil || st.Role == "Leader" || st.Leader != kraft.NodeID(l) {
		t.Fatalf("observer status %+v %v", st, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	r, err := Describe(ctx, q.addrs[l-1])
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	p := r.Topics[0].Partitions[0]
	if len(p.CurrentVoters) != 2 || len(p.Observers) != 1 || p.Observers[0].ReplicaID != kraftID || p.Observers[0].LogEndOffset <= 0 {
		t.Fatalf("kafka leader %d describes voters %+v observers %+v", l, p.CurrentVoters, p.Observers)
	}
	if a := q.kafka[l].call("resign", 10*time.Second); a["ok"] != true {
		t.Fatalf("resign: %v", a)
	}
	l2, _ := q.waitEpochAfter(epoch)
	t.Logf("leader %d resigned; %d leads", l, l2)
	add("b", 5)
	q.waitSame(want)
}

// TestMixedWithoutPreVote: Kafka's replicas and the kraft runtime all
// advertise Vote v1 at most (a quorum of replicas from before KIP-996) and
// the older BeginQuorumEpoch, EndQuorumEpoch and Fetch versions: every
// pre-vote falls back to a standard vote on both kinds of replica, and the
// quorum elects either kind, replicates both ways and hands leadership
// over both ways.
func TestMixedWithoutPreVote(t *testing.T) {
	old := Versions{APIVersions: {0, 4}, Vote: {0, 1}, BeginQuorumEpoch: {0, 0}, EndQuorumEpoch: {0, 0},
		Fetch: {12, 16}, FetchSnapshot: {0, 1}, DescribeQuorum: {0, 2}}
	q := newMixedWith(t, false, []string{"--advertise-max", "vote=1,begin_quorum_epoch=0,end_quorum_epoch=0,fetch=16"}, old)
	var want []string
	add := func(prefix string, n int) {
		for i := 0; i < n; i++ {
			want = append(want, fmt.Sprintf("%s%d", prefix, i))
			q.appendCommitted(want[len(want)-1])
		}
	}
	add("a", 3)
	q.leadBy(func(id int) bool { return id != kraftID })
	add("kafka-led", 3)
	q.waitSame(want)
	q.leadBy(func(id int) bool { return id == kraftID })
	add("kraft-led", 3)
	q.waitSame(want)
	_, epoch := q.leader()
	if err := q.kraft.Resign(); err != nil {
		t.Fatal(err)
	}
	q.waitEpochAfter(epoch)
	add("b", 3)
	q.waitSame(want)
}

// TestMixedListenerName: every replica uses the listener name CTRL (Kafka's
// controller.listener.names=CTRL): Kafka's followers find the kraft
// leader's endpoint under it, and its DescribeQuorum lists the nodes under
// it.
func TestMixedListenerName(t *testing.T) {
	bin := kafkaNodeDir(t)
	q := &mixedQuorum{t: t, bin: bin, cluster: "MkU3OEVBNTcwNTJENDM2Qg", addrs: freePorts(t, 3), kafka: map[int]*kafkaNode{},
		kafkaArgs: []string{"--listener-name", "CTRL"}, listener: "CTRL"}
	for i := 0; i < 3; i++ {
		q.dirs = append(q.dirs, t.TempDir())
	}
	q.startKafka(1)
	q.startKafka(2)
	q.startKraft()
	t.Cleanup(func() {
		if q.kraft != nil {
			_ = q.kraft.Close()
		}
	})
	var want []string
	add := func(prefix string, n int) {
		for i := 0; i < n; i++ {
			want = append(want, fmt.Sprintf("%s%d", prefix, i))
			q.appendCommitted(want[len(want)-1])
		}
	}
	q.leadBy(func(id int) bool { return id == kraftID })
	add("kraft-led", 3)
	q.waitSame(want)
	for id, k := range q.kafka {
		a := k.call("describe "+q.addrs[kraftID-1], 10*time.Second)
		r, _ := a["response"].(map[string]any)
		nodes, _ := r["nodes"].([]any)
		if a["ok"] != true || len(nodes) != 3 || !strings.Contains(fmt.Sprint(nodes), "name:CTRL") {
			t.Fatalf("kafka node %d describes the kraft leader: %v", id, a)
		}
	}
}
