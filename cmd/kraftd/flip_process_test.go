//go:build unix

package main

import (
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/kraftquorum/kraft/storage"
)

// Real-process disk fault injection (docs/design.md D90): three kraftd
// processes, appends acknowledged and recorded, and then, again and again,
// the schedule that lost every acknowledged record before the recovery
// point existed: one replica (the laggard) is killed, more appends are
// acknowledged by the other two, both are killed with SIGKILL, a byte at a
// random offset of a random file of one of them (the victim) is flipped,
// the victim and the laggard are started first (with the damage taken for
// a torn tail, the two of them elect a leader without the new records),
// then the third. The victim either recovers (the flip hit nothing that
// was made durable: a torn tail, a checksummed slot that has a twin,
// padding) or refuses to start with a message that names the damage and
// says what to do; in a static quorum the test then does what the message
// says (restores the directory from the copy taken when it stopped), in a
// dynamic quorum kraftd moves the damaged data aside and rejoins as a
// replaced disk by itself (D91). At the end every acknowledged append must
// be at its offset in every log (so on a majority), and the logs agree
// below the high watermark.

// TestProcessDiskFlips: a static quorum, 3 flips (KRAFTD_FLIPS=N: N),
// seeded by KRAFTD_FLIPS_SEED (default: the clock; the seed is logged).
func TestProcessDiskFlips(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	runFlips(t, false, flipCount(t, 3))
}

// TestProcessDiskFlipsDynamic: the same with a dynamic quorum whose
// replicas run with -auto-join, 2 flips (KRAFTD_FLIPS=N: N).
func TestProcessDiskFlipsDynamic(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process test: skipped with -short")
	}
	runFlips(t, true, flipCount(t, 2))
}

func flipCount(t *testing.T, def int) int {
	s := os.Getenv("KRAFTD_FLIPS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "KRAFTD_FLIPS")
	return n
}

// flipDirIDs are the dynamic quorum's bootstrap directory ids.
var flipDirIDs = []string{"", "6a0f3c52-1b7e-4d89-a2c4-5e9f8b7d1c01", "6a0f3c52-1b7e-4d89-a2c4-5e9f8b7d1c02", "6a0f3c52-1b7e-4d89-a2c4-5e9f8b7d1c03"}

func runFlips(t *testing.T, dynamic bool, flips int) {
	seed := time.Now().UnixNano()
	if s := os.Getenv("KRAFTD_FLIPS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "KRAFTD_FLIPS_SEED")
	}
	t.Logf("%d flips, dynamic %v: KRAFTD_FLIPS_SEED=%d replays the choices", flips, dynamic, seed)
	rng := rand.New(rand.NewSource(seed))
	bin := buildKraftd(t)
	c := newCluster(t, bin, 3)
	if dynamic {
		var initial []string
		for _, id := range c.ids {
			initial = append(initial, fmt.Sprintf("%d:%s@%s", id, flipDirIDs[id], c.procs[id].raft))
		}
		for _, id := range c.ids {
			p := c.procs[id]
			p.args = append([]string{"-id", strconv.Itoa(id), "-dir", p.dir, "-http", p.http, "-cluster-id", testClusterID,
				"-initial-voters", strings.Join(initial, ","), "-auto-join"}, testTimeouts...)
		}
	}
	// KRAFTD_FLIPS_SNAPSHOT_EVERY=N: the processes snapshot every N
	// offsets, so that flips hit snapshot files and the log start
	// checkpoint too; the final check then sees only the records past
	// each log's start (and that the state machines agree).
	snapshotEvery := 0
	if s := os.Getenv("KRAFTD_FLIPS_SNAPSHOT_EVERY"); s != "" {
		var err error
		snapshotEvery, err = strconv.Atoi(s)
		require.NoError(t, err, "KRAFTD_FLIPS_SNAPSHOT_EVERY")
		for _, id := range c.ids {
			c.procs[id].args = append(c.procs[id].args, "-snapshot-every", s)
		}
		t.Logf("snapshots every %d offsets", snapshotEvery)
	}
	c.startAll()
	c.waitLeader(15 * time.Second)
	cl := startClient(c, 2)
	if _, ok := cl.waitAck(time.Now().Add(-time.Minute), 0, 15*time.Second); !ok {
		c.fatalf("no append was acknowledged within 15s")
	}

	dirIDs := append([]string(nil), flipDirIDs...) // each replica's, by id
	outcomes := map[string]map[string]int{}        // file kind -> outcome -> count
	note := func(kind, outcome string) {
		if outcomes[kind] == nil {
			outcomes[kind] = map[string]int{}
		}
		outcomes[kind][outcome]++
	}
	began := time.Now()
	for i := 1; i <= flips; i++ {
		perm := rng.Perm(3)
		laggard, victim, third := c.ids[perm[0]], c.ids[perm[1]], c.ids[perm[2]]
		c.waitLeader(20 * time.Second)
		c.procs[laggard].kill()
		// Appends the laggard does not have, acknowledged by the other two.
		since := time.Now()
		for n := 0; n < 5; n++ {
			a, ok := cl.waitAck(since, 0, 20*time.Second)
			if !ok {
				c.fatalf("flip %d: no append acknowledged within 20s with %d down", i, laggard)
			}
			since = a.sent
		}
		time.Sleep(time.Duration(rng.Intn(200)) * time.Millisecond)
		if rng.Intn(2) == 0 {
			c.procs[victim].kill()
			c.procs[third].kill()
		} else {
			c.procs[third].kill()
			c.procs[victim].kill()
		}
		v := c.procs[victim]
		backup := filepath.Join(t.TempDir(), "backup")
		require.NoError(t, copyTree(v.dir, backup))
		// The first flip hits a segment, the file whose damage loses
		// acknowledged records, so that even a short run has one.
		what, kind := flipByte(t, v.dir, rng, i == 1)

		v.start()
		c.procs[laggard].start()
		refused, text := startOutcome(t, v, 20*time.Second)
		outcome := "recovered"
		switch {
		case refused && dynamic:
			c.fatalf("flip %d: kraftd %d refused to start in a dynamic quorum after %s:\n%s", i, victim, what, text)
		case refused:
			outcome = "refused"
			requireClearRefusal(t, what, text)
			// What the message says to do: restore the directory from a
			// copy taken while the replica was stopped.
			require.NoError(t, os.RemoveAll(v.dir))
			require.NoError(t, copyTree(backup, v.dir))
			v.start()
			if again, text := startOutcome(t, v, 20*time.Second); again {
				c.fatalf("flip %d: kraftd %d refused to start from the restored copy:\n%s", i, victim, text)
			}
		case strings.Contains(text, "moved the damaged data aside"):
			outcome = "replaced"
			requireClearReplacement(t, what, text)
		}
		var newKey string
		if dynamic {
			var vb votersBody
			require.Eventually(t, func() bool { return getJSON(v.http+"/voters", &vb) == nil }, 10*time.Second, 10*time.Millisecond)
			newKey = uuid.UUID(vb.Local.DirectoryID).String()
			if (outcome == "replaced") == (newKey == dirIDs[victim]) {
				c.fatalf("flip %d: kraftd %d %s, and its directory id went from %s to %s", i, victim, outcome, dirIDs[victim], newKey)
			}
		}
		note(kind, outcome)
		t.Logf("flip %d: laggard %d, victim %d: %s: %s", i, laggard, victim, what, outcome)
		c.procs[third].start()
		c.waitAllCaughtUp(30 * time.Second)
		if dynamic {
			// A replaced disk is a voter again under its new key, and
			// its old key is gone from the voter set.
			dirIDs[victim] = newKey
			for _, id := range c.ids {
				waitVoterIDs(t, c, id, 1, 2, 3)
				waitVoterKeys(t, c, id, dirIDs)
			}
		}
	}
	elapsed := time.Since(began)

	cl.stop()
	final := c.waitConverged(30 * time.Second)
	hwm := final[c.ids[0]].HighWatermark
	if snapshotEvery > 0 {
		waitSameState(t, c)
	}
	c.stopAll()
	acks := cl.acknowledged()
	if snapshotEvery > 0 {
		checkLogsPastStart(t, c, acks, hwm)
	} else {
		checkLogs(t, c, acks, hwm)
	}

	var kinds []string
	total := map[string]int{}
	for k := range outcomes {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n  %-40s", k)
		for _, o := range []string{"recovered", "refused", "replaced"} {
			if n := outcomes[k][o]; n > 0 {
				fmt.Fprintf(&b, " %s %d", o, n)
				total[o] += n
			}
		}
	}
	checked := "0 lost"
	if snapshotEvery > 0 {
		checked = "those past the log starts all there"
	}
	t.Logf("%d flips in %v (dynamic %v, KRAFTD_FLIPS_SEED=%d): recovered %d, refused %d, replaced %d; %d appends acknowledged, %s; high watermark %d; by file:%s",
		flips, elapsed.Round(time.Second), dynamic, seed, total["recovered"], total["refused"], total["replaced"], len(acks), checked, hwm, b.String())
}

// checkLogsPastStart is checkLogs for logs that start past 0: every
// acknowledged append at or past a log's start is at its offset there, and
// the logs agree from the highest start to hwm.
func checkLogsPastStart(t *testing.T, c *cluster, acks []ack, hwm int64) {
	t.Helper()
	type logView struct {
		start int64
		es    []storage.Entry
	}
	logs := map[int]logView{}
	var top int64
	for _, id := range c.ids {
		l, _, err := storage.Open(filepath.Join(c.procs[id].dir, "log"), storage.Options{})
		require.NoError(t, err, "opening node %d's log", id)
		v := logView{start: l.StartOffset()}
		for {
			batch, err := l.Read(v.start+int64(len(v.es)), 1<<20)
			require.NoError(t, err, "reading node %d's log", id)
			if len(batch) == 0 {
				break
			}
			v.es = append(v.es, batch...)
		}
		require.NoError(t, l.Close())
		logs[id] = v
		if v.start > top {
			top = v.start
		}
	}
	checked := 0
	for _, a := range acks {
		for _, id := range c.ids {
			v := logs[id]
			if a.offset < v.start {
				continue
			}
			checked++
			i := a.offset - v.start
			if i >= int64(len(v.es)) || !isData(v.es[i], a.payload) {
				t.Errorf("LOST ACKNOWLEDGED APPEND: %q, acknowledged by node %d at offset %d, is not there in node %d's log [%d, %d)",
					a.payload, a.from, a.offset, id, v.start, v.start+int64(len(v.es)))
			}
		}
	}
	for off := top; off < hwm; off++ {
		var first storage.Entry
		for i, id := range c.ids {
			v := logs[id]
			if off-v.start >= int64(len(v.es)) {
				t.Fatalf("node %d's log ends at %d, below the high watermark %d", id, v.start+int64(len(v.es)), hwm)
			}
			e := v.es[off-v.start]
			if i == 0 {
				first = e
			} else if e.Epoch != first.Epoch || string(e.Data) != string(first.Data) {
				t.Fatalf("DIVERGENT LOGS at offset %d: node %d has %s, node %d has %s", off, c.ids[0], describe(first), id, describe(e))
			}
		}
	}
	t.Logf("checked %d acknowledged appends past the log starts (%d, %d, %d)", checked, logs[1].start, logs[2].start, logs[3].start)
}

// waitVoterKeys waits until process id's GET /voters shows voters 1 to 3
// with the directory ids dirIDs[1:].
func waitVoterKeys(t *testing.T, c *cluster, id int, dirIDs []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last votersBody
	for time.Now().Before(deadline) {
		var vb votersBody
		if err := getJSON(c.procs[id].http+"/voters", &vb); err == nil {
			last = vb
			found := 0
			for _, v := range vb.Voters {
				if int(v.ID) < len(dirIDs) && uuid.UUID(v.DirectoryID).String() == dirIDs[v.ID] {
					found++
				}
			}
			if found == 3 && len(vb.Voters) == 3 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.fatalf("kraftd %d: voters with directory ids %v not within 20s (last %+v)", id, dirIDs[1:], last)
}

// flipByte XORs a byte at a random offset of a random non-empty file of
// dir (aside directories of damaged data left out) with a random non-zero
// mask, and says where; kind names the file for the figures. segment: a
// segment of the log.
func flipByte(t *testing.T, dir string, rng *rand.Rand, segment bool) (what, kind string) {
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), damagedPrefix) {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil && info.Size() > 0 {
				files = append(files, path)
			}
		}
		return nil
	}))
	sort.Strings(files)
	if segment {
		var segs []string
		for _, f := range files {
			if strings.HasSuffix(f, ".log") {
				segs = append(segs, f)
			}
		}
		files = segs
	}
	require.NotEmpty(t, files)
	path := files[rng.Intn(len(files))]
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	info, err := f.Stat()
	require.NoError(t, err)
	off := rng.Int63n(info.Size())
	mask := byte(1 + rng.Intn(255))
	b := make([]byte, 1)
	_, err = f.ReadAt(b, off)
	require.NoError(t, err)
	b[0] ^= mask
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	rel, _ := filepath.Rel(dir, path)
	kind = rel
	if strings.HasSuffix(rel, ".log") {
		kind = "log/segment"
	} else if strings.HasSuffix(rel, ".checkpoint") && strings.HasPrefix(rel, "snapshots") {
		kind = "snapshots/snapshot"
	}
	return fmt.Sprintf("%s byte %d of %d ^= %#02x", rel, off, info.Size(), mask), kind
}

var healthClient = &http.Client{Timeout: 500 * time.Millisecond}

// startOutcome waits until p, just started, serves HTTP (it recovered) or
// exits (it refused to start), and returns what it wrote to stderr since
// the start. A refusal is taken as expected: it does not fail the test.
func startOutcome(t *testing.T, p *proc, timeout time.Duration) (refused bool, stderr string) {
	t.Helper()
	p.mu.Lock()
	exited, n := p.exited, p.starts
	p.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			p.mu.Lock()
			p.unexpected, p.expectExit = "", true
			p.mu.Unlock()
			return true, stderrOfStart(t, p, n)
		default:
		}
		if resp, err := healthClient.Get("http://" + p.http + "/healthz"); err == nil {
			_ = resp.Body.Close()
			return false, stderrOfStart(t, p, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.dump()
	t.Fatalf("kraftd %d neither served HTTP nor exited within %v of its start", p.id, timeout)
	return false, ""
}

// stderrOfStart is what p wrote to stderr in its start n.
func stderrOfStart(t *testing.T, p *proc, n int) string {
	b, err := os.ReadFile(p.stderr)
	require.NoError(t, err)
	s := string(b)
	if i := strings.LastIndex(s, fmt.Sprintf("--- start %d at", n)); i >= 0 {
		s = s[i:]
	}
	return s
}

// requireClearRefusal: a refusal names the damage and says what to do.
func requireClearRefusal(t *testing.T, what, text string) {
	t.Helper()
	ok := strings.Contains(text, "is damaged") &&
		strings.Contains(text, "must not rejoin with it as it is") &&
		strings.Contains(text, "Restore the directory from a copy taken while the replica was stopped")
	require.True(t, ok, "after %s, kraftd refused to start without saying what is damaged and what to do:\n%s", what, text)
}

// requireClearReplacement: a replacement names the damage, where the data
// went and the new directory id.
func requireClearReplacement(t *testing.T, what, text string) {
	t.Helper()
	ok := strings.Contains(text, "is damaged") && strings.Contains(text, "moved the damaged data aside to") &&
		strings.Contains(text, "new directory id")
	require.True(t, ok, "after %s, kraftd replaced its data without saying why, where it went or its new directory id:\n%s", what, text)
}

// copyTree copies the regular files and directories of src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = in.Close() }()
		out, err := os.Create(to)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			_ = out.Close()
			return err
		}
		return out.Close()
	})
}
