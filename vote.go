package kraft

// Elections: the election timer, Vote requests and Vote responses
// (KIP-595, KIP-996 Pre-Vote; Kafka's KafkaRaftClient.handleVoteRequest,
// handleVoteResponse and EpochState.canGrantVote).

// onElectionTimeout: Kafka's pollUnattached, pollProspective, pollCandidate
// and pollResigned when the election timer has expired.
func (t *stepper) onElectionTimeout() {
	switch t.s.role {
	case Unattached:
		if t.s.c.isVoter() {
			t.toProspective("election timeout")
		}
	case Prospective:
		// The round is over: the rival it yielded to did not win (D59),
		// and will not hold this replica back again in this epoch (D105).
		held := t.s.rival != 0 && t.won()
		t.s.endRound(true)
		if held {
			// A majority granted this round and only the rival held it
			// back: no leader has that majority, so it campaigns again at
			// once, with a fresh round, rather than following the leader
			// it knew for another fetch timeout (D105).
			t.toProspective("pre-vote held back by a rival that did not win")
			return
		}
		// The remaining time handed to Unattached is 0 at expiry, so the
		// replica campaigns again at once with a fresh pre-vote round
		// (Kafka's QuorumState.transitionToUnattached and
		// prospectiveTransitionAfterElectionLoss).
		t.afterElectionLoss(timerZero, "pre-vote timed out")
	case Candidate:
		// KAFKA-18345: no backoff; a Candidate that did not win in time
		// goes back to a pre-vote in the same epoch.
		t.toProspective("election timeout")
	case Resigned:
		if t.s.epoch == maxEpoch {
			return
		}
		t.toUnattached(t.s.epoch+1, NoNode, timerZero, "resigned leader's election timeout")
	case Leader, Follower:
	}
}

// afterElectionLoss is Kafka's prospectiveTransitionAfterElectionLoss: a
// Prospective that knows a reachable leader follows it again; otherwise it
// is Unattached in the same epoch, keeping the leader id and the vote.
func (t *stepper) afterElectionLoss(timer electionTimer, reason string) {
	if t.s.leader != NoNode && t.s.endpoints {
		t.toFollower(t.s.epoch, t.s.leader, reason)
		return
	}
	t.toUnattached(t.s.epoch, t.s.leader, timer, reason)
}

// onVoteRequest is Kafka's KafkaRaftClient.handleVoteRequest, step by step.
func (t *stepper) onVoteRequest(e ReceiveVoteRequest) {
	respond := func(code ErrorCode, granted bool) {
		t.emitVoteResponse(SendVoteResponse{To: e.From, Error: code, Epoch: t.s.epoch, LeaderID: t.s.leader, VoteGranted: granted})
	}
	if !t.clusterOK(&e.ClusterID) {
		respond(ErrInconsistentClusterID, false)
		return
	}
	last := e.CandidateLogEnd
	// A candidate has bumped its epoch, so its last record is older than
	// its epoch; a pre-vote asks in its current epoch.
	if last.Offset < 0 || last.Epoch < 0 ||
		(!e.PreVote && last.Epoch >= e.CandidateEpoch) ||
		(e.PreVote && last.Epoch > e.CandidateEpoch) {
		respond(ErrInvalidRequest, false)
		return
	}
	if code := t.validateVoterOnly(e.Candidate, e.CandidateEpoch); code != ErrNone {
		respond(code, false)
		return
	}
	if e.CandidateEpoch > t.s.epoch {
		// Even a pre-vote moves us to the newer epoch, before the voter-key
		// check (Kafka's handleVoteRequest).
		t.toUnattached(e.CandidateEpoch, NoNode, t.leaveUnattachedTimer(), "vote request with a newer epoch")
	}
	if !t.validVoterKey(e.VoterID, e.VoterDirectoryID) {
		respond(ErrInvalidVoterKey, false)
		return
	}
	candidate := ReplicaKey{ID: e.Candidate, DirectoryID: e.CandidateDirectoryID}
	upToDate := last.Compare(t.s.log.end) >= 0
	// D59: the campaigners of an epoch are ranked, and only the highest
	// ranked one that a replica knows of gets its pre-vote.
	ci := -1
	if e.PreVote && !t.s.c.kafkaFailover && t.s.c.isVoter() {
		ci = t.s.c.voterIndex(candidate)
	}
	above, recampaigned := false, false
	if ci >= 0 && ci != t.s.c.localIndex {
		above, recampaigned = t.rankCampaigner(ci, candidate, last)
	}
	granted := t.canGrantVote(candidate, upToDate, e.PreVote)
	if granted && ci >= 0 && !t.rankedGrant(ci, last, above) {
		granted = false
	}
	if granted && !e.PreVote && t.s.voted.ID == NoNode {
		t.recordVote(candidate)
	}
	respond(ErrNone, granted)
	if ci >= 0 && !above && !recampaigned && t.s.role == Prospective {
		// A voter that ranks below this Prospective campaigns: it has
		// given up on the leader, so it grants now if asked again (it may
		// have rejected this replica's pre-vote as a Follower, or its
		// rejection may still be on the way).
		t.askAgain(ci)
	}
}

// rankCampaigner ranks the campaigner candidate, voter ci with the log
// end last, against this voter for its pre-vote (D59): above reports
// whether it ranks above this one; recampaigned, whether this Follower
// campaigned again at once because it ranks below.
func (t *stepper) rankCampaigner(ci int, candidate ReplicaKey, last LogEnd) (above, recampaigned bool) {
	above = ranksAbove(last, candidate, t.s.log.end, t.s.c.local)
	// In a handover the resigning leader's ranking stands between
	// equal logs (a transfer may rank a higher key first, D136): only
	// a strictly better log campaigns over the campaigner.
	better := t.s.log.end.Compare(last) > 0
	if !above && better && !t.s.outranked() && t.s.role == Follower && t.s.fetched && !t.s.leaderResigned {
		// Its leader is still heard from: refused (KIP-996), but noted,
		// in case the leader turns out to be resigning (D79).
		t.s.lowerAsked = true
	}
	if !above && !t.s.outranked() && t.s.role == Follower && (!t.s.fetched || t.s.leaderResigned && better) {
		// A voter that ranks below this one campaigns, and this
		// Follower has not heard from its leader since it lost a
		// pre-vote (or began following), or its leader resigned (a
		// graceful handover whose preferred successor lags this
		// replica's log): the election is on, and this replica is the
		// better candidate. It campaigns again at once rather than
		// after another fetch timeout or its successor-rank backoff.
		t.toProspective("a voter that ranks below campaigns")
		recampaigned = true
	}
	if above {
		t.noteRival(ci, last)
	}
	return above, recampaigned
}

// ranksAbove reports whether a campaigner with log end a and key ka ranks
// above one with log end b and key kb (D59): the more up-to-date log, then
// the lower replica key.
func ranksAbove(a LogEnd, ka ReplicaKey, b LogEnd, kb ReplicaKey) bool {
	if c := a.Compare(b); c != 0 {
		return c > 0
	}
	return ka.Compare(kb) < 0
}

// rivalLog is the rival's log end (D59).
func (s *State) rivalLog() LogEnd { return LogEnd{Offset: s.rivalOffset, Epoch: s.rivalEpoch} }

// outranked: the rival still ranks above this replica (D59). A rival
// noted while the logs were equal falls behind when this replica's log
// grows past its log end; waiting for it then would leave the election to
// a voter whose pre-vote cannot win (D79).
func (s *State) outranked() bool {
	r := int(s.rival) - 1
	return r >= 0 && r < len(s.c.voters) && ranksAbove(s.rivalLog(), s.c.voters[r], s.log.end, s.c.local)
}

// forgetRival drops the rival (D59).
func (s *State) forgetRival() { s.rival, s.rivalEpoch, s.rivalOffset = 0, 0, 0 }

// rivalSpent is the count of held rounds (State.rivalHeld) at which a
// replica notes no rival again in its epoch (D105).
const rivalSpent = 2

// endRound ends a Prospective's pre-vote round that it did not win: the
// rival is forgotten (D59) and, if there was one, the round counts toward
// the bound of D105, timedOut the whole of it (the rival did not win in an
// election timeout), a lost round half: in a failover a round is lost
// within milliseconds to Followers whose fetch timers have not fired yet,
// which says little of whether the rival can win. Once the bound is
// reached no campaigner is noted as a rival again until the epoch changes.
func (s *State) endRound(timedOut bool) {
	if s.rival != 0 {
		s.rivalHeld++
		if timedOut {
			s.rivalHeld = rivalSpent
		}
	}
	s.forgetRival()
}

// noteRival remembers voter i, campaigning with log end end, as this
// epoch's rival if it ranks above the rival known so far (D59), unless a
// rival already held this replica back for a round in this epoch (D105).
func (t *stepper) noteRival(i int, end LogEnd) {
	if t.s.rivalHeld >= rivalSpent {
		return
	}
	if r := int(t.s.rival) - 1; r >= 0 && r != i && !ranksAbove(end, t.s.c.voters[i], t.s.rivalLog(), t.s.c.voters[r]) {
		return
	}
	t.s.rival, t.s.rivalEpoch, t.s.rivalOffset = uint8(i+1), end.Epoch, end.Offset
}

// rankedGrant is D59's restriction of a pre-vote grant to voter i
// campaigning with log end end (above: it ranks above this replica): a
// Prospective grants only a voter that ranks above itself, and no replica
// grants a voter that ranks below its rival.
func (t *stepper) rankedGrant(i int, end LogEnd, above bool) bool {
	if t.s.role == Prospective && !above {
		return false
	}
	r := int(t.s.rival) - 1
	return r < 0 || r == i || ranksAbove(end, t.s.c.voters[i], t.s.rivalLog(), t.s.c.voters[r])
}

// askAgain sends a Prospective's pre-vote again to voter i, a campaigner
// that ranks below it, unless i granted this round (D59). The voter may
// have rejected the first request as a Follower that had fetched from the
// leader (KIP-996), or its rejection may still be on the way; now that it
// campaigns itself it has given up on that leader and grants a
// higher-ranked replica. Without this the Prospective waits out its
// election timeout and a whole fetch timeout again. The request is an
// ordinary pre-vote, so nothing changes on the wire.
func (t *stepper) askAgain(i int) {
	if t.s.granted.has(i) {
		return
	}
	t.s.rejected = t.s.rejected.without(i)
	t.emitVoteRequest(t.voteRequest(t.s.c.voters[i], true))
}

// canGrantVote is each role's answer to a vote request (Kafka's
// EpochState.canGrantVote).
func (t *stepper) canGrantVote(candidate ReplicaKey, upToDate, preVote bool) bool {
	s := t.s
	switch s.role {
	case Unattached, Prospective:
		switch {
		case preVote:
			return upToDate
		case s.voted.ID != NoNode:
			// An idempotent re-grant to the same key; the log is not
			// checked again.
			return s.voted.Matches(candidate)
		case s.leader != NoNode:
			return false
		case s.c.local.ID == NoNode || candidate.ID == s.c.local.ID:
			// A replica without an id cannot persist a vote, and a
			// replica never grants itself a vote by request (Kafka throws
			// in both cases).
			return false
		}
		return upToDate
	case Candidate, Resigned:
		return preVote && upToDate
	case Follower:
		// KIP-996: a Follower rejects pre-votes once it has fetched from
		// its leader, unless that leader has since resigned (the fix
		// proposed in KAFKA-20895; docs/design.md, contract decision 3).
		return preVote && upToDate && (!s.fetched || s.leaderResigned)
	case Leader:
	}
	return false
}

// recordVote persists a granted standard vote (Kafka's
// unattachedAddVotedState and prospectiveAddVotedState). A Prospective
// starts over with a fresh tally and asks again the voters that had
// answered (their connections are free; the others are still in flight).
func (t *stepper) recordVote(candidate ReplicaKey) {
	t.s.voted = candidate
	t.persist()
	if !t.s.c.isVoter() {
		return
	}
	t.armElection(timerRandom)
	if t.s.role != Prospective {
		return
	}
	answered := t.s.granted | t.s.rejected
	t.newTally()
	for i, v := range t.s.c.voters {
		if i != t.s.c.localIndex && answered.has(i) {
			t.emitVoteRequest(t.voteRequest(v, true))
		}
	}
}

// onVoteResponse is Kafka's KafkaRaftClient.handleVoteResponse.
func (t *stepper) onVoteResponse(e ReceiveVoteResponse) {
	if e.Error == ErrUnsupportedVersion && t.s.role == Prospective {
		// The voter predates Vote v2: skip the pre-vote.
		t.toCandidate("voter does not support pre-vote")
		return
	}
	if t.s.role == Prospective && e.LeaderID >= 0 && e.LeaderID == t.s.c.local.ID {
		// KAFKA-16281: a Prospective ignores a response that names it
		// leader instead of failing. This happens to a replica that lost
		// its disk: it led an epoch it no longer remembers, and voters still
		// name it (any epoch, any error code).
		return
	}
	if !t.commonResponse(e.Epoch, e.LeaderID, e.Error) || e.Error != ErrNone {
		return
	}
	if t.s.role != Prospective && t.s.role != Candidate {
		return
	}
	// The tally is keyed by node id, as Kafka's EpochElection is: a Vote
	// response carries no directory id, so voterIndex (which needs the
	// stored directory id when there is one) would never match.
	i := VoterByID(t.s.c.voters, e.From)
	if i < 0 || i == t.s.c.localIndex {
		return
	}
	granted := e.VoteGranted
	if !granted && t.s.role == Prospective && t.s.granted.has(i) && !t.s.c.kafkaFailover {
		// D59: a grant stands for the round; a rejection the voter sent
		// before it (as a Follower) may arrive after it.
		return
	}
	if (granted && t.s.granted.has(i)) || (!granted && t.s.rejected.has(i)) ||
		(t.s.role == Candidate && (t.s.granted | t.s.rejected).has(i)) {
		// A repeat changes nothing; a Candidate never changes a recorded
		// verdict (Kafka throws, we ignore).
		return
	}
	if granted {
		t.s.granted, t.s.rejected = t.s.granted.with(i), t.s.rejected.without(i)
	} else {
		t.s.granted, t.s.rejected = t.s.granted.without(i), t.s.rejected.with(i)
	}
	switch {
	case granted && t.won() && t.s.role == Prospective && t.s.outranked():
		// A voter that ranks above this one campaigns (D59): wait for its
		// election, or for this round's election timer.
	case granted && t.won() && t.s.role == Prospective:
		t.toCandidate("won pre-vote")
	case granted && t.won():
		t.toLeader()
	case !granted && t.electionLost() && t.s.role == Prospective:
		// The round is over: the rival is forgotten (D59) and the round
		// counts half toward D105's bound. A rival that lost its disk (or
		// its voter key) never campaigns again in this epoch; kept, it
		// would have every voter refuse every pre-vote below it for good.
		t.s.endRound(false)
		t.afterElectionLoss(timerRandom, "lost pre-vote")
	}
	// A Candidate that lost waits for its election timer (KAFKA-18345).
}

// commonResponse is Kafka's KafkaRaftClient.maybeHandleCommonResponse for a
// response carrying the responder's epoch, leader and error. It returns
// true when the API-specific handling should go on.
func (t *stepper) commonResponse(epoch Epoch, leader NodeID, code ErrorCode) bool {
	leader = t.namedLeader(leader)
	switch {
	case epoch < t.s.epoch || code == ErrUnknownLeaderEpoch:
		return false
	case epoch > t.s.epoch || code == ErrFencedLeaderEpoch || code == ErrNotLeaderOrFollower:
		t.reconcile(epoch, leader, "response with a newer epoch")
		return false
	}
	if leader != NoNode && (t.s.role != Resigned || leader != t.s.c.local.ID) {
		// (A Resigned replica led this epoch: the voters it told of its
		// resignation answer naming it, which is consistent; Kafka checks
		// nothing here.)
		if !t.consistentLeader(epoch, leader) {
			t.inconsistentLeader(epoch, leader)
			return false
		}
		if t.s.leader == NoNode || (!t.s.endpoints && t.s.role != Leader && t.s.role != Resigned) {
			// Kafka's maybeHandleCommonResponse follows the newly named
			// leader first and handles the response only without an
			// error: an error answer (INVALID_REQUEST included) is then
			// done with, not fatal. A replica that knew the leader's id
			// but could not reach it (no endpoints: a voter whose stale
			// voter set lacks the leader) follows it too, as a request
			// naming it makes it (reconcile): Kafka's responses carry the
			// leader's endpoints. Otherwise a voter removed while it was
			// down stays Unattached for good, its pre-votes refused and
			// no leader ever contacting it (D94).
			t.toFollower(epoch, leader, "response names the leader")
			return code == ErrNone
		}
	}
	switch code {
	case ErrNone:
		return true
	case ErrInvalidRequest:
		t.failf("a response says our request of the current epoch was invalid")
	}
	return false
}

// toProspective starts a pre-vote in the current epoch (Kafka's
// transitionToProspective): memory only; leader, endpoints and vote are
// kept; a fresh election timer; pre-votes to every other voter. The only
// voter goes straight on to Candidate and Leader.
func (t *stepper) toProspective(reason string) {
	endpoints := t.s.endpoints
	t.become(Prospective, t.s.epoch, t.s.leader, t.s.voted, false, reason)
	t.s.endpoints = endpoints
	t.newTally()
	t.armElection(timerRandom)
	if t.won() && !t.s.outranked() {
		t.toCandidate("won pre-vote")
		return
	}
	t.requestVotes(true)
}

// toCandidate bumps the epoch and votes for itself (Kafka's
// transitionToCandidate): durable, fresh election timer, standard votes to
// every other voter. The only voter goes straight on to Leader.
func (t *stepper) toCandidate(reason string) {
	if t.s.epoch == maxEpoch {
		// The epoch cannot be bumped (only reachable with forged epochs);
		// stay rather than wrap around.
		return
	}
	t.become(Candidate, t.s.epoch+1, NoNode, t.s.c.local, true, reason)
	t.newTally()
	t.armElection(timerRandom)
	if t.maybeWin() {
		return
	}
	t.requestVotes(false)
}

// maybeWin makes a Candidate whose tally has a majority Leader.
func (t *stepper) maybeWin() bool {
	if t.s.role != Candidate || !t.won() {
		return false
	}
	t.toLeader()
	return true
}

// requestVotes sends a Vote request to every other voter.
func (t *stepper) requestVotes(preVote bool) {
	for i, v := range t.s.c.voters {
		if i == t.s.c.localIndex {
			continue
		}
		t.emitVoteRequest(t.voteRequest(v, preVote))
	}
}

func (t *stepper) voteRequest(to ReplicaKey, preVote bool) SendVoteRequest {
	return SendVoteRequest{
		To:              to,
		ClusterID:       t.s.c.clusterID,
		CandidateEpoch:  t.s.epoch,
		Candidate:       t.s.c.local,
		CandidateLogEnd: t.s.log.end,
		PreVote:         preVote,
	}
}
