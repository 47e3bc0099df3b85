package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/datadir"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// The simulated host runs each replica through package replica, the layer
// the runtime (package node) runs: the requests, retries, parking, the
// records decision, snapshot transfers and voter-set replay the random
// schedules exercise are the runtime's (docs/design.md D75). Its log is
// package storage's FileLog, the code users run, on a simulated disk
// (package storage/simdisk: page cache and media, power loss, lost writes,
// bit flips): a crash keeps what the disk keeps, and the next start
// recovers it with storage.Open, which finds damage or does not, as it
// would on a real disk (D118). What is the host's here is the rest of the
// I/O: a quorum-state record and snapshots in memory (this file), a
// network, the time a sync takes, and a clock (cluster.go).
//
// The host also keeps what the log holds as Records with readable payloads
// (n.log, read back from the FileLog at each start), which the checker
// compares with the committed log: a record the replica writes is
// converted on the way in (recordOf) and back on the way out (dataOf), and
// the conversion is checked to be exact.

// simSegmentBytes is the segment size of the simulated logs: small, so
// that the random schedules roll, clean and recover many segments.
const simSegmentBytes = 2048

// logDir is the log's directory on a replica's simulated disk.
var logDir = datadir.LogDir(dataDir)

// hostLog is replica n's log as the replica layer reads and writes it: the
// storage.FileLog n.flog on n's disk, and the host's view of it (n.log,
// n.start, n.startEpoch, and n.flushed: what the replica was told is
// durable).
type hostLog struct {
	c *Cluster
	n *node
}

var _ storage.Log = hostLog{}

func (l hostLog) fail(format string, args ...interface{}) error {
	err := fmt.Errorf(format, args...)
	l.c.fail(Violation{Node: l.n.id, Rule: "host-log", Detail: err.Error()})
	return err
}

func (l hostLog) Append(epoch kraft.Epoch, records ...[]byte) (kraft.LogEnd, error) {
	n := l.n
	if end := n.end(); epoch < end.Epoch {
		return end, l.fail("asked to append records of epoch %d after epoch %d", epoch, end.Epoch)
	}
	from := len(n.log)
	recs := make([]Record, 0, len(records))
	for _, data := range records {
		r, err := l.c.recordOf(epoch, data)
		if err != nil {
			return n.end(), l.fail("%v", err)
		}
		recs = append(recs, r)
	}
	if _, err := n.flog.Append(epoch, records...); err != nil {
		return n.end(), l.fail("FileLog.Append: %v", err)
	}
	n.log = append(n.log, recs...)
	l.c.check.logChangedFrom(n, from)
	return n.end(), nil
}

func (l hostLog) AppendEntries(entries ...storage.Entry) (kraft.LogEnd, error) {
	n := l.n
	from := len(n.log)
	recs := make([]Record, 0, len(entries))
	for i, e := range entries {
		if e.Offset != int64(from+i) {
			return n.end(), l.fail("asked to append the fetched record at %d to a log that ends at %d", e.Offset, from+i)
		}
		r, err := l.c.recordOf(e.Epoch, e.Data)
		if err != nil {
			return n.end(), l.fail("fetched record %d of %d: %v", i, len(entries), err)
		}
		recs = append(recs, r)
	}
	if _, err := n.flog.AppendEntries(entries...); err != nil {
		return n.end(), l.fail("FileLog.AppendEntries: %v", err)
	}
	n.log = append(n.log, recs...)
	l.c.check.logChangedFrom(n, from)
	return n.end(), nil
}

// Read reads at most Options.MaxFetchRecords records (at least one): the
// simulated disk hands out small reads, so that fetches carry few records.
func (l hostLog) Read(from int64, maxBytes int) ([]storage.Entry, error) {
	n := l.n
	if from < int64(n.start) {
		// The state never asks for records below the log start (it answers
		// with the snapshot's id).
		_ = l.fail("asked to serve records from %d, below the log start %d", from, n.start)
	}
	es, err := n.flog.Read(from, maxBytes)
	if err != nil {
		if !errors.Is(err, storage.ErrBelowStart) && !errors.Is(err, storage.ErrOutOfRange) {
			_ = l.fail("FileLog.Read(%d): %v", from, err)
		}
		return nil, err
	}
	if len(es) > l.c.opts.MaxFetchRecords {
		es = es[:l.c.opts.MaxFetchRecords]
	}
	return es, nil
}

func (l hostLog) Truncate(to int64) error {
	n := l.n
	if to < int64(n.start) {
		return l.fail("asked to truncate to %d, below the log start %d", to, n.start)
	}
	if to >= int64(len(n.log)) {
		return nil
	}
	if err := n.flog.Truncate(to); err != nil {
		return l.fail("FileLog.Truncate(%d): %v", to, err)
	}
	n.truncated = true
	past := int(to) > n.flushed
	n.log = n.log[:to:to]
	if n.flushed > len(n.log) {
		n.flushed = len(n.log)
	}
	l.c.check.logChangedFrom(n, len(n.log))
	l.c.aim(n, "truncate", past)
	return nil
}

func (l hostLog) StartOffset() int64 { return int64(l.n.start) }

func (l hostLog) Start() kraft.LogEnd {
	return kraft.LogEnd{Offset: int64(l.n.start), Epoch: l.n.startEpoch}
}

// DeleteBefore deletes the records below offset (Kafka's
// deleteBeforeSnapshot); they are in a snapshot, which is durable, so the
// flushed offset is at least the new start.
func (l hostLog) DeleteBefore(offset int64) error {
	n := l.n
	if offset <= int64(n.start) {
		return nil
	}
	if offset > int64(len(n.log)) {
		return l.fail("asked to delete the log before %d, past its end %d", offset, len(n.log))
	}
	if err := n.flog.DeleteBefore(offset); err != nil {
		return l.fail("FileLog.DeleteBefore(%d): %v", offset, err)
	}
	n.startEpoch = n.log[offset-1].Epoch
	for i := n.start; i < int(offset); i++ {
		n.log[i] = Record{}
	}
	n.start = int(offset)
	past := n.flushed < n.start
	if past {
		n.flushed = n.start
	}
	l.c.check.logStartMoved(n)
	l.c.aim(n, "delete_before", past)
	return nil
}

// ResetTo empties the log and restarts it at start, durably (Kafka's
// truncateToLatestSnapshot).
func (l hostLog) ResetTo(start kraft.LogEnd) error {
	n := l.n
	if err := n.flog.ResetTo(start); err != nil {
		return l.fail("FileLog.ResetTo(%+v): %v", start, err)
	}
	off := int(start.Offset)
	n.log = make([]Record, off)
	n.start, n.flushed, n.startEpoch = off, off, start.Epoch
	l.c.check.logStartMoved(n)
	l.c.aim(n, "reset", false)
	return nil
}

// Sync makes the whole written log durable.
func (l hostLog) Sync() error {
	n := l.n
	if err := n.flog.Sync(); err != nil {
		return l.fail("FileLog.Sync: %v", err)
	}
	if f := int(n.flog.Flushed()); f < len(n.log) {
		return l.fail("FileLog.Sync left the flushed offset at %d, below the log end %d", f, len(n.log))
	}
	if n.flushed < len(n.log) {
		n.flushed = len(n.log)
		l.c.check.logChangedFrom(n, len(n.log))
	}
	return nil
}

// Close does nothing: the log lives as long as the replica's process, and
// a crash ends it (crash).
func (l hostLog) Close() error { return nil }

func (l hostLog) End() kraft.LogEnd { return l.n.end() }
func (l hostLog) Flushed() int64    { return int64(l.n.flushed) }

func (l hostLog) State() kraft.LogState { return l.n.flog.State() }

func (l hostLog) EpochFor(offset int64) (kraft.Epoch, bool) { return l.n.flog.EpochFor(offset) }

// dataDir is the data directory on a replica's simulated disk: package
// datadir's layout, as kraftd keeps it (meta.properties, the quorum state,
// the bootstrap checkpoint, log/ and snapshots/).
const dataDir = "/"

// simClusterID is the cluster id the simulated disks are formatted with.
var simClusterID = [16]byte{0xc1, 0xc1, 0xc1, 0xc1, 15: 1}

// format formats n's disk as kraftd format does (datadir.Format): its
// identity with directory id dir, and in a dynamic quorum the bootstrap
// voters, if any.
func (c *Cluster) format(n *node, dir uuid.UUID, bootstrap []kraft.ReplicaKey) error {
	id := datadir.Identity{ClusterID: simClusterID, NodeID: n.id, DirectoryID: dir, Dynamic: c.opts.Dynamic}
	var boot []byte
	if c.opts.Dynamic {
		if bootstrap != nil {
			boot = replica.EncodeVoters(votersOf(bootstrap))
		}
	} else {
		id.Voters = c.staticVoters
	}
	return datadir.Format(n.dsk, dataDir, id, boot)
}

func votersOf(keys []kraft.ReplicaKey) []replica.Voter {
	vs := make([]replica.Voter, len(keys))
	for i, k := range keys {
		vs[i] = replica.Voter{Key: k, KRaftVersions: replica.SupportedKRaftVersions}
	}
	return vs
}

// openDir opens n's data directory as kraftd does at a start: its identity
// (datadir.Load, which finishes a replacement a crash interrupted), then
// what it holds (datadir.Open: the log with a torn tail cut and damage
// reported, the quorum state checked against it, the bootstrap
// checkpoint). It reads the log back into the host's view. An identity
// other than the one n ran under is a replaced disk (replaced). The error
// is datadir's, or a violation's.
func (c *Cluster) openDir(n *node, opts storage.Options) (storage.Recovery, error) {
	id, err := datadir.Load(n.dsk, dataDir, datadir.Expect{ClusterID: simClusterID, NodeID: n.id, Dynamic: c.opts.Dynamic, Voters: c.staticVoters})
	if err != nil {
		return storage.Recovery{}, err
	}
	if uuid.UUID(id.DirectoryID) != n.cfg.Local.DirectoryID {
		c.replaced(n, id.DirectoryID)
	}
	opts.SegmentBytes = simSegmentBytes
	d, err := datadir.Open(n.dsk, dataDir, opts)
	if err != nil {
		return storage.Recovery{}, err
	}
	_ = d.Snapshots.Close() // the host keeps its snapshots in memory
	l, rec := d.Log, d.Recovery
	n.record = d.Quorum
	n.bootstrap = nil
	if d.Bootstrap != nil {
		vs, err := replica.DecodeVoters(d.Bootstrap)
		if err != nil {
			_ = l.Close()
			return rec, fmt.Errorf("the bootstrap checkpoint: %w", err)
		}
		n.bootstrap = replica.KeysOf(vs)
	}
	start := l.Start()
	end := l.End().Offset
	recs := make([]Record, start.Offset, end)
	for off := start.Offset; off < end; {
		es, err := l.Read(off, 1<<20)
		if err != nil {
			_ = l.Close()
			return rec, fmt.Errorf("reading the log back at %d: %w", off, err)
		}
		for _, e := range es {
			r, err := c.recordOf(e.Epoch, e.Data)
			if err != nil {
				_ = l.Close()
				return rec, fmt.Errorf("record %d of the recovered log: %w", e.Offset, err)
			}
			recs = append(recs, r)
		}
		off = es[len(es)-1].Offset + 1
	}
	n.flog = l
	n.log, n.start, n.startEpoch, n.flushed = recs, int(start.Offset), start.Epoch, int(end)
	return rec, nil
}

// leaderChangePrefix starts a LeaderChange record's payload,
// kraftVersionPrefix a KRaftVersionRecord's (docs/design.md D155).
const (
	leaderChangePrefix = "LeaderChange("
	kraftVersionPrefix = "KRaftVersion("
)

// recordOf converts a record the replica layer writes (a type byte, then
// the payload: replica.RecordData and the others) to the simulated log's
// Record, and checks that dataOf gives the same bytes back.
func (c *Cluster) recordOf(epoch kraft.Epoch, data []byte) (Record, error) {
	if len(data) == 0 {
		return Record{}, fmt.Errorf("a record without a type byte")
	}
	r := Record{Epoch: epoch}
	switch data[0] {
	case replica.RecordData:
		r.Payload = string(data[1:])
	case replica.RecordLeaderChange:
		a, err := replica.ReadLeaderChangeRecord(data)
		if err != nil {
			return Record{}, fmt.Errorf("a LeaderChange record: %v", err)
		}
		r.Payload = fmt.Sprintf("%sepoch=%d,leader=%d)", leaderChangePrefix, a.Epoch, a.LeaderID)
		return r, nil // the replica's copy holds more than the leader's epoch and id; nothing reads it
	case replica.RecordVoters:
		vs, err := replica.DecodeVoters(data[1:])
		if err != nil {
			return Record{}, fmt.Errorf("a VotersRecord: %v", err)
		}
		r.Payload = votersPayload(replica.KeysOf(vs))
	case replica.RecordBarrier:
		r.Payload = "Barrier"
	case replica.RecordKRaftVersion:
		if len(data) != 3 {
			return Record{}, fmt.Errorf("a KRaftVersionRecord of %d bytes", len(data))
		}
		r.Payload = fmt.Sprintf("%s%d)", kraftVersionPrefix, int16(uint16(data[1])<<8|uint16(data[2])))
	default:
		return Record{}, fmt.Errorf("a record of type %d", data[0])
	}
	if back := dataOf(r); !bytes.Equal(back, data) {
		return Record{}, fmt.Errorf("the record %q does not convert back to its bytes (%q, %q)", r.Payload, data, back)
	}
	return r, nil
}

// dataOf is the replica layer's bytes of a simulated record: a
// VotersRecord's voters have no endpoint and the replica layer's
// kraft.version range (recordOf checks that they had), a LeaderChange
// record names the epoch and the leader.
func dataOf(r Record) []byte {
	switch {
	case r.Payload == "Barrier":
		return []byte{replica.RecordBarrier}
	case isVoters(r):
		keys, ok := parseVoters(r.Payload)
		if ok {
			vs := make([]replica.Voter, len(keys))
			for i, k := range keys {
				vs[i] = replica.Voter{Key: k, KRaftVersions: replica.SupportedKRaftVersions}
			}
			return replica.VotersRecord(vs)
		}
	case strings.HasPrefix(r.Payload, kraftVersionPrefix):
		var v int16
		if _, err := fmt.Sscanf(r.Payload, kraftVersionPrefix+"%d)", &v); err == nil {
			return replica.KRaftVersionRecord(v)
		}
	case len(r.Payload) > len(leaderChangePrefix) && r.Payload[:len(leaderChangePrefix)] == leaderChangePrefix:
		var a kraft.AppendLeaderChange
		if _, err := fmt.Sscanf(r.Payload, leaderChangePrefix+"epoch=%d,leader=%d)", &a.Epoch, &a.LeaderID); err == nil {
			return replica.LeaderChangeRecord(a)
		}
	}
	return append([]byte{replica.RecordData}, r.Payload...)
}

// maxHistory is how many quorum-state records a host remembers for
// DamageRolledBackQuorumState.
const maxHistory = 8

// qsPath is the quorum-state file on a replica's disk (package storage's
// store: the file in Kafka's format and its checked copy).
var qsPath = storage.QuorumStatePath(dataDir)

// qsFiles are the quorum-state file's and its checked copy's bytes after a
// write: what a rollback puts back.
type qsFiles struct {
	record     kraft.QuorumRecord
	file, copy []byte
}

// hostRecords is replica n's quorum-state record: package storage's store
// on n's disk (n.record is the record as last written or read at start).
type hostRecords struct {
	c *Cluster
	n *node
}

func (h hostRecords) Read() (*kraft.QuorumRecord, error) {
	if h.n.record == nil {
		return nil, nil
	}
	r := *h.n.record
	return &r, nil
}

func (h hostRecords) Write(r kraft.QuorumRecord) error {
	n := h.n
	if err := storage.WriteQuorumStateFS(n.dsk, qsPath, r); err != nil {
		h.c.fail(Violation{Node: n.id, Rule: "host-log", Detail: fmt.Sprintf("writing the quorum state: %v", err)})
		return err
	}
	n.record = &r
	file, _ := n.dsk.ReadFile(qsPath)
	cp, _ := n.dsk.ReadFile(qsPath + storage.QuorumStateCopySuffix)
	if len(n.history) == maxHistory {
		n.history = append(n.history[:0], n.history[1:]...)
	}
	n.history = append(n.history, qsFiles{record: r, file: file, copy: cp})
	return nil
}

// hostSnapshots is replica n's snapshot store: n.snaps, oldest first, and
// the download in progress. Snapshots are written whole by the host
// (maybeSnapshot) or downloaded through a partial one; both are durable
// once frozen.
type hostSnapshots struct {
	c *Cluster
	n *node
}

var _ replica.Snapshots = hostSnapshots{}

func (s hostSnapshots) find(id kraft.LogEnd) (*snapshot, error) {
	if snap := s.n.findSnapshot(id); snap != nil {
		return snap, nil
	}
	return nil, fmt.Errorf("%w: %+v", storage.ErrSnapshotNotFound, id)
}

func (s hostSnapshots) List() []kraft.LogEnd {
	out := make([]kraft.LogEnd, len(s.n.snaps))
	for i, snap := range s.n.snaps {
		out[i] = snap.id
	}
	return out
}

func (s hostSnapshots) Latest() (kraft.LogEnd, bool) {
	if snap := s.n.latestSnapshot(); snap != nil {
		return snap.id, true
	}
	return kraft.LogEnd{}, false
}

func (s hostSnapshots) Earliest() (kraft.LogEnd, bool) {
	if len(s.n.snaps) > 0 {
		return s.n.snaps[0].id, true
	}
	return kraft.LogEnd{}, false
}

func (s hostSnapshots) Size(id kraft.LogEnd) (int64, error) {
	snap, err := s.find(id)
	if err != nil {
		return 0, err
	}
	return int64(len(snap.bytes())), nil
}

func (s hostSnapshots) Read(id kraft.LogEnd, position int64, maxBytes int) ([]byte, error) {
	snap, err := s.find(id)
	if err != nil {
		// The replica looks the size up first: it serves only what it has.
		s.c.fail(Violation{Node: s.n.id, Rule: "host-snapshot", Detail: fmt.Sprintf("asked to serve %+v, which the host does not have", id)})
		return nil, err
	}
	b := snap.bytes()
	if position < 0 || position > int64(len(b)) {
		err := fmt.Errorf("asked to serve %+v at %d of %d bytes", id, position, len(b))
		s.c.fail(Violation{Node: s.n.id, Rule: "host-snapshot", Detail: err.Error()})
		return nil, err
	}
	end := position + int64(maxBytes)
	if end > int64(len(b)) {
		end = int64(len(b))
	}
	return b[position:end:end], nil
}

func (s hostSnapshots) Open(id kraft.LogEnd) (io.ReadCloser, error) {
	snap, err := s.find(id)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(snap.bytes())), nil
}

func (s hostSnapshots) Create(id kraft.LogEnd) (replica.SnapshotWriter, error) {
	p := &partial{id: id}
	s.n.partial = p
	return &partialWriter{s: s, p: p}, nil
}

func (s hostSnapshots) Delete(id kraft.LogEnd) error {
	for i, snap := range s.n.snaps {
		if snap.id == id {
			s.n.snaps = append(s.n.snaps[:i:i], s.n.snaps[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("%w: %+v", storage.ErrSnapshotNotFound, id)
}

func (s hostSnapshots) DeleteBefore(id kraft.LogEnd) error {
	kept := s.n.snaps[:0:0]
	for _, snap := range s.n.snaps {
		if snap.id.Compare(id) >= 0 {
			kept = append(kept, snap)
		}
	}
	s.n.snaps = kept
	return nil
}

// add files a frozen snapshot in id order.
func (s hostSnapshots) add(snap *snapshot) {
	n := s.n
	for i, old := range n.snaps {
		if old.id == snap.id {
			n.snaps[i] = snap
			return
		}
	}
	n.snaps = append(n.snaps, snap)
	sort.Slice(n.snaps, func(i, j int) bool { return n.snaps[i].id.Compare(n.snaps[j].id) < 0 })
}

// partialWriter writes a download into n.partial; Freeze checks its
// content against the committed log and files it.
type partialWriter struct {
	s hostSnapshots
	p *partial
}

func (w *partialWriter) ID() kraft.LogEnd { return w.p.id }
func (w *partialWriter) Size() int64      { return int64(len(w.p.data)) }

func (w *partialWriter) Append(chunk []byte) error {
	if w.s.n.partial != w.p {
		return fmt.Errorf("the download of %+v was dropped", w.p.id)
	}
	w.p.data = append(w.p.data, chunk...)
	return nil
}

func (w *partialWriter) Freeze() error {
	n, c := w.s.n, w.s.c
	if n.partial != w.p {
		return fmt.Errorf("the download of %+v was dropped", w.p.id)
	}
	n.partial = nil
	vs, rest, err := replica.ReadSnapshotVoters(bytes.NewReader(w.p.data))
	var recs []Record
	if err == nil {
		var body []byte
		body, err = io.ReadAll(rest)
		if err == nil {
			recs, err = decodeSnapshot(body)
		}
	}
	if err != nil || int64(len(recs)) != w.p.id.Offset {
		err = fmt.Errorf("the downloaded snapshot %+v does not decode to its %d records (%d, %v)", w.p.id, w.p.id.Offset, len(recs), err)
		c.fail(Violation{Node: n.id, Rule: "host-snapshot", Detail: err.Error()})
		return err
	}
	snap := &snapshot{id: w.p.id, recs: recs[:len(recs):len(recs)], data: w.p.data}
	if vs != nil {
		snap.voters = replica.KeysOf(vs)
	}
	c.check.snapshotInstalled(n, snap)
	w.s.add(snap)
	n.applied = snap.recs // the replica installs it: its latest
	return nil
}

func (w *partialWriter) Abort() error {
	if w.s.n.partial == w.p {
		w.s.n.partial = nil
	}
	return nil
}

// observer is the checker's and the trace's view of replica n's steps.
type observer struct {
	c *Cluster
	n *node
}

var _ replica.Observer = observer{}

func (o observer) Started(rec *kraft.QuorumRecord, ls kraft.LogState, st kraft.State, acts []kraft.Action) {
	c, n := o.c, o.n
	before := n.st
	n.st = st
	n.before = before
	c.stats.Events++
	if c.trace != nil {
		cfg := n.cfg
		c.writeTrace(TraceLine{Kind: "start", T: c.now, Node: n.id, Config: &cfg, Record: rec, Log: &ls, Actions: encodeActions(acts), State: summarize(st)})
	}
	c.check.afterStart(n, before)
	c.check.stepFrom = kraft.State{}
}

func (o observer) Stepped(e kraft.Event, before, after kraft.State, acts []kraft.Action) {
	c, n := o.c, o.n
	c.stats.Events++
	n.st = after
	if c.trace != nil {
		c.writeTrace(TraceLine{Kind: "step", T: c.now, Node: n.id, Event: encodeEvent(e), Actions: encodeActions(acts), State: summarize(after)})
	}
	if c.OnStep != nil {
		c.OnStep(n.id, e, before, after, acts)
	}
	c.check.stepFrom = before
	switch e := e.(type) {
	case kraft.ReceiveAddVoter:
		c.received(n, e.Ref, VoterChange{At: c.now, Kind: kraft.AddVoter, Voter: e.Voter, From: e.From, Leader: n.id})
	case kraft.ReceiveRemoveVoter:
		c.received(n, e.Ref, VoterChange{At: c.now, Kind: kraft.RemoveVoter, Voter: e.Voter, From: e.From, Leader: n.id})
	}
	for _, a := range acts {
		if f, ok := a.(kraft.Fault); ok {
			c.check.beforeAction(n, f, e)
		}
	}
}

func (o observer) Carrying(a kraft.Action, e kraft.Event) {
	if _, fault := a.(kraft.Fault); !fault {
		o.c.check.beforeAction(o.n, a, e)
	}
}

func (o observer) Carried(e kraft.Event, before kraft.State) {
	if e == nil {
		before = o.n.before
	}
	o.c.check.afterStep(o.n, before, e)
}
