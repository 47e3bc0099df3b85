//go:build race

package replica

// raceEnabled: the race detector slows the random schedules about tenfold;
// they run fewer seeds under it.
const raceEnabled = true
