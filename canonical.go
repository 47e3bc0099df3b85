package kraft

import "encoding/binary"

// canonUvarint and canonVarint append x as a varint (binary.AppendUvarint
// needs Go 1.19).
func canonUvarint(dst []byte, x uint64) []byte {
	var b [binary.MaxVarintLen64]byte
	return append(dst, b[:binary.PutUvarint(b[:], x)]...)
}

func canonVarint(dst []byte, x int64) []byte {
	var b [binary.MaxVarintLen64]byte
	return append(dst, b[:binary.PutVarint(b[:], x)]...)
}

// AppendCanonical appends to dst a canonical binary encoding of s and
// returns the extended slice: every field that affects how s answers
// future events (role, epoch, leader, vote, endpoints, high watermarks,
// the log view with its epoch history, flushed offset, log start and
// snapshot ids, the PRNG state, the Follower flags and
// snapshot download, the election tally and the
// rival (D59), the Leader's bookkeeping, the voter sets in the
// log and a pending voter change),
// and not the immutable per-replica settings, which a host keeps fixed
// for a replica's life. States that are equal encode equal; states that
// differ in any of these fields encode differently. The encoding is for
// comparing and hashing states (a model checker's visited set), not for
// storage: it may change between versions.
func (s State) AppendCanonical(dst []byte) []byte {
	dst = s.appendCanonical(dst)
	return canonUvarint(dst, s.rng)
}

// AppendCanonicalUntimed is AppendCanonical without what feeds only timer
// durations: the PRNG state (election timeouts). Two states that differ
// only there take every event alike apart from the durations of their
// ResetTimer actions, so a model that lets any armed timer fire at any
// time (an untimed model) may identify them.
func (s State) AppendCanonicalUntimed(dst []byte) []byte {
	return s.appendCanonical(dst)
}

func (s State) appendCanonical(dst []byte) []byte {
	dst = append(dst, byte(s.role), s.canonicalFlags())
	dst = canonVarint(dst, int64(s.epoch))
	dst = canonVarint(dst, int64(s.leader))
	dst = canonVarint(dst, int64(s.voted.ID))
	dst = append(dst, s.voted.DirectoryID[:]...)
	dst = canonVarint(dst, s.hwm)
	dst = canonVarint(dst, s.committed)
	dst = canonVarint(dst, s.log.end.Offset)
	dst = canonVarint(dst, int64(s.log.end.Epoch))
	dst = canonVarint(dst, s.log.flushed)
	dst = canonUvarint(dst, uint64(len(s.log.epochs())))
	for _, e := range s.log.epochs() {
		dst = canonVarint(dst, int64(e.Epoch))
		dst = canonVarint(dst, e.StartOffset)
	}
	dst = canonVarint(dst, s.log.start())
	dst = canonVarint(dst, s.log.latest().Offset)
	dst = canonVarint(dst, int64(s.log.latest().Epoch))
	dst = canonVarint(dst, s.log.earliest().Offset)
	dst = canonVarint(dst, int64(s.log.earliest().Epoch))
	if d := s.download; d != nil {
		dst = canonVarint(dst, d.id.Offset)
		dst = canonVarint(dst, int64(d.id.Epoch))
		dst = canonVarint(dst, d.written)
	}
	dst = canonUvarint(dst, uint64(s.granted))
	dst = canonUvarint(dst, uint64(s.rejected))
	refused := byte(0)
	if s.refused {
		refused = 1
	}
	dst = append(dst, s.rival, s.rivalHeld, refused)
	dst = canonVarint(dst, s.rivalOffset)
	dst = canonVarint(dst, int64(s.rivalEpoch))
	dst = canonVarint(dst, s.epochStart)
	for _, e := range s.ends.small {
		dst = canonVarint(dst, e)
	}
	dst = canonUvarint(dst, uint64(len(s.ends.bigs())))
	for _, e := range s.ends.bigs() {
		dst = canonVarint(dst, e)
	}
	dst = canonUvarint(dst, uint64(s.fetchedCheck))
	dst = canonUvarint(dst, uint64(s.fetchedBegin))
	dst = canonUvarint(dst, uint64(len(s.log.voterSets())))
	for _, at := range s.log.voterSets() {
		dst = canonVarint(dst, at.Offset)
		dst = appendCanonicalKeys(dst, at.Voters)
	}
	dst = s.appendCanonicalChange(dst)
	return append(dst, 0)
}

// canonicalFlags packs s's booleans, and whether it has a snapshot
// download and snapshots, into AppendCanonical's flags byte.
func (s *State) canonicalFlags() byte {
	var flags byte
	if s.endpoints {
		flags |= 1
	}
	if s.fetched {
		flags |= 2
	}
	if s.leaderResigned {
		flags |= 4
	}
	if s.fetchPending {
		flags |= 8
	}
	if s.lowerAsked {
		flags |= 16
	}
	if s.download != nil {
		flags |= 32
	}
	if s.log.hasSnapshots() {
		flags |= 64
	}
	if s.joinWait {
		flags |= 128
	}
	return flags
}

// appendCanonicalChange appends the pending voter change, if any, to
// AppendCanonical's encoding.
func (s *State) appendCanonicalChange(dst []byte) []byte {
	if c := s.change; c != nil {
		dst = append(dst, byte(c.kind), byte(c.stage))
		dst = canonUvarint(dst, c.ref)
		dst = canonVarint(dst, int64(c.from))
		dst = appendCanonicalKeys(dst, []ReplicaKey{c.key})
		dst = canonVarint(dst, int64(c.versions.Min))
		dst = canonVarint(dst, int64(c.versions.Max))
		dst = canonVarint(dst, c.offset)
		if c.caughtUp {
			dst = append(dst, 1)
		}
		dst = canonVarint(dst, c.lastEnd)
	}
	return dst
}

func appendCanonicalKeys(dst []byte, keys []ReplicaKey) []byte {
	dst = canonUvarint(dst, uint64(len(keys)))
	for _, k := range keys {
		dst = canonVarint(dst, int64(k.ID))
		dst = append(dst, k.DirectoryID[:]...)
	}
	return dst
}
