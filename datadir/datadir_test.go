package datadir

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

var (
	testCluster = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	otherDirID  = [16]byte{0xaa, 1}
	newDirID    = [16]byte{0xbb, 2}
	threeVoters = []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
)

func dynamicID(dirID [16]byte) Identity {
	return Identity{ClusterID: testCluster, NodeID: 1, DirectoryID: dirID, Dynamic: true}
}

func staticID() Identity {
	return Identity{ClusterID: testCluster, NodeID: 2, Voters: threeVoters}
}

func expectOf(id Identity) Expect {
	return Expect{ClusterID: id.ClusterID, NodeID: id.NodeID, Dynamic: id.Dynamic, Voters: id.Voters}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ns, err := storage.OS().ReadDir(dir)
	require.NoError(t, err)
	sort.Strings(ns)
	return ns
}

func TestFormatThenLoadKeepsTheIdentity(t *testing.T) {
	fsys := storage.OS()
	for _, id := range []Identity{staticID(), dynamicID(otherDirID), {ClusterID: testCluster, NodeID: 3, DirectoryID: newDirID, Voters: []kraft.ReplicaKey{{ID: 3, DirectoryID: newDirID}}}} {
		dir := filepath.Join(t.TempDir(), "d")
		var boot []byte
		if id.Dynamic {
			boot = []byte("voters")
		}
		require.NoError(t, Format(fsys, dir, id, boot))
		got, err := Load(fsys, dir, expectOf(id))
		require.NoError(t, err)
		require.Equal(t, id.Key(), got.Key())
		require.Equal(t, id.Dynamic, got.Dynamic)
		require.True(t, SameVoters(id.Voters, got.Voters), "%v %v", id.Voters, got.Voters)
		b, err := storage.ReadBootstrap(storage.BootstrapPath(dir))
		require.NoError(t, err)
		require.Equal(t, boot, b)
	}
}

func TestFormatRefusesAFormattedOrNonEmptyDirectory(t *testing.T) {
	fsys := storage.OS()
	dir := t.TempDir()
	require.NoError(t, Format(fsys, dir, dynamicID(otherDirID), []byte("x")))
	err := Format(fsys, dir, dynamicID(newDirID), []byte("y"))
	require.ErrorIs(t, err, ErrFormatted)
	got, err := Load(fsys, dir, expectOf(dynamicID(otherDirID)))
	require.NoError(t, err)
	require.Equal(t, otherDirID, got.DirectoryID, "the refused format changed nothing")

	dir = t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "log"), 0o755))
	require.ErrorIs(t, Format(fsys, dir, staticID(), nil), ErrNotEmpty)
	_, err = os.Stat(filepath.Join(dir, MetaFileName))
	require.ErrorIs(t, err, os.ErrNotExist)

	// What an interrupted format left (the bootstrap checkpoint is written
	// first) is no data: a new format replaces it.
	dir = t.TempDir()
	require.NoError(t, storage.WriteBootstrap(storage.BootstrapPath(dir), []byte("old")))
	require.NoError(t, Format(fsys, dir, dynamicID(otherDirID), nil))
	b, err := storage.ReadBootstrap(storage.BootstrapPath(dir))
	require.NoError(t, err)
	require.Nil(t, b)
}

func TestLoadRefusesAnUnformattedDirectory(t *testing.T) {
	fsys := storage.OS()
	dir := t.TempDir()
	_, err := Load(fsys, dir, expectOf(dynamicID(otherDirID)))
	require.ErrorIs(t, err, ErrUnformatted)
	require.Empty(t, names(t, dir), "Load writes nothing into an unformatted directory")

	// A directory whose meta.properties is gone but whose data is there.
	require.NoError(t, Format(fsys, dir, dynamicID(otherDirID), []byte("x")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "log"), 0o755))
	require.NoError(t, os.Remove(filepath.Join(dir, MetaFileName)))
	_, err = Load(fsys, dir, expectOf(dynamicID(otherDirID)))
	var ue *UnformattedError
	require.ErrorAs(t, err, &ue)
	require.Equal(t, []string{storage.BootstrapFileName, "log"}, ue.Entries)
	require.Contains(t, err.Error(), "is not formatted (it has no meta.properties) but holds bootstrap.checkpoint, log")
}

func TestLoadRefusesAnotherClusterNodeQuorumOrDirectoryID(t *testing.T) {
	fsys := storage.OS()
	dir := t.TempDir()
	id := dynamicID(otherDirID)
	require.NoError(t, Format(fsys, dir, id, nil))
	for _, c := range []struct {
		what string
		e    Expect
	}{
		{"cluster", Expect{ClusterID: [16]byte{9}, NodeID: 1, Dynamic: true}},
		{"node", Expect{ClusterID: testCluster, NodeID: 2, Dynamic: true}},
		{"quorum kind", Expect{ClusterID: testCluster, NodeID: 1, Voters: threeVoters}},
		{"directory id", Expect{ClusterID: testCluster, NodeID: 1, Dynamic: true, DirectoryID: newDirID}},
	} {
		_, err := Load(fsys, dir, c.e)
		var me *MismatchError
		require.ErrorAs(t, err, &me, c.what)
		require.Equal(t, c.what, me.What)
	}
	_, err := Load(fsys, dir, Expect{ClusterID: testCluster, NodeID: 1, Dynamic: true, DirectoryID: otherDirID})
	require.NoError(t, err)
}

func TestStaticVoterSetChangesOnlyThroughUpdateVoters(t *testing.T) {
	fsys := storage.OS()
	dir := t.TempDir()
	id := staticID()
	require.NoError(t, Format(fsys, dir, id, nil))
	alone := []kraft.ReplicaKey{{ID: 2}}
	e := expectOf(id)
	e.Voters = alone
	_, err := Load(fsys, dir, e)
	var ve *VotersMismatchError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "the data directory "+dir+" was formatted for the static voter set 1,2,3, not 2", err.Error())

	// The order of -voters is no change.
	e.Voters = []kraft.ReplicaKey{{ID: 3}, {ID: 1}, {ID: 2}}
	_, err = Load(fsys, dir, e)
	require.NoError(t, err)

	_, err = UpdateVoters(fsys, dir, testCluster, 3, alone)
	require.Error(t, err, "another node's directory")
	old, err := UpdateVoters(fsys, dir, testCluster, 2, alone)
	require.NoError(t, err)
	require.Equal(t, threeVoters, old)
	e.Voters = alone
	_, err = Load(fsys, dir, e)
	require.NoError(t, err)
	e.Voters = threeVoters
	_, err = Load(fsys, dir, e)
	require.ErrorAs(t, err, &ve)
}

// TestMetaPropertiesFlipIsDamageNeverAnotherIdentity flips every bit of
// every byte of meta.properties in turn: each read is damage, or the same
// identity (a flip the parser cannot see, such as the last newline's).
func TestMetaPropertiesFlipIsDamageNeverAnotherIdentity(t *testing.T) {
	fsys := storage.OS()
	for _, id := range []Identity{staticID(), dynamicID(otherDirID)} {
		dir := t.TempDir()
		require.NoError(t, Format(fsys, dir, id, nil))
		path := filepath.Join(dir, MetaFileName)
		orig, err := os.ReadFile(path)
		require.NoError(t, err)
		for i := range orig {
			for bit := 0; bit < 8; bit++ {
				b := append([]byte(nil), orig...)
				b[i] ^= 1 << bit
				m, err := parseMeta(path, b)
				if err != nil {
					require.True(t, IsDamage(err), "byte %d bit %d: %v", i, bit, err)
					continue
				}
				require.Equal(t, meta{Identity: id}.text(), m.text(), "byte %d bit %d read as another identity", i, bit)
			}
		}
	}
}

// legacyMeta is meta.properties as kraftd wrote it before D108.
func legacyMeta(t *testing.T, dir string, nodeID int) {
	body := fmt.Sprintf("#kraftd: the cluster and node this data directory belongs to\nversion=1\ncluster.id=%s\nnode.id=%d\n", KafkaUUID(testCluster), nodeID)
	text := body + fmt.Sprintf("#crc32c=%08x\n", crc32Of(body))
	require.NoError(t, os.WriteFile(filepath.Join(dir, MetaFileName), []byte(text), 0o644))
}

func legacyDirectoryID(t *testing.T, dir string, id [16]byte) {
	line := uuid.UUID(id).String()
	require.NoError(t, os.WriteFile(filepath.Join(dir, LegacyDirectoryIDFile), []byte(fmt.Sprintf("%s\ncrc32c %08x\n", line, crc32Of(line))), 0o644))
}

func TestLoadMigratesAnEarlierKraftdsDirectory(t *testing.T) {
	fsys := storage.OS()
	var lines []string
	logf := func(f string, a ...interface{}) { lines = append(lines, fmt.Sprintf(f, a...)) }

	// A dynamic replica that made its directory id, or replaced its disk:
	// directory.id wins over the -initial-voters entry.
	dir := t.TempDir()
	legacyMeta(t, dir, 1)
	legacyDirectoryID(t, dir, newDirID)
	e := Expect{ClusterID: testCluster, NodeID: 1, Dynamic: true, LegacyDirectoryID: otherDirID, Logf: logf}
	got, err := Load(fsys, dir, e)
	require.NoError(t, err)
	require.Equal(t, newDirID, got.DirectoryID)
	require.Equal(t, []string{MetaFileName}, names(t, dir), "directory.id is gone once meta.properties holds the id")
	require.Contains(t, strings.Join(lines, "\n"), "migrated "+dir)
	// Read back from meta.properties alone, whatever the flags say now.
	e.LegacyDirectoryID = [16]byte{}
	got, err = Load(fsys, dir, e)
	require.NoError(t, err)
	require.Equal(t, newDirID, got.DirectoryID)

	// An initial voter: the entry's id.
	dir = t.TempDir()
	legacyMeta(t, dir, 1)
	e.LegacyDirectoryID = otherDirID
	got, err = Load(fsys, dir, e)
	require.NoError(t, err)
	require.Equal(t, otherDirID, got.DirectoryID)
	m, _, err := readMeta(fsys, dir)
	require.NoError(t, err)
	require.False(t, m.legacy)

	// Neither: the id it ran under is unknown, refused.
	dir = t.TempDir()
	legacyMeta(t, dir, 1)
	e.LegacyDirectoryID = [16]byte{}
	_, err = Load(fsys, dir, e)
	require.ErrorContains(t, err, "the directory id this replica ran under is not known")

	// A damaged directory.id is damage, not another id.
	dir = t.TempDir()
	legacyMeta(t, dir, 1)
	legacyDirectoryID(t, dir, newDirID)
	b, _ := os.ReadFile(filepath.Join(dir, LegacyDirectoryIDFile))
	b[0] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(dir, LegacyDirectoryIDFile), b, 0o644))
	_, err = Load(fsys, dir, Expect{ClusterID: testCluster, NodeID: 1, Dynamic: true, LegacyDirectoryID: otherDirID})
	require.True(t, IsDamage(err), "%v", err)

	// A static replica: the voter set of this start is kept, and a later
	// start with another one is refused.
	dir = t.TempDir()
	legacyMeta(t, dir, 2)
	_, err = Load(fsys, dir, expectOf(staticID()))
	require.NoError(t, err)
	_, err = Load(fsys, dir, Expect{ClusterID: testCluster, NodeID: 2, Voters: []kraft.ReplicaKey{{ID: 2}}})
	var ve *VotersMismatchError
	require.ErrorAs(t, err, &ve)
}
