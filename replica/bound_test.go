package replica

import (
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/plant"
	"github.com/stretchr/testify/require"
)

// TestParkedFetchesBounded: a leader parks at most MaxParkedFetches
// Fetches; each one past it is answered at once, with no records, and
// counted by ParkRefused (D202).
func TestParkedFetchesBounded(t *testing.T) {
	n := newReadNet(t, 3, plant.None)
	l := n.elect()
	l.r.Take()
	var from kraft.NodeID = 1
	if l.id == 1 {
		from = 2
	}
	st := l.r.State()
	base := l.r.Parked()
	const extra = 5
	for i := 0; i < MaxParkedFetches-base+extra; i++ {
		l.r.Receive(n.now, Message{From: from, To: l.id, Corr: uint64(1000 + i), HighWatermark: st.HighWatermark(),
			Event: kraft.ReceiveFetch{From: from, CurrentLeaderEpoch: st.Epoch(), FetchEpoch: st.LogEnd().Epoch, FetchOffset: st.LogEnd().Offset}})
	}
	answered := 0
	for _, o := range l.r.Take() {
		if s, ok := o.(Send); ok && s.Message.Response && s.Message.Corr >= 1000 {
			answered++
			require.Empty(t, s.Message.Records)
		}
	}
	require.Equal(t, MaxParkedFetches, l.r.Parked())
	require.Equal(t, uint64(extra), l.r.ParkRefused())
	require.Equal(t, extra, answered, "the Fetches past the bound are answered at once")
}
