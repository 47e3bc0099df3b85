package kraft

// Deliver turns a message action of replica from into the event its
// addressee steps: a SendVoteRequest becomes the peer's ReceiveVoteRequest,
// a SendFetchResponse the peer's ReceiveFetchResponse, and so on, field by
// field as docs/wire-mapping.md maps them through Kafka's wire format. It is
// the one place where a host (or the runtime, or the simulator) pairs an
// action with an event, so a transport that carries events needs no mapping
// of its own.
//
// to is the addressee's id; NoNode for a SendFetch of an observer searching
// for the leader (To: NoNode), which the host sends to any bootstrap voter.
// ok is false for actions that are not messages (Persist, timers, log
// actions such as AppendFetched, snapshot actions, RoleChanged,
// HighWatermarkChanged, Fault, LeaderRefused).
// BeginQuorumEpoch and EndQuorumEpoch responses become
// ReceiveQuorumResponse, through which the requester learns a newer epoch
// and its leader, as Kafka's maybeHandleCommonResponse does (docs/design.md
// D28).
//
// A Fetch response's records are not part of the event: the host attaches
// them to the response, and the addressee's host sets Records and appends
// them when the state asks with AppendFetched (D240). Snapshot bytes
// are not either (D44): a FetchSnapshot request's Size is the addressee
// host's to look up (Deliver sets -1, "no such snapshot"), and a
// FetchSnapshot response's Bytes is set to the whole rest of the snapshot
// (Size - Position) on NONE and 0 otherwise; a host that sends smaller
// chunks sets the length it attached.
//
// An auto-joining observer's SendVoterChange becomes the leader's
// ReceiveAddVoter (Listener true: a replica sends its own listeners) or
// ReceiveRemoveVoter, with Ref 0: the receiving host sets its own handle.
// SendVoterChangeResponse is not delivered (the host routes it to the
// requester by Ref; a replica's state takes no answer), nor is
// SendAPIVersions (the addressee's host answers it, not its state).
func Deliver(from ReplicaKey, a Action) (to NodeID, e Event, ok bool) {
	switch a := a.(type) {
	case SendVoteRequest:
		return a.To.ID, ReceiveVoteRequest{
			From: from.ID, ClusterID: a.ClusterID, VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
			CandidateEpoch: a.CandidateEpoch, Candidate: a.Candidate.ID, CandidateDirectoryID: a.Candidate.DirectoryID,
			CandidateLogEnd: a.CandidateLogEnd, PreVote: a.PreVote,
		}, true
	case SendVoteResponse:
		return a.To, ReceiveVoteResponse{From: from.ID, Error: a.Error, Epoch: a.Epoch, VoteGranted: a.VoteGranted, LeaderID: a.LeaderID}, true
	case SendBeginQuorumEpoch:
		return a.To.ID, ReceiveBeginQuorumEpoch{
			From: from.ID, ClusterID: a.ClusterID, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
			VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
		}, true
	case SendEndQuorumEpoch:
		return a.To.ID, ReceiveEndQuorumEpoch{
			From: from.ID, ClusterID: a.ClusterID, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
			SuccessorRank: RankOf(a.To, a.PreferredSuccessors),
		}, true
	case SendFetch:
		return a.To, ReceiveFetch{
			From: from.ID, FromDirectoryID: from.DirectoryID, ClusterID: a.ClusterID,
			CurrentLeaderEpoch: a.CurrentLeaderEpoch, FetchEpoch: a.FetchEpoch, FetchOffset: a.FetchOffset,
		}, true
	case SendFetchResponse:
		return a.To, ReceiveFetchResponse{
			From: from.ID, Error: a.Error, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
			HighWatermark: a.HighWatermark, Diverging: a.Diverging, Snapshot: a.Snapshot,
		}, true
	case SendFetchSnapshot:
		return a.To, ReceiveFetchSnapshot{
			From: from.ID, FromDirectoryID: from.DirectoryID, ClusterID: a.ClusterID,
			CurrentLeaderEpoch: a.CurrentLeaderEpoch, Snapshot: a.Snapshot, Position: a.Position, Size: -1,
		}, true
	case SendBeginQuorumEpochResponse:
		return a.To, ReceiveQuorumResponse{From: from.ID, Error: a.Error, Epoch: a.Epoch, LeaderID: a.LeaderID}, true
	case SendEndQuorumEpochResponse:
		return a.To, ReceiveQuorumResponse{From: from.ID, Error: a.Error, Epoch: a.Epoch, LeaderID: a.LeaderID}, true
	case SendFetchSnapshotResponse:
		var n int64
		if a.Error == ErrNone && a.Position >= 0 && a.Size >= a.Position {
			n = a.Size - a.Position
		}
		return a.To, ReceiveFetchSnapshotResponse{
			From: from.ID, Error: a.Error, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
			Snapshot: a.Snapshot, Size: a.Size, Position: a.Position, Bytes: n,
		}, true
	case SendVoterChange:
		if a.Kind == RemoveVoter {
			return a.To, ReceiveRemoveVoter{From: from.ID, ClusterID: a.ClusterID, Voter: a.Voter}, true
		}
		return a.To, ReceiveAddVoter{From: from.ID, ClusterID: a.ClusterID, Voter: a.Voter, Listener: true}, true
	case Persist, TruncateLog, AppendLeaderChange, HighWatermarkChanged, ResetTimer, StopTimer, RoleChanged, Fault, LeaderRefused,
		WriteSnapshotChunk, InstallSnapshot, AppendVoters, SendAPIVersions, SendVoterChangeResponse:
	}
	return NoNode, nil, false
}

// RankOf is key's place in an EndQuorumEpoch request's preferred
// successors: the first entry with its id whose directory id matches
// (KIP-853: an entry or a key without one matches any), or "not listed"
// (Position == Of) if none does.
func RankOf(key ReplicaKey, successors []ReplicaKey) SuccessorRank {
	for i, k := range successors {
		if k.Matches(key) || key.Matches(k) {
			return SuccessorRank{Position: i, Of: len(successors)}
		}
	}
	return SuccessorRank{Position: len(successors), Of: len(successors)}
}
