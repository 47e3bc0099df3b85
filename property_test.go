package kraft_test

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/sim"
	"pgregory.net/rapid"
)

// Property tests over the deterministic simulator in sim/. Every run checks
// the safety invariants after every event (sim.Checker); a run that breaks
// one stops with a sim.Violation naming the rule, the replica and the
// virtual time. See docs/verification.md for what each test catches and the
// deeper soak runs (-rapid.checks, -rapid.steps, KRAFT_SIM_SCHEDULES).

// simStats accumulates what the property tests ran, for the figures in
// docs/verification.md (printed with -v).
type simStats struct{ runs, events, checks int }

func (s *simStats) add(c *sim.Cluster) {
	s.runs++
	s.events += c.Stats().Events
	s.checks += c.Checker().Checks
}

func (s *simStats) log(t *testing.T) {
	t.Logf("simulated %d schedules, %d Step calls, invariants checked after %d events", s.runs, s.events, s.checks)
}

// drawCluster draws a cluster size and seed and builds the cluster.
func drawCluster(t *rapid.T, minVoters, maxVoters, maxObservers int) *sim.Cluster {
	opts := sim.DefaultOptions()
	opts.Voters = rapid.IntRange(minVoters, maxVoters).Draw(t, "voters")
	opts.Observers = rapid.IntRange(0, maxObservers).Draw(t, "observers")
	opts.Seed = rapid.Int64().Draw(t, "seed")
	drawHosts(t, &opts)
	c, err := sim.New(opts, nil)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	return c
}

// drawHosts draws what the hosts look like: KIP-853 directory ids, a
// cluster id, and voters whose hosts do not know Vote v2 (UNSUPPORTED_VERSION
// to pre-votes).
func drawHosts(t *rapid.T, opts *sim.Options) {
	opts.DirectoryIDs = rapid.Bool().Draw(t, "directory ids")
	opts.ClusterID = rapid.Bool().Draw(t, "cluster id")
	for i := 0; i < opts.Voters; i++ {
		if rapid.IntRange(0, 4).Draw(t, "no pre-vote") == 0 {
			opts.PreVoteUnsupported = append(opts.PreVoteUnsupported, kraft.NodeID(i))
		}
	}
}

// te is the election timeout the simulated clusters use.
var te = sim.DefaultOptions().ElectionTimeout

// bound is the liveness bound used by the scenarios: sim.LivenessBound
// election timeouts.
var bound = time.Duration(sim.LivenessBound) * te

func must(t *rapid.T, c *sim.Cluster, err error) {
	if err != nil {
		t.Fatalf("seed %d: %v", c.Options().Seed, err)
	}
}

// TestPropertyRandomFaultSchedules: random clusters (1-5 voters, 0-3
// observers, with or without directory ids and a cluster id, some voters
// without pre-vote) under random fault schedules (crashes that lose the
// unflushed tail, restarts, graceful resignations, symmetric and one-way
// partitions, lossy, duplicating and reordering networks, slow disks whose
// flushes take up to three election timeouts), invariants after every
// event; then every fault stops, a leader that every replica follows must
// appear within sim.LivenessBound election timeouts, and every replica
// must catch up.
func TestPropertyRandomFaultSchedules(t *testing.T) {
	var st simStats
	var worst time.Duration
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, 1, 5, 3)
		ids := c.IDs()
		node := rapid.SampledFrom(ids)
		group := rapid.SliceOfNDistinct(node, 1, len(ids), func(id kraft.NodeID) kraft.NodeID { return id })
		var ops []string
		apply := func(t *rapid.T, op sim.Op) {
			c.Apply(op)
			op.At = c.Now()
			ops = append(ops, op.String())
			d := time.Duration(rapid.IntRange(0, 3000).Draw(t, "run ms")) * time.Millisecond
			if err := c.RunFor(d); err != nil {
				t.Fatalf("seed %d, schedule:\n  %s\n%v%s", c.Options().Seed, strings.Join(ops, "\n  "), err, c.Describe())
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"run":     func(t *rapid.T) { apply(t, sim.Op{Kind: "none"}) },
			"crash":   func(t *rapid.T) { apply(t, sim.Op{Kind: sim.OpCrash, Node: node.Draw(t, "node")}) },
			"restart": func(t *rapid.T) { apply(t, sim.Op{Kind: sim.OpRestart, Node: node.Draw(t, "node")}) },
			"resign": func(t *rapid.T) {
				l, ok := c.Leader()
				if !ok {
					l = node.Draw(t, "node")
				}
				apply(t, sim.Op{Kind: sim.OpResign, Node: l})
			},
			"partition": func(t *rapid.T) { apply(t, sim.Op{Kind: sim.OpPartition, Group: group.Draw(t, "group")}) },
			"one way":   func(t *rapid.T) { apply(t, sim.Op{Kind: sim.OpOneWay, Group: group.Draw(t, "group")}) },
			"heal":      func(t *rapid.T) { apply(t, sim.Op{Kind: sim.OpHeal}) },
			"disk": func(t *rapid.T) {
				d := rapid.SampledFrom(sim.SlowFlushDelays).Draw(t, "flush delay")
				apply(t, sim.Op{Kind: sim.OpDisk, FlushDelay: d})
			},
			"network": func(t *rapid.T) {
				nw := sim.Network{
					MinDelay:  time.Millisecond,
					MaxDelay:  time.Duration(rapid.IntRange(1, 200).Draw(t, "max delay ms")) * time.Millisecond,
					Loss:      float64(rapid.IntRange(0, 5).Draw(t, "loss/10")) / 10,
					Duplicate: float64(rapid.IntRange(0, 5).Draw(t, "dup/10")) / 10,
				}
				apply(t, sim.Op{Kind: sim.OpNetwork, Network: &nw})
			},
		})
		took, err := c.CheckLiveness()
		if err != nil {
			what := "liveness after healing"
			var v sim.Violation
			if errors.As(err, &v) {
				what = "safety after healing"
			}
			t.Fatalf("%s, seed %d, schedule:\n  %s\n%v", what, c.Options().Seed, strings.Join(ops, "\n  "), err)
		}
		if took > worst {
			worst = took
		}
		st.add(c)
	})
	st.log(t)
	t.Logf("slowest recovery after healing: %v (bound %v)", worst, bound)
}

// TestPropertySoakRandomSchedules runs KRAFT_SIM_SCHEDULES seeded random
// schedules (sim.RandomSchedule, KRAFT_SIM_OPS operations at most, in a
// KRAFT_SIM_WINDOW fault window, default 10s) with the same checks. It is
// the long soak run; it is skipped when KRAFT_SIM_SCHEDULES is unset.
func TestPropertySoakRandomSchedules(t *testing.T) {
	n := envInt(t, "KRAFT_SIM_SCHEDULES", 0)
	if n == 0 {
		t.Skip("set KRAFT_SIM_SCHEDULES to run the soak")
	}
	maxOps := envInt(t, "KRAFT_SIM_OPS", 20)
	window := time.Duration(envInt(t, "KRAFT_SIM_WINDOW", 10)) * time.Second
	first := int64(envInt(t, "KRAFT_SIM_FIRST_SEED", 0))
	var st simStats
	var worst time.Duration
	for seed := first; seed < first+int64(n); seed++ {
		r := newRand(seed)
		opts := sim.DefaultOptions()
		opts.Voters, opts.Observers, opts.Seed = 1+r.Intn(5), r.Intn(4), seed
		opts.DirectoryIDs, opts.ClusterID = r.Intn(2) == 0, r.Intn(2) == 0
		for i := 0; i < opts.Voters; i++ {
			if r.Intn(5) == 0 {
				opts.PreVoteUnsupported = append(opts.PreVoteUnsupported, kraft.NodeID(i))
			}
		}
		ops := sim.RandomSchedule(r, opts.Voters, opts.Observers, window, r.Intn(maxOps+1))
		c, err := sim.New(opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Schedule(ops...)
		if err := c.RunFor(window); err != nil {
			t.Fatalf("seed %d (%d voters, %d observers), schedule %v:\n%v%s", seed, opts.Voters, opts.Observers, ops, err, c.Describe())
		}
		took, err := c.CheckLiveness()
		if err != nil {
			t.Fatalf("seed %d (%d voters, %d observers), schedule %v:\n%v", seed, opts.Voters, opts.Observers, ops, err)
		}
		if took > worst {
			worst = took
		}
		st.add(c)
	}
	st.log(t)
	t.Logf("slowest recovery after healing: %v (bound %v)", worst, bound)
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// progress waits until every running replica's high watermark is at least
// `more` records past the committed log's current length.
func progress(t *rapid.T, c *sim.Cluster, more int, ids ...kraft.NodeID) {
	target := int64(c.CommittedLen() + more)
	must(t, c, c.WaitForHighWatermark(target, bound, ids...))
}

func leader(t *rapid.T, c *sim.Cluster) kraft.NodeID {
	l, err := c.WaitForLeader(bound)
	must(t, c, err)
	return l
}

// Kafka's RaftEventSimulationTest scenarios. Each draws a seed and a
// cluster size, as Kafka's jqwik properties do.

// TestSimElectInitialLeader: Kafka's canElectInitialLeader.
func TestSimElectInitialLeader(t *testing.T) {
	var st simStats
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, 1, 5, 3)
		leader(t, c)
		progress(t, c, 10)
		st.add(c)
	})
	st.log(t)
}

// TestSimElectNewLeaderAfterOldLeaderFailure: Kafka's
// canElectNewLeaderAfterOldLeaderFailure, with the old leader crashing or
// resigning gracefully (kraft.Resign, then a crash as in a shutdown).
func TestSimElectNewLeaderAfterOldLeaderFailure(t *testing.T) {
	for _, graceful := range []bool{false, true} {
		graceful := graceful
		t.Run(fmt.Sprintf("graceful=%v", graceful), func(t *testing.T) {
			var st simStats
			rapid.Check(t, func(t *rapid.T) {
				c := drawCluster(t, 3, 5, 2)
				old := leader(t, c)
				progress(t, c, 10)
				epoch := c.State(old).Epoch()
				if graceful {
					c.Resign(old)
					must(t, c, c.RunFor(50*time.Millisecond))
				}
				c.Crash(old)
				must(t, c, c.RunUntil(c.Now()+bound, func() bool {
					l, ok := c.Leader()
					return ok && l != old && c.State(l).Epoch() > epoch
				}))
				if l, ok := c.Leader(); !ok || l == old {
					t.Fatalf("seed %d: no new leader after %d failed: %s", c.Options().Seed, old, c.Describe())
				}
				c.Restart(old)
				progress(t, c, 10)
				st.add(c)
			})
			st.log(t)
		})
	}
}

// TestSimRecoverAfterAllReplicasFail: Kafka's canRecoverAfterAllNodesKilled.
func TestSimRecoverAfterAllReplicasFail(t *testing.T) {
	var st simStats
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, 1, 5, 2)
		leader(t, c)
		progress(t, c, 10)
		for _, id := range c.IDs() {
			c.Crash(id)
		}
		must(t, c, c.RunFor(time.Duration(rapid.IntRange(0, 5000).Draw(t, "down ms"))*time.Millisecond))
		for _, id := range c.IDs() {
			c.Restart(id)
		}
		leader(t, c)
		progress(t, c, 10)
		st.add(c)
	})
	st.log(t)
}

// TestSimElectNewLeaderAfterOldLeaderPartitionedAway: Kafka's
// canElectNewLeaderAfterOldLeaderPartitionedAway.
func TestSimElectNewLeaderAfterOldLeaderPartitionedAway(t *testing.T) {
	var st simStats
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, 3, 5, 2)
		old := leader(t, c)
		progress(t, c, 10)
		c.Partition(old)
		var others []kraft.NodeID
		for _, id := range c.IDs() {
			if id != old {
				others = append(others, id)
			}
		}
		must(t, c, c.RunUntil(c.Now()+bound, func() bool { l, ok := c.Leader(); return ok && l != old }))
		if l, ok := c.Leader(); !ok || l == old {
			t.Fatalf("seed %d: no new leader without %d: %s", c.Options().Seed, old, c.Describe())
		}
		progress(t, c, 10, others...)
		c.Heal()
		progress(t, c, 10)
		st.add(c)
	})
	st.log(t)
}

// TestSimMakeProgressWhenMajorityReachable: Kafka's
// canMakeProgressIfMajorityIsReachable: 5 voters split 2/3, the side of 3
// commits, then the partition heals and everyone catches up.
func TestSimMakeProgressWhenMajorityReachable(t *testing.T) {
	var st simStats
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, 5, 5, 2)
		leader(t, c)
		progress(t, c, 10)
		minority := []kraft.NodeID{0, 1}
		c.Partition(minority...)
		majority := []kraft.NodeID{2, 3, 4}
		before := c.CommittedLen()
		must(t, c, c.WaitForHighWatermark(int64(before+20), bound, majority...))
		for _, id := range minority {
			if c.State(id).HighWatermark() >= int64(before+20) {
				t.Fatalf("seed %d: minority replica %d reached the majority's high watermark %d while cut off", c.Options().Seed, id, before+20)
			}
		}
		c.Heal()
		progress(t, c, 10)
		st.add(c)
	})
	st.log(t)
}

// TestSimBackToBackLeaderFailures: the leader crashes, and the next leader
// crashes as soon as it is elected (with 3 voters the first one comes back
// first, so that a majority stays up); the cluster must still elect a
// leader and commit.
func TestSimBackToBackLeaderFailures(t *testing.T) {
	var st simStats
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, 3, 5, 2)
		first := leader(t, c)
		progress(t, c, 10)
		c.Crash(first)
		second := leader(t, c)
		if len(c.VoterIDs()) < 5 {
			c.Restart(first)
		}
		c.Crash(second)
		third := leader(t, c)
		if third == second || (len(c.VoterIDs()) >= 5 && third == first) {
			t.Fatalf("seed %d: crashed replica %d leads: %s", c.Options().Seed, third, c.Describe())
		}
		progress(t, c, 10, upIDs(c)...)
		c.Restart(first)
		c.Restart(second)
		progress(t, c, 10)
		st.add(c)
	})
	st.log(t)
}

func upIDs(c *sim.Cluster) []kraft.NodeID {
	var out []kraft.NodeID
	for _, id := range c.IDs() {
		if c.Up(id) {
			out = append(out, id)
		}
	}
	return out
}

// TestSimRecoverFromSingleReplicaCommittedDataLoss: Kafka's
// canRecoverFromSingleNodeCommittedDataLoss: once every replica holds the
// first records, one voter loses its disk (record and log) and restarts
// empty; the cluster keeps committing and the replica gets the committed
// records back. The checker forgets that replica's history (votes, epochs,
// held records) at the loss, as Kafka's test drops its MonotonicEpoch and
// MajorityReachedHighWatermark invariants. With directory ids (Kafka's
// withKip853) any voter may lose its disk: it comes back with a new
// directory id, as an observer. Without them the victim is a follower: a
// leader that comes back empty under the same key can win its old epoch
// again, which the others' answers reveal as a Fault, so that case is only
// safe with KIP-853.
func TestSimRecoverFromSingleReplicaCommittedDataLoss(t *testing.T) {
	var st simStats
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t, 3, 5, 2)
		l := leader(t, c)
		progress(t, c, 10)
		victims := c.VoterIDs()
		if !c.Options().DirectoryIDs {
			victims = victims[:0:0]
			for _, id := range c.VoterIDs() {
				if id != l {
					victims = append(victims, id)
				}
			}
		}
		victim := rapid.SampledFrom(victims).Draw(t, "victim")
		c.LoseDisk(victim)
		committed := c.Checker().Committed()
		leader(t, c)
		progress(t, c, 10)
		log, _ := c.Log(victim)
		if len(log) < len(committed) {
			t.Fatalf("seed %d: replica %d has %d records after recovery, %d are committed", c.Options().Seed, victim, len(log), len(committed))
		}
		for i := range committed {
			if log[i] != committed[i] {
				t.Fatalf("seed %d: replica %d record %d is %+v, committed %+v", c.Options().Seed, victim, i, log[i], committed[i])
			}
		}
		st.add(c)
	})
	st.log(t)
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// Generators of arbitrary events: any field may hold nonsense (negative
// ids, offsets and epochs, unknown senders, odd error codes), with a bias
// towards values near the cluster's own.

var (
	genNode   = rapid.OneOf(rapid.Custom(func(t *rapid.T) kraft.NodeID { return kraft.NodeID(rapid.IntRange(-2, 8).Draw(t, "id")) }), rapid.Map(rapid.Int32(), func(v int32) kraft.NodeID { return kraft.NodeID(v) }))
	genEpoch  = rapid.OneOf(rapid.Custom(func(t *rapid.T) kraft.Epoch { return kraft.Epoch(rapid.IntRange(-1, 12).Draw(t, "epoch")) }), rapid.Map(rapid.Int32(), func(v int32) kraft.Epoch { return kraft.Epoch(v) }))
	genOffset = rapid.OneOf(rapid.Int64Range(-2, 200), rapid.Int64())
	genError  = rapid.SampledFrom([]kraft.ErrorCode{
		kraft.ErrNone, kraft.ErrNone, kraft.ErrNone, kraft.ErrNotLeaderOrFollower, kraft.ErrBrokerNotAvailable,
		kraft.ErrInvalidRequest, kraft.ErrFencedLeaderEpoch, kraft.ErrUnknownLeaderEpoch, kraft.ErrInconsistentClusterID,
		kraft.ErrInvalidVoterKey, kraft.ErrUnsupportedVersion, kraft.ErrPositionOutOfRange, kraft.ErrSnapshotNotFound, 12345, -1,
	})
	genUUID = rapid.SampledFrom([]uuid.UUID{uuid.Nil, uuid.Nil, uuid.MustParse("00000000-0000-0000-0000-00000000000a"), uuid.MustParse("ffffffff-ffff-ffff-ffff-ffffffffffff")})
	genNull = rapid.Custom(func(t *rapid.T) uuid.NullUUID {
		return uuid.NullUUID{UUID: genUUID.Draw(t, "uuid"), Valid: rapid.Bool().Draw(t, "valid")}
	})
	genLogEnd = rapid.Custom(func(t *rapid.T) kraft.LogEnd {
		return kraft.LogEnd{Offset: genOffset.Draw(t, "offset"), Epoch: genEpoch.Draw(t, "epoch")}
	})
	genKey = rapid.Custom(func(t *rapid.T) kraft.ReplicaKey {
		return kraft.ReplicaKey{ID: genNode.Draw(t, "id"), DirectoryID: genUUID.Draw(t, "dir")}
	})
	genKeys     = rapid.SliceOfN(genKey, 0, 6)
	genVersions = rapid.Custom(func(t *rapid.T) kraft.VersionRange {
		return kraft.VersionRange{Min: int16(rapid.IntRange(-1, 2).Draw(t, "min")), Max: int16(rapid.IntRange(-1, 2).Draw(t, "max"))}
	})
)

// genEvent draws any kraft.Event.
var genEvent = rapid.Custom(func(t *rapid.T) kraft.Event {
	switch rapid.IntRange(0, 24).Draw(t, "event kind") {
	case 0:
		return kraft.ElectionTimeout{}
	case 1:
		return kraft.FetchTimeout{}
	case 2:
		return kraft.CheckQuorumTimeout{}
	case 3:
		return kraft.BeginQuorumEpochTimeout{}
	case 4:
		return kraft.ReceiveVoteRequest{
			From: genNode.Draw(t, "from"), ClusterID: genNull.Draw(t, "cluster"),
			VoterID: genNode.Draw(t, "voter"), VoterDirectoryID: genUUID.Draw(t, "voter dir"),
			CandidateEpoch: genEpoch.Draw(t, "candidate epoch"), Candidate: genNode.Draw(t, "candidate"),
			CandidateDirectoryID: genUUID.Draw(t, "candidate dir"), CandidateLogEnd: genLogEnd.Draw(t, "log end"),
			PreVote: rapid.Bool().Draw(t, "pre-vote"),
		}
	case 5:
		return kraft.ReceiveVoteResponse{
			From: genNode.Draw(t, "from"), Error: genError.Draw(t, "error"), Epoch: genEpoch.Draw(t, "epoch"),
			VoteGranted: rapid.Bool().Draw(t, "granted"), LeaderID: genNode.Draw(t, "leader"),
		}
	case 6:
		return kraft.ReceiveBeginQuorumEpoch{
			From: genNode.Draw(t, "from"), ClusterID: genNull.Draw(t, "cluster"),
			LeaderID: genNode.Draw(t, "leader"), LeaderEpoch: genEpoch.Draw(t, "epoch"),
			VoterID: genNode.Draw(t, "voter"), VoterDirectoryID: genUUID.Draw(t, "voter dir"),
		}
	case 7:
		return kraft.ReceiveEndQuorumEpoch{
			From: genNode.Draw(t, "from"), ClusterID: genNull.Draw(t, "cluster"),
			LeaderID: genNode.Draw(t, "leader"), LeaderEpoch: genEpoch.Draw(t, "epoch"),
			SuccessorRank: kraft.SuccessorRank{Position: rapid.IntRange(-2, 8).Draw(t, "position"), Of: rapid.IntRange(-2, 8).Draw(t, "of")},
		}
	case 8:
		return kraft.ReceiveFetch{
			From: genNode.Draw(t, "from"), FromDirectoryID: genUUID.Draw(t, "dir"), ClusterID: genNull.Draw(t, "cluster"),
			CurrentLeaderEpoch: genEpoch.Draw(t, "epoch"), FetchEpoch: genEpoch.Draw(t, "fetch epoch"), FetchOffset: genOffset.Draw(t, "offset"),
		}
	case 9:
		return kraft.ReceiveFetchSnapshot{
			From: genNode.Draw(t, "from"), FromDirectoryID: genUUID.Draw(t, "dir"),
			ClusterID: genNull.Draw(t, "cluster"), CurrentLeaderEpoch: genEpoch.Draw(t, "epoch"),
			Snapshot: genLogEnd.Draw(t, "snapshot id"), Position: genOffset.Draw(t, "position"), Size: genOffset.Draw(t, "size"),
		}
	case 10:
		e := kraft.ReceiveFetchResponse{
			From: genNode.Draw(t, "from"), Error: genError.Draw(t, "error"), LeaderID: genNode.Draw(t, "leader"),
			LeaderEpoch: genEpoch.Draw(t, "epoch"), HighWatermark: genOffset.Draw(t, "hwm"),
		}
		if rapid.Bool().Draw(t, "diverging") {
			e.Diverging = &kraft.LogOffsetMetadata{Offset: genOffset.Draw(t, "div offset"), Epoch: genEpoch.Draw(t, "div epoch")}
		}
		if rapid.IntRange(0, 4).Draw(t, "snapshot") == 0 {
			s := genLogEnd.Draw(t, "snapshot id")
			e.Snapshot = &s
		}
		return e
	case 11:
		return kraft.ReceiveLeaderlessEpoch{From: genNode.Draw(t, "from"), Epoch: genEpoch.Draw(t, "epoch")}
	case 12:
		return kraft.LogAppended{End: genLogEnd.Draw(t, "end")}
	case 13:
		return kraft.LogFlushed{Offset: genLogEnd.Draw(t, "flushed").Offset}
	case 14:
		return kraft.ReceiveQuorumResponse{From: genNode.Draw(t, "from"), Error: genError.Draw(t, "error"), Epoch: genEpoch.Draw(t, "epoch"), LeaderID: genNode.Draw(t, "leader")}
	case 15:
		return kraft.ReceiveFetchSnapshotResponse{
			From: genNode.Draw(t, "from"), Error: genError.Draw(t, "error"), LeaderID: genNode.Draw(t, "leader"),
			LeaderEpoch: genEpoch.Draw(t, "epoch"), Snapshot: genLogEnd.Draw(t, "snapshot id"),
			Size: genOffset.Draw(t, "size"), Position: genOffset.Draw(t, "position"), Bytes: genOffset.Draw(t, "bytes"),
		}
	case 16:
		return kraft.SnapshotCreated{Snapshot: genLogEnd.Draw(t, "snapshot id")}
	case 17:
		return kraft.LogStartMoved{Snapshot: genLogEnd.Draw(t, "snapshot id")}
	case 18:
		return kraft.VotersAppended{Offset: genOffset.Draw(t, "voters offset"), Voters: genKeys.Draw(t, "voters")}
	case 19:
		return kraft.ReceiveAddVoter{Ref: 1, From: genNode.Draw(t, "from"), ClusterID: genNull.Draw(t, "cluster"), Voter: genKey.Draw(t, "voter"), Listener: rapid.Bool().Draw(t, "listener")}
	case 20:
		return kraft.ReceiveRemoveVoter{Ref: 2, From: genNode.Draw(t, "from"), ClusterID: genNull.Draw(t, "cluster"), Voter: genKey.Draw(t, "voter")}
	case 21:
		return kraft.ReceiveUpdateVoter{
			Ref: 3, From: genNode.Draw(t, "from"), ClusterID: genNull.Draw(t, "cluster"), CurrentLeaderEpoch: genEpoch.Draw(t, "epoch"),
			Voter: genKey.Draw(t, "voter"), Listener: rapid.Bool().Draw(t, "listener"), KRaftVersions: genVersions.Draw(t, "versions"),
		}
	case 22:
		e := kraft.ReceiveAPIVersionsResponse{From: genNode.Draw(t, "from"), Error: genError.Draw(t, "error")}
		if rapid.Bool().Draw(t, "with versions") {
			v := genVersions.Draw(t, "versions")
			e.KRaftVersions = &v
		}
		return e
	case 23:
		return kraft.VoterChangeTimeout{}
	}
	if rapid.Bool().Draw(t, "resign to a successor") {
		k := genKey.Draw(t, "successor")
		return kraft.Resign{Successor: &k}
	}
	return kraft.Resign{}
})

// reachableStates runs a drawn cluster under a drawn schedule for a drawn
// time and returns every replica's state.
func reachableStates(t *rapid.T) []kraft.State {
	c := drawCluster(t, 1, 5, 2)
	r := newRand(rapid.Int64().Draw(t, "schedule seed"))
	c.Schedule(sim.RandomSchedule(r, len(c.VoterIDs()), len(c.IDs())-len(c.VoterIDs()), 5*time.Second, r.Intn(10))...)
	must(t, c, c.RunFor(time.Duration(rapid.IntRange(0, 8000).Draw(t, "run ms"))*time.Millisecond))
	var out []kraft.State
	for _, id := range c.IDs() {
		out = append(out, c.State(id))
	}
	return out
}

// stepChecked steps s with e and checks that Step is pure (s deeply equal
// to a copy taken before, every slice copied, so a write into structure it
// shares with other states shows) and deterministic (a second call gives
// deeply equal results). rapid reports
// a panic as a failure, so callers also check totality.
func stepChecked(t *rapid.T, s kraft.State, e kraft.Event) (kraft.State, []kraft.Action) {
	before := kraft.CloneState(s)
	next, acts := kraft.Step(s, e)
	if !reflect.DeepEqual(before, s) {
		t.Fatalf("Step mutated its input state on %T%+v:\nbefore %v\nafter  %v", e, e, before, s)
	}
	next2, acts2 := kraft.Step(s, e)
	if !reflect.DeepEqual(next, next2) || !reflect.DeepEqual(acts, acts2) {
		t.Fatalf("Step is not deterministic on %v with %T%+v:\n%+v\n%+v", s, e, e, acts, acts2)
	}
	return next, acts
}

// TestPropertyStepPureDeterministicTotal: on states reached by simulated
// runs, arbitrary events (any field nonsense) never make Step panic, never
// change the input state, and always give the same answer. Each state then
// takes further arbitrary events, chained.
func TestPropertyStepPureDeterministicTotal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		states := reachableStates(t)
		for i, s := range states {
			n := rapid.IntRange(1, 20).Draw(t, fmt.Sprintf("events for replica %d", i))
			for j := 0; j < n; j++ {
				s, _ = stepChecked(t, s, genEvent.Draw(t, "event"))
			}
		}
	})
}
