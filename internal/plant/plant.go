// Package plant lets the project's own tests plant a known bug in a
// replica.Replica, to show that the random schedules of packages replica
// and sim catch it. Package replica holds the hooks only when built with
// the tag kraftbug (docs/design.md D201): a release build has none.
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
	// PersistLast carries out a step's Persist after the step's other
	// actions, its messages among them (the README's host contract, rule
	// 1, broken; package sim's persist-before-send rule catches it).
	PersistLast
	// TornTail is the simulated host's, not the layer's: at a start on a
	// log whose synced records are damaged, the host takes the damage for
	// a torn tail, as storage.Open did before docs/design.md D70: it cuts
	// the log at the first damaged record and starts under its old
	// identity, with its vote (package sim, damage.go).
	TornTail
	// ReadCountsFetches confirms a voter for a read round on any Fetch of
	// the leader's epoch that arrives while the round is in flight, as if
	// a Fetch that arrives after a read had been sent after it.
	ReadCountsFetches
	// ReadJoinsRound lets a read join the read round in flight, which
	// began before it, instead of waiting for the next.
	ReadJoinsRound
)

// ReadBugs lists the bugs of the layer's linearizable reads, for the
// tests that issue reads (the others' schedules take none, so these are
// not among Bugs).
var ReadBugs = []Bug{ReadCountsFetches, ReadJoinsRound}

// Bugs lists every bug of the replica layer, for the tests that plant
// each in turn (TornTail, a host's, is not among them).
var Bugs = []Bug{KeepStale, ParkForever, TwoFetches, WrongOffset, PersistLast}

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
	case PersistLast:
		return "a record persisted after the messages that rely on it"
	case TornTail:
		return "damage taken for a torn tail"
	case ReadCountsFetches:
		return "a read confirmed by Fetches that arrived after it"
	case ReadJoinsRound:
		return "a read confirmed by a round that began before it"
	}
	return "unknown"
}

// Host reports whether b is a host's bug (package sim's), which the
// replica layer does not see.
func (b Bug) Host() bool { return b == TornTail }

var setter func(cfg interface{}, b Bug)

// Register is package replica's: it installs the function that plants a
// bug in a *replica.Config.
func Register(f func(cfg interface{}, b Bug)) { setter = f }

// Into plants b in the *replica.Config cfg. Planting None does nothing;
// planting a bug in a build without the tag kraftbug (Enabled false),
// whose replica package has no hooks, panics (docs/design.md D201).
func Into(cfg interface{}, b Bug) {
	if b == None {
		return
	}
	if setter == nil {
		panic("plant: " + b.String() + " planted in a build without the tag kraftbug")
	}
	setter(cfg, b)
}
