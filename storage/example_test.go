package storage_test

import (
	"fmt"
	"io"
	"os"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// Example restarts a replica from its directory: it reads the quorum-state
// file and the log, builds the state, persists a record, appends and
// syncs, and reports the append and the flush to the state.
func Example() {
	dir, err := os.MkdirTemp("", "kraft-storage-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()

	// A previous run left a vote for node 1 in epoch 3, and a log.
	qs := storage.QuorumStatePath(dir)
	if err := storage.WriteQuorumState(qs, kraft.QuorumRecord{Epoch: 3, LeaderID: 1, VotedKey: kraft.NoReplica}); err != nil {
		fmt.Println(err)
		return
	}
	if err := seedLog(dir); err != nil {
		fmt.Println(err)
		return
	}

	// Restart.
	rec, err := storage.ReadQuorumState(qs)
	if err != nil {
		fmt.Println(err)
		return
	}
	log, recovery, err := storage.Open(dir, storage.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = log.Close() }()
	fmt.Printf("recovered %d records, dropped %d bytes\n", recovery.Records, recovery.DroppedBytes)

	cfg := kraft.Config{
		Local:  kraft.ReplicaKey{ID: 2},
		Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}},
		Seed:   2,
	}
	s, acts, err := kraft.NewState(cfg, rec, log.State())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range acts {
		if p, ok := a.(kraft.Persist); ok {
			if err := storage.WriteQuorumState(qs, p.Record); err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	fmt.Printf("%v in epoch %d, leader %d, log end %+v\n", s.Role(), s.Epoch(), s.Leader(), s.LogEnd())

	// Records fetched from the leader: append them, report them, sync,
	// report the flush.
	fetched := []storage.Entry{
		{Offset: log.End().Offset, Epoch: 3, Data: []byte("c")},
		{Offset: log.End().Offset + 1, Epoch: 3, Data: []byte("d")},
	}
	if _, err := log.AppendEntries(fetched...); err != nil {
		fmt.Println(err)
		return
	}
	for _, ev := range storage.AppendedEvents(fetched) {
		s, _ = kraft.Step(s, ev)
	}
	flushed, err := storage.Flush(log)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ = kraft.Step(s, flushed)
	fmt.Printf("log end %+v, flushed %d\n", s.LogEnd(), s.FlushedOffset())

	// Output:
	// recovered 3 records, dropped 0 bytes
	// Follower in epoch 3, leader 1, log end {Offset:3 Epoch:3}
	// log end {Offset:5 Epoch:3}, flushed 5
}

// seedLog writes the log of the previous run: two records of epoch 1 and
// one of epoch 3.
func seedLog(dir string) error {
	log, _, err := storage.Open(dir, storage.Options{})
	if err != nil {
		return err
	}
	if _, err := log.Append(1, []byte("a"), []byte("b")); err != nil {
		return err
	}
	if _, err := log.Append(3, []byte("leader change")); err != nil {
		return err
	}
	if err := log.Sync(); err != nil {
		return err
	}
	return log.Close()
}

// ExampleSnapshots takes a snapshot of a log's first records and deletes
// them from the log, serves the snapshot in chunks, and installs it on a
// follower whose log it replaces.
func ExampleSnapshots() {
	dir, err := os.MkdirTemp("", "kraft-snapshot-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}

	// The leader: five records, and a snapshot of the state after the
	// first four (it ends at offset 4; the record at 3 has epoch 2).
	log, _, err := storage.Open(dir+"/leader", storage.Options{})
	must(err)
	defer func() { _ = log.Close() }()
	_, err = log.Append(1, []byte("a"), []byte("b"))
	must(err)
	_, err = log.Append(2, []byte("c"), []byte("d"), []byte("e"))
	must(err)
	snaps, err := storage.OpenSnapshots(dir + "/leader")
	must(err)
	defer func() { _ = snaps.Close() }()
	id := kraft.LogEnd{Offset: 4, Epoch: 2}
	w, err := snaps.Create(id)
	must(err)
	defer func() { _ = w.Abort() }() // does nothing once frozen
	_, err = w.Write([]byte("state after a b c d"))
	must(err)
	must(w.Freeze())
	// Once the snapshot is durable, the records it covers can go.
	must(log.DeleteBefore(id.Offset))
	must(snaps.DeleteBefore(id))
	fmt.Printf("leader: snapshots %v, log start %+v, end %+v\n", snaps.List(), log.Start(), log.End())

	// The follower fetches the snapshot in chunks (FetchSnapshot).
	fsnaps, err := storage.OpenSnapshots(dir + "/follower")
	must(err)
	defer func() { _ = fsnaps.Close() }()
	fw, err := fsnaps.Create(id)
	must(err)
	size, err := snaps.Size(id)
	must(err)
	for fw.Size() < size {
		chunk, err := snaps.Read(id, fw.Size(), 8)
		must(err)
		must(fw.Append(chunk))
	}
	must(fw.Freeze())
	// Its log restarts at the snapshot's end; the next fetch is from there.
	flog, _, err := storage.Open(dir+"/follower", storage.Options{})
	must(err)
	defer func() { _ = flog.Close() }()
	must(flog.ResetTo(id))
	r, err := fsnaps.Open(id)
	must(err)
	state, err := io.ReadAll(r)
	must(err)
	must(r.Close())
	fmt.Printf("follower: %q, log start %d, end %+v\n", state, flog.StartOffset(), flog.End())

	// Output:
	// leader: snapshots [{4 2}], log start {Offset:4 Epoch:2}, end {Offset:5 Epoch:2}
	// follower: "state after a b c d", log start 4, end {Offset:4 Epoch:2}
}
