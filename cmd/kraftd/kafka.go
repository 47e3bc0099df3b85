package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/kafkawire"
	"github.com/kraftquorum/kraft/node"
)

// kraftd speaks either wire protocol (-wire): kraft's own codec
// (node.TCPTransport) or Kafka's (kafkawire.Transport), with which it
// takes part in a quorum of Apache Kafka's controllers. kraftd is a module
// of its own so that the main module keeps its three dependencies while
// kraftd links kafkawire (docs/design.md D80).

// Wire protocols of -wire.
const (
	wireKraft = "kraft"
	wireKafka = "kafka"
)

// quorumTransport is the transport kraftd runs the replica over.
type quorumTransport interface {
	node.Transport
	Addr() net.Addr
}

// newTransport makes the transport -wire names, listening on -listen.
func newTransport(cfg config, logf func(format string, args ...interface{})) (quorumTransport, error) {
	if cfg.wire == wireKafka {
		return kafkawire.NewTransport(kafkawire.TransportConfig{
			ID: cfg.id, DirectoryID: cfg.dirID, Listen: cfg.listen, ListenerName: cfg.listenerName, Peers: cfg.peers(), SoftwareVersion: softwareVersion(), Logf: logf,
		})
	}
	return node.NewTCPTransport(node.TCPConfig{ID: cfg.id, Listen: cfg.listen, Peers: cfg.peers(), Logger: cfg.logger})
}

// serveDescribe makes a Kafka transport answer DescribeQuorum from n, as
// Kafka's leader does (kafka-metadata-quorum describe), and, in a dynamic
// quorum, AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter
// (kafka-metadata-quorum add-controller, remove-controller;
// docs/design.md D160), and keeps its own endpoint in the voter set up to
// date (D171).
func serveDescribe(tr quorumTransport, n *node.Node, cfg config) {
	if kt, ok := tr.(*kafkawire.Transport); ok {
		kt.ServeDescribeQuorum(n)
		if cfg.dynamic {
			kt.ServeVoterChanges(n, cfg.kraftConfig().ClusterID)
			// A voter restarted at a new endpoint updates it at the
			// leader on its update-voter timer (docs/design.md D171).
			kt.UpdateEndpoints(n, cfg.kraftConfig().ClusterID, cfg.fetchTimeout)
		}
	}
}

// softwareVersion is ApiVersions' client_software_version: kraftd's
// version as Kafka accepts it ([a-zA-Z0-9.-], no leading or trailing
// punctuation), or "unknown".
func softwareVersion() string {
	v := []byte(version())
	out := v[:0]
	for _, c := range v {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' {
			out = append(out, c)
		} else {
			out = append(out, '-')
		}
	}
	s := string(bytes.Trim(out, ".-"))
	if s == "" {
		return kafkawire.DefaultSoftwareVersion
	}
	return s
}

// With -wire kafka the snapshots are in Kafka's format, since
// FetchSnapshot carries them as they are stored (docs/design.md D83): the
// machine's snapshot is the one data record between Kafka's
// SnapshotHeader and SnapshotFooter.

// kafkaFormat is Kafka's record encoding under -listener-name, the
// transport's (docs/design.md D310).
func kafkaFormat(cfg config) kafkawire.Format {
	return kafkawire.Format{ListenerName: cfg.listenerName}
}

// kafkaSnapshot wraps the machine's snapshot in Kafka's format, with the
// voter set of a dynamic quorum in its first batch (docs/design.md D157),
// its listeners under -listener-name (f, D310).
func kafkaSnapshot(m *machine, f kafkawire.Format) func(upTo kraft.LogEnd, w io.Writer) error {
	return func(upTo kraft.LogEnd, w io.Writer) error {
		var buf bytes.Buffer
		if err := m.snapshot(upTo, &buf); err != nil {
			return err
		}
		now := time.Now().UnixMilli()
		sw, err := f.NewVotersSnapshotWriter(w, upTo, now, now, node.SnapshotVotersOf(w))
		if err != nil {
			return err
		}
		if err := sw.Append(now, bytes.TrimSpace(buf.Bytes())); err != nil {
			return err
		}
		return sw.Close(now)
	}
}

// kafkaSnapshotVoters reads the voter set of a snapshot in Kafka's
// format: its Voters control record (node.Config.SnapshotVoters), each
// voter's endpoint its listener under -listener-name (f, D310).
func kafkaSnapshotVoters(f kafkawire.Format) func(r io.Reader) ([]node.Voter, error) {
	return f.SnapshotVoters
}

// kafkaRestore reads a snapshot in Kafka's format: one that kafkaSnapshot
// wrote (a single data record, the machine's JSON snapshot), or one that
// a Kafka node wrote, from which the machine rebuilds its state
// (rebuildFromKafka).
func kafkaRestore(m *machine) func(id kraft.LogEnd, r io.Reader) error {
	return func(id kraft.LogEnd, r io.Reader) error {
		c, err := kafkawire.ReadSnapshot(r)
		if err != nil {
			return fmt.Errorf("snapshot %+v: %w", id, err)
		}
		if len(c.Values) == 1 && isMachineSnapshot(c.Values[0]) {
			return m.restore(id, bytes.NewReader(c.Values[0]))
		}
		return m.rebuildFromKafka(id, c.Values)
	}
}

// isMachineSnapshot reports whether a snapshot's data record is the
// machine's own JSON snapshot: an object with a "version" and a "digest".
func isMachineSnapshot(v []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(v, &probe) != nil {
		return false
	}
	_, version := probe["version"]
	_, digest := probe["digest"]
	return version && digest
}

// kafkaRecord is a data record of the snapshots the Kafka node
// (kafka-raft-node) writes: one JSON object per committed record, with
// its offset, epoch and text (the record's value as UTF-8).
type kafkaRecord struct {
	Offset *int64  `json:"offset"`
	Epoch  *int32  `json:"epoch"`
	Text   *string `json:"text"`
}

// rebuildFromKafka replaces the machine's state by the one the committed
// records of a foreign snapshot give: the snapshot of a Kafka node holds
// every committed data record (kafkaRecord), and the machine applies them
// from an empty state in order, as it applies the log's, so its digest,
// counts and map are those of a replica that applied the same records.
// Any other content is refused: the machine cannot know what it means
// (docs/design.md D158).
func (m *machine) rebuildFromKafka(id kraft.LogEnd, values [][]byte) error {
	recs := make([]node.Record, 0, len(values))
	last := int64(-1)
	for i, v := range values {
		var k kafkaRecord
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&k); err != nil || k.Offset == nil || k.Epoch == nil || k.Text == nil {
			return fmt.Errorf("snapshot %+v: record %d is neither a kraftd state machine's snapshot nor a Kafka node's committed record (%q)", id, i, trim(v))
		}
		if *k.Offset <= last || *k.Offset >= id.Offset {
			return fmt.Errorf("snapshot %+v: record %d at offset %d (after %d)", id, i, *k.Offset, last)
		}
		last = *k.Offset
		recs = append(recs, node.Record{Offset: *k.Offset, Epoch: kraft.Epoch(*k.Epoch), Data: []byte(*k.Text)})
	}
	fresh := &machine{}
	fresh.apply(recs)
	fresh.next = id.Offset
	fresh.mu.Lock()
	defer fresh.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records, m.bytes, m.next, m.digest = fresh.records, fresh.bytes, fresh.next, fresh.digest
	m.kv = fresh.kv
	if m.kv == nil {
		m.kv = map[string]kvEntry{}
	}
	m.outcomes, m.outcomeOrder, m.outcomeBytes = nil, nil, 0
	m.restored = &id
	return nil
}

func trim(v []byte) []byte {
	if len(v) > 80 {
		return v[:80]
	}
	return v
}
