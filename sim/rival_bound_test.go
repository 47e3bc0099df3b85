package sim

import (
	"sort"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// The schedules of this file come from review 4 (finding L1): before
// D105, a campaigner that could not win held a connected majority back
// (D59's rival) for tens of seconds.
//
// Five voters, idle. The leader dies (crash or kill); at the same time the
// survivor that ranks first (r: equal logs, lowest key) is cut off, both
// ways, from two of the other three survivors, and still reaches one (b).
// The three survivors other than r are connected to each other and are a
// majority of five: Kafka's canMakeProgressIfMajorityIsReachable says
// they elect a leader. Every link is symmetric, so the partition is one a
// TCP network can have (a partial partition), unlike a one-way cut.
//
// r campaigns first (it ranks first) and can never win: its pre-votes
// reach b alone. b notes r as its rival (D59, noteRival) at every one of
// r's rounds; while it holds the rival, b does not become Candidate
// whatever it collects (onVoteResponse: "outranked"), and it grants no
// pre-vote to the two others, which rank below its rival (rankedGrant);
// they cannot win without b. The rival is forgotten when b's own round
// ends, but b, r and the others then all follow the dead leader again
// (afterElectionLoss: a Prospective that knows a reachable leader follows
// it), time out after the same T_f, and r, ranking first, campaigns first
// again: the phases lock, and r's pre-vote reaches b before b can win its
// round. D39, which D59 replaced, had a bound ("it yields at most once per
// epoch, so a peer that cannot win holds it back for one round at most");
// D59's rival had none while the rival kept campaigning. D105 restores
// one: a rival holds a voter back for one pre-vote round per epoch (or
// two lost ones).
//
// With Config.KafkaFailover (Kafka's own rules) the same schedules elect
// within 1.2-5.6 s. With kraft's rules before D105, over seeds 1-200: p50
// 11.8 s, p90 43.6 s, max 100 s; 115 of 200 took over 10 s.
//
// The requirement here is the project's own liveness bound,
// LivenessBound election timeouts (20 s), for a majority that is fully
// connected.
func TestRivalBoundConnectedMajorityElectsDespiteAPartitionedTopRankedVoter(t *testing.T) {
	for _, kafka := range []bool{true, false} {
		var ds []time.Duration
		var slow []int64
		for seed := int64(1); seed <= 40; seed++ {
			took, desc := partialPartitionFailover(t, seed, kafka, false, false)
			ds = append(ds, took)
			if took > LivenessBound*time.Second {
				slow = append(slow, seed)
				if len(slow) == 1 {
					t.Logf("kafka failover %v, seed %d: the connected majority elected only after %v; at that moment:%s", kafka, seed, took, desc)
				}
			}
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		t.Logf("kafka failover %v: p50 %v, max %v; over %v: seeds %v", kafka, ds[len(ds)/2], ds[len(ds)-1], LivenessBound*time.Second, slow)
		require.Empty(t, slow, "kafka failover %v: a connected majority of 5 voters elected no leader within %d election timeouts in %d of 40 schedules (seeds %v)",
			kafka, LivenessBound, len(slow), slow)
	}
}

// partialPartitionFailover runs one schedule and returns how long the
// connected majority took to elect (capped at 300 s).
func partialPartitionFailover(t *testing.T, seed int64, kafka, kill, isolateR bool) (time.Duration, string) {
	o := DefaultOptions()
	o.Voters = 5
	o.Seed = seed
	o.ClientInterval = -1
	o.SnapshotEvery = -1
	o.KafkaFailover = kafka
	c, err := New(o, nil)
	require.NoError(t, err)
	l, err := c.WaitForLeader(30 * time.Second)
	require.NoError(t, err)
	require.NoError(t, c.RunFor(3*time.Second))
	var surv []kraft.NodeID
	for i := 0; i < o.Voters; i++ {
		if kraft.NodeID(i) != l {
			surv = append(surv, kraft.NodeID(i))
		}
	}
	r := surv[0] // lowest key, equal logs: ranks first among the survivors
	cutOff := surv[2:]
	if isolateR {
		cutOff = surv[1:] // control: r reaches no one
	}
	for _, x := range cutOff {
		c.cut[[2]kraft.NodeID{r, x}] = true
		c.cut[[2]kraft.NodeID{x, r}] = true
	}
	if kill {
		c.Apply(Op{Kind: OpKill, Node: l})
	} else {
		c.Crash(l)
	}
	start := c.Now()
	elected := func() bool {
		for _, id := range surv[1:] {
			if c.Up(id) && c.State(id).Role() == kraft.Leader {
				return true
			}
		}
		return false
	}
	require.NoError(t, c.RunUntil(start+300*time.Second, elected))
	return c.Now() - start, c.Describe()
}

// TestRivalBoundControlIsolatedTopRankedVoter: the control. The same
// schedules with r cut off from every survivor (its pre-votes reach no
// one): kraft's rules elect within a few seconds, with or without D105.
// What held the majority back above was r's pre-vote reaching b.
func TestRivalBoundControlIsolatedTopRankedVoter(t *testing.T) {
	var worst time.Duration
	for seed := int64(1); seed <= 40; seed++ {
		took, _ := partialPartitionFailover(t, seed, false, false, true)
		if took > worst {
			worst = took
		}
	}
	t.Logf("r isolated, kraft's rules: worst %v", worst)
	require.Less(t, worst, 10*time.Second)
}

// TestRivalBoundOneWayCutTopRankedVoterDoesNotStallElection: the same with
// the simulator's own one-way partition (OpOneWay, which RandomSchedule
// draws): nothing reaches r, r's messages reach everyone. The other four
// survivors are connected and a majority; the leader crashes. With Kafka's
// rules they elect within 3.4 s over 40 seeds; with kraft's before D105,
// p50 1 min 49 s, max 9 min 50 s (5 voters), p50 16 s, max 2 min 44 s (7
// voters). (With
// TCP a one-way cut also stops r's own requests, so the partial partition
// above is the form a kraftd cluster meets; this one is the simulator's.)
func TestRivalBoundOneWayCutTopRankedVoterDoesNotStallElection(t *testing.T) {
	var slow []int64
	var worst time.Duration
	for seed := int64(1); seed <= 20; seed++ {
		o := DefaultOptions()
		o.Voters = 5
		o.Seed = seed
		o.ClientInterval = -1
		o.SnapshotEvery = -1
		c, err := New(o, nil)
		require.NoError(t, err)
		l, err := c.WaitForLeader(30 * time.Second)
		require.NoError(t, err)
		require.NoError(t, c.RunFor(3*time.Second))
		var r kraft.NodeID = -1
		var others []kraft.NodeID
		for i := 0; i < o.Voters; i++ {
			id := kraft.NodeID(i)
			if r < 0 && id != l {
				r = id
				continue
			}
			others = append(others, id)
		}
		c.OneWay(others...) // nothing reaches r
		c.Crash(l)
		start := c.Now()
		require.NoError(t, c.RunUntil(start+300*time.Second, func() bool { _, ok := c.Leader(); return ok }))
		took := c.Now() - start
		if took > worst {
			worst = took
		}
		if took > LivenessBound*time.Second {
			slow = append(slow, seed)
		}
	}
	t.Logf("worst %v", worst)
	require.Empty(t, slow, "4 connected survivors of 5 voters elected no leader within %d election timeouts while the top-ranked survivor's inbound was cut (seeds %v; worst %v)",
		LivenessBound, slow, worst)
}
