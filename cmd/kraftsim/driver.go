package main

import (
	"fmt"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/sim"
)

// expectation is a scenario's expectation that did not hold: a leader or
// progress that did not come within the liveness bound, or a wrong result.
type expectation struct{ msg string }

func (e *expectation) Error() string { return e.msg }

// driver runs a scenario's script against the cluster. Each wait is
// bounded by sim.LivenessBound election timeouts and counts as a liveness
// check.
type driver struct {
	c     *sim.Cluster
	obs   *observer
	bound time.Duration
	// soft: random faults are on, so a failed expectation abandons the
	// script instead of failing the run.
	soft bool

	livenessRun, livenessPassed int

	// Progress reporting on a terminal for long runs.
	status    *printer // nil: none
	end       time.Duration
	started   time.Time
	lastShown time.Time
	shown     bool
	calls     int
}

// cond wraps a wait's condition with the progress report.
func (d *driver) cond(done func() bool) func() bool {
	if d.status == nil {
		return done
	}
	return func() bool {
		d.calls++
		if d.calls%2048 == 0 {
			d.showProgress()
		}
		return done != nil && done()
	}
}

func (d *driver) showProgress() {
	now := time.Now()
	if now.Sub(d.started) < 2*time.Second || now.Sub(d.lastShown) < 250*time.Millisecond {
		return
	}
	d.lastShown = now
	d.shown = true
	st := d.c.Stats()
	rate := float64(d.c.Checker().Checks) / now.Sub(d.started).Seconds()
	d.status.printf("\rkraftsim: virtual %s of %s, %d Step calls, %.0f events/s   ", fmtTime(d.c.Now()), fmtTime(d.end), st.Events, rate)
}

// clearProgress erases the progress line.
func (d *driver) clearProgress() {
	if d.shown {
		d.status.printf("\r\033[K")
	}
}

// run runs until virtual time t (at once if t is past). It fails only on
// a violated invariant.
func (d *driver) until(t time.Duration) error {
	if t <= d.c.Now() {
		return d.c.Err()
	}
	return d.c.RunUntil(t, d.cond(nil))
}

func (d *driver) runFor(dt time.Duration) error { return d.until(d.c.Now() + dt) }

// wait runs until done holds, for at most the liveness bound; what names
// what it waits for, in the failure message.
func (d *driver) wait(what string, done func() bool) error {
	d.livenessRun++
	start := d.c.Now()
	if err := d.c.RunUntil(start+d.bound, d.cond(done)); err != nil {
		return err
	}
	if !done() {
		return d.fail("no %s within %s (at %s)", what, fmtDur(d.bound), fmtTime(d.c.Now()))
	}
	d.livenessPassed++
	return nil
}

// fail reports a failed expectation.
func (d *driver) fail(format string, args ...interface{}) error {
	return &expectation{msg: fmt.Sprintf(format, args...)}
}

// leader waits for a leader that a majority follows.
func (d *driver) leader() (kraft.NodeID, error) {
	if err := d.wait("leader followed by a majority", func() bool { _, ok := d.c.Leader(); return ok }); err != nil {
		return kraft.NoNode, err
	}
	l, _ := d.c.Leader()
	return l, nil
}

// newLeader waits for a leader of an epoch after epoch, other than not
// (NoNode: any).
func (d *driver) newLeader(not kraft.NodeID, epoch kraft.Epoch) (kraft.NodeID, error) {
	what := fmt.Sprintf("new leader after epoch %d", epoch)
	if not != kraft.NoNode {
		what = fmt.Sprintf("new leader other than r%d after epoch %d", not, epoch)
	}
	err := d.wait(what, func() bool {
		l, ok := d.c.Leader()
		return ok && l != not && d.c.State(l).Epoch() > epoch
	})
	if err != nil {
		return kraft.NoNode, err
	}
	l, _ := d.c.Leader()
	return l, nil
}

// progress waits until every replica in ids has a high watermark at least
// n records past the committed log's length now. With no ids, it waits for
// every replica that is running when it checks (the scripts restart what
// they crash first; random faults may crash any replica meanwhile).
func (d *driver) progress(n int, ids ...kraft.NodeID) error {
	target := int64(d.c.CommittedLen() + n)
	what := fmt.Sprintf("high watermark %d on every running replica", target)
	if len(ids) > 0 {
		what = fmt.Sprintf("high watermark %d on %s", target, d.obs.names(ids))
	}
	return d.wait(what, func() bool {
		up := 0
		for _, id := range d.c.IDs() {
			if !d.c.Up(id) {
				continue
			}
			up++
			if len(ids) == 0 && d.c.State(id).HighWatermark() < target {
				return false
			}
		}
		for _, id := range ids {
			if !d.c.Up(id) || d.c.State(id).HighWatermark() < target {
				return false
			}
		}
		return up > 0
	})
}

// converged waits until a leader that a majority follows exists and every
// running replica follows it in its epoch, with the committed records.
func (d *driver) converged() error {
	return d.wait("leader that every running replica follows", func() bool {
		l, ok := d.c.Leader()
		if !ok {
			return false
		}
		ls := d.c.State(l)
		for _, id := range d.c.IDs() {
			if !d.c.Up(id) || id == l {
				continue
			}
			s := d.c.State(id)
			if s.Role() != kraft.Follower || s.Leader() != l || s.Epoch() != ls.Epoch() || s.HighWatermark() < int64(d.c.CommittedLen()) {
				return false
			}
		}
		return true
	})
}

func (d *driver) epoch(id kraft.NodeID) kraft.Epoch { return d.c.State(id).Epoch() }

func (d *driver) others(not ...kraft.NodeID) []kraft.NodeID {
	var out []kraft.NodeID
	for _, id := range d.c.IDs() {
		skip := false
		for _, n := range not {
			skip = skip || id == n
		}
		if !skip {
			out = append(out, id)
		}
	}
	return out
}

func (d *driver) upIDs() []kraft.NodeID {
	var out []kraft.NodeID
	for _, id := range d.c.IDs() {
		if d.c.Up(id) {
			out = append(out, id)
		}
	}
	return out
}
