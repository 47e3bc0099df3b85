package replica

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// BenchmarkInvariantChecks measures the production checks of D200 on a
// follower of three voters: the State's (every step) and the layer's
// (sampled), against a Tick with nothing due, the cheapest input.
func BenchmarkInvariantChecks(b *testing.B) {
	r, err := New(Config{
		Kraft: kraft.Config{Local: kraft.ReplicaKey{ID: 2}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}},
			ElectionTimeout: time.Second, FetchTimeout: 10 * time.Second},
		Log: storage.NewMemLog(), Records: &memRecords{}, Static: true,
	}, 0)
	if err != nil {
		b.Fatal(err)
	}
	r.Receive(time.Millisecond, Message{From: 1, To: 2, Corr: 7, Event: kraft.ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: 2}})
	r.Take()
	b.Run("state", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := checkState(r.st); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replica", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := r.checkInvariants(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tick", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r.Tick(2 * time.Millisecond)
		}
	})
}
