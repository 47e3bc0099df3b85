package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kraftquorum/kraft/replica"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
	"github.com/stretchr/testify/require"
)

// snapOpts makes a testCluster's nodes keep snapshots in a directory each
// and run a testSM.
type snapOpts struct {
	every int64 // Config.SnapshotEvery
	chunk int   // Config.SnapshotChunkBytes
}

// testSM is an application: the list of data records it applied. Its
// snapshot is that list as JSON with the offset it ends at. It records
// what the node asked of it and every broken rule: a record at or below
// what it already holds, a snapshot of a state past its end, a restore
// whose content is not the id's.
type testSM struct {
	mu       sync.Mutex
	applied  []string
	next     int64 // the offset after the last record applied or restored
	restores []kraft.LogEnd
	order    []string // "restore OFFSET" and "commit FIRST" in call order
	errs     []string
}

type testSMSnapshot struct {
	Next    int64    `json:"next"`
	Applied []string `json:"applied"`
}

func (m *testSM) commit(rs []Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.order = append(m.order, fmt.Sprintf("commit %d", rs[0].Offset))
	for _, r := range rs {
		if r.Offset < m.next {
			m.errs = append(m.errs, fmt.Sprintf("record %d handed to a state that ends at %d", r.Offset, m.next))
		}
		m.applied = append(m.applied, string(r.Data))
		m.next = r.Offset + 1
	}
}

func (m *testSM) snapshot(upTo kraft.LogEnd, w io.Writer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next > upTo.Offset {
		m.errs = append(m.errs, fmt.Sprintf("snapshot up to %d of a state that ends at %d", upTo.Offset, m.next))
	}
	return json.NewEncoder(w).Encode(testSMSnapshot{Next: upTo.Offset, Applied: m.applied})
}

func (m *testSM) restore(id kraft.LogEnd, r io.Reader) error {
	var s testSMSnapshot
	if err := json.NewDecoder(r).Decode(&s); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s.Next != id.Offset {
		m.errs = append(m.errs, fmt.Sprintf("snapshot %+v holds a state up to %d", id, s.Next))
	}
	m.applied, m.next = s.Applied, id.Offset
	m.restores = append(m.restores, id)
	m.order = append(m.order, fmt.Sprintf("restore %d", id.Offset))
	return nil
}

func (m *testSM) view() (applied []string, restores []kraft.LogEnd, order, errs []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.applied...), append([]kraft.LogEnd(nil), m.restores...),
		append([]string(nil), m.order...), append([]string(nil), m.errs...)
}

// snapshotFiles lists the frozen snapshot files in dir.
func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), storage.SnapshotSuffix) {
			names = append(names, de.Name())
		}
	}
	return names
}

func newSnapshotCluster(t *testing.T, n int, o snapOpts) *testCluster { return newCluster(t, n, &o) }

// configureSnapshots gives node id its snapshot store and a fresh testSM
// (a restarted process has lost its state: Restore rebuilds it).
func (c *testCluster) configureSnapshots(id kraft.NodeID, cfg *Config) {
	snaps, err := storage.OpenSnapshots(c.snapDirs[id])
	require.NoError(c.t, err)
	sm := &testSM{}
	c.mu.Lock()
	c.sms[id] = sm
	c.mu.Unlock()
	cfg.Snapshots = snaps
	cfg.SnapshotEvery = c.snap.every
	cfg.SnapshotChunkBytes = c.snap.chunk
	cfg.Snapshot = sm.snapshot
	cfg.Restore = sm.restore
	cfg.Logf = c.t.Logf
	onCommit := cfg.OnCommit
	cfg.OnCommit = func(rs []Record) {
		onCommit(rs)
		sm.commit(rs)
	}
}

func (c *testCluster) sm(id kraft.NodeID) *testSM {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sms[id]
}

// waitStatus polls node id's Status until ok holds, and returns it.
func (c *testCluster) waitStatus(id kraft.NodeID, what string, ok func(Status) bool) Status {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := c.nodes[id].Status()
		require.NoError(c.t, err)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d: %s: not within 10s (status %+v)", id, what, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitApplied waits until node id's state machine holds want.
func (c *testCluster) waitApplied(id kraft.NodeID, want []string) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _, _, _ := c.sm(id).view()
		if len(got) >= len(want) || time.Now().After(deadline) {
			require.Equal(c.t, want, got, "node %d's applied state", id)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestNodeCatchesUpWithASnapshot: a follower is stopped; the others commit
// past several snapshots and delete their logs behind them; the follower
// restarts, is answered with the leader's snapshot, downloads it in small
// chunks, installs it (its log restarts at the snapshot), hands it to
// Restore and then takes the records after it: its state machine ends
// equal to the others'.
func TestNodeCatchesUpWithASnapshot(t *testing.T) {
	c := newSnapshotCluster(t, 3, snapOpts{every: 10, chunk: 64})
	var want []string
	for i := 0; i < 12; i++ {
		want = append(want, fmt.Sprintf("a%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	leader := c.leader().local.ID
	lagging := leader%3 + 1
	c.waitApplied(lagging, want)
	// The stopped node has a snapshot of its own, which the install
	// replaces: one it took, or, if it lagged behind the leader's log
	// start under load, one it installed already.
	old := c.waitStatus(lagging, "a snapshot", func(st Status) bool { return st.LatestSnapshot != nil }).LatestSnapshot
	c.crash(lagging)

	for round := 1; round <= 3; round++ {
		for i := 0; i < 20; i++ {
			want = append(want, fmt.Sprintf("b%d", len(want)))
			c.appendCommitted(want[len(want)-1])
		}
		for id := range c.nodes {
			c.waitStatus(id, fmt.Sprintf("%d snapshots taken", round), func(st Status) bool { return st.SnapshotsTaken >= round })
		}
	}
	for id := range c.nodes {
		c.waitApplied(id, want)
		st := c.waitStatus(id, "the log cleaned", func(st Status) bool { return st.LogStart > 40 })
		require.NotNil(t, st.LatestSnapshot)
		require.Equal(t, st.LatestSnapshot.Offset, st.LogStart, "node %d: the log starts at its latest snapshot", id)
		// On the loop, the state's log start is the log's.
		nd := c.nodes[id]
		var stateStart, logStart int64
		require.NoError(t, nd.call(func() { stateStart, logStart = nd.st.LogStart(), nd.cfg.Log.StartOffset() }))
		require.Equal(t, stateStart, logStart, "node %d: the log was cleaned", id)
		// The store is the node's: its directory is read, not opened. (A
		// snapshot being taken may add a file for a moment.)
		dir := c.snapDirs[id]
		require.Eventually(t, func() bool { return len(snapshotFiles(t, dir)) == 1 }, 5*time.Second, 5*time.Millisecond,
			"node %d: older snapshots deleted", id)
	}
	leader = c.leader().local.ID
	require.Less(t, c.logs[lagging].End().Offset, c.logs[leader].StartOffset(), "the stopped node must need a snapshot")

	lagEnd := c.logs[lagging].End().Offset
	c.start(lagging)
	c.waitStatus(lagging, "a snapshot installed", func(st Status) bool { return st.SnapshotsInstalled >= 1 })
	for i := 0; i < 5; i++ {
		want = append(want, fmt.Sprintf("c%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	for _, v := range c.voters {
		c.waitApplied(v.ID, want)
		_, _, _, errs := c.sm(v.ID).view()
		require.Empty(t, errs, "node %d", v.ID)
	}
	_, restores, _, _ := c.sm(lagging).view()
	// Its own snapshot at start, then the installed one, past its log (or
	// two: the leader may take a newer snapshot during the download).
	require.GreaterOrEqual(t, len(restores), 2)
	require.Equal(t, kraft.LogEnd{Offset: old.Offset, Epoch: old.Epoch}, restores[0])
	installed := restores[len(restores)-1]
	require.Greater(t, restores[1].Offset, lagEnd)
	// The install reset the log: it starts at the snapshot (or a later one
	// the node took itself); its own older snapshot is gone.
	require.GreaterOrEqual(t, c.logs[lagging].StartOffset(), installed.Offset)
	dir := c.snapDirs[lagging]
	require.Eventually(t, func() bool { return len(snapshotFiles(t, dir)) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.NotContains(t, snapshotFiles(t, dir), storage.SnapshotFileName(kraft.LogEnd{Offset: old.Offset, Epoch: old.Epoch}))
}

// TestNodeDropsAnOvertakenSnapshot: a snapshot the application wrote
// that ends below the log start (an installed snapshot overtook it) is
// deleted, not reported: the state would take the report for a fault.
func TestNodeDropsAnOvertakenSnapshot(t *testing.T) {
	c := newSnapshotCluster(t, 1, snapOpts{every: 10})
	for i := 0; i < 12; i++ {
		c.appendCommitted(fmt.Sprintf("r%d", i))
	}
	st := c.waitStatus(1, "a snapshot", func(st Status) bool { return st.LogStart >= 10 })
	nd := c.nodes[1]
	stale := kraft.LogEnd{Offset: 5, Epoch: 1}
	w, err := nd.cfg.Snapshots.Create(stale)
	require.NoError(t, err)
	require.NoError(t, w.Freeze())
	require.NoError(t, nd.call(func() { nd.r.SnapshotTaken(nd.clock(), stale); nd.carry() }))
	require.NoError(t, nd.Err())
	require.NotContains(t, snapshotFiles(t, c.snapDirs[1]), storage.SnapshotFileName(stale))
	after, err := nd.Status()
	require.NoError(t, err)
	require.Equal(t, st.LogStart, after.LogStart)
}

// TestNodeRestartsFromSnapshotAndLog: a replica that took snapshots and
// cleaned its log crashes and restarts: Restore gets the latest snapshot
// on disk first, then OnCommit the records after it, from the log; the
// state is whole.
func TestNodeRestartsFromSnapshotAndLog(t *testing.T) {
	c := newSnapshotCluster(t, 1, snapOpts{every: 10})
	var want []string
	for i := 0; i < 25; i++ {
		want = append(want, fmt.Sprintf("r%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	c.waitApplied(1, want)
	c.waitStatus(1, "a snapshot", func(st Status) bool { return st.SnapshotsTaken >= 1 && st.LogStart >= 10 })
	for i := 0; i < 3; i++ {
		want = append(want, fmt.Sprintf("t%d", i))
		c.appendCommitted(want[len(want)-1])
	}
	c.waitApplied(1, want)
	c.crash(1)

	snaps, err := storage.OpenSnapshots(c.snapDirs[1])
	require.NoError(t, err)
	latest, ok := snaps.Latest()
	require.NoError(t, snaps.Close())
	require.True(t, ok)
	start, end := c.logs[1].StartOffset(), c.logs[1].End().Offset
	// Usually the log holds records after the latest snapshot; a crash
	// right after a snapshot was frozen leaves it unreported: the log
	// still starts at the one before (the restart takes both).
	require.LessOrEqual(t, start, latest.Offset)
	require.LessOrEqual(t, latest.Offset, end)
	t.Logf("crashed with the log [%d, %d) and the latest snapshot %+v", start, end, latest)

	c.start(1)
	// Start returns once the latest snapshot is restored: nothing the
	// loop does (an installed snapshot) can come before it.
	_, restores, _, _ := c.sm(1).view()
	require.Equal(t, []kraft.LogEnd{latest}, restores, "Restore of the latest snapshot before Start returns")
	st := c.waitStatus(1, "restarted at its snapshot", func(st Status) bool { return st.Role == "Leader" })
	require.Equal(t, start, st.LogStart)
	require.Equal(t, &SnapshotID{Offset: latest.Offset, Epoch: latest.Epoch}, st.LatestSnapshot)
	want = append(want, "after")
	c.appendCommitted("after")
	c.waitApplied(1, want)
	_, restores, order, errs := c.sm(1).view()
	require.Empty(t, errs)
	require.Equal(t, []kraft.LogEnd{latest}, restores)

	// A Restore that fails at Start fails Start.
	c.crash(1)
	cfg := Config{Config: replica.Config{Kraft: c.kraftConfig(1), Log: c.logs[1], Records: c.records[1]}, Transport: c.net.Endpoint(1)}
	c.configureSnapshots(1, &cfg)
	cfg.OnCommit = func([]Record) {}
	cfg.Restore = func(kraft.LogEnd, io.Reader) error { return errors.New("bad state") }
	nd, err := Start(cfg)
	require.Nil(t, nd)
	require.ErrorContains(t, err, "bad state")
	require.NoError(t, cfg.Snapshots.Close())
	require.Equal(t, fmt.Sprintf("restore %d", latest.Offset), order[0], "Restore goes before any OnCommit")
	if latest.Offset < end {
		require.Equal(t, fmt.Sprintf("commit %d", latest.Offset), order[1], "OnCommit goes on from the snapshot end, from the log")
	}
}

// TestNodeSnapshotConfig: the snapshot callbacks need the store, Restore
// and an interval.
func TestNodeSnapshotConfig(t *testing.T) {
	snaps, err := storage.OpenSnapshots(t.TempDir())
	require.NoError(t, err)
	defer func() { require.NoError(t, snaps.Close()) }()
	base := Config{Config: replica.Config{Log: storage.NewMemLog(), Records: &MemRecords{}}, Transport: NewMemNetwork().Endpoint(1)}
	snap := func(kraft.LogEnd, io.Writer) error { return nil }
	restore := func(kraft.LogEnd, io.Reader) error { return nil }
	commit := func([]Record) {}
	for name, f := range map[string]func(c *Config){
		"Snapshot without Snapshots": func(c *Config) { c.Snapshot, c.Restore, c.SnapshotEvery = snap, restore, 5 },
		"Restore without Snapshots":  func(c *Config) { c.Restore = restore },
		"OnCommit without Restore":   func(c *Config) { c.Snapshots, c.OnCommit = snaps, commit },
		"Snapshot without Restore":   func(c *Config) { c.Snapshots, c.Snapshot, c.SnapshotEvery = snaps, snap, 5 },
		"Snapshot without interval":  func(c *Config) { c.Snapshots, c.Snapshot, c.Restore = snaps, snap, restore },
		"negative interval":          func(c *Config) { c.SnapshotEvery = -1 },
		"chunk over a frame":         func(c *Config) { c.SnapshotChunkBytes = MaxFrameSize },
	} {
		c := base
		f(&c)
		_, err := c.withDefaults()
		require.Error(t, err, name)
	}
	c := base
	c.Snapshots, c.OnCommit, c.Snapshot, c.Restore, c.SnapshotEvery = snaps, commit, snap, restore, 5
	c, err = c.withDefaults()
	require.NoError(t, err)
	require.Equal(t, DefaultSnapshotChunkBytes, c.SnapshotChunkBytes)
}

// TestNodeKeepsASnapshotWhileItIsDownloaded: a snapshot the node served a
// FetchSnapshot chunk of within the fetch timeout is not deleted when it
// takes a newer one (the README's host contract: keep a snapshot while it
// is downloaded); the log start stays at it, and the downloader's next
// chunk is served. The hold ends when the fetch timeout passes without a
// chunk, the last chunk included (D210): the log is then cleaned up to the
// latest snapshot without waiting for the next one. A replica that is
// not in the quorum asks through the in-memory network, which refuses what
// the codec refuses as TCP does (D145); the node's clock is a test clock.
func TestNodeKeepsASnapshotWhileItIsDownloaded(t *testing.T) {
	c := newSnapshotCluster(t, 1, snapOpts{every: 10, chunk: 8})
	nd := c.nodes[1]
	var clock time.Time
	require.NoError(t, nd.call(func() {
		clock = time.Now()
		nd.now = func() time.Time { return clock }
	}))
	appended := 0
	appendN := func(n int) {
		for i := 0; i < n; i++ {
			appended++
			c.appendCommitted(fmt.Sprintf("r%d", appended))
		}
	}
	snapshotID := func(st Status) kraft.LogEnd {
		return kraft.LogEnd{Offset: st.LatestSnapshot.Offset, Epoch: st.LatestSnapshot.Epoch}
	}
	peer := c.net.Endpoint(9)
	var corr uint64
	fetchChunk := func(epoch kraft.Epoch, id kraft.LogEnd, pos int64) kraft.ReceiveFetchSnapshotResponse {
		t.Helper()
		corr++
		peer.Send(Message{From: 9, To: 1, Corr: corr, Event: kraft.ReceiveFetchSnapshot{
			From: 9, CurrentLeaderEpoch: epoch, Snapshot: id, Position: pos,
		}})
		select {
		case m := <-peer.Inbox():
			r, ok := m.Event.(kraft.ReceiveFetchSnapshotResponse)
			require.True(t, ok, "a FetchSnapshot response, not %T", m.Event)
			require.Equal(t, corr, m.Corr)
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("no FetchSnapshot response")
			return kraft.ReceiveFetchSnapshotResponse{}
		}
	}

	appendN(12)
	st := c.waitStatus(1, "a snapshot", func(st Status) bool { return st.SnapshotsTaken >= 1 && st.LogStart > 0 })
	first := snapshotID(st)
	require.Equal(t, first.Offset, st.LogStart)
	r := fetchChunk(st.Epoch, first, 0)
	require.Equal(t, kraft.ErrNone, r.Error)
	require.EqualValues(t, 8, r.Bytes)
	require.Greater(t, r.Size, int64(24), "a download of several chunks")

	// A newer snapshot within the fetch timeout of the chunk: the first
	// is kept, the log is not cleaned past it, and its next chunk is served.
	appendN(10)
	st = c.waitStatus(1, "a second snapshot", func(st Status) bool { return st.SnapshotsTaken >= 2 })
	second := snapshotID(st)
	require.Greater(t, second.Offset, first.Offset)
	require.Equal(t, first.Offset, st.LogStart, "the log start stays at the snapshot being downloaded")
	require.Contains(t, snapshotFiles(t, c.snapDirs[1]), storage.SnapshotFileName(first))
	require.Equal(t, kraft.ErrNone, fetchChunk(st.Epoch, first, 8).Error, "the download goes on")

	// The fetch timeout passes without a chunk: the log is cleaned up to
	// the second snapshot and the first is deleted, with no new snapshot.
	require.NoError(t, nd.call(func() { clock = clock.Add(200 * time.Millisecond) }))
	st = c.waitStatus(1, "the log cleaned once the hold lapsed", func(st Status) bool { return st.LogStart == second.Offset })
	require.Equal(t, 2, st.SnapshotsTaken)
	require.Eventually(t, func() bool { return len(snapshotFiles(t, c.snapDirs[1])) == 1 }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, kraft.ErrSnapshotNotFound, fetchChunk(st.Epoch, first, 16).Error)

	// A download of the second snapshot holds the log start through a
	// third snapshot until its last chunk is served.
	r = fetchChunk(st.Epoch, second, 0)
	require.Equal(t, kraft.ErrNone, r.Error)
	appendN(10)
	st = c.waitStatus(1, "a third snapshot", func(st Status) bool { return st.SnapshotsTaken >= 3 })
	third := snapshotID(st)
	require.Equal(t, second.Offset, st.LogStart)
	for pos := r.Bytes; pos < r.Size; {
		require.Equal(t, second.Offset, c.waitStatus(1, "", func(Status) bool { return true }).LogStart)
		next := fetchChunk(st.Epoch, second, pos)
		require.Equal(t, kraft.ErrNone, next.Error)
		pos += next.Bytes
	}
	// The last chunk renews the hold too (D210): the follower installs
	// the snapshot and fetches from its end, which stays in the log until
	// the hold lapses.
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, second.Offset, c.waitStatus(1, "", func(Status) bool { return true }).LogStart,
		"the log start stays at the downloaded snapshot after its last chunk")
	require.NoError(t, nd.call(func() { clock = clock.Add(200 * time.Millisecond) }))
	c.waitStatus(1, "the log cleaned once the hold after the download lapsed", func(st Status) bool { return st.LogStart == third.Offset })
}
