package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/kraftquorum/kraft"
)

// Violation is a broken invariant. Rule names it:
//
//   - "one-leader-per-epoch": two replicas (two keys: a replica back from a
//     disk loss with a new directory id is another) led the same epoch,
//     whatever voter sets they had.
//   - "one-vote-per-epoch": a voter granted (or persisted) standard votes
//     for two candidates in one epoch, across restarts.
//   - "vote-durable": a voter persisted a record of an epoch in which it
//     voted without that vote (only a leader's own record drops it).
//   - "epoch-monotonic": a replica's in-memory or persisted epoch went down.
//   - "hwm-monotonic": a replica's high watermark went down (within one
//     life, and from the moment it became leader: a restart forgets it and
//     a new leader's starts unknown).
//   - "hwm-majority": a leader's high watermark is not held by a majority of
//     the voters' durable logs: the voters of the set in force at the
//     leader when its high watermark moved (the latest VotersRecord in its
//     log, committed or not, else the static set), each by its key.
//   - "hwm-own-epoch": a leader's high watermark does not end in a record of
//     its own epoch (a leader commits older records only through its own,
//     Raft's figure 8; Kafka's LeaderState.maybeUpdateHighWatermark).
//   - "committed-changed": a leader's log differs from the committed log
//     below its high watermark.
//   - "committed-lost": a replica lost or changed a committed record it held
//     durably.
//   - "leader-complete": a replica became Leader without every committed
//     record in its log (or in its snapshot, below its log start): Raft's
//     leader completeness, which Kafka's vote rule (a candidate's log at
//     least as up to date as each granting voter's) gives.
//   - "log-matching": a replica's log differs from the committed log below
//     its high watermark, or its high watermark is past the committed log.
//   - "persist-before-send": a message that depends on a persisted decision
//     (a new epoch, a vote, a leadership) left before the Persist.
//   - "record-matches-state": after a step, the durable record is not the
//     state's Record().
//   - "host-log": the state's written log end, flushed offset, log start or
//     snapshot ids differ from the host's, or the state asked the host to
//     read or truncate below its log start.
//   - "snapshot-beyond-hwm": a replica's host wrote a snapshot past the
//     replica's committed offset (the highest high watermark of its life,
//     or its latest snapshot's end after a restart): Kafka's
//     KafkaMetadataLog.createNewSnapshot refuses one.
//   - "snapshot-content": a snapshot a replica created or installed is not
//     the committed log up to its end (its records, and its epoch is not
//     that of the record before its end).
//   - "log-start": a replica's log starts past its earliest snapshot, or
//     past 0 with no snapshot at its start (records below the start are in
//     no snapshot).
//   - "host-snapshot": the state asked the host for a snapshot operation it
//     cannot do (serve a snapshot it does not have, write a chunk out of
//     place, install an incomplete or corrupt download).
//   - "one-voter-change": a leader's log holds more than one uncommitted
//     VotersRecord (past its high watermark, or past the committed log
//     while its high watermark is unknown), not counting the one it wrote
//     after its LeaderChange record at its epoch start (KIP-853: one
//     uncommitted change at a time).
//   - "voter-change-overlap": a VotersRecord entered the committed log
//     whose set differs from the previous committed set by more than one
//     voter added and one removed (their majorities need not meet).
//   - "removed-leader-resigns": a replica is still Leader after a step
//     that left its high watermark past a VotersRecord without it, with no
//     later set holding it (Kafka's leader resigns once its removal
//     commits).
//   - "host-voters": with a voter set in the log, the state's set in force
//     differs from the host's (the latest VotersRecord of its log, else
//     its latest snapshot's set, else its bootstrap set), checked at each
//     start, after each VotersAppended (at its offset) and after each
//     truncation.
//   - "fetch-flushed": a replica's host sent a Fetch to the leader of the
//     Fetch's epoch, whose voter set in force holds the replica's key, with
//     a fetch offset past the replica's durable log (its flushed prefix,
//     or its log start, below which a durable snapshot holds the records):
//     the leader counts the offset toward its high watermark, and a crash
//     can take those records back (docs/design.md D30, D52, D56).
//   - "fetch-answered": a running replica did not answer a Fetch request
//     within Options.FetchMaxWait of its delivery (a leader parks a Fetch
//     with nothing new that long at most, Kafka's long poll; every other
//     replica answers at once).
//   - "state-invariant": the state breaks one of State's own invariants
//     (kraft.State.CheckInvariants: a role's fields only in that role,
//     the high watermark within the log, ...), checked after every step.
//   - "fault": Step returned a Fault action.
//   - "restart", "trace": the host could not restart a replica or write the
//     trace.
type Violation struct {
	At     time.Duration
	Node   kraft.NodeID
	Rule   string
	Detail string
}

func (v Violation) Error() string {
	return fmt.Sprintf("sim: invariant %s violated at %v on replica %d: %s", v.Rule, v.At, v.Node, v.Detail)
}

type voteKey struct {
	voter kraft.NodeID
	disk  int
	epoch kraft.Epoch
}

type nodeCheck struct {
	memEpoch, diskEpoch kraft.Epoch
	hwm                 int64
	held                int
	// same is a length for which the replica's log is known to equal the
	// committed log (log[:same] == committed[:same]); every change to the
	// log below it lowers it, so the checks compare only past it.
	same             int
	dirty            bool
	prospectiveSince time.Duration
	// committed is the replica's committed offset in its current life: the
	// highest HighWatermarkChanged, or its latest snapshot's end at start.
	committed int64
}

// Checker checks the safety invariants after every event (see Violation)
// and records what liveness checks need.
type Checker struct {
	c       *Cluster
	leaders map[kraft.Epoch]kraft.ReplicaKey
	// committedVoters is the voter set of the committed log: the latest
	// VotersRecord in it, else the bootstrap (or static) set.
	committedVoters []kraft.ReplicaKey
	votes           map[voteKey]kraft.ReplicaKey
	committed       []Record
	per             []*nodeCheck
	// stepFrom is the state before the step whose actions are carried
	// out (the zero State at a start).
	stepFrom kraft.State
	// Checks counts the events after which the invariants were checked.
	Checks int
}

func newChecker(c *Cluster) *Checker {
	return &Checker{c: c, leaders: map[kraft.Epoch]kraft.ReplicaKey{}, votes: map[voteKey]kraft.ReplicaKey{}}
}

func (k *Checker) of(n *node) *nodeCheck {
	for int(n.id) >= len(k.per) {
		k.per = append(k.per, &nodeCheck{hwm: -1, prospectiveSince: -1, committed: -1})
	}
	return k.per[n.id]
}

func (k *Checker) fail(n *node, rule, format string, args ...interface{}) {
	k.c.fail(Violation{Node: n.id, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// Committed returns a copy of the committed log.
func (k *Checker) Committed() []Record { return append([]Record(nil), k.committed...) }

func (k *Checker) committedLen() int { return len(k.committed) }

// logChanged marks n's log as changed anywhere: every record is compared
// again.
func (k *Checker) logChanged(n *node) { k.logChangedFrom(n, 0) }

// logChangedFrom marks n's log as changed from offset off on; the records
// before off are as they were (an append passes the old length, a
// truncation the new one).
func (k *Checker) logChangedFrom(n *node, off int) {
	p := k.of(n)
	p.dirty = true
	if off < p.same {
		p.same = off
	}
}

// matched returns the length, at most limit, of the prefix of n's log that
// equals the committed log (firstDiff(n.log, k.committed, limit)),
// comparing only past what is known to match. The records below n's log
// start are in its snapshot at the start, whose content was checked
// against the committed log when it was created or installed.
func (k *Checker) matched(n *node, limit int) int {
	p := k.of(n)
	i := p.same
	if i < n.start {
		i = n.start
	}
	if i > len(n.log) {
		i = len(n.log)
	}
	if i > limit {
		return limit
	}
	for i < limit && i < len(n.log) && i < len(k.committed) && n.log[i] == k.committed[i] {
		i++
	}
	if i > p.same {
		p.same = i
	}
	return i
}

// sameLogs reports whether a's and b's logs agree on their first m
// records; both are known to equal the committed log up to their own
// matched lengths, so only the records past the shorter one are compared.
func (k *Checker) sameLogs(a, b *node, m int) bool {
	from := k.of(a).same
	if s := k.of(b).same; s < from {
		from = s
	}
	for i := from; i < m; i++ {
		if i >= len(a.log) || i >= len(b.log) || k.recAt(a, i) != k.recAt(b, i) {
			return false
		}
	}
	return true
}

// recAt is n's record at offset i (< len(n.log)): below its log start,
// the committed record its snapshot holds.
func (k *Checker) recAt(n *node, i int) Record {
	if i >= n.start {
		return n.log[i]
	}
	if i < len(k.committed) {
		return k.committed[i]
	}
	return Record{Epoch: -1, Payload: "below the log start, past the committed log"}
}

func (k *Checker) diskLost(n *node) {
	p := k.of(n)
	p.memEpoch, p.diskEpoch, p.held, p.hwm, p.same = 0, 0, 0, -1, 0
	p.dirty = true
}

// diskDamaged notes that n's disk lost its log from offset from on (the
// planted bug plant.TornTail cut it there): the disk lost those records,
// not the protocol, so "committed-lost" starts again from what is left;
// what the checks then catch is what the cluster does with the shorter
// log under the replica's old key and vote.
func (k *Checker) diskDamaged(n *node, from int) {
	p := k.of(n)
	if p.held > from {
		p.held = from
	}
	k.logChangedFrom(n, from)
}

func (k *Checker) afterStart(n *node, _ kraft.State) {
	p := k.of(n)
	p.hwm = -1
	p.committed = -1
	if s := n.latestSnapshot(); s != nil {
		p.committed = s.id.Offset
	}
	k.logChangedFrom(n, len(n.log))
}

// snapshotCreated checks a snapshot n's host wrote, before the state
// hears of it: at or below n's committed offset, and the committed log up
// to its end.
func (k *Checker) snapshotCreated(n *node, s *snapshot) {
	if p := k.of(n); s.id.Offset > p.committed {
		k.fail(n, "snapshot-beyond-hwm", "snapshot %+v ends past the replica's committed offset %d", s.id, p.committed)
		return
	}
	k.snapshotContent(n, s, "created")
}

// snapshotInstalled checks a snapshot n downloaded, before the host resets
// its log to it.
func (k *Checker) snapshotInstalled(n *node, s *snapshot) {
	k.snapshotContent(n, s, "installed")
}

func (k *Checker) snapshotContent(n *node, s *snapshot, how string) {
	off := s.id.Offset
	switch {
	case off > int64(len(k.committed)):
		k.fail(n, "snapshot-content", "%s snapshot %+v ends past the committed log (%d records)", how, s.id, len(k.committed))
		return
	case int64(len(s.recs)) != off:
		k.fail(n, "snapshot-content", "%s snapshot %+v holds %d records", how, s.id, len(s.recs))
		return
	case off > 0 && k.committed[off-1].Epoch != s.id.Epoch:
		k.fail(n, "snapshot-content", "%s snapshot %+v: the record before its end is of epoch %d", how, s.id, k.committed[off-1].Epoch)
		return
	}
	for i, r := range s.recs {
		if r != k.committed[i] {
			k.fail(n, "snapshot-content", "%s snapshot %+v differs from the committed log at %d: %+v, committed %+v", how, s.id, i, r, k.committed[i])
			return
		}
	}
}

// logStartMoved notes that n's log now starts at n.start: the records
// below it are in a snapshot checked against the committed log.
func (k *Checker) logStartMoved(n *node) {
	p := k.of(n)
	if p.same < n.start {
		p.same = n.start
	}
	p.dirty = true
}

func durable(n *node) kraft.QuorumRecord {
	if n.record == nil {
		return kraft.EmptyRecord()
	}
	return *n.record
}

// PersistBeforeSend checks that message action a of replica self, made by
// a step on event e, relies only on what the durable record d holds (the
// README's host contract, rule 1): a granted standard vote and a standard
// vote request need the vote persisted, BeginQuorumEpoch and
// EndQuorumEpoch the record naming self leader of their epoch, a Fetch or
// a FetchSnapshot to a leader the record naming that leader and epoch, an
// AddRaftVoter or RemoveRaftVoter request (SendVoterChange) the record
// naming its addressee leader, a leader's ApiVersions request the record
// naming self leader, and no message may carry an epoch the record has not
// reached. Each message says what it relies on beside its type
// (kraft.RelianceOf, docs/design.md D282); this checks it against d. It
// returns what is wrong, or "" for an action that does not leave the
// replica (Outbound); a message with no reliance fails every run that
// sends it (TestPersistBeforeSendKnowsEveryAction, D115). The explorer
// checks with it too.
func PersistBeforeSend(self kraft.ReplicaKey, d kraft.QuorumRecord, a kraft.Action, e kraft.Event) string {
	r, ok := kraft.RelianceOf(self, a, e)
	if !ok {
		if Outbound(a) {
			return fmt.Sprintf("%T leaves the replica but has no persist-before-send rule", a)
		}
		return ""
	}
	if r.HasEpoch && r.Epoch > d.Epoch {
		return fmt.Sprintf("%s carries epoch %d but the durable record is %+v", r.What, r.Epoch, d)
	}
	if r.InEpoch && d.Epoch != r.Epoch {
		return fmt.Sprintf("%s in epoch %d sent with durable record %+v", r.What, r.Epoch, d)
	}
	if r.NamesLeader && d.LeaderID != r.Leader {
		return fmt.Sprintf("%s relying on leader %d sent with durable record %+v", r.What, r.Leader, d)
	}
	if r.Vote && !d.VotedKey.Matches(r.Voted) {
		return fmt.Sprintf("%s relying on a vote for %v sent with durable record %+v", r.What, r.Voted, d)
	}
	return ""
}

// beforeAction checks an action of n's step before the host carries it
// out; e is the event of the step (nil at start).
func (k *Checker) beforeAction(n *node, a kraft.Action, e kraft.Event) {
	d := durable(n)
	p := k.of(n)
	if Outbound(a) {
		if detail := PersistBeforeSend(n.cfg.Local, d, a, e); detail != "" {
			k.fail(n, "persist-before-send", "%s", detail)
			return
		}
	}
	switch a := a.(type) {
	case kraft.Persist:
		r := a.Record
		if rule, detail := PersistRule(n.cfg.Local, d, n.record != nil, r); rule != "" {
			k.fail(n, rule, "%s", detail)
			return
		}
		// The same rules over the disk's whole history (a record rolled
		// back by damage the host missed is caught here).
		if r.Epoch < p.diskEpoch {
			k.fail(n, "epoch-monotonic", "persisted epoch %d after %d", r.Epoch, p.diskEpoch)
			return
		}
		p.diskEpoch = r.Epoch
		if r.HasVote() {
			k.vote(n, r.Epoch, r.VotedKey)
		} else if v, ok := k.votes[voteKey{voter: n.id, disk: n.disk, epoch: r.Epoch}]; ok && r.LeaderID != n.id {
			// Only a leader's own record drops its self-vote (Kafka's
			// LeaderState.election); every other record of the epoch keeps
			// the vote (Kafka's QuorumState.transitionToUnattached and
			// transitionToFollower).
			k.fail(n, "vote-durable", "persisted %+v, forgetting its vote for %v in epoch %d", r, v, r.Epoch)
		}
	case kraft.SendVoteResponse:
		if a.VoteGranted {
			if req, isReq := e.(kraft.ReceiveVoteRequest); isReq && !req.PreVote {
				k.vote(n, a.Epoch, kraft.ReplicaKey{ID: req.Candidate, DirectoryID: req.CandidateDirectoryID})
			}
		}
	case kraft.HighWatermarkChanged:
		if a.HighWatermark > p.committed {
			p.committed = a.HighWatermark
		}
		// A leader's, also in the step that ends its leadership (a leader
		// whose removal commits resigns in that step).
		if was := k.stepFrom; n.st.Role() == kraft.Leader || (was.Role() == kraft.Leader && was.Epoch() == n.st.Epoch()) {
			k.leaderHighWatermark(n, a.HighWatermark)
		}
	case kraft.Fault:
		k.fail(n, "fault", "Step returned Fault %q on %v after %T %+v", a.Reason, n.st, e, e)
	case kraft.TruncateLog, kraft.AppendLeaderChange, kraft.AppendFetched, kraft.ResetTimer, kraft.StopTimer, kraft.RoleChanged:
	case kraft.LeaderRefused:
		// A refusal is no violation (docs/design.md D113): the refusing
		// replica keeps its log, and the rules above check what it does.
	}
}

// fetchSent checks a Fetch from offset at epoch that n's replica sends to
// replica to ("fetch-flushed"), at the moment it leaves, retries included:
// if to leads the Fetch's epoch and its voter set in force holds n, the
// fetch offset must be within n's durable log.
func (k *Checker) fetchSent(n *node, to kraft.NodeID, offset int64, epoch kraft.Epoch) {
	if to < 0 || int(to) >= len(k.c.nodes) {
		return
	}
	l := k.c.nodes[to]
	if !l.up || l.st.Role() != kraft.Leader || l.st.Epoch() != epoch || !hasKey(l.st.Voters(), n.cfg.Local) {
		return
	}
	durable := n.flushed
	if n.start > durable {
		durable = n.start
	}
	if offset > int64(durable) {
		k.fail(n, "fetch-flushed", "sent a Fetch from offset %d to r%d, leader of epoch %d whose voter set %v holds it, with its log durable up to %d only (%v)",
			offset, to, l.st.Epoch(), l.st.Voters(), durable, n.st)
	}
}

func (k *Checker) vote(n *node, epoch kraft.Epoch, cand kraft.ReplicaKey) {
	key := voteKey{voter: n.id, disk: n.disk, epoch: epoch}
	if prev, ok := k.votes[key]; ok && prev != cand {
		k.fail(n, "one-vote-per-epoch", "voted for %v and for %v in epoch %d", prev, cand, epoch)
		return
	}
	k.votes[key] = cand
}

// leaderHighWatermark checks a leader's new high watermark h and extends the
// committed log.
func (k *Checker) leaderHighWatermark(n *node, h int64) {
	var atH kraft.Epoch
	holders := 0
	voters := n.st.Voters()
	if h > 0 && h <= int64(len(n.log)) {
		atH = k.recAt(n, int(h-1)).Epoch
		for _, v := range voters {
			if v.ID < 0 || int(v.ID) >= len(k.c.nodes) {
				continue
			}
			o := k.c.nodes[v.ID]
			// A replica that lost its disk counts as a holder: the leader
			// may still count the position it fetched before the loss
			// (Kafka's data-loss simulation drops
			// MajorityReachedHighWatermark). With directory ids the
			// voter's key is gone then (the replica has another); without,
			// the replica's id is all there is.
			gone := o.cfg.Local != v || (!k.c.opts.Dynamic && o.disk > 0)
			if gone || (int64(o.flushed) >= h && k.sameLogs(o, n, int(h))) {
				holders++
			}
		}
	}
	if rule, detail := LeaderHighWatermarkRule(h, int64(len(n.log)), n.st.Epoch(), atH, holders, len(voters)); rule != "" {
		k.fail(n, rule, "%s (voters %v)", detail, voters)
		return
	}
	m := len(k.committed)
	if int(h) < m {
		m = int(h)
	}
	if d := k.matched(n, m); d < m {
		k.fail(n, "committed-changed", "leader's log differs from the committed log below %d (first difference at %d)", m, d)
		return
	}
	if int(h) > len(k.committed) {
		if len(k.committed) < n.start {
			k.fail(n, "committed-changed", "leader's log starts at %d, past the committed log (%d records)", n.start, len(k.committed))
			return
		}
		from := len(k.committed)
		k.committed = append(k.committed, n.log[from:h]...)
		for _, p := range k.per {
			p.dirty = true
		}
		k.votersCommitted(n, from)
	}
}

// votersCommitted checks the VotersRecords that entered the committed log
// at from and after ("voter-change-overlap") and records the committed
// voter set.
func (k *Checker) votersCommitted(n *node, from int) {
	for i := from; i < len(k.committed); i++ {
		vs, ok := parseVoters(k.committed[i].Payload)
		if !ok {
			continue
		}
		if !singleChange(k.committedVoters, vs) {
			k.fail(n, "voter-change-overlap", "the VotersRecord at %d (%v) committed after the set %v: more than one voter changed", i, vs, k.committedVoters)
			return
		}
		k.committedVoters = vs
		k.c.voters = vs
		k.c.stats.VoterChangesCommitted++
		k.c.history = append(k.c.history, VoterSetChange{At: k.c.now, Offset: int64(i), Voters: append([]kraft.ReplicaKey(nil), vs...)})
	}
}

// hostVoters checks the state's voter set against the host's log at a
// start (e nil), after a VotersAppended and after a truncation
// ("host-voters"); records written and not reported yet do not count.
func (k *Checker) hostVoters(n *node, s kraft.State, e kraft.Event) bool {
	off := int(s.LogEnd().Offset) - 1
	switch e := e.(type) {
	case nil:
	case kraft.VotersAppended:
		off = int(e.Offset)
	default:
		if !n.truncated {
			return true
		}
	}
	n.truncated = false
	host := n.votersAt(off)
	state := s.Voters()
	same := len(host) == len(state)
	for i := 0; same && i < len(host); i++ {
		same = host[i] == state[i]
	}
	if !same {
		k.fail(n, "host-voters", "the state's voter set is %v, the host's log at %d says %v (after %T)", state, off, host, e)
	}
	return same
}

// leaderVoters checks a leader's log after its step: at most one
// uncommitted voter change ("one-voter-change"), and no leadership left
// once its removal committed ("removed-leader-resigns").
func (k *Checker) leaderVoters(n *node, s kraft.State) {
	bound := int(s.HighWatermark())
	if bound < 0 {
		bound = len(k.committed)
	}
	if bound < n.start {
		bound = n.start
	}
	pending := -1
	for i := bound; i < len(n.log); i++ {
		r := n.log[i]
		if !isVoters(r) {
			continue
		}
		if i > 0 && r.Epoch == s.Epoch() {
			if p := k.recAt(n, i-1); p.Epoch == r.Epoch && strings.HasPrefix(p.Payload, "LeaderChange(") {
				continue // the set in force written at the epoch start
			}
		}
		if pending >= 0 {
			k.fail(n, "one-voter-change", "leader of epoch %d (high watermark %d) has uncommitted VotersRecords at %d and %d", s.Epoch(), s.HighWatermark(), pending, i)
			return
		}
		pending = i
	}
	if h := s.HighWatermark(); h > 0 && !s.IsVoter() {
		if vs := n.votersAt(int(h) - 1); vs != nil && !hasKey(vs, s.Local()) {
			k.fail(n, "removed-leader-resigns", "still leader of epoch %d with its removal committed (high watermark %d, committed set %v)", s.Epoch(), h, vs)
		}
	}
}

// afterStep checks n after a step (or a restart, e nil).
func (k *Checker) afterStep(n *node, before kraft.State, e kraft.Event) {
	if k.c.err != nil || !n.up {
		return
	}
	p := k.of(n)
	s := n.st
	if err := s.CheckInvariants(); err != nil {
		k.fail(n, "state-invariant", "%v after %T (%v)", err, e, s)
		return
	}
	if s.Epoch() < p.memEpoch {
		k.fail(n, "epoch-monotonic", "epoch went from %d to %d (%v after %T)", p.memEpoch, s.Epoch(), s, e)
		return
	}
	p.memEpoch = s.Epoch()
	if s.Role() == kraft.Leader {
		if l, ok := k.leaders[s.Epoch()]; ok && l != s.Local() {
			k.fail(n, "one-leader-per-epoch", "replicas %v and %v both led epoch %d", l, s.Local(), s.Epoch())
			return
		}
		k.leaders[s.Epoch()] = s.Local()
		if before.Role() != kraft.Leader || before.Epoch() != s.Epoch() {
			if m := len(k.committed); k.matched(n, m) < m {
				k.fail(n, "leader-complete", "became leader of epoch %d with %d records matching the committed log of %d (log [%d, %d))",
					s.Epoch(), k.matched(n, m), m, n.start, len(n.log))
				return
			}
		}
		if k.c.opts.Dynamic {
			k.leaderVoters(n, s)
			if k.c.err != nil {
				return
			}
		}
	}
	if k.c.opts.Dynamic && !k.hostVoters(n, s, e) {
		return
	}
	if d := durable(n); s.Record() != d {
		k.fail(n, "record-matches-state", "state %v has record %+v but the durable record is %+v (after %T)", s, s.Record(), d, e)
		return
	}
	if HighWatermarkRestarts(before, s) {
		p.hwm = -1
	}
	if h := s.HighWatermark(); h < p.hwm {
		k.fail(n, "hwm-monotonic", "high watermark went from %d to %d", p.hwm, h)
		return
	}
	p.hwm = s.HighWatermark()
	if s.Role() == kraft.Prospective {
		if p.prospectiveSince < 0 {
			p.prospectiveSince = k.c.now
		}
	} else {
		p.prospectiveSince = -1
	}
	p.dirty = true
}

// afterEvent checks the logs of the replicas that changed.
func (k *Checker) afterEvent() {
	k.Checks++
	for _, n := range k.c.nodes {
		p := k.of(n)
		if !p.dirty {
			continue
		}
		p.dirty = false
		limit := n.flushed
		if limit > len(k.committed) {
			limit = len(k.committed)
		}
		held := k.matched(n, limit)
		if held < p.held {
			k.fail(n, "committed-lost", "replica held committed records up to %d durably, now only up to %d", p.held, held)
			return
		}
		p.held = held
		if !k.logStartOK(n) {
			return
		}
		if !n.up {
			continue
		}
		h := n.st.HighWatermark()
		if h > int64(len(k.committed)) {
			k.fail(n, "log-matching", "high watermark %d is past the committed log (%d records)", h, len(k.committed))
			return
		}
		if d := k.matched(n, int(h)); h > 0 && d < int(h) {
			k.fail(n, "log-matching", "log differs from the committed log at %d, below the high watermark %d", d, h)
			return
		}
		if want := n.end(); n.st.LogEnd() != want || n.st.FlushedOffset() != int64(n.flushed) || n.st.LogStart() != int64(n.start) {
			k.fail(n, "host-log", "state's log [%d, %+v) flushed %d, host's written log [%d, %+v) flushed %d",
				n.st.LogStart(), n.st.LogEnd(), n.st.FlushedOffset(), n.start, want, n.flushed)
			return
		}
		if !k.snapshotsAgree(n) {
			return
		}
	}
}

// logStartOK checks n's log start against its snapshots ("log-start").
func (k *Checker) logStartOK(n *node) bool {
	switch {
	case n.start > 0 && len(n.snaps) == 0:
		k.fail(n, "log-start", "the log starts at %d and the host has no snapshot", n.start)
		return false
	case len(n.snaps) > 0 && int64(n.start) > n.snaps[0].id.Offset:
		k.fail(n, "log-start", "the log starts at %d, past the earliest snapshot %+v", n.start, n.snaps[0].id)
		return false
	case n.start > 0 && int64(n.start) != n.snaps[0].id.Offset:
		k.fail(n, "log-start", "the log starts at %d, before the earliest snapshot %+v: records below it are in no snapshot", n.start, n.snaps[0].id)
		return false
	}
	return true
}

// snapshotsAgree checks the state's snapshot ids against the host's
// ("host-log").
func (k *Checker) snapshotsAgree(n *node) bool {
	latest, lok := n.st.LatestSnapshot()
	earliest, eok := n.st.EarliestSnapshot()
	if len(n.snaps) == 0 {
		if lok || eok {
			k.fail(n, "host-log", "the state knows snapshots %+v and %+v, the host has none", earliest, latest)
			return false
		}
		return true
	}
	if !lok || !eok || latest != n.snaps[len(n.snaps)-1].id || earliest != n.snaps[0].id {
		k.fail(n, "host-log", "the state's snapshots are %+v to %+v (%v), the host's %+v to %+v",
			earliest, latest, lok, n.snaps[0].id, n.snaps[len(n.snaps)-1].id)
		return false
	}
	return true
}

// fetchesAnswered checks that every running replica answered each Fetch
// delivered to it within the fetch max wait ("fetch-answered").
func (k *Checker) fetchesAnswered() {
	for _, n := range k.c.nodes {
		if !n.up {
			continue
		}
		for key, p := range n.requests {
			if p.fetch && k.c.now-p.at > k.c.opts.FetchMaxWait {
				k.fail(n, "fetch-answered", "the Fetch of r%d (correlation id %d) delivered at %v is not answered after %v (%v)",
					key.from, key.corr, p.at, k.c.now-p.at, n.st)
				return
			}
		}
	}
}

// ProspectiveFor returns how long replica id has been Prospective without
// a break (0 if it is not Prospective).
func (k *Checker) ProspectiveFor(id kraft.NodeID) time.Duration {
	if int(id) >= len(k.per) || k.per[id].prospectiveSince < 0 {
		return 0
	}
	return k.c.now - k.per[id].prospectiveSince
}
