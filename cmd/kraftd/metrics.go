package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
)

// The operational endpoints: GET /metrics (node.Metrics in the Prometheus
// text exposition format, version 0.0.4), GET /healthz and GET /readyz;
// and -version.

// promContentType is the Content-Type of the Prometheus text format.
const promContentType = "text/plain; version=0.0.4; charset=utf-8"

// promWriter writes metric families in the Prometheus text format: a
// family's # HELP and # TYPE lines, then its samples, name{labels} value.
type promWriter struct {
	b strings.Builder
}

type label struct{ name, value string }

// family starts a metric family.
func (p *promWriter) family(name, typ, help string) {
	help = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help)
	fmt.Fprintf(&p.b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes one sample.
func (p *promWriter) sample(name string, v float64, labels ...label) {
	p.b.WriteString(name)
	if len(labels) > 0 {
		p.b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				p.b.WriteByte(',')
			}
			p.b.WriteString(l.name)
			p.b.WriteString(`="`)
			p.b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(l.value))
			p.b.WriteByte('"')
		}
		p.b.WriteByte('}')
	}
	p.b.WriteByte(' ')
	p.b.WriteString(promFloat(v))
	p.b.WriteByte('\n')
}

func promFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// gauge writes a family of one sample.
func (p *promWriter) gauge(name, help string, v float64) {
	p.family(name, "gauge", help)
	p.sample(name, v)
}

func (p *promWriter) counter(name, help string, v float64) {
	p.family(name, "counter", help)
	p.sample(name, v)
}

// histogram writes a node.Latency as a histogram in seconds (cumulative
// buckets), and its maximum as the gauge maxName.
func (p *promWriter) histogram(name, help string, l node.Latency, maxName, maxHelp string) {
	p.family(name, "histogram", help)
	var cum uint64
	for i, bound := range node.LatencyBounds {
		cum += l.Buckets[i]
		p.sample(name+"_bucket", float64(cum), label{"le", promFloat(bound.Seconds())})
	}
	p.sample(name+"_bucket", float64(l.Count), label{"le", "+Inf"})
	p.sample(name+"_sum", l.Sum.Seconds())
	p.sample(name+"_count", float64(l.Count))
	p.gauge(maxName, maxHelp, l.Max.Seconds())
}

// kafkaStates are the values of Kafka's current-state.
var kafkaStates = []string{"leader", "candidate", "voted", "follower", "observer", "unattached"}

// kraftRoles are kraft's roles.
var kraftRoles = []kraft.Role{kraft.Unattached, kraft.Prospective, kraft.Candidate, kraft.Leader, kraft.Follower, kraft.Resigned}

// writeMetrics writes m in the Prometheus text format: Kafka's
// raft-metrics as kafka_raft_<name, with '_' for '-'> (docs/kraftd.md has
// the mapping), kraft's own as kraft_*.
func writeMetrics(w io.Writer, m node.Metrics) error {
	var p promWriter
	p.gauge("kafka_raft_current_leader", "The current quorum leader's id; -1 indicates unknown (raft-metrics current-leader).", float64(m.CurrentLeader))
	p.gauge("kafka_raft_current_epoch", "The current quorum epoch (raft-metrics current-epoch).", float64(m.CurrentEpoch))
	p.gauge("kafka_raft_current_vote", "The current voted id; -1 indicates not voted for anyone (raft-metrics current-vote).", float64(m.CurrentVote))
	p.family("kafka_raft_current_state", "gauge", "The current state of this member: 1 for the state it is in (raft-metrics current-state: leader, candidate, voted, follower, observer, unattached).")
	for _, s := range kafkaStates {
		p.sample("kafka_raft_current_state", boolFloat(m.CurrentState == s), label{"state", s})
	}
	p.gauge("kafka_raft_high_watermark", "The high watermark maintained on this member; -1 if it is unknown (raft-metrics high-watermark).", float64(m.HighWatermark))
	p.gauge("kafka_raft_log_end_offset", "The current raft log end offset (raft-metrics log-end-offset).", float64(m.LogEndOffset))
	p.gauge("kafka_raft_log_end_epoch", "The current raft log end epoch (raft-metrics log-end-epoch).", float64(m.LogEndEpoch))
	p.gauge("kafka_raft_number_unknown_voter_connections", "Number of voters whose address the transport does not know (raft-metrics number-unknown-voter-connections).", float64(m.UnknownVoterConnections))
	p.counter("kafka_raft_append_records_total", "Records appended as the leader; its rate is raft-metrics append-records-rate.", float64(m.AppendRecords))
	p.counter("kafka_raft_fetch_records_total", "Records fetched from the leader; its rate is raft-metrics fetch-records-rate.", float64(m.FetchRecords))
	p.histogram("kafka_raft_commit_latency_seconds", "Time from the leader's write of records to their commit, one sample per write (raft-metrics commit-latency-avg is sum/count).", m.CommitLatency,
		"kafka_raft_commit_latency_max_seconds", "The longest commit latency since the start (raft-metrics commit-latency-max).")
	p.histogram("kafka_raft_election_latency_seconds", "Time from becoming candidate to becoming leader or follower (raft-metrics election-latency-avg is sum/count).", m.ElectionLatency,
		"kafka_raft_election_latency_max_seconds", "The longest election latency since the start (raft-metrics election-latency-max).")
	p.counter("kafka_raft_poll_idle_seconds_total", "Time the replica's loop waited for input; raft-metrics poll-idle-ratio-avg is its rate over the rate of idle plus busy.", m.PollIdle.Seconds())
	p.counter("kafka_raft_poll_busy_seconds_total", "Time the replica's loop spent handling input.", m.PollBusy.Seconds())

	p.family("kraft_role", "gauge", "The replica's kraft role: 1 for the role it is in.")
	for _, r := range kraftRoles {
		p.sample("kraft_role", boolFloat(m.Role == r.String()), label{"role", r.String()})
	}
	p.histogram("kraft_fsync_seconds", "Latency of the log's fsyncs.", m.Fsync, "kraft_fsync_max_seconds", "The longest fsync since the start.")
	p.family("kraft_voter_end_offset", "gauge", "On the leader: each voter's log end offset as the leader knows it, -1 before its first Fetch.")
	for _, v := range m.Voters {
		p.sample("kraft_voter_end_offset", float64(v.EndOffset), label{"voter", strconv.Itoa(int(v.ID))})
	}
	p.family("kraft_voter_lag_records", "gauge", "On the leader: how many records each voter is behind the leader's log end.")
	for _, v := range m.Voters {
		p.sample("kraft_voter_lag_records", float64(v.Lag), label{"voter", strconv.Itoa(int(v.ID))})
	}
	p.gauge("kraft_voters_fetching", "On the leader: the voters in contact (itself, and each voter that fetched within the fetch timeout); 0 on other roles.", float64(m.VotersFetching))
	p.gauge("kraft_leader_high_watermark", "On a follower: the high watermark the leader sent last in this epoch; -1 if none.", float64(m.LeaderHighWatermark))
	p.counter("kraft_cluster_id_refused_total", "Requests this replica refused because they carry another cluster id.", float64(m.ClusterIDRefused))
	p.counter("kraft_cluster_id_refused_by_peers_total", "Requests of this replica that peers refused because of the cluster id.", float64(m.ClusterIDRefusedByPeers))
	p.gauge("kraft_leader_refused", "1 while this replica refuses to follow the leader of its epoch, which asked it to remove committed records (docs/design.md D113); 0 otherwise.", boolFloat(m.RefusingLeader))
	p.counter("kraft_appends_refused_total", "Appends the leader refused because the most it holds waiting for their commit waited (docs/design.md D203).", float64(m.AppendsRefused))
	p.counter("kraft_parked_fetches_refused_total", "Fetches the leader answered at once because the most it parks were parked (docs/design.md D202).", float64(m.ParkedFetchesRefused))
	p.counter("kraft_leader_refusals_total", "Answers of a leader this replica refused because they asked it to remove committed records.", float64(m.LeaderRefusals))
	p.counter("kraft_transport_dropped_total", "Messages the transport dropped.", float64(m.TransportDropped))
	writeRuntimeMetrics(&p)
	_, err := io.WriteString(w, p.b.String())
	return err
}

// writeRuntimeMetrics writes the Go runtime's goroutines and heap under
// the names of Prometheus's Go collector (client_golang), so that a soak
// or a dashboard sees a leak (docs/design.md D164).
func writeRuntimeMetrics(p *promWriter) {
	p.gauge("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p.gauge("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and still in use (reachable or not yet swept).", float64(ms.HeapAlloc))
	p.gauge("go_memstats_heap_inuse_bytes", "Number of heap bytes in in-use spans.", float64(ms.HeapInuse))
	p.counter("go_gc_cycles_total", "Completed garbage collection cycles.", float64(ms.NumGC))
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	if live[0].Value.Kind() == metrics.KindUint64 {
		p.gauge("go_gc_heap_live_bytes", "Heap bytes marked live by the last completed garbage collection: the heap as a forced GC would leave it, without the garbage allocated since.", float64(live[0].Value.Uint64()))
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// readiness says whether a replica is ready (GET /readyz) and why: it is
// a member of a quorum with a known leader and caught up, that is the
// leader, or a follower whose high watermark is known and at most maxLag
// records behind the one the leader sent last.
func readiness(m node.Metrics, maxLag int64) (bool, string) {
	switch {
	case m.RefusingLeader:
		// docs/design.md D113: the leader of this epoch lacks committed
		// records this replica holds; it is not followed.
		return false, fmt.Sprintf("refusing to follow leader %d of epoch %d: it asked to remove committed records (%s in epoch %d)", m.RefusedLeader, m.CurrentEpoch, m.Role, m.CurrentEpoch)
	case m.CurrentLeader < 0:
		return false, fmt.Sprintf("no known leader (%s in epoch %d)", m.Role, m.CurrentEpoch)
	case m.Role == kraft.Leader.String() && len(m.Voters) > 0 && 2*m.VotersFetching <= len(m.Voters):
		// docs/design.md D89: a leader that lost its quorum, before
		// check-quorum resigns it.
		return false, fmt.Sprintf("leader of epoch %d without a quorum: %d of %d voters in contact within the fetch timeout", m.CurrentEpoch, m.VotersFetching, len(m.Voters))
	case m.Role == kraft.Leader.String():
		return true, fmt.Sprintf("leader of epoch %d", m.CurrentEpoch)
	case m.Role != kraft.Follower.String():
		return false, fmt.Sprintf("%s in epoch %d (leader %d)", m.Role, m.CurrentEpoch, m.CurrentLeader)
	case m.HighWatermark < 0:
		return false, fmt.Sprintf("follower of %d in epoch %d: high watermark not known yet", m.CurrentLeader, m.CurrentEpoch)
	case m.LeaderHighWatermark < 0:
		return false, fmt.Sprintf("follower of %d in epoch %d: no Fetch response from the leader yet", m.CurrentLeader, m.CurrentEpoch)
	}
	lag := m.LeaderHighWatermark - m.HighWatermark
	if lag < 0 {
		lag = 0
	}
	if lag > maxLag {
		return false, fmt.Sprintf("follower of %d in epoch %d: %d records behind the leader's high watermark %d (at most %d)", m.CurrentLeader, m.CurrentEpoch, lag, m.LeaderHighWatermark, maxLag)
	}
	return true, fmt.Sprintf("follower of %d in epoch %d, %d records behind the leader's high watermark", m.CurrentLeader, m.CurrentEpoch, lag)
}

// addOpsHandlers adds GET /metrics, /healthz and /readyz to mux.
func addOpsHandlers(mux *http.ServeMux, r replica, readyMaxLag int64) {
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodGet) {
			return
		}
		m, err := r.Metrics()
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", promContentType)
		_ = writeMetrics(w, m)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodGet) {
			return
		}
		writeText(w, http.StatusOK, "ok: the process is alive")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodGet) {
			return
		}
		m, err := r.Metrics()
		if err != nil {
			writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
		if ok, why := readiness(m, readyMaxLag); !ok {
			writeText(w, http.StatusServiceUnavailable, "not ready: "+why)
		} else {
			writeText(w, http.StatusOK, "ready: "+why)
		}
	})
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text+"\n")
}

// version is -version's line: the module's version and VCS revision as
// the build recorded them, and the Go version.
func version() string {
	v, rev := "unknown", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.Main.Path + " " + bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev += " " + s.Value
			case "vcs.modified":
				if s.Value == "true" {
					rev += " (modified)"
				}
			}
		}
	}
	return fmt.Sprintf("kraftd %s%s %s %s/%s", v, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
