package storage

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/kraftquorum/kraft"
)

// Files as Kafka's FileQuorumStateStore writes them: Jackson's compact
// ObjectNode.toString(), fields in QuorumStateData.json's order,
// data_version last, no newline.
const (
	kafkaV0Leader = `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}`
	kafkaV0Voted  = `{"clusterId":"","leaderId":-1,"leaderEpoch":7,"votedId":3,"appliedOffset":0,"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}`
	kafkaV1Voted  = `{"leaderId":-1,"leaderEpoch":2,"votedId":1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}`
	kafkaV1Leader = `{"leaderId":1,"leaderEpoch":9,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`
	kafkaV1NoDir  = `{"leaderId":-1,"leaderEpoch":3,"votedId":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`
	kafkaV1Both   = `{"leaderId":2,"leaderEpoch":3,"votedId":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAQ","data_version":1}`
)

// dirJ8 is Kafka's Uuid "J8aAPcfLQt2bqs1JT_rMgQ" (the example of
// FileQuorumStateStore's documentation) as a uuid.UUID.
var dirJ8 = uuid.MustParse("27c6803d-c7cb-42dd-9baa-cd494ffacc81")

// dirOne is Kafka's Uuid.ONE_UUID, new Uuid(0L, 1L): "AAAAAAAAAAAAAAAAAAAAAQ".
var dirOne = uuid.UUID{15: 1}

func TestQuorumStateKafkaFiles(t *testing.T) {
	cases := []struct {
		name string
		file string
		data QuorumStateData
		rec  kraft.QuorumRecord
	}{
		{
			"v0 leader", kafkaV0Leader,
			QuorumStateData{Version: 0, LeaderID: 1, LeaderEpoch: 2, VotedID: -1, CurrentVoters: []int32{1, 2, 3}},
			kraft.QuorumRecord{Epoch: 2, LeaderID: 1, VotedKey: kraft.NoReplica},
		},
		{
			"v0 voted", kafkaV0Voted,
			QuorumStateData{Version: 0, LeaderID: -1, LeaderEpoch: 7, VotedID: 3, CurrentVoters: []int32{1, 2, 3}},
			kraft.QuorumRecord{Epoch: 7, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 3}},
		},
		{
			"v1 voted with directory", kafkaV1Voted,
			QuorumStateData{Version: 1, LeaderID: -1, LeaderEpoch: 2, VotedID: 1, VotedDirectoryID: dirJ8},
			kraft.QuorumRecord{Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 1, DirectoryID: dirJ8}},
		},
		{
			"v1 leader", kafkaV1Leader,
			QuorumStateData{Version: 1, LeaderID: 1, LeaderEpoch: 9, VotedID: -1},
			kraft.QuorumRecord{Epoch: 9, LeaderID: 1, VotedKey: kraft.NoReplica},
		},
		{
			"v1 voted without directory", kafkaV1NoDir,
			QuorumStateData{Version: 1, LeaderID: -1, LeaderEpoch: 3, VotedID: 2},
			kraft.QuorumRecord{Epoch: 3, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 2}},
		},
		{
			"v1 leader and vote", kafkaV1Both,
			QuorumStateData{Version: 1, LeaderID: 2, LeaderEpoch: 3, VotedID: 2, VotedDirectoryID: dirOne},
			kraft.QuorumRecord{Epoch: 3, LeaderID: 2, VotedKey: kraft.ReplicaKey{ID: 2, DirectoryID: dirOne}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := ParseQuorumState([]byte(c.file))
			require.NoError(t, err)
			require.Equal(t, c.data, d)
			rec, err := d.Record()
			require.NoError(t, err)
			require.Equal(t, c.rec, rec)

			// What we write is byte for byte what Kafka writes.
			b, err := d.Marshal()
			require.NoError(t, err)
			require.Equal(t, c.file, string(b))
			if c.data.Version == 1 {
				b, err = NewQuorumStateData(c.rec).Marshal()
				require.NoError(t, err)
				require.Equal(t, c.file, string(b))
			}

			path := filepath.Join(t.TempDir(), QuorumStateFileName)
			require.NoError(t, os.WriteFile(path, []byte(c.file), 0o644))
			got, err := ReadQuorumState(path)
			require.NoError(t, err)
			require.Equal(t, &c.rec, got)
		})
	}
}

func TestKafkaUUIDText(t *testing.T) {
	require.Equal(t, "AAAAAAAAAAAAAAAAAAAAAA", kafkaUUIDString(uuid.Nil))
	require.Equal(t, "AAAAAAAAAAAAAAAAAAAAAQ", kafkaUUIDString(dirOne))
	require.Equal(t, "J8aAPcfLQt2bqs1JT_rMgQ", kafkaUUIDString(dirJ8))
	for _, s := range []string{"J8aAPcfLQt2bqs1JT_rMgQ", "J8aAPcfLQt2bqs1JT_rMgQ=="} {
		u, err := parseKafkaUUID(s)
		require.NoError(t, err, s)
		require.Equal(t, dirJ8, u)
	}
	for _, s := range []string{
		"", "AAAA", "J8aAPcfLQt2bqs1JT/rMgQ", "J8aAPcfLQt2bqs1JT+rMgQ", "J8aAPcfLQt2bqs1JT_rMgQ=",
		"J8aAPcfLQt2bqs1JT_rMgQAA", "J8aAPcfLQt2bqs1JT_rMgQAAA", "J8aAPcfLQt2bq\ns1JT_rMgQ", "27c6803d-c7cb-42dd-9baa-cd494ffacc81",
	} {
		_, err := parseKafkaUUID(s)
		require.Error(t, err, s)
	}
}

// TestQuorumStateWrittenFieldsMatchKafkaSchema checks what we write against
// QuorumStateData.json with a plain JSON reader: the same fields, in the
// schema's order, of the schema's types, for each version.
func TestQuorumStateWrittenFieldsMatchKafkaSchema(t *testing.T) {
	schema := map[int16][]string{
		0: {"clusterId", "leaderId", "leaderEpoch", "votedId", "appliedOffset", "currentVoters", "data_version"},
		1: {"leaderId", "leaderEpoch", "votedId", "votedDirectoryId", "data_version"},
	}
	datas := []QuorumStateData{
		{Version: 0, LeaderID: 3, LeaderEpoch: 8, VotedID: 3, CurrentVoters: []int32{1, 3}},
		{Version: 0, LeaderID: -1, LeaderEpoch: 0, VotedID: -1},
		NewQuorumStateData(kraft.QuorumRecord{Epoch: 8, LeaderID: 3, VotedKey: kraft.ReplicaKey{ID: 3, DirectoryID: dirJ8}}),
		NewQuorumStateData(kraft.EmptyRecord()),
	}
	for _, d := range datas {
		b, err := d.Marshal()
		require.NoError(t, err)
		require.False(t, bytes.ContainsAny(b, "\n\r "), "one compact line: %s", b)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		tok, err := dec.Token()
		require.NoError(t, err)
		require.Equal(t, json.Delim('{'), tok)
		var keys []string
		for dec.More() {
			k, err := dec.Token()
			require.NoError(t, err)
			keys = append(keys, k.(string))
			var v interface{}
			require.NoError(t, dec.Decode(&v))
			switch k {
			case "clusterId":
				require.IsType(t, "", v)
			case "votedDirectoryId":
				require.IsType(t, "", v)
				require.Len(t, v, 22)
			case "currentVoters":
				for _, voter := range v.([]interface{}) {
					require.Len(t, voter, 1)
					_, err := voter.(map[string]interface{})["voterId"].(json.Number).Int64()
					require.NoError(t, err)
				}
			default:
				_, err := v.(json.Number).Int64()
				require.NoError(t, err, k)
			}
		}
		require.Equal(t, schema[d.Version], keys, "%s", b)
	}
}

func TestQuorumStateAccepts(t *testing.T) {
	cases := map[string]struct {
		file string
		want kraft.QuorumRecord
	}{
		"trailing newline": {kafkaV1Leader + "\n", kraft.QuorumRecord{Epoch: 9, LeaderID: 1, VotedKey: kraft.NoReplica}},
		"unknown fields":   {`{"leaderId":1,"leaderEpoch":9,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","x":[1,{}],"data_version":1}`, kraft.QuorumRecord{Epoch: 9, LeaderID: 1, VotedKey: kraft.NoReplica}},
		"other order and spaces": {
			`{ "data_version": 1, "votedDirectoryId": "J8aAPcfLQt2bqs1JT_rMgQ==", "votedId": 1, "leaderEpoch": 2, "leaderId": -1 }`,
			kraft.QuorumRecord{Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 1, DirectoryID: dirJ8}},
		},
		"v0 null voters": {`{"clusterId":"abc","leaderId":-1,"leaderEpoch":4,"votedId":-1,"appliedOffset":12,"currentVoters":null,"data_version":0}`, kraft.QuorumRecord{Epoch: 4, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}},
		"v0 with a directory id": {
			`{"clusterId":"","leaderId":-1,"leaderEpoch":4,"votedId":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAQ","appliedOffset":0,"currentVoters":[],"data_version":0}`,
			kraft.QuorumRecord{Epoch: 4, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 2, DirectoryID: dirOne}},
		},
		"v1 with v0 fields":         {`{"clusterId":"x","leaderId":-1,"leaderEpoch":4,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","appliedOffset":5,"currentVoters":[{"voterId":1}],"data_version":1}`, kraft.QuorumRecord{Epoch: 4, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}},
		"vote -1 ignores directory": {`{"leaderId":-1,"leaderEpoch":4,"votedId":-1,"votedDirectoryId":"J8aAPcfLQt2bqs1JT_rMgQ","data_version":1}`, kraft.QuorumRecord{Epoch: 4, LeaderID: kraft.NoNode, VotedKey: kraft.NoReplica}},
		"negative zero":             {`{"leaderId":-0,"leaderEpoch":4,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`, kraft.QuorumRecord{Epoch: 4, LeaderID: 0, VotedKey: kraft.NoReplica}},
		"int32 extremes":            {`{"leaderId":2147483647,"leaderEpoch":2147483647,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`, kraft.QuorumRecord{Epoch: 2147483647, LeaderID: 2147483647, VotedKey: kraft.NoReplica}},
	}
	for name, c := range cases {
		d, err := ParseQuorumState([]byte(c.file))
		require.NoError(t, err, name)
		rec, err := d.Record()
		require.NoError(t, err, name)
		require.Equal(t, c.want, rec, name)
	}
}

func TestQuorumStateRejects(t *testing.T) {
	const v1 = `"leaderId":1,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA"`
	const v0 = `"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[]`
	cases := map[string]string{
		"empty":                    ``,
		"blank":                    " \n",
		"torn":                     `{"leaderId":1,"leaderEpo`,
		"not JSON":                 `quorum`,
		"array":                    `[1,2]`,
		"null":                     `null`,
		"number":                   `1`,
		"pretty printed":           "{\n" + v1 + `,"data_version":1}`,
		"second line":              `{` + v1 + `,"data_version":1}` + "\nx",
		"trailing data":            `{` + v1 + `,"data_version":1} {}`,
		"no data_version":          `{` + v1 + `}`,
		"data_version 2":           `{` + v1 + `,"data_version":2}`,
		"data_version -1":          `{` + v1 + `,"data_version":-1}`,
		"data_version string":      `{` + v1 + `,"data_version":"1"}`,
		"data_version float":       `{` + v1 + `,"data_version":1.0}`,
		"data_version null":        `{` + v1 + `,"data_version":null}`,
		"data_version huge":        `{` + v1 + `,"data_version":65537}`,
		"v1 without leaderId":      `{"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"v1 without leaderEpoch":   `{"leaderId":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"v1 without votedId":       `{"leaderId":1,"leaderEpoch":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"v1 without directory":     `{"leaderId":1,"leaderEpoch":2,"votedId":-1,"data_version":1}`,
		"v0 without clusterId":     `{"leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[],"data_version":0}`,
		"v0 without appliedOffset": `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"currentVoters":[],"data_version":0}`,
		"v0 without voters":        `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"data_version":0}`,
		"v1 fields only, v0":       `{` + v1 + `,"data_version":0}`,
		"leaderId string":          `{"leaderId":"1","leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"leaderId float":           `{"leaderId":1.5,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"leaderId exponent":        `{"leaderId":1e2,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"leaderId bool":            `{"leaderId":true,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"leaderId null":            `{"leaderId":null,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"leaderEpoch too big":      `{"leaderId":1,"leaderEpoch":2147483648,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"votedId object":           `{"leaderId":1,"leaderEpoch":2,"votedId":{},"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		"directory number":         `{"leaderId":1,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":0,"data_version":1}`,
		"directory null":           `{"leaderId":1,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":null,"data_version":1}`,
		"directory short":          `{"leaderId":1,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAA","data_version":1}`,
		"directory hex":            `{"leaderId":1,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"27c6803d-c7cb-42dd-9baa-cd494ffacc81","data_version":1}`,
		"clusterId number":         `{"clusterId":5,` + v1 + `,"data_version":1}`,
		"appliedOffset string":     `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":"0","currentVoters":[],"data_version":0}`,
		"voters object":            `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":{},"data_version":0}`,
		"voter without id":         `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[{"id":1}],"data_version":0}`,
		"voter not object":         `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[1],"data_version":0}`,
		"voter id string":          `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":"1"}],"data_version":0}`,
		"not UTF-8":                `{"clusterId":"` + "\xff" + `","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[],"data_version":0}`,
	}
	for name, file := range cases {
		_, err := ParseQuorumState([]byte(file))
		require.Error(t, err, name)
	}
	_, err := ParseQuorumState([]byte(`{` + v0 + `,"data_version":0}`))
	require.NoError(t, err, "the v0 base of the cases above parses")

	// Values kraft cannot take are errors of Record, and of ReadQuorumState.
	for _, file := range []string{
		`{"leaderId":1,"leaderEpoch":-1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		`{"leaderId":-2,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
		`{"leaderId":1,"leaderEpoch":1,"votedId":-7,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`,
	} {
		d, err := ParseQuorumState([]byte(file))
		require.NoError(t, err)
		_, err = d.Record()
		require.Error(t, err, file)
		path := filepath.Join(t.TempDir(), QuorumStateFileName)
		require.NoError(t, os.WriteFile(path, []byte(file), 0o644))
		_, err = ReadQuorumState(path)
		require.ErrorContains(t, err, path)
	}
}

func TestReadQuorumStateFiles(t *testing.T) {
	dir := t.TempDir()
	path := QuorumStatePath(dir)
	require.Equal(t, filepath.Join(dir, "quorum-state"), path)

	rec, err := ReadQuorumState(path)
	require.NoError(t, err)
	require.Nil(t, rec, "a missing file is no record")
	d, err := ReadQuorumStateData(path)
	require.NoError(t, err)
	require.Nil(t, d)

	require.NoError(t, os.WriteFile(path, []byte(`{"leaderId":1`), 0o644))
	_, err = ReadQuorumState(path)
	require.ErrorContains(t, err, path, "errors name the file")
	_, err = ReadQuorumStateData(path)
	require.ErrorContains(t, err, path)

	require.NoError(t, os.WriteFile(path, make([]byte, maxQuorumStateSize+1), 0o644))
	_, err = ReadQuorumState(path)
	require.ErrorContains(t, err, path)
}

func TestWriteQuorumState(t *testing.T) {
	dir := t.TempDir()
	path := QuorumStatePath(dir)
	r1 := kraft.QuorumRecord{Epoch: 2, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 1, DirectoryID: dirJ8}}
	require.NoError(t, WriteQuorumState(path, r1))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, kafkaV1Voted, string(b))

	// A stale temporary file from an earlier crash is replaced, and no
	// temporary file stays.
	require.NoError(t, os.WriteFile(path+".tmp", []byte("junk"), 0o644))
	r2 := kraft.QuorumRecord{Epoch: 9, LeaderID: 1, VotedKey: kraft.NoReplica}
	require.NoError(t, WriteQuorumState(path, r2))
	names, err := readDirNames(dir)
	require.NoError(t, err)
	require.Equal(t, []string{QuorumStateFileName, QuorumStateFileName + QuorumStateCopySuffix}, names)
	got, err := ReadQuorumState(path)
	require.NoError(t, err)
	require.Equal(t, &r2, got)

	// Version 0, for a cluster at kraft.version 0.
	v0 := QuorumStateData{Version: 0, LeaderID: 1, LeaderEpoch: 2, VotedID: -1, CurrentVoters: []int32{1, 2, 3}}
	require.NoError(t, WriteQuorumStateData(path, v0))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, kafkaV0Leader, string(b)) //nolint:testifylint // byte for byte: Kafka's exact text, not just equal JSON
	d, err := ReadQuorumStateData(path)
	require.NoError(t, err)
	require.Equal(t, v0, *d)

	// Data a version cannot hold is refused, and the file is unchanged.
	for _, bad := range []QuorumStateData{
		{Version: 0, LeaderEpoch: 1, LeaderID: -1, VotedID: 2, VotedDirectoryID: dirJ8},
		{Version: 1, LeaderEpoch: 1, LeaderID: -1, VotedID: -1, ClusterID: "c"},
		{Version: 1, LeaderEpoch: 1, LeaderID: -1, VotedID: -1, AppliedOffset: 3},
		{Version: 1, LeaderEpoch: 1, LeaderID: -1, VotedID: -1, CurrentVoters: []int32{1}},
		{Version: 2, LeaderEpoch: 1, LeaderID: -1, VotedID: -1},
	} {
		require.ErrorContains(t, WriteQuorumStateData(path, bad), path)
	}
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, kafkaV0Leader, string(b)) //nolint:testifylint // byte for byte: Kafka's exact text, not just equal JSON

	// A directory that does not exist is an error, not a panic.
	require.Error(t, WriteQuorumState(filepath.Join(dir, "missing", QuorumStateFileName), r1))
}

func TestQuorumStateClusterIDEscaping(t *testing.T) {
	d := QuorumStateData{Version: 0, ClusterID: "a\"b\\c\n\t\x01é/<", LeaderID: -1, VotedID: -1, CurrentVoters: []int32{}}
	b, err := d.Marshal()
	require.NoError(t, err)
	require.Contains(t, string(b), `"clusterId":"a\"b\\c\n\t\u0001é/<"`)
	back, err := ParseQuorumState(b)
	require.NoError(t, err)
	require.Equal(t, d, back)
}

func TestQuorumStateRoundTripProperty(t *testing.T) {
	dir := t.TempDir()
	rapid.Check(t, func(t *rapid.T) {
		rec := kraft.QuorumRecord{
			Epoch:    kraft.Epoch(rapid.Int32Range(0, 1<<31-1).Draw(t, "epoch")),
			LeaderID: kraft.NodeID(rapid.Int32Range(-1, 1<<31-1).Draw(t, "leader")),
			VotedKey: kraft.NoReplica,
		}
		if id := rapid.Int32Range(-1, 100).Draw(t, "voted"); id >= 0 {
			rec.VotedKey.ID = kraft.NodeID(id)
			if rapid.Bool().Draw(t, "hasDir") {
				copy(rec.VotedKey.DirectoryID[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "dir"))
			}
		}
		path := filepath.Join(dir, QuorumStateFileName)
		require.NoError(t, WriteQuorumState(path, rec))
		got, err := ReadQuorumState(path)
		require.NoError(t, err)
		require.Equal(t, rec, *got)

		v0 := QuorumStateData{
			Version: 0, ClusterID: rapid.String().Draw(t, "cluster"), LeaderID: int32(rec.LeaderID),
			LeaderEpoch: int32(rec.Epoch), VotedID: int32(rec.VotedKey.ID), AppliedOffset: rapid.Int64().Draw(t, "applied"),
			CurrentVoters: rapid.SliceOf(rapid.Int32()).Draw(t, "voters"),
		}
		if len(v0.CurrentVoters) == 0 {
			v0.CurrentVoters = nil
		}
		b, err := v0.Marshal()
		require.NoError(t, err)
		back, err := ParseQuorumState(b)
		require.NoError(t, err)
		if len(back.CurrentVoters) == 0 {
			back.CurrentVoters = nil
		}
		require.Equal(t, v0, back)
	})
}
