package sim

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// faultyRun runs a 5-voter, 2-observer cluster under a random fault
// schedule drawn from seed, heals and checks liveness, writing the trace to
// w if not nil.
func faultyRun(t *testing.T, seed int64, w *bytes.Buffer) *Cluster {
	t.Helper()
	opts := DefaultOptions()
	opts.Voters, opts.Observers, opts.Seed = 5, 2, seed
	var c *Cluster
	var err error
	if w != nil {
		c, err = New(opts, w)
	} else {
		c, err = New(opts, nil)
	}
	require.NoError(t, err)
	ops := RandomSchedule(rand.New(rand.NewSource(seed)), 5, 2, 10*time.Second, 15)
	c.Schedule(ops...)
	require.NoError(t, c.RunFor(10*time.Second))
	_, err = c.CheckLiveness()
	require.NoError(t, err)
	c.EndTrace()
	return c
}

func TestSameSeedSameRun(t *testing.T) {
	var a, b bytes.Buffer
	ca := faultyRun(t, 7, &a)
	cb := faultyRun(t, 7, &b)
	require.Equal(t, ca.Stats(), cb.Stats())
	require.Equal(t, a.String(), b.String(), "same seed, different traces")
	var c bytes.Buffer
	faultyRun(t, 8, &c)
	require.NotEqual(t, a.String(), c.String(), "different seeds, same trace")
}

func TestReplayReproducesRun(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		var buf bytes.Buffer
		c := faultyRun(t, seed, &buf)
		st, err := Replay(bytes.NewReader(buf.Bytes()))
		require.NoError(t, err)
		require.Equal(t, c.Stats().Events, st.Starts+st.Steps, "every Step and NewState of the run is replayed")
		require.Greater(t, st.Starts, 7, "restarts are in the trace")
	}
}

func TestReplayDetectsTamperedTrace(t *testing.T) {
	var buf bytes.Buffer
	faultyRun(t, 4, &buf)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// Change the first granted vote in the trace into a rejection.
	for i, l := range lines {
		if strings.Contains(l, `"VoteGranted":true`) {
			lines[i] = strings.Replace(l, `"VoteGranted":true`, `"VoteGranted":false`, 1)
			break
		}
	}
	_, err := Replay(strings.NewReader(strings.Join(lines, "\n")))
	require.Error(t, err)
}

// TestReplayRefusesACutTrace: a trace cut at a line boundary, or with its
// end record's counts changed, does not replay as a whole run.
func TestReplayRefusesACutTrace(t *testing.T) {
	var buf bytes.Buffer
	faultyRun(t, 5, &buf)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	_, err := Replay(strings.NewReader(strings.Join(lines, "\n")))
	require.NoError(t, err)
	for _, cut := range []int{1, len(lines) / 2, len(lines) - 1} {
		_, err := Replay(strings.NewReader(strings.Join(lines[:cut], "\n")))
		require.ErrorContains(t, err, "no end record", "cut after %d lines", cut)
	}
	end := lines[len(lines)-1]
	require.Contains(t, end, `"kind":"end"`)
	forged := append(append([]string(nil), lines[:len(lines)-2]...), end)
	_, err = Replay(strings.NewReader(strings.Join(forged, "\n")))
	require.Error(t, err, "a line missing before the end record")
	after := append(append([]string(nil), lines...), lines[1])
	_, err = Replay(strings.NewReader(strings.Join(after, "\n")))
	require.ErrorContains(t, err, "after the end record")
}

func TestTraceEventsRoundTrip(t *testing.T) {
	div := &kraft.LogOffsetMetadata{Offset: 3, Epoch: 2}
	for _, e := range []kraft.Event{
		kraft.ElectionTimeout{},
		kraft.ReceiveFetchResponse{From: 1, Diverging: div, HighWatermark: -1},
		kraft.ReceiveEndQuorumEpoch{From: 2, SuccessorRank: kraft.SuccessorRank{Position: 1, Of: 2}},
		kraft.LogAppended{End: kraft.LogEnd{Offset: 4, Epoch: 3}},
		kraft.Resign{},
	} {
		got, err := DecodeEvent(*encodeEvent(e))
		require.NoError(t, err)
		require.Equal(t, e, got)
	}
	a := kraft.SendEndQuorumEpoch{To: kraft.ReplicaKey{ID: 1}, Epoch: 3, PreferredSuccessors: []kraft.ReplicaKey{{ID: 2}}}
	got, err := DecodeAction(tag(a))
	require.NoError(t, err)
	require.Equal(t, kraft.Action(a), got)
}

// The checker must catch a broken host or state: each test below breaks
// one thing by hand and expects the matching rule.

func committedCluster(t *testing.T) *Cluster {
	t.Helper()
	c, err := New(Options{Voters: 3, Seed: 11}, nil)
	require.NoError(t, err)
	_, err = c.WaitForLeader(20 * time.Second)
	require.NoError(t, err)
	require.NoError(t, c.WaitForHighWatermark(10, 20*time.Second))
	return c
}

func follower(c *Cluster) *node {
	for _, n := range c.nodes {
		if n.st.Role() == kraft.Follower {
			return n
		}
	}
	return nil
}

func TestCheckerCatchesLostCommittedRecord(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	f.log, f.flushed = f.log[:2], 2
	c.check.logChanged(f)
	c.check.afterEvent()
	require.Error(t, c.Err())
	require.Equal(t, "committed-lost", violationRule(t, c.Err()))
}

func TestCheckerCatchesChangedCommittedRecord(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	f.log[3].Payload = "changed"
	c.check.logChanged(f)
	c.check.afterEvent()
	require.Error(t, c.Err())
	require.Contains(t, []string{"committed-lost", "log-matching"}, violationRule(t, c.Err()))
}

func TestCheckerCatchesSecondVote(t *testing.T) {
	c := committedCluster(t)
	n := c.nodes[0]
	c.check.vote(n, 9, kraft.ReplicaKey{ID: 1})
	require.NoError(t, c.Err())
	c.check.vote(n, 9, kraft.ReplicaKey{ID: 1})
	require.NoError(t, c.Err(), "a repeated grant to the same candidate is fine")
	c.check.vote(n, 9, kraft.ReplicaKey{ID: 2})
	require.Error(t, c.Err())
	require.Equal(t, "one-vote-per-epoch", violationRule(t, c.Err()))
}

func TestCheckerCatchesUnpersistedVote(t *testing.T) {
	c := committedCluster(t)
	n := c.nodes[0]
	e := kraft.ReceiveVoteRequest{From: 1, Candidate: 1, CandidateEpoch: n.st.Epoch() + 1}
	c.check.beforeAction(n, kraft.SendVoteResponse{To: 1, Epoch: n.st.Epoch() + 1, VoteGranted: true}, e)
	require.Error(t, c.Err())
	require.Equal(t, "persist-before-send", violationRule(t, c.Err()))
}

func TestCheckerCatchesLostPersistedRecord(t *testing.T) {
	c := committedCluster(t)
	f := follower(c)
	f.record = nil
	f.rep.Tick(c.now + time.Hour) // any step: its state's record is not the durable one
	c.carry(f)
	require.Error(t, c.Err())
}

func TestCheckerCatchesHighWatermarkWithoutMajority(t *testing.T) {
	c := committedCluster(t)
	var l *node
	for _, n := range c.nodes {
		if n.st.Role() == kraft.Leader {
			l = n
		}
	}
	require.NotNil(t, l)
	// Give the leader records nobody else has, then claim they commit.
	for i := 0; i < 5; i++ {
		l.log = append(l.log, Record{Epoch: l.st.Epoch(), Payload: "solo"})
	}
	l.flushed = len(l.log)
	c.check.beforeAction(l, kraft.HighWatermarkChanged{HighWatermark: int64(len(l.log))}, nil)
	require.Error(t, c.Err())
	require.Equal(t, "hwm-majority", violationRule(t, c.Err()))
}

func TestLivenessFailsWithoutMajority(t *testing.T) {
	c, err := New(Options{Voters: 3, Seed: 5}, nil)
	require.NoError(t, err)
	c.Crash(1)
	c.Crash(2)
	_, err = c.WaitForLeader(10 * time.Second)
	require.Error(t, err, "one voter of three cannot elect itself")
}

func TestObserversAndSingleVoter(t *testing.T) {
	c, err := New(Options{Voters: 1, Observers: 3, Seed: 3}, nil)
	require.NoError(t, err)
	l, err := c.WaitForLeader(time.Second)
	require.NoError(t, err)
	require.Equal(t, kraft.NodeID(0), l)
	require.NoError(t, c.WaitForHighWatermark(20, 20*time.Second))
}

func TestOptionsValidate(t *testing.T) {
	_, err := New(Options{Voters: -1}, nil)
	require.Error(t, err)
	_, err = New(Options{Voters: 3, Network: Network{MinDelay: 5, MaxDelay: 1}}, nil)
	require.Error(t, err)
}

// violationRule is the rule of err, which must be a Violation.
func violationRule(t *testing.T, err error) string {
	t.Helper()
	var v Violation
	require.ErrorAs(t, err, &v)
	return v.Rule
}

// TestStopFaultsRestoresConfiguredNetwork: StopFaults brings the network
// back to Options.Network (without loss or duplicates), not the delays of
// the last slow network phase. Seed 15 of reconfigSoakSchedule with
// 1-record fetches: its schedule ends with a network of 1-58 ms. A
// follower's Fetch costs one round trip plus one flush (D30); with those
// delays that is about 70 ms, 14 records a second while the client
// writes 20, and replica 2 never caught up with the records committed
// half way through CheckLiveness. On the configured 1-20 ms it takes
// about 31 ms, 32 records a second.
func TestStopFaultsRestoresConfiguredNetwork(t *testing.T) {
	opts, ops := reconfigSoakSchedule(15)
	opts.MaxFetchRecords = 1
	c, err := New(opts, nil)
	require.NoError(t, err)
	c.Schedule(ops...)
	require.NoError(t, c.RunFor(10*time.Second))
	require.NotEqual(t, opts.Network, c.net, "the schedule ends in a network phase")
	_, err = c.CheckLiveness()
	require.NoError(t, err)
	require.Equal(t, opts.Network, c.net)
	require.Equal(t, opts.Network, c.Options().Network)
}
