//go:build kraftbug

package replica

import (
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/plant"
)

// bug is a bug the project's tests plant in a Replica (Config's plant
// field, set through package internal/plant) to show that the random
// schedules catch it (cluster_test.go here, package sim's). Only a build
// with the tag kraftbug holds the hooks (plant_release.go, D201).
type bug = plant.Bug

const (
	noBug          = plant.None
	bugKeepStale   = plant.KeepStale
	bugParkForever = plant.ParkForever
	bugTwoFetches  = plant.TwoFetches
	bugWrongOffset = plant.WrongOffset
	bugPersistLast = plant.PersistLast

	bugReadCountsFetches = plant.ReadCountsFetches
	bugReadJoinsRound    = plant.ReadJoinsRound
)

// planted reports whether the tests planted b in r.
func (r *Replica) planted(b bug) bool { return r.plant == b }

func init() {
	plant.Register(func(cfg interface{}, b plant.Bug) { cfg.(*Config).plant = b })
}

// persistLast is acts with every Persist moved after the other actions
// (bugPersistLast).
func persistLast(acts []kraft.Action) []kraft.Action {
	out := make([]kraft.Action, 0, len(acts))
	var persists []kraft.Action
	for _, a := range acts {
		if _, ok := a.(kraft.Persist); ok {
			persists = append(persists, a)
			continue
		}
		out = append(out, a)
	}
	return append(out, persists...)
}
