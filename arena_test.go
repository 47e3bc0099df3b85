package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestArenaFallback runs a representative set of the package's scenarios
// with the arena's fallback forced (referOK false: every action boxed the
// ordinary way, as on a Go release whose interface layout the arena's
// check rejects), and checks that the fallback is the path taken: a
// steady step through a warm Buffer then allocates.
func TestArenaFallback(t *testing.T) {
	was := SetArenaFallback(true)
	defer SetArenaFallback(was)
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"ClusterSmokeElection", TestClusterSmokeElection},
		{"StepIsPureAndDeterministic", TestStepIsPureAndDeterministic},
		{"PersistIsRewrittenOnlyBeforeAnySend", TestPersistIsRewrittenOnlyBeforeAnySend},
		{"FetchResponseRecordsAreAppendedOnlyWhenTaken", TestFetchResponseRecordsAreAppendedOnlyWhenTaken},
		{"LeaderHighWatermarkNeedsMajorityOfFiveVoters", TestLeaderHighWatermarkNeedsMajorityOfFiveVoters},
		{"CheckQuorumWindowRestartsOnFetchFromTwoOfFive", TestCheckQuorumWindowRestartsOnFetchFromTwoOfFive},
		{"BeginQuorumEpochTimeoutResendsOnlyToVotersThatHaveNotFetched", TestBeginQuorumEpochTimeoutResendsOnlyToVotersThatHaveNotFetched},
		{"FollowerTruncatesToKafkasTruncationPoint", TestFollowerTruncatesToKafkasTruncationPoint},
		{"ClusterFollowerWithDivergentTailTruncatesAndCatchesUp", TestClusterFollowerWithDivergentTailTruncatesAndCatchesUp},
		{"ClusterFigure8OlderEpochRecordsCommitOnlyWithNewEpochRecord", TestClusterFigure8OlderEpochRecordsCommitOnlyWithNewEpochRecord},
		{"FollowerDownloadsAndInstallsSnapshot", TestFollowerDownloadsAndInstallsSnapshot},
		{"SnapshotTransferThroughDeliver", TestSnapshotTransferThroughDeliver},
		{"ReconfigGrowFromOneVoterAndLeaderRemovesItself", TestReconfigGrowFromOneVoterAndLeaderRemovesItself},
	} {
		t.Run(sc.name, sc.run)
	}

	if raceEnabled {
		return
	}
	s := leaderOf(t, 3)
	e := fetchFrom(2, 1, s.LogEnd().Offset, s.LogEnd().Epoch)
	var buf Buffer
	StepInto(&buf, s, e)
	allocs := testing.AllocsPerRun(50, func() { _, _ = StepInto(&buf, s, e) })
	require.NotZero(t, allocs, "the fallback boxes the actions, which allocates")
}
