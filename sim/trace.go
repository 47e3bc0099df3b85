package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"

	"github.com/kraftquorum/kraft"
)

// Tagged is an event or action in a trace: its Go type name and its fields.
type Tagged struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// StateSummary is what a trace records of a state after each step.
type StateSummary struct {
	Role     string           `json:"role"`
	Epoch    kraft.Epoch      `json:"epoch"`
	Leader   kraft.NodeID     `json:"leader"`
	Voted    kraft.ReplicaKey `json:"voted"`
	HWM      int64            `json:"hwm"`
	LogEnd   kraft.LogEnd     `json:"log_end"`
	Describe string           `json:"describe"`
}

func summarize(s kraft.State) *StateSummary {
	v, _ := s.VotedKey()
	return &StateSummary{
		Role: s.Role().String(), Epoch: s.Epoch(), Leader: s.Leader(), Voted: v,
		HWM: s.HighWatermark(), LogEnd: s.LogEnd(), Describe: s.String(),
	}
}

// eventTypes and actionTypes are the types a trace decodes: the messages
// of kraft's catalogue (kraft.RPCs, docs/design.md D230) and the local
// events and actions listed here (TestTraceKnowsEveryType).
var eventTypes = typeMap(append(messageTypes(true),
	kraft.ElectionTimeout{}, kraft.FetchTimeout{}, kraft.CheckQuorumTimeout{}, kraft.BeginQuorumEpochTimeout{},
	kraft.LogAppended{}, kraft.LogFlushed{}, kraft.SnapshotCreated{}, kraft.LogStartMoved{}, kraft.Resign{},
	kraft.VotersAppended{}, kraft.VoterChangeTimeout{},
)...)

var actionTypes = typeMap(append(messageTypes(false),
	kraft.Persist{}, kraft.WriteSnapshotChunk{}, kraft.InstallSnapshot{}, kraft.TruncateLog{},
	kraft.AppendLeaderChange{}, kraft.AppendFetched{}, kraft.HighWatermarkChanged{}, kraft.ResetTimer{}, kraft.StopTimer{},
	kraft.RoleChanged{}, kraft.Fault{}, kraft.LeaderRefused{}, kraft.AppendVoters{},
)...)

// messageTypes is a zero value of each event (events true) or each action
// of kraft's catalogue of messages.
func messageTypes(events bool) []interface{} {
	var vs []interface{}
	for _, r := range kraft.RPCs() {
		if events {
			vs = append(vs, r.RequestEvent)
			for _, e := range r.ResponseEvents {
				vs = append(vs, e)
			}
		} else {
			vs = append(vs, r.Request, r.Response)
		}
	}
	return vs
}

func typeMap(vs ...interface{}) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for _, v := range vs {
		if v == nil {
			continue // a side of an RPC the core does not carry
		}
		t := reflect.TypeOf(v)
		m[t.Name()] = t
	}
	return m
}

func tag(v interface{}) Tagged {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sim: cannot encode %T: %v", v, err))
	}
	return Tagged{Type: reflect.TypeOf(v).Name(), Value: b}
}

func encodeEvent(e kraft.Event) *Tagged {
	t := tag(e)
	return &t
}

func encodeActions(acts []kraft.Action) []Tagged {
	out := make([]Tagged, len(acts))
	for i, a := range acts {
		out[i] = tag(a)
	}
	return out
}

func untag(t Tagged, types map[string]reflect.Type) (interface{}, error) {
	rt, ok := types[t.Type]
	if !ok {
		return nil, fmt.Errorf("sim: unknown type %q in trace", t.Type)
	}
	p := reflect.New(rt)
	if err := json.Unmarshal(t.Value, p.Interface()); err != nil {
		return nil, fmt.Errorf("sim: decoding %s: %w", t.Type, err)
	}
	return p.Elem().Interface(), nil
}

// DecodeEvent decodes a traced event.
func DecodeEvent(t Tagged) (kraft.Event, error) {
	v, err := untag(t, eventTypes)
	if err != nil {
		return nil, err
	}
	return v.(kraft.Event), nil
}

// DecodeAction decodes a traced action.
func DecodeAction(t Tagged) (kraft.Action, error) {
	v, err := untag(t, actionTypes)
	if err != nil {
		return nil, err
	}
	return v.(kraft.Action), nil
}

// ReplayStats says what a replay did.
type ReplayStats struct {
	Starts, Steps int
}

// Replay reads a trace written by a Cluster and steps every recorded event
// again on fresh states (kraft.NewState for "start" lines, kraft.Step for
// "step" lines), checking that each call returns the recorded actions and a
// state with the recorded summary. It needs no network, clock or seed: the
// trace holds every input each replica saw. It returns the first mismatch,
// and an error for a trace without its end record (Cluster.EndTrace) or
// whose end record counts other lines than the trace has.
func Replay(r io.Reader) (ReplayStats, error) {
	var st ReplayStats
	states := map[kraft.NodeID]kraft.State{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	line := 0
	ended := false
	for sc.Scan() {
		line++
		var l TraceLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return st, fmt.Errorf("sim: trace line %d: %w", line, err)
		}
		if ended {
			return st, fmt.Errorf("sim: trace line %d: a line after the end record", line)
		}
		var (
			next kraft.State
			acts []kraft.Action
		)
		switch l.Kind {
		case "start":
			if l.Config == nil || l.Log == nil {
				return st, fmt.Errorf("sim: trace line %d: start without config or log", line)
			}
			s, a, err := kraft.NewState(*l.Config, l.Record, *l.Log)
			if err != nil {
				return st, fmt.Errorf("sim: trace line %d: NewState: %w", line, err)
			}
			next, acts = s, a
			st.Starts++
		case "step":
			if l.Event == nil {
				return st, fmt.Errorf("sim: trace line %d: step without event", line)
			}
			e, err := DecodeEvent(*l.Event)
			if err != nil {
				return st, fmt.Errorf("sim: trace line %d: %w", line, err)
			}
			prev, ok := states[l.Node]
			if !ok {
				return st, fmt.Errorf("sim: trace line %d: step on replica %d before its start", line, l.Node)
			}
			next, acts = kraft.Step(prev, e)
			st.Steps++
		case "end":
			if l.Starts != st.Starts || l.Steps != st.Steps {
				return st, fmt.Errorf("sim: trace line %d: the end record counts %d starts and %d steps, the trace has %d and %d",
					line, l.Starts, l.Steps, st.Starts, st.Steps)
			}
			ended = true
			continue
		default:
			continue
		}
		got := encodeActions(acts)
		if len(got) != len(l.Actions) {
			return st, fmt.Errorf("sim: trace line %d (replica %d at %v): %d actions, trace has %d", line, l.Node, l.T, len(got), len(l.Actions))
		}
		for i := range got {
			if got[i].Type != l.Actions[i].Type || !bytes.Equal(got[i].Value, l.Actions[i].Value) {
				return st, fmt.Errorf("sim: trace line %d (replica %d at %v): action %d is %s %s, trace has %s %s",
					line, l.Node, l.T, i, got[i].Type, got[i].Value, l.Actions[i].Type, l.Actions[i].Value)
			}
		}
		if l.State == nil || *summarize(next) != *l.State {
			return st, fmt.Errorf("sim: trace line %d (replica %d at %v): state %+v, trace has %+v", line, l.Node, l.T, summarize(next), l.State)
		}
		states[l.Node] = next
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	if !ended {
		return st, fmt.Errorf("sim: the trace has no end record after line %d: it was cut short", line)
	}
	return st, nil
}
