//go:build !kraftdbug

package main

import "net/http"

// Without the build tag kraftdbug, kraftd has no planted bugs: these hooks
// do nothing, and the compiler removes the calls (docs/design.md D141).

// plantedStaleRead reports whether a linearizable GET skips its read
// barrier. Never, here.
func plantedStaleRead(replica) bool { return false }

// plantedEarlyAck answers a write before it is committed, and reports
// whether it did. Never, here.
func plantedEarlyAck(http.ResponseWriter, replica, kvOp) bool { return false }
