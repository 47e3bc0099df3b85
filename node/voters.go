package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Dynamic voter sets (KIP-853) in the runtime: VotersRecords in the log, the
// bootstrap checkpoint, the voter set a snapshot holds, the transport's
// address book, and the AddVoter, RemoveVoter and UpdateVoter calls.

// Voter is one voter of a dynamic voter set as the runtime keeps it: its
// key, the endpoint the other replicas reach it at (the transport's
// address; Kafka's default listener), and the kraft.version levels it
// supports.
type Voter struct {
	Key           kraft.ReplicaKey
	Endpoint      string
	KRaftVersions kraft.VersionRange
}

// supportedKRaftVersions is the kraft.version range this runtime supports,
// sent in ApiVersions answers and UpdateRaftVoter requests.
var supportedKRaftVersions = kraft.VersionRange{Min: 0, Max: kraft.KRaftVersionReconfig}

// The encoding of a voter set (a VotersRecord's payload after its type
// byte, the bootstrap checkpoint's payload, and a snapshot's voter set):
//
//	voters   = version:u8 (0) count:u16 voter*
//	voter    = id:i32 directoryID:uuid minVersion:i16 maxVersion:i16
//	           endpointLen:u16 endpoint
const votersVersion = 0

// encodeVoters encodes a voter set.
func encodeVoters(vs []Voter) []byte {
	b := []byte{votersVersion}
	b = appendU16(b, uint16(len(vs)))
	for _, v := range vs {
		b = appendI32(b, int32(v.Key.ID))
		b = append(b, v.Key.DirectoryID[:]...)
		b = appendU16(b, uint16(v.KRaftVersions.Min))
		b = appendU16(b, uint16(v.KRaftVersions.Max))
		ep := v.Endpoint
		if len(ep) > 0xFFFF {
			ep = ep[:0xFFFF]
		}
		b = appendU16(b, uint16(len(ep)))
		b = append(b, ep...)
	}
	return b
}

// decodeVoters decodes what encodeVoters wrote; the set must be a valid
// voter set (1 to kraft.MaxVoters voters with distinct ids).
func decodeVoters(b []byte) ([]Voter, error) {
	d := wireDecoder{b: b}
	if v := d.u8(); d.err == nil && v != votersVersion {
		return nil, fmt.Errorf("node: voter set: unknown version %d", v)
	}
	n := int(d.u16())
	if d.err == nil && (n == 0 || n > kraft.MaxVoters) {
		return nil, fmt.Errorf("node: voter set: %d voters", n)
	}
	vs := make([]Voter, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var v Voter
		v.Key.ID = d.node()
		v.Key.DirectoryID = d.uuid()
		v.KRaftVersions.Min = int16(d.u16())
		v.KRaftVersions.Max = int16(d.u16())
		v.Endpoint = string(d.take(int(d.u16())))
		if d.err == nil && v.Key.ID < 0 {
			return nil, fmt.Errorf("node: voter set: negative id %d", v.Key.ID)
		}
		for _, w := range vs {
			if w.Key.ID == v.Key.ID {
				return nil, fmt.Errorf("node: voter set: id %d appears twice", v.Key.ID)
			}
		}
		vs = append(vs, v)
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("node: voter set: %d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, d.err
	}
	return vs, nil
}

// votersRecord is a VotersRecord's log payload.
func votersRecord(vs []Voter) []byte { return append([]byte{recordVoters}, encodeVoters(vs)...) }

// isVotersRecord reports whether a log payload is a VotersRecord.
func isVotersRecord(data []byte) bool { return len(data) > 0 && data[0] == recordVoters }

// keysOf are the voters' keys.
func keysOf(vs []Voter) []kraft.ReplicaKey {
	keys := make([]kraft.ReplicaKey, len(vs))
	for i, v := range vs {
		keys[i] = v.Key
	}
	return keys
}

// snapshotVotersMagic starts a snapshot that holds a voter set: the bytes
// of a snapshot of a dynamic quorum are the magic, the voter set's length
// (u32) and encoding, then the application's bytes (what Config.Snapshot
// wrote and Config.Restore reads). A snapshot of a static quorum holds the
// application's bytes alone. docs/design.md records the choice.
const snapshotVotersMagic = "\xffkraft-voters\x00"

// writeSnapshotVoters writes the voter set header of a snapshot.
func writeSnapshotVoters(w io.Writer, vs []Voter) error {
	enc := encodeVoters(vs)
	b := make([]byte, 0, len(snapshotVotersMagic)+4+len(enc))
	b = append(b, snapshotVotersMagic...)
	b = appendU32(b, uint32(len(enc)))
	b = append(b, enc...)
	_, err := w.Write(b)
	return err
}

// readSnapshotVoters reads the voter set at the start of a snapshot's
// bytes, if it has one, and returns a reader of the application's bytes.
func readSnapshotVoters(r io.Reader) ([]Voter, io.Reader, error) {
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
		return nil, nil, fmt.Errorf("node: snapshot voter set: %w", err)
	}
	size := binary.BigEndian.Uint32(l[:])
	if size > 1<<20 {
		return nil, nil, fmt.Errorf("node: snapshot voter set of %d bytes", size)
	}
	enc := make([]byte, size)
	if _, err := io.ReadFull(r, enc); err != nil {
		return nil, nil, fmt.Errorf("node: snapshot voter set: %w", err)
	}
	vs, err := decodeVoters(enc)
	if err != nil {
		return nil, nil, err
	}
	return vs, r, nil
}

// snapshotVoters reads the voter set of the snapshot id, nil if it holds
// none.
func snapshotVoters(snaps *storage.Snapshots, id kraft.LogEnd) ([]Voter, error) {
	r, err := snaps.Open(id)
	if err != nil {
		return nil, fmt.Errorf("node: opening snapshot %+v: %w", id, err)
	}
	defer func() { _ = r.Close() }()
	vs, _, err := readSnapshotVoters(r)
	if err != nil {
		return nil, fmt.Errorf("node: snapshot %+v: %w", id, err)
	}
	return vs, nil
}

// voterSetAt is a voter set in the log with its endpoints: the runtime's
// copy of what the state keeps as kraft.VoterSetAt.
type voterSetAt struct {
	offset int64
	voters []Voter
}

// bootstrapVoters is the bootstrap checkpoint's voter set: read from
// Config.BootstrapPath, or written there from Config.InitialVoters the
// first time (only into a log that holds nothing yet), or
// Config.InitialVoters as they are without a path. nil: none.
func bootstrapVoters(cfg Config) ([]Voter, error) {
	if cfg.BootstrapPath == "" {
		return cfg.InitialVoters, nil
	}
	b, err := storage.ReadBootstrap(cfg.BootstrapPath)
	if err != nil {
		return nil, err
	}
	if b != nil {
		vs, err := decodeVoters(b)
		if err != nil {
			return nil, fmt.Errorf("node: bootstrap checkpoint %s: %w", cfg.BootstrapPath, err)
		}
		if cfg.InitialVoters != nil && !sameVoterKeys(vs, cfg.InitialVoters) {
			return nil, fmt.Errorf("node: Config.InitialVoters %v differ from the bootstrap checkpoint's %v (%s)",
				keysOf(cfg.InitialVoters), keysOf(vs), cfg.BootstrapPath)
		}
		return vs, nil
	}
	if cfg.InitialVoters == nil {
		return nil, nil
	}
	if cfg.Log.End().Offset > 0 || cfg.Log.StartOffset() > 0 {
		// Kafka's format refuses a directory that holds data.
		return nil, fmt.Errorf("node: Config.InitialVoters for a log that already holds records (ends at %d)", cfg.Log.End().Offset)
	}
	if err := storage.WriteBootstrap(cfg.BootstrapPath, encodeVoters(cfg.InitialVoters)); err != nil {
		return nil, err
	}
	return cfg.InitialVoters, nil
}

func sameVoterKeys(a, b []Voter) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key {
			return false
		}
	}
	return true
}

// recoverVoters finds the voter sets of a restarted replica: the bootstrap
// set at -1, the latest snapshot's set at its end minus one, and every
// VotersRecord of the log (host contract rule 11). The log is read from
// its start to its end for them unless the voter set is static (a static
// Kraft.Voters and no bootstrap set: a leader never writes a VotersRecord
// nor a snapshot's voter set then), so a static quorum restarts as fast
// as before and its snapshots are the application's bytes alone.
func recoverVoters(l storage.Log, snaps *storage.Snapshots, boot []Voter, static bool, maxBytes int) ([]voterSetAt, error) {
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
			vs, err := snapshotVoters(snaps, id)
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
			return nil, fmt.Errorf("node: reading the log at %d for its voter sets: %w", from, err)
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			if isVotersRecord(e.Data) {
				vs, err := decodeVoters(e.Data[1:])
				if err != nil {
					return nil, fmt.Errorf("node: the VotersRecord at %d: %w", e.Offset, err)
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
		out = append(out, kraft.VoterSetAt{Offset: s.offset, Voters: keysOf(s.voters)})
	}
	return out
}

// currentVoters is the voter set in force with its endpoints, nil for a
// static voter set.
func (n *Node) currentVoters() []Voter {
	if len(n.vsets) == 0 {
		return nil
	}
	return n.vsets[len(n.vsets)-1].voters
}

// addVoterSet records a VotersRecord (or a snapshot's set) and points the
// transport at its voters' endpoints.
func (n *Node) addVoterSet(offset int64, vs []Voter) {
	n.vsets = append(n.vsets, voterSetAt{offset: offset, voters: vs})
	n.updatePeers(vs)
}

// truncateVoterSets drops the sets at or after offset to (TruncateLog).
func (n *Node) truncateVoterSets(to int64) {
	k := len(n.vsets)
	for k > 0 && n.vsets[k-1].offset >= to {
		k--
	}
	n.vsets = n.vsets[:k]
}

// peerBook is a Transport that keeps addresses (TCPTransport): the runtime
// points it at the endpoints of the voter set.
type peerBook interface {
	SetPeer(id kraft.NodeID, addr string)
}

// updatePeers gives the transport the endpoints of vs. Addresses are only
// added or changed, never forgotten: a removed voter may still be asked to
// leave, and the static configuration's stay.
func (n *Node) updatePeers(vs []Voter) {
	for _, v := range vs {
		n.setPeer(v.Key.ID, v.Endpoint)
	}
}

func (n *Node) setPeer(id kraft.NodeID, addr string) {
	pb, ok := n.cfg.Transport.(peerBook)
	if !ok || addr == "" || id == n.local.ID || n.peerAddrs[id] == addr {
		return
	}
	n.peerAddrs[id] = addr
	pb.SetPeer(id, addr)
}

// votersWithEndpoints gives keys their endpoints and kraft.version ranges:
// change's voter from the request (changeEndpoints) for an added or
// updated voter, the others from the set in force, else from the bootstrap
// set or none.
func (n *Node) votersWithEndpoints(keys []kraft.ReplicaKey, change *kraft.VoterChange) []Voter {
	prev := n.currentVoters()
	out := make([]Voter, len(keys))
	for i, k := range keys {
		v := Voter{Key: k, KRaftVersions: supportedKRaftVersions}
		for _, p := range prev {
			if p.Key.ID == k.ID {
				v.Endpoint, v.KRaftVersions = p.Endpoint, p.KRaftVersions
			}
		}
		if change != nil && change.Kind != kraft.RemoveVoter && change.Voter == k {
			if ep, ok := n.changeEndpoints[k]; ok {
				v.Endpoint = ep
			}
			v.KRaftVersions = change.KRaftVersions
		}
		out[i] = v
	}
	return out
}

// appendVoters carries out AppendVoters: the VotersRecord at the log end,
// then LogAppended and VotersAppended.
func (n *Node) appendVoters(a kraft.AppendVoters) {
	vs := n.votersWithEndpoints(a.Voters, &a.Change)
	end, err := n.write(a.Epoch, votersRecord(vs))
	if err != nil {
		return // write stopped the node
	}
	// The record holds the changed voter's endpoint from now on.
	delete(n.changeEndpoints, a.Change.Voter)
	n.queue = append(n.queue, inbound{ev: kraft.VotersAppended{Offset: end.Offset - 1, Voters: a.Voters}})
	n.addVoterSet(end.Offset-1, vs)
}

// stepFetched reports records a follower appended: each LogAppended, then
// a VotersAppended for every VotersRecord it covers.
func (n *Node) stepFetched(records []storage.Entry) {
	i := 0
	for _, e := range storage.AppendedEvents(records) {
		n.step(e)
		for ; i < len(records) && records[i].Offset < e.End.Offset; i++ {
			r := records[i]
			if !isVotersRecord(r.Data) {
				continue
			}
			vs, err := decodeVoters(r.Data[1:])
			if err != nil {
				n.fail(fmt.Errorf("node: the fetched VotersRecord at %d: %w", r.Offset, err))
				return
			}
			n.addVoterSet(r.Offset, vs)
			n.step(kraft.VotersAppended{Offset: r.Offset, Voters: keysOf(vs)})
		}
	}
}

// installedVoters reports the voter set of the snapshot id just installed.
func (n *Node) installedVoters(id kraft.LogEnd) error {
	if n.static {
		return nil
	}
	vs, err := snapshotVoters(n.cfg.Snapshots, id)
	if err != nil || vs == nil {
		return err
	}
	kept := n.vsets[:0]
	for _, s := range n.vsets {
		if s.offset < 0 {
			kept = append(kept, s)
		}
	}
	n.vsets = kept
	n.addVoterSet(id.Offset-1, vs)
	n.queue = append(n.queue, inbound{ev: kraft.VotersAppended{Offset: id.Offset - 1, Voters: keysOf(vs)}})
	return nil
}

// VoterChangeError is a voter change the leader refused or could not
// finish: the Kafka error code of its answer (DUPLICATE_VOTER,
// VOTER_NOT_FOUND, REQUEST_TIMED_OUT, INVALID_REQUEST, ...).
type VoterChangeError struct {
	Kind kraft.VoterChangeKind
	Code kraft.ErrorCode
}

func (e *VoterChangeError) Error() string {
	return fmt.Sprintf("node: %v: %v", e.Kind, e.Code)
}

// voterCall is a pending AddVoter, RemoveVoter or UpdateVoter of the
// client API, by its Ref.
type voterCall struct {
	ch chan error
}

// AddVoter asks the leader (this replica) to add key, reached at endpoint,
// to the voter set (Kafka's AddRaftVoter) and returns once the change is
// committed: nil, or a *VoterChangeError with Kafka's error code, a
// *NotLeaderError on a replica that does not lead, or ctx's error (the
// change may still happen). The new voter must be running and fetching
// from the leader as an observer: the leader asks it for its kraft.version
// range (ApiVersions) and waits for it to catch up.
func (n *Node) AddVoter(ctx context.Context, key kraft.ReplicaKey, endpoint string) error {
	return n.voterCall(ctx, func(ref uint64) kraft.Event {
		n.changeEndpoints[key] = endpoint
		if voterIndex(n.st.Voters(), key.ID) < 0 {
			// ApiVersions goes to the new voter before it is in the set.
			n.setPeer(key.ID, endpoint)
		}
		return kraft.ReceiveAddVoter{Ref: ref, From: kraft.NoNode, ClusterID: n.cfg.Kraft.ClusterID, Voter: key, Listener: true}
	})
}

// RemoveVoter asks the leader (this replica) to remove the voter key
// (Kafka's RemoveRaftVoter), directory id included, and returns once the
// change is committed; errors as AddVoter's. A leader that removes itself
// resigns once the change commits.
func (n *Node) RemoveVoter(ctx context.Context, key kraft.ReplicaKey) error {
	return n.voterCall(ctx, func(ref uint64) kraft.Event {
		return kraft.ReceiveRemoveVoter{Ref: ref, From: kraft.NoNode, ClusterID: n.cfg.Kraft.ClusterID, Voter: key}
	})
}

// UpdateVoter asks the leader (this replica) to record a new endpoint for
// the voter key (Kafka's UpdateRaftVoter). The leader answers once the
// VotersRecord is written, without waiting for its commit (as Kafka does).
func (n *Node) UpdateVoter(ctx context.Context, key kraft.ReplicaKey, endpoint string) error {
	return n.voterCall(ctx, func(ref uint64) kraft.Event {
		n.changeEndpoints[key] = endpoint
		return kraft.ReceiveUpdateVoter{
			Ref: ref, From: kraft.NoNode, ClusterID: n.cfg.Kraft.ClusterID, CurrentLeaderEpoch: n.st.Epoch(),
			Voter: key, Listener: true, KRaftVersions: supportedKRaftVersions,
		}
	})
}

// voterCall steps the request ev makes (with a fresh Ref) on the leader
// and waits for its answer.
func (n *Node) voterCall(ctx context.Context, ev func(ref uint64) kraft.Event) error {
	ch := make(chan error, 1)
	var refused error
	err := n.call(func() {
		if n.st.Role() != kraft.Leader {
			refused = &NotLeaderError{Leader: leaderOrNone(n.st), Epoch: n.st.Epoch()}
			return
		}
		n.nextRef++
		ref := n.nextRef
		n.voterCalls[ref] = &voterCall{ch: ch}
		n.step(ev(ref))
		n.drain()
		n.maybeFlush()
	})
	if err != nil {
		return err
	}
	if refused != nil {
		return refused
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-n.done:
		return n.stoppedErr()
	}
}

// voterChangeResponse answers a request: a client call by its Ref; a
// replica's request (auto-join) gets no answer, which its state does not
// need (kraft.Deliver).
func (n *Node) voterChangeResponse(a kraft.SendVoterChangeResponse) {
	c := n.voterCalls[a.Ref]
	if c == nil {
		return
	}
	delete(n.voterCalls, a.Ref)
	if a.Error == kraft.ErrNone {
		c.ch <- nil
		return
	}
	if a.Error == kraft.ErrNotLeaderOrFollower {
		// A leader that resigns while the change is pending answers it so,
		// still naming itself in its epoch: no other leader is known yet.
		leader := a.LeaderID
		if leader == n.local.ID {
			leader = kraft.NoNode
		}
		c.ch <- &NotLeaderError{Leader: leader, Epoch: a.Epoch}
		return
	}
	c.ch <- &VoterChangeError{Kind: a.Kind, Code: a.Error}
}

// sendAPIVersions asks the replica to for its kraft.version range; no
// answer within the request timeout is stepped as an error answer.
func (n *Node) sendAPIVersions(to kraft.ReplicaKey) {
	n.sendRequest(Message{From: n.local.ID, To: to.ID, APIVersions: true}, "apiversions")
}

// answerAPIVersions answers an ApiVersions request with the range this
// runtime supports.
func (n *Node) answerAPIVersions(m Message) {
	r := supportedKRaftVersions
	n.cfg.Transport.Send(Message{
		From: n.local.ID, To: m.From, Corr: m.Corr, Response: true,
		Event: kraft.ReceiveAPIVersionsResponse{From: n.local.ID, KRaftVersions: &r},
	})
}

// sendVoterChange sends an auto-joining observer's request to its leader:
// an AddRaftVoter with this replica's endpoint, or a RemoveRaftVoter of its
// old key, which has no endpoint (Kafka's RemoveRaftVoterRequest carries
// only the cluster id and the voter's id and directory id; the codec
// refuses one with an endpoint). Its answer is not awaited (the state sends
// it again on its voter-change timer).
func (n *Node) sendVoterChange(a kraft.SendVoterChange) {
	to, ev, ok := kraft.Deliver(n.local, a)
	if !ok {
		return
	}
	m := Message{From: n.local.ID, To: to, Event: ev}
	if _, add := ev.(kraft.ReceiveAddVoter); add {
		m.Endpoint = n.cfg.Endpoint
	}
	n.corr++
	m.Corr = n.corr
	n.cfg.Transport.Send(m)
}

// onVoterRequest steps a replica's AddRaftVoter or RemoveRaftVoter (an
// auto-joining observer's) with a Ref of the runtime's.
func (n *Node) onVoterRequest(m Message) {
	n.nextRef++
	switch e := m.Event.(type) {
	case kraft.ReceiveAddVoter:
		e.Ref = n.nextRef
		if m.Endpoint != "" {
			n.changeEndpoints[e.Voter] = m.Endpoint
			if voterIndex(n.st.Voters(), e.Voter.ID) < 0 {
				n.setPeer(e.Voter.ID, m.Endpoint)
			}
		}
		n.step(e)
	case kraft.ReceiveRemoveVoter:
		e.Ref = n.nextRef
		n.step(e)
	}
}

func voterIndex(vs []kraft.ReplicaKey, id kraft.NodeID) int {
	for i, v := range vs {
		if v.ID == id {
			return i
		}
	}
	return -1
}

// VoterInfo is one voter of the set in force, in a Status.
type VoterInfo struct {
	ID          kraft.NodeID `json:"id"`
	DirectoryID uuid.UUID    `json:"directory_id"`
	Endpoint    string       `json:"endpoint,omitempty"`
}

// Voters returns the voter set in force (committed or not) with the
// endpoints the log holds, and the kraft.version: 1 for a dynamic voter
// set, 0 for a static one (whose voters have no endpoint here).
func (n *Node) Voters() ([]VoterInfo, int16, error) {
	var out []VoterInfo
	var version int16
	err := n.call(func() {
		out, version = n.voterInfos(), n.st.KRaftVersion()
	})
	return out, version, err
}

func (n *Node) voterInfos() []VoterInfo {
	cur := n.currentVoters()
	var out []VoterInfo
	for _, k := range n.st.Voters() {
		vi := VoterInfo{ID: k.ID, DirectoryID: k.DirectoryID}
		for _, v := range cur {
			if v.Key == k {
				vi.Endpoint = v.Endpoint
			}
		}
		out = append(out, vi)
	}
	return out
}
