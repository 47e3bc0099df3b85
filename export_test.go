package kraft

// CloneState copies a State and every slice it refers to, for tests in
// package kraft_test that check Step leaves its input untouched: comparing
// the clone with the original after a step catches a write into shared
// structure, which a shallow copy or a %#v print of pointers would miss.
func CloneState(s State) State { return deepCopy(s) }
