package kraft_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/kraftquorum/kraft"
)

// node is a minimal host for one replica, kept in memory: the durable
// quorum-state record, the log (the epoch of each record), the armed timers
// and the messages waiting to be sent. A real host writes the record and the
// log to disk (with fsync), sends messages over the network and runs real
// timers; the order of the work is the same.
type node struct {
	id      kraft.NodeID
	state   kraft.State
	record  *kraft.QuorumRecord // the last Persist; nil before the first
	log     []kraft.Epoch       // log[i] is the epoch of the record at offset i
	timers  map[kraft.Timer]time.Duration
	outbox  []kraft.Action // Send* actions, in order
	pending []kraft.Event  // events the host owes the state (LogAppended, LogFlushed)
	// round counts RoleChanged actions. A networked host tags each request
	// with it and drops responses to requests of an older round.
	round int
	// fetched are the records (their epochs) of the Fetch response being
	// stepped, and fetchedAt the offset they start at.
	fetched   []kraft.Epoch
	fetchedAt int64
}

// startNode builds a replica from what survived on disk: the last record
// (nil if none) and the log.
func startNode(cfg kraft.Config, record *kraft.QuorumRecord, log []kraft.Epoch) (*node, error) {
	n := &node{id: cfg.Local.ID, log: append([]kraft.Epoch(nil), log...), timers: map[kraft.Timer]time.Duration{}}
	s, acts, err := kraft.NewState(cfg, record, logState(log))
	if err != nil {
		return nil, err
	}
	n.state = s
	n.apply(acts)
	n.drain()
	return n, nil
}

// step feeds one event to the replica and carries out everything that
// follows from it.
func (n *node) step(e kraft.Event) {
	n.pending = append(n.pending, e)
	n.drain()
}

func (n *node) drain() {
	for len(n.pending) > 0 {
		e := n.pending[0]
		n.pending = n.pending[1:]
		var acts []kraft.Action
		n.state, acts = kraft.Step(n.state, e)
		n.apply(acts)
	}
}

// apply carries out one step's actions, in order.
func (n *node) apply(acts []kraft.Action) {
	for _, a := range acts {
		switch a := a.(type) {
		case kraft.Persist:
			// Write the record and fsync before anything after it.
			rec := a.Record
			n.record = &rec
		case kraft.ResetTimer:
			n.timers[a.Timer] = a.After // replaces any pending arming
		case kraft.StopTimer:
			delete(n.timers, a.Timer)
		case kraft.AppendLeaderChange:
			n.write(a.Epoch)
		case kraft.TruncateLog:
			n.log = n.log[:a.To]
		case kraft.AppendFetched:
			// The state took the Fetch response's records: append them at
			// the log end, report them, then step Then (docs/design.md
			// D240). Records that start elsewhere are dropped; a real host
			// sends its latest Fetch again.
			if n.fetchedAt == a.Offset {
				n.write(n.fetched...)
				n.pending = append(n.pending, a.Then)
			}
		case kraft.HighWatermarkChanged:
			fmt.Printf("node %d: high watermark %d\n", n.id, a.HighWatermark)
		case kraft.RoleChanged:
			n.round++
			fmt.Printf("node %d: %v -> %v in epoch %d (%s)\n", n.id, a.From, a.To, a.Epoch, a.Reason)
		case kraft.Fault:
			fmt.Printf("fault: %s\n", a.Reason) // a real host stops here
		case kraft.LeaderRefused:
			fmt.Printf("node %d refuses leader %d of epoch %d: %s\n", n.id, a.LeaderID, a.Epoch, a.Reason)
		default:
			n.outbox = append(n.outbox, a) // a message: send it
		}
	}
}

// fire delivers the timeout of timer t if t is armed. A timer fires once
// per arming; a later ResetTimer replaces the pending arming.
func (n *node) fire(t kraft.Timer) {
	if _, armed := n.timers[t]; !armed {
		return
	}
	delete(n.timers, t)
	n.step(t.Timeout())
}

// receiveFetchResponse steps a Fetch response that carries records (their
// epochs), starting at offset at: Records tells the state they are there,
// and it answers AppendFetched if it takes them.
func (n *node) receiveFetchResponse(e kraft.ReceiveFetchResponse, at int64, records []kraft.Epoch) {
	e.Records = len(records) > 0
	n.fetched, n.fetchedAt = records, at
	n.step(e)
	n.fetched = nil
}

// appendRecord appends one record as the leader and reports it.
func (n *node) appendRecord() {
	n.write(n.state.Epoch())
	n.drain()
}

// write appends records (by epoch) to the log and queues their reports:
// LogAppended once written, one per epoch run, then LogFlushed once durable.
// This in-memory host flushes at once; a disk host reports LogFlushed when
// its fsync returns.
func (n *node) write(epochs ...kraft.Epoch) {
	for i, e := range epochs {
		n.log = append(n.log, e)
		if i == len(epochs)-1 || epochs[i+1] != e {
			n.pending = append(n.pending, kraft.LogAppended{End: n.logEnd()})
		}
	}
	n.pending = append(n.pending, kraft.LogFlushed{Offset: int64(len(n.log))})
}

func (n *node) logEnd() kraft.LogEnd {
	if len(n.log) == 0 {
		return kraft.LogEnd{}
	}
	return kraft.LogEnd{Offset: int64(len(n.log)), Epoch: n.log[len(n.log)-1]}
}

// logState describes a log for NewState: its end and the first offset of
// each epoch.
func logState(log []kraft.Epoch) kraft.LogState {
	var ls kraft.LogState
	for i, e := range log {
		if i == 0 || e != log[i-1] {
			ls.Epochs = append(ls.Epochs, kraft.EpochStart{Epoch: e, StartOffset: int64(i)})
		}
	}
	if len(log) > 0 {
		ls.End = kraft.LogEnd{Offset: int64(len(log)), Epoch: log[len(log)-1]}
	}
	return ls
}

func voters(ids ...kraft.NodeID) []kraft.ReplicaKey {
	keys := make([]kraft.ReplicaKey, len(ids))
	for i, id := range ids {
		keys[i] = kraft.ReplicaKey{ID: id}
	}
	return keys
}

// describe prints an action on one line.
func describe(a kraft.Action) string {
	s := fmt.Sprintf("%T %+v", a, a)
	s = strings.TrimPrefix(s, "kraft.")
	return strings.Replace(s, " ClusterID:{UUID:00000000-0000-0000-0000-000000000000 Valid:false}", "", 1)
}

func ExampleNewState() {
	cfg := kraft.Config{
		Local:  kraft.ReplicaKey{ID: 1},
		Voters: voters(1, 2, 3),
		Seed:   1,
	}
	// Nothing stored yet: no record, an empty log.
	s, acts, err := kraft.NewState(cfg, nil, kraft.LogState{})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Role(), s.Epoch(), s.Leader())
	for _, a := range acts {
		fmt.Println(describe(a))
	}
	// Output:
	// Unattached 0 -1
	// Persist {Record:{Epoch:0 LeaderID:-1 VotedKey:-1}}
	// ResetTimer {Timer:election After:1.089888969s}
}

// Example_threeVoterElection routes messages between three replicas by hand.
// Replica 1's election timer fires; it wins the pre-vote and the vote, and
// the others follow it.
func Example_threeVoterElection() {
	nodes := map[kraft.NodeID]*node{}
	ids := []kraft.NodeID{1, 2, 3}
	for _, id := range ids {
		n, err := startNode(kraft.Config{Local: kraft.ReplicaKey{ID: id}, Voters: voters(ids...), Seed: uint64(id)}, nil, nil)
		if err != nil {
			panic(err)
		}
		nodes[id] = n
	}
	nodes[1].fire(kraft.ElectionTimer)

	// The network delivers messages in order until none is left. For each
	// Fetch a leader answers, its host remembers the request's fetch offset
	// and high watermark, to attach records to the response or to hold it;
	// the follower's host steps the response with its records
	// (receiveFetchResponse).
	type fetch struct{ offset, hwm int64 }
	fetches := map[kraft.NodeID]fetch{}
	for busy := true; busy; {
		busy = false
		for _, from := range ids {
			out := nodes[from].outbox
			nodes[from].outbox = nil
			for _, a := range out {
				busy = true
				to, e := message(from, a)
				dst, ok := nodes[to]
				if !ok {
					continue
				}
				var records []kraft.Epoch
				switch a := a.(type) {
				case kraft.SendFetch:
					fetches[from] = fetch{offset: a.FetchOffset, hwm: a.HighWatermark}
				case kraft.SendFetchResponse:
					if a.Error == kraft.ErrNone && a.Diverging == nil {
						records = nodes[from].log[fetches[to].offset:]
						if len(records) == 0 && a.HighWatermark <= fetches[to].hwm {
							// Nothing new: a real host parks the request
							// (long poll) and steps it again later.
							continue
						}
					}
				}
				fmt.Printf("%d -> %d %s\n", from, to, strings.TrimPrefix(fmt.Sprintf("%T", e), "kraft.Receive"))
				if r, ok := e.(kraft.ReceiveFetchResponse); ok {
					dst.receiveFetchResponse(r, fetches[to].offset, records)
				} else {
					dst.step(e)
				}
			}
		}
	}
	for _, id := range ids {
		fmt.Println(id, nodes[id].state)
	}
	// Output:
	// node 1: Unattached -> Prospective in epoch 0 (election timeout)
	// 1 -> 2 VoteRequest
	// 1 -> 3 VoteRequest
	// 2 -> 1 VoteResponse
	// node 1: Prospective -> Candidate in epoch 1 (won pre-vote)
	// 3 -> 1 VoteResponse
	// 1 -> 2 VoteRequest
	// node 2: Unattached -> Unattached in epoch 1 (vote request with a newer epoch)
	// 1 -> 3 VoteRequest
	// node 3: Unattached -> Unattached in epoch 1 (vote request with a newer epoch)
	// 2 -> 1 VoteResponse
	// node 1: Candidate -> Leader in epoch 1 (won election)
	// 3 -> 1 VoteResponse
	// 1 -> 2 BeginQuorumEpoch
	// node 2: Unattached -> Follower in epoch 1 (BeginQuorumEpoch)
	// 1 -> 3 BeginQuorumEpoch
	// node 3: Unattached -> Follower in epoch 1 (BeginQuorumEpoch)
	// 2 -> 1 Fetch
	// 3 -> 1 Fetch
	// 1 -> 2 FetchResponse
	// 1 -> 3 FetchResponse
	// 2 -> 1 Fetch
	// node 1: high watermark 1
	// 3 -> 1 Fetch
	// 1 -> 2 FetchResponse
	// node 2: high watermark 1
	// 1 -> 3 FetchResponse
	// node 3: high watermark 1
	// 2 -> 1 Fetch
	// 3 -> 1 Fetch
	// 1 Leader epoch=1 leader=1 hwm=1 log=1@1
	// 2 Follower epoch=1 leader=1 voted=1 hwm=1 log=1@1
	// 3 Follower epoch=1 leader=1 voted=1 hwm=1 log=1@1
}

// message turns an action of replica from into the event its addressee
// steps: what the wire carries, field by field (docs/wire-mapping.md).
func message(from kraft.NodeID, a kraft.Action) (kraft.NodeID, kraft.Event) {
	switch a := a.(type) {
	case kraft.SendVoteRequest:
		return a.To.ID, kraft.ReceiveVoteRequest{
			From: from, ClusterID: a.ClusterID,
			VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
			CandidateEpoch: a.CandidateEpoch,
			Candidate:      a.Candidate.ID, CandidateDirectoryID: a.Candidate.DirectoryID,
			CandidateLogEnd: a.CandidateLogEnd, PreVote: a.PreVote,
		}
	case kraft.SendVoteResponse:
		return a.To, kraft.ReceiveVoteResponse{From: from, Error: a.Error, Epoch: a.Epoch, VoteGranted: a.VoteGranted, LeaderID: a.LeaderID}
	case kraft.SendBeginQuorumEpoch:
		return a.To.ID, kraft.ReceiveBeginQuorumEpoch{
			From: from, ClusterID: a.ClusterID, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
			VoterID: a.To.ID, VoterDirectoryID: a.To.DirectoryID,
		}
	case kraft.SendFetch:
		return a.To, kraft.ReceiveFetch{
			From: from, ClusterID: a.ClusterID, CurrentLeaderEpoch: a.CurrentLeaderEpoch,
			FetchEpoch: a.FetchEpoch, FetchOffset: a.FetchOffset,
		}
	case kraft.SendFetchResponse:
		return a.To, kraft.ReceiveFetchResponse{
			From: from, Error: a.Error, LeaderID: a.LeaderID, LeaderEpoch: a.Epoch,
			HighWatermark: a.HighWatermark, Diverging: a.Diverging,
		}
	}
	// BeginQuorumEpoch and EndQuorumEpoch responses have no event of their
	// own (docs/wire-mapping.md); this example drops them.
	return kraft.NoNode, nil
}

// Example_restartFormerLeader restarts a replica whose last record names it
// leader of epoch 5. It comes back Resigned and tells the other voters with
// EndQuorumEpoch and an empty successor list.
func Example_restartFormerLeader() {
	cfg := kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: voters(1, 2, 3), Seed: 1}
	record := kraft.QuorumRecord{Epoch: 5, LeaderID: 1, VotedKey: kraft.NoReplica}
	log := kraft.LogState{
		End:    kraft.LogEnd{Offset: 10, Epoch: 5},
		Epochs: []kraft.EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 5, StartOffset: 4}},
	}
	s, acts, err := kraft.NewState(cfg, &record, log)
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	for _, a := range acts {
		fmt.Println(describe(a))
	}
	// Output:
	// Resigned epoch=5 leader=1 hwm=-1 log=10@5
	// Persist {Record:{Epoch:5 LeaderID:1 VotedKey:-1}}
	// ResetTimer {Timer:election After:1.089888969s}
	// SendEndQuorumEpoch {To:2 Epoch:5 LeaderID:1 PreferredSuccessors:[]}
	// SendEndQuorumEpoch {To:3 Epoch:5 LeaderID:1 PreferredSuccessors:[]}
}

// Example_hostLoop runs a single-voter quorum with the node host above: it
// elects itself, commits records, crashes and restarts from its record and
// log.
func Example_hostLoop() {
	cfg := kraft.Config{Local: kraft.ReplicaKey{ID: 7}, Voters: voters(7), Seed: 42}
	n, err := startNode(cfg, nil, nil)
	if err != nil {
		panic(err)
	}
	n.appendRecord()
	n.appendRecord()
	fmt.Println(n.state)

	// Crash: only the record and the log survive.
	fmt.Println("restart")
	n, err = startNode(cfg, n.record, n.log)
	if err != nil {
		panic(err)
	}
	n.appendRecord()
	fmt.Println(n.state, n.log)
	// Output:
	// node 7: Unattached -> Prospective in epoch 0 (only voter)
	// node 7: Prospective -> Candidate in epoch 1 (won pre-vote)
	// node 7: Candidate -> Leader in epoch 1 (won election)
	// node 7: high watermark 1
	// node 7: high watermark 2
	// node 7: high watermark 3
	// Leader epoch=1 leader=7 hwm=3 log=3@1
	// restart
	// node 7: Resigned -> Prospective in epoch 1 (only voter)
	// node 7: Prospective -> Candidate in epoch 2 (won pre-vote)
	// node 7: Candidate -> Leader in epoch 2 (won election)
	// node 7: high watermark 4
	// node 7: high watermark 5
	// Leader epoch=2 leader=7 hwm=5 log=5@2 [1 1 1 2 2]
}

// StepInto steps through a Buffer the host keeps for the replica's life, so
// that a running quorum's steps allocate nothing. The actions of a step
// live in the Buffer until the next step: carry them out (a type switch
// copies each value out) before stepping again.
func ExampleStepInto() {
	cfg := kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}, Seed: 1}
	s, _, err := kraft.NewState(cfg, nil, kraft.LogState{})
	if err != nil {
		panic(err)
	}
	var buf kraft.Buffer
	for _, e := range []kraft.Event{
		kraft.ElectionTimeout{},
		kraft.ReceiveVoteResponse{From: 2, Epoch: 0, LeaderID: kraft.NoNode, VoteGranted: true},
	} {
		var acts []kraft.Action
		s, acts = kraft.StepInto(&buf, s, e)
		for _, a := range acts {
			switch a := a.(type) {
			case kraft.RoleChanged:
				fmt.Printf("%v -> %v in epoch %d\n", a.From, a.To, a.Epoch)
			case kraft.SendVoteRequest:
				fmt.Printf("vote request to %d (pre-vote %v)\n", a.To.ID, a.PreVote)
			}
		}
	}
	fmt.Println(s.Role(), s.Epoch())
	// Output:
	// Unattached -> Prospective in epoch 0
	// vote request to 2 (pre-vote true)
	// vote request to 3 (pre-vote true)
	// Prospective -> Candidate in epoch 1
	// vote request to 2 (pre-vote false)
	// vote request to 3 (pre-vote false)
	// Candidate 1
}
