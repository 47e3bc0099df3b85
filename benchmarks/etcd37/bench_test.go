// Package etcd37 benchmarks go.etcd.io/raft/v3 v3.7.0 through its public
// RawNode API, with Ready handling, doing the jobs kraft's bench_test.go
// does. Benchmark names match kraft's (LeaderAck, RoundTrip, Election) so
// that ../compare.sh can pair them. benchmarks/etcd36 is the same file for
// v3.6.0; v3.7.0's messages are pointer protobufs (proto2 optional fields).
package etcd37

import (
	"fmt"
	"testing"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// nopLogger drops everything: the cheapest logger etcd raft can have
// (kraft does not log at all). Panics still panic, as etcd raft relies on.
type nopLogger struct{}

func (nopLogger) Debug(...interface{})            {}
func (nopLogger) Debugf(string, ...interface{})   {}
func (nopLogger) Error(...interface{})            {}
func (nopLogger) Errorf(string, ...interface{})   {}
func (nopLogger) Info(...interface{})             {}
func (nopLogger) Infof(string, ...interface{})    {}
func (nopLogger) Warning(...interface{})          {}
func (nopLogger) Warningf(string, ...interface{}) {}
func (nopLogger) Fatal(v ...interface{})          { panic(fmt.Sprint(v...)) }
func (nopLogger) Fatalf(f string, v ...interface{}) {
	panic(fmt.Sprintf(f, v...))
}
func (nopLogger) Panic(v ...interface{}) { panic(fmt.Sprint(v...)) }
func (nopLogger) Panicf(f string, v ...interface{}) {
	panic(fmt.Sprintf(f, v...))
}

func u64(v uint64) *uint64 { return &v }

type node struct {
	rn *raft.RawNode
	st *raft.MemoryStorage
}

// cluster is a minimal synchronous host: one FIFO queue of messages, a
// MemoryStorage per node, Ready handled after every step.
type cluster struct {
	nodes []node // by id-1
	queue []*pb.Message
	head  int
}

// newCluster starts n fresh voters (ids 1..n) with pre-vote and
// check-quorum, from a snapshot at index 1 that holds the voter set.
func newCluster(tb testing.TB, n int) *cluster {
	voters := make([]uint64, n)
	for i := range voters {
		voters[i] = uint64(i + 1)
	}
	c := &cluster{nodes: make([]node, n), queue: make([]*pb.Message, 0, 4*n*n)}
	for i := range c.nodes {
		st := raft.NewMemoryStorage()
		if err := st.ApplySnapshot(&pb.Snapshot{Metadata: &pb.SnapshotMetadata{
			Index: u64(1), Term: u64(1), ConfState: &pb.ConfState{Voters: voters},
		}}); err != nil {
			tb.Fatal(err)
		}
		rn, err := raft.NewRawNode(&raft.Config{
			ID: uint64(i + 1), ElectionTick: 10, HeartbeatTick: 1, Storage: st,
			MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256,
			PreVote: true, CheckQuorum: true, Logger: nopLogger{},
		})
		if err != nil {
			tb.Fatal(err)
		}
		c.nodes[i] = node{rn: rn, st: st}
	}
	return c
}

// ready handles node id's Ready until it has none: persist the hard state
// and entries, queue the messages, advance.
func (c *cluster) ready(id uint64) {
	nd := &c.nodes[id-1]
	for nd.rn.HasReady() {
		rd := nd.rn.Ready()
		if !raft.IsEmptyHardState(rd.HardState) {
			_ = nd.st.SetHardState(rd.HardState)
		}
		if !raft.IsEmptySnap(rd.Snapshot) {
			_ = nd.st.ApplySnapshot(rd.Snapshot)
		}
		if len(rd.Entries) > 0 {
			_ = nd.st.Append(rd.Entries)
		}
		c.queue = append(c.queue, rd.Messages...)
		nd.rn.Advance(rd)
	}
}

// wire is m as the receiving end of a transport gets it: a freshly decoded
// message. With v3.7.0's pointer protobufs, decoding allocates the message
// and every field that is set; the host pays that for every message it
// receives, so the benchmarks do too (kraft's events and v3.6.0's messages
// are plain values). The encoding itself is not measured.
func wire(m *pb.Message) *pb.Message {
	w := &pb.Message{}
	if m.Type != nil {
		w.Type = m.GetType().Enum()
	}
	w.To = u64p(m.To)
	w.From = u64p(m.From)
	w.Term = u64p(m.Term)
	w.LogTerm = u64p(m.LogTerm)
	w.Index = u64p(m.Index)
	w.Commit = u64p(m.Commit)
	w.Vote = u64p(m.Vote)
	w.RejectHint = u64p(m.RejectHint)
	if m.Reject != nil {
		r := m.GetReject()
		w.Reject = &r
	}
	if len(m.Entries) > 0 {
		w.Entries = make([]*pb.Entry, len(m.Entries))
		for i, e := range m.Entries {
			we := &pb.Entry{Term: u64p(e.Term), Index: u64p(e.Index)}
			if e.Type != nil {
				we.Type = e.GetType().Enum()
			}
			if len(e.Data) > 0 {
				we.Data = append([]byte(nil), e.Data...)
			}
			w.Entries[i] = we
		}
	}
	if len(m.Context) > 0 {
		w.Context = append([]byte(nil), m.Context...)
	}
	w.Snapshot = m.Snapshot // only in MsgSnap, never sent here
	return w
}

func u64p(p *uint64) *uint64 {
	if p == nil {
		return nil
	}
	return u64(*p)
}

func (c *cluster) deliverAll(tb testing.TB) {
	for i := 0; c.head < len(c.queue); i++ {
		if i > 10000 {
			tb.Fatal("message storm")
		}
		m := c.queue[c.head]
		c.head++
		_ = c.nodes[m.GetTo()-1].rn.Step(wire(m))
		c.ready(m.GetTo())
	}
	c.queue, c.head = c.queue[:0], 0
}

// elect makes node 1 campaign (pre-vote, vote), and delivers messages until
// none is left: the leader's empty entry is appended, acknowledged,
// committed, and the commit index sent to every follower.
func (c *cluster) elect(tb testing.TB) {
	_ = c.nodes[0].rn.Campaign()
	c.ready(1)
	c.deliverAll(tb)
	lead := c.nodes[0].rn.BasicStatus()
	if lead.RaftState != raft.StateLeader || lead.GetCommit() != 2 {
		tb.Fatalf("no leader: %+v", lead)
	}
	for i := range c.nodes {
		if st := c.nodes[i].rn.BasicStatus(); st.Lead != 1 || st.GetCommit() != 2 {
			tb.Fatalf("node %d: %+v", i+1, st)
		}
	}
}

// BenchmarkLeaderAck: a leader in steady state handles a follower's no-op
// MsgAppResp (the follower acknowledges the index it had already
// acknowledged), then its Ready if any.
func BenchmarkLeaderAck(b *testing.B) {
	for _, n := range []int{3, 5, 7} {
		b.Run(fmt.Sprintf("voters=%d", n), func(b *testing.B) {
			c := newCluster(b, n)
			c.elect(b)
			st := c.nodes[0].rn.BasicStatus()
			term, index := st.GetTerm(), st.GetCommit()
			lead := c.nodes[0].rn
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// As a transport decodes it (see wire).
				m := &pb.Message{Type: pb.MsgAppResp.Enum(), From: u64(2), To: u64(1), Term: u64(term), Index: u64(index)}
				_ = lead.Step(m)
				if lead.HasReady() {
					c.ready(1)
				}
			}
			b.StopTimer()
			if len(c.queue) != 0 {
				b.Fatalf("a no-op MsgAppResp produced messages: %v", c.queue)
			}
		})
	}
}

// BenchmarkRoundTrip: a heartbeat round trip in steady state: the follower
// handles MsgHeartbeat and its Ready (which carries MsgHeartbeatResp), the
// leader handles MsgHeartbeatResp and its Ready if any.
func BenchmarkRoundTrip(b *testing.B) {
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("voters=%d", n), func(b *testing.B) {
			c := newCluster(b, n)
			c.elect(b)
			st := c.nodes[0].rn.BasicStatus()
			term, commit := st.GetTerm(), st.GetCommit()
			lead, follower := c.nodes[0].rn, c.nodes[1].rn
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// As a transport decodes it (see wire).
				hb := &pb.Message{Type: pb.MsgHeartbeat.Enum(), From: u64(1), To: u64(2), Term: u64(term), Commit: u64(commit)}
				_ = follower.Step(hb)
				c.ready(2)
				if len(c.queue) != 1 || c.queue[0].GetType() != pb.MsgHeartbeatResp {
					b.Fatalf("no heartbeat response: %v", c.queue)
				}
				resp := c.queue[0]
				c.queue = c.queue[:0]
				_ = lead.Step(wire(resp))
				if lead.HasReady() {
					c.ready(1)
				}
				if len(c.queue) != 0 {
					b.Fatalf("a heartbeat response produced messages: %v", c.queue)
				}
			}
		})
	}
}

// BenchmarkElection: a fresh n-voter cluster (storage and RawNode for every
// voter) elects node 1 with pre-vote and check-quorum, until the leader's
// first entry is committed and every follower knows it.
func BenchmarkElection(b *testing.B) {
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("voters=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c := newCluster(b, n)
				c.elect(b)
			}
		})
	}
}
