package main

import (
	"bytes"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/stretchr/testify/require"
)

func records(from int64, data ...string) []node.Record {
	var rs []node.Record
	for i, d := range data {
		rs = append(rs, node.Record{Offset: from + int64(i), Epoch: 1, Data: []byte(d)})
	}
	return rs
}

// TestMachine: the digest depends on every record and their order; a
// snapshot restored into a fresh machine gives the same state, and the
// same records applied after it give the same digest as without it.
func TestMachine(t *testing.T) {
	a, b := &machine{}, &machine{}
	a.apply(records(1, "x", "y"))
	b.apply(records(1, "y", "x"))
	require.NotEqual(t, a.status().Digest, b.status().Digest, "order matters")
	c := &machine{}
	c.apply(records(1, "xy"))
	require.NotEqual(t, a.status().Digest, c.status().Digest, "record boundaries matter")
	require.Equal(t, machineStatus{Records: 2, Bytes: 2, Applied: 3, Digest: a.status().Digest}, a.status())

	id := kraft.LogEnd{Offset: 4, Epoch: 1} // a control record at 3
	var snap bytes.Buffer
	require.NoError(t, a.snapshot(id, &snap))
	r := &machine{}
	require.NoError(t, r.restore(id, bytes.NewReader(snap.Bytes())))
	require.Equal(t, machineStatus{Records: 2, Bytes: 2, Applied: 4, Digest: a.status().Digest, Restored: &node.SnapshotID{Offset: 4, Epoch: 1}}, r.status())
	a.apply(records(4, "z"))
	r.apply(records(4, "z"))
	require.Equal(t, a.status().Digest, r.status().Digest)

	// A snapshot whose content is not the id's, or not a snapshot.
	require.Error(t, (&machine{}).restore(kraft.LogEnd{Offset: 5, Epoch: 1}, bytes.NewReader(snap.Bytes())))
	require.Error(t, (&machine{}).restore(id, bytes.NewReader([]byte("{}"))))
	require.Error(t, (&machine{}).restore(id, bytes.NewReader(snap.Bytes()[:10])))
}
