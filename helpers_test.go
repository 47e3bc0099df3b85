package kraft

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// Shared test helpers. States are built by stepping real events, never by
// setting fields.

// Test durations: T_e = 1s, T_f = 2s, B_max = 1s (Kafka's defaults).
const (
	testTe = time.Second
	testTf = 2 * time.Second
)

// keys returns voter keys for the given ids, without directory ids.
func keys(ids ...NodeID) []ReplicaKey {
	out := make([]ReplicaKey, len(ids))
	for i, id := range ids {
		out[i] = ReplicaKey{ID: id}
	}
	return out
}

// config is a Config for local among voters. The scenario tests check
// Kafka's exact rules, so it runs failovers as Kafka does (D59 has tests of
// its own).
func config(local NodeID, voters ...NodeID) Config {
	return Config{Local: ReplicaKey{ID: local}, Voters: keys(voters...), Seed: uint64(local) + 1, KafkaFailover: true}
}

// observerConfig is a Config for an observer with id local.
func observerConfig(local NodeID, voters ...NodeID) Config {
	return Config{Local: ReplicaKey{ID: local}, Observer: true, Voters: keys(voters...), Seed: uint64(local) + 100}
}

// start builds a fresh replica (no record, empty log).
func start(t *testing.T, cfg Config) State {
	t.Helper()
	s, _, err := NewState(cfg, nil, LogState{})
	require.NoError(t, err)
	return s
}

// restart builds a replica from a record and a log.
func restart(t *testing.T, cfg Config, rec QuorumRecord, log LogState) (State, []Action) {
	t.Helper()
	s, acts, err := NewState(cfg, &rec, log)
	require.NoError(t, err)
	return s, acts
}

// step steps s with e and checks that s itself did not change, and that
// StepIn on a copy of s decides the same (D300).
func step(t *testing.T, s State, e Event) (State, []Action) {
	t.Helper()
	before := deepCopy(s)
	next, acts := Step(s, e)
	require.True(t, reflect.DeepEqual(before, s), "Step mutated its input state")
	again, acts2 := Step(s, e)
	require.Equal(t, next, again, "Step is not deterministic")
	require.Equal(t, acts, acts2, "Step is not deterministic")
	in := s
	inActs := StepIn(nil, &in, e)
	require.Equal(t, next, in, "StepIn makes another state than Step")
	require.Equal(t, acts, inActs, "StepIn acts otherwise than Step")
	require.True(t, reflect.DeepEqual(before, s), "StepIn changed a State it does not own")
	return next, acts
}

// deepCopy copies every slice and struct a State refers to, so that a
// later in-place write into shared storage shows up as a difference. A nil slice stays nil
// and an empty one empty (reflect.DeepEqual tells them apart).
func deepCopy(s State) State {
	c := s
	if s.ends.large != nil {
		large := makeLarge(len(*s.ends.large))
		copy(*large, *s.ends.large)
		c.ends.large = large
	}
	if s.log.h != nil {
		h := *s.log.h
		h.epochs = cloneSlice(h.epochs)
		h.voters = cloneSlice(h.voters)
		for i := range h.voters {
			h.voters[i].Voters = cloneSlice(h.voters[i].Voters)
		}
		c.log.h = &h
	}
	if s.c != nil {
		cc := *s.c
		cc.voters = cloneSlice(s.c.voters)
		cc.voterIDs = cloneSlice(s.c.voterIDs)
		cc.static = cloneSlice(s.c.static)
		c.c = &cc
	}
	// The pending voter change and the snapshot download are shared
	// between states and never written (D43, D51): copied, a write
	// through the pointer shows up too.
	if s.change != nil {
		ch := *s.change
		c.change = &ch
	}
	if s.download != nil {
		d := *s.download
		c.download = &d
	}
	return c
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// ofType returns the actions of type T, in order.
func ofType[T Action](acts []Action) []T {
	var out []T
	for _, a := range acts {
		if x, ok := a.(T); ok {
			out = append(out, x)
		}
	}
	return out
}

// Directory ids, the cluster id of the tests that configure one, and a
// cluster id of another cluster.
var (
	dirA           = uuid.MustParse("00000000-0000-0000-0000-00000000000a")
	dirB           = uuid.MustParse("00000000-0000-0000-0000-00000000000b")
	dirC           = uuid.MustParse("00000000-0000-0000-0000-00000000000c")
	testClusterID  = uuid.NullUUID{UUID: uuid.MustParse("11111111-2222-3333-4444-555555555555"), Valid: true}
	otherClusterID = uuid.NullUUID{UUID: uuid.MustParse("99999999-2222-3333-4444-555555555555"), Valid: true}
)

// The timer resets of the fixed timeouts: the fetch timeout T_f, the
// check-quorum timeout 1.5*T_f and the BeginQuorumEpoch re-send interval
// T_f/2.
var (
	fetchTimerReset       = ResetTimer{Timer: FetchTimer, After: testTf}
	checkQuorumTimerReset = ResetTimer{Timer: CheckQuorumTimer, After: testTf * 3 / 2}
	beginQuorumTimerReset = ResetTimer{Timer: BeginQuorumEpochTimer, After: testTf / 2}
)

// electionTimerReset arms the election timer for d.
func electionTimerReset(d time.Duration) ResetTimer {
	return ResetTimer{Timer: ElectionTimer, After: d}
}

// durable reports a write that ends at end and its flush, as a host that
// flushes at once does: LogAppended, then LogFlushed. The actions of both
// steps are returned in order.
func durable(t *testing.T, s State, end LogEnd) (State, []Action) {
	t.Helper()
	s, acts := step(t, s, LogAppended{End: end})
	s, more := step(t, s, LogFlushed{Offset: end.Offset})
	return s, append(acts, more...)
}

// ---- events and actions ----

// keyOf is the key of id without a directory id.
func keyOf(id NodeID) ReplicaKey { return ReplicaKey{ID: id} }

// preVoteRequest is a pre-vote request from cand in epoch with log end last,
// addressed to no voter id.
func preVoteRequest(cand NodeID, epoch Epoch, last LogEnd) ReceiveVoteRequest {
	return ReceiveVoteRequest{From: cand, VoterID: NoNode, CandidateEpoch: epoch, Candidate: cand, CandidateLogEnd: last, PreVote: true}
}

// standardVoteRequest is a standard Vote request from cand in epoch with
// log end last, addressed to no voter id.
func standardVoteRequest(cand NodeID, epoch Epoch, last LogEnd) ReceiveVoteRequest {
	return ReceiveVoteRequest{From: cand, VoterID: NoNode, CandidateEpoch: epoch, Candidate: cand, CandidateLogEnd: last}
}

// voteAnswer is the Vote response sent to to.
func voteAnswer(to NodeID, code ErrorCode, epoch Epoch, leader NodeID, granted bool) SendVoteResponse {
	return SendVoteResponse{To: to, Error: code, Epoch: epoch, LeaderID: leader, VoteGranted: granted}
}

// grantVote is a Vote response from from granting the vote of epoch, naming
// no leader.
func grantVote(from NodeID, epoch Epoch) ReceiveVoteResponse {
	return ReceiveVoteResponse{From: from, Epoch: epoch, VoteGranted: true, LeaderID: NoNode}
}

// rejectVote is a Vote response from from rejecting the vote of epoch,
// naming no leader.
func rejectVote(from NodeID, epoch Epoch) ReceiveVoteResponse {
	return ReceiveVoteResponse{From: from, Epoch: epoch, VoteGranted: false, LeaderID: NoNode}
}

// fetchFrom is a valid-looking Fetch from a replica at (offset, epoch) in the
// leader's epoch.
func fetchFrom(from NodeID, leaderEpoch Epoch, offset int64, lastEpoch Epoch) ReceiveFetch {
	return ReceiveFetch{From: from, CurrentLeaderEpoch: leaderEpoch, FetchOffset: offset, FetchEpoch: lastEpoch}
}

// fetchSnapshotError is a FetchSnapshot error answer: no snapshot id, size
// or position (D44).
func fetchSnapshotError(to NodeID, code ErrorCode, epoch Epoch, leader NodeID) SendFetchSnapshotResponse {
	return SendFetchSnapshotResponse{To: to, Error: code, Epoch: epoch, LeaderID: leader, Snapshot: LogEnd{Offset: -1, Epoch: -1}, Size: -1, Position: -1}
}

// fetchOK is a successful Fetch response from leader in epoch with hwm.
func fetchOK(leader NodeID, epoch Epoch, hwm int64) ReceiveFetchResponse {
	return ReceiveFetchResponse{From: leader, Error: ErrNone, LeaderID: leader, LeaderEpoch: epoch, HighWatermark: hwm}
}

// takesRecords steps r carrying records (Records set) and reports whether
// the state takes them: its one action is AppendFetched at the log end
// whose Then is r without Records, and the state is unchanged (D240).
// Anything else is the step on r itself.
func takesRecords(t *testing.T, s State, r ReceiveFetchResponse) bool {
	t.Helper()
	r.Records = true
	next, acts := step(t, s, r)
	if len(acts) == 1 {
		if a, ok := acts[0].(AppendFetched); ok {
			require.Equal(t, s, next, "AppendFetched with a changed state")
			then := r
			then.Records = false
			require.Equal(t, AppendFetched{Offset: s.LogEnd().Offset, Then: then}, a)
			return true
		}
	}
	r.Records = false
	want, wantActs := Step(s, r)
	require.Equal(t, want, next, "a response whose records the state does not take is stepped as one without")
	require.Equal(t, wantActs, acts)
	return false
}

// quorumRecord is a quorum-state record.
func quorumRecord(epoch Epoch, leader NodeID, voted NodeID) QuorumRecord {
	r := QuorumRecord{Epoch: epoch, LeaderID: leader, VotedKey: NoReplica}
	if voted != NoNode {
		r.VotedKey = ReplicaKey{ID: voted}
	}
	return r
}

// sentVoteRequests are the Vote requests (pre-votes or standard) s sends to
// each of to.
func sentVoteRequests(s State, preVote bool, to ...ReplicaKey) []Action {
	out := make([]Action, 0, len(to))
	for _, k := range to {
		out = append(out, SendVoteRequest{To: k, ClusterID: s.c.clusterID, CandidateEpoch: s.Epoch(), Candidate: s.Local(), CandidateLogEnd: s.LogEnd(), PreVote: preVote})
	}
	return out
}

// sentFetch is the Fetch s sends to to.
func sentFetch(s State, to NodeID) SendFetch {
	return SendFetch{To: to, ClusterID: s.c.clusterID, CurrentLeaderEpoch: s.Epoch(), FetchOffset: s.LogEnd().Offset, FetchEpoch: s.LogEnd().Epoch, HighWatermark: s.HighWatermark()}
}

// roleChanged is a RoleChanged without its free-text reason (requireActions
// drops it).
func roleChanged(from, to Role, epoch Epoch, leader NodeID) RoleChanged {
	return RoleChanged{From: from, To: to, Epoch: epoch, LeaderID: leader}
}

// concat joins action lists in order.
func concat(parts ...[]Action) []Action {
	var out []Action
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// ---- assertions ----

// requireActions asserts the exact actions, in order, ignoring the free-text
// reason of RoleChanged (it is for humans) but requiring that there is one.
func requireActions(t *testing.T, want, got []Action) {
	t.Helper()
	norm := make([]Action, len(got))
	for i, a := range got {
		if rc, ok := a.(RoleChanged); ok {
			require.NotEmpty(t, rc.Reason, "RoleChanged without a reason: %+v", rc)
			rc.Reason = ""
			a = rc
		}
		norm[i] = a
	}
	require.Equal(t, want, norm)
}

// requireState asserts role, epoch, leader, vote and the record the state
// stands for (what its last Persist wrote, or would have written).
func requireState(t *testing.T, s State, role Role, epoch Epoch, leader NodeID, voted ReplicaKey) {
	t.Helper()
	require.Equal(t, role, s.Role(), "state %v", s)
	require.Equal(t, epoch, s.Epoch(), "state %v", s)
	require.Equal(t, leader, s.Leader(), "state %v", s)
	v, ok := s.VotedKey()
	require.Equal(t, voted, v, "state %v", s)
	require.Equal(t, voted.ID != NoNode, ok, "state %v", s)
	require.Equal(t, QuorumRecord{Epoch: epoch, LeaderID: leader, VotedKey: voted}, s.Record(), "state %v", s)
}

// requireFault asserts that a step proved the cluster inconsistent: one Fault
// action and the input state returned unchanged.
func requireFault(t *testing.T, before, after State, acts []Action) {
	t.Helper()
	require.Len(t, acts, 1, "actions: %+v", acts)
	f, ok := acts[0].(Fault)
	require.True(t, ok, "want a Fault, got %+v", acts)
	require.NotEmpty(t, f.Reason)
	require.Equal(t, before, after, "a Fault must leave the state unchanged")
}

// requireRefused asserts that a Follower refused its leader (D113): the
// one action want, and the state unchanged but for the refusal, which
// also grants pre-votes again (fetched false).
func requireRefused(t *testing.T, before, after State, acts []Action, want LeaderRefused) {
	t.Helper()
	require.Equal(t, []Action{want}, acts)
	expected := before
	expected.refused, expected.fetched, expected.download = true, false, nil
	require.Equal(t, expected, after, "a refusal changes nothing but the refusal")
	id, ok := after.RefusedLeader()
	require.True(t, ok)
	require.Equal(t, want.LeaderID, id)
	require.Equal(t, want.Epoch, after.Epoch())
}

// requireUnchanged checks that a step changed nothing and did nothing.
func requireUnchanged(t *testing.T, before, after State, acts []Action) {
	t.Helper()
	require.Empty(t, acts)
	require.Equal(t, before, after)
}

// electionTimeoutAt returns the After of acts[i], which must be a ResetTimer
// of the election timer with a random election timeout in [T_e, 2*T_e).
func electionTimeoutAt(t *testing.T, acts []Action, i int) time.Duration {
	t.Helper()
	require.Greater(t, len(acts), i, "actions: %+v", acts)
	rt, ok := acts[i].(ResetTimer)
	require.True(t, ok, "action %d is %T, want ResetTimer: %+v", i, acts[i], acts)
	require.Equal(t, ElectionTimer, rt.Timer, "actions: %+v", acts)
	require.GreaterOrEqual(t, rt.After, testTe, "election timeout below T_e")
	require.Less(t, rt.After, 2*testTe, "election timeout not below 2*T_e")
	return rt.After
}

// electionTimeoutIn returns the one ResetTimer{ElectionTimer} in acts after
// checking that it was drawn from [T_e, 2*T_e).
func electionTimeoutIn(t *testing.T, acts []Action) time.Duration {
	t.Helper()
	var found []time.Duration
	for _, a := range ofType[ResetTimer](acts) {
		if a.Timer == ElectionTimer {
			found = append(found, a.After)
		}
	}
	require.Len(t, found, 1, "%v", acts)
	require.GreaterOrEqual(t, found[0], testTe)
	require.Less(t, found[0], 2*testTe)
	return found[0]
}

// ---- states, built by stepping real events ----

// unattachedWithLog restarts a replica whose record holds only epoch (no
// leader, no vote) and whose log ends at end, all in end.Epoch:
// Unattached(epoch).
func unattachedWithLog(t *testing.T, cfg Config, epoch Epoch, end LogEnd) State {
	t.Helper()
	s, _ := restart(t, cfg, QuorumRecord{Epoch: epoch, LeaderID: NoNode, VotedKey: NoReplica}, LogState{End: end})
	require.Equal(t, Unattached, s.Role())
	return s
}

// unattachedAt is a fresh replica moved to Unattached(epoch) by a
// response announcing that epoch without a leader.
func unattachedAt(t *testing.T, cfg Config, epoch Epoch) State {
	t.Helper()
	s, _ := step(t, start(t, cfg), ReceiveLeaderlessEpoch{From: cfg.Voters[0].ID, Epoch: epoch})
	requireState(t, s, Unattached, epoch, NoNode, NoReplica)
	return s
}

// asProspective runs the election timer of an Unattached voter.
func asProspective(t *testing.T, s State) State {
	t.Helper()
	s, _ = step(t, s, ElectionTimeout{})
	require.Equal(t, Prospective, s.Role())
	return s
}

// grantVotesUntil feeds granted Vote responses from the other voters, in voter
// order, until the state reaches role.
func grantVotesUntil(t *testing.T, s State, role Role) State {
	t.Helper()
	for _, v := range s.Voters() {
		if s.Role() == role {
			break
		}
		if v.ID == s.Local().ID {
			continue
		}
		s, _ = step(t, s, grantVote(v.ID, s.Epoch()))
	}
	require.Equal(t, role, s.Role(), "state %v", s)
	return s
}

// asCandidate wins the pre-vote of an Unattached or Prospective voter.
func asCandidate(t *testing.T, s State) State {
	t.Helper()
	if s.Role() != Prospective {
		s = asProspective(t, s)
	}
	return grantVotesUntil(t, s, Candidate)
}

// asLeader wins the whole election of an Unattached or Prospective voter.
func asLeader(t *testing.T, s State) State {
	t.Helper()
	return grantVotesUntil(t, asCandidate(t, s), Leader)
}

// asResigned is a leader that resigned.
func asResigned(t *testing.T, s State) State {
	t.Helper()
	s, _ = step(t, asLeader(t, s), Resign{})
	require.Equal(t, Resigned, s.Role())
	return s
}

// asFollower follows leader in epoch after its BeginQuorumEpoch.
func asFollower(t *testing.T, s State, epoch Epoch, leader NodeID) State {
	t.Helper()
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: leader, LeaderID: leader, LeaderEpoch: epoch, VoterID: NoNode})
	require.Equal(t, Follower, s.Role(), "state %v", s)
	require.Equal(t, leader, s.Leader())
	return s
}

// asFetched is a Follower after a successful (empty) fetch from its leader.
func asFetched(t *testing.T, s State) State {
	t.Helper()
	s, _ = step(t, s, ReceiveFetchResponse{From: s.Leader(), LeaderID: s.Leader(), LeaderEpoch: s.Epoch(), HighWatermark: -1})
	require.Equal(t, Follower, s.Role())
	return s
}

// electLeader makes the Unattached voter s leader (asLeader: election
// timeout, then granted pre-votes and votes from the other voters in voter
// order until a majority), then reports the LeaderChange record durable. It
// returns the Leader.
func electLeader(t *testing.T, s State) State {
	t.Helper()
	require.Equal(t, Unattached, s.Role(), "%v", s)
	s = asLeader(t, s)
	require.Equal(t, Leader, s.Role(), "%v", s)
	s, _ = durable(t, s, LogEnd{Offset: s.LogEnd().Offset + 1, Epoch: s.Epoch()})
	return s
}

// leaderOf is replica 1 elected leader of epoch 1 among voters 1..n, with
// an empty log before its LeaderChange record (epoch start 0, log end 1).
func leaderOf(t *testing.T, n int) State {
	t.Helper()
	ids := make([]NodeID, n)
	for i := range ids {
		ids[i] = NodeID(i + 1)
	}
	s := electLeader(t, start(t, config(1, ids...)))
	require.Equal(t, Epoch(1), s.Epoch())
	require.Equal(t, LogEnd{Offset: 1, Epoch: 1}, s.LogEnd())
	return s
}

// restartedLeader restarts replica 1 of voters 1,2,3 Unattached in epoch
// with the given log and elects it leader of epoch+1.
func restartedLeader(t *testing.T, epoch Epoch, log LogState) State {
	t.Helper()
	s, _ := restart(t, config(1, 1, 2, 3), QuorumRecord{Epoch: epoch, LeaderID: NoNode, VotedKey: NoReplica}, log)
	return electLeader(t, s)
}

// node1Candidate: node 1 of {1,2,3} after node 2 granted its pre-vote:
// Candidate(1), voted for itself.
func node1Candidate(t *testing.T) State {
	t.Helper()
	s := asCandidate(t, start(t, config(1, 1, 2, 3)))
	require.Equal(t, Epoch(1), s.Epoch())
	return s
}

// node1Resigned: leaderOf(t, 3) after Resign: Resigned(1).
func node1Resigned(t *testing.T) State {
	t.Helper()
	s, _ := step(t, leaderOf(t, 3), Resign{})
	require.Equal(t, Resigned, s.Role())
	return s
}

// node1Fetched: node 1 of {1,2,3}, Follower(1, 2) that has had one successful
// fetch response from its leader.
func node1Fetched(t *testing.T) State {
	t.Helper()
	s := asFollower(t, start(t, config(1, 1, 2, 3)), 1, 2)
	s, acts := step(t, s, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 1, HighWatermark: -1})
	require.Equal(t, []Action{
		ResetTimer{Timer: FetchTimer, After: testTf},
		SendFetch{To: 2, CurrentLeaderEpoch: 1, HighWatermark: -1},
	}, acts)
	return s
}

// newFollower is replica 2 of voters 1,2,3 following leader 1 in epoch 1
// (BeginQuorumEpoch received, no fetch answered yet).
func newFollower(t *testing.T) State {
	t.Helper()
	s := start(t, config(2, 1, 2, 3))
	s, _ = step(t, s, ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 2})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, NodeID(1), s.Leader())
	return s
}

// restartedFollower is replica 2 of voters 1,2,3 restarted as Follower of
// 1 in epoch 4 with the log epochs 1 at 0, 2 at 3, 4 at 6, log end 8.
func restartedFollower(t *testing.T) State {
	t.Helper()
	s, _ := restart(t, config(2, 1, 2, 3), QuorumRecord{Epoch: 4, LeaderID: 1, VotedKey: NoReplica},
		LogState{End: LogEnd{Offset: 8, Epoch: 4}, Epochs: []EpochStart{{Epoch: 1}, {Epoch: 2, StartOffset: 3}, {Epoch: 4, StartOffset: 6}}})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, Epoch(4), s.Epoch())
	return s
}

// observerFollower is observer 4 (voters 1,2,3) following leader 2 in
// epoch 1, found through a bootstrap fetch answered by voter 3.
func observerFollower(t *testing.T) State {
	t.Helper()
	s := start(t, observerConfig(4, 1, 2, 3))
	s, _ = step(t, s, ReceiveFetchResponse{From: 3, Error: ErrNotLeaderOrFollower, LeaderID: 2, LeaderEpoch: 1, HighWatermark: -1})
	require.Equal(t, Follower, s.Role())
	require.Equal(t, NodeID(2), s.Leader())
	return s
}

// roleCase is replica 1 of voters 1,2,3 (or observer 4) in one role.
type roleCase struct {
	name   string
	s      State
	epoch  Epoch
	leader NodeID
}

// everyRole builds every role by stepping real events, with the given
// cluster id configured.
func everyRole(t *testing.T, cluster uuid.NullUUID) []roleCase {
	t.Helper()
	cfg := config(1, 1, 2, 3)
	cfg.ClusterID = cluster
	obs := observerConfig(4, 1, 2, 3)
	obs.ClusterID = cluster

	unattached := start(t, cfg)
	prospective, _ := step(t, unattached, ElectionTimeout{})
	candidate, _ := step(t, prospective, grantVote(2, 0))
	leader, _ := step(t, candidate, grantVote(2, 1))
	leader, _ = durable(t, leader, LogEnd{Offset: 1, Epoch: 1})
	resigned, _ := step(t, leader, Resign{})
	follower, _ := step(t, unattached, ReceiveBeginQuorumEpoch{From: 2, LeaderID: 2, LeaderEpoch: 1, VoterID: NoNode})
	obsUnattached := start(t, obs)
	obsFollower, _ := step(t, obsUnattached, ReceiveFetchResponse{From: 3, Error: ErrNotLeaderOrFollower, LeaderID: 2, LeaderEpoch: 1, HighWatermark: -1})

	cases := []roleCase{
		{"Unattached", unattached, 0, NoNode},
		{"Prospective", prospective, 0, NoNode},
		{"Candidate", candidate, 1, NoNode},
		{"Leader", leader, 1, 1},
		{"Resigned", resigned, 1, 1},
		{"Follower", follower, 1, 2},
		{"ObserverUnattached", obsUnattached, 0, NoNode},
		{"ObserverFollower", obsFollower, 1, 2},
	}
	roles := map[string]Role{
		"Unattached": Unattached, "Prospective": Prospective, "Candidate": Candidate, "Leader": Leader,
		"Resigned": Resigned, "Follower": Follower, "ObserverUnattached": Unattached, "ObserverFollower": Follower,
	}
	for _, c := range cases {
		require.Equal(t, roles[c.name], c.s.Role(), c.name)
		require.Equal(t, c.epoch, c.s.Epoch(), c.name)
		require.Equal(t, c.leader, c.s.Leader(), c.name)
	}
	return cases
}

// noCluster is "no cluster id configured".
func noCluster() uuid.NullUUID { return uuid.NullUUID{} }

// rolesInEpoch builds every reachable role of node 1 among {1,2,3} (or
// observer 9) in epoch 2 or 3, configured with cluster id cluster, by
// stepping real events from a restart in epoch 2.
func rolesInEpoch(t *testing.T, cluster uuid.NullUUID) map[string]State {
	t.Helper()
	cfg := config(1, 1, 2, 3)
	cfg.ClusterID = cluster
	ocfg := observerConfig(9, 1, 2, 3)
	ocfg.ClusterID = cluster
	ncfg := Config{Local: NoReplica, Observer: true, Voters: keys(1, 2, 3), ClusterID: cluster}
	empty := quorumRecord(2, NoNode, NoNode)

	u, _ := restart(t, cfg, empty, LogState{})
	p, _ := step(t, u, ElectionTimeout{})
	c, _ := step(t, p, grantVote(2, 2))
	l, _ := step(t, c, grantVote(2, 3))
	l, _ = durable(t, l, LogEnd{Offset: 1, Epoch: 3})
	r, _ := step(t, l, Resign{})
	f, _ := restart(t, cfg, quorumRecord(2, 2, NoNode), LogState{})
	f, _ = step(t, f, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: -1})
	uo, _ := restart(t, ocfg, empty, LogState{})
	fo, _ := restart(t, ocfg, quorumRecord(2, 2, NoNode), LogState{})
	un, _, err := NewState(ncfg, &empty, LogState{})
	require.NoError(t, err)
	fn, _ := step(t, un, ReceiveFetchResponse{From: 2, LeaderID: 2, LeaderEpoch: 2, HighWatermark: -1})
	states := map[string]State{
		"Unattached": u, "Prospective": p, "Candidate": c, "Leader": l, "Follower": f, "Resigned": r,
		"observer Unattached": uo, "observer Follower": fo,
		"observer without id Unattached": un, "observer without id Follower": fn,
	}
	want := map[string]Role{
		"Unattached": Unattached, "Prospective": Prospective, "Candidate": Candidate, "Leader": Leader,
		"Follower": Follower, "Resigned": Resigned, "observer Unattached": Unattached, "observer Follower": Follower,
		"observer without id Unattached": Unattached, "observer without id Follower": Follower,
	}
	for name, s := range states {
		require.Equal(t, want[name], s.Role(), name)
	}
	return states
}
