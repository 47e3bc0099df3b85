package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/stretchr/testify/require"
)

// The tests of -config, -version, -random-uuid, the cluster id
// requirement, /metrics, /healthz and /readyz.

func TestParseProperties(t *testing.T) {
	text := "# a comment\n" +
		"! another\n" +
		"\n" +
		"   node.id = 3\n" +
		"a:b\n" +
		"c d e\n" +
		"empty=\n" +
		"key\\=with\\:seps=v\\tx\\u0041\\\\\n" +
		"long = one,\\\n" +
		"       two,\\\n" +
		"  three\r\n" +
		"trailing=x\\\\\n" +
		"novalue\n" +
		"dup=1\n" +
		"dup=2"
	props, err := parseProperties(text)
	require.NoError(t, err)
	require.Equal(t, []property{
		{"node.id", "3", 4},
		{"a", "b", 5},
		{"c", "d e", 6},
		{"empty", "", 7},
		{"key=with:seps", "v\txA\\", 8},
		{"long", "one,two,three", 9},
		{"trailing", "x\\", 12},
		{"novalue", "", 13},
		{"dup", "1", 14},
		{"dup", "2", 15},
	}, props)
	_, err = parseProperties("a=\\u00zz\n")
	require.EqualError(t, err, `line 1: malformed \uXXXX escape`)
}

// writeFile writes text into a file in a temporary directory.
func writeFile(t *testing.T, name, text string) string {
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// TestConfigFile: a controller.properties with Kafka's names configures
// kraftd as the flags would, and flags override it.
func TestConfigFile(t *testing.T) {
	path := writeFile(t, "controller.properties", `# Kafka's controller.properties
process.roles=controller
node.id=2
controller.quorum.voters=`+threeVoters+`
listeners=CONTROLLER://127.0.0.1:19092,OTHER://127.0.0.1:29092
controller.listener.names=CONTROLLER
log.dirs=/var/kraft/data,/var/kraft/other
controller.quorum.election.timeout.ms=300
controller.quorum.fetch.timeout.ms=800
controller.quorum.election.backoff.max.ms=250
controller.quorum.request.timeout.ms=700
controller.quorum.retry.backoff.ms=40
cluster.id=`+testClusterID+`
kraftd.http=127.0.0.1:18082
kraftd.snapshot-every=500
num.network.threads=3
`)
	c, err := parseConfig([]string{"-config", path})
	require.NoError(t, err)
	require.Equal(t, kraft.NodeID(2), c.id)
	require.Len(t, c.voters, 3)
	require.False(t, c.observer)
	require.Equal(t, "127.0.0.1:19092", c.listen)
	require.Equal(t, "CONTROLLER", c.listenerName, "the first of controller.listener.names")
	other := writeFile(t, "other.properties", "node.id=2\ncontroller.quorum.voters="+threeVoters+"\ncluster.id="+testClusterID+
		"\nlog.dirs=/d\nlisteners=CTRL://127.0.0.1:19092\ncontroller.listener.names=CTRL,OTHER\n")
	oc, err := parseConfig([]string{"-config", other})
	require.NoError(t, err)
	require.Equal(t, "CTRL", oc.listenerName)
	require.Equal(t, "127.0.0.1:19092", oc.listen)
	require.Equal(t, "/var/kraft/data", c.dir, "the first of log.dirs")
	require.Equal(t, 300*time.Millisecond, c.electionTimeout)
	require.Equal(t, 800*time.Millisecond, c.fetchTimeout)
	require.Equal(t, 250*time.Millisecond, c.electionBackoffMax)
	require.Equal(t, 700*time.Millisecond, c.requestTimeout)
	require.Equal(t, 40*time.Millisecond, c.retryBackoff)
	require.Equal(t, 200*time.Millisecond, c.fetchMaxWait, "derived from the fetch timeout as with flags")
	require.True(t, c.hasClusterID)
	require.Equal(t, "127.0.0.1:18082", c.httpAddr)
	require.Equal(t, int64(500), c.snapshotEvery)
	require.Equal(t, []string{"line 16: num.network.threads is not used by kraftd"}, c.warnings)

	// Flags override the file.
	c, err = parseConfig([]string{"-config", path, "-id", "3", "-election-timeout", "1s", "-dir", "/d", "-listen", "127.0.0.1:9093"})
	require.NoError(t, err)
	require.Equal(t, kraft.NodeID(3), c.id)
	require.Equal(t, time.Second, c.electionTimeout)
	require.Equal(t, "/d", c.dir)
	require.Equal(t, "127.0.0.1:9093", c.listen)
	require.Equal(t, 800*time.Millisecond, c.fetchTimeout)

	// metadata.log.dir wins over log.dirs; a dynamic quorum; the only
	// listener without controller.listener.names.
	path = writeFile(t, "dynamic.properties", `node.id=2
controller.quorum.bootstrap.servers=1@127.0.0.1:9091
controller.quorum.auto.join.enable=true
listeners=CONTROLLER://127.0.0.1:9092
metadata.log.dir=/meta
log.dirs=/logs
cluster.id=`+testClusterID+"\n")
	c, err = parseConfig([]string{"-config", path})
	require.NoError(t, err)
	require.True(t, c.dynamic)
	require.True(t, c.autoJoin)
	require.Equal(t, "/meta", c.dir)
	require.Equal(t, "127.0.0.1:9092", c.listen)
	require.Equal(t, []kraft.NodeID{1}, c.bootstrapIDs())

	base := "node.id=1\ncontroller.quorum.voters=" + threeVoters + "\nlog.dirs=/d\ncluster.id=" + testClusterID + "\n"
	for _, tc := range []struct{ text, want string }{
		{base + "controller.quorum.fetch.timeout.ms=2s\n", "line 5: controller.quorum.fetch.timeout.ms=2s: want milliseconds"},
		{base + "process.roles=broker\n", "line 5: process.roles=broker: kraftd runs the controller role only"},
		{base + "listeners=A://h:1,B://h:2\n", "line 5: listeners=A://h:1,B://h:2: several listeners"},
		{base + "listeners=A://h:1\ncontroller.listener.names=B\n", "no listener named B"},
		{base + "listeners=h:1\n", `listener "h:1": want NAME://host:port`},
		{base + "kraftd.nope=1\n", "line 5: kraftd.nope: kraftd has no flag -nope"},
		{base + "kraftd.config=x\n", "line 5: kraftd.config: not a configuration key"},
		{base + "node.id=x\n", `line 5: node.id: -id "x": want a node id`},
		{base + "controller.quorum.voters=1@h\n", `line 5: controller.quorum.voters: -voters: entry "1@h"`},
		{base + "controller.quorum.auto.join.enable=maybe\n", "line 5: controller.quorum.auto.join.enable=maybe"},
	} {
		_, err := parseConfig([]string{"-config", writeFile(t, "bad.properties", tc.text)})
		require.Error(t, err, tc.text)
		require.Contains(t, err.Error(), tc.want, tc.text)
		require.True(t, strings.HasPrefix(err.Error(), "-config "), "%s: %v", tc.text, err)
	}
	_, err = parseConfig([]string{"-config", writeFile(t, "nocluster.properties", "node.id=1\ncontroller.quorum.voters="+threeVoters+"\nlog.dirs=/d\n")})
	require.ErrorContains(t, err, "-cluster-id is required")
}

// TestRunVersionRandomUUIDAndClusterID: -version and -random-uuid print
// and exit; a replica without -cluster-id is refused with a fresh one to
// use.
func TestRunVersionRandomUUIDAndClusterID(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"-version"}, &stdout, &stderr, nil))
	require.Regexp(t, `^kraftd \S+ \S+.* go1\.\d+.* `+runtime.GOOS+`/`+runtime.GOARCH+`\n$`, stdout.String())
	require.Contains(t, stdout.String(), runtime.Version())
	require.Empty(t, stderr.String())

	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		stdout.Reset()
		require.Equal(t, exitOK, run([]string{"-random-uuid"}, &stdout, &stderr, nil))
		id := strings.TrimSuffix(stdout.String(), "\n")
		require.Len(t, id, 22)
		require.NotEqual(t, byte('-'), id[0])
		_, err := parseUUID(id)
		require.NoError(t, err)
		require.False(t, seen[id])
		seen[id] = true
	}

	for i := 0; i < 1000; i++ { // one in 64 Kafka-form ids starts with '-'
		require.NotEqual(t, byte('-'), randomUUID()[0])
	}

	stdout.Reset()
	// (A -dir that cannot be made: a replica that started anyway would
	// fail at once rather than run.)
	notDir := writeFile(t, "file", "")
	require.Equal(t, exitBad, run([]string{"-id", "1", "-voters", "1@127.0.0.1:9091", "-dir", filepath.Join(notDir, "d")}, &stdout, &stderr, nil))
	m := regexp.MustCompile(`-cluster-id is required: .* for example -cluster-id (\S+) \(kraftd -h for help\)\n$`).FindStringSubmatch(stderr.String())
	require.NotNil(t, m, stderr.String())
	_, err := parseUUID(m[1])
	require.NoError(t, err, "the suggested cluster id parses")
	_, err = base64.RawURLEncoding.DecodeString(m[1])
	require.NoError(t, err, "in Kafka's form")
	require.Empty(t, stdout.String())
}

// promFamily is a metric family parsed from the text format.
type promFamily struct {
	typ, help string
	samples   []promSample
}

type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	promNameRE   = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	promLabelRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	promSampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$`)
)

// parseProm parses the Prometheus text format (version 0.0.4) strictly:
// every line a # HELP, a # TYPE or a sample; a family's HELP and TYPE
// once each, before its samples, which are contiguous; sample names the
// family's (with _bucket, _sum and _count for a histogram); label values
// quoted with \\, \" and \n escapes; no sample twice.
func parseProm(t *testing.T, text string) map[string]*promFamily {
	t.Helper()
	require.True(t, strings.HasSuffix(text, "\n"), "ends with a newline")
	fams := map[string]*promFamily{}
	var cur string
	done := map[string]bool{}
	seen := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		where := fmt.Sprintf("line %d %q", i+1, line)
		if strings.HasPrefix(line, "# ") {
			f := strings.SplitN(line, " ", 4)
			require.Len(t, f, 4, where)
			name := f[2]
			require.Regexp(t, promNameRE, name, where)
			if name != cur {
				require.False(t, done[name], "family %s split: %s", name, where)
				if cur != "" {
					done[cur] = true
				}
				cur = name
			}
			fam := fams[name]
			if fam == nil {
				fam = &promFamily{}
				fams[name] = fam
			}
			require.Empty(t, fam.samples, "HELP or TYPE after samples: %s", where)
			switch f[1] {
			case "HELP":
				require.Empty(t, fam.help, where)
				require.NotContains(t, strings.ReplaceAll(f[3], `\\`, ""), `\"`, where)
				fam.help = f[3]
			case "TYPE":
				require.Empty(t, fam.typ, where)
				require.Contains(t, []string{"counter", "gauge", "histogram", "summary", "untyped"}, f[3], where)
				fam.typ = f[3]
			default:
				t.Fatalf("unknown comment: %s", where)
			}
			continue
		}
		m := promSampleRE.FindStringSubmatch(line)
		require.NotNil(t, m, where)
		fam := fams[cur]
		require.NotNil(t, fam, "a sample before any TYPE: %s", where)
		require.NotEmpty(t, fam.typ, where)
		require.NotEmpty(t, fam.help, where)
		name := m[1]
		switch fam.typ {
		case "histogram":
			require.Contains(t, []string{cur + "_bucket", cur + "_sum", cur + "_count"}, name, where)
		case "counter":
			require.True(t, strings.HasSuffix(cur, "_total"), "a counter's name ends in _total: %s", where)
			require.Equal(t, cur, name, where)
		default:
			require.Equal(t, cur, name, where)
		}
		labels := map[string]string{}
		rest := m[3]
		for rest != "" {
			eq := strings.Index(rest, `="`)
			require.Positive(t, eq, where)
			ln := rest[:eq]
			require.Regexp(t, promLabelRE, ln, where)
			rest = rest[eq+2:]
			var val strings.Builder
			j := 0
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\\' {
					j++
					require.Less(t, j, len(rest), where)
					switch rest[j] {
					case '\\':
						val.WriteByte('\\')
					case '"':
						val.WriteByte('"')
					case 'n':
						val.WriteByte('\n')
					default:
						t.Fatalf("bad escape: %s", where)
					}
					continue
				}
				val.WriteByte(rest[j])
			}
			require.Less(t, j, len(rest), "unterminated label value: %s", where)
			_, dup := labels[ln]
			require.False(t, dup, where)
			labels[ln] = val.String()
			rest = rest[j+1:]
			if rest != "" {
				require.Equal(t, byte(','), rest[0], where)
				rest = rest[1:]
			}
		}
		v, err := strconv.ParseFloat(m[4], 64)
		require.NoError(t, err, where)
		key := name + fmt.Sprint(sortedLabels(labels))
		require.False(t, seen[key], "sample twice: %s", where)
		seen[key] = true
		fam.samples = append(fam.samples, promSample{name: name, labels: labels, value: v})
	}
	for name, fam := range fams {
		if fam.typ != "histogram" {
			continue
		}
		// Buckets: increasing bounds, cumulative counts, +Inf = _count.
		var last, lastLE float64 = 0, -1
		var inf, count float64 = -1, -2
		for _, s := range fam.samples {
			switch s.name {
			case name + "_bucket":
				le, err := strconv.ParseFloat(s.labels["le"], 64)
				require.NoError(t, err, "%s le", name)
				require.Greater(t, le, lastLE, name)
				require.GreaterOrEqual(t, s.value, last, name)
				last, lastLE = s.value, le
				if s.labels["le"] == "+Inf" {
					inf = s.value
				}
			case name + "_count":
				count = s.value
			}
		}
		require.Equal(t, count, inf, "%s: the +Inf bucket is the count", name)
	}
	return fams
}

func sortedLabels(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// value is the one sample of a family with the given labels.
func (f *promFamily) value(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	for _, s := range f.samples {
		if s.name != name || len(s.labels) != len(labels)/2 {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			ok = ok && s.labels[labels[i]] == labels[i+1]
		}
		if ok {
			return s.value
		}
	}
	t.Fatalf("no sample %s%v", name, labels)
	return 0
}

// TestWriteMetrics: writeMetrics writes every field of node.Metrics under
// its name, in the text format as parseProm checks it.
func TestWriteMetrics(t *testing.T) {
	m := node.Metrics{
		CurrentLeader: 2, CurrentEpoch: 7, CurrentVote: -1, CurrentState: "follower", Role: "Follower",
		HighWatermark: 40, LogEndOffset: 42, LogEndEpoch: 6, UnknownVoterConnections: 1,
		AppendRecords: 5, FetchRecords: 37,
		PollIdle: 3 * time.Second, PollBusy: 250 * time.Millisecond,
		Voters:              []node.VoterStatus{{ID: 1, EndOffset: 42, Lag: 0}, {ID: 3, EndOffset: -1, Lag: 42}},
		LeaderHighWatermark: 41, ClusterIDRefused: 3, ClusterIDRefusedByPeers: 4, TransportDropped: 9,
	}
	m.CommitLatency.Count, m.CommitLatency.Sum, m.CommitLatency.Max = 3, 30*time.Millisecond, 20*time.Millisecond
	m.CommitLatency.Buckets[1], m.CommitLatency.Buckets[3] = 1, 2
	m.ElectionLatency.Count, m.ElectionLatency.Sum, m.ElectionLatency.Max = 1, 2*time.Minute, 2*time.Minute
	m.ElectionLatency.Buckets[len(node.LatencyBounds)] = 1
	m.Fsync.Count, m.Fsync.Sum, m.Fsync.Max = 2, 3*time.Millisecond, 2*time.Millisecond
	m.Fsync.Buckets[1] = 2
	var b bytes.Buffer
	require.NoError(t, writeMetrics(&b, m))
	fams := parseProm(t, b.String())
	g := func(name string, labels ...string) float64 {
		t.Helper()
		require.Contains(t, fams, name)
		return fams[name].value(t, name, labels...)
	}
	require.Equal(t, 2.0, g("kafka_raft_current_leader"))
	require.Equal(t, 7.0, g("kafka_raft_current_epoch"))
	require.Equal(t, -1.0, g("kafka_raft_current_vote"))
	for _, s := range kafkaStates {
		require.Equal(t, boolFloat(s == "follower"), g("kafka_raft_current_state", "state", s), s)
	}
	require.Len(t, fams["kafka_raft_current_state"].samples, 6)
	require.Equal(t, 40.0, g("kafka_raft_high_watermark"))
	require.Equal(t, 42.0, g("kafka_raft_log_end_offset"))
	require.Equal(t, 6.0, g("kafka_raft_log_end_epoch"))
	require.Equal(t, 1.0, g("kafka_raft_number_unknown_voter_connections"))
	require.Equal(t, 5.0, g("kafka_raft_append_records_total"))
	require.Equal(t, 37.0, g("kafka_raft_fetch_records_total"))
	require.Equal(t, 3.0, g("kafka_raft_poll_idle_seconds_total"))
	require.Equal(t, 0.25, g("kafka_raft_poll_busy_seconds_total"))
	h := func(name string) *promFamily { require.Contains(t, fams, name); return fams[name] }
	cl := h("kafka_raft_commit_latency_seconds")
	require.Equal(t, "histogram", cl.typ)
	require.Equal(t, 0.0, cl.value(t, "kafka_raft_commit_latency_seconds_bucket", "le", "0.001"))
	require.Equal(t, 1.0, cl.value(t, "kafka_raft_commit_latency_seconds_bucket", "le", "0.005"))
	require.Equal(t, 1.0, cl.value(t, "kafka_raft_commit_latency_seconds_bucket", "le", "0.01"))
	require.Equal(t, 3.0, cl.value(t, "kafka_raft_commit_latency_seconds_bucket", "le", "0.05"))
	require.Equal(t, 3.0, cl.value(t, "kafka_raft_commit_latency_seconds_bucket", "le", "+Inf"))
	require.Equal(t, 0.03, cl.value(t, "kafka_raft_commit_latency_seconds_sum"))
	require.Equal(t, 3.0, cl.value(t, "kafka_raft_commit_latency_seconds_count"))
	require.Equal(t, 0.02, g("kafka_raft_commit_latency_max_seconds"))
	el := h("kafka_raft_election_latency_seconds")
	require.Equal(t, 0.0, el.value(t, "kafka_raft_election_latency_seconds_bucket", "le", "10"))
	require.Equal(t, 1.0, el.value(t, "kafka_raft_election_latency_seconds_bucket", "le", "+Inf"))
	require.Equal(t, 120.0, g("kafka_raft_election_latency_max_seconds"))
	fs := h("kraft_fsync_seconds")
	require.Equal(t, 2.0, fs.value(t, "kraft_fsync_seconds_bucket", "le", "0.005"))
	require.Equal(t, 0.002, g("kraft_fsync_max_seconds"))
	require.Equal(t, 1.0, g("kraft_role", "role", "Follower"))
	require.Equal(t, 0.0, g("kraft_role", "role", "Leader"))
	require.Len(t, fams["kraft_role"].samples, 6)
	require.Equal(t, 42.0, g("kraft_voter_end_offset", "voter", "1"))
	require.Equal(t, -1.0, g("kraft_voter_end_offset", "voter", "3"))
	require.Equal(t, 42.0, g("kraft_voter_lag_records", "voter", "3"))
	require.Equal(t, 41.0, g("kraft_leader_high_watermark"))
	require.Equal(t, 3.0, g("kraft_cluster_id_refused_total"))
	require.Equal(t, 4.0, g("kraft_cluster_id_refused_by_peers_total"))
	require.Equal(t, 9.0, g("kraft_transport_dropped_total"))
}

// TestWriteMetricsRuntimeGauges: /metrics has the Go runtime's goroutines
// and heap under the names of Prometheus's Go collector, and they follow
// the process: 100 more goroutines and 64 MiB more live heap show (D164).
func TestWriteMetricsRuntimeGauges(t *testing.T) {
	scrape := func() map[string]*promFamily {
		var b bytes.Buffer
		require.NoError(t, writeMetrics(&b, node.Metrics{}))
		return parseProm(t, b.String())
	}
	g := func(fams map[string]*promFamily, name string) float64 {
		t.Helper()
		require.Contains(t, fams, name)
		return fams[name].value(t, name)
	}
	runtime.GC()
	before := scrape()
	stop := make(chan struct{})
	var started sync.WaitGroup
	for i := 0; i < 100; i++ {
		started.Add(1)
		go func() { started.Done(); <-stop }()
	}
	started.Wait()
	defer close(stop)
	hold := make([][]byte, 64)
	for i := range hold {
		hold[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	after := scrape()
	require.GreaterOrEqual(t, g(after, "go_goroutines")-g(before, "go_goroutines"), 100.0)
	for _, name := range []string{"go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes", "go_gc_heap_live_bytes"} {
		require.GreaterOrEqual(t, g(after, name)-g(before, name), float64(60<<20), name)
	}
	require.Greater(t, g(after, "go_gc_cycles_total"), g(before, "go_gc_cycles_total"))
	require.Equal(t, "gauge", after["go_goroutines"].typ)
	runtime.KeepAlive(hold)
}

// TestPromWriterEscapes: label values and help texts are escaped.
func TestPromWriterEscapes(t *testing.T) {
	var p promWriter
	p.family("x", "gauge", "a \\ help\nwith a newline")
	p.sample("x", 1.5, label{"a", "q\"b\\s\nn"}, label{"b", ""})
	p.family("y_total", "counter", "inf")
	p.sample("y_total", math.Inf(1))
	require.Equal(t, "# HELP x a \\\\ help\\nwith a newline\n# TYPE x gauge\nx{a=\"q\\\"b\\\\s\\nn\",b=\"\"} 1.5\n"+
		"# HELP y_total inf\n# TYPE y_total counter\ny_total +Inf\n", p.b.String())
	fams := parseProm(t, p.b.String())
	require.Equal(t, "q\"b\\s\nn", fams["x"].samples[0].labels["a"])
}

func TestReadiness(t *testing.T) {
	for _, tc := range []struct {
		m     node.Metrics
		ready bool
		why   string
	}{
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Leader"}, true, "leader of epoch 3"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Leader", Voters: make([]node.VoterStatus, 3), VotersFetching: 2}, true, "leader of epoch 3"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Leader", Voters: make([]node.VoterStatus, 3), VotersFetching: 1}, false, "leader of epoch 3 without a quorum: 1 of 3 voters in contact"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Leader", Voters: make([]node.VoterStatus, 4), VotersFetching: 2}, false, "2 of 4 voters"},
		{node.Metrics{CurrentLeader: -1, CurrentEpoch: 3, Role: "Prospective"}, false, "no known leader (Prospective in epoch 3)"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Resigned"}, false, "Resigned in epoch 3 (leader 1)"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Unattached"}, false, "Unattached in epoch 3"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Follower", HighWatermark: -1, LeaderHighWatermark: 5}, false, "high watermark not known yet"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Follower", HighWatermark: 5, LeaderHighWatermark: -1}, false, "no Fetch response from the leader yet"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Follower", HighWatermark: 5, LeaderHighWatermark: 15}, true, "follower of 1 in epoch 3, 10 records behind"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Follower", HighWatermark: 5, LeaderHighWatermark: 16}, false, "11 records behind the leader's high watermark 16 (at most 10)"},
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Follower", HighWatermark: 6, LeaderHighWatermark: 5}, true, "0 records behind"},
		// D113: a follower that refuses its leader, also when it looks
		// caught up, and once it campaigns.
		{node.Metrics{CurrentLeader: 1, CurrentEpoch: 3, Role: "Follower", HighWatermark: 6, LeaderHighWatermark: 6, RefusingLeader: true, RefusedLeader: 1}, false, "refusing to follow leader 1 of epoch 3"},
		{node.Metrics{CurrentLeader: 0, CurrentEpoch: 3, Role: "Prospective", HighWatermark: 6, RefusingLeader: true, RefusedLeader: 0}, false, "refusing to follow leader 0 of epoch 3: it asked to remove committed records (Prospective in epoch 3)"},
	} {
		ready, why := readiness(tc.m, 10)
		require.Equal(t, tc.ready, ready, "%+v", tc.m)
		require.Contains(t, why, tc.why, "%+v", tc.m)
	}
}

// serveRaw serves one request and returns the status code and the body.
func serveRaw(t *testing.T, r replica, method, path, body string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	newHandler(r, nil, node.VoterInfo{ID: 2}, 100).ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	if rec.Code == http.StatusOK {
		want := "text/plain; charset=utf-8"
		if path == "/metrics" {
			want = promContentType
		}
		require.Equal(t, want, rec.Header().Get("Content-Type"))
	}
	return rec.Code, rec.Body.String()
}

// TestOpsEndpoints: /healthz, /readyz and /metrics over the handler.
func TestOpsEndpoints(t *testing.T) {
	f := &fakeReplica{metrics: node.Metrics{CurrentLeader: 1, CurrentEpoch: 2, Role: "Follower", CurrentState: "follower", HighWatermark: 10, LeaderHighWatermark: 500}}
	code, body := serveRaw(t, f, http.MethodGet, "/healthz", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok: the process is alive\n", body)
	code, body = serveRaw(t, f, http.MethodGet, "/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, code, "490 behind, at most 100")
	require.True(t, strings.HasPrefix(body, "not ready: follower of 1 in epoch 2: 490 records behind"), body)
	f.metrics.HighWatermark = 450
	code, body = serveRaw(t, f, http.MethodGet, "/readyz", "")
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.HasPrefix(body, "ready: follower of 1"), body)
	code, body = serveRaw(t, f, http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 450.0, parseProm(t, body)["kafka_raft_high_watermark"].value(t, "kafka_raft_high_watermark"))
	code, _ = serveRaw(t, f, http.MethodPost, "/metrics", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)

	// D113: a refused leader makes the replica not ready, and the
	// metrics say so.
	f.metrics.RefusingLeader, f.metrics.RefusedLeader, f.metrics.LeaderRefusals = true, 1, 3
	code, body = serveRaw(t, f, http.MethodGet, "/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.True(t, strings.HasPrefix(body, "not ready: refusing to follow leader 1 of epoch 2"), body)
	_, body = serveRaw(t, f, http.MethodGet, "/metrics", "")
	require.Equal(t, 1.0, parseProm(t, body)["kraft_leader_refused"].value(t, "kraft_leader_refused"))
	require.Equal(t, 3.0, parseProm(t, body)["kraft_leader_refusals_total"].value(t, "kraft_leader_refusals_total"))
	f.metrics.RefusingLeader, f.metrics.RefusedLeader = false, -1
	code, _ = serveRaw(t, f, http.MethodGet, "/readyz", "")
	require.Equal(t, http.StatusOK, code)

	f.statusErr = node.ErrStopped
	code, body = serveRaw(t, f, http.MethodGet, "/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.True(t, strings.HasPrefix(body, "not ready: "), body)
	code, _ = serveRaw(t, f, http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusServiceUnavailable, code)
	code, _ = serveRaw(t, f, http.MethodGet, "/healthz", "")
	require.Equal(t, http.StatusOK, code)
}
