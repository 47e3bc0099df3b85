package replica

// bug is a bug the tests plant in a Replica (its plant field) to show
// that the random-schedule test catches it (cluster_test.go); a Replica
// made by New has none.
type bug uint8

const (
	noBug bug = iota
	// bugKeepStale steps a response that matches no request in flight.
	bugKeepStale
	// bugParkForever never answers a parked Fetch.
	bugParkForever
	// bugTwoFetches sends a Fetch without forgetting the one in flight.
	bugTwoFetches
	// bugWrongOffset appends fetched records at the log end whatever
	// their offsets.
	bugWrongOffset
)
