package replica

import "github.com/kraftquorum/kraft/internal/plant"

// bug is a bug the project's tests plant in a Replica (Config's plant
// field, set through package internal/plant) to show that the random
// schedules catch it (cluster_test.go here, package sim's); a Replica
// built otherwise has none.
type bug = plant.Bug

const (
	noBug          = plant.None
	bugKeepStale   = plant.KeepStale
	bugParkForever = plant.ParkForever
	bugTwoFetches  = plant.TwoFetches
	bugWrongOffset = plant.WrongOffset
)

func init() {
	plant.Register(func(cfg interface{}, b plant.Bug) { cfg.(*Config).plant = b })
}
