package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFailoverWithoutSplitVotes: over 200 seeds each of 3, 5 and 7 voters,
// a leader crash is followed by a new leader that commits within 1.25 T_f
// (p99) and 1.06 T_f (p50), and no failover splits the vote
// (docs/design.md D59; with Config.KafkaFailover the split rate is 30-45%
// and the p99 about 2 T_f). The runs are deterministic: the same seeds give
// the same figures on every machine.
func TestFailoverWithoutSplitVotes(t *testing.T) {
	if testing.Short() {
		t.Skip("200 failovers per cluster size")
	}
	tf := DefaultOptions().FetchTimeout
	for _, voters := range []int{3, 5, 7} {
		st := measureSeeds(t, MeasureFailover, voters, 200)
		t.Logf("%d voters, %d failovers: p50 %v, p99 %v, max %v, split votes %d (%.1f%%)",
			voters, st.N, st.P50.Round(time.Millisecond), st.P99.Round(time.Millisecond), st.Max.Round(time.Millisecond),
			st.Splits, 100*float64(st.Splits)/float64(st.N))
		assert.Zero(t, st.Splits, "%d voters: split votes", voters)
		assert.LessOrEqual(t, st.P50, tf*106/100, "%d voters: p50 failover", voters)
		assert.LessOrEqual(t, st.P99, tf*125/100, "%d voters: p99 failover", voters)
	}
}

// TestKafkaFailoverSplitsVotes: with Kafka's rules the followers of a
// crashed leader time out together and often split the vote, which is
// what D59 removes; the measurement sees it.
func TestKafkaFailoverSplitsVotes(t *testing.T) {
	if testing.Short() {
		t.Skip("200 failovers")
	}
	kafkas := func(opts Options, settle time.Duration) (Failover, error) {
		opts.KafkaFailover = true
		return MeasureFailover(opts, settle)
	}
	st := measureSeeds(t, kafkas, 3, 200)
	t.Logf("Kafka's rules, 3 voters: p50 %v, p99 %v, max %v, split votes %d of %d", st.P50, st.P99, st.Max, st.Splits, st.N)
	require.Greater(t, st.Splits, 20)
}

// TestGracefulHandoverTakesRoundTrips: over 200 seeds each of 3, 5 and 7
// voters, a leader that resigns (kraft.Resign) is followed by a leader
// that commits within a few round trips of the 1-20 ms network in the
// median (p50 within 150 ms, against a fetch timeout of 2 s and an
// election timeout of 1 s), p99 within 600 ms, and no handover splits the
// vote. A successor that lags another voter's log no longer costs a rank
// backoff (docs/design.md D66; before it, these seeds split the vote once
// each for 3 and 5 voters, with p99s of 609 and 606 ms). The remaining
// tail is a successor's pre-vote that overtakes the EndQuorumEpoch to a
// voter, which still follows the leader then and refuses.
func TestGracefulHandoverTakesRoundTrips(t *testing.T) {
	if testing.Short() {
		t.Skip("200 handovers per cluster size")
	}
	for _, voters := range []int{3, 5, 7} {
		st := measureSeeds(t, MeasureHandover, voters, 200)
		t.Logf("%d voters, %d handovers: p50 %v, p99 %v, max %v, split votes %d",
			voters, st.N, st.P50.Round(time.Millisecond), st.P99.Round(time.Millisecond), st.Max.Round(time.Millisecond), st.Splits)
		assert.Zero(t, st.Splits, "%d voters: split votes", voters)
		assert.LessOrEqual(t, st.P50, 150*time.Millisecond, "%d voters: p50 handover", voters)
		assert.LessOrEqual(t, st.P99, 600*time.Millisecond, "%d voters: p99 handover", voters)
	}
}

// TestKilledLeaderIsReplacedWithinAnElectionTimeout: a leader whose
// process dies on a live host (OpKill: its peers notice the closed
// connections and the refused port, D101) is replaced by a leader that
// commits within one election timeout in the median, and in every one of
// 200 seeds before the fetch timeout would have begun an election; a
// silent crash of the same seeds waits the fetch timeout every time.
// Virtual time: the same seeds give the same figures on every machine.
func TestKilledLeaderIsReplacedWithinAnElectionTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("200 kills per cluster size")
	}
	o := DefaultOptions()
	for _, voters := range []int{3, 5} {
		k, c := measureSeeds(t, MeasureKill, voters, 200), measureSeeds(t, MeasureFailover, voters, 200)
		t.Logf("%d voters, %d kills: p50 %v, p99 %v, max %v, split votes %d; silent crashes: p50 %v",
			voters, k.N, k.P50.Round(time.Millisecond), k.P99.Round(time.Millisecond), k.Max.Round(time.Millisecond), k.Splits,
			c.P50.Round(time.Millisecond))
		assert.LessOrEqual(t, k.P50, o.ElectionTimeout, "%d voters: p50 after a kill", voters)
		assert.Less(t, k.Max, o.FetchTimeout, "%d voters: a kill waited for the fetch timeout", voters)
		assert.Greater(t, c.P50, o.FetchTimeout, "%d voters: a silent crash cannot be noticed before the fetch timeout", voters)
	}
}

// measureSeeds measures one failover (measure: MeasureFailover,
// MeasureKill, MeasureHandover) per seed 0..n-1 of a cluster of the
// default options with the given voters, and summarizes them.
func measureSeeds(t *testing.T, measure func(Options, time.Duration) (Failover, error), voters, n int) FailoverStats {
	t.Helper()
	var fs []Failover
	for seed := int64(0); seed < int64(n); seed++ {
		opts := DefaultOptions()
		opts.Voters, opts.Seed = voters, seed
		f, err := measure(opts, 3*time.Second)
		require.NoError(t, err, "seed %d", seed)
		fs = append(fs, f)
	}
	return SummarizeFailovers(fs)
}
