package kraft

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// testCluster is a tiny synchronous host for scenario tests: messages go
// into one FIFO queue and are delivered by deliverAll; timers fire only when
// a test fires them. Logs are slices of record epochs. The sim package is
// the full host; this one keeps package tests self-contained.
type testCluster struct {
	t      *testing.T
	ids    []NodeID
	states map[NodeID]State
	logs   map[NodeID][]Epoch
	record map[NodeID]QuorumRecord
	timers map[NodeID]map[Timer]bool // armed timers
	queue  []envelope
	down   map[NodeID]bool // messages to and from these are dropped
	faults []Fault
	parked []envelope          // fetches a leader holds until it has news (long poll)
	fetch  map[NodeID]envelope // each node's latest fetch request
}

type envelope struct {
	from, to NodeID
	event    Event
	records  []Epoch // records carried by a fetch response
	fetchAt  int64   // the fetch offset the response answers
	fetchHWM int64   // the high watermark a fetch request carried
}

func newTestCluster(t *testing.T, voters ...NodeID) *testCluster {
	c := &testCluster{
		t: t, ids: voters,
		states: map[NodeID]State{}, logs: map[NodeID][]Epoch{},
		record: map[NodeID]QuorumRecord{}, timers: map[NodeID]map[Timer]bool{},
		down: map[NodeID]bool{}, fetch: map[NodeID]envelope{},
	}
	for _, id := range voters {
		c.timers[id] = map[Timer]bool{}
		s, acts, err := NewState(config(id, voters...), nil, LogState{})
		require.NoError(t, err)
		c.states[id] = s
		c.apply(id, acts)
	}
	return c
}

// fire delivers a timer event to id and then every message that follows.
func (c *testCluster) fire(id NodeID, e Event) {
	c.stepNode(id, e)
	c.deliverAll()
}

func (c *testCluster) stepNode(id NodeID, e Event) {
	c.t.Helper()
	prev := c.states[id]
	next, acts := step(c.t, prev, e)
	c.states[id] = next
	c.apply(id, acts)
	if next.Role() == Leader && (next.LogEnd() != prev.LogEnd() || next.HighWatermark() != prev.HighWatermark()) {
		c.queue = append(c.queue, c.parked...)
		c.parked = nil
	}
}

func (c *testCluster) deliverAll() {
	for i := 0; len(c.queue) > 0; i++ {
		require.Less(c.t, i, 10000, "message storm")
		m := c.queue[0]
		c.queue = c.queue[1:]
		if c.down[m.from] || c.down[m.to] {
			continue
		}
		if m.records != nil || m.fetchAt >= 0 {
			if !c.appendFetched(m) {
				continue
			}
		}
		c.stepNode(m.to, m.event)
	}
}

// appendFetched appends the records of a fetch response to the follower's
// log if it still ends where the fetch started, and reports them.
func (c *testCluster) appendFetched(m envelope) bool {
	if len(m.records) == 0 {
		return true
	}
	log := c.logs[m.to]
	if int64(len(log)) != m.fetchAt {
		return false
	}
	c.logs[m.to] = append(log, m.records...)
	for i, e := range m.records {
		if i == len(m.records)-1 || m.records[i+1] != e {
			c.stepNode(m.to, LogAppended{End: LogEnd{Offset: m.fetchAt + int64(i) + 1, Epoch: e}})
		}
	}
	c.stepNode(m.to, LogFlushed{Offset: int64(len(c.logs[m.to]))})
	return true
}

func (c *testCluster) send(from, to NodeID, e Event) {
	c.queue = append(c.queue, envelope{from: from, to: to, event: e, fetchAt: -1})
}

// apply carries out a node's actions as the host contract says.
func (c *testCluster) apply(id NodeID, acts []Action) {
	s := c.states[id]
	local := s.Local()
	for _, a := range acts {
		switch a := a.(type) {
		case Persist:
			c.record[id] = a.Record
		case SendVoteRequest:
			c.send(id, a.To.ID, ReceiveVoteRequest{
				From: id, ClusterID: a.ClusterID, VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
				CandidateEpoch: a.CandidateEpoch, Candidate: a.Candidate.ID, CandidateDirectoryID: a.Candidate.DirectoryID,
				CandidateLogEnd: a.CandidateLogEnd, PreVote: a.PreVote,
			})
		case SendVoteResponse:
			c.send(id, a.To, ReceiveVoteResponse{From: id, Error: a.Error, Epoch: a.Epoch, VoteGranted: a.VoteGranted, LeaderID: a.LeaderID})
		case SendBeginQuorumEpoch:
			c.send(id, a.To.ID, ReceiveBeginQuorumEpoch{
				From: id, ClusterID: a.ClusterID, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
				VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
			})
		case SendEndQuorumEpoch:
			rank := SuccessorRank{Position: len(a.PreferredSuccessors), Of: len(a.PreferredSuccessors)}
			for i, k := range a.PreferredSuccessors {
				if k.ID == a.To.ID {
					rank.Position = i
					break
				}
			}
			c.send(id, a.To.ID, ReceiveEndQuorumEpoch{From: id, ClusterID: a.ClusterID, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch, SuccessorRank: rank})
		case SendFetch:
			to := a.To
			if to == NoNode {
				to = c.ids[0]
			}
			m := envelope{
				from: id, to: to, fetchAt: -1, fetchHWM: a.HighWatermark,
				event: ReceiveFetch{
					From: id, FromDirectoryID: local.DirectoryID, ClusterID: a.ClusterID,
					CurrentLeaderEpoch: a.CurrentLeaderEpoch, FetchEpoch: a.FetchEpoch, FetchOffset: a.FetchOffset,
				},
			}
			c.queue = append(c.queue, m)
			c.fetch[id] = m
		case SendFetchResponse:
			m := envelope{
				from: id, to: a.To, fetchAt: c.fetchOffsetOf(a.To),
				event: ReceiveFetchResponse{
					From: id, Error: a.Error, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
					HighWatermark: a.HighWatermark, Diverging: a.Diverging,
				},
			}
			if a.Error == ErrNone && a.Diverging == nil && m.fetchAt >= 0 && m.fetchAt < int64(len(c.logs[id])) {
				m.records = append([]Epoch(nil), c.logs[id][m.fetchAt:]...)
			}
			if req, ok := c.fetch[a.To]; ok && a.Error == ErrNone && a.Diverging == nil && len(m.records) == 0 && a.HighWatermark <= req.fetchHWM {
				// Nothing new: the leader holds the fetch (Kafka's long
				// poll) and looks at it again when it has news.
				c.parked = append(c.parked, req)
				continue
			}
			c.queue = append(c.queue, m)
		case SendFetchSnapshotResponse, SendBeginQuorumEpochResponse, SendEndQuorumEpochResponse:
		case TruncateLog:
			c.logs[id] = c.logs[id][:a.To]
		case AppendLeaderChange:
			c.logs[id] = append(c.logs[id], a.Epoch)
			c.stepNode(id, LogAppended{End: LogEnd{Offset: int64(len(c.logs[id])), Epoch: a.Epoch}})
			c.stepNode(id, LogFlushed{Offset: int64(len(c.logs[id]))})
		case ResetTimer:
			c.timers[id][a.Timer] = true
		case StopTimer:
			delete(c.timers[id], a.Timer)
		case Fault:
			c.faults = append(c.faults, a)
		case HighWatermarkChanged, RoleChanged:
		}
	}
}

func (c *testCluster) fetchOffsetOf(id NodeID) int64 {
	if m, ok := c.fetch[id]; ok {
		return m.event.(ReceiveFetch).FetchOffset
	}
	return -1
}

// appendAt appends n records at the leader and reports them.
func (c *testCluster) appendAt(id NodeID, n int) {
	s := c.states[id]
	for i := 0; i < n; i++ {
		c.logs[id] = append(c.logs[id], s.Epoch())
	}
	c.stepNode(id, LogAppended{End: LogEnd{Offset: int64(len(c.logs[id])), Epoch: s.Epoch()}})
	c.stepNode(id, LogFlushed{Offset: int64(len(c.logs[id]))})
	c.deliverAll()
}

// leaders returns the nodes that are Leader.
func (c *testCluster) leaders() []NodeID {
	var out []NodeID
	for _, id := range c.ids {
		if c.states[id].Role() == Leader {
			out = append(out, id)
		}
	}
	return out
}

func TestClusterSmokeElection(t *testing.T) {
	c := newTestCluster(t, 1, 2, 3)
	c.fire(1, ElectionTimeout{})
	require.Empty(t, c.faults)
	require.Equal(t, []NodeID{1}, c.leaders())
	for _, id := range []NodeID{2, 3} {
		require.Equal(t, Follower, c.states[id].Role(), "node %d: %v", id, c.states[id])
		require.Equal(t, NodeID(1), c.states[id].Leader())
	}
	c.appendAt(1, 3)
	t.Log(c.states[1], c.states[2], c.states[3])
	require.Equal(t, int64(4), c.states[1].HighWatermark())
}
