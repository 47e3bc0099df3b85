// Package jepsen tests kraftd's key-value API (cmd/kraftd, docs/kraftd.md)
// for linearizability, in the manner of Jepsen: it builds kraftd, runs a
// quorum of kraftd processes whose every raft link goes through a TCP
// proxy of the test process, has concurrent clients write, read and
// compare-and-set a few keys while a nemesis kills, pauses and partitions
// the processes and makes the leader resign, and checks the history of
// operations with Porcupine (github.com/anishathalye/porcupine) against
// a model of one register per key. Afterwards it heals everything and
// checks that every replica converges on the same state.
//
// The package has no API: its tests are the product. `go test ./...` in
// this directory runs a 25 s run and the planted bugs (about a minute in
// all; -short leaves only the unit tests); KRAFT_JEPSEN_SECONDS=600 runs a
// long one; docs/verification.md
// ("Linearizability of the key-value API") has the details, the planted
// bugs it finds and how long that takes (docs/design.md D140-D144).
package jepsen
