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
