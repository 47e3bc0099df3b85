//go:build race

package explore

// raceEnabled: the race detector makes the searches several times slower,
// so some tests search smaller bounds under it.
const raceEnabled = true
