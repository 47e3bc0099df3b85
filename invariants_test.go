package kraft

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain checks the State invariants (checkInvariants) after every
// NewState and Step of every test of the package, the scenario, property,
// model and cluster tests alike: a state that breaks one panics with the
// reason, which fails the test that stepped it. Benchmarks run without
// the check, to time Step alone.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		checkStep = panicOnBrokenInvariant
	}
	os.Exit(m.Run())
}

func panicOnBrokenInvariant(s State) {
	if err := s.checkInvariants(); err != nil {
		panic(fmt.Sprintf("kraft: state invariant broken: %v\nstate: %v", err, s))
	}
}
