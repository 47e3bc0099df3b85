package node

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
)

// What the loop watches after each input to log the changes an operator
// must know of (docs/design.md D85): the voter set in force, the leader's
// voter change in progress, and on the leader each voter's lag.

// lagCheckEvery is how often, at most, the leader looks at its voters'
// lag.
const lagCheckEvery = time.Second

type watchState struct {
	// The voter set last seen: the replica layer's slice (compared by
	// identity, so an unchanged set costs nothing) and its keys.
	votersSeen []replica.Voter
	voters     []kraft.ReplicaKey
	// The leader's voter change in progress last seen.
	change   kraft.VoterChange
	changing bool
	// The leader's lag check: when it last ran, and the voters found
	// lagging.
	lagAt   time.Duration
	lagging map[kraft.NodeID]bool
}

// watchStart notes what the replica starts with.
func (n *Node) watchStart() {
	n.watch.votersSeen = n.r.CurrentVoters()
	n.watch.voters = n.st.Voters()
	n.watch.lagAt = n.clock()
}

// watchState logs what changed in the input just carried out.
func (n *Node) watchState() {
	n.watchVoters()
	n.watchChange()
	n.watchLag()
}

// watchVoters logs a change of the voter set in force (a dynamic set: a
// static one never changes).
func (n *Node) watchVoters() {
	cur := n.r.CurrentVoters()
	if sameSlice(cur, n.watch.votersSeen) {
		return
	}
	n.watch.votersSeen = cur
	keys := n.st.Voters()
	old := n.watch.voters
	n.watch.voters = keys
	added, removed := diffKeys(old, keys)
	if len(added) == 0 && len(removed) == 0 {
		return // the same keys (an UpdateRaftVoter: new endpoints)
	}
	endpoints := map[kraft.NodeID]string{}
	for _, v := range cur {
		endpoints[v.Key.ID] = v.Endpoint
	}
	var parts []string
	for _, k := range added {
		parts = append(parts, fmt.Sprintf("added %s at %s", keyString(k), endpoints[k.ID]))
	}
	for _, k := range removed {
		parts = append(parts, fmt.Sprintf("removed %s", keyString(k)))
	}
	msg := fmt.Sprintf("voter set changed: %s; now %s", strings.Join(parts, ", "), keysString(keys))
	level, advice := slog.LevelInfo, ""
	for _, k := range removed {
		if k == n.local {
			level, advice = slog.LevelWarn, adviceRemoved
			msg += "; this replica was removed"
		}
	}
	n.logEvent(level, EventVoterSetChanged, advice, msg,
		"added", keysString(added), "removed", keysString(removed), "voters", keysString(keys))
}

// watchChange logs a voter change the leader starts.
func (n *Node) watchChange() {
	c, _, ok := n.st.PendingVoterChange()
	if !ok || n.st.Role() != kraft.Leader {
		n.watch.changing = false
		return
	}
	if n.watch.changing && c.Kind == n.watch.change.Kind && c.Voter == n.watch.change.Voter {
		return
	}
	n.watch.change, n.watch.changing = c, true
	n.logEvent(slog.LevelInfo, EventVoterChangeStarted, "", fmt.Sprintf("%v of %s started", c.Kind, keyString(c.Voter)),
		"kind", c.Kind.String(), "voter", keyString(c.Voter))
}

// watchLag logs, on the leader, the voters that fall more than the lag
// threshold behind its log end, and those that catch up again.
func (n *Node) watchLag() {
	if n.st.Role() != kraft.Leader || n.cfg.LagThreshold < 0 {
		for id := range n.watch.lagging {
			delete(n.watch.lagging, id)
			n.limits.forget(lagKey(id))
		}
		return
	}
	now := n.clock()
	if now-n.watch.lagAt < lagCheckEvery {
		return
	}
	n.watch.lagAt = now
	if n.watch.lagging == nil {
		n.watch.lagging = map[kraft.NodeID]bool{}
	}
	for _, v := range voterProgress(n.st) {
		if v.ID == n.local.ID {
			continue
		}
		if v.Lag <= n.cfg.LagThreshold {
			if n.watch.lagging[v.ID] {
				delete(n.watch.lagging, v.ID)
				n.limits.forget(lagKey(v.ID))
				n.logEvent(slog.LevelInfo, EventFollowerCaughtUp, "", fmt.Sprintf("voter %d caught up: %d records behind the log end", v.ID, v.Lag),
					"voter", int32(v.ID), "lag", v.Lag)
			}
			continue
		}
		n.watch.lagging[v.ID] = true
		ok, suppressed := n.limits.allow(lagKey(v.ID), now)
		if !ok {
			continue
		}
		what := fmt.Sprintf("at offset %d", v.EndOffset)
		if v.EndOffset < 0 {
			what = "has not fetched in this epoch"
		}
		n.logEvent(slog.LevelWarn, EventFollowerLagging, adviceLag,
			fmt.Sprintf("voter %d lags %d records behind the leader's log end %d (threshold %d): it %s", v.ID, v.Lag, n.st.LogEnd().Offset, n.cfg.LagThreshold, what),
			"voter", int32(v.ID), "lag", v.Lag, "end_offset", v.EndOffset, "threshold", n.cfg.LagThreshold, "suppressed", suppressed)
	}
}

type lagKey kraft.NodeID

// sameSlice: a and b are the same slice (the same array and length).
func sameSlice(a, b []replica.Voter) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// diffKeys returns the keys of b not in a, and of a not in b.
func diffKeys(a, b []kraft.ReplicaKey) (added, removed []kraft.ReplicaKey) {
	in := func(k kraft.ReplicaKey, s []kraft.ReplicaKey) bool {
		for _, x := range s {
			if x == k {
				return true
			}
		}
		return false
	}
	for _, k := range b {
		if !in(k, a) {
			added = append(added, k)
		}
	}
	for _, k := range a {
		if !in(k, b) {
			removed = append(removed, k)
		}
	}
	return added, removed
}

// keyString is a voter's key as kraftd's flags write it: id, or
// id:directory-id.
func keyString(k kraft.ReplicaKey) string {
	if k.DirectoryID == ([16]byte{}) {
		return fmt.Sprint(k.ID)
	}
	return fmt.Sprintf("%d:%s", k.ID, k.DirectoryID)
}

func keysString(ks []kraft.ReplicaKey) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = keyString(k)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
