package main

import (
	"fmt"
	"time"

	"github.com/kraftquorum/kraft/sim"
)

// failovers measures -failovers leader crashes, one per seed: each
// cluster settles with a leader that commits, the leader crashes, and the
// time until a new leader commits is recorded, with whether the first
// election after the crash split the vote (docs/design.md D59). With
// -handovers the leader resigns gracefully instead (EndQuorumEpoch to the
// voters, which rank the successors) and stays up; with -kills the
// leader's process dies on a host that stays up, and the others learn it
// a round trip later from their connections (sim.OpKill, D101).
func failovers(cfg config, stdout, stderr *printer) int {
	switch {
	case cfg.failovers < 1 || cfg.failovers > 100000:
		return badUsage(stderr, "-failovers %d: want 1 to 100000", cfg.failovers)
	case cfg.voters < 2 || cfg.voters > 50:
		return badUsage(stderr, "-failovers needs 2 to 50 voters, -voters is %d", cfg.voters)
	case cfg.observers < 0 || cfg.observers > 50:
		return badUsage(stderr, "-observers %d: want 0 to 50", cfg.observers)
	case cfg.kills && cfg.handovers:
		return badUsage(stderr, "-kills and -handovers: pick one")
	}
	var fs []sim.Failover
	start := time.Now()
	for i := 0; i < cfg.failovers; i++ {
		opts := sim.DefaultOptions()
		opts.Voters, opts.Observers, opts.Seed = cfg.voters, cfg.observers, cfg.seed+int64(i)
		opts.KafkaFailover = cfg.kafkaFailover
		opts.Network.Loss = cfg.rates.loss
		measure := sim.MeasureFailover
		switch {
		case cfg.handovers:
			measure = sim.MeasureHandover
		case cfg.kills:
			measure = sim.MeasureKill
		}
		f, err := measure(opts, 3*time.Second)
		if err != nil {
			stdout.printf("failover with seed %d FAILED: %v\n", opts.Seed, err)
			return exitFail
		}
		fs = append(fs, f)
	}
	st := sim.SummarizeFailovers(fs)
	rules := "kraft's (D59)"
	if cfg.kafkaFailover {
		rules = "Kafka's"
	}
	o := sim.DefaultOptions()
	what, path := "leader crashes", "crash"
	switch {
	case cfg.handovers:
		what, path = "graceful resignations", "resignation"
	case cfg.kills:
		what, path = "leader process kills (noticed by the peers)", "kill"
	}
	loss := ""
	if cfg.rates.loss > 0 {
		loss = fmt.Sprintf(", %g%% message loss", 100*cfg.rates.loss)
	}
	stdout.printf("%s %s, %d voters, %d observers, seeds %d-%d, %s failover rules (T_e %v, T_f %v%s)\n",
		thousands(st.N), what, cfg.voters, cfg.observers, cfg.seed, cfg.seed+int64(cfg.failovers)-1, rules, o.ElectionTimeout, o.FetchTimeout, loss)
	stdout.printf("  failover (%s to a new leader that commits): p50 %s, p99 %s, max %s\n", path, fmtDur(st.P50), fmtDur(st.P99), fmtDur(st.Max))
	stdout.printf("  split votes: %d (%.1f%%)\n", st.Splits, 100*float64(st.Splits)/float64(st.N))
	stdout.printf("  wall time %s\n", fmtDur(time.Since(start)))
	return exitOK
}
