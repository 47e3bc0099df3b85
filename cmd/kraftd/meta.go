package main

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// The data directory's identity (docs/design.md D88): as Kafka's
// kafka-storage format writes meta.properties into each log directory and
// every start checks it (MetaProperties, "Invalid cluster.id"), kraftd
// writes DIR/meta.properties at the first start, with the cluster id and
// the node id, and refuses to start on a directory of another cluster or
// node. A replica started with the wrong -cluster-id on its own directory
// is stopped before any peer has to refuse it, and a directory copied to
// another replica is not used under another node id.

// metaPropertiesFile is the file, in the data directory.
const metaPropertiesFile = "meta.properties"

// metaChecksumKey is the comment line that ends meta.properties with the
// CRC-32C of the lines before it (a comment, so Java properties readers
// ignore it). A damaged file is damage, as any other file of the data
// directory (D91): it is never taken for another cluster's or node's.
const metaChecksumKey = "#crc32c="

// metaText is meta.properties' content for cfg, its checksum line last.
func metaText(cfg config) string {
	body := fmt.Sprintf("#kraftd: the cluster and node this data directory belongs to\nversion=1\ncluster.id=%s\nnode.id=%d\n",
		kafkaUUID(cfg.clusterID), cfg.id)
	return body + fmt.Sprintf("%s%08x\n", metaChecksumKey, crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
}

// checkMetaChecksum checks the checksum line of a meta.properties, if it
// has one (a file written before it had none).
func checkMetaChecksum(path string, b []byte) error {
	i := bytes.LastIndex(b, []byte(metaChecksumKey))
	if i < 0 {
		return nil
	}
	if i > 0 && b[i-1] != '\n' {
		return fmt.Errorf("%w: %s: its checksum line is damaged", storage.ErrDamaged, path)
	}
	want := strings.TrimSpace(string(b[i+len(metaChecksumKey):]))
	got := fmt.Sprintf("%08x", crc32.Checksum(b[:i], crc32.MakeTable(crc32.Castagnoli)))
	if want != got {
		return fmt.Errorf("%w: %s: checksum %s, its content sums to %s", storage.ErrDamaged, path, want, got)
	}
	return nil
}

// checkMetaProperties reads DIR/meta.properties and checks it against
// cfg; without one, it writes it.
func checkMetaProperties(cfg config, logger *log.Logger) error {
	path := filepath.Join(cfg.dir, metaPropertiesFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := writeFileDurably(cfg.dir, metaPropertiesFile, metaText(cfg)); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		logger.Printf("kraftd: wrote %s: cluster id %s, node id %d", path, kafkaUUID(cfg.clusterID), cfg.id)
		return nil
	}
	if err != nil {
		return err
	}
	if err := checkMetaChecksum(path, b); err != nil {
		return err
	}
	props, err := parseProperties(string(b))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", storage.ErrDamaged, path, err)
	}
	got := map[string]string{}
	for _, p := range props {
		got[p.key] = p.value
	}
	if v := got["version"]; v != "1" {
		return fmt.Errorf("%w: %s: version %q, want 1", storage.ErrDamaged, path, v)
	}
	cid, err := parseUUID(got["cluster.id"])
	if err != nil {
		return fmt.Errorf("%w: %s: cluster.id %q: %v", storage.ErrDamaged, path, got["cluster.id"], err)
	}
	if cid != cfg.clusterID {
		return fmt.Errorf("the data directory %s belongs to cluster %s, not to -cluster-id %s (%s): "+
			"start this replica with its cluster's id, or give it an empty data directory to join cluster %s",
			cfg.dir, kafkaUUID(cid), kafkaUUID(cfg.clusterID), path, kafkaUUID(cfg.clusterID))
	}
	id, err := strconv.ParseInt(got["node.id"], 10, 32)
	if err != nil || id < 0 {
		return fmt.Errorf("%w: %s: node.id %q: want a node id", storage.ErrDamaged, path, got["node.id"])
	}
	if kraft.NodeID(id) != cfg.id {
		return fmt.Errorf("the data directory %s belongs to node %d, not to -id %d (%s): "+
			"a replica's log and votes are its own; give node %d an empty data directory of its own",
			cfg.dir, id, cfg.id, path, cfg.id)
	}
	return nil
}

// writeFileDurably writes name in dir atomically and durably: a temporary
// file, fsynced, renamed, and the directory fsynced.
func writeFileDurably(dir, name, text string) error {
	path := filepath.Join(dir, name)
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(text)
	serr := f.Sync()
	cerr := f.Close()
	for _, e := range []error{werr, serr, cerr} {
		if e != nil {
			return e
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}
