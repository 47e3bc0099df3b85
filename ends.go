package kraft

// inlineEnds is how many voters' end offsets a State holds inline: enough
// for the usual quorums of 3 or 5 voters, whose leaders then record a
// voter's progress without allocating.
const inlineEnds = 5

// voterEnds is a leader's end offset for each voter, by voter index (-1
// before the voter's first valid Fetch). Up to inlineEnds voters it is an
// array copied with the State; a larger voter set keeps a slice that
// states share and that set copies before writing, so older states keep
// their values. Its length is the voter set's, which the State knows.
type voterEnds struct {
	small [inlineEnds]int64
	// large is behind a pointer, not a slice header, so that it costs the
	// State 8 bytes rather than 24 (D180).
	large *[]int64
}

// bigs is the large slice, nil for an inline set.
func (v voterEnds) bigs() []int64 {
	if v.large == nil {
		return nil
	}
	return *v.large
}

func newVoterEnds(n int) voterEnds {
	var v voterEnds
	if n > inlineEnds {
		v.large = makeLarge(n)
	}
	for i := 0; i < n; i++ {
		v.set(i, -1)
	}
	return v
}

func (v voterEnds) get(i int) int64 {
	if v.large != nil {
		return (*v.large)[i]
	}
	return v.small[i]
}

// set writes voter i's end in place: only on a large slice no other State
// shares (newVoterEnds' new one, or the copy with makes).
func (v *voterEnds) set(i int, end int64) {
	if v.large == nil {
		v.small[i] = end
		return
	}
	(*v.large)[i] = end
}

// with returns v with voter i's end changed, leaving v (and every State
// that shares its slice) as it was.
func (v voterEnds) with(i int, end int64) voterEnds {
	if v.large != nil {
		large := makeLarge(len(*v.large))
		copy(*large, *v.large)
		v.large = large
	}
	v.set(i, end)
	return v
}

// makeLarge returns n ends (zero) in one allocation that holds the slice
// header beside its array, so that a voterEnds keeps one pointer and a
// moving end still costs a single allocation (D180). The array is the
// smallest of 8, 16, 32 or MaxVoters ends that holds n.
func makeLarge(n int) *[]int64 {
	switch {
	case n <= 8:
		b := new(struct {
			s []int64
			a [8]int64
		})
		b.s = b.a[:n]
		return &b.s
	case n <= 16:
		b := new(struct {
			s []int64
			a [16]int64
		})
		b.s = b.a[:n]
		return &b.s
	case n <= 32:
		b := new(struct {
			s []int64
			a [32]int64
		})
		b.s = b.a[:n]
		return &b.s
	default:
		b := new(struct {
			s []int64
			a [MaxVoters]int64
		})
		b.s = b.a[:n]
		return &b.s
	}
}
