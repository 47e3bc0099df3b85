package storage

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// errCrashed is what every operation of a crashFS returns once the
// simulated process has died.
var errCrashed = errors.New("crashfs: process died")

// crashFS is a fileSystem over real files that models what a machine crash
// keeps. The real files hold what the operating system would show (the
// page cache); crashFS also tracks, per file, the content as of its last
// fsync and the writes since, and per directory the entries as of its last
// fsync and the changes since. It dies at its budget-th mutating operation
// (that operation fails, a write possibly half done, and every later one
// fails too); crash then rewrites the real files as a crash at that moment
// could have left them, choosing with a seeded generator among: any prefix
// of the unsynced operations of each file (the last write possibly torn or
// ending in garbage, earlier ones possibly lost to a hole of zeros), and any
// prefix of the unsynced changes of each directory.
type crashFS struct {
	mu      sync.Mutex
	budget  int // mutating operations left before dying; <0: never dies
	ops     int // mutating operations done
	dead    bool
	rng     *rand.Rand
	inodes  map[int]*inode
	nextIno int
	live    map[string]int     // path -> inode, as the process sees it
	durable map[string]int     // path -> inode, as a crash would keep it
	dirOps  map[string][]dirOp // directory -> changes since its last fsync
	// beforeSync, if set, runs at the start of each file fsync, without
	// the lock: a test can act while an fsync is under way.
	beforeSync func()
}

type inode struct {
	data    []byte   // content as the process sees it
	durable []byte   // content as of the last fsync
	pending []fileOp // changes since the last fsync
}

// fileOp is a write (data at off) or, with data nil, a truncation to off.
type fileOp struct {
	off  int64
	data []byte
}

type dirOp struct {
	kind     byte // 'c' create, 'r' remove, 'm' rename (move)
	path, to string
	ino      int
}

// newCrashFS returns a crashFS that dies at its budget-th mutating
// operation (never if budget < 0). The files already in dirs are durable.
func newCrashFS(budget int, seed int64, dirs ...string) (*crashFS, error) {
	c := &crashFS{
		budget: budget, rng: rand.New(rand.NewSource(seed)),
		inodes: map[int]*inode{}, live: map[string]int{}, durable: map[string]int{}, dirOps: map[string][]dirOp{},
	}
	for _, dir := range dirs {
		names, err := readDirNames(dir)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			p := filepath.Join(dir, name)
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			c.nextIno++
			c.inodes[c.nextIno] = &inode{data: b, durable: append([]byte(nil), b...)}
			c.live[p], c.durable[p] = c.nextIno, c.nextIno
		}
	}
	return c, nil
}

// step counts a mutating operation. ok is false when the process is dead;
// dying is true for the operation it dies in.
func (c *crashFS) step() (ok, dying bool) {
	if c.dead {
		return false, false
	}
	c.ops++
	if c.budget == 0 {
		c.dead = true
		return false, true
	}
	if c.budget > 0 {
		c.budget--
	}
	return true, false
}

// alive counts a mutating operation and reports whether it may proceed.
func (c *crashFS) alive() bool {
	ok, _ := c.step()
	return ok
}

func (c *crashFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return nil, errCrashed
	}
	ino, exists := c.live[name]
	if !exists && flag&os.O_CREATE != 0 || exists && flag&os.O_TRUNC != 0 {
		if !c.alive() {
			return nil, errCrashed
		}
	}
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	switch {
	case !exists:
		c.nextIno++
		ino = c.nextIno
		c.inodes[ino] = &inode{}
		c.live[name] = ino
		dir := filepath.Dir(name)
		c.dirOps[dir] = append(c.dirOps[dir], dirOp{kind: 'c', path: name, ino: ino})
	case flag&os.O_TRUNC != 0:
		in := c.inodes[ino]
		in.data = in.data[:0]
		in.pending = append(in.pending, fileOp{off: 0})
	}
	return &crashFile{c: c, ino: ino, f: f}, nil
}

func (c *crashFS) Remove(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.alive() {
		return errCrashed
	}
	if err := os.Remove(name); err != nil {
		return err
	}
	delete(c.live, name)
	dir := filepath.Dir(name)
	c.dirOps[dir] = append(c.dirOps[dir], dirOp{kind: 'r', path: name})
	return nil
}

func (c *crashFS) Rename(oldName, newName string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.alive() {
		return errCrashed
	}
	if err := os.Rename(oldName, newName); err != nil {
		return err
	}
	c.live[newName] = c.live[oldName]
	delete(c.live, oldName)
	dir := filepath.Dir(newName)
	c.dirOps[dir] = append(c.dirOps[dir], dirOp{kind: 'm', path: oldName, to: newName})
	return nil
}

func (c *crashFS) ReadDir(dir string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return nil, errCrashed
	}
	return readDirNames(dir)
}

func (c *crashFS) MkdirAll(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.alive() {
		return errCrashed
	}
	return os.MkdirAll(dir, 0o755)
}

func (c *crashFS) SyncDir(dir string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.alive() {
		return errCrashed
	}
	for _, op := range c.dirOps[dir] {
		applyDirOp(c.durable, op)
	}
	delete(c.dirOps, dir)
	return nil
}

func applyDirOp(ns map[string]int, op dirOp) {
	switch op.kind {
	case 'c':
		ns[op.path] = op.ino
	case 'r':
		delete(ns, op.path)
	case 'm':
		if ino, ok := ns[op.path]; ok {
			ns[op.to] = ino
			delete(ns, op.path)
		}
	}
}

// restart lets a new process use the file system after the old one died,
// the machine still up: what the old one wrote is still in the cache, not
// necessarily durable.
func (c *crashFS) restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = false
	c.budget = -1
}

// powerLoss rewrites the real files in dirs as a power loss now leaves
// them when the disk keeps nothing it was not made to keep: each file as of
// its last fsync, each directory as of its last fsync.
func (c *crashFS) powerLoss(dirs ...string) error {
	c.mu.Lock()
	for _, in := range c.inodes {
		in.pending = nil
	}
	c.dirOps = map[string][]dirOp{}
	c.mu.Unlock()
	return c.crash(dirs...)
}

// crash rewrites the real files in dirs as a crash now could leave them.
func (c *crashFS) crash(dirs ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
	ns := map[string]int{}
	for p, ino := range c.durable {
		ns[p] = ino
	}
	var ds []string
	for d := range c.dirOps {
		ds = append(ds, d)
	}
	sort.Strings(ds)
	for _, d := range ds {
		ops := c.dirOps[d]
		for _, op := range ops[:c.rng.Intn(len(ops)+1)] {
			applyDirOp(ns, op)
		}
	}
	for _, dir := range dirs {
		names, err := readDirNames(dir)
		if err != nil {
			return err
		}
		for _, name := range names {
			p := filepath.Join(dir, name)
			if _, ok := ns[p]; ok {
				continue
			}
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	var paths []string
	for p := range ns {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		in := c.inodes[ns[p]]
		b := in.survivor(c.rng)
		if c.live[p] == ns[p] && bytes.Equal(b, in.data) {
			continue // the real file already holds it
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// survivor is the content of the file after a crash: the synced content
// and a prefix of the later operations, perhaps damaged.
func (in *inode) survivor(rng *rand.Rand) []byte {
	b := append([]byte(nil), in.durable...)
	k := rng.Intn(len(in.pending) + 1)
	mode := rng.Intn(4) // 0 clean, 1 torn last write, 2 garbage in last write, 3 holes
	for i, op := range in.pending[:k] {
		if op.data == nil {
			b = resize(b, op.off)
			continue
		}
		data := op.data
		if i == k-1 && len(data) > 0 {
			switch mode {
			case 1:
				data = data[:rng.Intn(len(data))]
			case 2:
				data = append([]byte(nil), data...)
				for j := rng.Intn(len(data)); j < len(data); j++ {
					data[j] = byte(rng.Intn(256))
				}
			}
		}
		if mode == 3 && i < k-1 && rng.Intn(2) == 0 {
			data = make([]byte, len(data))
		}
		b = writeAt(b, op.off, data)
	}
	return b
}

func resize(b []byte, n int64) []byte {
	if int64(len(b)) >= n {
		return b[:n]
	}
	return append(b, make([]byte, n-int64(len(b)))...)
}

func writeAt(b []byte, off int64, data []byte) []byte {
	if end := off + int64(len(data)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[off:], data)
	return b
}

// crashFile is a file of a crashFS.
type crashFile struct {
	c   *crashFS
	ino int
	f   *os.File
}

func (f *crashFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.mu.Lock()
	dead := f.c.dead
	f.c.mu.Unlock()
	if dead {
		return 0, errCrashed
	}
	return f.f.ReadAt(p, off)
}

func (f *crashFile) WriteAt(p []byte, off int64) (int, error) {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.inodes[f.ino]
	if ok, dying := c.step(); !ok {
		if dying && len(p) > 0 {
			// The write the process died in: some of it reached the cache.
			n := c.rng.Intn(len(p))
			_, _ = f.f.WriteAt(p[:n], off)
			in.data = writeAt(in.data, off, p[:n])
			in.pending = append(in.pending, fileOp{off: off, data: append([]byte(nil), p[:n]...)})
		}
		return 0, errCrashed
	}
	n, err := f.f.WriteAt(p, off)
	in.data = writeAt(in.data, off, p[:n])
	in.pending = append(in.pending, fileOp{off: off, data: append([]byte(nil), p[:n]...)})
	return n, err
}

func (f *crashFile) Truncate(size int64) error {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.alive() {
		return errCrashed
	}
	if err := f.f.Truncate(size); err != nil {
		return err
	}
	in := c.inodes[f.ino]
	in.data = resize(in.data, size)
	in.pending = append(in.pending, fileOp{off: size})
	return nil
}

func (f *crashFile) Sync() error {
	c := f.c
	if c.beforeSync != nil {
		c.beforeSync()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.alive() {
		return errCrashed
	}
	in := c.inodes[f.ino]
	in.durable = append(in.durable[:0:0], in.data...)
	in.pending = nil
	return nil
}

func (f *crashFile) Size() (int64, error) {
	st, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (f *crashFile) Close() error { return f.f.Close() }

// noSyncFS is the real file system without fsync: for reopening the
// results of crash tests quickly.
type noSyncFS struct{ osFS }

type noSyncFile struct{ File }

func (noSyncFile) Sync() error { return nil }

func (n noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := n.osFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }
