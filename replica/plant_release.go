//go:build !kraftbug

package replica

import "github.com/kraftquorum/kraft"

// bug is a planted bug's number (plant.go, built with the tag kraftbug).
// A release build plants none: planted is constant false, so the
// compiler drops every planted branch, and the package does not import
// internal/plant (docs/design.md D201).
type bug uint8

const (
	noBug bug = iota
	bugKeepStale
	bugParkForever
	bugTwoFetches
	bugWrongOffset
	bugPersistLast
	bugReadCountsFetches
	bugReadJoinsRound
)

func (r *Replica) planted(bug) bool { return false }

func persistLast(acts []kraft.Action) []kraft.Action { return acts }
