package jepsen

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// The model Porcupine checks the history against: one register per key,
// independent of the others, absent until written (D143). Model.Partition
// splits the history by key: linearizability is local (Herlihy and Wing),
// so the history is linearizable if and only if each key's is.

// opKind is what a client asked.
type opKind string

const (
	opGet opKind = "get"
	opPut opKind = "put"
	opCAS opKind = "cas"
	opDel opKind = "delete"
)

// input is an operation as sent.
type input struct {
	Kind  opKind `json:"kind"`
	Key   string `json:"key"`
	Value string `json:"value,omitempty"` // put's value, cas's "to"
	From  string `json:"from,omitempty"`  // cas's "from"
}

// outcome classifies an answer (docs/kraftd.md, the key-value outcome
// rules; D124).
type outcome string

const (
	// outOK: 200. A get's Value (and Present) is the value read.
	outOK outcome = "ok"
	// outAbsent: a get's 404, no such key.
	outAbsent outcome = "absent"
	// outConflict: a cas's 409: the value was not "from"; Present and
	// Value are the current value (null: absent).
	outConflict outcome = "conflict"
	// outRefused: 421 or 429, the replica did not and will not apply it.
	outRefused outcome = "refused"
	// outUnknown: 503, 504, a closed connection or no answer: a write
	// may or may not take effect, at any time after it was sent. Its
	// return time is the end of the history (Porcupine's convention).
	outUnknown outcome = "unknown"
)

// output is an operation's answer.
type output struct {
	Outcome outcome `json:"outcome"`
	Value   string  `json:"value,omitempty"`
	Present bool    `json:"present,omitempty"`
	Code    int     `json:"code,omitempty"`
}

// register is one key's state: comparable, so Porcupine's default
// equality (==) applies.
type register struct {
	present bool
	value   string
}

// step is the sequential specification of one key.
func step(st register, in input, out output) (bool, register) {
	if out.Outcome == outRefused {
		return true, st // definite: not applied
	}
	switch in.Kind {
	case opGet:
		switch out.Outcome {
		case outOK:
			return st.present && st.value == out.Value, st
		case outAbsent:
			return !st.present, st
		}
		return false, st // an unknown read is left out of the history
	case opPut:
		return out.Outcome == outOK || out.Outcome == outUnknown, register{true, in.Value}
	case opDel:
		return out.Outcome == outOK || out.Outcome == outUnknown, register{}
	case opCAS:
		matches := st.present && st.value == in.From // absent is never "from"
		switch out.Outcome {
		case outOK:
			return matches, register{true, in.Value}
		case outConflict:
			return !matches && st.present == out.Present && (!st.present || st.value == out.Value), st
		case outUnknown:
			if matches {
				return true, register{true, in.Value}
			}
			return true, st
		}
	}
	return false, st
}

// kvModel is the Porcupine model of the whole store, partitioned by key.
var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(input).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return register{} },
	Step: func(state, in, out interface{}) (bool, interface{}) {
		return step(state.(register), in.(input), out.(output))
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		var s string
		switch i.Kind {
		case opGet:
			s = fmt.Sprintf("get(%s)", i.Key)
		case opPut:
			s = fmt.Sprintf("put(%s, %q)", i.Key, i.Value)
		case opDel:
			s = fmt.Sprintf("delete(%s)", i.Key)
		case opCAS:
			s = fmt.Sprintf("cas(%s, %q -> %q)", i.Key, i.From, i.Value)
		}
		switch o.Outcome {
		case outOK:
			if i.Kind == opGet {
				return fmt.Sprintf("%s -> %q", s, o.Value)
			}
			return s + " -> ok"
		case outConflict:
			if !o.Present {
				return s + " -> 409, absent"
			}
			return fmt.Sprintf("%s -> 409, %q", s, o.Value)
		case outAbsent:
			return s + " -> 404"
		case outRefused:
			return s + " -> 421"
		}
		return fmt.Sprintf("%s -> unknown (%d)", s, o.Code)
	},
	DescribeState: func(state interface{}) string {
		r := state.(register)
		if !r.present {
			return "absent"
		}
		return fmt.Sprintf("%q", r.value)
	},
}
