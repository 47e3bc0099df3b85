// Command kraftsim runs a simulated KRaft cluster on a virtual clock and
// shows what happens: elections, role changes, high-watermark progress and
// faults, with every safety invariant of package sim checked after every
// event.
//
// With no flags it runs the default story: 5 voters and 2 observers elect
// a leader, take a client workload, lose the leader to a crash, heal, see a
// partition that isolates the leader, heal, and end with a graceful
// resignation. It prints a timeline and a summary, and exits with status 1
// if an invariant or an expected outcome fails, 2 on bad flags or input.
//
//	kraftsim -scenario list
//	kraftsim -scenario leader-partitioned -seed 7 -trace run.jsonl -svg run.svg
//	kraftsim -scenario reconfig
//	kraftsim -replay run.jsonl
//	kraftsim -explore -voters 3 -max-epoch 1 -max-messages 2
//
// With -explore it runs package sim/explore instead: every reachable state
// of a small cluster within the bounds its flags set, checked.
//
// The output depends only on the flags, apart from the wall-clock figures
// of the summary (left out with -wall=false).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/kraftquorum/kraft/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK   = 0
	exitFail = 1 // an invariant, an expectation or a replay failed
	exitBad  = 2 // bad flags or input
)

// config is what the flags ask for.
type config struct {
	voters, observers int
	seed              int64
	duration          time.Duration
	rates             faultRates
	scenario          string
	trace, replay     string
	svg               string
	quiet, wall       bool
	failovers         int
	handovers         bool
	kills             bool
	kafkaFailover     bool
	snapshotEvery     int
	set               map[string]bool
}

const usageText = `Usage: kraftsim [flags]

kraftsim runs a simulated KRaft cluster (package sim, over kraft.Step) on a
virtual clock, checks every safety invariant after every event, and prints
a timeline and a summary. With no flags it runs the default story.

Exit status: 0 if every check passed, 1 if an invariant, an expected
outcome or a replay failed, 2 on bad flags or an unreadable trace.

Flags:
`

func usage(w *printer, fs *flag.FlagSet) {
	var defaults strings.Builder
	fs.SetOutput(&defaults)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	w.printf("%s%s", usageText, defaults.String())
	w.printf("\nScenarios (-scenario NAME):\n%s", listScenarios())
	w.printf("%s", `
Scenario reconfig runs a dynamic voter set (KIP-853): -voters counts the
controllers (default 3), r0 alone bootstraps the voter set, the others join
by AddRaftVoter, and a voter that lost its disk is replaced by its new
directory id. The summary shows the committed voter set over time.

Random faults (-crash-rate, -partition-rate, -slow-disk-rate, -loss, -dup)
are layered over any scenario until the end of -duration; a crashed replica
restarts after 1-5s, a partition heals after 1-5s and a slow disk phase
(flushes taking up to 3 T_e) ends after 1-5s. While they are on, an expectation
that fails (no leader within the liveness bound) abandons the scenario's
script instead of failing the run: liveness is owed only once the faults
stop. Every run ends by stopping all faults and requiring that every running
replica follows one leader within the bound.
`)
}

// badUsage prints a one-line complaint about the flags and returns the
// exit status for it.
func badUsage(stderr *printer, format string, args ...interface{}) int {
	stderr.printf("kraftsim: %s (kraftsim -h for help)\n", fmt.Sprintf(format, args...))
	return exitBad
}

// badInput prints a one-line complaint about an input or output file and
// returns the exit status for it.
func badInput(stderr *printer, format string, args ...interface{}) int {
	stderr.printf("kraftsim: %s\n", fmt.Sprintf(format, args...))
	return exitBad
}

// printer writes text and keeps the first write error, so that a failed
// write (a closed pipe, a full disk) fails the run once, at the end.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...interface{}) {
	if _, err := fmt.Fprintf(p.w, format, args...); err != nil && p.err == nil {
		p.err = err
	}
}

// run is the command: it parses args, runs, writes to stdout and stderr,
// and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	out, errOut := &printer{w: stdout}, &printer{w: stderr}
	code := command(args, out, errOut, isTerminal(stderr))
	if out.err != nil {
		errOut.printf("kraftsim: writing the output: %v\n", out.err)
		if code == exitOK {
			code = exitFail
		}
	}
	return code
}

// command is run with its output wrapped; terminal says whether stderr is
// a terminal (for the progress line).
func command(args []string, stdout, stderr *printer, terminal bool) int {
	fs := flag.NewFlagSet("kraftsim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := config{set: map[string]bool{}}
	fs.IntVar(&cfg.voters, "voters", 5, "number of voters (1-50)")
	fs.IntVar(&cfg.observers, "observers", 2, "number of observers (0-50)")
	fs.Int64Var(&cfg.seed, "seed", 1, "seed of every random choice of the run")
	fs.DurationVar(&cfg.duration, "duration", 0, "virtual duration (default: 1m for story and random, as long as the script takes for the others)")
	fs.Float64Var(&cfg.rates.crash, "crash-rate", 0, "random crashes per virtual second, across the cluster")
	fs.Float64Var(&cfg.rates.partition, "partition-rate", 0, "random partitions per virtual second")
	fs.Float64Var(&cfg.rates.slowDisk, "slow-disk-rate", 0, "random slow disk phases per virtual second (every flush takes up to 3 T_e for 1-5s)")
	fs.Float64Var(&cfg.rates.loss, "loss", 0, "probability that a message is lost (0-1)")
	fs.Float64Var(&cfg.rates.dup, "dup", 0, "probability that a message is duplicated (0-1)")
	fs.StringVar(&cfg.scenario, "scenario", "story", "run the scenario `NAME`; list to list them")
	fs.StringVar(&cfg.trace, "trace", "", "write the run's trace (JSON lines, package sim's format) to `FILE`")
	fs.StringVar(&cfg.replay, "replay", "", "replay the trace in `FILE` with sim.Replay and say whether it reproduces exactly")
	fs.StringVar(&cfg.svg, "svg", "", "draw each replica's role over virtual time as SVG to `FILE`")
	fs.BoolVar(&cfg.quiet, "q", false, "print only the summary, not the timeline")
	fs.IntVar(&cfg.failovers, "failovers", 0, "measure `N` leader crashes (seeds -seed to -seed+N-1): failover times and split votes")
	fs.BoolVar(&cfg.handovers, "handovers", false, "with -failovers: the leader resigns gracefully (kraft.Resign) instead of crashing")
	fs.BoolVar(&cfg.kills, "kills", false, "with -failovers: the leader's process dies on a live host, and its peers notice the closed connections (D101), instead of a silent crash")
	fs.BoolVar(&cfg.kafkaFailover, "kafka-failover", false, "run failovers with Kafka's exact rules (kraft.Config.KafkaFailover)")
	fs.BoolVar(&cfg.wall, "wall", true, "include wall-clock figures (wall time, events per second) in the summary")
	fs.IntVar(&cfg.snapshotEvery, "snapshot-every", sim.DefaultOptions().SnapshotEvery, "each replica snapshots every `N` committed records and cleans its log behind its 2 newest snapshots (0: no snapshots)")
	xcfg := exploreFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return exitOK
		}
		return badUsage(stderr, "%v", err)
	}
	if fs.NArg() > 0 {
		return badUsage(stderr, "unexpected argument %q", fs.Arg(0))
	}
	var set []string // in lexical order
	fs.Visit(func(f *flag.Flag) {
		cfg.set[f.Name] = true
		set = append(set, f.Name)
	})
	if cfg.scenario == "list" {
		stdout.printf("%s", listScenarios())
		return exitOK
	}
	if cfg.set["explore"] && xcfg.on {
		return exploreRun(cfg, xcfg, stdout, stderr)
	}
	if name := exploreOnly(cfg.set); name != "" {
		return badUsage(stderr, "-%s needs -explore", name)
	}
	if cfg.set["replay"] {
		for _, name := range set {
			if name != "replay" && name != "q" {
				return badUsage(stderr, "-replay cannot be combined with -%s", name)
			}
		}
		return replay(cfg.replay, stdout, stderr)
	}
	if cfg.set["failovers"] {
		return failovers(cfg, stdout, stderr)
	}
	sc, ok := findScenario(cfg.scenario)
	if !ok {
		stderr.printf("kraftsim: unknown scenario %q (kraftsim -scenario list lists them)\n", cfg.scenario)
		return exitBad
	}
	if sc.voters > 0 && !cfg.set["voters"] {
		cfg.voters = sc.voters
	}
	if msg := validate(cfg, sc); msg != "" {
		return badUsage(stderr, "%s", msg)
	}
	return simulate(cfg, sc, stdout, stderr, terminal)
}

func validate(cfg config, sc scenario) string {
	r := cfg.rates
	switch {
	case cfg.voters < 1 || cfg.voters > 50:
		return fmt.Sprintf("-voters %d: want 1 to 50", cfg.voters)
	case cfg.observers < 0 || cfg.observers > 50:
		return fmt.Sprintf("-observers %d: want 0 to 50", cfg.observers)
	case cfg.voters < sc.minVoters:
		return fmt.Sprintf("scenario %s needs at least %d voters, -voters is %d", sc.name, sc.minVoters, cfg.voters)
	case cfg.duration < 0 || cfg.duration > 24*time.Hour:
		return fmt.Sprintf("-duration %v: want 0 to 24h", cfg.duration)
	case r.crash < 0 || r.crash > 100 || r.partition < 0 || r.partition > 100 || r.slowDisk < 0 || r.slowDisk > 100:
		return "-crash-rate, -partition-rate and -slow-disk-rate: want 0 to 100 per second"
	case r.loss < 0 || r.loss > 1 || r.dup < 0 || r.dup > 1:
		return "-loss and -dup: want a probability from 0 to 1"
	case cfg.trace != "" && cfg.trace == cfg.svg:
		return "-trace and -svg name the same file"
	case cfg.snapshotEvery < 0 || cfg.snapshotEvery > 1000000:
		return fmt.Sprintf("-snapshot-every %d: want 0 (no snapshots) to 1000000", cfg.snapshotEvery)
	case sc.snapshots && cfg.snapshotEvery == 0:
		return fmt.Sprintf("scenario %s needs snapshots, -snapshot-every is 0", sc.name)
	}
	return ""
}

// result is what a run found.
type result struct {
	violation *sim.Violation
	expect    error // a failed expectation (no random faults)
	abandoned error // a failed expectation under random faults
	settle    error // the final liveness check
	wall      time.Duration
}

func (r result) ok() bool { return r.violation == nil && r.expect == nil && r.settle == nil }

// simulate runs a scenario.
func simulate(cfg config, sc scenario, stdout, stderr *printer, terminal bool) int {
	rates := cfg.rates
	if !rates.any() && !cfg.set["crash-rate"] && !cfg.set["partition-rate"] && !cfg.set["slow-disk-rate"] && !cfg.set["loss"] && !cfg.set["dup"] && sc.faults != nil {
		rates = *sc.faults
	}
	length := cfg.duration
	if length == 0 {
		length = sc.duration
	}
	opts := sim.DefaultOptions()
	opts.Voters, opts.Observers, opts.Seed = cfg.voters, cfg.observers, cfg.seed
	opts.Network.Loss, opts.Network.Duplicate = rates.loss, rates.dup
	opts.SnapshotEvery = cfg.snapshotEvery
	if opts.SnapshotEvery == 0 {
		opts.SnapshotEvery = -1
	}
	if sc.dynamic {
		opts.Dynamic, opts.BootstrapVoters = true, sc.bootstrap
	}

	out, code := openOutputs(cfg, stderr)
	if code != exitOK {
		return code
	}
	timeline := stdout
	if cfg.quiet {
		timeline = &printer{w: io.Discard}
	}
	printHeader(stdout, cfg, sc, opts, rates, length)
	timeline.printf("\n")

	start := time.Now()
	c, err := sim.New(opts, out.traceW)
	if err != nil {
		return badUsage(stderr, "%v", err)
	}
	tick := niceTick(length)
	obs := newObserver(c, timeline, tick)
	d := &driver{
		c: c, obs: obs, bound: time.Duration(sim.LivenessBound) * opts.ElectionTimeout,
		soft: rates.crash > 0 || rates.partition > 0 || rates.loss > 0 || rates.dup > 0, end: length, started: start,
	}
	if terminal {
		d.status = stderr
	}
	if rates.crash > 0 || rates.partition > 0 {
		c.Schedule(randomFaults(cfg.seed, cfg.voters+cfg.observers, length, rates, opts.FlushDelayMax)...)
	}

	res := drive(d, sc, length)
	res.wall = time.Since(start)
	d.clearProgress()
	obs.finish()

	code = exitOK
	if !res.ok() {
		code = exitFail
	}
	printSummary(stdout, cfg, sc, d, obs, res)
	if !out.close(c, obs, sc, cfg, stdout, stderr) {
		code = exitFail
	}
	return code
}

// outputs are the files a run writes besides stdout: the trace and the
// picture.
type outputs struct {
	traceFile *os.File
	traceBuf  *bufio.Writer
	traceW    io.Writer // nil: no trace
	svgFile   *os.File
}

// openOutputs creates the files -trace and -svg name; on an error the
// exit code is not exitOK.
func openOutputs(cfg config, stderr *printer) (outputs, int) {
	var out outputs
	if cfg.trace != "" {
		f, err := os.Create(cfg.trace)
		if err != nil {
			return out, badInput(stderr, "-trace: %v", err)
		}
		out.traceFile, out.traceBuf = f, bufio.NewWriterSize(f, 1<<20)
		out.traceW = out.traceBuf
	}
	if cfg.svg != "" {
		f, err := os.Create(cfg.svg)
		if err != nil {
			if out.traceFile != nil {
				_ = out.traceFile.Close() // nothing was written yet
			}
			return out, badInput(stderr, "-svg: %v", err)
		}
		out.svgFile = f
	}
	return out, exitOK
}

// close ends the trace and draws the picture; false if writing either
// failed.
func (out outputs) close(c *sim.Cluster, obs *observer, sc scenario, cfg config, stdout, stderr *printer) bool {
	ok := true
	if out.traceBuf != nil {
		c.EndTrace()
		err := out.traceBuf.Flush()
		if cerr := out.traceFile.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			stderr.printf("kraftsim: writing trace %s: %v\n", cfg.trace, err)
			ok = false
		} else {
			stdout.printf("trace written to %s (replay it with kraftsim -replay %s)\n", cfg.trace, cfg.trace)
		}
	}
	if out.svgFile != nil {
		_, err := io.WriteString(out.svgFile, renderSVG(obs, sc, cfg))
		if cerr := out.svgFile.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			stderr.printf("kraftsim: writing %s: %v\n", cfg.svg, err)
			ok = false
		} else {
			stdout.printf("picture written to %s\n", cfg.svg)
		}
	}
	return ok
}

// printHeader prints what the run simulates.
func printHeader(stdout *printer, cfg config, sc scenario, opts sim.Options, rates faultRates, length time.Duration) {
	stdout.printf("kraftsim: scenario %s, %d voters (%s), %d observers%s, seed %d\n", sc.name,
		cfg.voters, idRange(0, cfg.voters), cfg.observers, observerRange(cfg.voters, cfg.observers), cfg.seed)
	stdout.printf("  %s\n", sc.about)
	if sc.dynamic {
		stdout.printf("  the voters are controllers: the voter set lives in the log (kraft.version 1), bootstrapped with %s; the observers are brokers\n",
			idRange(0, sc.bootstrap))
	}
	stdout.printf("  virtual duration %s; T_e %v, T_f %v; %s\n", durationText(length), opts.ElectionTimeout, opts.FetchTimeout, describeNetwork(opts.Network))
	if opts.SnapshotEvery > 0 {
		stdout.printf("  snapshots every %d committed records on each replica, %d kept, the log cleaned behind them; FetchSnapshot chunks of %d bytes\n",
			opts.SnapshotEvery, opts.SnapshotsKept, opts.SnapshotChunkBytes)
	}
	if rates.crash > 0 || rates.partition > 0 {
		stdout.printf("  random faults: %s crashes/s, %s partitions/s\n", trimFloat(rates.crash), trimFloat(rates.partition))
	}
}

// drive runs the script, the rest of the duration, and the final settling.
func drive(d *driver, sc scenario, length time.Duration) result {
	var res result
	c := d.c
	err := sc.script(d, length)
	if err == nil {
		err = d.until(length)
	}
	var v sim.Violation
	if errors.As(err, &v) {
		res.violation = &v
		return res
	}
	if err != nil {
		if d.soft {
			res.abandoned = err
			d.obs.note("script abandoned: %v (random faults are on, liveness is owed only after they stop)", err)
			if err := d.until(length); err != nil {
				errors.As(err, &v)
				res.violation = &v
				return res
			}
		} else {
			res.expect = err
			d.obs.note("FAILED: %v", err)
			return res
		}
	}
	if d.soft || anyDown(c) {
		d.obs.note("stop every fault: heal, restart, reliable network")
		c.StopFaults()
	}
	d.obs.note("settle: every running replica must follow one leader")
	if err := d.converged(); err != nil {
		if errors.As(err, &v) {
			res.violation = &v
		} else {
			res.settle = err
			d.obs.note("FAILED: %v", err)
		}
	}
	return res
}

func anyDown(c *sim.Cluster) bool {
	for _, id := range c.IDs() {
		if !c.Up(id) {
			return true
		}
	}
	return false
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func idRange(from, n int) string {
	switch n {
	case 0:
		return "none"
	case 1:
		return fmt.Sprintf("r%d", from)
	}
	return fmt.Sprintf("r%d-r%d", from, from+n-1)
}

func observerRange(voters, observers int) string {
	if observers == 0 {
		return ""
	}
	return " (" + idRange(voters, observers) + ")"
}

func durationText(d time.Duration) string {
	if d == 0 {
		return "as long as the script takes"
	}
	return "at least " + d.String()
}

// niceTick picks the interval of the commit lines: about a twelfth of the
// run, rounded to 1, 2 or 5 times a power of ten.
func niceTick(length time.Duration) time.Duration {
	if length <= 0 {
		return 5 * time.Second
	}
	return niceStep(length / 12)
}

func niceStep(d time.Duration) time.Duration {
	step := time.Millisecond
	for {
		for _, m := range []time.Duration{1, 2, 5} {
			if step*m >= d {
				return step * m
			}
		}
		step *= 10
	}
}
