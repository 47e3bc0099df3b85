package kraft

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStateFieldsNameEveryInvariantRule: every InvariantError Rule that
// checkInvariants (invariants.go) reports is named beside the State
// fields it is about (state.go), so the invariant is read where the field
// is declared.
func TestStateFieldsNameEveryInvariantRule(t *testing.T) {
	inv, err := os.ReadFile("invariants.go")
	require.NoError(t, err)
	st, err := os.ReadFile("state.go")
	require.NoError(t, err)
	rules := regexp.MustCompile(`broken\("([a-z-]+)"`).FindAllSubmatch(inv, -1)
	require.NotEmpty(t, rules)
	for _, m := range rules {
		require.Contains(t, string(st), `"`+string(m[1])+`"`, "rule %s is not named beside a State field", m[1])
	}
}
