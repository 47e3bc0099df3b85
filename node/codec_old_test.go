package node

// The hand-written event codec that node/codec_gen.go replaced
// (docs/design.md D270), kept only for TestGeneratedCodecMatchesHandWritten.

import "github.com/kraftquorum/kraft"

// Event tags.
const (
	oldWireNoEvent byte = iota
	oldWireVoteRequest
	oldWireVoteResponse
	oldWireBeginQuorumEpoch
	oldWireEndQuorumEpoch
	oldWireFetch
	oldWireFetchSnapshot
	oldWireFetchResponse
	oldWireLeaderlessEpoch
	oldWireQuorumResponse
	oldWireFetchSnapshotResponse
	oldWireAddVoter
	oldWireRemoveVoter
	oldWireAPIVersionsResponse
)

// oldAppendRequestEvent appends ev if it is a request; false if not.
func oldAppendRequestEvent(b []byte, ev kraft.Event) ([]byte, bool) {
	switch e := ev.(type) {
	case kraft.ReceiveVoteRequest:
		b = append(b, oldWireVoteRequest)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.VoterID))
		b = append(b, e.VoterDirectoryID[:]...)
		b = appendI32(b, int32(e.CandidateEpoch))
		b = appendI32(b, int32(e.Candidate))
		b = append(b, e.CandidateDirectoryID[:]...)
		b = appendLogEnd(b, e.CandidateLogEnd)
		b = appendBool(b, e.PreVote)
	case kraft.ReceiveBeginQuorumEpoch:
		b = append(b, oldWireBeginQuorumEpoch)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.LeaderID))
		b = appendI32(b, int32(e.LeaderEpoch))
		b = appendI32(b, int32(e.VoterID))
		b = append(b, e.VoterDirectoryID[:]...)
	case kraft.ReceiveEndQuorumEpoch:
		b = append(b, oldWireEndQuorumEpoch)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.LeaderID))
		b = appendI32(b, int32(e.LeaderEpoch))
		b = appendI64(b, int64(e.SuccessorRank.Position))
		b = appendI64(b, int64(e.SuccessorRank.Of))
	case kraft.ReceiveFetch:
		b = append(b, oldWireFetch)
		b = appendI32(b, int32(e.From))
		b = append(b, e.FromDirectoryID[:]...)
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.CurrentLeaderEpoch))
		b = appendI32(b, int32(e.FetchEpoch))
		b = appendI64(b, e.FetchOffset)
	case kraft.ReceiveFetchSnapshot:
		b = append(b, oldWireFetchSnapshot)
		b = appendI32(b, int32(e.From))
		b = append(b, e.FromDirectoryID[:]...)
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.CurrentLeaderEpoch))
		b = appendLogEnd(b, e.Snapshot)
		b = appendI64(b, e.Position)
		b = appendI64(b, e.Size)
	case kraft.ReceiveAddVoter:
		b = append(b, oldWireAddVoter)
		b = appendU64(b, e.Ref)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.Voter.ID))
		b = append(b, e.Voter.DirectoryID[:]...)
		b = appendBool(b, e.Listener)
	case kraft.ReceiveRemoveVoter:
		b = append(b, oldWireRemoveVoter)
		b = appendU64(b, e.Ref)
		b = appendI32(b, int32(e.From))
		b = appendNullUUID(b, e.ClusterID)
		b = appendI32(b, int32(e.Voter.ID))
		b = append(b, e.Voter.DirectoryID[:]...)
	default:
		return b, false
	}
	return b, true
}

// oldAppendResponseEvent appends ev if it is a response; false if not.
func oldAppendResponseEvent(b []byte, ev kraft.Event) ([]byte, bool) {
	switch e := ev.(type) {
	case kraft.ReceiveVoteResponse:
		b = append(b, oldWireVoteResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendI32(b, int32(e.Epoch))
		b = appendBool(b, e.VoteGranted)
		b = appendI32(b, int32(e.LeaderID))
	case kraft.ReceiveFetchResponse:
		b = append(b, oldWireFetchResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendI32(b, int32(e.LeaderID))
		b = appendI32(b, int32(e.LeaderEpoch))
		b = appendI64(b, e.HighWatermark)
		b = appendBool(b, e.Diverging != nil)
		if e.Diverging != nil {
			b = appendLogEnd(b, kraft.LogEnd{Offset: e.Diverging.Offset, Epoch: e.Diverging.Epoch})
		}
		b = appendBool(b, e.Snapshot != nil)
		if e.Snapshot != nil {
			b = appendLogEnd(b, *e.Snapshot)
		}
	case kraft.ReceiveLeaderlessEpoch:
		b = append(b, oldWireLeaderlessEpoch)
		b = appendI32(b, int32(e.From))
		b = appendI32(b, int32(e.Epoch))
	case kraft.ReceiveQuorumResponse:
		b = append(b, oldWireQuorumResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendI32(b, int32(e.Epoch))
		b = appendI32(b, int32(e.LeaderID))
	case kraft.ReceiveFetchSnapshotResponse:
		b = append(b, oldWireFetchSnapshotResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendI32(b, int32(e.LeaderID))
		b = appendI32(b, int32(e.LeaderEpoch))
		b = appendLogEnd(b, e.Snapshot)
		b = appendI64(b, e.Size)
		b = appendI64(b, e.Position)
		b = appendI64(b, e.Bytes)
	case kraft.ReceiveAPIVersionsResponse:
		b = append(b, oldWireAPIVersionsResponse)
		b = appendI32(b, int32(e.From))
		b = appendU16(b, uint16(e.Error))
		b = appendBool(b, e.KRaftVersions != nil)
		if e.KRaftVersions != nil {
			b = appendU16(b, uint16(e.KRaftVersions.Min))
			b = appendU16(b, uint16(e.KRaftVersions.Max))
		}
	default:
		return b, false
	}
	return b, true
}

// oldRequest decodes a request of the tag; false if the tag is not a
// request's.
func (d *wireDecoder) oldRequest(tag byte) (kraft.Event, bool) {
	switch tag {
	case oldWireVoteRequest:
		var e kraft.ReceiveVoteRequest
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.VoterID = d.node()
		e.VoterDirectoryID = d.uuid()
		e.CandidateEpoch = d.epoch()
		e.Candidate = d.node()
		e.CandidateDirectoryID = d.uuid()
		e.CandidateLogEnd = d.logEnd()
		e.PreVote = d.bool()
		return e, true
	case oldWireBeginQuorumEpoch:
		var e kraft.ReceiveBeginQuorumEpoch
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.LeaderID = d.node()
		e.LeaderEpoch = d.epoch()
		e.VoterID = d.node()
		e.VoterDirectoryID = d.uuid()
		return e, true
	case oldWireEndQuorumEpoch:
		var e kraft.ReceiveEndQuorumEpoch
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.LeaderID = d.node()
		e.LeaderEpoch = d.epoch()
		e.SuccessorRank.Position = d.int()
		e.SuccessorRank.Of = d.int()
		return e, true
	case oldWireFetch:
		var e kraft.ReceiveFetch
		e.From = d.node()
		e.FromDirectoryID = d.uuid()
		e.ClusterID = d.nullUUID()
		e.CurrentLeaderEpoch = d.epoch()
		e.FetchEpoch = d.epoch()
		e.FetchOffset = d.i64()
		return e, true
	case oldWireFetchSnapshot:
		var e kraft.ReceiveFetchSnapshot
		e.From = d.node()
		e.FromDirectoryID = d.uuid()
		e.ClusterID = d.nullUUID()
		e.CurrentLeaderEpoch = d.epoch()
		e.Snapshot = d.logEnd()
		e.Position = d.i64()
		e.Size = d.i64()
		return e, true
	case oldWireAddVoter:
		var e kraft.ReceiveAddVoter
		e.Ref = d.u64()
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.Voter.ID = d.node()
		e.Voter.DirectoryID = d.uuid()
		e.Listener = d.bool()
		return e, true
	case oldWireRemoveVoter:
		var e kraft.ReceiveRemoveVoter
		e.Ref = d.u64()
		e.From = d.node()
		e.ClusterID = d.nullUUID()
		e.Voter.ID = d.node()
		e.Voter.DirectoryID = d.uuid()
		return e, true
	}
	return nil, false
}

// oldResponse decodes a response of the tag; false if the tag is not a
// response's.
func (d *wireDecoder) oldResponse(tag byte) (kraft.Event, bool) {
	switch tag {
	case oldWireVoteResponse:
		var e kraft.ReceiveVoteResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		e.Epoch = d.epoch()
		e.VoteGranted = d.bool()
		e.LeaderID = d.node()
		return e, true
	case oldWireFetchResponse:
		var e kraft.ReceiveFetchResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		e.LeaderID = d.node()
		e.LeaderEpoch = d.epoch()
		e.HighWatermark = d.i64()
		if d.bool() {
			le := d.logEnd()
			e.Diverging = &kraft.LogOffsetMetadata{Offset: le.Offset, Epoch: le.Epoch}
		}
		if d.bool() {
			le := d.logEnd()
			e.Snapshot = &le
		}
		return e, true
	case oldWireLeaderlessEpoch:
		var e kraft.ReceiveLeaderlessEpoch
		e.From = d.node()
		e.Epoch = d.epoch()
		return e, true
	case oldWireQuorumResponse:
		var e kraft.ReceiveQuorumResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		e.Epoch = d.epoch()
		e.LeaderID = d.node()
		return e, true
	case oldWireFetchSnapshotResponse:
		var e kraft.ReceiveFetchSnapshotResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		e.LeaderID = d.node()
		e.LeaderEpoch = d.epoch()
		e.Snapshot = d.logEnd()
		e.Size = d.i64()
		e.Position = d.i64()
		e.Bytes = d.i64()
		return e, true
	case oldWireAPIVersionsResponse:
		var e kraft.ReceiveAPIVersionsResponse
		e.From = d.node()
		e.Error = kraft.ErrorCode(d.u16())
		if d.bool() {
			r := kraft.VersionRange{Min: int16(d.u16()), Max: int16(d.u16())}
			e.KRaftVersions = &r
		}
		return e, true
	}
	return nil, false
}
