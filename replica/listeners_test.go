package replica

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
)

// A voter's listeners (docs/design.md D260).

func listenerKey(id kraft.NodeID) kraft.ReplicaKey {
	return kraft.ReplicaKey{ID: id, DirectoryID: uuid.UUID{0x6b, 0x72, 15: byte(id + 1)}}
}

// TestVoterSetOfVersionZeroStillDecodes: the bytes EncodeVoters wrote
// before voters had listeners (version 0; a literal of that encoding)
// decode to the same voters, and a set without listeners still encodes to
// them, so records, checkpoints and snapshots written before read the same.
func TestVoterSetOfVersionZeroStillDecodes(t *testing.T) {
	old, err := hex.DecodeString("00" + "0002" +
		"00000001" + "6b720000000000000000000000000002" + "0000" + "0001" + "000e" + hex.EncodeToString([]byte("127.0.0.1:9093")) +
		"00000002" + "6b720000000000000000000000000003" + "0000" + "0001" + "0000")
	require.NoError(t, err)
	want := []Voter{
		{Key: listenerKey(1), Endpoint: "127.0.0.1:9093", KRaftVersions: kraft.VersionRange{Min: 0, Max: 1}},
		{Key: listenerKey(2), KRaftVersions: kraft.VersionRange{Min: 0, Max: 1}},
	}
	got, err := DecodeVoters(old)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, old, EncodeVoters(want))
}

// TestVoterSetKeepsEveryListener: a set with a voter of two listeners
// encodes as version 1 and decodes to the same voters, listeners in their
// order; truncated bytes are refused.
func TestVoterSetKeepsEveryListener(t *testing.T) {
	vs := []Voter{
		{Key: listenerKey(1), Endpoint: "c1:9093", KRaftVersions: SupportedKRaftVersions,
			Listeners: []Listener{{Name: "EXTERNAL", Host: "e1", Port: 19093}, {Name: "CONTROLLER", Host: "c1", Port: 9093}}},
		{Key: listenerKey(2), Endpoint: "c2:9093", KRaftVersions: SupportedKRaftVersions},
	}
	b := EncodeVoters(vs)
	require.Equal(t, byte(votersVersionListeners), b[0])
	got, err := DecodeVoters(b)
	require.NoError(t, err)
	require.Equal(t, vs, got)
	for i := 1; i < len(b); i++ {
		_, err := DecodeVoters(b[:i])
		require.Error(t, err, "cut at %d", i)
	}
}

// TestLeaderAddingAVoterKeepsTheOthersListeners: a dynamic quorum whose
// voter 1 has two listeners adds voter 3 (an observer) with two listeners
// of its own: the VotersRecord the leader writes holds voter 1's and voter
// 3's listeners, and every replica's voter set has them after replication.
func TestLeaderAddingAVoterKeepsTheOthersListeners(t *testing.T) {
	boot := []Voter{
		{Key: listenerKey(0), Endpoint: "c0:9093", KRaftVersions: SupportedKRaftVersions},
		{Key: listenerKey(1), Endpoint: "c1:9093", KRaftVersions: SupportedKRaftVersions,
			Listeners: []Listener{{Name: "CONTROLLER", Host: "c1", Port: 9093}, {Name: "EXTERNAL", Host: "e1", Port: 19093}}},
		{Key: listenerKey(2), Endpoint: "c2:9093", KRaftVersions: SupportedKRaftVersions},
	}
	n := &readNet{t: t, cut: map[[2]kraft.NodeID]bool{}, committed: -1, reads: map[readKey]*readCall{}}
	for i := 0; i < 4; i++ {
		n.addHost(listenerKey(kraft.NodeID(i)), func(cfg *Config) {
			cfg.Kraft.Observer = i == 3
			cfg.BootstrapServers = []kraft.NodeID{0, 1, 2}
			if i < 3 {
				cfg.Bootstrap = boot
			}
		})
	}
	for _, h := range n.hosts {
		n.carry(h)
	}
	l := n.elect()
	n.write(l, "a")

	added := []Listener{{Name: "CONTROLLER", Host: "c3", Port: 9093}, {Name: "EXTERNAL", Host: "e3", Port: 19093}}
	_, err := l.r.AddVoterListeners(n.now, listenerKey(3), "c3:9093", added)
	require.NoError(t, err)
	n.carry(l)
	n.runUntil(5*time.Second, "voter 3 added and replicated", func() bool {
		for _, h := range n.hosts {
			if len(h.r.CurrentVoters()) != 4 || h.r.State().HighWatermark() < l.r.State().LogEnd().Offset {
				return false
			}
		}
		return true
	})

	want := append(append([]Voter(nil), boot...),
		Voter{Key: listenerKey(3), Endpoint: "c3:9093", KRaftVersions: SupportedKRaftVersions, Listeners: added})
	for _, h := range n.hosts {
		require.Equal(t, want, h.r.CurrentVoters(), "replica %d", h.id)
	}
	// The record in the leader's log holds them.
	entries, err := l.log.Read(0, 1<<20)
	require.NoError(t, err)
	var last []Voter
	for _, e := range entries {
		if IsVotersRecord(e.Data) {
			last, err = DecodeVoters(e.Data[1:])
			require.NoError(t, err)
		}
	}
	require.Equal(t, want, last)
}
