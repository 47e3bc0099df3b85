package datadir

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// MetaFileName is the identity file in a data directory.
const MetaFileName = "meta.properties"

// LegacyDirectoryIDFile is where kraftd kept a dynamic replica's directory
// id before meta.properties held it; only read to migrate a directory.
const LegacyDirectoryIDFile = "directory.id"

// DamagedPrefix names the directories, inside a data directory, that
// Replace moves damaged data to.
const DamagedPrefix = "damaged-"

// Identity is what a data directory belongs to.
type Identity struct {
	ClusterID [16]byte
	NodeID    kraft.NodeID
	// DirectoryID is the replica's directory id; zero: none (a static
	// replica whose -voters entry names none).
	DirectoryID [16]byte
	// Dynamic: a dynamic voter set (KIP-853), kept in the log and the
	// bootstrap checkpoint; otherwise Voters is the static set.
	Dynamic bool
	Voters  []kraft.ReplicaKey
}

// Key is the replica's key.
func (id Identity) Key() kraft.ReplicaKey {
	return kraft.ReplicaKey{ID: id.NodeID, DirectoryID: id.DirectoryID}
}

// meta is meta.properties' content: the identity and the replacement in
// progress, if any (the name of the damaged-* directory it moves the
// damaged data to).
type meta struct {
	Identity
	replacing string
	// legacy: written by a kraftd before the file held the directory id
	// and the quorum kind (no kraftd.quorum key); Identity has only the
	// cluster and node ids.
	legacy bool
}

const checksumKey = "#crc32c="

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// KafkaUUID writes a UUID as Kafka does (Uuid.toString): 22 characters of
// URL-safe base64 without padding.
func KafkaUUID(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// ParseUUID parses a UUID in Kafka's form or the usual 8-4-4-4-12 form. The
// zero UUID is refused.
func ParseUUID(s string) ([16]byte, error) {
	var u [16]byte
	if len(s) == 22 {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) != 16 {
			return u, fmt.Errorf("%q is not a UUID", s)
		}
		copy(u[:], b)
	} else {
		p, err := uuid.Parse(s)
		if err != nil {
			return u, fmt.Errorf("%q is not a UUID", s)
		}
		u = p
	}
	if u == ([16]byte{}) {
		return u, errors.New("the zero UUID is reserved")
	}
	return u, nil
}

// FormatVoters writes a voter set as meta.properties keeps it, sorted by
// id: "1,2:DIRECTORY-ID,3".
func FormatVoters(vs []kraft.ReplicaKey) string {
	vs = sortedKeys(vs)
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(int(v.ID))
		if v.DirectoryID != ([16]byte{}) {
			parts[i] += ":" + uuid.UUID(v.DirectoryID).String()
		}
	}
	return strings.Join(parts, ",")
}

func parseVoters(s string) ([]kraft.ReplicaKey, error) {
	if s == "" {
		return nil, errors.New("no voters")
	}
	var out []kraft.ReplicaKey
	for _, part := range strings.Split(s, ",") {
		idText, dirText, hasDir := strings.Cut(part, ":")
		n, err := strconv.ParseInt(idText, 10, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("voter %q", part)
		}
		k := kraft.ReplicaKey{ID: kraft.NodeID(n)}
		if hasDir {
			if k.DirectoryID, err = ParseUUID(dirText); err != nil {
				return nil, fmt.Errorf("voter %q: %v", part, err)
			}
		}
		out = append(out, k)
	}
	return out, nil
}

func sortedKeys(vs []kraft.ReplicaKey) []kraft.ReplicaKey {
	out := append([]kraft.ReplicaKey(nil), vs...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// SameVoters: a and b hold the same keys (ids and directory ids), in any
// order.
func SameVoters(a, b []kraft.ReplicaKey) bool {
	return FormatVoters(a) == FormatVoters(b)
}

// text is m as meta.properties holds it, its checksum line last.
func (m meta) text() []byte {
	var b strings.Builder
	b.WriteString("#kraftd: the cluster and node this data directory belongs to (kraftd format); do not edit\n")
	b.WriteString("version=1\n")
	fmt.Fprintf(&b, "cluster.id=%s\n", KafkaUUID(m.ClusterID))
	fmt.Fprintf(&b, "node.id=%d\n", m.NodeID)
	if m.DirectoryID != ([16]byte{}) {
		fmt.Fprintf(&b, "directory.id=%s\n", KafkaUUID(m.DirectoryID))
	}
	if m.Dynamic {
		b.WriteString("kraftd.quorum=dynamic\n")
	} else {
		b.WriteString("kraftd.quorum=static\n")
		fmt.Fprintf(&b, "kraftd.voters=%s\n", FormatVoters(m.Voters))
	}
	if m.replacing != "" {
		fmt.Fprintf(&b, "kraftd.replacing=%s\n", m.replacing)
	}
	body := b.String()
	return []byte(body + fmt.Sprintf("%s%08x\n", checksumKey, crc32.Checksum([]byte(body), castagnoli)))
}

// damaged is a meta.properties that does not read back as written.
func damaged(path, format string, args ...interface{}) error {
	return fmt.Errorf("%w: %s: %s", storage.ErrDamaged, path, fmt.Sprintf(format, args...))
}

// parseMeta parses meta.properties' content.
func parseMeta(path string, b []byte) (meta, error) {
	var m meta
	hasSum := false
	if i := bytes.LastIndex(b, []byte(checksumKey)); i >= 0 {
		if i > 0 && b[i-1] != '\n' {
			return m, damaged(path, "its checksum line is damaged")
		}
		want := strings.TrimSpace(string(b[i+len(checksumKey):]))
		got := fmt.Sprintf("%08x", crc32.Checksum(b[:i], castagnoli))
		if want != got {
			return m, damaged(path, "checksum %s, its content sums to %s", want, got)
		}
		b, hasSum = b[:i], true
	}
	props := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return m, damaged(path, "line %q is not key=value", line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, dup := props[k]; dup {
			return m, damaged(path, "%s appears twice", k)
		}
		props[k] = v
	}
	if v := props["version"]; v != "1" {
		return m, damaged(path, "version %q, want 1", v)
	}
	var err error
	if m.ClusterID, err = ParseUUID(props["cluster.id"]); err != nil {
		return m, damaged(path, "cluster.id: %v", err)
	}
	n, err := strconv.ParseInt(props["node.id"], 10, 32)
	if err != nil || n < 0 {
		return m, damaged(path, "node.id %q: want a node id", props["node.id"])
	}
	m.NodeID = kraft.NodeID(n)
	if s, ok := props["directory.id"]; ok {
		if m.DirectoryID, err = ParseUUID(s); err != nil {
			return m, damaged(path, "directory.id: %v", err)
		}
	}
	switch props["kraftd.quorum"] {
	case "":
		// Written by a kraftd before D108: cluster and node only.
		m.legacy = true
		return m, nil
	case "dynamic":
		m.Dynamic = true
		if m.DirectoryID == ([16]byte{}) {
			return m, damaged(path, "a dynamic quorum's replica without directory.id")
		}
	case "static":
		if m.Voters, err = parseVoters(props["kraftd.voters"]); err != nil {
			return m, damaged(path, "kraftd.voters: %v", err)
		}
	default:
		return m, damaged(path, "kraftd.quorum %q, want static or dynamic", props["kraftd.quorum"])
	}
	if !hasSum {
		// Every file that names its quorum kind was written with a
		// checksum: a missing one is damage.
		return m, damaged(path, "no checksum line")
	}
	m.replacing = props["kraftd.replacing"]
	if m.replacing != "" && (!strings.HasPrefix(m.replacing, DamagedPrefix) || strings.ContainsAny(m.replacing, "/\\")) {
		return m, damaged(path, "kraftd.replacing %q", m.replacing)
	}
	return m, nil
}

// readMeta reads DIR/meta.properties; found is false without one.
func readMeta(fsys storage.FS, dir string) (m meta, found bool, err error) {
	path := filepath.Join(dir, MetaFileName)
	b, err := storage.ReadFileFS(fsys, path, 64<<10)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("datadir: reading %s: %w", path, err)
	}
	m, err = parseMeta(path, b)
	return m, true, err
}

// writeMeta replaces DIR/meta.properties with m atomically and durably.
func writeMeta(fsys storage.FS, dir string, m meta) error {
	path := filepath.Join(dir, MetaFileName)
	if err := storage.WriteFileAtomicFS(fsys, path, m.text()); err != nil {
		return fmt.Errorf("datadir: writing %s: %w", path, err)
	}
	return nil
}
