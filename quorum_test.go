package kraft

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestQuorumArithmetic: the majority size, the election tally, the
// check-quorum count and the high watermark's n-th largest end, by table
// (etcd raft's quorum/testdata tables check the same counts).
func TestQuorumArithmetic(t *testing.T) {
	for _, c := range []struct{ voters, majority int }{
		{1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}, {6, 4}, {7, 4}, {64, 33},
	} {
		require.Equal(t, c.majority, majoritySize(c.voters), "voters %d", c.voters)
	}

	for _, c := range []struct {
		voters, granted, rejected int
		won, lost                 bool
	}{
		{1, 1, 0, true, false},
		{2, 1, 0, false, false},
		{2, 1, 1, false, true},
		{2, 2, 0, true, false},
		{3, 1, 0, false, false},
		{3, 1, 1, false, false},
		{3, 1, 2, false, true},
		{3, 2, 0, true, false},
		{3, 2, 1, true, false},
		{4, 2, 1, false, false},
		{4, 2, 2, false, true},
		{4, 3, 1, true, false},
		{5, 1, 2, false, false},
		{5, 1, 3, false, true},
		{5, 2, 2, false, false},
		{5, 3, 2, true, false},
		{6, 3, 3, false, true},
		{7, 3, 3, false, false},
		{7, 4, 0, true, false},
	} {
		name := fmt.Sprintf("%d voters, %d granted, %d rejected", c.voters, c.granted, c.rejected)
		require.Equal(t, c.won, voteWon(c.voters, c.granted), "won: %s", name)
		require.Equal(t, c.lost, voteLost(c.voters, c.granted, c.rejected), "lost: %s", name)
	}

	for _, c := range []struct {
		voters, fetched int
		leaderVotes     bool
		met             bool
	}{
		{1, 0, true, true}, // the only voter is its own quorum
		{1, 0, false, false},
		{1, 1, false, true},
		{3, 0, true, false},
		{3, 1, true, true},
		{3, 1, false, false}, // a removed leader does not count itself
		{3, 2, false, true},
		{4, 1, true, false},
		{4, 2, true, true},
		{5, 1, true, false},
		{5, 2, true, true},
		{5, 2, false, false},
		{5, 3, false, true},
	} {
		require.Equal(t, c.met, checkQuorumMet(c.voters, c.fetched, c.leaderVotes), "%+v", c)
	}

	for _, c := range []struct {
		ends []int64
		want int64
	}{
		{[]int64{7}, 7},
		{[]int64{3, 9}, 3},
		{[]int64{5, 1, 9}, 5},
		{[]int64{-1, -1, 4}, -1},
		{[]int64{4, 4, 4}, 4},
		{[]int64{1, 2, 3, 4}, 2},
		{[]int64{10, 2, 8, 4, 6}, 6},
		{[]int64{0, 0, 7, 7, 7}, 7},
		{[]int64{9, 1, 1, 1, 9, 9}, 1},
		{[]int64{6, 5, 4, 3, 2, 1, 0}, 3},
	} {
		in := append([]int64(nil), c.ends...)
		require.Equal(t, c.want, majorityEnd(in), "%v", c.ends)
	}
}

// nthLargest, which the leader's high watermark uses, is the n-th value of
// the sorted list, for any list and n (duplicates included).
func TestNthLargestMatchesSorting(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		xs := rapid.SliceOfN(rapid.Int64Range(-1, 20), 1, MaxVoters).Draw(t, "ends")
		n := rapid.IntRange(1, len(xs)).Draw(t, "n")
		sorted := append([]int64(nil), xs...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] > sorted[j] })
		if got := nthLargest(append([]int64(nil), xs...), n); got != sorted[n-1] {
			t.Fatalf("nthLargest(%v, %d) = %d, want %d", xs, n, got, sorted[n-1])
		}
	})
}
