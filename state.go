package kraft

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Role is a replica's role in the quorum (Kafka's EpochState classes).
type Role uint8

// The roles. Observers are only ever Unattached or Follower.
const (
	// Unattached: no leader to follow (or a leader id without a way to reach
	// it); a voter waits for its election timer, an observer searches.
	Unattached Role = iota + 1
	// Prospective: a voter running a KIP-996 pre-vote in its current epoch.
	Prospective
	// Candidate: a voter that won the pre-vote, bumped the epoch, voted
	// for itself and asks for standard votes.
	Candidate
	// Leader: elected leader of the epoch.
	Leader
	// Follower: fetches from the known leader of the epoch.
	Follower
	// Resigned: a former leader that gave up leadership of its epoch and
	// waits for a successor.
	Resigned
)

// String names the role as Kafka does.
func (r Role) String() string {
	switch r {
	case Unattached:
		return "Unattached"
	case Prospective:
		return "Prospective"
	case Candidate:
		return "Candidate"
	case Leader:
		return "Leader"
	case Follower:
		return "Follower"
	case Resigned:
		return "Resigned"
	}
	return "Role?"
}

// settings is the immutable per-replica configuration shared by every State
// of one replica, with the durations and boxed timer actions derived from it
// once (so hot paths do not allocate them).
type settings struct {
	local      ReplicaKey
	localIndex int // index in voters, -1 for an observer
	clusterID  uuid.NullUUID
	voters     []ReplicaKey
	// voterIDs are the voters' ids, for voterIndexOf on every Fetch: a
	// scan of 4-byte ids, measured 20-30% faster on the leader's ack than
	// VoterByID's scan of the 20-byte keys.
	voterIDs []NodeID

	electionTimeout time.Duration
	fetchTimeout    time.Duration
	backoffMax      time.Duration
	checkQuorum     time.Duration // floor(1.5 * T_f), in whole milliseconds
	beginPeriod     time.Duration // floor(T_f / 2), in whole milliseconds

	resetFetch       Action
	resetCheckQuorum Action
	resetBegin       Action
	// kafkaFailover: Config.KafkaFailover (no D59 refinements).
	kafkaFailover bool
	// static is Config.Voters, the set in force while the log has never
	// held one; dynamic says the log holds or has held one (kraft.version
	// 1). Once set, dynamic stays: a log whose every set was truncated away
	// has an empty set in force, never the static one (D56). voters,
	// voterIDs, localIndex and followerFetch follow the set in force: a
	// change of the set gives the State a new settings (withVoters).
	static  []ReplicaKey
	dynamic bool
	// fetchAhead: this replica may Fetch past its flushed offset. Only an
	// observer of a static quorum (Config.Voters set, this replica not in
	// it, no voter set ever in the log), which no leader counts, may; any
	// other replica waits for its flush whatever its current view of the
	// voter set (D30, D52, D56).
	fetchAhead     bool
	autoJoin       bool
	requestTimeout time.Duration
	// rankWait[r] arms a voter Follower's fetch timer for its rank's
	// offset (D59: r steps; D78: once T_f has passed without a fetch, the
	// Follower grants pre-votes and waits this long before campaigning);
	// rankBelow voters have a lower key than the local one, the leader
	// perhaps among them (it is left out of the rank). Unused with
	// Config.KafkaFailover and for an observer.
	rankWait  [rankSteps + 1]Action
	rankBelow int
}

// rankSteps: a voter Follower's fetch timer runs T_f plus min(rank,
// rankSteps) steps of T_e/rankStepDivisor, rank being how many voters have
// a lower replica key (D59): on a leader's crash the survivors time out in
// the order in which they rank on equal logs, a step apart, rather than at
// the same instant.
const (
	rankSteps       = 2
	rankStepDivisor = 64
)

// rankBelow is how many voters have a key lower than local's.
func rankBelow(voters []ReplicaKey, local ReplicaKey) int {
	rank := 0
	for _, v := range voters {
		if v.Compare(local) < 0 {
			rank++
		}
	}
	return rank
}

// rankOffset is the fetch timer offset of a replica with rank voters
// ranked before it (D59).
func rankOffset(rank int, te time.Duration) time.Duration {
	if rank > rankSteps {
		rank = rankSteps
	}
	return time.Duration(rank) * (te / rankStepDivisor)
}

// newSettings derives a replica's settings from its Config, with the voter
// set in force from the log (log.ok) or, without one, Config.Voters.
func newSettings(c Config, log VoterSetAt, ok bool) *settings {
	s := &settings{
		local:           c.Local,
		clusterID:       c.ClusterID,
		electionTimeout: orDefault(c.ElectionTimeout, DefaultElectionTimeout),
		fetchTimeout:    orDefault(c.FetchTimeout, DefaultFetchTimeout),
		backoffMax:      orDefault(c.ElectionBackoffMax, DefaultElectionBackoffMax),
		requestTimeout:  orDefault(c.RequestTimeout, DefaultRequestTimeout),
		static:          append([]ReplicaKey(nil), c.Voters...),
		autoJoin:        c.AutoJoin,
	}
	s.checkQuorum, s.beginPeriod = leaderPeriods(s.fetchTimeout)
	s.resetFetch = ResetTimer{Timer: FetchTimer, After: s.fetchTimeout}
	s.resetCheckQuorum = ResetTimer{Timer: CheckQuorumTimer, After: s.checkQuorum}
	s.resetBegin = ResetTimer{Timer: BeginQuorumEpochTimer, After: s.beginPeriod}
	s.kafkaFailover = c.KafkaFailover
	voters := s.static
	if ok {
		voters = log.Voters
	}
	return s.withVoters(voters, ok)
}

// withVoters is s with voters in force (dynamic: from the log). s is
// shared by older States and never written; the result is a copy unless
// nothing changes.
func (c *settings) withVoters(voters []ReplicaKey, dynamic bool) *settings {
	if c.voterIDs != nil && sameKeys(c.voters, voters) && c.dynamic == dynamic {
		return c
	}
	s := *c
	s.voters = voters
	s.dynamic = dynamic
	s.fetchAhead = !dynamic && len(s.static) > 0 && voterIndex(s.static, s.local) < 0
	s.localIndex = voterIndex(voters, s.local)
	s.voterIDs = make([]NodeID, len(voters))
	for i, v := range voters {
		s.voterIDs[i] = v.ID
	}
	s.rankBelow = rankBelow(voters, s.local)
	for r := range s.rankWait {
		s.rankWait[r] = ResetTimer{Timer: FetchTimer, After: rankOffset(r, s.electionTimeout)}
	}
	return &s
}

// sameKeys reports whether a and b are the same keys in the same order.
func sameKeys(a, b []ReplicaKey) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// leaderPeriods are the leader's check-quorum window and BeginQuorumEpoch
// re-send period for a fetch timeout tf. Kafka's LeaderState computes them
// in whole milliseconds, (int) (fetchTimeoutMs * 1.5) and fetchTimeoutMs / 2,
// so kraft rounds down to the millisecond too; a fetch timeout below a
// millisecond (tests only) keeps nanoseconds.
func leaderPeriods(tf time.Duration) (checkQuorum, begin time.Duration) {
	unit := time.Millisecond
	if tf < unit {
		unit = 1
	}
	ms := int64(tf / unit)
	return time.Duration(ms*3/2) * unit, time.Duration(ms/2) * unit
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func (c *settings) isVoter() bool { return c.localIndex >= 0 }

// voterIndex is voterIndex(c.voters, key).
func (c *settings) voterIndex(key ReplicaKey) int {
	return c.voterIndexOf(key.ID, &key.DirectoryID)
}

// voterIndexOf is the index of the voter that key (id, *dir) matches, or
// -1: voter ids are unique (Config.Validate), so the first id that matches
// decides.
func (c *settings) voterIndexOf(id NodeID, dir *uuid.UUID) int {
	if id < 0 {
		return -1
	}
	for i, v := range c.voterIDs {
		if v == id {
			if d := &c.voters[i].DirectoryID; *d == uuid.Nil || *d == *dir {
				return i
			}
			return -1
		}
	}
	return -1
}

// State is one replica's quorum state: an immutable value. Step returns a
// new State and never changes the one it was given; old States stay valid
// and may be kept, compared, replayed or forked. The zero State is not
// usable: build one with NewState.
type State struct {
	c *settings

	// The fields are grouped so that the struct has little padding: a
	// State is copied on every step. "Invariant:" notes say what holds of
	// a field in every State NewState and Step return; checkInvariants
	// (invariants.go) checks them all, after every step of the tests,
	// and the replica layer after every step (D200). Each note names the
	// InvariantError Rule that reports it broken. c's local index must
	// name the local key among the voters (rule "local-index").

	// Invariant (rule "role"): one of the roles, Unattached to Resigned.
	role Role
	// endpoints: this replica can reach the known leader (Kafka's non-empty
	// leader endpoints). True in Follower, Leader and Resigned, carried into
	// Prospective, false in Unattached and Candidate.
	// Invariant (rule "endpoints"): as said, by role.
	endpoints bool
	// Follower: a fetch from the leader succeeded since this Follower role
	// began (Kafka's hasFetchedFromLeader) and since the fetch timer last
	// fired (D78: a voter whose leader was silent for T_f waits its rank's
	// offset with fetched false, granting pre-votes), and the leader has resigned
	// (an EndQuorumEpoch arrived; then pre-votes are granted again, the fix
	// proposed in KAFKA-20895). Invariant (rule "follower-fields"): both
	// false unless Follower.
	fetched        bool
	leaderResigned bool
	// Follower (voter): a voter that ranks below this one asked for its
	// pre-vote while its leader was still heard from, and was refused: an
	// election may be on. If the leader then resigns, this replica
	// campaigns at once (D79). Invariant (rule "follower-fields"): false
	// unless Follower.
	lowerAsked bool
	// Follower (voter): the next Fetch waits for the written log to be
	// flushed (D30); LogFlushed sends it. Invariant (rule
	// "fetch-pending"): false unless Follower or Unattached (an observer's search waits the same way).
	fetchPending bool
	// Follower (auto-joining observer): a join request went out and the
	// voter-change timer runs before the next (D53). Invariant (rule
	// "follower-fields"): false unless Follower.
	joinWait bool
	// refused: this replica refuses to follow the leader of its epoch,
	// which asked it to remove records below its high watermark (D113).
	// Cleared when the epoch or the leader changes, and by a Fetch
	// response of that leader that the replica takes. Invariant (rule
	// "refusal"): only
	// with a leader other than this replica, and only in Follower,
	// Prospective or Unattached.
	refused bool
	// rival is the voter that ranks highest among the campaigners this
	// replica heard of in its epoch, if it ranks above this replica (its
	// voter index plus one; 0 for none), and rivalEpoch and rivalOffset
	// are its log end (rivalLog; D59). While there is one, a Prospective
	// does not become Candidate, and no pre-vote goes to a voter that
	// ranks below it. It is forgotten with the epoch, when a pre-vote round
	// times out, and when the voter set changes. (Two fields rather than a
	// LogEnd keep the State 8 bytes smaller.) Invariant (rule "rival"):
	// rival <= the number of voters.
	rival uint8
	// rivalHeld counts, in this epoch, the pre-vote rounds of this replica
	// that ended while a rival held it back: a round that timed out counts
	// 2, a lost one 1. At rivalSpent it notes no rival again until the
	// epoch changes, so a rival that cannot win holds a voter back for one
	// timed-out round, or two lost ones, at most (D105). Invariant (rule
	// "rival"): rivalHeld <= rivalSpent, and rival is 0 when they are equal.
	rivalHeld uint8
	// Invariants: epoch >= 0 (rule "epoch"); a Leader's leader is itself
	// ("leader-named"), a Follower's another replica ("follower-leader"),
	// a Candidate's none ("candidate-leader"); voted is NoReplica (a
	// Leader's always: "leader-vote") or a vote in epoch, a Candidate's
	// for itself ("candidate-vote"), with no directory id without a vote
	// id ("vote-directory") (the record holds only the current epoch's
	// vote, so a vote never outlives its epoch: voteIn); only voters are
	// Prospective or Candidate ("observer-role").
	epoch       Epoch
	leader      NodeID
	rivalEpoch  Epoch
	voted       ReplicaKey // NoReplica when there is no vote
	rivalOffset int64

	// hwm is the quorum's high watermark as Kafka's QuorumState keeps it
	// (a new leader's starts unknown), committed the log's: the highest
	// high watermark this replica has known, never reset. -1 if unknown.
	// Invariants: -1 <= hwm <= committed <= log end offset (rule
	// "high-watermark"); the log end is not negative ("log-end"); log
	// start <= flushed ("log-start") <= log end offset ("log-flushed")
	// (logView).
	hwm       int64
	committed int64
	log       logView
	rng       uint64

	// Follower: the snapshot being downloaded from the leader (Kafka's
	// FollowerState.fetchingSnapshot), nil when none (D43). Shared
	// between states and never written: each chunk makes a new one.
	// Invariant: nil unless Follower (rule "follower-fields"); its
	// offsets and bytes written not negative ("download").
	download *snapshotDownload

	// Prospective, Candidate: the election tally, as sets of voter
	// indexes (bit i is voter i) that granted and rejected. Invariant
	// (rule "tally"): empty unless Prospective or Candidate; disjoint; only voter indexes.
	granted, rejected voterSet

	// Leader: where its epoch starts; each voter's end offset by voter
	// index (the fetch offset of its last valid Fetch, -1 if unknown;
	// voterEnds keeps old states' values); the voters that
	// fetched in the current check-quorum window and since the last
	// BeginQuorumEpoch round (D4 in docs/design.md). Invariant: all zero
	// unless Leader (rule "leader-fields"); a Leader's epoch start is
	// within its log ("leader-epoch-start"), its ends one per voter
	// ("leader-ends"), its rounds only of voter indexes
	// ("leader-rounds").
	epochStart   int64
	ends         voterEnds
	fetchedCheck voterSet
	fetchedBegin voterSet

	// Leader: the pending AddRaftVoter or RemoveRaftVoter (Kafka's
	// LeaderState add/remove voter handler state), nil when none. Shared
	// between states and never written (D51). Invariant (rule
	// "leader-fields"): nil unless Leader.
	change *voterChange
}

// voterSet is a set of voter indexes; Config allows at most MaxVoters
// voters, so a set is one word and states share nothing through it.
type voterSet uint64

func (v voterSet) has(i int) bool         { return v&(1<<uint(i)) != 0 }
func (v voterSet) with(i int) voterSet    { return v | 1<<uint(i) }
func (v voterSet) without(i int) voterSet { return v &^ (1 << uint(i)) }
func (v voterSet) size() int              { return bits.OnesCount64(uint64(v)) }

// NewState rebuilds a replica from its durable quorum-state record and its
// log, with Kafka's startup rules (QuorumState.initialize): a former leader
// restarts Resigned, a replica that voted for itself restarts Candidate, a
// stored leader is followed if reachable, a stored vote is kept, and a
// stored epoch behind the log's last epoch is raised to it. record is nil
// when nothing was ever stored.
//
// The actions are what Kafka does at startup and on its first poll: the
// written-back record (Persist), the role's timers, a Candidate's vote
// requests, a Follower's first fetch, a Resigned replica's EndQuorumEpoch
// with an empty successor list. A single voter elects itself at once.
func NewState(cfg Config, record *QuorumRecord, log LogState) (State, []Action, error) {
	s, acts, err := newState(cfg, record, log)
	if err == nil && checkStep != nil {
		checkStep(s)
	}
	return s, acts, err
}

func newState(cfg Config, record *QuorumRecord, log LogState) (State, []Action, error) {
	if err := cfg.Validate(); err != nil {
		return State{}, nil, err
	}
	view, err := newLogView(log)
	if err != nil {
		return State{}, nil, err
	}
	rec := EmptyRecord()
	if record != nil {
		rec = *record
	}
	if rec.Epoch < 0 || rec.LeaderID < NoNode || rec.VotedKey.ID < NoNode {
		return State{}, nil, fmt.Errorf("kraft: stored record %+v has negative fields", rec)
	}
	logVoters, dynamic := view.lastVoters()
	if !dynamic && len(cfg.Voters) == 0 && !cfg.Observer {
		// An observer may start knowing no voter (Kafka's brokers find the
		// leader through bootstrap servers); a voter needs a set.
		return State{}, nil, fmt.Errorf("kraft: no voter set: Config.Voters is empty and the log holds none")
	}
	c := newSettings(cfg, logVoters, dynamic)
	if rec.HasVote() && c.local.ID == NoNode {
		return State{}, nil, fmt.Errorf("kraft: stored vote %v but the local replica has no id", rec.VotedKey)
	}
	s := State{
		c:         c,
		leader:    NoNode,
		voted:     NoReplica,
		hwm:       -1,
		committed: -1,
		log:       view,
		rng:       seedRand(cfg.Seed),
	}
	if view.hasSnapshots() && view.latest().Offset > 0 {
		// Every record below a snapshot is committed: the log's high
		// watermark starts at the latest snapshot's end (Kafka's UnifiedLog
		// starts it at the log start offset); the quorum's stays unknown
		// until a leader reports one (D42).
		s.committed = view.latest().Offset
	}
	s.restoreRole(rec)

	t := stepper{s: &s, buf: &Buffer{oneShot: oneShotGeneral}}
	t.start()
	return *t.s, t.actions(), nil
}

// restoreRole sets the role, epoch, leader and vote s restarts in from
// the stored record rec: Kafka's QuorumState.initialize.
func (s *State) restoreRole(rec QuorumRecord) {
	switch {
	case rec.Epoch < s.log.end.Epoch:
		s.role, s.epoch = Unattached, s.log.end.Epoch
	case rec.LeaderID != NoNode && rec.LeaderID == s.c.local.ID:
		s.role, s.epoch, s.leader, s.endpoints = Resigned, rec.Epoch, s.c.local.ID, true
	case rec.HasVote() && rec.VotedKey.Matches(s.c.local) && s.c.isVoter() && rec.LeaderID == NoNode:
		// Kafka restarts any self-vote as Candidate, even when the record
		// also names the epoch's leader (a Candidate that lost and followed
		// keeps its vote). Such a Candidate may hold records of its own
		// epoch, so its vote requests are illegal and the answers fatal;
		// kraft follows the named leader instead (docs/design.md D17).
		s.role, s.epoch, s.voted = Candidate, rec.Epoch, rec.VotedKey
	case rec.LeaderID != NoNode && VoterByID(s.c.voters, rec.LeaderID) >= 0:
		s.role, s.epoch, s.leader, s.voted, s.endpoints = Follower, rec.Epoch, rec.LeaderID, rec.VotedKey, true
	default:
		// Kafka keeps a stored leader it cannot reach as Unattached with a
		// leader id. A stored self-vote on a replica that is no longer a
		// voter cannot restart Candidate; it stays as the vote.
		s.role, s.epoch, s.leader, s.voted = Unattached, rec.Epoch, rec.LeaderID, rec.VotedKey
	}
}

// start emits what a replica does at startup and on its first poll in
// its restored role: the written-back record, the role's timers and first
// requests; a single voter elects itself at once.
func (t *stepper) start() {
	t.emitPersist(Persist{Record: t.s.Record()})
	if t.s.c.isVoter() && len(t.s.c.voters) == 1 {
		// Kafka's initialize: the only voter elects itself at once.
		switch t.s.role {
		case Unattached, Follower, Resigned:
			t.toProspective("only voter")
		case Candidate:
			t.newTally()
			t.maybeWin()
		case Prospective, Leader:
		}
		return
	}
	switch t.s.role {
	case Unattached:
		t.enterUnattached(timerRandom)
	case Candidate:
		t.newTally()
		t.armElection(timerRandom)
		t.requestVotes(false)
	case Follower:
		t.enterFollower()
	case Resigned:
		t.armElection(timerRandom)
		t.sendEndQuorumEpoch(nil)
	case Prospective, Leader:
		// Never restored (Kafka: a replica never starts as Leader).
	}
}

// Role is the replica's current role.
func (s State) Role() Role { return s.role }

// Epoch is the current epoch.
func (s State) Epoch() Epoch { return s.epoch }

// Leader is the leader of the current epoch if known, else NoNode.
func (s State) Leader() NodeID { return s.leader }

// RefusedLeader is the leader of the current epoch when this replica
// refuses to follow it (a LeaderRefused action said so; docs/design.md
// D113), and false otherwise.
func (s State) RefusedLeader() (NodeID, bool) {
	if !s.refused {
		return NoNode, false
	}
	return s.leader, true
}

// VotedKey is the standard vote granted in the current epoch, if any.
func (s State) VotedKey() (ReplicaKey, bool) { return s.voted, s.voted.ID != NoNode }

// HighWatermark is the quorum's high watermark (exclusive), -1 if unknown:
// a follower's min(log end, leader's), a leader's once a record of its own
// epoch is on a majority. A new leader's starts unknown (Kafka's
// transitionToLeader), and so does a resigned leader's (Kafka's
// ResignedState has none) and that of the role after it.
// HighWatermarkChanged actions report the highest value ever reached, which
// never goes down (docs/design.md D5).
func (s State) HighWatermark() int64 { return s.hwm }

// CommittedOffset is the log's high watermark: the highest high watermark
// this replica has known, across roles and restarts from a snapshot (the
// latest snapshot's end), -1 if none. Records below it are committed; it
// is the last value HighWatermarkChanged reported, and where a host may
// take a snapshot (Kafka's ReplicatedLog.highWatermark).
func (s State) CommittedOffset() int64 { return s.committed }

// LogEnd is the written log's end offset and last epoch as the state sees
// it (Kafka's log end offset): every record the host reported with
// LogAppended, flushed or not, less what TruncateLog removed.
func (s State) LogEnd() LogEnd { return s.log.end }

// LogStart is the log start offset: the first record the local log holds
// (0 until the host cleans the log behind a snapshot; Kafka's
// log start offset).
func (s State) LogStart() int64 { return s.log.start() }

// LatestSnapshot is the newest snapshot id on disk as the state knows it
// (from NewState, SnapshotCreated and InstallSnapshot); ok is false when
// there is none.
func (s State) LatestSnapshot() (id LogEnd, ok bool) { return s.log.latest(), s.log.hasSnapshots() }

// EarliestSnapshot is the oldest snapshot id on disk as the state knows it;
// when the log start is past 0 it is the snapshot at the log start.
func (s State) EarliestSnapshot() (id LogEnd, ok bool) { return s.log.earliest(), s.log.hasSnapshots() }

// SnapshotDownload is, on a Follower fetching a snapshot from its leader,
// the snapshot's id and how many of its bytes the host has written; ok is
// false when no download is in progress.
func (s State) SnapshotDownload() (id LogEnd, written int64, ok bool) {
	if s.download == nil {
		return LogEnd{}, 0, false
	}
	return s.download.id, s.download.written, true
}

// snapshotDownload is a snapshot being downloaded and how many of its
// bytes the host has written.
type snapshotDownload struct {
	id      LogEnd
	written int64
}

// FlushedOffset is the offset below which the local log is durable, as the
// host reported with LogFlushed (the whole log at NewState).
func (s State) FlushedOffset() int64 { return s.log.flushed }

// VoterEndOffsets is, on a leader, each voter's end offset as the leader
// counts it toward the high watermark, in the order of Voters(): the fetch
// offset of the voter's last valid Fetch (-1 before its first), and the
// leader's own flushed offset at its own place (Kafka's
// DescribeQuorum log end offsets). It is nil in every other role.
func (s State) VoterEndOffsets() []int64 {
	if s.role != Leader || s.c == nil {
		return nil
	}
	out := make([]int64, len(s.c.voters))
	for i := range out {
		out[i] = s.ends.get(i)
	}
	if i := s.c.localIndex; i >= 0 && i < len(out) {
		out[i] = s.log.flushed
	}
	return out
}

// IsVoter reports whether the local replica is in the voter set.
func (s State) IsVoter() bool { return s.c != nil && s.c.isVoter() }

// Local is the local replica's key.
func (s State) Local() ReplicaKey {
	if s.c == nil {
		return NoReplica
	}
	return s.c.local
}

// Voters is the voter set (a copy).
func (s State) Voters() []ReplicaKey {
	if s.c == nil {
		return nil
	}
	return append([]ReplicaKey(nil), s.c.voters...)
}

// Record is the quorum-state record that matches this state: what the last
// Persist wrote (Kafka's EpochState.election). Prospective and Resigned are
// never persisted on entry; their record equals the one they came from.
func (s State) Record() QuorumRecord {
	if s.c == nil {
		return EmptyRecord()
	}
	return QuorumRecord{Epoch: s.epoch, LeaderID: s.leader, VotedKey: s.voted}
}

// String describes the state for humans and logs.
func (s State) String() string {
	if s.c == nil {
		return "State{}"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s epoch=%d", s.role, s.epoch)
	if s.leader != NoNode {
		fmt.Fprintf(&b, " leader=%d", s.leader)
	}
	if s.voted.ID != NoNode {
		fmt.Fprintf(&b, " voted=%v", s.voted)
	}
	fmt.Fprintf(&b, " hwm=%d log=%d@%d", s.hwm, s.log.end.Offset, s.log.end.Epoch)
	if s.log.start() > 0 {
		fmt.Fprintf(&b, " start=%d", s.log.start())
	}
	if d := s.download; d != nil {
		fmt.Fprintf(&b, " snapshot=%d@%d+%d", d.id.Offset, d.id.Epoch, d.written)
	}
	if !s.c.isVoter() {
		b.WriteString(" observer")
	}
	return b.String()
}

// seedRand turns a seed into the first PRNG state.
func seedRand(seed uint64) uint64 { return seed ^ 0x9e3779b97f4a7c15 }

// nextRand is splitmix64: it returns the next PRNG state and output.
func nextRand(x uint64) (uint64, uint64) {
	x += 0x9e3779b97f4a7c15
	z := x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return x, z ^ (z >> 31)
}
