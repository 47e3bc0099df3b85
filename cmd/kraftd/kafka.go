package main

import (
	"bytes"
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
// Kafka's leader does (kafka-metadata-quorum describe).
func serveDescribe(tr quorumTransport, n *node.Node) {
	if kt, ok := tr.(*kafkawire.Transport); ok {
		kt.ServeDescribeQuorum(n)
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

// kafkaSnapshot wraps the machine's snapshot in Kafka's format.
func kafkaSnapshot(m *machine) func(upTo kraft.LogEnd, w io.Writer) error {
	return func(upTo kraft.LogEnd, w io.Writer) error {
		var buf bytes.Buffer
		if err := m.snapshot(upTo, &buf); err != nil {
			return err
		}
		now := time.Now().UnixMilli()
		sw, err := kafkawire.NewSnapshotWriter(w, upTo, now, now)
		if err != nil {
			return err
		}
		if err := sw.Append(now, bytes.TrimSpace(buf.Bytes())); err != nil {
			return err
		}
		return sw.Close(now)
	}
}

// kafkaRestore reads a snapshot in Kafka's format that kafkaSnapshot wrote.
func kafkaRestore(m *machine) func(id kraft.LogEnd, r io.Reader) error {
	return func(id kraft.LogEnd, r io.Reader) error {
		c, err := kafkawire.ReadSnapshot(r)
		if err != nil {
			return fmt.Errorf("snapshot %+v: %w", id, err)
		}
		if len(c.Values) != 1 {
			return fmt.Errorf("snapshot %+v: %d records, not a kraftd state machine's snapshot (one)", id, len(c.Values))
		}
		return m.restore(id, bytes.NewReader(c.Values[0]))
	}
}
