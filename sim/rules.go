package sim

import (
	"fmt"

	"github.com/kraftquorum/kraft"
)

// The safety rules that the simulator's Checker and the explorer
// (package sim/explore) share, as pure functions of what each one knows:
// each returns the rule broken and what is wrong, or "" when the rule
// holds. PersistBeforeSend is one more. The Checker adds the rules that
// need a history the explorer does not keep (every vote a disk ever
// recorded, the committed voter sets, snapshots).

// Outbound reports whether action a leaves the replica: a request or a
// response of one of the RPCs of kraft's catalogue of messages
// (kraft.RPCs, docs/design.md D230), the answer to the host's client
// (SendVoterChangeResponse) among them. Every other action is local to the
// replica's host: its quorum-state record, its log and snapshots, its
// timers, its reports. PersistBeforeSend checks every outbound action
// against the durable record; TestPersistBeforeSendKnowsEveryAction checks
// that its switch names exactly the catalogue's actions (docs/design.md
// D115), so a new message cannot leave the replica unchecked.
func Outbound(a kraft.Action) bool { return kraft.IsMessage(a) }

// PersistRule checks the quorum-state record next that replica self
// persists over its durable record d (hasRecord false: none was ever
// written): epochs never go back ("epoch-monotonic"), a vote is never
// changed within its epoch, nor cast for another after leading the epoch
// ("one-vote-per-epoch"), and only a leader's own record of the epoch
// drops its vote (Kafka's LeaderState.election; every other record of
// the epoch keeps it: "vote-durable").
func PersistRule(self kraft.ReplicaKey, d kraft.QuorumRecord, hasRecord bool, next kraft.QuorumRecord) (rule, detail string) {
	switch {
	case next.Epoch < d.Epoch:
		return "epoch-monotonic", fmt.Sprintf("persisted epoch %d after %d", next.Epoch, d.Epoch)
	case next.Epoch > d.Epoch || !hasRecord:
	case d.HasVote() && next.HasVote() && next.VotedKey != d.VotedKey:
		return "one-vote-per-epoch", fmt.Sprintf("voted for %v and for %v in epoch %d", d.VotedKey, next.VotedKey, next.Epoch)
	case d.HasVote() && !next.HasVote() && next.LeaderID != self.ID:
		return "vote-durable", fmt.Sprintf("persisted %+v, forgetting its vote for %v in epoch %d", next, d.VotedKey, next.Epoch)
	case !d.HasVote() && d.LeaderID == self.ID && next.HasVote() && !next.VotedKey.Matches(self):
		return "one-vote-per-epoch", fmt.Sprintf("led epoch %d (its vote for itself) and then voted for %v", next.Epoch, next.VotedKey)
	}
	return "", ""
}

// HighWatermarkRestarts reports whether a step from before to after
// starts the replica's high watermark again: a new leader's starts unknown
// (Kafka's transitionToLeader), and so does a resigned leader's (Kafka's
// ResignedState has none). Between restarts it never goes back
// ("hwm-monotonic").
func HighWatermarkRestarts(before, after kraft.State) bool {
	return (after.Role() == kraft.Leader || after.Role() == kraft.Resigned) && after.Role() != before.Role()
}

// LeaderHighWatermarkRule checks a leader's move of its high watermark to
// h, in epoch epoch, with a written log of logLen records whose record
// h-1 has epoch atH, and holders of the voters holding records [0, h)
// durably, as the leader does: h ends in a record of the leader's own
// epoch ("hwm-own-epoch", Kafka's LeaderState.maybeUpdateHighWatermark)
// and is held by a majority ("hwm-majority").
func LeaderHighWatermarkRule(h, logLen int64, epoch, atH kraft.Epoch, holders, voters int) (rule, detail string) {
	switch {
	case h > logLen:
		// The leader's own flushed offset need not reach h: a majority of
		// durable logs may do without it (docs/design.md D30).
		return "hwm-majority", fmt.Sprintf("leader's high watermark %d is past its own written log of %d", h, logLen)
	case h <= 0:
		return "hwm-own-epoch", fmt.Sprintf("leader of epoch %d moved its high watermark to %d, which ends in no record", epoch, h)
	case atH != epoch:
		return "hwm-own-epoch", fmt.Sprintf("leader of epoch %d moved its high watermark to %d, which ends in a record of epoch %d", epoch, h, atH)
	case holders < voters/2+1:
		return "hwm-majority", fmt.Sprintf("leader moved its high watermark to %d, held by %d of %d voters", h, holders, voters)
	}
	return "", ""
}
