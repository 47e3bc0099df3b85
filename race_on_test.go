//go:build race

package kraft

// raceEnabled: the race detector changes what allocates, so allocation
// counts are not checked under it.
const raceEnabled = true
