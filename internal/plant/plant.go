// Package plant lets the project's own tests plant a known bug in a
// replica.Replica, to show that the random schedules of packages replica
// and sim catch it. A Replica built outside these tests never has one.
package plant

// Bug is a bug planted in the replica layer.
type Bug uint8

const (
	None Bug = iota
	// KeepStale steps a response that matches no request in flight.
	KeepStale
	// ParkForever never answers a parked Fetch.
	ParkForever
	// TwoFetches sends a Fetch without forgetting the one in flight.
	TwoFetches
	// WrongOffset appends fetched records at the log end whatever their
	// offsets.
	WrongOffset
)

// Bugs lists every bug, for the tests that plant each in turn.
var Bugs = []Bug{KeepStale, ParkForever, TwoFetches, WrongOffset}

func (b Bug) String() string {
	switch b {
	case None:
		return "none"
	case KeepStale:
		return "a stale response not dropped"
	case ParkForever:
		return "a parked Fetch never answered"
	case TwoFetches:
		return "a retry that sends two Fetches in flight"
	case WrongOffset:
		return "records appended at the wrong offset"
	}
	return "unknown"
}

var setter func(cfg interface{}, b Bug)

// Register is package replica's: it installs the function that plants a
// bug in a *replica.Config.
func Register(f func(cfg interface{}, b Bug)) { setter = f }

// Into plants b in the *replica.Config cfg.
func Into(cfg interface{}, b Bug) { setter(cfg, b) }
