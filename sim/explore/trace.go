package explore

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/sim"
)

// String describes the move for humans.
func (m Move) String() string {
	if m.Drops != 0 {
		var lost []string
		for i := 0; i < 16; i++ {
			if m.Drops&(1<<uint(i)) != 0 {
				lost = append(lost, fmt.Sprintf("#%d", i))
			}
		}
		d := m
		d.Drops = 0
		return fmt.Sprintf("lose message %s, then %v", strings.Join(lost, ", "), d)
	}
	switch m.Kind {
	case Deliver:
		return fmt.Sprintf("deliver message #%d from %d to %d", m.Msg, m.Node, m.Target)
	case Drop:
		return fmt.Sprintf("drop message #%d from %d", m.Msg, m.Node)
	case Duplicate:
		return fmt.Sprintf("duplicate message #%d from %d", m.Msg, m.Node)
	case Fire:
		return fmt.Sprintf("%v fires at %d", m.Deadline, m.Node)
	case Flush:
		return fmt.Sprintf("flush at %d", m.Node)
	case Crash:
		return fmt.Sprintf("crash %d (unflushed tail lost)", m.Node)
	case Restart:
		return fmt.Sprintf("restart %d", m.Node)
	case ResignLeader:
		return fmt.Sprintf("leader %d resigns", m.Node)
	case Append:
		return fmt.Sprintf("client append at leader %d", m.Node)
	case ReportDown:
		return fmt.Sprintf("%d's host reports its leader %d's process gone", m.Node, m.Target)
	case Damage:
		return fmt.Sprintf("restart %d on a log damaged from offset %d", m.Node, m.Msg)
	}
	return "move?"
}

// textRecorder writes every call of a transition as indented lines.
type textRecorder struct{ b *strings.Builder }

func (t textRecorder) start(id kraft.NodeID, _ kraft.Config, rec *kraft.QuorumRecord, ls kraft.LogState, acts []kraft.Action, st kraft.State) {
	r := "none"
	if rec != nil {
		r = fmt.Sprintf("%+v", *rec)
	}
	fmt.Fprintf(t.b, "    %d: NewState(record %s, log end %+v) -> %v\n", id, r, ls.End, st)
	t.actions(acts)
}

func (t textRecorder) step(id kraft.NodeID, e kraft.Event, acts []kraft.Action, st kraft.State) {
	fmt.Fprintf(t.b, "    %d: %T%+v -> %v\n", id, e, e, st)
	t.actions(acts)
}

func (t textRecorder) actions(acts []kraft.Action) {
	for _, a := range acts {
		if _, ok := a.(kraft.RoleChanged); ok {
			continue
		}
		fmt.Fprintf(t.b, "        %T%+v\n", a, a)
	}
}

// Describe re-executes path and returns it as text: each move with the
// message it takes, then every NewState and Step call it made, with the
// actions, and a summary of the final world.
func (m *Model) Describe(path []Move) (string, error) {
	var b strings.Builder
	rec := textRecorder{&b}
	fmt.Fprintf(&b, "initial world:\n")
	var prev *world
	g := m.engine(rec)
	w, v := g.initial()
	prev = w
	for i, mv := range path {
		if v != nil {
			return b.String(), fmt.Errorf("explore: violation before move %d", i)
		}
		if mv.Drops>>uint(len(prev.net)) != 0 {
			return b.String(), fmt.Errorf("explore: move %d drops no message", i)
		}
		if mv.Kind == Deliver || mv.Kind == Drop || mv.Kind == Duplicate {
			if mv.Msg < 0 || int(mv.Msg) >= len(prev.net) {
				return b.String(), fmt.Errorf("explore: move %d names no message", i)
			}
			msg := prev.net[mv.Msg]
			stale := ""
			if msg.stale() {
				stale = " (stale request)"
			}
			fmt.Fprintf(&b, "%d. %v: %T%+v%s\n", i+1, mv, msg.ev(), msg.ev(), stale)
		} else {
			fmt.Fprintf(&b, "%d. %v\n", i+1, mv)
		}
		for j := range prev.net {
			if mv.Drops&(1<<uint(j)) != 0 {
				fmt.Fprintf(&b, "    lost #%d: %T%+v\n", j, prev.net[j].ev(), prev.net[j].ev())
			}
		}
		w, v, _ = g.apply(prev, mv)
		prev = w
	}
	if v != nil {
		fmt.Fprintf(&b, "violation: %v\n", v)
	}
	fmt.Fprintf(&b, "final world:\n%s", describeWorld(prev))
	return b.String(), nil
}

func describeWorld(w *world) string {
	var b strings.Builder
	for i := range w.reps {
		r := &w.reps[i]
		st, armed := "down", ""
		if r.up {
			st = r.st.String()
			for _, d := range r.model().Deadlines() {
				armed += " " + d.String() + ";"
			}
		}
		fmt.Fprintf(&b, "    %d: %s; record %+v; log %v flushed %d; armed:%s\n", i, st, r.durable(), r.log, r.flushed, armed)
	}
	for _, m := range w.net {
		fmt.Fprintf(&b, "    in flight %d->%d: %T%+v correlation %d response=%v\n", m.from(), m.to(), m.ev(), m.ev(), m.m.Corr, m.m.Response)
	}
	return b.String()
}

// traceRecorder writes package sim's trace lines.
type traceRecorder struct {
	enc           *json.Encoder
	t             time.Duration
	err           error
	starts, steps int
}

func tagged(v interface{}) sim.Tagged {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("explore: cannot encode %T: %v", v, err))
	}
	return sim.Tagged{Type: reflect.TypeOf(v).Name(), Value: b}
}

func taggedActions(acts []kraft.Action) []sim.Tagged {
	out := make([]sim.Tagged, len(acts))
	for i, a := range acts {
		out[i] = tagged(a)
	}
	return out
}

func summary(s kraft.State) *sim.StateSummary {
	v, _ := s.VotedKey()
	return &sim.StateSummary{
		Role: s.Role().String(), Epoch: s.Epoch(), Leader: s.Leader(), Voted: v,
		HWM: s.HighWatermark(), LogEnd: s.LogEnd(), Describe: s.String(),
	}
}

func (t *traceRecorder) write(l sim.TraceLine) {
	switch l.Kind {
	case "start":
		t.starts++
	case "step":
		t.steps++
	}
	if t.err == nil {
		t.err = t.enc.Encode(l)
	}
}

func (t *traceRecorder) start(id kraft.NodeID, cfg kraft.Config, rec *kraft.QuorumRecord, ls kraft.LogState, acts []kraft.Action, st kraft.State) {
	c := cfg
	l := ls
	var r *kraft.QuorumRecord
	if rec != nil {
		cp := *rec
		r = &cp
	}
	t.write(sim.TraceLine{Kind: "start", T: t.t, Node: id, Config: &c, Record: r, Log: &l, Actions: taggedActions(acts), State: summary(st)})
}

func (t *traceRecorder) step(id kraft.NodeID, e kraft.Event, acts []kraft.Action, st kraft.State) {
	ev := tagged(e)
	t.write(sim.TraceLine{Kind: "step", T: t.t, Node: id, Event: &ev, Actions: taggedActions(acts), State: summary(st)})
}

// WriteTrace re-executes path and writes it to out as a trace in package
// sim's format (JSON lines: a header, then a "start" line for every
// NewState and a "step" line for every Step, with the full event and
// actions), which sim.Replay and kraftsim -replay play back; it ends with the
// end record that counts the start and step lines. The virtual
// time of a line is its move's index in milliseconds (the model has no
// clock). A trace of a planted bug (Options.Step or Start set) records
// what the planted functions returned, so it replays against kraft.Step
// only as far as they agree with it.
func (m *Model) WriteTrace(out io.Writer, path []Move) error {
	t := &traceRecorder{enc: json.NewEncoder(out)}
	b := m.opts.Bounds
	opts := sim.DefaultOptions()
	opts.Voters, opts.Observers, opts.Seed = b.Voters, b.Observers, 0
	t.write(sim.TraceLine{Kind: "header", Options: &opts})
	g := m.engine(t)
	w, _ := g.initial()
	for i, mv := range path {
		t.t = time.Duration(i+1) * time.Millisecond
		if (mv.Kind == Deliver || mv.Kind == Drop || mv.Kind == Duplicate) && (mv.Msg < 0 || int(mv.Msg) >= len(w.net)) || mv.Drops>>uint(len(w.net)) != 0 {
			return fmt.Errorf("explore: move %d names no message", i)
		}
		w, _, _ = g.apply(w, mv)
	}
	t.write(sim.TraceLine{Kind: "end", T: t.t, Starts: t.starts, Steps: t.steps})
	return t.err
}
