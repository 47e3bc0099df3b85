package kraft

// Quorum arithmetic: what a majority of the voter set is, and the counts
// that need one (an election's tally, the check-quorum window, the high
// watermark's n-th largest end), in one place as etcd raft keeps them in
// quorum/majority.go.

// majority is floor(n/2)+1 for the voter set (Kafka's
// EpochElection.majoritySize).
func (c *settings) majority() int { return len(c.voters)/2 + 1 }

// newTally starts a nominee's election with only its own vote granted.
func (t *stepper) newTally() {
	t.s.granted, t.s.rejected = voterSet(0).with(t.s.c.localIndex), 0
}

func (t *stepper) count() (granted, unrecorded int) {
	granted = t.s.granted.size()
	return granted, len(t.s.c.voters) - granted - t.s.rejected.size()
}

func (t *stepper) won() bool {
	granted, _ := t.count()
	return granted >= t.s.c.majority()
}

// electionLost: even the voters that have not answered cannot make a
// majority (Kafka's EpochElection.isVoteRejected).
func (t *stepper) electionLost() bool {
	if t.s.role != Prospective && t.s.role != Candidate {
		return false
	}
	granted, unrecorded := t.count()
	return granted+unrecorded < t.s.c.majority()
}

// checkQuorum restarts the check-quorum window once a majority of voters,
// the leader included, has fetched in it (Kafka's
// LeaderState.updateCheckQuorumForFollowingVoter).
//
// A leader removed from the voter set does not count itself (Kafka's
// updateCheckQuorumForFollowingVoter).
func (t *stepper) checkQuorum() {
	need := t.s.c.majority()
	if t.s.c.isVoter() {
		need--
	}
	if t.s.fetchedCheck.size() >= need {
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
