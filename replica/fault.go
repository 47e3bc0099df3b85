package replica

import (
	"errors"
	"fmt"

	"github.com/kraftquorum/kraft"
)

// Fault is an invariant found broken while the replica ran: the replica
// stops with it (Stopped, Err) as it does on a storage error, and a node
// stops with it wrapped (docs/design.md D200). Layer is "state" for a
// kraft.State invariant (kraft.State.CheckInvariants, Rule one of
// kraft.InvariantError's names) or "replica" for one of this layer's
// (checkInvariants: "inflight-corr", "inflight-one-per-kind",
// "parked-at-leader", "last-fetch-corr", "queue-drained", "read-...").
// State is the kraft.State at the time, formatted.
type Fault struct {
	Layer  string
	Rule   string
	Detail string
	State  string
}

func (f *Fault) Error() string {
	return fmt.Sprintf("replica: invariant %s/%s broken: %s (state %s)", f.Layer, f.Rule, f.Detail, f.State)
}

// ruleError is one of this layer's invariants broken (checkInvariants).
type ruleError struct{ rule, detail string }

func (e *ruleError) Error() string { return e.rule + ": " + e.detail }

// broken is the ruleError of rule with the formatted detail.
func broken(rule, format string, args ...interface{}) error {
	return &ruleError{rule: rule, detail: fmt.Sprintf(format, args...)}
}

// checkState is the production check of a State after each step
// (kraft.State.CheckInvariants); a variable so that a test breaks it.
var checkState = kraft.State.CheckInvariants

// replicaCheckEvery is how many inputs pass between two checks of this
// layer's invariants in production (checkInvariants is linear in the
// requests in flight and the reads pending); a change of role or epoch is
// checked at once (D200).
const replicaCheckEvery = 16

// faultOf is the Fault of err, a broken invariant of layer, at st.
func faultOf(layer string, err error, st kraft.State) *Fault {
	f := &Fault{Layer: layer, Rule: "unnamed", Detail: err.Error(), State: fmt.Sprint(st)}
	var ie *kraft.InvariantError
	var re *ruleError
	switch {
	case errors.As(err, &ie):
		f.Rule, f.Detail = ie.Rule, ie.Detail
	case errors.As(err, &re):
		f.Rule, f.Detail = re.rule, re.detail
	}
	return f
}

// checkStepped checks the State a step returned (every step: the check
// is constant in the log and linear in the voters); false: it is broken
// and the replica stopped.
func (r *Replica) checkStepped(next kraft.State) bool {
	if err := checkState(next); err != nil {
		r.fail(faultOf("state", err, next))
		return false
	}
	return true
}

// checkSettled checks this layer's invariants after an input, every
// replicaCheckEvery inputs and whenever the role or epoch changed since
// the last check.
func (r *Replica) checkSettled() {
	if r.err != nil {
		return
	}
	r.inputs++
	if r.inputs%replicaCheckEvery != 0 && r.st.Role() == r.checkedRole && r.st.Epoch() == r.checkedEpoch {
		return
	}
	r.checkedRole, r.checkedEpoch = r.st.Role(), r.st.Epoch()
	if err := r.checkInvariants(); err != nil {
		r.fail(faultOf("replica", err, r.st))
	}
}
