package storage

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

var (
	qsR1 = kraft.QuorumRecord{Epoch: 3, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 2, DirectoryID: uuid.MustParse("27c6803d-c7cb-42dd-9baa-cd494ffacc81")}}
	qsR2 = kraft.QuorumRecord{Epoch: 3, LeaderID: 2, VotedKey: kraft.ReplicaKey{ID: 2, DirectoryID: uuid.MustParse("27c6803d-c7cb-42dd-9baa-cd494ffacc81")}}
	qsR3 = kraft.QuorumRecord{Epoch: 4, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 3, DirectoryID: uuid.MustParse("c4a1d5a2-55a3-4c3b-9b39-1a3b6f2d9e11")}}
)

// requireQuorumDamage requires an error that says the quorum state is
// damaged.
func requireQuorumDamage(t *testing.T, err error, msgAndArgs ...interface{}) *QuorumStateDamageError {
	t.Helper()
	var d *QuorumStateDamageError
	require.True(t, errors.As(err, &d), "want a QuorumStateDamageError, got %v %v", err, msgAndArgs)
	require.ErrorIs(t, err, ErrDamaged)
	return d
}

// TestQuorumStateFlipsAreDamage flips each byte of the quorum-state file:
// each flip is damage, though many still parse (a digit of the epoch or of
// the vote).
func TestQuorumStateFlipsAreDamage(t *testing.T) {
	dir := t.TempDir()
	path := QuorumStatePath(dir)
	require.NoError(t, WriteQuorumState(path, qsR1))
	require.NoError(t, WriteQuorumState(path, qsR3))
	good, err := os.ReadFile(path)
	require.NoError(t, err)
	parsed := 0
	for at := range good {
		for _, bit := range []byte{0x01, 0x10} {
			b := append([]byte(nil), good...)
			b[at] ^= bit
			require.NoError(t, os.WriteFile(path, b, 0o644))
			if _, err := ParseQuorumState(b); err == nil {
				parsed++
			}
			got, err := ReadQuorumState(path)
			d := requireQuorumDamage(t, err, "byte %d bit %x: got %+v", at, bit, got)
			require.Equal(t, &qsR3, d.Newest)
			require.Equal(t, qsR3.Epoch, d.Epoch)
		}
	}
	require.Positive(t, parsed, "some flips leave a file Kafka would read")
}

// TestQuorumStateCopyFlips flips each byte of the checked copy's records:
// the read gives the record written, or damage, never another record.
func TestQuorumStateCopyFlips(t *testing.T) {
	dir := t.TempDir()
	path := QuorumStatePath(dir)
	require.NoError(t, WriteQuorumState(path, qsR1))
	require.NoError(t, WriteQuorumState(path, qsR2))
	cpath := path + QuorumStateCopySuffix
	good, err := os.ReadFile(cpath)
	require.NoError(t, err)
	damaged := 0
	for _, slot := range []int{0, quorumCopySlotSize} {
		for at := slot; at < slot+quorumCopyBytes; at++ {
			b := append([]byte(nil), good...)
			b[at] ^= 0x04
			require.NoError(t, os.WriteFile(cpath, b, 0o644))
			got, err := ReadQuorumState(path)
			if err != nil {
				requireQuorumDamage(t, err, "byte %d", at)
				damaged++
				continue
			}
			require.Equal(t, &qsR2, got, "byte %d", at)
		}
	}
	require.Equal(t, quorumCopyBytes, damaged, "a flip in the newest slot is damage; in the older, harmless")
	require.NoError(t, os.WriteFile(cpath, good[:10], 0o644))
	_, err = ReadQuorumState(path)
	requireQuorumDamage(t, err)
}

// TestQuorumStateRollbackAndLoss: a quorum-state file rolled back to an
// older record, or deleted, is damage; rolled back by one write (what a
// crash between the copy's write and the file's leaves) it reads as the
// newest record.
func TestQuorumStateRollbackAndLoss(t *testing.T) {
	dir := t.TempDir()
	path := QuorumStatePath(dir)
	var contents [][]byte
	for _, r := range []kraft.QuorumRecord{qsR1, qsR2, qsR3} {
		require.NoError(t, WriteQuorumState(path, r))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		contents = append(contents, b)
	}
	require.NoError(t, os.WriteFile(path, contents[0], 0o644))
	_, err := ReadQuorumState(path)
	d := requireQuorumDamage(t, err)
	require.Contains(t, d.Error(), "the file holds epoch 3, leader -1, vote 2, but its checked copy epoch 4, leader -1, vote 3")

	require.NoError(t, os.WriteFile(path, contents[1], 0o644))
	got, err := ReadQuorumState(path)
	require.NoError(t, err)
	require.Equal(t, &qsR3, got, "the record being written is taken as written")

	require.NoError(t, os.Remove(path))
	_, err = ReadQuorumState(path)
	d = requireQuorumDamage(t, err)
	require.Contains(t, d.Error(), "the file is missing")
	require.Equal(t, qsR3.Epoch, d.Epoch)

	// A first write cut before the file was written reads as written.
	dir = t.TempDir()
	path = QuorumStatePath(dir)
	require.NoError(t, WriteQuorumState(path, qsR1))
	require.NoError(t, os.Remove(path))
	got, err = ReadQuorumState(path)
	require.NoError(t, err)
	require.Equal(t, &qsR1, got)
}

// TestCheckQuorumStateAgainstTheLog: a missing quorum record, or one of an
// epoch below the log's, is damage (a replica persists an epoch before it
// appends records of it); nothing else is.
func TestCheckQuorumStateAgainstTheLog(t *testing.T) {
	path := QuorumStatePath(t.TempDir())
	d := requireQuorumDamage(t, CheckQuorumState(path, nil, 2))
	require.Contains(t, d.Error(), "no quorum record, but the log holds records of epoch 2")
	d = requireQuorumDamage(t, CheckQuorumState(path, &qsR1, 4))
	require.Equal(t, kraft.Epoch(4), d.Epoch)
	require.NoError(t, CheckQuorumState(path, nil, 0))
	require.NoError(t, CheckQuorumState(path, &qsR1, 3))
	require.NoError(t, CheckQuorumState(path, &qsR1, 1))

	// The reproduction: both files deleted, the log shows epochs.
	dir := t.TempDir()
	path = QuorumStatePath(dir)
	require.NoError(t, WriteQuorumState(path, qsR3))
	l, _ := reopen(t, dir+"/log", 0)
	fillLog(t, l, 30) // epochs 1 to 5
	require.NoError(t, l.Sync())
	require.NoError(t, l.Close())
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Remove(path+QuorumStateCopySuffix))
	rec, err := ReadQuorumState(path)
	require.NoError(t, err)
	require.Nil(t, rec)
	l, recovery := reopen(t, dir+"/log", 0)
	requireQuorumDamage(t, CheckQuorumState(path, rec, recovery.SyncedEpoch))
	require.NoError(t, l.Close())
}

// TestQuorumStateDamageMessages: a refusal that only a voted directory id
// tells apart shows the ids, and one with a damaged slot of the copy says
// so.
func TestQuorumStateDamageMessages(t *testing.T) {
	dir := t.TempDir()
	path := QuorumStatePath(dir)
	voted := kraft.QuorumRecord{Epoch: 12, LeaderID: kraft.NoNode, VotedKey: kraft.ReplicaKey{ID: 2}}
	require.NoError(t, WriteQuorumState(path, voted))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	i := bytes.Index(b, []byte(`"AAAA`))
	require.Positive(t, i)
	b[i+1] ^= 0x2b // the voted directory id: A -> j
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, err = ReadQuorumState(path)
	require.ErrorIs(t, err, ErrDamaged)
	require.ErrorContains(t, err, "vote 2 (directory 8c000000-0000-0000-0000-000000000000), but its checked copy epoch 12, leader -1, vote 2 (directory 00000000-0000-0000-0000-000000000000)")

	dir = t.TempDir()
	path = QuorumStatePath(dir)
	require.NoError(t, WriteQuorumState(path, kraft.QuorumRecord{Epoch: 3, LeaderID: 1, VotedKey: kraft.NoReplica}))
	require.NoError(t, WriteQuorumState(path, kraft.QuorumRecord{Epoch: 4, LeaderID: 1, VotedKey: kraft.NoReplica}))
	c, err := os.ReadFile(path + QuorumStateCopySuffix)
	require.NoError(t, err)
	newest := 0 // the slot of the newest record
	if s, ok := parseQuorumSlot(c[quorumCopySlotSize:]); ok && s.rec.Epoch == 4 {
		newest = quorumCopySlotSize
	}
	c[newest+10] ^= 1
	require.NoError(t, os.WriteFile(path+QuorumStateCopySuffix, c, 0o644))
	_, err = ReadQuorumState(path)
	require.ErrorIs(t, err, ErrDamaged)
	require.ErrorContains(t, err, "the file holds epoch 4, leader 1, vote -1, but its checked copy epoch 3, leader 1, vote -1, and the copy's other slot fails its checksum")
}
