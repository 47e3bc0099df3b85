package kraft

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The steady-state steps allocate nothing through a warm Buffer (StepInto
// and StepIn), and Step
// allocates at most once (docs/design.md D47). Allocation counts are
// deterministic, unlike timings, so they are checked here; the times are
// the benchmarks' (bench_test.go).

// allocCase is one step from a fixed state.
type allocCase struct {
	name string
	s    State
	e    Event
	// want checks the step did what the case says (so that a case that
	// stopped doing its job cannot pass for cheap).
	want func(State, []Action) bool
	// intoMax and stepMax are the most allocations StepInto (warm Buffer)
	// and Step may make.
	intoMax, stepMax float64
}

func steadyAllocCases(t *testing.T) []allocCase {
	var cases []allocCase
	for _, n := range []int{3, 5, 7} {
		c := bnSteady(t, n)
		leader, follower := c.state(1), c.state(2)
		// The leader wrote and flushed up to offset 1001; voters 3..majority
		// have it, so voter 2's Fetch at 1001 moves the high watermark.
		adv := bnMust(t, leader, LogAppended{End: LogEnd{Offset: 1001, Epoch: 1}}, func(s State, _ []Action) bool { return s.LogEnd().Offset == 1001 })
		adv = bnMust(t, adv, LogFlushed{Offset: 1001}, func(s State, _ []Action) bool { return s.FlushedOffset() == 1001 })
		for id := 3; id <= n/2+1; id++ {
			adv = bnMust(t, adv, bnFetchAt(NodeID(id), 1001), func(s State, _ []Action) bool { return s.HighWatermark() == 1 })
		}
		// Voters with an end of their own beyond the inline ones copy
		// their ends when one moves (voterEnds): one allocation.
		advMax := 0.0
		if n > inlineEnds {
			advMax = 1
		}
		fol := bnMust(t, follower, LogAppended{End: LogEnd{Offset: 1001, Epoch: 1}}, func(s State, _ []Action) bool { return s.LogEnd().Offset == 1001 })
		fol = bnMust(t, fol, LogFlushed{Offset: 1001}, func(s State, _ []Action) bool { return s.FlushedOffset() == 1001 })
		cases = append(cases,
			allocCase{
				name: fmt.Sprintf("voters=%d/leader Fetch, offset unchanged", n), s: leader, e: bnFetchAt(2, 1),
				want: func(s State, acts []Action) bool {
					return bnCount[SendFetchResponse](acts) == 1 && s.HighWatermark() == 1
				},
			},
			allocCase{
				name: fmt.Sprintf("voters=%d/leader Fetch, high watermark moves", n), s: adv, e: bnFetchAt(2, 1001),
				want: func(s State, acts []Action) bool {
					return bnCount[SendFetchResponse](acts) == 1 && bnCount[HighWatermarkChanged](acts) == 1 && s.HighWatermark() == 1001
				},
				intoMax: advMax, stepMax: 1 + advMax,
			},
			allocCase{
				name: fmt.Sprintf("voters=%d/follower Fetch response", n), s: fol,
				e: ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 1001},
				want: func(s State, acts []Action) bool {
					return bnCount[SendFetch](acts) == 1 && bnCount[HighWatermarkChanged](acts) == 1 && s.HighWatermark() == 1001
				},
			},
			allocCase{
				// A response carrying records: AppendFetched alone (D240).
				name: fmt.Sprintf("voters=%d/follower Fetch response with records", n), s: follower,
				e: ReceiveFetchResponse{From: 1, LeaderID: 1, LeaderEpoch: 1, HighWatermark: 1001, Records: true},
				want: func(s State, acts []Action) bool {
					return len(acts) == 1 && bnCount[AppendFetched](acts) == 1 && s.LogEnd() == follower.LogEnd()
				},
			},
			allocCase{
				name: fmt.Sprintf("voters=%d/follower appends", n), s: follower, e: LogAppended{End: LogEnd{Offset: 1001, Epoch: 1}},
				want: func(s State, _ []Action) bool { return s.LogEnd().Offset == 1001 },
			},
			allocCase{
				name: fmt.Sprintf("voters=%d/follower flushes", n), s: bnMust(t, follower, LogAppended{End: LogEnd{Offset: 1001, Epoch: 1}}, func(State, []Action) bool { return true }),
				e:    LogFlushed{Offset: 1001},
				want: func(s State, _ []Action) bool { return s.FlushedOffset() == 1001 },
			},
			allocCase{
				name: fmt.Sprintf("voters=%d/follower BeginQuorumEpoch from its leader", n), s: follower,
				e:    ReceiveBeginQuorumEpoch{From: 1, LeaderID: 1, LeaderEpoch: 1, VoterID: NoNode},
				want: func(_ State, acts []Action) bool { return bnCount[SendBeginQuorumEpochResponse](acts) == 1 },
				// Step's block has no room for this rarer answer: its pool
				// takes a second allocation.
				stepMax: 2,
			},
			allocCase{
				name: fmt.Sprintf("voters=%d/leader BeginQuorumEpoch timer", n), s: leader, e: BeginQuorumEpochTimeout{},
				want: func(_ State, acts []Action) bool { return bnCount[ResetTimer](acts) == 1 },
			},
		)
		// Timers a role does not own change nothing (a host may deliver a
		// timeout it failed to cancel).
		for _, timeout := range []Event{ElectionTimeout{}, CheckQuorumTimeout{}, BeginQuorumEpochTimeout{}} {
			cases = append(cases, allocCase{
				name: fmt.Sprintf("voters=%d/follower %T", n, timeout), s: follower, e: timeout,
				want: func(_ State, acts []Action) bool { return len(acts) == 0 },
			})
		}
		for _, timeout := range []Event{ElectionTimeout{}, FetchTimeout{}} {
			cases = append(cases, allocCase{
				name: fmt.Sprintf("voters=%d/leader %T", n, timeout), s: leader, e: timeout,
				want: func(_ State, acts []Action) bool { return len(acts) == 0 },
			})
		}
	}
	return cases
}

func TestSteadyStepsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates")
	}
	for _, tc := range steadyAllocCases(t) {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			_, acts := Step(tc.s, tc.e)
			// The case does its job, through both APIs.
			n1, a1 := Step(tc.s, tc.e)
			require.True(t, tc.want(n1, a1), "%v", a1)
			var buf Buffer
			n2, a2 := StepInto(&buf, tc.s, tc.e)
			require.True(t, tc.want(n2, a2), "%v", a2)
			require.Equal(t, acts, a2)

			into := testing.AllocsPerRun(100, func() { _, _ = StepInto(&buf, tc.s, tc.e) })
			require.LessOrEqual(t, into, tc.intoMax, "StepInto allocates")
			// StepIn (D300): the same step on a State of the caller's,
			// through the warm Buffer; the copy that restarts it from
			// tc.s allocates nothing.
			s3 := tc.s
			a3 := StepIn(&buf, &s3, tc.e)
			require.True(t, tc.want(s3, a3), "%v", a3)
			require.Equal(t, acts, a3)
			in := testing.AllocsPerRun(100, func() {
				s3 = tc.s
				_ = StepIn(&buf, &s3, tc.e)
			})
			require.LessOrEqual(t, in, tc.intoMax, "StepIn allocates")
			stepMax := tc.stepMax
			if stepMax == 0 && len(acts) > 0 {
				stepMax = 1
			}
			step := testing.AllocsPerRun(100, func() { _, _ = Step(tc.s, tc.e) })
			require.LessOrEqual(t, step, stepMax, "Step allocates")
		})
	}
}

// The arena's Actions read back as the values written (the layout check
// holds on this Go), and a step that outgrows a pool's chunk keeps the
// actions already emitted: a 9-voter replica that starts a pre-vote, and
// then wins it, sends 8 vote requests each time, more than a chunk of 4.
func TestBufferGrowsWithoutMovingActions(t *testing.T) {
	require.True(t, referOK, "refer does not read back on this Go: every action is boxed")
	voters := make([]ReplicaKey, 9)
	for i := range voters {
		voters[i] = ReplicaKey{ID: NodeID(i + 1)}
	}
	s, _, err := NewState(Config{Local: ReplicaKey{ID: 1}, Voters: voters, Seed: 3}, nil, LogState{})
	require.NoError(t, err)
	var buf Buffer
	events := []Event{ElectionTimeout{}}
	for id := NodeID(2); id <= 5; id++ {
		events = append(events, ReceiveVoteResponse{From: id, Epoch: 0, LeaderID: NoNode, VoteGranted: true})
	}
	var requests []int
	for _, e := range events {
		// Another step first: the Buffer's pools hold stale values that
		// this step must not show.
		StepInto(&buf, s, ReceiveFetch{From: 5})
		want, wantActs := Step(s, e)
		got, acts := StepInto(&buf, s, e)
		require.Equal(t, want, got)
		require.Len(t, acts, len(wantActs))
		if len(acts) > 0 {
			require.Equal(t, wantActs, acts)
		}
		requests = append(requests, bnCount[SendVoteRequest](acts))
		s = got
	}
	require.Equal(t, Candidate, s.Role())
	require.Equal(t, 8, requests[0], "the pre-vote asks the 8 others")
	require.Equal(t, 8, requests[len(requests)-1], "the vote asks the 8 others")
}

// TestStateSizeBounded: a State is copied in and out of every step, so its
// size is most of a leader ack's cost; a voter set beyond the inline ends
// costs it one pointer (docs/design.md D180). 224 bytes on 64-bit platforms.
func TestStateSizeBounded(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are for 64-bit platforms")
	}
	require.LessOrEqual(t, unsafe.Sizeof(State{}), uintptr(224), "State grew")
	require.Equal(t, uintptr(8), unsafe.Sizeof(voterEnds{}.large), "the large ends cost the State more than a pointer")
}
