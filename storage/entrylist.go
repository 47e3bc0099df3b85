package storage

// memChunk is the most entries one chunk of a MemLog's entryList holds.
const memChunk = 4096

// entryList is a MemLog's records, in chunks of memChunk entries, so that
// growing the log never copies the records it holds (docs/design.md
// D352). A log kept in one slice copies all of it when the slice grows:
// at a million records that is a 40 MB copy of pointers, which the
// garbage collector cannot interrupt, so a collection that starts meanwhile
// waits for it with every other goroutine of the process stopped (the
// in-memory runtime benchmark saw whole-process stalls of 0.2-0.4 s).
// Only the last chunk grows by copying, up to memChunk entries.
//
// Invariants: every chunk but the last holds memChunk entries, the first
// counting its head dropped ones; the first chunk's first head entries
// are dropped (zero, so that their payloads can go) and head < memChunk;
// no chunk is empty.
type entryList struct {
	chunks [][]Entry
	head   int
}

// len is the number of entries.
func (l *entryList) len() int {
	if len(l.chunks) == 0 {
		return 0
	}
	return (len(l.chunks)-1)*memChunk + len(l.chunks[len(l.chunks)-1]) - l.head
}

// at is entry i (0 <= i < len).
func (l *entryList) at(i int) *Entry {
	j := i + l.head
	return &l.chunks[j/memChunk][j%memChunk]
}

// push appends e.
func (l *entryList) push(e Entry) {
	n := len(l.chunks)
	if n == 0 || len(l.chunks[n-1]) == memChunk {
		l.chunks = append(l.chunks, nil)
		n++
	}
	l.chunks[n-1] = append(l.chunks[n-1], e)
}

// truncate keeps the first n entries (0 <= n <= len).
func (l *entryList) truncate(n int) {
	if n == 0 {
		*l = entryList{}
		return
	}
	j := n + l.head // entries kept, counting the dropped head
	k := (j - 1) / memChunk
	last := l.chunks[k]
	keep := j - k*memChunk
	clear(last[keep:]) // let the payloads go
	l.chunks[k] = last[:keep]
	clear(l.chunks[k+1:])
	l.chunks = l.chunks[:k+1]
}

// dropFront drops the first k entries (0 <= k <= len).
func (l *entryList) dropFront(k int) {
	if k >= l.len() {
		*l = entryList{}
		return
	}
	j := l.head + k
	c := j / memChunk
	l.chunks = append([][]Entry(nil), l.chunks[c:]...)
	l.head = j % memChunk
	clear(l.chunks[0][:l.head]) // let the payloads go
}

// from calls f on the entries from i on, in order, until f returns false.
func (l *entryList) from(i int, f func(*Entry) bool) {
	for n := l.len(); i < n; i++ {
		if !f(l.at(i)) {
			return
		}
	}
}

// clone is a copy of l, in chunks of its own, each as long as l's.
func (l *entryList) clone() entryList {
	c := entryList{chunks: make([][]Entry, len(l.chunks)), head: l.head}
	for i, ch := range l.chunks {
		c.chunks[i] = append([]Entry(nil), ch...)
	}
	return c
}
