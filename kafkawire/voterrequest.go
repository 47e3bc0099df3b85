package kafkawire

import (
	"fmt"

	"github.com/kraftquorum/kraft"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KIP-853 voter-change requests a replica sends itself, as Kafka's
// KafkaRaftClient does (docs/design.md D170): an auto-joining observer's
// AddRaftVoter (or RemoveRaftVoter of its old directory id) and a voter's
// UpdateRaftVoter when its endpoint changed.

// VoterRequestTimeoutMs is the timeout_ms of the AddRaftVoter a replica
// sends to join: Kafka's buildAddVoterRequest sends
// controller.quorum.request.timeout.ms, 2000 by default.
const VoterRequestTimeoutMs = 2000

// encodeVoterRequest makes the kmsg request of a ReceiveAddVoter,
// ReceiveRemoveVoter or ReceiveUpdateVoter: the event's cluster id and
// voter key; AddRaftVoter's TimeoutMs and UpdateRaftVoter's current leader
// epoch and kraft.version range; m.Endpoints are the voter's listeners
// (AddRaftVoter's and UpdateRaftVoter's, Name, Host and Port).
func encodeVoterRequest(m Msg, version int16) (kmsg.Request, error) {
	switch e := m.Event.(type) {
	case kraft.ReceiveAddVoter:
		r := kmsg.NewPtrAddRaftVoterRequest()
		r.Version = version
		r.ClusterID = ClusterIDString(e.ClusterID)
		r.TimeoutMillis = m.TimeoutMs
		r.VoterID = int32(e.Voter.ID)
		r.VoterDirectoryID = e.Voter.DirectoryID
		r.Listeners = []kmsg.AddRaftVoterRequestListener{}
		for _, ep := range m.Endpoints {
			r.Listeners = append(r.Listeners, kmsg.AddRaftVoterRequestListener{Name: ep.Name, Host: ep.Host, Port: ep.Port})
		}
		return r, nil
	case kraft.ReceiveRemoveVoter:
		r := kmsg.NewPtrRemoveRaftVoterRequest()
		r.Version = version
		r.ClusterID = ClusterIDString(e.ClusterID)
		r.VoterID = int32(e.Voter.ID)
		r.VoterDirectoryID = e.Voter.DirectoryID
		return r, nil
	case kraft.ReceiveUpdateVoter:
		r := kmsg.NewPtrUpdateRaftVoterRequest()
		r.Version = version
		r.ClusterID = ClusterIDString(e.ClusterID)
		r.CurrentLeaderEpoch = int32(e.CurrentLeaderEpoch)
		r.VoterID = int32(e.Voter.ID)
		r.VoterDirectoryID = e.Voter.DirectoryID
		r.Listeners = []kmsg.UpdateRaftVoterRequestListener{}
		for _, ep := range m.Endpoints {
			r.Listeners = append(r.Listeners, kmsg.UpdateRaftVoterRequestListener{Name: ep.Name, Host: ep.Host, Port: ep.Port})
		}
		r.KRaftVersionFeature.MinSupportedVersion = e.KRaftVersions.Min
		r.KRaftVersionFeature.MaxSupportedVersion = e.KRaftVersions.Max
		return r, nil
	}
	return nil, fmt.Errorf("kafkawire: %T is not a voter-change request event", m.Event)
}

// decodeVoterRequest makes a request Msg of an AddRaftVoter,
// RemoveRaftVoter or UpdateRaftVoter request. The requests do not name
// the requester: From is kraft.NoNode. Listener is true when the request
// names any listener, all of which are in Endpoints (the receiver picks
// the one under its listener name).
func decodeVoterRequest(r kmsg.Request) (Msg, error) {
	m := Msg{API: r.Key()}
	switch r := r.(type) {
	case *kmsg.AddRaftVoterRequest:
		cid, err := ParseClusterID(r.ClusterID)
		if err != nil {
			return m, err
		}
		for _, l := range r.Listeners {
			m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(r.VoterID), Name: l.Name, Host: l.Host, Port: l.Port})
		}
		m.TimeoutMs = r.TimeoutMillis
		m.Event = kraft.ReceiveAddVoter{
			From: kraft.NoNode, ClusterID: cid,
			Voter: kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID), DirectoryID: r.VoterDirectoryID}, Listener: len(r.Listeners) > 0,
		}
	case *kmsg.RemoveRaftVoterRequest:
		cid, err := ParseClusterID(r.ClusterID)
		if err != nil {
			return m, err
		}
		m.Event = kraft.ReceiveRemoveVoter{
			From: kraft.NoNode, ClusterID: cid,
			Voter: kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID), DirectoryID: r.VoterDirectoryID},
		}
	case *kmsg.UpdateRaftVoterRequest:
		cid, err := ParseClusterID(r.ClusterID)
		if err != nil {
			return m, err
		}
		for _, l := range r.Listeners {
			m.Endpoints = append(m.Endpoints, Endpoint{NodeID: kraft.NodeID(r.VoterID), Name: l.Name, Host: l.Host, Port: l.Port})
		}
		m.Event = kraft.ReceiveUpdateVoter{
			From: kraft.NoNode, ClusterID: cid, CurrentLeaderEpoch: kraft.Epoch(r.CurrentLeaderEpoch),
			Voter:    kraft.ReplicaKey{ID: kraft.NodeID(r.VoterID), DirectoryID: r.VoterDirectoryID},
			Listener: len(r.Listeners) > 0,
			KRaftVersions: kraft.VersionRange{
				Min: r.KRaftVersionFeature.MinSupportedVersion, Max: r.KRaftVersionFeature.MaxSupportedVersion,
			},
		}
	default:
		return m, fmt.Errorf("kafkawire: %s is not a voter-change request", kmsg.NameForKey(r.Key()))
	}
	return m, nil
}

// VoterAnswer is a leader's answer to a voter-change request: Kafka's
// error code and message (UpdateRaftVoter's has none), and, for
// UpdateRaftVoter, the CurrentLeader it names (LeaderID kraft.NoNode and
// no Leader endpoint when it names none).
type VoterAnswer struct {
	API         int16
	Code        kraft.ErrorCode
	Message     string
	LeaderID    kraft.NodeID
	LeaderEpoch kraft.Epoch
	Leader      *Endpoint
}

// DecodeVoterAnswer reads an AddRaftVoter, RemoveRaftVoter or
// UpdateRaftVoter response.
func DecodeVoterAnswer(r kmsg.Response) (VoterAnswer, error) {
	a := VoterAnswer{API: r.Key(), LeaderID: kraft.NoNode, LeaderEpoch: -1}
	switch r := r.(type) {
	case *kmsg.AddRaftVoterResponse:
		a.Code = kraft.ErrorCode(r.ErrorCode)
		if r.ErrorMessage != nil {
			a.Message = *r.ErrorMessage
		}
	case *kmsg.RemoveRaftVoterResponse:
		a.Code = kraft.ErrorCode(r.ErrorCode)
		if r.ErrorMessage != nil {
			a.Message = *r.ErrorMessage
		}
	case *kmsg.UpdateRaftVoterResponse:
		a.Code = kraft.ErrorCode(r.ErrorCode)
		cl := r.CurrentLeader
		a.LeaderID, a.LeaderEpoch = kraft.NodeID(cl.LeaderID), kraft.Epoch(cl.LeaderEpoch)
		if cl.LeaderID >= 0 && cl.Host != "" && cl.Port >= 0 && cl.Port <= 0xffff {
			a.Leader = &Endpoint{NodeID: kraft.NodeID(cl.LeaderID), Host: cl.Host, Port: uint16(cl.Port)}
		}
	default:
		return a, fmt.Errorf("kafkawire: %s is not a voter-change response", kmsg.NameForKey(r.Key()))
	}
	return a, nil
}

// isVoterRequest reports whether ev is a voter-change request event.
func isVoterRequest(ev kraft.Event) bool {
	switch ev.(type) {
	case kraft.ReceiveAddVoter, kraft.ReceiveRemoveVoter, kraft.ReceiveUpdateVoter:
		return true
	}
	return false
}
