//go:build !race

package kraft

const raceEnabled = false
