package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/kraftquorum/kraft/sim"
)

// replay checks that the trace in path reproduces exactly with sim.Replay:
// every NewState and Step call it records, made again on fresh states,
// returns the recorded actions and state. A file that cannot be read or is
// not a well-formed trace is bad input (exit 2); a well-formed trace that
// does not reproduce is a failure (exit 1).
func replay(path string, stdout, stderr *printer) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return badInput(stderr, "-replay: %v", err)
	}
	hdr, err := checkTrace(data)
	if err != nil {
		return badInput(stderr, "-replay %s: not a trace written by kraftsim -trace or package sim: %v", path, err)
	}
	st, err := sim.Replay(bytes.NewReader(data))
	if err != nil {
		stdout.printf("replay: %s does NOT reproduce: %v\n", path, err)
		return exitFail
	}
	o := hdr.Options
	stdout.printf("replay: %s reproduces exactly: %s starts and %s steps replayed, every action and state matches the trace (seed %d, %d voters, %d observers)\n",
		path, thousands(st.Starts), thousands(st.Steps), o.Seed, o.Voters, o.Observers)
	return exitOK
}

// checkTrace checks that data is a well-formed trace: a header line with
// the options first, then start, step and op lines whose events and
// actions decode. It returns the header.
func checkTrace(data []byte) (sim.TraceLine, error) {
	var hdr sim.TraceLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	line := 0
	for sc.Scan() {
		line++
		var l sim.TraceLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return hdr, fmt.Errorf("line %d: %w", line, err)
		}
		if line == 1 {
			if l.Kind != "header" || l.Options == nil {
				return hdr, fmt.Errorf("line 1: want a header with the run's options, got kind %q", l.Kind)
			}
			hdr = l
			continue
		}
		switch l.Kind {
		case "start":
			if l.Config == nil || l.Log == nil || l.State == nil {
				return hdr, fmt.Errorf("line %d: start without config, log or state", line)
			}
		case "step":
			if l.Event == nil || l.State == nil {
				return hdr, fmt.Errorf("line %d: step without event or state", line)
			}
			if _, err := sim.DecodeEvent(*l.Event); err != nil {
				return hdr, fmt.Errorf("line %d: %w", line, err)
			}
		case "op":
			if l.Op == nil {
				return hdr, fmt.Errorf("line %d: op without operation", line)
			}
			continue
		case "end":
			continue
		default:
			return hdr, fmt.Errorf("line %d: unknown kind %q", line, l.Kind)
		}
		for i, a := range l.Actions {
			if _, err := sim.DecodeAction(a); err != nil {
				return hdr, fmt.Errorf("line %d, action %d: %w", line, i, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return hdr, err
	}
	if line == 0 {
		return hdr, fmt.Errorf("empty file")
	}
	return hdr, nil
}
