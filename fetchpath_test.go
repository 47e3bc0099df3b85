package kraft

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The leader's Fetch path takes shortcuts (docs/design.md D340); these
// tests check that each one decides what the general path decides.

// receivedFetch finds a ReceiveFetch where the Event holds it, and nothing
// in any other event.
func TestReceivedFetchFindsOnlyAFetchInPlace(t *testing.T) {
	require.NotNil(t, tabReceiveFetch, "the layout check failed: every Fetch takes the type switch")
	require.True(t, checkFetchIn(tabReceiveFetch))
	require.False(t, checkFetchIn(nil))
	fetches := 0
	rapid.Check(t, func(rt *rapid.T) {
		e := genEvent(rt, 3)
		if rapid.Bool().Draw(rt, "fetch") {
			// genEvent draws a Fetch once in 25 events; half the cases
			// are one, so that every run checks some.
			e = ReceiveFetch{
				From: NodeID(rapid.IntRange(-1, 5).Draw(rt, "from")), FromDirectoryID: dirA,
				ClusterID:          rapid.SampledFrom([]uuid.NullUUID{{}, testClusterID}).Draw(rt, "cluster"),
				CurrentLeaderEpoch: Epoch(rapid.IntRange(-1, 5).Draw(rt, "epoch")),
				FetchEpoch:         Epoch(rapid.IntRange(-1, 5).Draw(rt, "fetchEpoch")),
				FetchOffset:        int64(rapid.IntRange(-1, 1<<20).Draw(rt, "fetchOffset")),
			}
		}
		f := receivedFetch(e)
		want, isFetch := e.(ReceiveFetch)
		if !isFetch {
			require.Nil(rt, f, "%T", e)
			return
		}
		fetches++
		require.NotNil(rt, f)
		require.Equal(rt, want, *f)
	})
	require.Positive(t, fetches)
}

// The steady fetch's shortcut in validateOffsetAndEpoch answers as Kafka's
// validation (validateAt) on every log a replica can have: appended,
// truncated, with snapshots, started at a snapshot, reset to one.
func TestSteadyFetchShortcutIsKafkasValidation(t *testing.T) {
	shortcuts := 0
	rapid.Check(t, func(rt *rapid.T) {
		var v logView
		steps := rapid.IntRange(0, 12).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0, 1: // the host wrote records, maybe of a new epoch
				end := LogEnd{
					Offset: v.end.Offset + int64(rapid.IntRange(0, 3).Draw(rt, "records")),
					Epoch:  v.end.Epoch + Epoch(rapid.IntRange(0, 2).Draw(rt, "epochs")),
				}
				v = v.appended(end)
			case 2: // a truncation, at or above the log start
				v = v.truncated(v.start() + int64(rapid.IntRange(0, int(v.end.Offset-v.start())).Draw(rt, "at")))
			case 3: // a snapshot of the log, then maybe the log starts at it
				off := v.start() + int64(rapid.IntRange(0, int(v.end.Offset-v.start())).Draw(rt, "snapshot"))
				id := LogEnd{Offset: off, Epoch: v.end.Epoch}
				if off > 0 && off > v.start() {
					id.Epoch = v.epochAt(off - 1)
				}
				v = v.withSnapshot(id)
				if rapid.Bool().Draw(rt, "start") {
					v = v.startingAt(id)
				}
			case 4: // a downloaded snapshot
				if rapid.IntRange(0, 3).Draw(rt, "reset") == 0 {
					v = v.resetTo(LogEnd{Offset: v.end.Offset + 2, Epoch: v.end.Epoch + 1})
				}
			}
		}
		for epoch := Epoch(0); epoch <= v.end.Epoch+1; epoch++ {
			for offset := int64(0); offset <= v.end.Offset+1; offset++ {
				gotCheck, gotID := v.validateOffsetAndEpoch(offset, epoch)
				wantCheck, wantID := v.validateAt(offset, epoch)
				require.Equal(rt, wantCheck, gotCheck, "fetch at %d in epoch %d of %+v %+v", offset, epoch, v, v.h)
				require.Equal(rt, wantID, gotID, "fetch at %d in epoch %d of %+v %+v", offset, epoch, v, v.h)
				if epoch == v.end.Epoch && offset <= v.end.Offset && !v.hasSnapshots() {
					shortcuts++
				}
			}
		}
	})
	require.Positive(t, shortcuts)
}

// The leader's answer to a Fetch is written over its pool slot whole: a
// reused Buffer whose slots hold an earlier step's values (a diverging
// answer, a snapshot) gives the ack exactly its own answer.
func TestFetchAnswerOverwritesItsWholeSlot(t *testing.T) {
	c := bnSteady(t, 3)
	leader := c.state(1)
	var b Buffer
	stale := SendFetchResponse{To: 9, Error: ErrUnknownServerError, Epoch: 9, LeaderID: 9, HighWatermark: 99,
		Diverging: &LogOffsetMetadata{Offset: 5, Epoch: 5}, Snapshot: &LogEnd{Offset: 7, Epoch: 7}}
	b.arena.fetchResponse.items = []SendFetchResponse{stale, stale, stale, stale}[:0]
	acts := StepIn(&b, &leader, bnFetchAt(2, 1))
	got := ofType[SendFetchResponse](acts)
	require.Equal(t, []SendFetchResponse{{To: 2, Error: ErrNone, Epoch: 1, LeaderID: 1, HighWatermark: 1}}, got)
}
