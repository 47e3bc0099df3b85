package kafkawire

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// goldenVoters are the voter set of the dynamic capture
// (testdata/golden/dynamic): ids 1-3, directory ids
// Uuid(0x6b72616674000000, 0x1000+n), CONTROLLER 127.0.0.1:3929n,
// kraft.version 0-1.
func goldenVoters() []replica.Voter {
	var vs []replica.Voter
	for _, s := range []struct {
		id  kraft.NodeID
		dir string
		ep  string
	}{{1, "a3JhZnQAAAAAAAAAAAAQAQ", "127.0.0.1:39291"}, {2, "a3JhZnQAAAAAAAAAAAAQAg", "127.0.0.1:39292"}, {3, "a3JhZnQAAAAAAAAAAAAQAw", "127.0.0.1:39293"}} {
		vs = append(vs, replica.Voter{Key: kraft.ReplicaKey{ID: s.id, DirectoryID: mustUuid(s.dir)}, Endpoint: s.ep, KRaftVersions: kraft.VersionRange{Min: 0, Max: 1}})
	}
	return vs
}

// TestVotersValueIsKafkasVotersRecord: kraft's VotersRecord value has
// Kafka's bytes (VotersRecord v0 as MemoryRecordsBuilder.appendVotersMessage
// writes it: the one-voter example of the Kafka node's documentation) and
// reads back.
func TestVotersValueIsKafkasVotersRecord(t *testing.T) {
	want, err := hex.DecodeString("0000" + "02" + "00000001" + "6b726166740000000000000000001001" + "02" + "0b434f4e54524f4c4c4552" + "0a3132372e302e302e31" + "997b" + "00" + "0000" + "0001" + "00" + "00" + "00")
	require.NoError(t, err)
	v := goldenVoters()[:1]
	got, err := VotersValue(v)
	require.NoError(t, err)
	require.Equal(t, want, got)
	back, err := ReadVotersValue(got)
	require.NoError(t, err)
	require.Equal(t, v, back)

	require.Equal(t, []byte{0, 0, 0, 1, 0}, KRaftVersionValue(1))
	level, err := ReadKRaftVersionValue([]byte{0, 0, 0, 1, 0})
	require.NoError(t, err)
	require.Equal(t, int16(1), level)

	for _, bad := range [][]byte{want[:len(want)-1], append(append([]byte{}, want...), 0), {0, 1, 1, 0}, nil} {
		_, err := ReadVotersValue(bad)
		require.Error(t, err, "%x", bad)
	}
}

// TestFirstLeaderBatchOfKafkaCrossesBothWays: the start-of-epoch batch a
// first Kafka leader writes, [LeaderChange, KRaftVersion(1), Voters]
// (LeaderState.appendStartOfEpochControlRecords; captured in a Fetch
// answer), reads as kraft's three entries (the LeaderChange, a
// KRaftVersionRecord of level 1, the VotersRecord with every voter's key,
// endpoint and range), and kraft writes each back as a control record
// with Kafka's key and value bytes, at the same offsets and epoch (D155,
// D156).
func TestFirstLeaderBatchOfKafkaCrossesBothWays(t *testing.T) {
	frame := readGolden(t, "dynamic/fetch-v17-control.response.hex")
	_, resp, err := ReadResponse(frame, Fetch, 17)
	require.NoError(t, err)
	raw := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches
	kafkaBatches, err := ReadBatches(raw)
	require.NoError(t, err)
	require.Len(t, kafkaBatches, 1)
	require.Len(t, kafkaBatches[0].Records, 3)

	entries, _, err := ReadEntries(raw)
	require.NoError(t, err)
	require.Len(t, entries, 3)
	require.Equal(t, replica.RecordLeaderChange, entries[0].Data[0])
	require.Equal(t, replica.KRaftVersionRecord(1), entries[1].Data)
	require.True(t, replica.IsVotersRecord(entries[2].Data))
	vs, err := replica.DecodeVoters(entries[2].Data[1:])
	require.NoError(t, err)
	require.Equal(t, goldenVoters(), vs)
	for i, e := range entries {
		require.Equal(t, int64(i), e.Offset)
		require.Equal(t, kraft.Epoch(1), e.Epoch)
	}

	out, err := AppendEntries(nil, entries, kafkaBatches[0].FirstTimestamp)
	require.NoError(t, err)
	ours, err := ReadBatches(out)
	require.NoError(t, err)
	require.Len(t, ours, 3, "a batch per entry (D83)")
	for i, b := range ours {
		require.True(t, b.Control())
		require.Equal(t, int64(i), b.BaseOffset)
		require.Equal(t, int32(1), b.PartitionLeaderEpoch)
		require.Len(t, b.Records, 1)
		require.Equal(t, kafkaBatches[0].Records[i].Key, b.Records[0].Key, "record %d", i)
		require.Equal(t, kafkaBatches[0].Records[i].Value, b.Records[0].Value, "record %d", i)
	}
	again, _, err := ReadEntries(out)
	require.NoError(t, err)
	require.Equal(t, entries, again)
}

// TestReadEntriesRefusesSnapshotControlRecordsInALog: a SnapshotHeader in
// a log's batches is no log record.
func TestReadEntriesRefusesSnapshotControlRecordsInALog(t *testing.T) {
	b := Batch{Attributes: AttrControl, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []Record{{Key: controlKey(ControlSnapshotHeader), Value: make([]byte, 11)}}}
	_, _, err := ReadEntries(AppendBatch(nil, &b))
	require.ErrorContains(t, err, "does not belong in a log")
	_, err = AppendEntries(nil, []storage.Entry{{Offset: 0, Epoch: 1, Data: []byte{replica.RecordKRaftVersion, 1}}}, 0)
	require.Error(t, err)
}

// TestSnapshotVotersAreKafkasBootstrapCheckpoint: the bootstrap checkpoint
// a Kafka node writes (Formatter.writeDynamicQuorumSnapshot:
// [SnapshotHeader, KRaftVersion(1), Voters], [SnapshotFooter]) reads as
// kraft.version 1 and its voter set, and kraft's writer of a dynamic
// quorum's snapshot writes the same bytes given the same voters and
// timestamps (D157).
func TestSnapshotVotersAreKafkasBootstrapCheckpoint(t *testing.T) {
	raw := readGolden(t, "dynamic/bootstrap-checkpoint.hex")
	c, err := ReadSnapshot(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, int16(1), c.KRaftVersion)
	require.Equal(t, goldenVoters(), c.Voters)
	require.Empty(t, c.Values)
	vs, err := SnapshotVoters(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Equal(t, goldenVoters(), vs)

	batches, err := ReadBatches(raw)
	require.NoError(t, err)
	require.Len(t, batches, 2)
	var out bytes.Buffer
	w, err := NewVotersSnapshotWriter(&out, kraft.LogEnd{}, batches[0].FirstTimestamp, c.LastContainedTimestamp, goldenVoters())
	require.NoError(t, err)
	require.NoError(t, w.Close(batches[1].FirstTimestamp))
	require.Equal(t, hex.EncodeToString(raw), hex.EncodeToString(out.Bytes()))

	// A static quorum's snapshot holds no voter set.
	out.Reset()
	w, err = NewSnapshotWriter(&out, kraft.LogEnd{Offset: 5, Epoch: 2}, 1, 1)
	require.NoError(t, err)
	require.NoError(t, w.Append(1, []byte("x")))
	require.NoError(t, w.Close(1))
	vs, err = SnapshotVoters(&out)
	require.NoError(t, err)
	require.Nil(t, vs)
}

// TestVotersRecordKeepsEveryListenerThroughKraft: a Kafka VotersRecord
// whose voter 1 has two listeners (CONTROLLER second) and voter 2 one
// listener under another name reads as kraft's voters (Endpoint the
// CONTROLLER one, or else the first), goes through kraft's own encoding
// (EncodeVoters, DecodeVoters) and through a kraft snapshot in Kafka's
// format, and writes back as the same Kafka bytes (docs/design.md D260).
func TestVotersRecordKeepsEveryListenerThroughKraft(t *testing.T) {
	hexs := func(s string) string { return hex.EncodeToString([]byte(s)) }
	kafka, err := hex.DecodeString("0000" + "03" +
		"00000001" + "6b726166740000000000000000001001" + "03" +
		"09" + hexs("EXTERNAL") + "03" + hexs("e1") + "4a75" + "00" +
		"0b" + hexs("CONTROLLER") + "03" + hexs("c1") + "2385" + "00" +
		"0000" + "0001" + "00" + "00" +
		"00000002" + "6b726166740000000000000000001002" + "02" +
		"05" + hexs("CTRL") + "03" + hexs("c2") + "2385" + "00" +
		"0000" + "0001" + "00" + "00" +
		"00")
	require.NoError(t, err)
	vs, err := ReadVotersValue(kafka)
	require.NoError(t, err)
	require.Len(t, vs, 2)
	require.Equal(t, "c1:9093", vs[0].Endpoint)
	require.Equal(t, []replica.Listener{{Name: "EXTERNAL", Host: "e1", Port: 19061}, {Name: "CONTROLLER", Host: "c1", Port: 9093}}, vs[0].Listeners)
	require.Equal(t, "c2:9093", vs[1].Endpoint)
	require.Equal(t, []replica.Listener{{Name: "CTRL", Host: "c2", Port: 9093}}, vs[1].Listeners)

	back, err := replica.DecodeVoters(replica.EncodeVoters(vs))
	require.NoError(t, err)
	require.Equal(t, vs, back)
	got, err := VotersValue(back)
	require.NoError(t, err)
	require.Equal(t, kafka, got)

	var snap bytes.Buffer
	w, err := NewVotersSnapshotWriter(&snap, kraft.LogEnd{Offset: 5, Epoch: 2}, 0, 4, back)
	require.NoError(t, err)
	require.NoError(t, w.Close(0))
	fromSnap, err := SnapshotVoters(&snap)
	require.NoError(t, err)
	require.Equal(t, vs, fromSnap)

	// A kraft leader's UpdateRaftVoter of voter 1 moves its CONTROLLER
	// listener and keeps the other.
	moved := append([]replica.Voter(nil), back...)
	moved[0].Endpoint = "c1b:9094"
	got, err = VotersValue(moved)
	require.NoError(t, err)
	again, err := ReadVotersValue(got)
	require.NoError(t, err)
	require.Equal(t, []replica.Listener{{Name: "EXTERNAL", Host: "e1", Port: 19061}, {Name: "CONTROLLER", Host: "c1b", Port: 9094}}, again[0].Listeners)
	require.Equal(t, "c1b:9094", again[0].Endpoint)
}

// TestVotersRecordUnderAnotherListenerNameMovesThatListener: under a
// Format whose listener name is CTRL (a transport's -listener-name), a
// Kafka VotersRecord whose voter lists CTRL second reads with Endpoint
// the CTRL listener; an endpoint update moves the CTRL listener and keeps
// the others in place; a kraft voter (no Listeners) is written as one
// CTRL listener; and the bytes read back the same (docs/design.md D310).
func TestVotersRecordUnderAnotherListenerNameMovesThatListener(t *testing.T) {
	f := Format{ListenerName: "CTRL"}
	kafka := []replica.Listener{{Name: "EXTERNAL", Host: "e1", Port: 19061}, {Name: "CTRL", Host: "c1", Port: 9093}, {Name: "CONTROLLER", Host: "k1", Port: 9099}}
	v := goldenVoters()[0]
	v.Listeners = kafka
	v.Endpoint = "c1:9093"
	value, err := f.VotersValue([]replica.Voter{v})
	require.NoError(t, err)
	read, err := f.ReadVotersValue(value)
	require.NoError(t, err)
	require.Equal(t, "c1:9093", read[0].Endpoint)
	require.Equal(t, kafka, read[0].Listeners)

	moved := append([]replica.Voter(nil), read...)
	moved[0].Endpoint = "c1b:9094"
	own := goldenVoters()[1] // a kraft voter: Listeners nil
	value, err = f.VotersValue(append(moved, own))
	require.NoError(t, err)
	again, err := Format{ListenerName: "NONE"}.ReadVotersValue(value) // every list whole
	require.NoError(t, err)
	require.Equal(t, []replica.Listener{{Name: "EXTERNAL", Host: "e1", Port: 19061}, {Name: "CTRL", Host: "c1b", Port: 9094}, {Name: "CONTROLLER", Host: "k1", Port: 9099}}, again[0].Listeners)
	require.Equal(t, []replica.Listener{{Name: "CTRL", Host: "127.0.0.1", Port: 39292}}, again[1].Listeners)
	back, err := f.ReadVotersValue(value)
	require.NoError(t, err)
	require.Equal(t, "c1b:9094", back[0].Endpoint)
	require.Equal(t, own, back[1], "a kraft voter comes back without Listeners")
}
