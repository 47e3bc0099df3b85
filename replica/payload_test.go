package replica

import (
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// Golden bytes of every format payload.go describes (docs/design.md
// D291): logs, checkpoints and snapshots written before must read the
// same, so a change to any of these bytes is a format change, to be made
// on purpose with a new version, never by accident. The voter set's
// version 0 is pinned by TestVoterSetOfVersionZeroStillDecodes.

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// TestPayloadTypeBytesAreFixed: the type byte of each kind of log entry.
func TestPayloadTypeBytesAreFixed(t *testing.T) {
	require.Equal(t, []byte{0, 1, 2, 3, 4},
		[]byte{RecordData, RecordLeaderChange, RecordVoters, RecordBarrier, RecordKRaftVersion})
}

// TestDataRecordIsTypeZeroThenTheBytes: a data record is 0 then the
// application's bytes, an empty one the type byte alone.
func TestDataRecordIsTypeZeroThenTheBytes(t *testing.T) {
	require.Equal(t, [][]byte{{0, 'a', 'b'}, {0}, {0, 0xff}},
		DataRecords([][]byte{[]byte("ab"), nil, {0xff}}))
}

// TestLeaderChangeRecordIsTypeOneThenJSON: the LeaderChange record is 1
// then kraft.AppendLeaderChange as encoding/json writes it.
func TestLeaderChangeRecordIsTypeOneThenJSON(t *testing.T) {
	k := listenerKey(1)
	got := LeaderChangeRecord(kraft.AppendLeaderChange{
		Epoch: 3, LeaderID: 1, Voters: []kraft.ReplicaKey{k, listenerKey(2)}, GrantingVoters: []kraft.ReplicaKey{k}, VotersRecord: true,
	})
	want := "\x01" + `{"Epoch":3,"LeaderID":1,` +
		`"Voters":[{"ID":1,"DirectoryID":"6b720000-0000-0000-0000-000000000002"},{"ID":2,"DirectoryID":"6b720000-0000-0000-0000-000000000003"}],` +
		`"GrantingVoters":[{"ID":1,"DirectoryID":"6b720000-0000-0000-0000-000000000002"}],"VotersRecord":true}`
	require.Equal(t, want, string(got))
	require.Equal(t, "\x01"+`{"Epoch":1,"LeaderID":0,"Voters":null,"GrantingVoters":null,"VotersRecord":false}`,
		string(LeaderChangeRecord(kraft.AppendLeaderChange{Epoch: 1})))
}

// TestReadLeaderChangeRecordReadsWhatLeaderChangeRecordWrote: the
// decoder gives the action back, and refuses another record's type byte or
// a payload that is not the JSON.
func TestReadLeaderChangeRecordReadsWhatLeaderChangeRecordWrote(t *testing.T) {
	a := kraft.AppendLeaderChange{
		Epoch: 7, LeaderID: 2, Voters: []kraft.ReplicaKey{listenerKey(1), listenerKey(2)}, GrantingVoters: []kraft.ReplicaKey{listenerKey(2)}, VotersRecord: true,
	}
	got, err := ReadLeaderChangeRecord(LeaderChangeRecord(a))
	require.NoError(t, err)
	require.Equal(t, a, got)
	_, err = ReadLeaderChangeRecord(append([]byte{RecordData}, LeaderChangeRecord(a)[1:]...))
	require.Error(t, err)
	_, err = ReadLeaderChangeRecord(nil)
	require.Error(t, err)
	_, err = ReadLeaderChangeRecord([]byte{RecordLeaderChange, '{'})
	require.Error(t, err)
}

// TestKRaftVersionRecordIsTypeFourThenAnInt16: 4 then the level, big
// endian, two's complement.
func TestKRaftVersionRecordIsTypeFourThenAnInt16(t *testing.T) {
	require.Equal(t, []byte{4, 0, 1}, KRaftVersionRecord(1))
	require.Equal(t, []byte{4, 0x01, 0x02}, KRaftVersionRecord(0x0102))
	require.Equal(t, []byte{4, 0xff, 0xfe}, KRaftVersionRecord(-2))
}

// goldenVoters is a set whose voter 1 has two listeners: version 1.
func goldenVoters() []Voter {
	return []Voter{
		{Key: listenerKey(1), Endpoint: "c1:9093", KRaftVersions: kraft.VersionRange{Min: 0, Max: 1},
			Listeners: []Listener{{Name: "EXT", Host: "e1", Port: 19093}, {Name: "CONTROLLER", Host: "c1", Port: 9093}}},
		{Key: listenerKey(2), KRaftVersions: kraft.VersionRange{Min: 1, Max: 1}},
	}
}

const goldenVotersHex = "01" + "0002" +
	// voter 1: id, directory id, versions 0..1, endpoint "c1:9093", two listeners
	"00000001" + "6b720000000000000000000000000002" + "0000" + "0001" + "0007" + "63313a39303933" + "0002" +
	"0003" + "455854" + "0002" + "6531" + "4a95" +
	"000a" + "434f4e54524f4c4c4552" + "0002" + "6331" + "2385" +
	// voter 2: id, directory id, versions 1..1, no endpoint, no listeners
	"00000002" + "6b720000000000000000000000000003" + "0001" + "0001" + "0000" + "0000"

// TestVoterSetOfVersionOneBytes: a set with listeners is version 1, each
// voter's listener count and listeners after its endpoint (a voter
// without any has a count of 0).
func TestVoterSetOfVersionOneBytes(t *testing.T) {
	want := unhex(t, goldenVotersHex)
	require.Equal(t, want, EncodeVoters(goldenVoters()))
	got, err := DecodeVoters(want)
	require.NoError(t, err)
	require.Equal(t, goldenVoters()[0], got[0])
	require.Equal(t, goldenVoters()[1].Key, got[1].Key)
	require.Empty(t, got[1].Listeners)
}

// TestVotersRecordIsTypeTwoThenTheVoterSet: a VotersRecord is 2 then the
// voter set's encoding.
func TestVotersRecordIsTypeTwoThenTheVoterSet(t *testing.T) {
	rec := VotersRecord(goldenVoters())
	require.Equal(t, unhex(t, "02"+goldenVotersHex), rec)
	require.True(t, IsVotersRecord(rec))
	require.False(t, IsVotersRecord([]byte{RecordData}))
	require.False(t, IsVotersRecord(nil))
}

// TestSnapshotVoterHeaderBytes: a dynamic quorum's snapshot starts with
// the 14-byte magic, the voter set's size (u32) and encoding; what
// follows is the application's. Bytes without the magic are the
// application's alone.
func TestSnapshotVoterHeaderBytes(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteSnapshotVoters(&b, goldenVoters()))
	b.WriteString("app")
	enc := unhex(t, goldenVotersHex)
	want := append(append(unhex(t, "ff"+hex.EncodeToString([]byte("kraft-voters"))+"00"), 0, 0, 0, byte(len(enc))), enc...)
	require.Equal(t, 14, len(want)-4-len(enc))
	require.Equal(t, append(want, "app"...), b.Bytes())

	vs, app, err := ReadSnapshotVoters(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	require.Equal(t, goldenVoters()[0], vs[0])
	rest, err := io.ReadAll(app)
	require.NoError(t, err)
	require.Equal(t, "app", string(rest))

	vs, app, err = ReadSnapshotVoters(bytes.NewReader([]byte("\xffkraft-plain")))
	require.NoError(t, err)
	require.Nil(t, vs)
	rest, err = io.ReadAll(app)
	require.NoError(t, err)
	require.Equal(t, "\xffkraft-plain", string(rest))
}

// TestBootstrapCheckpointBytes: the bootstrap checkpoint's payload is the
// voter set's encoding; storage frames it with "KRBS", its length (u32)
// and its CRC-32C (docs/storage.md).
func TestBootstrapCheckpointBytes(t *testing.T) {
	vs := []Voter{{Key: listenerKey(1), Endpoint: "a:1", KRaftVersions: kraft.VersionRange{Min: 0, Max: 1}}}
	payload := unhex(t, "00"+"0001"+"00000001"+"6b720000000000000000000000000002"+"0000"+"0001"+"0003"+"613a31")
	require.Equal(t, payload, EncodeVoters(vs))
	path := filepath.Join(t.TempDir(), storage.BootstrapFileName)
	require.NoError(t, storage.WriteBootstrap(path, EncodeVoters(vs)))
	file, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, append(unhex(t, "4b524253"+"00000020"+"8e81448c"), payload...), file)
}
