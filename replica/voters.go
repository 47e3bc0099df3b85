package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
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

// Record payloads carry a one-byte type: data records, the control
// records kraft asks for (LeaderChange, VotersRecord: its voter set as
// EncodeVoters writes it), read barriers (a leader's no-op whose commit
// proves it still led after a read began; docs/design.md D65), and
// Kafka's KRaftVersionRecord (the kraft.version level as an int16, big
// endian), which a first leader writes between its LeaderChange and the
// bootstrap VotersRecord as Kafka's
// LeaderState.appendStartOfEpochControlRecords does, so that a log has the
// same records at the same offsets as a Kafka replica's (docs/design.md
// D155). Kafka keeps control records in the same log.
const (
	RecordData         byte = 0
	RecordLeaderChange byte = 1
	RecordVoters       byte = 2
	RecordBarrier      byte = 3
	RecordKRaftVersion byte = 4
)

// KRaftVersionRecord is the log payload of a KRaftVersionRecord of level v.
func KRaftVersionRecord(v int16) []byte {
	return []byte{RecordKRaftVersion, byte(uint16(v) >> 8), byte(v)}
}

// DataRecords makes the log payloads of a client's records: each with the
// RecordData type byte in front, all in one new block (one copy; a log
// that can keep memory it is handed keeps the block).
func DataRecords(records [][]byte) [][]byte {
	size := len(records)
	for _, r := range records {
		size += len(r)
	}
	block := make([]byte, 0, size)
	data := make([][]byte, len(records))
	for i, r := range records {
		start := len(block)
		block = append(append(block, RecordData), r...)
		data[i] = block[start:len(block):len(block)]
	}
	return data
}

// The encoding of a voter set (a VotersRecord's payload after its type
// byte, the bootstrap checkpoint's payload, and a snapshot's voter set):
//
//	voters   = version:u8 (0 or 1) count:u16 voter*
//	voter    = id:i32 directoryID:uuid minVersion:i16 maxVersion:i16
//	           endpointLen:u16 endpoint
//	           [version 1: listenerCount:u16 listener*]
//	listener = nameLen:u16 name hostLen:u16 host port:u16
//
// Version 1 is written only when a voter has Listeners, so a set without
// any encodes to the same bytes as before they existed, and version 0
// bytes (every record, checkpoint and snapshot written before) still
// decode (docs/design.md D260).
const (
	votersVersion          = 0
	votersVersionListeners = 1
)

// EncodeVoters encodes a voter set.
func EncodeVoters(vs []Voter) []byte {
	version := byte(votersVersion)
	for _, v := range vs {
		if len(v.Listeners) > 0 {
			version = votersVersionListeners
		}
	}
	b := []byte{version}
	b = appendU16(b, uint16(len(vs)))
	for _, v := range vs {
		b = appendU32(b, uint32(v.Key.ID))
		b = append(b, v.Key.DirectoryID[:]...)
		b = appendU16(b, uint16(v.KRaftVersions.Min))
		b = appendU16(b, uint16(v.KRaftVersions.Max))
		b = appendString16(b, v.Endpoint)
		if version == votersVersionListeners {
			ls := v.Listeners
			if len(ls) > 0xFFFF {
				ls = ls[:0xFFFF]
			}
			b = appendU16(b, uint16(len(ls)))
			for _, l := range ls {
				b = appendString16(b, l.Name)
				b = appendString16(b, l.Host)
				b = appendU16(b, l.Port)
			}
		}
	}
	return b
}

// appendString16 appends s, cut to 65,535 bytes, after its length (u16).
func appendString16(b []byte, s string) []byte {
	if len(s) > 0xFFFF {
		s = s[:0xFFFF]
	}
	b = appendU16(b, uint16(len(s)))
	return append(b, s...)
}

var errShort = errors.New("replica: voter set: truncated")

// DecodeVoters decodes what EncodeVoters wrote; the set must be a valid
// voter set (1 to kraft.MaxVoters voters with distinct ids).
func DecodeVoters(b []byte) ([]Voter, error) {
	take := func(n int) []byte {
		if len(b) < n {
			b = nil
			return nil
		}
		out := b[:n]
		b = b[n:]
		return out
	}
	head := take(3)
	if head == nil {
		return nil, errShort
	}
	version := head[0]
	if version != votersVersion && version != votersVersionListeners {
		return nil, fmt.Errorf("replica: voter set: unknown version %d", version)
	}
	str := func() (string, bool) {
		l := take(2)
		if l == nil {
			return "", false
		}
		n := int(binary.BigEndian.Uint16(l))
		s := take(n)
		return string(s), s != nil || n == 0
	}
	n := int(binary.BigEndian.Uint16(head[1:]))
	if n == 0 || n > kraft.MaxVoters {
		return nil, fmt.Errorf("replica: voter set: %d voters", n)
	}
	vs := make([]Voter, 0, n)
	for i := 0; i < n; i++ {
		f := take(4 + 16 + 2 + 2 + 2)
		if f == nil {
			return nil, errShort
		}
		var v Voter
		v.Key.ID = kraft.NodeID(int32(binary.BigEndian.Uint32(f)))
		copy(v.Key.DirectoryID[:], f[4:20])
		v.KRaftVersions.Min = int16(binary.BigEndian.Uint16(f[20:]))
		v.KRaftVersions.Max = int16(binary.BigEndian.Uint16(f[22:]))
		ep := take(int(binary.BigEndian.Uint16(f[24:])))
		if ep == nil && binary.BigEndian.Uint16(f[24:]) > 0 {
			return nil, errShort
		}
		v.Endpoint = string(ep)
		if version == votersVersionListeners {
			c := take(2)
			if c == nil {
				return nil, errShort
			}
			for j := int(binary.BigEndian.Uint16(c)); j > 0; j-- {
				var l Listener
				var ok1, ok2 bool
				l.Name, ok1 = str()
				l.Host, ok2 = str()
				p := take(2)
				if !ok1 || !ok2 || p == nil {
					return nil, errShort
				}
				l.Port = binary.BigEndian.Uint16(p)
				v.Listeners = append(v.Listeners, l)
			}
		}
		if v.Key.ID < 0 {
			return nil, fmt.Errorf("replica: voter set: negative id %d", v.Key.ID)
		}
		for _, w := range vs {
			if w.Key.ID == v.Key.ID {
				return nil, fmt.Errorf("replica: voter set: id %d appears twice", v.Key.ID)
			}
		}
		vs = append(vs, v)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("replica: voter set: %d trailing bytes", len(b))
	}
	return vs, nil
}

// votersRecord is a VotersRecord's log payload.
func votersRecord(vs []Voter) []byte { return append([]byte{RecordVoters}, EncodeVoters(vs)...) }

// IsVotersRecord reports whether a log payload is a VotersRecord.
func IsVotersRecord(data []byte) bool { return len(data) > 0 && data[0] == RecordVoters }

// KeysOf are the voters' keys.
func KeysOf(vs []Voter) []kraft.ReplicaKey {
	keys := make([]kraft.ReplicaKey, len(vs))
	for i, v := range vs {
		keys[i] = v.Key
	}
	return keys
}

// snapshotVotersMagic starts a snapshot that holds a voter set: the bytes
// of a snapshot of a dynamic quorum are the magic, the voter set's length
// (u32) and encoding, then the application's bytes. A snapshot of a static
// quorum holds the application's bytes alone. docs/design.md records the
// choice.
const snapshotVotersMagic = "\xffkraft-voters\x00"

// WriteSnapshotVoters writes the voter set header of a snapshot.
func WriteSnapshotVoters(w io.Writer, vs []Voter) error {
	enc := EncodeVoters(vs)
	b := make([]byte, 0, len(snapshotVotersMagic)+4+len(enc))
	b = append(b, snapshotVotersMagic...)
	b = appendU32(b, uint32(len(enc)))
	b = append(b, enc...)
	_, err := w.Write(b)
	return err
}

// ReadSnapshotVoters reads the voter set at the start of a snapshot's
// bytes, if it has one, and returns a reader of the application's bytes.
func ReadSnapshotVoters(r io.Reader) ([]Voter, io.Reader, error) {
	head := make([]byte, len(snapshotVotersMagic))
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	head = head[:n]
	if string(head) != snapshotVotersMagic {
		return nil, io.MultiReader(bytes.NewReader(head), r), nil
	}
	var l [4]byte
	if _, err := io.ReadFull(r, l[:]); err != nil {
		return nil, nil, fmt.Errorf("replica: snapshot voter set: %w", err)
	}
	size := binary.BigEndian.Uint32(l[:])
	if size > 1<<20 {
		return nil, nil, fmt.Errorf("replica: snapshot voter set of %d bytes", size)
	}
	enc := make([]byte, size)
	if _, err := io.ReadFull(r, enc); err != nil {
		return nil, nil, fmt.Errorf("replica: snapshot voter set: %w", err)
	}
	vs, err := DecodeVoters(enc)
	if err != nil {
		return nil, nil, err
	}
	return vs, r, nil
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
	end, err := r.write(a.Epoch, votersRecord(vs))
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

func appendU16(b []byte, v uint16) []byte { return append(b, byte(v>>8), byte(v)) }

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}
