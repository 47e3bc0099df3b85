package node

import (
	"fmt"

	"github.com/kraftquorum/kraft"
)

func leaderOrNone(s kraft.State) kraft.NodeID {
	if l := s.Leader(); l != s.Local().ID {
		return l
	}
	return kraft.NoNode
}

// Status is a replica's view of the quorum (Kafka's DescribeQuorum, as
// far as one replica knows it).
type Status struct {
	ID            kraft.NodeID `json:"id"`
	Role          string       `json:"role"`
	Epoch         kraft.Epoch  `json:"epoch"`
	Leader        kraft.NodeID `json:"leader"`
	HighWatermark int64        `json:"high_watermark"`
	LogEnd        int64        `json:"log_end"`
	LogEndEpoch   kraft.Epoch  `json:"log_end_epoch"`
	Flushed       int64        `json:"flushed"`
	// LogStart is the offset of the first record the log holds (0 until a
	// snapshot lets the node delete the records before it).
	LogStart int64 `json:"log_start"`
	// LatestSnapshot is the newest snapshot on disk (its end offset and
	// epoch), nil if none.
	LatestSnapshot *SnapshotID `json:"latest_snapshot,omitempty"`
	// SnapshotsTaken and SnapshotsInstalled count, since Start, the
	// snapshots this node took and the ones it installed from the leader.
	SnapshotsTaken     int `json:"snapshots_taken,omitempty"`
	SnapshotsInstalled int `json:"snapshots_installed,omitempty"`
	// Voters, on the leader: each voter's end offset as the leader counts
	// it (-1 before its first Fetch) and its lag behind the leader's log
	// end.
	Voters []VoterStatus `json:"voters,omitempty"`
	// KRaftVersion is 1 when the voter set lives in the log and can change
	// (KIP-853), 0 for a static voter set.
	KRaftVersion int16 `json:"kraft_version"`
	// VoterSet is the voter set in force as this replica knows it
	// (committed or not), with the endpoints the log holds.
	VoterSet []VoterInfo `json:"voter_set,omitempty"`
	// PendingVoterChange, on the leader, is the AddRaftVoter or
	// RemoveRaftVoter in progress, if any.
	PendingVoterChange string `json:"pending_voter_change,omitempty"`
	// TransportDropped is how many messages the transport dropped since it
	// was made (not encodable, no connection, a full queue), if it counts
	// them (a DropCounter: MemEndpoint, TCPTransport).
	TransportDropped uint64 `json:"transport_dropped,omitempty"`
}

// SnapshotID is a snapshot's id in a Status: its end offset and the epoch
// of the record before it (a kraft.LogEnd).
type SnapshotID struct {
	Offset int64       `json:"offset"`
	Epoch  kraft.Epoch `json:"epoch"`
}

// VoterStatus is one voter's replication progress, as the leader sees it.
type VoterStatus struct {
	ID        kraft.NodeID `json:"id"`
	EndOffset int64        `json:"end_offset"`
	Lag       int64        `json:"lag"`
}

// Status reports the replica's role, epoch, leader, high watermark and
// log, and on the leader each voter's progress.
func (n *Node) Status() (Status, error) {
	var st Status
	err := n.call(func() {
		s := n.st
		st = Status{
			ID: n.local.ID, Role: s.Role().String(), Epoch: s.Epoch(), Leader: s.Leader(),
			HighWatermark: s.HighWatermark(), LogEnd: s.LogEnd().Offset, LogEndEpoch: s.LogEnd().Epoch,
			Flushed: s.FlushedOffset(), LogStart: s.LogStart(),
		}
		st.SnapshotsTaken, st.SnapshotsInstalled = n.r.SnapshotCounts()
		if id, ok := s.LatestSnapshot(); ok {
			st.LatestSnapshot = &SnapshotID{Offset: id.Offset, Epoch: id.Epoch}
		}
		st.KRaftVersion, st.VoterSet = s.KRaftVersion(), n.voterInfos()
		if dc, ok := n.cfg.Transport.(DropCounter); ok {
			st.TransportDropped = dc.Dropped()
		}
		if c, _, ok := s.PendingVoterChange(); ok {
			st.PendingVoterChange = fmt.Sprintf("%v %v", c.Kind, c.Voter)
		}
		st.Voters = voterProgress(s)
	})
	return st, err
}

// voterProgress is, on a leader, each voter's end offset as the leader
// counts it (-1 before its first Fetch) and its lag behind the leader's
// log end; nil on any other role.
func voterProgress(s kraft.State) []VoterStatus {
	ends := s.VoterEndOffsets()
	if ends == nil {
		return nil
	}
	var out []VoterStatus
	for i, v := range s.Voters() {
		lag := s.LogEnd().Offset - ends[i]
		if ends[i] < 0 {
			lag = s.LogEnd().Offset
		}
		out = append(out, VoterStatus{ID: v.ID, EndOffset: ends[i], Lag: lag})
	}
	return out
}
