package storage

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft"
)

// readAll reads the whole log, from its start, in small reads.
func readAll(t *testing.T, l Log) []Entry {
	t.Helper()
	var out []Entry
	for from := l.StartOffset(); from < l.End().Offset; {
		es, err := l.Read(from, 100)
		require.NoError(t, err)
		require.NotEmpty(t, es)
		out = append(out, es...)
		from = es[len(es)-1].Offset + 1
	}
	return out
}

// normalize gives empty payloads one form, for comparisons.
func normalize(es []Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = Entry{Offset: e.Offset, Epoch: e.Epoch, Data: append([]byte{}, e.Data...)}
	}
	return out
}

func equalEntries(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Offset != b[i].Offset || a[i].Epoch != b[i].Epoch || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// stateOf computes the kraft.LogState of a log holding es, independently of
// the package's epoch history.
func stateOf(es []Entry) kraft.LogState {
	var s kraft.LogState
	for i, e := range es {
		if i == 0 || e.Epoch != es[i-1].Epoch {
			s.Epochs = append(s.Epochs, kraft.EpochStart{Epoch: e.Epoch, StartOffset: e.Offset})
		}
		s.End = kraft.LogEnd{Offset: e.Offset + 1, Epoch: e.Epoch}
	}
	return s
}

// stateFrom computes the kraft.LogState of a log that starts at start and
// holds es, independently of the package's epoch history.
func stateFrom(start kraft.LogEnd, es []Entry) kraft.LogState {
	if len(es) == 0 {
		return kraft.LogState{End: start, Start: start.Offset}
	}
	s := stateOf(es)
	s.Start = start.Offset
	return s
}
