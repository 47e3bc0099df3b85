//go:build race

package sim

// raceEnabled: the tests run under the race detector. The simulator is
// one goroutine, so its long random runs find no race the short ones miss;
// under the detector (about seven times slower) they run their -short
// counts, and CI runs the full counts without it.
const raceEnabled = true
