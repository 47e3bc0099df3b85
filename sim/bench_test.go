package sim_test

import (
	"testing"
	"time"

	"github.com/kraftquorum/kraft/sim"
)

// Benchmarks through the simulator: what a whole cluster costs, host
// included (queues, virtual clock, invariant checker after every event).

// BenchmarkSimElection builds a fresh cluster and runs it until a leader is
// elected (pre-vote, vote, BeginQuorumEpoch) and its first fetch round is
// acknowledged: the LeaderChange record is committed on every voter.
func BenchmarkSimElection(b *testing.B) {
	for _, voters := range []int{3, 5} {
		voters := voters
		b.Run(map[int]string{3: "voters=3", 5: "voters=5"}[voters], func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				opts := sim.DefaultOptions()
				opts.Voters, opts.Seed, opts.ClientInterval = voters, int64(i%8), -1
				c, err := sim.New(opts, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.WaitForHighWatermark(1, time.Minute, c.VoterIDs()...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSimThroughput runs a 5-voter, 2-observer cluster with a client
// workload and a lossy network for 10 s of virtual time per iteration, and
// reports simulated events (Step calls, each checked) per second of wall
// time.
func BenchmarkSimThroughput(b *testing.B) {
	b.ReportAllocs()
	events := 0
	start := time.Now()
	for i := 0; i < b.N; i++ {
		opts := sim.DefaultOptions()
		opts.Voters, opts.Observers, opts.Seed = 5, 2, int64(i)
		opts.Network.Loss, opts.Network.Duplicate = 0.01, 0.01
		c, err := sim.New(opts, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.RunFor(10 * time.Second); err != nil {
			b.Fatal(err)
		}
		events += c.Stats().Events
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}
