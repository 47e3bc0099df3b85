package storage

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

func TestMemLogCrash(t *testing.T) {
	l := NewMemLog()
	_, err := l.Append(1, rec(0), rec(1))
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	_, err = l.Append(2, rec(2), rec(3))
	require.NoError(t, err)
	require.Equal(t, int64(2), l.Flushed())

	l.Crash()
	require.Equal(t, kraft.LogEnd{Offset: 2, Epoch: 1}, l.End())
	require.Equal(t, stateOf([]Entry{{0, 1, nil}, {1, 1, nil}}), l.State())
	require.Equal(t, normalize([]Entry{{0, 1, rec(0)}, {1, 1, rec(1)}}), normalize(readAll(t, l)))

	// The log goes on after the crash; a truncation is durable at once.
	_, err = l.Append(3, rec(2), rec(3), rec(4))
	require.NoError(t, err)
	require.NoError(t, l.Truncate(3))
	_, err = l.Append(3, rec(5))
	require.NoError(t, err)
	l.Crash()
	require.Equal(t, kraft.LogEnd{Offset: 3, Epoch: 3}, l.End())
	require.Equal(t, int64(3), l.Flushed())

	// A crash with everything synced loses nothing.
	require.NoError(t, l.Sync())
	l.Crash()
	require.Equal(t, kraft.LogEnd{Offset: 3, Epoch: 3}, l.End())

	// A crash of an unsynced log empties it.
	l = NewMemLog()
	_, err = l.Append(1, rec(0))
	require.NoError(t, err)
	l.Crash()
	require.Equal(t, kraft.LogState{}, l.State())
}

// TestMemLogOwnedAndShared: Append and AppendEntries keep copies and Read
// returns copies, so the caller's bytes and the log's stay apart; with
// AppendOwned the log keeps the caller's memory, and ReadShared returns
// the log's memory, unchanged by later appends, truncations and
// deletions.
func TestMemLogOwnedAndShared(t *testing.T) {
	l := NewMemLog()
	a, b := []byte("aaaa"), []byte("bbbb")
	_, err := l.Append(1, a)
	require.NoError(t, err)
	_, err = l.AppendOwned(1, b)
	require.NoError(t, err)
	c := []byte("cccc")
	_, err = l.AppendEntries(Entry{Offset: 2, Epoch: 1, Data: c})
	require.NoError(t, err)

	shared, err := l.ReadShared(0, 1<<20)
	require.NoError(t, err)
	require.Len(t, shared, 3)
	require.NotSame(t, &a[0], &shared[0].Data[0], "Append copies")
	require.Same(t, &b[0], &shared[1].Data[0], "AppendOwned keeps the caller's memory")
	require.NotSame(t, &c[0], &shared[2].Data[0], "AppendEntries copies")
	require.Equal(t, len(shared[1].Data), cap(shared[1].Data), "capped: an append to it reallocates")
	again, err := l.ReadShared(1, 1)
	require.NoError(t, err)
	require.Same(t, &shared[1].Data[0], &again[0].Data[0], "ReadShared shares")
	copied, err := l.Read(1, 1)
	require.NoError(t, err)
	require.NotSame(t, &shared[1].Data[0], &copied[0].Data[0], "Read copies")
	require.Equal(t, []byte("bbbb"), copied[0].Data)

	// Later changes of the log leave shared records as they were.
	require.NoError(t, l.Truncate(1))
	_, err = l.Append(2, []byte("dddd"), []byte("eeee"))
	require.NoError(t, err)
	require.NoError(t, l.DeleteBefore(2))
	require.Equal(t, "aaaa|bbbb|cccc", string(shared[0].Data)+"|"+string(shared[1].Data)+"|"+string(shared[2].Data))
}

// TestMemLogCloneChangesIndependently: a clone holds the same written
// records, epochs and flushed offset as its original, and a change to one
// (an append, a truncation that cuts into the same epoch, a sync, a
// crash) leaves the other as it was.
func TestMemLogCloneChangesIndependently(t *testing.T) {
	l := NewMemLog()
	_, err := l.Append(1, rec(0), rec(1))
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	_, err = l.Append(2, rec(2), rec(3))
	require.NoError(t, err)

	c := l.Clone()
	require.Equal(t, l.End(), c.End())
	require.Equal(t, l.State(), c.State())
	require.Equal(t, int64(2), c.Flushed())
	require.Equal(t, normalize(readAll(t, l)), normalize(readAll(t, c)))

	// The clone truncates into epoch 2 and appends in epoch 3, then syncs.
	require.NoError(t, c.Truncate(3))
	_, err = c.Append(3, rec(9))
	require.NoError(t, err)
	require.NoError(t, c.Sync())
	// The original still ends with record 3 of epoch 2, only 2 durable.
	require.Equal(t, kraft.LogEnd{Offset: 4, Epoch: 2}, l.End())
	require.Equal(t, int64(2), l.Flushed())
	require.Equal(t, normalize([]Entry{{0, 1, rec(0)}, {1, 1, rec(1)}, {2, 2, rec(2)}, {3, 2, rec(3)}}), normalize(readAll(t, l)))
	require.Equal(t, stateOf([]Entry{{0, 1, nil}, {1, 1, nil}, {2, 2, nil}, {3, 2, nil}}), l.State())

	// The original crashes; the clone keeps its synced records.
	l.Crash()
	require.Equal(t, kraft.LogEnd{Offset: 2, Epoch: 1}, l.End())
	require.Equal(t, kraft.LogEnd{Offset: 4, Epoch: 3}, c.End())
	require.Equal(t, int64(4), c.Flushed())
	require.Equal(t, normalize([]Entry{{0, 1, rec(0)}, {1, 1, rec(1)}, {2, 2, rec(2)}, {3, 3, rec(9)}}), normalize(readAll(t, c)))
	require.Equal(t, stateOf([]Entry{{0, 1, nil}, {1, 1, nil}, {2, 2, nil}, {3, 3, nil}}), c.State())
}

// TestMemLogAppendEntriesOwnedKeepsThePayloads: AppendEntriesOwned keeps
// the entries' payloads as they are, capped at their length (an append to
// a kept payload cannot write into the log), checks the entries as
// AppendEntries does, and keeps a nil payload as an empty one, as
// AppendEntries' copy does (D147).
func TestMemLogAppendEntriesOwnedKeepsThePayloads(t *testing.T) {
	l := NewMemLog()
	backing := []byte("abcdef")
	_, err := l.AppendEntriesOwned(Entry{Offset: 0, Epoch: 1, Data: backing[:3]}, Entry{Offset: 1, Epoch: 1})
	require.NoError(t, err)
	got, err := l.ReadShared(0, 1<<20)
	require.NoError(t, err)
	require.Same(t, &backing[0], &got[0].Data[0])
	require.Equal(t, 3, cap(got[0].Data))
	require.NotNil(t, got[1].Data)
	require.Empty(t, got[1].Data)
	_, err = l.AppendEntriesOwned(Entry{Offset: 5, Epoch: 1, Data: []byte("x")})
	require.Error(t, err, "a gap is refused")
	require.Equal(t, int64(2), l.End().Offset)
}
