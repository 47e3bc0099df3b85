// Package simdisk is a simulated disk: an in-memory storage.FS with the
// faults real disks have, for simulators and tests that run package
// storage's real code (FileLog, the quorum-state and snapshot stores, a data
// directory's recovery) rather than a kinder model of it.
//
// The model follows the file-system crash studies (ALICE, OSDI'14; CTRL,
// FAST'18):
//
//   - A write reaches the page cache at once (reads see it) and the media
//     only at the file's next fsync. A directory entry (a create, a rename,
//     a remove, a new directory) is durable only once its directory is
//     fsynced (SyncDir). A file's data and its name are separate: a file
//     fsynced but never named durably is lost at a power loss.
//   - A power loss (Crash) keeps, for each file, its synced content and a
//     prefix of the writes since, the last of them torn at sector
//     granularity (any subset of its 512-byte sectors); for each directory,
//     its synced entries and a prefix of the changes since.
//   - A process death (Kill) keeps everything in the page cache: only the
//     open files are gone.
//   - Faults the disk itself makes, injected by the caller or drawn with
//     Faults' rates: a lost write (acknowledged, cached, never written to
//     the media: it shows once the cache is dropped, by a crash or
//     DropCache), a misdirected write (written to the media one sector
//     off), a bit flip in data on the media (FlipBit), and ENOSPC past a
//     capacity. Slow fsyncs are the caller's: OnSync is told of every
//     fsync, and a simulator with a virtual clock decides how long it takes.
//
// Everything is deterministic: the same calls on a disk made with the same
// seed give the same results, byte for byte.
package simdisk

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/kraftquorum/kraft/storage"
)

// SectorSize is the unit a torn write keeps or loses whole, and the
// distance a misdirected write lands off.
const SectorSize = 512

// ErrDead is what every operation returns once the process that opened the
// disk has died (Kill, Crash, or the operation DieAfter chose), until
// Restart.
var ErrDead = errors.New("simdisk: the process died")

// Faults are the rates at which the disk damages writes on its own, each
// drawn per write from the disk's seeded generator. Zero: never.
type Faults struct {
	// LostWrite: the write is acknowledged and cached but never reaches
	// the media (which keeps its old content; a write past the end leaves
	// zeros, the file's size being updated apart).
	LostWrite float64
	// MisdirectedWrite: the write reaches the media one sector after where
	// it was meant to go (the file grows if need be); the place it was
	// meant for keeps its old content.
	MisdirectedWrite float64
	// Max bounds the faults the disk makes on its own from SetFaults on
	// (0: no bound): a model of one fault at a time.
	Max int
}

// Stats counts what the disk was asked to do.
type Stats struct {
	Writes, BytesWritten     int64
	Syncs, DirSyncs          int64
	LostWrites, Misdirected  int64
	Crashes, Kills, Restarts int64
}

// Disk is a simulated disk; its zero value is not usable: call New.
type Disk struct {
	mu       sync.Mutex
	rng      *rand.Rand
	faults   Faults
	capacity int64 // 0: no limit

	inodes  map[int]*inode
	nextIno int
	live    map[string]entry // what the process sees: path -> entry
	durable map[string]entry // what a power loss keeps of the names
	dirOps  map[string][]*dirOp

	seq      int  // of the last dirOp
	gen      int  // bumped by Kill and Crash: older handles are dead
	dead     bool // the process died; Restart
	budget   int  // mutating operations left before dying; < 0: never
	stats    Stats
	made     int // faults made since SetFaults
	onSync   func(path string)
	liveSize int64
}

// entry is a name: a file (ino > 0) or a directory (ino == 0).
type entry struct{ ino int }

func (e entry) isDir() bool { return e.ino == 0 }

type inode struct {
	data    []byte   // as the process sees it (the page cache)
	media   []byte   // on the media: synced content, and lost or misdirected writes' effects
	pending []fileOp // written since the last fsync, not on the media yet
}

// fileOp is a write (data at off) or, with data nil, a truncation to off.
type fileOp struct {
	off         int64
	data        []byte
	lost        bool   // never reaches the media
	misdirected bool   // reaches the media one sector off
	torn        []bool // at a power loss: the sectors kept (nil: all)
}

type dirOp struct {
	kind     byte // 'c' create, 'd' mkdir, 'r' remove, 'm' rename
	path, to string
	e        entry
	dirs     []string // the directories whose fsync this op waits for
	seq      int      // the order the ops were made in
	applied  bool
}

// New returns an empty disk (its root directory "/" exists) whose random
// choices (crash survivors, Faults) are drawn from seed.
func New(seed int64) *Disk {
	d := &Disk{
		rng:     rand.New(rand.NewSource(seed)),
		inodes:  map[int]*inode{},
		live:    map[string]entry{},
		durable: map[string]entry{},
		dirOps:  map[string][]*dirOp{},
		budget:  -1,
	}
	d.live["/"], d.durable["/"] = entry{}, entry{}
	return d
}

var _ storage.FS = (*Disk)(nil)

// SetFaults sets the rates of the faults the disk makes on its own.
func (d *Disk) SetFaults(f Faults) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.faults = f
	d.made = 0
}

// SetCapacity limits the bytes the files may hold (0: no limit): a write
// past it fails with ENOSPC and writes nothing.
func (d *Disk) SetCapacity(bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.capacity = bytes
}

// OnSync sets a function told of every fsync (of a file or a directory)
// before it completes, without the disk's lock: a simulator counts them or
// makes the caller wait.
func (d *Disk) OnSync(f func(path string)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.onSync = f
}

// DieAfter makes the process die at its n-th mutating operation from now
// (a write, truncate, fsync, create, rename, remove or mkdir): that
// operation fails with ErrDead, a write perhaps half cached, and so does
// every later one, until Crash or Kill and Restart. n < 0: never.
func (d *Disk) DieAfter(n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.budget = n
}

// Stats returns the counts so far.
func (d *Disk) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

func clean(name string) string {
	p := filepath.Clean("/" + name)
	return p
}

func notExist(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

// step counts a mutating operation: ok is false once the process is dead;
// dying is true for the operation it dies in.
func (d *Disk) step() (ok, dying bool) {
	if d.dead {
		return false, false
	}
	if d.budget == 0 {
		d.dead = true
		return false, true
	}
	if d.budget > 0 {
		d.budget--
	}
	return true, false
}

func (d *Disk) parentExists(name string) bool {
	e, ok := d.live[filepath.Dir(name)]
	return ok && e.isDir()
}

func (d *Disk) addDirOp(op *dirOp) {
	d.seq++
	op.seq = d.seq
	for _, dir := range op.dirs {
		d.dirOps[dir] = append(d.dirOps[dir], op)
	}
}

// OpenFile opens name as os.OpenFile does, for the flags O_RDONLY, O_WRONLY,
// O_RDWR, O_CREATE, O_EXCL and O_TRUNC.
func (d *Disk) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name = clean(name)
	if d.dead {
		return nil, ErrDead
	}
	e, exists := d.live[name]
	switch {
	case exists && e.isDir():
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EISDIR}
	case exists && flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	case !exists && flag&os.O_CREATE == 0:
		return nil, notExist("open", name)
	case !exists && !d.parentExists(name):
		return nil, notExist("open", name)
	}
	if !exists || flag&os.O_TRUNC != 0 {
		if ok, _ := d.step(); !ok {
			return nil, ErrDead
		}
	}
	if !exists {
		d.nextIno++
		e = entry{ino: d.nextIno}
		d.inodes[e.ino] = &inode{}
		d.live[name] = e
		d.addDirOp(&dirOp{kind: 'c', path: name, e: e, dirs: []string{filepath.Dir(name)}})
	} else if flag&os.O_TRUNC != 0 {
		in := d.inodes[e.ino]
		d.liveSize -= int64(len(in.data))
		in.data = in.data[:0]
		in.pending = append(in.pending, fileOp{off: 0})
	}
	return &file{d: d, ino: e.ino, gen: d.gen, path: name, write: flag&(os.O_WRONLY|os.O_RDWR) != 0}, nil
}

// Remove removes a file or an empty directory.
func (d *Disk) Remove(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	name = clean(name)
	if d.dead {
		return ErrDead
	}
	e, ok := d.live[name]
	if !ok || name == "/" {
		return notExist("remove", name)
	}
	if e.isDir() && len(d.children(name)) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: syscall.ENOTEMPTY}
	}
	if ok, _ := d.step(); !ok {
		return ErrDead
	}
	delete(d.live, name)
	if !e.isDir() && !d.named(e.ino) {
		d.liveSize -= int64(len(d.inodes[e.ino].data))
	}
	d.addDirOp(&dirOp{kind: 'r', path: name, dirs: []string{filepath.Dir(name)}})
	return nil
}

// named reports whether a live name refers to ino.
func (d *Disk) named(ino int) bool {
	for _, e := range d.live {
		if e.ino == ino {
			return true
		}
	}
	return false
}

// Rename renames a file or a directory, replacing newName if it is a file.
// Until both directories are fsynced a power loss may keep the old name or
// the new one (never both, never neither).
func (d *Disk) Rename(oldName, newName string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	oldName, newName = clean(oldName), clean(newName)
	if d.dead {
		return ErrDead
	}
	e, ok := d.live[oldName]
	if !ok || !d.parentExists(newName) {
		return notExist("rename", oldName)
	}
	if t, ok := d.live[newName]; ok && t.isDir() {
		return &fs.PathError{Op: "rename", Path: newName, Err: syscall.EEXIST}
	}
	if e.isDir() && (newName == oldName || strings.HasPrefix(newName, oldName+"/")) {
		return &fs.PathError{Op: "rename", Path: newName, Err: syscall.EINVAL}
	}
	if ok, _ := d.step(); !ok {
		return ErrDead
	}
	if t, ok := d.live[newName]; ok && !d.namedElsewhere(t.ino, newName) {
		d.liveSize -= int64(len(d.inodes[t.ino].data))
	}
	moveTree(d.live, oldName, newName)
	dirs := []string{filepath.Dir(oldName)}
	if nd := filepath.Dir(newName); nd != dirs[0] {
		dirs = append(dirs, nd)
	}
	d.addDirOp(&dirOp{kind: 'm', path: oldName, to: newName, dirs: dirs})
	return nil
}

func (d *Disk) namedElsewhere(ino int, but string) bool {
	for p, e := range d.live {
		if e.ino == ino && p != but {
			return true
		}
	}
	return false
}

// moveTree renames from (and, for a directory, everything under it) to to
// in the namespace ns.
func moveTree(ns map[string]entry, from, to string) {
	e, ok := ns[from]
	if !ok {
		return
	}
	delete(ns, from)
	ns[to] = e
	if !e.isDir() {
		return
	}
	var under []string
	for p := range ns {
		if strings.HasPrefix(p, from+"/") {
			under = append(under, p)
		}
	}
	for _, p := range under {
		ns[to+p[len(from):]] = ns[p]
		delete(ns, p)
	}
}

// children lists the names directly in dir (sorted).
func (d *Disk) children(dir string) []string {
	prefix := dir + "/"
	if dir == "/" {
		prefix = "/"
	}
	var names []string
	for p := range d.live {
		if p != "/" && strings.HasPrefix(p, prefix) && !strings.Contains(p[len(prefix):], "/") {
			names = append(names, p[len(prefix):])
		}
	}
	sort.Strings(names)
	return names
}

// ReadDir lists the names in dir, sorted.
func (d *Disk) ReadDir(dir string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dir = clean(dir)
	if d.dead {
		return nil, ErrDead
	}
	if e, ok := d.live[dir]; !ok || !e.isDir() {
		return nil, notExist("readdir", dir)
	}
	return d.children(dir), nil
}

// MkdirAll creates dir and its missing parents; each new directory is a
// change of its parent, durable once the parent is fsynced.
func (d *Disk) MkdirAll(dir string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	dir = clean(dir)
	if d.dead {
		return ErrDead
	}
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		e, ok := d.live[p]
		if ok {
			if !e.isDir() {
				return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
			}
			break
		}
		missing = append(missing, p)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if ok, _ := d.step(); !ok {
			return ErrDead
		}
		p := missing[i]
		d.live[p] = entry{}
		d.addDirOp(&dirOp{kind: 'd', path: p, dirs: []string{filepath.Dir(p)}})
	}
	return nil
}

// SyncDir makes the changes of dir's entries durable.
func (d *Disk) SyncDir(dir string) error {
	d.mu.Lock()
	dir = clean(dir)
	if e, ok := d.live[dir]; !d.dead && (!ok || !e.isDir()) {
		d.mu.Unlock()
		return notExist("sync", dir)
	}
	hook := d.onSync
	d.mu.Unlock()
	if hook != nil {
		hook(dir)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok, _ := d.step(); !ok {
		return ErrDead
	}
	d.stats.DirSyncs++
	// An op waiting for several directories (a rename across two) becomes
	// durable once all of them are synced; the ops before it in each list
	// stay ordered.
	ops := d.dirOps[dir]
	delete(d.dirOps, dir)
	for _, op := range ops {
		if op.applied || d.waits(op) {
			continue
		}
		applyDirOp(d.durable, op)
		op.applied = true
	}
	return nil
}

// waits reports whether op still waits for a directory's fsync.
func (d *Disk) waits(op *dirOp) bool {
	for _, dir := range op.dirs {
		for _, o := range d.dirOps[dir] {
			if o == op {
				return true
			}
		}
	}
	return false
}

func applyDirOp(ns map[string]entry, op *dirOp) {
	switch op.kind {
	case 'c':
		ns[op.path] = op.e
	case 'd':
		ns[op.path] = entry{}
	case 'r':
		delete(ns, op.path)
	case 'm':
		moveTree(ns, op.path, op.to)
	}
}

// Kill is the death of the process: open files are gone, what it wrote is
// still in the page cache. Restart lets a new process use the disk.
func (d *Disk) Kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	d.gen++
	d.stats.Kills++
}

// Restart lets a new process use the disk after Kill or Crash.
func (d *Disk) Restart() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = false
	d.budget = -1
	d.stats.Restarts++
}

// Crash is a power loss: the process dies and the disk keeps what this
// package's model says it may (see the package doc), chosen with the
// disk's generator. Restart lets a new process use it.
func (d *Disk) Crash() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dead = true
	d.gen++
	d.stats.Crashes++
	// Directories: each keeps a prefix of its changes; an op in several
	// lists survives only if every one keeps it.
	var dirs []string
	for dir := range d.dirOps {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	keep := map[*dirOp]int{}
	for _, dir := range dirs {
		ops := d.dirOps[dir]
		k := d.rng.Intn(len(ops) + 1)
		for i, op := range ops {
			if i < k {
				keep[op]++
			} else {
				keep[op] -= 1 << 20
			}
		}
	}
	var survivors []*dirOp
	seen := map[*dirOp]bool{}
	for _, dir := range dirs {
		for _, op := range d.dirOps[dir] {
			if !seen[op] && keep[op] == len(op.dirs) {
				survivors = append(survivors, op)
			}
			seen[op] = true
		}
	}
	sort.Slice(survivors, func(i, j int) bool { return survivors[i].seq < survivors[j].seq })
	for _, op := range survivors {
		applyDirOp(d.durable, op)
	}
	d.dirOps = map[string][]*dirOp{}
	pruneOrphans(d.durable)
	// Files: the media, plus a prefix of the unsynced writes, the last
	// one torn at sector granularity.
	inos := make([]int, 0, len(d.inodes))
	for ino := range d.inodes {
		inos = append(inos, ino)
	}
	sort.Ints(inos)
	for _, ino := range inos {
		in := d.inodes[ino]
		k := d.rng.Intn(len(in.pending) + 1)
		for i, op := range in.pending[:k] {
			if op.data != nil && i == k-1 {
				op = tornSectors(d.rng, op)
			}
			in.media = applyToMedia(in.media, op)
		}
		in.pending = nil
		in.data = append(in.data[:0:0], in.media...)
	}
	d.live = map[string]entry{}
	for p, e := range d.durable {
		d.live[p] = e
	}
	d.gc()
}

// tornSectors keeps a random subset of op's sectors: each sector of a
// write is atomic, the write as a whole is not.
func tornSectors(rng *rand.Rand, op fileOp) fileOp {
	if rng.Intn(2) == 0 {
		return op // whole
	}
	// Represent the torn write as the original data with the lost sectors
	// replaced by what the media held (applied by applyTorn).
	op.data = append([]byte(nil), op.data...)
	mask := make([]bool, (int64(len(op.data))+op.off%SectorSize+SectorSize-1)/SectorSize)
	for i := range mask {
		mask[i] = rng.Intn(2) == 0
	}
	op.torn = mask
	return op
}

// applyToMedia applies a write or truncation to the media content b.
func applyToMedia(b []byte, op fileOp) []byte {
	switch {
	case op.lost:
		// The file's size is metadata, journaled apart from the data: it
		// grows, and the blocks the write never reached read as zeros.
		if end := op.off + int64(len(op.data)); end > int64(len(b)) {
			b = resize(b, end)
		}
		return b
	case op.data == nil:
		return resize(b, op.off)
	}
	off := op.off
	if op.misdirected {
		if end := op.off + int64(len(op.data)); end > int64(len(b)) {
			b = resize(b, end)
		}
		off += SectorSize
	}
	if op.torn == nil {
		return writeAt(b, off, op.data)
	}
	// Only the kept sectors reach the media; the file grows to the end of
	// the last one kept.
	first := off / SectorSize
	for i, kept := range op.torn {
		if !kept {
			continue
		}
		lo := (first + int64(i)) * SectorSize
		hi := lo + SectorSize
		if lo < off {
			lo = off
		}
		if end := off + int64(len(op.data)); hi > end {
			hi = end
		}
		if lo < hi {
			b = writeAt(b, lo, op.data[lo-off:hi-off])
		}
	}
	return b
}

// pruneOrphans removes from ns the names whose directory is not in it: a
// name made durable in a directory whose own name was not is lost.
func pruneOrphans(ns map[string]entry) {
	paths := make([]string, 0, len(ns))
	for p := range ns {
		paths = append(paths, p)
	}
	sort.Strings(paths) // parents before children
	for _, p := range paths {
		if p == "/" {
			continue
		}
		if e, ok := ns[filepath.Dir(p)]; !ok || !e.isDir() {
			delete(ns, p)
		}
	}
}

// gc forgets inodes no name refers to, live or durable.
func (d *Disk) gc() {
	used := map[int]bool{}
	for _, e := range d.live {
		used[e.ino] = true
	}
	for _, e := range d.durable {
		used[e.ino] = true
	}
	for _, ops := range d.dirOps {
		for _, op := range ops {
			used[op.e.ino] = true
		}
	}
	d.liveSize = 0
	for ino, in := range d.inodes {
		if !used[ino] {
			delete(d.inodes, ino)
			continue
		}
		d.liveSize += int64(len(in.data))
	}
}

// DropCache drops the page cache of the files with no unsynced writes:
// reads see the media from then on, lost and misdirected writes and bit
// flips included. (A crash drops it too.)
func (d *Disk) DropCache() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, in := range d.inodes {
		if len(in.pending) == 0 {
			d.liveSize += int64(len(in.media) - len(in.data))
			in.data = append(in.data[:0:0], in.media...)
		}
	}
}

// FlipBit flips bit (0-7) of the byte at off of the file at path on the
// media, and in the page cache if the file has no unsynced write there:
// damage to data the disk holds. It fails if the file or the byte is not
// there.
func (d *Disk) FlipBit(path string, off int64, bit uint) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	path = clean(path)
	e, ok := d.durable[path]
	if !ok || e.isDir() {
		return notExist("flip", path)
	}
	in := d.inodes[e.ino]
	if off < 0 || off >= int64(len(in.media)) {
		return fmt.Errorf("simdisk: flip at %d of %s, which holds %d bytes on the media", off, path, len(in.media))
	}
	in.media[off] ^= 1 << (bit % 8)
	if len(in.pending) == 0 && off < int64(len(in.data)) {
		in.data[off] ^= 1 << (bit % 8)
	}
	return nil
}

// LoseWrites makes the media of the file at path read as zeros from off to
// its end, as if the disk had acknowledged the writes there and never made
// them (a lost write of data once synced), in the page cache too if the
// file has no unsynced write. It fails if the file is not there or off is
// past its end.
func (d *Disk) LoseWrites(path string, off int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	path = clean(path)
	e, ok := d.durable[path]
	if !ok || e.isDir() {
		return notExist("lose", path)
	}
	in := d.inodes[e.ino]
	if off < 0 || off > int64(len(in.media)) {
		return fmt.Errorf("simdisk: lost writes from %d of %s, which holds %d bytes on the media", off, path, len(in.media))
	}
	for i := off; i < int64(len(in.media)); i++ {
		in.media[i] = 0
	}
	if len(in.pending) == 0 {
		in.data = append(in.data[:0:0], in.media...)
	}
	return nil
}

// Wipe empties the disk, as an operator who replaces it or deletes its
// files: nothing of it is left, in the cache or on the media.
func (d *Disk) Wipe() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inodes = map[int]*inode{}
	d.live = map[string]entry{"/": {}}
	d.durable = map[string]entry{"/": {}}
	d.dirOps = map[string][]*dirOp{}
	d.liveSize = 0
	d.gen++
}

// ReadFile returns the content of the file at path as the process sees it
// (for tests and checkers; it is not an operation of the process).
func (d *Disk) ReadFile(path string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.live[clean(path)]
	if !ok || e.isDir() {
		return nil, notExist("read", path)
	}
	return append([]byte(nil), d.inodes[e.ino].data...), nil
}

// Media returns the content of the file at path on the media, under its
// durable name: what a power loss now would keep of it at least.
func (d *Disk) Media(path string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.durable[clean(path)]
	if !ok || e.isDir() {
		return nil, notExist("read", path)
	}
	return append([]byte(nil), d.inodes[e.ino].media...), nil
}

// Clone returns an independent copy of the disk, its generator's state
// included only as far as a new seed drawn from it: a simulator that forks
// a world forks its disks.
func (d *Disk) Clone() *Disk {
	d.mu.Lock()
	defer d.mu.Unlock()
	c := New(d.rng.Int63())
	c.faults, c.capacity, c.nextIno, c.seq, c.gen, c.dead, c.budget, c.stats, c.onSync, c.liveSize =
		d.faults, d.capacity, d.nextIno, d.seq, d.gen, d.dead, d.budget, d.stats, d.onSync, d.liveSize
	for ino, in := range d.inodes {
		c.inodes[ino] = &inode{
			data:    append([]byte(nil), in.data...),
			media:   append([]byte(nil), in.media...),
			pending: append([]fileOp(nil), in.pending...),
		}
	}
	for p, e := range d.live {
		c.live[p] = e
	}
	for p, e := range d.durable {
		c.durable[p] = e
	}
	copies := map[*dirOp]*dirOp{}
	for dir, ops := range d.dirOps {
		for _, op := range ops {
			if copies[op] == nil {
				cp := *op
				copies[op] = &cp
			}
			c.dirOps[dir] = append(c.dirOps[dir], copies[op])
		}
	}
	return c
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

// file is an open file of a Disk.
type file struct {
	d     *Disk
	ino   int
	gen   int
	path  string
	write bool
}

var _ storage.File = (*file)(nil)

// usable returns the inode, or an error if the process died since the file
// was opened.
func (f *file) usable() (*inode, error) {
	if f.d.dead || f.gen != f.d.gen {
		return nil, ErrDead
	}
	in, ok := f.d.inodes[f.ino]
	if !ok {
		return nil, ErrDead
	}
	return in, nil
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	in, err := f.usable()
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: syscall.EINVAL}
	}
	if off >= int64(len(in.data)) {
		return 0, io.EOF
	}
	n := copy(p, in.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	in, err := f.usable()
	if err != nil {
		return 0, err
	}
	if !f.write {
		return 0, &fs.PathError{Op: "write", Path: f.path, Err: syscall.EBADF}
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "write", Path: f.path, Err: syscall.EINVAL}
	}
	grow := off + int64(len(p)) - int64(len(in.data))
	if grow > 0 && d.capacity > 0 && d.liveSize+grow > d.capacity {
		return 0, &fs.PathError{Op: "write", Path: f.path, Err: syscall.ENOSPC}
	}
	ok, dying := d.step()
	if !ok {
		if dying && len(p) > 0 {
			// The write the process died in: some of it reached the cache.
			p = p[:d.rng.Intn(len(p))]
			d.cache(in, off, p)
		}
		return 0, ErrDead
	}
	d.cache(in, off, p)
	d.stats.Writes++
	d.stats.BytesWritten += int64(len(p))
	return len(p), nil
}

// cache writes p at off in the page cache and queues it for the media,
// perhaps to be lost or misdirected there.
func (d *Disk) cache(in *inode, off int64, p []byte) {
	before := int64(len(in.data))
	in.data = writeAt(in.data, off, p)
	d.liveSize += int64(len(in.data)) - before
	op := fileOp{off: off, data: append([]byte(nil), p...)}
	switch {
	case d.faults.Max > 0 && d.made >= d.faults.Max:
	case d.faults.LostWrite > 0 && d.rng.Float64() < d.faults.LostWrite:
		op.lost = true
		d.made++
		d.stats.LostWrites++
	case d.faults.MisdirectedWrite > 0 && d.rng.Float64() < d.faults.MisdirectedWrite:
		op.misdirected = true
		d.made++
		d.stats.Misdirected++
	}
	in.pending = append(in.pending, op)
}

func (f *file) Truncate(size int64) error {
	d := f.d
	d.mu.Lock()
	defer d.mu.Unlock()
	in, err := f.usable()
	if err != nil {
		return err
	}
	if size < 0 || !f.write {
		return &fs.PathError{Op: "truncate", Path: f.path, Err: syscall.EINVAL}
	}
	if ok, _ := d.step(); !ok {
		return ErrDead
	}
	before := int64(len(in.data))
	in.data = resize(in.data, size)
	d.liveSize += int64(len(in.data)) - before
	in.pending = append(in.pending, fileOp{off: size})
	return nil
}

func (f *file) Sync() error {
	d := f.d
	d.mu.Lock()
	if _, err := f.usable(); err != nil {
		d.mu.Unlock()
		return err
	}
	hook := d.onSync
	d.mu.Unlock()
	if hook != nil {
		hook(f.path)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	in, err := f.usable()
	if err != nil {
		return err
	}
	if ok, _ := d.step(); !ok {
		return ErrDead
	}
	d.stats.Syncs++
	for _, op := range in.pending {
		in.media = applyToMedia(in.media, op)
	}
	in.pending = nil
	return nil
}

func (f *file) Size() (int64, error) {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	in, err := f.usable()
	if err != nil {
		return 0, err
	}
	return int64(len(in.data)), nil
}

func (f *file) Close() error {
	f.d.mu.Lock()
	defer f.d.mu.Unlock()
	if f.gen != f.d.gen {
		return ErrDead
	}
	return nil
}
