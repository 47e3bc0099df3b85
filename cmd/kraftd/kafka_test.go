package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/kafkawire"
	"github.com/kraftquorum/kraft/node"
	"github.com/stretchr/testify/require"
)

// kafkaNodeSnapshot is a snapshot as the Kafka node (kafka-raft-node)
// writes it: Kafka's format, one JSON {"offset","epoch","text"} data
// record per committed record, and voters' control records if any.
func kafkaNodeSnapshot(t *testing.T, id kraft.LogEnd, voters []node.Voter, recs []node.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := kafkawire.NewVotersSnapshotWriter(&buf, id, 7, 7, voters)
	require.NoError(t, err)
	var values [][]byte
	for _, r := range recs {
		v, err := json.Marshal(map[string]any{"offset": r.Offset, "epoch": r.Epoch, "text": string(r.Data)})
		require.NoError(t, err)
		values = append(values, v)
	}
	require.NoError(t, w.Append(7, values...))
	require.NoError(t, w.Close(7))
	return buf.Bytes()
}

// TestKafkaRestoreRebuildsFromAKafkaNodesSnapshot: a snapshot written by
// a Kafka node restores into the state a replica that applied its
// committed records has (digest, counts, the map), and the records after
// it apply on top as on that replica; its voter set reads from its
// control records. A snapshot of unknown content is refused (D158).
func TestKafkaRestoreRebuildsFromAKafkaNodesSnapshot(t *testing.T) {
	recs := []node.Record{
		{Offset: 1, Epoch: 1, Data: []byte("a")},
		{Offset: 2, Epoch: 1, Data: []byte("b")},
		{Offset: 5, Epoch: 2, Data: []byte("c")},
	}
	id := kraft.LogEnd{Offset: 7, Epoch: 2}
	voters := []node.Voter{{Key: kraft.ReplicaKey{ID: 1, DirectoryID: uuid.New()}, Endpoint: "127.0.0.1:1", KRaftVersions: kraft.VersionRange{Min: 0, Max: 1}}}
	snap := kafkaNodeSnapshot(t, id, voters, recs)

	want := &machine{}
	want.apply(recs)
	got := &machine{}
	got.apply(records(1, "junk")) // state the snapshot replaces
	require.NoError(t, kafkaRestore(got)(id, bytes.NewReader(snap)))
	st := got.status()
	require.Equal(t, want.status().Digest, st.Digest)
	require.Equal(t, int64(3), st.Records)
	require.Equal(t, int64(3), st.Bytes)
	require.Equal(t, int64(7), st.Applied)
	want.apply(records(7, "d"))
	got.apply(records(7, "d"))
	require.Equal(t, want.status(), machineStatus{Records: got.status().Records, Bytes: got.status().Bytes, Applied: got.status().Applied, Digest: got.status().Digest})

	vs, err := kafkaSnapshotVoters(kafkawire.Format{})(bytes.NewReader(snap))
	require.NoError(t, err)
	require.Equal(t, voters, vs)

	// kraftd's own snapshot in Kafka's format still restores as it is.
	var own bytes.Buffer
	require.NoError(t, kafkaSnapshot(want, kafkawire.Format{})(kraft.LogEnd{Offset: 8, Epoch: 2}, &own))
	again := &machine{}
	require.NoError(t, kafkaRestore(again)(kraft.LogEnd{Offset: 8, Epoch: 2}, bytes.NewReader(own.Bytes())))
	require.Equal(t, want.status().Digest, again.status().Digest)

	// Records of unknown form, or past the snapshot's end, are refused.
	var odd bytes.Buffer
	w, err := kafkawire.NewSnapshotWriter(&odd, id, 1, 1)
	require.NoError(t, err)
	require.NoError(t, w.Append(1, []byte("not json")))
	require.NoError(t, w.Close(1))
	require.ErrorContains(t, kafkaRestore(&machine{})(id, bytes.NewReader(odd.Bytes())), "neither")
	late := kafkaNodeSnapshot(t, kraft.LogEnd{Offset: 5, Epoch: 2}, nil, recs)
	require.Error(t, kafkaRestore(&machine{})(kraft.LogEnd{Offset: 5, Epoch: 2}, bytes.NewReader(late)))
}
