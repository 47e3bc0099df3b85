package node

import (
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// codecGolden is the encoding of codecFullMessage(e) without its records,
// for each event e of codecFullEvents, as kraft's wire format version 1
// has sent it since tag 13 was added. The codec is generated from the
// catalogue of messages (docs/design.md D270); these bytes keep a peer of
// an older kraftd able to talk to a newer one (D271).
var codecGolden = map[string]string{
	"ReceiveVoteRequest":           "01fffffffb00000002800000000000000b03fffffffffffffff7010000000301c1c1c1c1000000000000000000000001fffffff90123456789abcdeffedcba98765432107fffffff00000005a00102030405060708090a0b0c0d0eff00000100000000000000000901ffffffff",
	"ReceiveVoteResponse":          "01fffffffb00000002800000000000000b03fffffffffffffff702fffffffe0023000000110100000004ffffffff",
	"ReceiveBeginQuorumEpoch":      "01fffffffb00000002800000000000000b03fffffffffffffff7030000000201c1c1c1c1000000000000000000000001000000020000002100000008a00102030405060708090a0b0c0d0effffffffff",
	"ReceiveEndQuorumEpoch":        "01fffffffb00000002800000000000000b03fffffffffffffff7040000000101c1c1c1c1000000000000000000000001000000010000000cffffffffffffffff0000000200000000ffffffff",
	"ReceiveFetch":                 "01fffffffb00000002800000000000000b03fffffffffffffff705000000060123456789abcdeffedcba987654321001c1c1c1c10000000000000000000000010000002c0000002bc000000000000000ffffffff",
	"ReceiveFetchSnapshot":         "01fffffffb00000002800000000000000b03fffffffffffffff70600000007a00102030405060708090a0b0c0d0eff01c1c1c1c1000000000000000000000001fffffffd0000020000000000000000060000000000000005ffffffffffffffffffffffff",
	"ReceiveFetchResponse":         "01fffffffb00000002800000000000000b03fffffffffffffff70700000001ffff0000000100000005000000000000006301000000000000004d000000040100000000000004d200000003ffffffff",
	"ReceiveLeaderlessEpoch":       "01fffffffb00000002800000000000000b03fffffffffffffff708ffffffff00000015ffffffff",
	"ReceiveQuorumResponse":        "01fffffffb00000002800000000000000b03fffffffffffffff70900000009004a00000016fffffffcffffffff",
	"ReceiveFetchSnapshotResponse": "01fffffffb00000002800000000000000b03fffffffffffffff70a000000020063000000030000000800000400000000000000000700000002000000000000000100000000000000000000000300000003fe0007ffffffff",
	"ReceiveAddVoter":              "01fffffffb00000002800000000000000b03fffffffffffffff70b80000000000000050000000401c1c1c1c1000000000000000000000001000000060123456789abcdeffedcba9876543210010000000e3132372e302e302e313a39303934ffffffff",
	"ReceiveRemoveVoter":           "01fffffffb00000002800000000000000b03fffffffffffffff70c0000000000000009ffffffff01c1c1c1c100000000000000000000000100000002a00102030405060708090a0b0c0d0effffffffff",
	"ReceiveAPIVersionsResponse":   "01fffffffb00000002800000000000000b03fffffffffffffff70d00000003000701ffff0001ffffffff",
}

// TestCodecKeepsItsWireBytes: each message event encodes to the bytes
// pinned in codecGolden, and those bytes decode to the event (the wire is
// append-only, D271). A new event may have no golden value yet; every
// golden value names an event of codecFullEvents.
func TestCodecKeepsItsWireBytes(t *testing.T) {
	seen := 0
	for _, e := range codecFullEvents() {
		name := reflect.TypeOf(e).Name()
		want, ok := codecGolden[name]
		if !ok {
			continue
		}
		seen++
		m := codecFullMessage(e)
		m.Records = nil
		b, err := EncodeMessage(m)
		require.NoError(t, err, name)
		require.Equal(t, want, hex.EncodeToString(b), name)
		golden, err := hex.DecodeString(want)
		require.NoError(t, err, name)
		got, err := DecodeMessage(golden)
		require.NoError(t, err, name)
		require.Equal(t, m, got, name)
	}
	require.Equal(t, len(codecGolden), seen, "a golden value names no event of codecFullEvents")
}
