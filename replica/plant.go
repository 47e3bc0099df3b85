package replica

// plant is a bug the tests plant in the layer to show that the
// random-schedule test catches it (cluster_test.go); none outside tests.
var plant bug

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
