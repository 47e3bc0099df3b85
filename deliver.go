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
	// Each message action maps itself, beside its type (messages.go,
	// docs/design.md D280).
	m, isMsg := a.(sent)
	if !isMsg {
		return NoNode, nil, false
	}
	if to, e = m.deliver(from); e == nil {
		return NoNode, nil, false
	}
	return to, e, true
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
