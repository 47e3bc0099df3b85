//go:build kraftdbug

package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/kraftquorum/kraft/node"
)

// Planted bugs, for showing that the linearizability test of the jepsen
// module finds them (docs/verification.md, "Linearizability of the
// key-value API"; docs/design.md D141). Only a build with the tag
// kraftdbug has them, and only with the environment variable KRAFTD_BUG
// set:
//
//	KRAFTD_BUG=stale-read     every replica answers a linearizable GET
//	                          from its applied map at once, without
//	                          node.Node.ReadIndex (which also refuses the
//	                          read on a replica that does not lead): a
//	                          follower serves what it has applied so far
//	KRAFTD_BUG=stale-read-leader
//	                          the same on a replica that believes it
//	                          leads, only: a leader cut off from the
//	                          quorum serves stale values until
//	                          check-quorum makes it resign
//	KRAFTD_BUG=ack-unapplied  PUT answers 200 if its record is not
//	                          committed within 2ms, before it is committed
//	                          and applied (the write may be lost, and a
//	                          read right after may not see it)
const bugEnv = "KRAFTD_BUG"

var plantedBug = os.Getenv(bugEnv)

func init() {
	if plantedBug != "" {
		os.Stderr.WriteString("kraftd: PLANTED BUG " + bugEnv + "=" + plantedBug + " (a kraftdbug build; never in a release)\n")
	}
}

func plantedStaleRead(r replica) bool {
	switch plantedBug {
	case "stale-read":
		return true
	case "stale-read-leader":
	default:
		return false
	}
	st, err := r.Status()
	return err == nil && st.Role == "Leader"
}

func plantedEarlyAck(w http.ResponseWriter, r replica, op kvOp) bool {
	if plantedBug != "ack-unapplied" || op.op != opPut {
		return false
	}
	type result struct {
		offset int64
		err    error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), appendTimeout)
		defer cancel()
		off, err := r.Append(ctx, op.encode())
		done <- result{off, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(2 * time.Millisecond):
		if st, err := r.Status(); err == nil && st.Role == "Leader" {
			// The bug: 200 for a record that is not committed yet.
			writeJSON(w, http.StatusOK, offsetBody{Offset: -1})
			return true
		}
		res = <-done
	}
	var nl *node.NotLeaderError
	switch {
	case errors.As(res.err, &nl):
		writeError(w, res.err)
	case res.err != nil:
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: res.err.Error()})
	default:
		writeJSON(w, http.StatusOK, offsetBody{Offset: res.offset})
	}
	return true
}
