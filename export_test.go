package kraft

// CloneState copies a State and every slice it refers to, for tests in
// package kraft_test that check Step leaves its input untouched: comparing
// the clone with the original after a step catches a write into shared
// structure, which a shallow copy or a %#v print of pointers would miss.
func CloneState(s State) State { return deepCopy(s) }

// SetArenaFallback makes the arena box every action the ordinary way, as
// it does when its layout check (referOK) fails, or go back to referring
// to pooled values; it returns the previous setting.
func SetArenaFallback(on bool) (was bool) {
	was = !referOK
	referOK = !on
	return was
}
