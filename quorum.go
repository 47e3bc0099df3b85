package kraft

// Quorum arithmetic: what a majority of the voter set is, and the counts
// that need one (an election's tally, the check-quorum window, the high
// watermark's n-th largest end), in one place as etcd raft keeps them in
// quorum/majority.go.

// majoritySize is floor(n/2)+1: the fewest of n voters that make a
// majority (Kafka's EpochElection.majoritySize; etcd's len(c)/2+1). Any two
// majorities of one voter set share a voter.
func majoritySize(voters int) int { return voters/2 + 1 }

// majority is the majority size of the voter set in force.
func (c *settings) majority() int { return majoritySize(len(c.voters)) }

// voteWon: granted voters of voters make a majority (Kafka's
// EpochElection.isVoteGranted; etcd's VoteWon).
func voteWon(voters, granted int) bool { return granted >= majoritySize(voters) }

// voteLost: even if every voter that has not answered granted, the
// granted voters could not make a majority (Kafka's
// EpochElection.isVoteRejected; etcd's VoteLost).
func voteLost(voters, granted, rejected int) bool {
	unrecorded := voters - granted - rejected
	return granted+unrecorded < majoritySize(voters)
}

// checkQuorumMet: fetched voters other than the leader have fetched in
// the check-quorum window, enough for a majority with the leader itself
// when it is a voter; a leader removed from the voter set does not count
// itself (Kafka's LeaderState.updateCheckQuorumForFollowingVoter).
func checkQuorumMet(voters, fetched int, leaderVotes bool) bool {
	need := majoritySize(voters)
	if leaderVotes {
		need--
	}
	return fetched >= need
}

// majorityEnd is the largest offset a majority of voters has reached, given
// each voter's end (etcd's CommittedIndex; Kafka's
// LeaderState.maybeUpdateHighWatermark sorts and takes the same one). It
// reorders ends.
func majorityEnd(ends []int64) int64 { return nthLargest(ends, majoritySize(len(ends))) }

// newTally starts a nominee's election with only its own vote granted.
func (t *stepper) newTally() {
	t.s.granted, t.s.rejected = voterSet(0).with(t.s.c.localIndex), 0
}

func (t *stepper) won() bool {
	return voteWon(len(t.s.c.voters), t.s.granted.size())
}

// electionLost: even the voters that have not answered cannot make a
// majority (Kafka's EpochElection.isVoteRejected).
func (t *stepper) electionLost() bool {
	if t.s.role != Prospective && t.s.role != Candidate {
		return false
	}
	return voteLost(len(t.s.c.voters), t.s.granted.size(), t.s.rejected.size())
}

// checkQuorum restarts the check-quorum window once a majority of voters,
// the leader included, has fetched in it (Kafka's
// LeaderState.updateCheckQuorumForFollowingVoter).
func (t *stepper) checkQuorum() {
	if checkQuorumMet(len(t.s.c.voters), t.s.fetchedCheck.size(), t.s.c.isVoter()) {
		t.s.fetchedCheck = 0
		t.emit(t.s.c.resetCheckQuorum)
	}
}

// nthLargest returns the n-th largest of xs (1 <= n <= len(xs)),
// reordering xs: Hoare's selection with the middle element as pivot.
func nthLargest(xs []int64, n int) int64 {
	k := n - 1 // index in descending order
	lo, hi := 0, len(xs)-1
	for lo < hi {
		pivot := xs[(lo+hi)/2]
		i, j := lo, hi
		for i <= j {
			for xs[i] > pivot {
				i++
			}
			for xs[j] < pivot {
				j--
			}
			if i <= j {
				xs[i], xs[j] = xs[j], xs[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return xs[k]
		}
	}
	return xs[k]
}
