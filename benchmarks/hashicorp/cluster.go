package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/kraftquorum/kraft/storage"
)

// voters is the size of every cluster, all in one process: three unless
// -voters says otherwise (one voter puts a single writer on the disk,
// the one-writer limit's setting; see limit).
var voters = 3

// leaderWait bounds the wait for a first leader (and for a new one after
// an append failed).
const leaderWait = 30 * time.Second

// cluster is the voters of one library in this process.
type cluster interface {
	// append appends rec at the leader and returns once it is committed
	// (kraft: Node.Append; hashicorp: Apply(...).Error(), which also
	// waits for the leader's FSM).
	append(rec []byte) error
	// relead finds the leader again after append failed.
	relead() error
	// close stops every voter, its transport and storage, and removes
	// the cluster's directories.
	close() error
}

// startCluster starts the voters of lib ("kraft" or "hashicorp"),
// durable or in memory, with their directories under tmp, and waits until
// one leads and has committed a first record.
func startCluster(lib string, durable bool, tmp string) (cluster, error) {
	switch lib {
	case "kraft":
		return startKraft(durable, tmp)
	case "hashicorp":
		return startHashicorp(durable, tmp)
	}
	return nil, fmt.Errorf("unknown library %q", lib)
}

// kraftCluster runs kraft's runtime (package node).
type kraftCluster struct {
	nodes []*node.Node
	dir   string

	mu     sync.Mutex
	leader *node.Node
}

func startKraft(durable bool, tmp string) (c *kraftCluster, err error) {
	c = &kraftCluster{}
	defer func() {
		if err != nil {
			_ = c.close()
			c = nil
		}
	}()
	if durable {
		if c.dir, err = os.MkdirTemp(tmp, "kraft-"); err != nil {
			return c, err
		}
	}
	keys := make([]kraft.ReplicaKey, voters)
	for i := range keys {
		keys[i] = kraft.ReplicaKey{ID: kraft.NodeID(i + 1)}
	}
	transports := make([]node.Transport, voters)
	if durable {
		tcps := make([]*node.TCPTransport, voters)
		for i, k := range keys {
			t, err := node.NewTCPTransport(node.TCPConfig{ID: k.ID, Listen: "127.0.0.1:0"})
			if err != nil {
				for _, t := range tcps[:i] {
					_ = t.Close()
				}
				return c, err
			}
			tcps[i], transports[i] = t, t
		}
		for i, t := range tcps {
			for j, o := range tcps {
				if i != j {
					t.SetPeer(keys[j].ID, o.Addr().String())
				}
			}
		}
	} else {
		mem := node.NewMemNetwork()
		for i, k := range keys {
			transports[i] = mem.Endpoint(k.ID) // DefaultMemBuffer

		}
	}
	for i, k := range keys {
		var (
			log     storage.Log
			records node.RecordStore
		)
		if durable {
			dir := filepath.Join(c.dir, strconv.Itoa(int(k.ID)))
			fl, _, err := storage.Open(dir, storage.Options{})
			if err != nil {
				closeTransports(transports[i:])
				return c, err
			}
			log, records = fl, node.FileRecords{Path: storage.QuorumStatePath(dir)}
		} else {
			log, records = storage.NewMemLog(), &node.MemRecords{}
		}
		n, err := node.Start(node.Config{Config: replica.Config{Kraft: kraft.Config{Local: k, Voters: keys, Seed: uint64(k.ID)},
			Log:     log,
			Records: records}, Transport: transports[i],
			OnCommit: func([]node.Record) {}, // no-op state machine
			// hashicorp's FSM.Apply gets its log's records as they are;
			// kraft's OnCommit too (a MemLog's; a FileLog reads copies).
			ShareCommitted: true,
		})
		if err != nil {
			_ = log.Close()
			closeTransports(transports[i:])
			return c, err
		}
		c.nodes = append(c.nodes, n)
	}
	return c, c.relead()
}

func closeTransports(ts []node.Transport) {
	for _, t := range ts {
		if t != nil {
			_ = t.Close()
		}
	}
}

func (c *kraftCluster) relead() error {
	deadline := time.Now().Add(leaderWait)
	for time.Now().Before(deadline) {
		for _, n := range c.nodes {
			if _, err := n.Append(context.Background(), []byte("warm-up")); err == nil {
				c.mu.Lock()
				c.leader = n
				c.mu.Unlock()
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("kraft: no leader")
}

func (c *kraftCluster) append(rec []byte) error {
	c.mu.Lock()
	l := c.leader
	c.mu.Unlock()
	_, err := l.Append(context.Background(), rec)
	return err
}

func (c *kraftCluster) close() error {
	var first error
	for _, n := range c.nodes {
		if err := n.Close(); err != nil && first == nil {
			first = err
		}
	}
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// hashiCluster runs hashicorp/raft.
type hashiCluster struct {
	rafts      []*raft.Raft
	transports []raft.Transport
	bolts      []*raftboltdb.BoltStore
	dir        string

	mu     sync.Mutex
	leader *raft.Raft
}

// nopFSM is hashicorp's state machine: it does nothing.
type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) interface{}         { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (nopFSM) Restore(r io.ReadCloser) error       { return r.Close() }

type nopSnapshot struct{}

func (nopSnapshot) Persist(s raft.SnapshotSink) error { return s.Close() }
func (nopSnapshot) Release()                          {}

func startHashicorp(durable bool, tmp string) (c *hashiCluster, err error) {
	c = &hashiCluster{}
	defer func() {
		if err != nil {
			_ = c.close()
			c = nil
		}
	}()
	if durable {
		if c.dir, err = os.MkdirTemp(tmp, "hashicorp-"); err != nil {
			return c, err
		}
	}
	var servers []raft.Server
	if durable {
		for i := 0; i < voters; i++ {
			t, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 3, 10*time.Second, hclog.NewNullLogger())
			if err != nil {
				return c, err
			}
			c.transports = append(c.transports, t)
		}
	} else {
		var mems []*raft.InmemTransport
		for i := 0; i < voters; i++ {
			_, t := raft.NewInmemTransport("")
			mems = append(mems, t)
			c.transports = append(c.transports, t)
		}
		for i, t := range mems {
			for j, o := range mems {
				if i != j {
					t.Connect(o.LocalAddr(), o)
				}
			}
		}
	}
	for i, t := range c.transports {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(strconv.Itoa(i + 1)), Address: t.LocalAddr()})
	}
	configuration := raft.Configuration{Servers: servers}
	for i, t := range c.transports {
		conf := raft.DefaultConfig()
		conf.LocalID = servers[i].ID
		conf.Logger = hclog.NewNullLogger()
		var (
			logs   raft.LogStore
			stable raft.StableStore
			snaps  raft.SnapshotStore
		)
		if durable {
			dir := filepath.Join(c.dir, strconv.Itoa(i+1))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return c, err
			}
			b, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
			if err != nil {
				return c, err
			}
			c.bolts = append(c.bolts, b)
			fs, err := raft.NewFileSnapshotStoreWithLogger(dir, 1, hclog.NewNullLogger())
			if err != nil {
				return c, err
			}
			logs, stable, snaps = b, b, fs
		} else {
			s := raft.NewInmemStore()
			logs, stable, snaps = s, s, raft.NewInmemSnapshotStore()
		}
		if err := raft.BootstrapCluster(conf, logs, stable, snaps, t, configuration); err != nil {
			return c, err
		}
		r, err := raft.NewRaft(conf, nopFSM{}, logs, stable, snaps, t)
		if err != nil {
			return c, err
		}
		c.rafts = append(c.rafts, r)
	}
	return c, c.relead()
}

func (c *hashiCluster) relead() error {
	deadline := time.Now().Add(leaderWait)
	for time.Now().Before(deadline) {
		for _, r := range c.rafts {
			if r.State() != raft.Leader {
				continue
			}
			if err := r.Apply([]byte("warm-up"), 0).Error(); err == nil {
				c.mu.Lock()
				c.leader = r
				c.mu.Unlock()
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("hashicorp: no leader")
}

func (c *hashiCluster) append(rec []byte) error {
	c.mu.Lock()
	l := c.leader
	c.mu.Unlock()
	return l.Apply(rec, 0).Error()
}

func (c *hashiCluster) close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, r := range c.rafts {
		keep(r.Shutdown().Error())
	}
	for _, t := range c.transports {
		if nt, ok := t.(*raft.NetworkTransport); ok {
			// Close leaves the pooled connections open, and the peers'
			// goroutines reading them.
			nt.CloseStreams()
		}
		if cl, ok := t.(io.Closer); ok {
			keep(cl.Close())
		}
	}
	for _, b := range c.bolts {
		keep(b.Close())
	}
	if c.dir != "" {
		keep(os.RemoveAll(c.dir))
	}
	return first
}
