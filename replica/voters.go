package replica

import (
	"fmt"
	"io"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Dynamic voter sets (KIP-853): VotersRecords in the log, the voter set a
// snapshot holds, the endpoints of the voters, the voter changes of the
// host's clients and of auto-joining replicas, and ApiVersions.

// Voter is one voter of a dynamic voter set: its key, the endpoint the
// other replicas reach it at (Kafka's default listener), the kraft.version
// levels it supports, and the voter's listeners as a Kafka VotersRecord or
// AddRaftVoter/UpdateRaftVoter request named them (nil when it named at
// most the one Endpoint is: a kraft voter's). Endpoint stays the address
// the transports dial; Listeners are kept only so that a VotersRecord a
// kraft leader rewrites names every listener Kafka gave, in its order
// (docs/design.md D260).
type Voter struct {
	Key           kraft.ReplicaKey
	Endpoint      string
	KRaftVersions kraft.VersionRange
	Listeners     []Listener
}

// Listener is one of a voter's listeners, as Kafka's VotersRecord's
// Endpoints and AddRaftVoterRequest's Listeners carry them.
type Listener struct {
	Name string
	Host string
	Port uint16
}

// SupportedKRaftVersions is the kraft.version range this layer supports,
// sent in ApiVersions answers and UpdateRaftVoter requests.
var SupportedKRaftVersions = kraft.VersionRange{Min: 0, Max: kraft.KRaftVersionReconfig}

// KeysOf are the voters' keys.
func KeysOf(vs []Voter) []kraft.ReplicaKey {
	keys := make([]kraft.ReplicaKey, len(vs))
	for i, v := range vs {
		keys[i] = v.Key
	}
	return keys
}

// snapshotVoters reads the voter set of the snapshot id, nil if it holds
// none.
func snapshotVoters(snaps Snapshots, id kraft.LogEnd, read func(io.Reader) ([]Voter, error)) ([]Voter, error) {
	rd, err := snaps.Open(id)
	if err != nil {
		return nil, fmt.Errorf("replica: opening snapshot %+v: %w", id, err)
	}
	defer func() { _ = rd.Close() }()
	var vs []Voter
	if read != nil {
		vs, err = read(rd)
	} else {
		vs, _, err = ReadSnapshotVoters(rd)
	}
	if err != nil {
		return nil, fmt.Errorf("replica: snapshot %+v: %w", id, err)
	}
	return vs, nil
}

// voterSetAt is a voter set in the log with its endpoints: the layer's
// copy of what the state keeps as kraft.VoterSetAt.
type voterSetAt struct {
	offset int64
	voters []Voter
}

// voterState is the layer's part of the voter sets.
type voterState struct {
	vsets           []voterSetAt                    // the voter sets in the log, as the state's VoterSets
	peerAddrs       map[kraft.NodeID]string         // the endpoints given to the host
	changeEndpoints map[kraft.ReplicaKey]string     // the endpoints of voters being added or updated
	changeListeners map[kraft.ReplicaKey][]Listener // their listeners, if their request named any (D260)
	nextRef         uint64
}

func (v *voterState) init() {
	v.peerAddrs = map[kraft.NodeID]string{}
	v.changeEndpoints = map[kraft.ReplicaKey]string{}
}

// recoverVoters finds the voter sets of a restarted replica: the bootstrap
// set at -1, the latest snapshot's set at its end minus one, and every
// VotersRecord of the log (the host contract's voter-set replay). The log
// is read from its start to its end for them unless the voter set is
// static (a static Kraft.Voters and no bootstrap set: a leader never
// writes a VotersRecord nor a snapshot's voter set then), so a static
// quorum restarts as fast as before and its snapshots are the
// application's bytes alone.
func recoverVoters(l storage.Log, snaps Snapshots, boot []Voter, static bool, maxBytes int, read func(io.Reader) ([]Voter, error)) ([]voterSetAt, error) {
	var sets []voterSetAt
	if boot != nil {
		sets = append(sets, voterSetAt{offset: -1, voters: boot})
	}
	if static && boot == nil {
		return sets, nil
	}
	from := l.StartOffset()
	if snaps != nil {
		if id, ok := snaps.Latest(); ok && id.Offset > 0 {
			vs, err := snapshotVoters(snaps, id, read)
			if err != nil {
				return nil, err
			}
			if vs != nil {
				sets = append(sets, voterSetAt{offset: id.Offset - 1, voters: vs})
				// The snapshot holds the set in force at its end: the log's
				// VotersRecords below it are read no more (Kafka's
				// KRaftControlRecordStateMachine reads the log from the
				// snapshot's end). A crash between taking a snapshot and
				// cleaning the log leaves such records behind.
				if from < id.Offset {
					from = id.Offset
				}
			}
		}
	}
	for from < l.End().Offset {
		entries, err := l.Read(from, maxBytes)
		if err != nil {
			return nil, fmt.Errorf("replica: reading the log at %d for its voter sets: %w", from, err)
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			if IsVotersRecord(e.Data) {
				vs, err := DecodeVoters(e.Data[1:])
				if err != nil {
					return nil, fmt.Errorf("replica: the VotersRecord at %d: %w", e.Offset, err)
				}
				sets = append(sets, voterSetAt{offset: e.Offset, voters: vs})
			}
			from = e.Offset + 1
		}
	}
	return sets, nil
}

func keySets(sets []voterSetAt) []kraft.VoterSetAt {
	var out []kraft.VoterSetAt
	for _, s := range sets {
		out = append(out, kraft.VoterSetAt{Offset: s.offset, Voters: KeysOf(s.voters)})
	}
	return out
}

// CurrentVoters is the voter set in force with its endpoints, nil for a
// static voter set.
func (r *Replica) CurrentVoters() []Voter {
	if len(r.voters.vsets) == 0 {
		return nil
	}
	return r.voters.vsets[len(r.voters.vsets)-1].voters
}

// addVoterSet records a VotersRecord (or a snapshot's set) and gives the
// host its voters' endpoints.
func (r *Replica) addVoterSet(offset int64, vs []Voter) {
	r.voters.vsets = append(r.voters.vsets, voterSetAt{offset: offset, voters: vs})
	for _, v := range vs {
		r.setPeer(v.Key.ID, v.Endpoint)
	}
}

// setPeer gives the host an endpoint it did not have. Endpoints are only
// added or changed, never forgotten: a removed voter may still be asked to
// leave.
func (r *Replica) setPeer(id kraft.NodeID, addr string) {
	if addr == "" || id == r.local.ID || r.voters.peerAddrs[id] == addr {
		return
	}
	put(&r.voters.peerAddrs, id, addr)
	r.emit(Peer{ID: id, Endpoint: addr})
}

// truncateVoterSets drops the sets at or after offset to (TruncateLog).
func (r *Replica) truncateVoterSets(to int64) {
	k := len(r.voters.vsets)
	for k > 0 && r.voters.vsets[k-1].offset >= to {
		k--
	}
	r.voters.vsets = r.voters.vsets[:k]
}

// votersWithEndpoints gives keys their endpoints and kraft.version ranges:
// change's voter from the request for an added or updated voter, the
// others from the set in force.
func (r *Replica) votersWithEndpoints(keys []kraft.ReplicaKey, change *kraft.VoterChange) []Voter {
	prev := r.CurrentVoters()
	out := make([]Voter, len(keys))
	for i, k := range keys {
		v := Voter{Key: k, KRaftVersions: SupportedKRaftVersions}
		for _, p := range prev {
			if p.Key.ID == k.ID {
				v.Endpoint, v.KRaftVersions, v.Listeners = p.Endpoint, p.KRaftVersions, p.Listeners
			}
		}
		if change != nil && change.Kind != kraft.RemoveVoter && change.Voter == k {
			if ep, ok := r.voters.changeEndpoints[k]; ok {
				// The request's listeners replace the old ones (nil when it
				// named only its endpoint), as Kafka's AddVoterHandler and
				// UpdateVoterHandler write the request's (D260).
				v.Endpoint, v.Listeners = ep, r.voters.changeListeners[k]
			}
			v.KRaftVersions = change.KRaftVersions
		}
		out[i] = v
	}
	return out
}

// appendVoters carries out AppendVoters: the VotersRecord at the log end,
// then LogAppended and VotersAppended.
func (r *Replica) appendVoters(a kraft.AppendVoters) {
	vs := r.votersWithEndpoints(a.Voters, &a.Change)
	end, err := r.write(a.Epoch, VotersRecord(vs))
	if err != nil {
		return
	}
	// The record holds the changed voter's endpoint from now on.
	delete(r.voters.changeEndpoints, a.Change.Voter)
	if _, ok := r.voters.changeListeners[a.Change.Voter]; ok {
		delete(r.voters.changeListeners, a.Change.Voter)
	}
	r.queue = append(r.queue, inbound{ev: kraft.VotersAppended{Offset: end.Offset - 1, Voters: a.Voters}})
	r.addVoterSet(end.Offset-1, vs)
}

// installedVoters reports the voter set of the snapshot id just installed.
func (r *Replica) installedVoters(id kraft.LogEnd) error {
	if r.cfg.Static {
		return nil
	}
	vs, err := snapshotVoters(r.cfg.Snapshots, id, r.cfg.SnapshotVoters)
	if err != nil || vs == nil {
		return err
	}
	kept := r.voters.vsets[:0]
	for _, s := range r.voters.vsets {
		if s.offset < 0 {
			kept = append(kept, s)
		}
	}
	r.voters.vsets = kept
	r.addVoterSet(id.Offset-1, vs)
	r.queue = append(r.queue, inbound{ev: kraft.VotersAppended{Offset: id.Offset - 1, Voters: KeysOf(vs)}})
	return nil
}

// AddVoter asks this replica, the leader, at time now to add key, reached
// at endpoint, to the voter set (Kafka's AddRaftVoter). The answer comes
// as a VoterChangeAnswer with the returned Ref; ErrNotLeader if it does
// not lead.
func (r *Replica) AddVoter(now time.Duration, key kraft.ReplicaKey, endpoint string) (uint64, error) {
	return r.AddVoterListeners(now, key, endpoint, nil)
}

// AddVoterListeners is AddVoter of a voter whose request named listeners
// (a Kafka AddRaftVoterRequest's Listeners, endpoint's among them): the
// VotersRecord that adds it names them all (docs/design.md D260).
func (r *Replica) AddVoterListeners(now time.Duration, key kraft.ReplicaKey, endpoint string, listeners []Listener) (uint64, error) {
	return r.voterCall(now, func(ref uint64) kraft.Event {
		put(&r.voters.changeEndpoints, key, endpoint)
		r.putChangeListeners(key, listeners)
		if kraft.VoterByID(r.st.Voters(), key.ID) < 0 {
			// ApiVersions goes to the new voter before it is in the set.
			r.setPeer(key.ID, endpoint)
		}
		return kraft.ReceiveAddVoter{Ref: ref, From: kraft.NoNode, ClusterID: r.cfg.Kraft.ClusterID, Voter: key, Listener: true}
	})
}

// RemoveVoter asks this replica, the leader, to remove the voter key
// (Kafka's RemoveRaftVoter); answered as AddVoter.
func (r *Replica) RemoveVoter(now time.Duration, key kraft.ReplicaKey) (uint64, error) {
	return r.voterCall(now, func(ref uint64) kraft.Event {
		return kraft.ReceiveRemoveVoter{Ref: ref, From: kraft.NoNode, ClusterID: r.cfg.Kraft.ClusterID, Voter: key}
	})
}

// UpdateVoter asks this replica, the leader, to record a new endpoint for
// the voter key (Kafka's UpdateRaftVoter); answered as AddVoter.
func (r *Replica) UpdateVoter(now time.Duration, key kraft.ReplicaKey, endpoint string) (uint64, error) {
	return r.UpdateVoterListeners(now, key, endpoint, nil)
}

// UpdateVoterListeners is UpdateVoter with the listeners a Kafka
// UpdateRaftVoterRequest named, as AddVoterListeners.
func (r *Replica) UpdateVoterListeners(now time.Duration, key kraft.ReplicaKey, endpoint string, listeners []Listener) (uint64, error) {
	return r.voterCall(now, func(ref uint64) kraft.Event {
		put(&r.voters.changeEndpoints, key, endpoint)
		r.putChangeListeners(key, listeners)
		return kraft.ReceiveUpdateVoter{
			Ref: ref, From: kraft.NoNode, ClusterID: r.cfg.Kraft.ClusterID, CurrentLeaderEpoch: r.st.Epoch(),
			Voter: key, Listener: true, KRaftVersions: SupportedKRaftVersions,
		}
	})
}

// putChangeListeners records the listeners of a voter being added or
// updated, or forgets older ones when there are none.
func (r *Replica) putChangeListeners(key kraft.ReplicaKey, ls []Listener) {
	if len(ls) > 0 {
		put(&r.voters.changeListeners, key, append([]Listener(nil), ls...))
	} else if _, ok := r.voters.changeListeners[key]; ok {
		delete(r.voters.changeListeners, key)
	}
}

func (r *Replica) voterCall(now time.Duration, ev func(ref uint64) kraft.Event) (uint64, error) {
	if !r.input(now) {
		return 0, r.err
	}
	if r.st.Role() != kraft.Leader {
		return 0, ErrNotLeader
	}
	if r.xfer.active {
		return 0, ErrTransferring
	}
	r.voters.nextRef++
	ref := r.voters.nextRef
	r.step(ev(ref))
	r.settle()
	return ref, nil
}

// answerAPIVersions answers an ApiVersions request with the range this
// layer supports.
func (r *Replica) answerAPIVersions(m Message) {
	v := SupportedKRaftVersions
	r.emit(Send{Message: Message{
		From: r.local.ID, To: m.From, Corr: m.Corr, Response: true,
		Event: kraft.ReceiveAPIVersionsResponse{From: r.local.ID, KRaftVersions: &v},
	}})
}

// sendVoterChange sends an auto-joining observer's request to its leader:
// an AddRaftVoter with this replica's endpoint, or a RemoveRaftVoter of its
// old key, which has no endpoint (Kafka's RemoveRaftVoterRequest carries
// only the cluster id and the voter's id and directory id). Its answer is
// not awaited (the state sends it again on its voter-change timer).
func (r *Replica) sendVoterChange(a kraft.SendVoterChange) {
	to, ev, ok := kraft.Deliver(r.local, a)
	if !ok {
		return
	}
	m := Message{From: r.local.ID, To: to, Event: ev}
	if _, add := ev.(kraft.ReceiveAddVoter); add {
		m.Endpoint = r.cfg.Endpoint
	}
	r.corr++
	m.Corr = r.corr
	r.emit(Send{Message: m})
}

// onVoterRequest steps a replica's AddRaftVoter or RemoveRaftVoter (an
// auto-joining observer's) with a Ref of the layer's.
func (r *Replica) onVoterRequest(m Message) {
	r.voters.nextRef++
	switch e := m.Event.(type) {
	case kraft.ReceiveAddVoter:
		e.Ref = r.voters.nextRef
		if m.Endpoint != "" {
			put(&r.voters.changeEndpoints, e.Voter, m.Endpoint)
			r.putChangeListeners(e.Voter, nil)
			if kraft.VoterByID(r.st.Voters(), e.Voter.ID) < 0 {
				r.setPeer(e.Voter.ID, m.Endpoint)
			}
		}
		r.step(e)
	case kraft.ReceiveRemoveVoter:
		e.Ref = r.voters.nextRef
		r.step(e)
	}
}
