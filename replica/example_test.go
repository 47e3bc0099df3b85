package replica_test

import (
	"fmt"
	"sort"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/replica"
	"github.com/kraftquorum/kraft/storage"
)

// records keeps a quorum-state record in memory (a real host writes
// Kafka's quorum-state file and fsyncs it: storage.WriteQuorumState).
type records struct{ rec *kraft.QuorumRecord }

func (m *records) Read() (*kraft.QuorumRecord, error) { return m.rec, nil }
func (m *records) Write(r kraft.QuorumRecord) error   { m.rec = &r; return nil }

// host is everything a host of the replica layer does: it hands inputs to
// its Replica with the time, and carries out the outputs. Here the
// network is a list of messages in flight, the clock is simulated and a
// sync completes at once; a real host sends over TCP, syncs the log off
// its loop and sleeps on a timer until NextDeadline.
type host struct {
	r         *replica.Replica
	log       *storage.MemLog
	committed int64
}

type cluster struct {
	now   time.Duration
	hosts map[kraft.NodeID]*host
	net   []replica.Message // in flight, delivered in order 1 ms later
	syncs []kraft.NodeID    // the hosts whose log sync was asked for
}

func (c *cluster) carry(id kraft.NodeID) {
	h := c.hosts[id]
	for _, o := range h.r.Take() {
		switch o := o.(type) {
		case replica.Send:
			c.net = append(c.net, o.Message) // never looked into
		case replica.Sync:
			c.syncs = append(c.syncs, id)
		case replica.Commit:
			h.committed = o.HighWatermark
		case replica.RoleChange:
			if o.To == kraft.Leader {
				fmt.Printf("replica %d leads epoch %d\n", id, o.Epoch)
			}
		case replica.Stopped:
			panic(o.Err)
		}
	}
}

// step runs the cluster for 1 ms: messages sent before it are delivered,
// syncs complete, and every replica's due deadlines run.
func (c *cluster) step() {
	c.now += time.Millisecond
	msgs, syncs := c.net, c.syncs
	c.net, c.syncs = nil, nil
	for _, m := range msgs {
		if h, ok := c.hosts[m.To]; ok {
			h.r.Receive(c.now, m)
			c.carry(m.To)
		}
	}
	for _, id := range syncs {
		h := c.hosts[id]
		if err := h.log.Sync(); err != nil {
			panic(err)
		}
		h.r.Synced(c.now)
		c.carry(id)
	}
	for _, id := range c.ids() {
		if at, ok := c.hosts[id].r.NextDeadline(); ok && at <= c.now {
			c.hosts[id].r.Tick(c.now)
			c.carry(id)
		}
	}
}

func (c *cluster) ids() []kraft.NodeID {
	var ids []kraft.NodeID
	for id := range c.hosts {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (c *cluster) leader() (kraft.NodeID, bool) {
	for _, id := range c.ids() {
		if c.hosts[id].r.State().Role() == kraft.Leader {
			return id, true
		}
	}
	return kraft.NoNode, false
}

// Example: three replicas of a static quorum on a simulated network elect
// a leader, which commits a record on every replica.
func Example() {
	voters := []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}
	c := &cluster{hosts: map[kraft.NodeID]*host{}}
	for _, v := range voters {
		log := storage.NewMemLog()
		r, err := replica.New(replica.Config{
			Kraft: kraft.Config{Local: v, Voters: voters, Seed: uint64(v.ID),
				ElectionTimeout: 100 * time.Millisecond, FetchTimeout: 200 * time.Millisecond},
			Log: log, Records: &records{}, Static: true, FetchMaxWait: 40 * time.Millisecond,
		}, c.now)
		if err != nil {
			panic(err)
		}
		c.hosts[v.ID] = &host{r: r, log: log, committed: -1}
		c.carry(v.ID)
	}
	id, ok := c.leader()
	for ; !ok; id, ok = c.leader() {
		c.step()
	}
	end, err := c.hosts[id].r.Propose(c.now, replica.DataRecords([][]byte{[]byte("hello")}))
	if err != nil {
		panic(err)
	}
	c.carry(id)
	for _, other := range c.ids() {
		for c.hosts[other].committed < end.Offset {
			c.step()
		}
		es, _ := c.hosts[other].log.Read(end.Offset-1, 1<<20)
		fmt.Printf("replica %d committed %q at offset %d\n", other, es[0].Data[1:], es[0].Offset)
	}
	// Output:
	// replica 2 leads epoch 1
	// replica 1 committed "hello" at offset 1
	// replica 2 committed "hello" at offset 1
	// replica 3 committed "hello" at offset 1
}
