package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
)

// Dynamic voter sets (KIP-853) in the simulated hosts, as the README's host
// contract (rule 11) says:
//
//   - With Options.Dynamic the voter set lives in the log. Every
//     controller (ids 0..Voters-1) starts from a bootstrap checkpoint
//     holding the first Options.BootstrapVoters of them; the others are
//     spares, observers until an operator (OpAddVoter) or auto-join adds
//     them. Replicas past the controllers (Options.Observers) start with
//     no voter set at all, as Kafka's brokers do, and learn it from the
//     log. kraft.Config.Voters is empty.
//   - A VotersRecord is a Record whose payload is "Voters(" and the keys
//     (votersPayload): it is replicated, snapshotted and compared like any
//     other record. A leader's host appends one for AppendVoters and after
//     the LeaderChange record of an AppendLeaderChange with VotersRecord
//     set. Every host steps VotersAppended for each VotersRecord it writes
//     (its own or fetched) right after the LogAppended that covers it.
//   - A snapshot holds the voter set at its end (a first line "v
//     Voters(...)" of its bytes, as Kafka's snapshot header holds a
//     VotersRecord); the host that installs one steps VotersAppended with
//     that set at the snapshot's end minus one.
//   - A restart passes LogState.VoterSets: the bootstrap set at -1 (unless
//     the disk was lost), the latest snapshot's at its end minus one, and
//     every VotersRecord of the log.
//   - A disk loss gives the replica a new directory id (a new ReplicaKey
//     with the same node id) and no bootstrap checkpoint: it comes back as
//     an observer, and only a RemoveRaftVoter of its old key and an
//     AddRaftVoter of its new one (by an operator, or by itself with
//     Options.AutoJoin) make it a voter again.
//   - Admin requests (OpAddVoter, OpRemoveVoter) reach the leader of the
//     highest epoch at once, with a handle of the cluster's; the answer
//     (SendVoterChangeResponse) is recorded in VoterChanges when it comes.
//     An auto-joining replica's SendVoterChange travels over the network
//     like any request; its answer is recorded and not delivered (the
//     requesting state takes none).
//   - SendAPIVersions becomes an ApiVersions request on the network; the
//     addressee's host (not its state) answers it with the kraft.version
//     range 0..1. A request lost on the way (the addressee down or cut
//     off, or a lossy network) gets no answer: the leader's voter-change
//     timer (kraft.Config.RequestTimeout, Kafka's default of 2 s) fails
//     the AddRaftVoter with REQUEST_TIMED_OUT.
//   - An unattached observer's Fetch to no one in particular goes to
//     another replica drawn at random among the controllers (Kafka's
//     controller.quorum.bootstrap.servers) and the voters of the set its
//     state has in force (whose endpoints a VotersRecord holds): a voter
//     added from the brokers can be found too.

// votersPrefix starts a VotersRecord's payload.
const votersPrefix = "Voters("

// votersPayload is the payload of a VotersRecord holding voters: their ids
// and directory ids, in order.
func votersPayload(voters []kraft.ReplicaKey) string {
	var b strings.Builder
	b.WriteString(votersPrefix)
	for i, v := range voters {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(int(v.ID)))
		b.WriteByte('/')
		b.WriteString(v.DirectoryID.String())
	}
	b.WriteByte(')')
	return b.String()
}

// parseVoters reads the voter set of a VotersRecord's payload; ok is false
// for any other record.
func parseVoters(payload string) (voters []kraft.ReplicaKey, ok bool) {
	if !strings.HasPrefix(payload, votersPrefix) || !strings.HasSuffix(payload, ")") {
		return nil, false
	}
	body := payload[len(votersPrefix) : len(payload)-1]
	if body == "" {
		return []kraft.ReplicaKey{}, true
	}
	for _, f := range strings.Split(body, ",") {
		slash := strings.IndexByte(f, '/')
		if slash < 0 {
			return nil, false
		}
		id, err := strconv.Atoi(f[:slash])
		if err != nil {
			return nil, false
		}
		dir, err := uuid.Parse(f[slash+1:])
		if err != nil {
			return nil, false
		}
		voters = append(voters, kraft.ReplicaKey{ID: kraft.NodeID(id), DirectoryID: dir})
	}
	return voters, true
}

// isVoters reports whether r is a VotersRecord.
func isVoters(r Record) bool { return strings.HasPrefix(r.Payload, votersPrefix) }

// hasKey reports whether voters holds key exactly.
func hasKey(voters []kraft.ReplicaKey, key kraft.ReplicaKey) bool {
	for _, v := range voters {
		if v == key {
			return true
		}
	}
	return false
}

// singleChange reports whether b differs from a by at most one key added
// and at most one removed, compared exactly: then every majority of a
// meets every majority of b (KIP-853's one change at a time; Kafka's
// VoterSet.hasOverlappingMajority).
func singleChange(a, b []kraft.ReplicaKey) bool {
	missing := func(x, y []kraft.ReplicaKey) int {
		n := 0
		for _, k := range x {
			if !hasKey(y, k) {
				n++
			}
		}
		return n
	}
	return missing(a, b) <= 1 && missing(b, a) <= 1
}

// votersAt is the voter set n's host knows in force just after offset off
// (the records [0, off] of its log): the latest VotersRecord at or below
// off in its log, else its snapshot's set when the log starts past off,
// else its bootstrap set; nil when there is none (a static voter set).
func (n *node) votersAt(off int) []kraft.ReplicaKey {
	if off >= len(n.log) {
		off = len(n.log) - 1
	}
	for i := off; i >= n.start && i >= 0; i-- {
		if vs, ok := parseVoters(n.log[i].Payload); ok {
			return vs
		}
	}
	for i := len(n.snaps) - 1; i >= 0; i-- {
		if s := n.snaps[i]; s.id.Offset-1 <= int64(off) && s.voters != nil {
			return s.voters
		}
	}
	return n.bootstrap
}

// voterSets are the voter sets of n's disk for kraft.NewState (the README's
// rule 11): the bootstrap set at -1, the latest snapshot's at its end minus
// one, and every VotersRecord of the log, in offset order; nil without any.
func (n *node) voterSets() []kraft.VoterSetAt {
	var out []kraft.VoterSetAt
	if n.bootstrap != nil {
		out = append(out, kraft.VoterSetAt{Offset: -1, Voters: n.bootstrap})
	}
	snapAt := int64(-2)
	var snapSet []kraft.ReplicaKey
	if s := n.latestSnapshot(); s != nil && s.voters != nil {
		snapAt, snapSet = s.id.Offset-1, s.voters
	}
	for i := n.start; i < len(n.log); i++ {
		vs, ok := parseVoters(n.log[i].Payload)
		if !ok {
			continue
		}
		if snapSet != nil && snapAt < int64(i) {
			out = append(out, kraft.VoterSetAt{Offset: snapAt, Voters: snapSet})
			snapSet = nil
		}
		if int64(i) == snapAt {
			snapSet = nil
		}
		out = append(out, kraft.VoterSetAt{Offset: int64(i), Voters: vs})
	}
	if snapSet != nil {
		out = append(out, kraft.VoterSetAt{Offset: snapAt, Voters: snapSet})
	}
	return out
}

// VoterChange is an AddRaftVoter or RemoveRaftVoter request the cluster
// handled: an operator's (OpAddVoter, OpRemoveVoter; From is NoNode) or an
// auto-joining replica's (From is its id), and its answer.
type VoterChange struct {
	// At is when the leader got the request; Leader is that leader (NoNode
	// if there was none: the request failed at once).
	At     time.Duration         `json:"at"`
	Kind   kraft.VoterChangeKind `json:"kind"`
	Voter  kraft.ReplicaKey      `json:"voter"`
	From   kraft.NodeID          `json:"from"`
	Leader kraft.NodeID          `json:"leader"`
	// Answered says whether the answer came, at AnsweredAt, with Error
	// (NONE: the change committed).
	Answered   bool            `json:"answered"`
	AnsweredAt time.Duration   `json:"answered_at"`
	Error      kraft.ErrorCode `json:"error"`
}

// String describes the request and its answer.
func (v VoterChange) String() string {
	who := "operator"
	if v.From != kraft.NoNode {
		who = fmt.Sprintf("auto-join r%d", v.From)
	}
	s := fmt.Sprintf("%v %s %s %d/%s at leader %d", v.At, who, v.Kind, v.Voter.ID, shortDir(v.Voter.DirectoryID), v.Leader)
	if !v.Answered {
		return s + ": no answer"
	}
	return fmt.Sprintf("%s: %v at %v", s, v.Error, v.AnsweredAt)
}

// shortDir is the first 8 hex digits of a directory id.
func shortDir(u uuid.UUID) string { return u.String()[:8] }

// VoterSetChange is a voter set that became committed: the VotersRecord at
// Offset entered the committed log at At.
type VoterSetChange struct {
	At     time.Duration
	Offset int64
	Voters []kraft.ReplicaKey
}

// VoterChanges returns the voter-change requests the cluster handled, in
// the order the leaders got them, with their answers so far.
func (c *Cluster) VoterChanges() []VoterChange {
	return append([]VoterChange(nil), c.changes...)
}

// VoterHistory returns the committed voter sets in commit order: the
// bootstrap set at offset -1 and time 0 first (none for a static voter
// set), then each VotersRecord when it committed.
func (c *Cluster) VoterHistory() []VoterSetChange {
	return append([]VoterSetChange(nil), c.history...)
}

// Voters is the committed voter set: the latest VotersRecord of the
// committed log, or the bootstrap (or static) set before any.
func (c *Cluster) Voters() []kraft.ReplicaKey {
	return append([]kraft.ReplicaKey(nil), c.voters...)
}

// Key is replica id's current key (its directory id changes with each disk
// loss under Options.DirectoryIDs).
func (c *Cluster) Key(id kraft.NodeID) kraft.ReplicaKey { return c.node(id).cfg.Local }

// highestLeader is the running leader of the highest epoch, nil if none.
func (c *Cluster) highestLeader() *node {
	var leader *node
	for _, n := range c.nodes {
		if n.up && n.st.Role() == kraft.Leader && (leader == nil || n.st.Epoch() > leader.st.Epoch()) {
			leader = n
		}
	}
	return leader
}

// adminChange asks the leader of the highest epoch for an operator's
// AddRaftVoter or RemoveRaftVoter of replica id (replica.Replica's
// AddVoter and RemoveVoter): AddRaftVoter names the replica's current key,
// RemoveRaftVoter the key the leader's voter set holds with that id (the
// replica's current key if none).
func (c *Cluster) adminChange(kind kraft.VoterChangeKind, id kraft.NodeID) {
	target := c.nodes[id]
	key := target.cfg.Local
	leader := c.highestLeader()
	if leader != nil && kind == kraft.RemoveVoter {
		for _, k := range leader.st.Voters() {
			if k.ID == id {
				key = k
			}
		}
	}
	if leader == nil {
		c.changes = append(c.changes, VoterChange{At: c.now, Kind: kind, Voter: key, From: kraft.NoNode, Leader: kraft.NoNode,
			Answered: true, AnsweredAt: c.now, Error: kraft.ErrNotLeaderOrFollower})
		return
	}
	if kind == kraft.AddVoter {
		_, _ = leader.rep.AddVoter(c.now, key, "")
	} else {
		_, _ = leader.rep.RemoveVoter(c.now, key)
	}
	c.carry(leader)
}

// received records a voter-change request that leader n's replica steps
// with the handle ref (the observer sees it: an operator's, From NoNode,
// or an auto-joining replica's).
func (c *Cluster) received(n *node, ref uint64, v VoterChange) {
	c.changes = append(c.changes, v)
	if c.refs == nil {
		c.refs = map[reqKey]int{}
	}
	c.refs[reqKey{n.id, ref}] = len(c.changes) - 1
}

// answered records the answer of leader n's replica to the request with
// handle a.Ref.
func (c *Cluster) answered(n *node, a kraft.SendVoterChangeResponse) {
	k := reqKey{n.id, a.Ref}
	i, ok := c.refs[k]
	if !ok {
		return
	}
	delete(c.refs, k)
	v := &c.changes[i]
	v.Answered, v.AnsweredAt, v.Error = true, c.now, a.Error
}
