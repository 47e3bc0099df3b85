package kraft

import "fmt"

// CheckInvariants reports the first way s breaks what State promises (a
// role's fields only in that role, the high watermark within the log, the
// vote and the leader consistent with the role, ...), or nil. Every State
// that NewState and Step return satisfies it: simulators and hosts may run
// it after every step in their tests, as the simulator and the explorer
// do. It reads only the State.
//
// The error is an *InvariantError naming the rule broken: a host that
// runs the check in production (package replica does, after every step,
// docs/design.md D200) stops the replica with it.
func (s State) CheckInvariants() error { return s.checkInvariants() }

// InvariantError is a State invariant broken: Rule names it ("role",
// "endpoints", "follower-fields", "tally", "leader-fields", "log-flushed",
// "high-watermark", ...: the first argument of each check below), Detail
// says how.
type InvariantError struct {
	Rule   string
	Detail string
}

func (e *InvariantError) Error() string { return e.Rule + ": " + e.Detail }

// broken is the InvariantError of rule with the formatted detail.
func broken(rule, format string, args ...interface{}) error {
	return &InvariantError{Rule: rule, Detail: fmt.Sprintf(format, args...)}
}

// checkInvariants reports the first way s breaks what State's fields
// promise (the comments beside the fields in state.go say which role owns
// each), or nil. Every State that NewState and Step return satisfies it;
// the package's tests check it after every step (checkStep).
func (s State) checkInvariants() error {
	c := s.c
	if c == nil {
		// The zero State, which Step hands back unchanged: no replica.
		return nil
	}
	role := s.role
	if role < Unattached || role > Resigned {
		return broken("role", "role %d is no role", role)
	}
	voter := c.isVoter()
	n := len(c.voters)
	if c.localIndex >= n || (voter && !c.voters[c.localIndex].Matches(c.local)) {
		return broken("local-index", "local index %d does not name the local key in %v", c.localIndex, c.voters)
	}
	if s.epoch < 0 {
		return broken("epoch", "negative epoch %d", s.epoch)
	}

	// Called directly, by pointer: no copy of the State and no escape
	// (the replica runs them after every step, D200).
	if err := s.checkRoleFields(role, voter, n); err != nil {
		return err
	}
	if err := s.checkFollowerFields(role, voter, n); err != nil {
		return err
	}
	if err := s.checkElectionFields(role, voter, n); err != nil {
		return err
	}
	if err := s.checkLeaderFields(role, voter, n); err != nil {
		return err
	}
	return s.checkLogFields(role, voter, n)
}

// checkRoleFields: who leads and who is voted for in each role, and the
// leader endpoints bit.
func (s *State) checkRoleFields(role Role, voter bool, n int) error {
	c := s.c
	// Who leads, who is voted for.
	switch role {
	case Leader:
		if s.leader != c.local.ID {
			return broken("leader-named", "a Leader names %d leader", s.leader)
		}
		if s.voted != NoReplica {
			return broken("leader-vote", "a Leader holds a vote for %v", s.voted)
		}
	case Follower:
		if s.leader == NoNode || s.leader == c.local.ID {
			return broken("follower-leader", "a Follower follows %d", s.leader)
		}
	case Candidate:
		if s.leader != NoNode {
			return broken("candidate-leader", "a Candidate names %d leader", s.leader)
		}
		// Its own key, or, restored from a record, one that matches it
		// (KIP-853: a stored key without a directory id matches any).
		if !s.voted.Matches(c.local) {
			return broken("candidate-vote", "a Candidate voted for %v, not itself", s.voted)
		}
	case Unattached, Prospective, Resigned:
	}
	if s.voted.ID == NoNode && s.voted != NoReplica {
		return broken("vote-directory", "no vote, but a directory id %v", s.voted.DirectoryID)
	}
	if !voter && (role == Prospective || role == Candidate) {
		return broken("observer-role", "an observer is %v", role)
	}

	// endpoints: true in Follower, Leader and Resigned, false in Unattached
	// and Candidate (a Prospective keeps its former role's).
	switch role {
	case Follower, Leader, Resigned:
		if !s.endpoints {
			return broken("endpoints", "%v without leader endpoints", role)
		}
	case Unattached, Candidate:
		if s.endpoints {
			return broken("endpoints", "%v with leader endpoints", role)
		}
	case Prospective:
	}

	return nil
}

// checkFollowerFields: the fields only a Follower keeps, the pending
// Fetch, the download and the refusal of a leader.
func (s *State) checkFollowerFields(role Role, voter bool, n int) error {
	// The Follower's fields.
	if role != Follower {
		switch {
		case s.fetched:
			return broken("follower-fields", "%v has fetched from a leader", role)
		case s.leaderResigned:
			return broken("follower-fields", "%v knows its leader resigned", role)
		case s.lowerAsked:
			return broken("follower-fields", "%v notes a lower-ranked campaigner", role)
		case s.download != nil:
			return broken("follower-fields", "%v downloads a snapshot", role)
		case s.joinWait:
			return broken("follower-fields", "%v waits to join", role)
		}
	}
	if s.fetchPending && role != Follower && role != Unattached {
		return broken("fetch-pending", "%v has a Fetch waiting for a flush", role)
	}
	if d := s.download; d != nil && (d.written < 0 || d.id.Offset < 0 || d.id.Epoch < 0) {
		return broken("download", "a download of %+v with %d bytes written", d.id, d.written)
	}

	// A refusal (D113): of a leader other than this replica, which the
	// replica follows, or knows while it campaigns or searches.
	if s.refused {
		switch {
		case s.leader == NoNode || s.leader == s.c.local.ID:
			return broken("refusal", "%v refuses leader %d", role, s.leader)
		case role != Follower && role != Prospective && role != Unattached:
			return broken("refusal", "%v refuses the leader of its epoch", role)
		}
	}

	return nil
}

// checkElectionFields: the election's tally and the rival noted.
func (s *State) checkElectionFields(role Role, voter bool, n int) error {
	// The election's fields: a tally only while there is an election, of
	// voters, none both granting and rejecting.
	if role != Prospective && role != Candidate && (s.granted != 0 || s.rejected != 0) {
		return broken("tally", "%v keeps an election tally", role)
	}
	if s.granted&s.rejected != 0 {
		return broken("tally", "voters %b both granted and rejected", s.granted&s.rejected)
	}
	if (s.granted|s.rejected)>>uint(n) != 0 {
		return broken("tally", "the tally counts voters past the %d of the set", n)
	}
	if int(s.rival) > n {
		return broken("rival", "rival %d is not a voter index plus one (%d voters)", s.rival, n)
	}
	if s.rivalHeld > rivalSpent || (s.rivalHeld == rivalSpent && s.rival != 0) {
		return broken("rival", "rival %d noted with %d of %d rounds held back", s.rival, s.rivalHeld, rivalSpent)
	}

	return nil
}

// checkLeaderFields: the fields only a Leader keeps.
func (s *State) checkLeaderFields(role Role, voter bool, n int) error {
	// The Leader's fields.
	if role != Leader {
		switch {
		case s.epochStart != 0:
			return broken("leader-fields", "%v keeps an epoch start", role)
		case s.ends.small != [inlineEnds]int64{} || s.ends.large != nil:
			return broken("leader-fields", "%v keeps voter ends", role)
		case s.fetchedCheck != 0 || s.fetchedBegin != 0:
			return broken("leader-fields", "%v keeps check-quorum or begin-epoch rounds", role)
		case s.change != nil:
			return broken("leader-fields", "%v has a pending voter change", role)
		}
	} else {
		if s.epochStart < 0 || s.epochStart > s.log.end.Offset {
			return broken("leader-epoch-start", "a Leader's epoch starts at %d, its log ends at %d", s.epochStart, s.log.end.Offset)
		}
		if (s.fetchedCheck|s.fetchedBegin)>>uint(n) != 0 {
			return broken("leader-rounds", "the leader's rounds count voters past the %d of the set", n)
		}
		if s.ends.large != nil && len(s.ends.bigs()) != n {
			return broken("leader-ends", "a Leader keeps %d voter ends for %d voters", len(s.ends.bigs()), n)
		}
	}

	return nil
}

// checkLogFields: the log's offsets and the high watermark.
func (s *State) checkLogFields(role Role, voter bool, n int) error {
	// The log and the high watermark: start <= flushed <= end, and the
	// high watermark known (-1 if none) at most the highest one known,
	// which is at most the log end.
	log := &s.log
	if log.end.Offset < 0 || log.end.Epoch < 0 {
		return broken("log-end", "log end %+v", log.end)
	}
	if log.flushed > log.end.Offset {
		return broken("log-flushed", "flushed %d past the log end %d", log.flushed, log.end.Offset)
	}
	if log.start() > log.flushed {
		return broken("log-start", "log start %d past the flushed offset %d", log.start(), log.flushed)
	}
	if s.hwm < -1 || s.hwm > s.committed {
		return broken("high-watermark", "high watermark %d, highest known %d", s.hwm, s.committed)
	}
	if s.committed > log.end.Offset {
		return broken("high-watermark", "high watermark %d past the log end %d", s.committed, log.end.Offset)
	}
	return nil
}

// checkStep, when set, is called with every State that NewState and Step
// return. The package's tests set it to check the invariants; it is nil
// otherwise.
var checkStep func(State)
