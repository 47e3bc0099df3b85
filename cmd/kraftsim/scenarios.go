package main

import (
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/sim"
)

// scenario is a named script. The script drives the cluster through the
// driver; after it, the run goes on (client workload, random faults) until
// the virtual duration, then settles: every fault stops and every running
// replica must follow one leader within the liveness bound.
type scenario struct {
	name      string
	about     string
	minVoters int
	// duration is the default virtual duration; 0 means as long as the
	// script takes.
	duration time.Duration
	// faults: with no fault flags, the scenario's own random fault rates.
	faults *faultRates
	// snapshots: the script needs snapshots (-snapshot-every above 0).
	snapshots bool
	// dynamic: the voter set lives in the log (sim.Options.Dynamic), with
	// bootstrap controllers in the bootstrap set; voters is the default
	// -voters (the controllers).
	dynamic   bool
	bootstrap int
	voters    int
	script    func(d *driver, length time.Duration) error
}

// faultRates are the random faults layered over a scenario.
type faultRates struct {
	crash, partition, slowDisk float64 // per virtual second, across the cluster
	loss, dup                  float64 // per message
}

func (f faultRates) any() bool {
	return f.crash > 0 || f.partition > 0 || f.slowDisk > 0 || f.loss > 0 || f.dup > 0
}

// scenarios lists the named scenarios: the default story, Kafka's
// RaftEventSimulationTest scenarios (as the property tests in the root
// package run them, one seed at a time) and a random-fault run.
var scenarios = []scenario{
	{
		name: "story", minVoters: 3, duration: time.Minute, script: story,
		about: "the default: elect, take a client workload, lose the leader to a crash, heal, partition the leader away, heal, resign gracefully",
	},
	{
		name: "elect-initial-leader", minVoters: 1, script: electInitialLeader,
		about: "Kafka's canElectInitialLeader: elect a leader and commit",
	},
	{
		name: "leader-crash", minVoters: 3, script: func(d *driver, _ time.Duration) error { return leaderFails(d, false) },
		about: "Kafka's canElectNewLeaderAfterOldLeaderFailure: the leader crashes; a new one is elected; the old one restarts and catches up",
	},
	{
		name: "leader-resign", minVoters: 3, script: func(d *driver, _ time.Duration) error { return leaderFails(d, true) },
		about: "the same with a graceful failure: the leader resigns, then shuts down",
	},
	{
		name: "all-replicas-killed", minVoters: 1, script: allKilled,
		about: "Kafka's canRecoverAfterAllNodesKilled: every replica crashes, stays down 3s and restarts",
	},
	{
		name: "leader-partitioned", minVoters: 3, script: leaderPartitioned,
		about: "Kafka's canElectNewLeaderAfterOldLeaderPartitionedAway: the leader is cut off; the rest elect a new one and commit; heal",
	},
	{
		name: "majority-reachable", minVoters: 3, script: majorityReachable,
		about: "Kafka's canMakeProgressIfMajorityIsReachable: the voters split 2/3 (with 5), the majority side commits, the minority does not; heal",
	},
	{
		name: "back-to-back-failures", minVoters: 3, script: backToBack,
		about: "the leader crashes, then its successor crashes as soon as it is elected; a third leader commits",
	},
	{
		name: "committed-data-loss", minVoters: 3, script: dataLoss,
		about: "Kafka's canRecoverFromSingleNodeCommittedDataLoss: a voter loses its disk and gets the committed records back",
	},
	{
		name: "snapshot", minVoters: 3, snapshots: true, script: snapshotCatchUp,
		about: "a voter is down while the others snapshot and clean their logs past its end; it restarts and catches up through FetchSnapshot; then a replica loses its disk and gets the latest snapshot",
	},
	{
		name: "reconfig", minVoters: 3, dynamic: true, bootstrap: 1, voters: 3, script: reconfig,
		about: "KIP-853: the voter set lives in the log; r0 bootstraps it alone, r1 and r2 join by AddRaftVoter; a voter loses its disk, comes back with a new directory id, and is replaced: RemoveRaftVoter of its old key, AddRaftVoter of its new one",
	},
	{
		name: "random", minVoters: 1, duration: time.Minute, script: func(*driver, time.Duration) error { return nil },
		faults: &faultRates{crash: 0.1, partition: 0.05, slowDisk: 0.05, loss: 0.05, dup: 0.05},
		about:  "random faults only (default rates: 0.1 crashes/s, 0.05 partitions/s, 0.05 slow disks/s, 5% loss, 5% duplication), then heal",
	},
}

func findScenario(name string) (scenario, bool) {
	for _, s := range scenarios {
		if s.name == name {
			return s, true
		}
	}
	return scenario{}, false
}

// story is the default run. Its steps happen at fixed fractions of the
// virtual duration, or as soon as the previous step is done if that is
// later: with the default minute, the leader crashes at 10s and comes back
// at 15s, is partitioned away at 25s and healed at 35s, and resigns at 45s.
func story(d *driver, length time.Duration) error {
	at := func(twelfths int) error { return d.until(length * time.Duration(twelfths) / 12) }
	o := d.c.Options()
	d.obs.note("%d voters and %d observers start; elect a leader", o.Voters, o.Observers)
	if _, err := d.leader(); err != nil {
		return err
	}
	d.obs.note("client workload: 1-3 records every ~100ms at the leader")
	if err := d.progress(10); err != nil {
		return err
	}
	if err := at(2); err != nil {
		return err
	}
	l, err := d.leader()
	if err != nil {
		return err
	}
	d.obs.note("the leader crashes")
	ep := d.epoch(l)
	d.c.Crash(l)
	if _, err := d.newLeader(l, ep); err != nil {
		return err
	}
	if err := at(3); err != nil {
		return err
	}
	d.obs.note("heal: the old leader restarts")
	d.c.Restart(l)
	if err := d.progress(10); err != nil {
		return err
	}
	if err := at(5); err != nil {
		return err
	}
	if l, err = d.leader(); err != nil {
		return err
	}
	d.obs.note("a partition isolates the leader")
	ep = d.epoch(l)
	d.c.Partition(l)
	if _, err := d.newLeader(l, ep); err != nil {
		return err
	}
	if err := d.progress(10, d.others(l)...); err != nil {
		return err
	}
	if err := at(7); err != nil {
		return err
	}
	d.obs.note("heal the partition")
	d.c.Heal()
	if err := d.converged(); err != nil {
		return err
	}
	if err := at(9); err != nil {
		return err
	}
	if l, err = d.leader(); err != nil {
		return err
	}
	d.obs.note("the leader resigns gracefully")
	ep = d.epoch(l)
	d.c.Resign(l)
	if _, err := d.newLeader(kraft.NoNode, ep); err != nil {
		return err
	}
	return d.progress(10)
}

func electInitialLeader(d *driver, _ time.Duration) error {
	d.obs.note("elect an initial leader")
	if _, err := d.leader(); err != nil {
		return err
	}
	d.obs.note("commit 10 records on every replica")
	return d.progress(10)
}

func leaderFails(d *driver, graceful bool) error {
	old, err := d.leader()
	if err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	ep := d.epoch(old)
	if graceful {
		d.obs.note("the leader resigns gracefully, then shuts down")
		d.c.Resign(old)
		if err := d.runFor(50 * time.Millisecond); err != nil {
			return err
		}
	} else {
		d.obs.note("the leader crashes")
	}
	d.c.Crash(old)
	if _, err := d.newLeader(old, ep); err != nil {
		return err
	}
	d.obs.note("the old leader restarts and catches up")
	d.c.Restart(old)
	return d.progress(10)
}

func allKilled(d *driver, _ time.Duration) error {
	if _, err := d.leader(); err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	d.obs.note("every replica crashes")
	for _, id := range d.c.IDs() {
		d.c.Crash(id)
	}
	if err := d.runFor(3 * time.Second); err != nil {
		return err
	}
	d.obs.note("every replica restarts")
	for _, id := range d.c.IDs() {
		d.c.Restart(id)
	}
	if _, err := d.leader(); err != nil {
		return err
	}
	return d.progress(10)
}

func leaderPartitioned(d *driver, _ time.Duration) error {
	old, err := d.leader()
	if err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	d.obs.note("the leader is partitioned away")
	ep := d.epoch(old)
	d.c.Partition(old)
	if _, err := d.newLeader(old, ep); err != nil {
		return err
	}
	if err := d.progress(10, d.others(old)...); err != nil {
		return err
	}
	d.obs.note("heal")
	d.c.Heal()
	return d.progress(10)
}

func majorityReachable(d *driver, _ time.Duration) error {
	if _, err := d.leader(); err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	voters := d.c.VoterIDs()
	minority := voters[:(len(voters)-1)/2]
	majority := voters[(len(voters)-1)/2:]
	d.obs.note("split the voters: {%s} | {%s}", d.obs.names(minority), d.obs.names(majority))
	d.c.Partition(minority...)
	target := int64(d.c.CommittedLen() + 20)
	if err := d.progress(20, majority...); err != nil {
		return err
	}
	for _, id := range minority {
		if h := d.c.State(id).HighWatermark(); h >= target {
			return d.fail("minority replica r%d reached the majority's high watermark %d while cut off", id, target)
		}
	}
	d.obs.note("the majority side committed 20 records, the minority none of them; heal")
	d.c.Heal()
	return d.progress(10)
}

func backToBack(d *driver, _ time.Duration) error {
	first, err := d.leader()
	if err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	d.obs.note("the leader crashes")
	d.c.Crash(first)
	second, err := d.newLeader(first, d.epoch(first))
	if err != nil {
		return err
	}
	if len(d.c.VoterIDs()) < 5 {
		d.obs.note("the first leader restarts (a majority must stay up); the new leader crashes at once")
		d.c.Restart(first)
	} else {
		d.obs.note("the new leader crashes at once")
	}
	d.c.Crash(second)
	third, err := d.newLeader(second, d.epoch(second))
	if err != nil {
		return err
	}
	if len(d.c.VoterIDs()) >= 5 && third == first {
		return d.fail("crashed replica r%d leads", third)
	}
	if err := d.progress(10, d.upIDs()...); err != nil {
		return err
	}
	d.obs.note("both crashed leaders restart")
	d.c.Restart(first)
	d.c.Restart(second)
	return d.progress(10)
}

func dataLoss(d *driver, _ time.Duration) error {
	if _, err := d.leader(); err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	voters := d.c.VoterIDs()
	victim := voters[rand.New(rand.NewSource(d.c.Options().Seed)).Intn(len(voters))]
	d.obs.note("r%d loses its disk", victim)
	d.c.LoseDisk(victim)
	committed := d.c.Checker().Committed()
	if _, err := d.leader(); err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	log, _ := d.c.Log(victim)
	if len(log) < len(committed) {
		return d.fail("r%d has %d records after recovery, %d are committed", victim, len(log), len(committed))
	}
	for i := range committed {
		if log[i] != committed[i] {
			return d.fail("r%d's record %d is %+v, committed %+v", victim, i, log[i], committed[i])
		}
	}
	d.obs.note("r%d holds the %d committed records again", victim, len(committed))
	return nil
}

// snapshotCatchUp: a voter that is not the leader crashes; the others go
// on until every one of them has cleaned its log past the crashed voter's
// end; the voter restarts, the leader answers its Fetch with its latest
// snapshot (Kafka's validateOffsetAndEpoch: SNAPSHOT), and it downloads and
// installs it, then fetches the rest. Then a replica (an observer if there
// is one) loses its disk: it fetches from offset 0 and gets the latest
// snapshot too. Each must end up holding the committed log.
func snapshotCatchUp(d *driver, _ time.Duration) error {
	l, err := d.leader()
	if err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	f := d.others(l)[0]
	d.obs.note("%s crashes; the others snapshot every %d committed records and clean their logs behind them", d.obs.name(f), d.c.Options().SnapshotEvery)
	d.c.Crash(f)
	_, end := d.c.Log(f)
	if err := d.wait(fmt.Sprintf("log cleaned past r%d's end %d on every running replica", f, end), func() bool {
		for _, id := range d.upIDs() {
			if start, _, _ := d.c.LogStart(id); start <= int64(end) {
				return false
			}
		}
		return true
	}); err != nil {
		return err
	}
	l, err = d.leader()
	if err != nil {
		return err
	}
	start, _, _ := d.c.LogStart(l)
	d.obs.note("%s restarts: its log ends at %d, before the leader's log start %d", d.obs.name(f), end, start)
	d.c.Restart(f)
	if err := d.installs(f); err != nil {
		return err
	}
	victim := d.others(l, f)[0]
	if ids := d.c.IDs(); len(ids) > len(d.c.VoterIDs()) {
		victim = ids[len(ids)-1]
	}
	d.obs.note("%s loses its disk and restarts empty", d.obs.name(victim))
	d.c.LoseDisk(victim)
	return d.installs(victim)
}

// installs waits until replica id installs a snapshot, then until it
// holds the committed log.
func (d *driver) installs(id kraft.NodeID) error {
	_, _, before := d.c.LogStart(id)
	if err := d.wait(fmt.Sprintf("snapshot installed on r%d", id), func() bool {
		_, _, n := d.c.LogStart(id)
		return n > before
	}); err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	committed := d.c.Checker().Committed()
	log, _ := d.c.Log(id)
	h := int(d.c.State(id).HighWatermark())
	if h > len(committed) || len(log) < h {
		return d.fail("r%d's high watermark %d is past its %d records or the committed log", id, h, len(log))
	}
	for i := 0; i < h; i++ {
		if log[i] != committed[i] {
			return d.fail("r%d's record %d is %+v, committed %+v", id, i, log[i], committed[i])
		}
	}
	start, _, _ := d.c.LogStart(id)
	d.obs.note("%s holds the %d committed records up to its high watermark: %d in its snapshot, %d in its log", d.obs.name(id), h, start, int64(h)-start)
	return nil
}

// randomFaults draws crashes (each restarted after 1-5s), partitions (each
// healed after 1-5s) and slow disk phases (flushes taking up to 3 T_e, each
// phase 1-5s) as Poisson processes over [0, window), from their own
// generator seeded by seed.
func randomFaults(seed int64, replicas int, window time.Duration, f faultRates, base time.Duration) []sim.Op {
	r := rand.New(rand.NewSource(seed ^ 0x6b72616674))
	var ops []sim.Op
	pause := func() time.Duration { return time.Second + time.Duration(r.Int63n(int64(4*time.Second))) }
	arrivals := func(rate float64, each func(at time.Duration)) {
		if rate <= 0 {
			return
		}
		t := time.Duration(0)
		for {
			t += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
			if t >= window {
				return
			}
			each(t.Round(time.Millisecond))
		}
	}
	arrivals(f.crash, func(at time.Duration) {
		id := kraft.NodeID(r.Intn(replicas))
		ops = append(ops, sim.Op{At: at, Kind: sim.OpCrash, Node: id}, sim.Op{At: at + pause(), Kind: sim.OpRestart, Node: id})
	})
	arrivals(f.partition, func(at time.Duration) {
		if replicas < 2 {
			return
		}
		var g []kraft.NodeID
		for len(g) == 0 || len(g) == replicas {
			g = g[:0]
			for i := 0; i < replicas; i++ {
				if r.Intn(3) == 0 {
					g = append(g, kraft.NodeID(i))
				}
			}
		}
		ops = append(ops, sim.Op{At: at, Kind: sim.OpPartition, Group: g}, sim.Op{At: at + pause(), Kind: sim.OpHeal})
	})
	arrivals(f.slowDisk, func(at time.Duration) {
		d := sim.SlowFlushDelays[1+r.Intn(len(sim.SlowFlushDelays)-1)]
		ops = append(ops, sim.Op{At: at, Kind: sim.OpDisk, FlushDelay: d}, sim.Op{At: at + pause(), Kind: sim.OpDisk, FlushDelay: base})
	})
	return ops
}

func listScenarios() string {
	s := ""
	for _, sc := range scenarios {
		s += fmt.Sprintf("  %-22s %s\n", sc.name, sc.about)
	}
	return s
}

// reconfig grows a quorum bootstrapped with r0 alone to r0-r2, one
// AddRaftVoter at a time (each answered once its VotersRecord commits),
// then replaces a voter that lost its disk: it comes back empty with a new
// directory id, an observer; the operator removes its old key and adds its
// new one. The committed voter set must end as r0-r2, the replaced one with
// its new key.
func reconfig(d *driver, _ time.Duration) error {
	c := d.c
	o := c.Options()
	spares := "none"
	if o.Voters > o.BootstrapVoters {
		spares = idRange(o.BootstrapVoters, o.Voters-o.BootstrapVoters)
	}
	d.obs.note("the voter set lives in the log: %s bootstraps it; spare controllers %s are observers until added", idRange(0, o.BootstrapVoters), spares)
	if _, err := d.leader(); err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	for _, id := range []kraft.NodeID{1, 2} {
		if err := d.voterChange(kraft.AddVoter, id); err != nil {
			return err
		}
	}
	if err := d.progress(10); err != nil {
		return err
	}
	l, err := d.leader()
	if err != nil {
		return err
	}
	victim := kraft.NodeID(2)
	if l == victim {
		victim = 1
	}
	old := c.Key(victim)
	d.obs.note("%s loses its disk: it comes back empty with a new directory id, an observer", d.obs.name(victim))
	c.LoseDisk(victim)
	d.obs.note("%s's key is now %s; the voter set still holds %s", d.obs.name(victim), keyName(c.Key(victim)), keyName(old))
	if c.State(victim).IsVoter() {
		return d.fail("%s is a voter right after losing its disk", d.obs.name(victim))
	}
	if err := d.voterChange(kraft.RemoveVoter, victim); err != nil {
		return err
	}
	if err := d.voterChange(kraft.AddVoter, victim); err != nil {
		return err
	}
	if err := d.progress(10); err != nil {
		return err
	}
	got := c.Voters()
	want := []kraft.ReplicaKey{c.Key(0), c.Key(1), c.Key(2)}
	if len(got) != len(want) {
		return d.fail("committed voter set %s, want %s", keysName(got), keysName(want))
	}
	for _, k := range want {
		found := false
		for _, g := range got {
			found = found || g == k
		}
		if !found {
			return d.fail("committed voter set %s, want %s", keysName(got), keysName(want))
		}
	}
	d.obs.note("the committed voter set is %s", keysName(got))
	return nil
}

// voterChange asks the leader to add or remove replica id (an operator's
// AddRaftVoter or RemoveRaftVoter) and waits for the answer, which must
// be NONE (the VotersRecord committed). An added replica must first follow
// the leader, as an operator adds a controller that runs and has caught
// up.
func (d *driver) voterChange(kind kraft.VoterChangeKind, id kraft.NodeID) error {
	c := d.c
	l, err := d.leader()
	if err != nil {
		return err
	}
	if kind == kraft.AddVoter {
		if err := d.wait(fmt.Sprintf("%s following the leader", d.obs.name(id)), func() bool {
			l, ok := c.Leader()
			s := c.State(id)
			return ok && c.Up(id) && s.Role() == kraft.Follower && s.Leader() == l
		}); err != nil {
			return err
		}
		if l, err = d.leader(); err != nil {
			return err
		}
	}
	n := len(c.VoterChanges())
	if kind == kraft.AddVoter {
		c.AddVoter(id)
	} else {
		c.RemoveVoter(id)
	}
	if err := d.wait(fmt.Sprintf("answer to %s of %s", kind, d.obs.name(id)), func() bool {
		vc := c.VoterChanges()
		return len(vc) > n && vc[n].Answered
	}); err != nil {
		return err
	}
	v := c.VoterChanges()[n]
	if v.Error != kraft.ErrNone {
		return d.fail("%s of %s at leader r%d answered %v", kind, keyName(v.Voter), l, v.Error)
	}
	return nil
}

// keyName names a voter key: the replica and its directory id's first 8
// hex digits (the simulator's ids end in the disk generation).
func keyName(k kraft.ReplicaKey) string {
	return fmt.Sprintf("r%d/%s", k.ID, k.DirectoryID.String()[:8])
}

// keysName names a voter set.
func keysName(ks []kraft.ReplicaKey) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = keyName(k)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
