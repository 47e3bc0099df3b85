package replica

import (
	"bytes"
	"io"
	"sort"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/storage"
)

// memSnapshots is a Snapshots in memory for the random schedules: frozen
// snapshots survive a crash, partial ones are the writer's.
type memSnapshots struct{ frozen map[kraft.LogEnd][]byte }

func newMemSnapshots() *memSnapshots { return &memSnapshots{frozen: map[kraft.LogEnd][]byte{}} }

func (m *memSnapshots) List() []kraft.LogEnd {
	var ids []kraft.LogEnd
	for id := range m.frozen {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Compare(ids[j]) < 0 })
	return ids
}

func (m *memSnapshots) Latest() (kraft.LogEnd, bool) {
	ids := m.List()
	if len(ids) == 0 {
		return kraft.LogEnd{}, false
	}
	return ids[len(ids)-1], true
}

func (m *memSnapshots) Earliest() (kraft.LogEnd, bool) {
	ids := m.List()
	if len(ids) == 0 {
		return kraft.LogEnd{}, false
	}
	return ids[0], true
}

func (m *memSnapshots) Size(id kraft.LogEnd) (int64, error) {
	b, ok := m.frozen[id]
	if !ok {
		return 0, storage.ErrSnapshotNotFound
	}
	return int64(len(b)), nil
}

func (m *memSnapshots) Read(id kraft.LogEnd, position int64, maxBytes int) ([]byte, error) {
	b, ok := m.frozen[id]
	if !ok {
		return nil, storage.ErrSnapshotNotFound
	}
	if position > int64(len(b)) {
		position = int64(len(b))
	}
	end := position + int64(maxBytes)
	if end > int64(len(b)) {
		end = int64(len(b))
	}
	return append([]byte(nil), b[position:end]...), nil
}

func (m *memSnapshots) Open(id kraft.LogEnd) (io.ReadCloser, error) {
	b, ok := m.frozen[id]
	if !ok {
		return nil, storage.ErrSnapshotNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memSnapshots) Create(id kraft.LogEnd) (SnapshotWriter, error) {
	if _, ok := m.frozen[id]; ok {
		return nil, storage.ErrSnapshotExists
	}
	return &memSnapshotWriter{m: m, id: id}, nil
}

func (m *memSnapshots) Delete(id kraft.LogEnd) error {
	delete(m.frozen, id)
	return nil
}

func (m *memSnapshots) DeleteBefore(id kraft.LogEnd) error {
	for s := range m.frozen {
		if s.Compare(id) < 0 {
			delete(m.frozen, s)
		}
	}
	return nil
}

type memSnapshotWriter struct {
	m    *memSnapshots
	id   kraft.LogEnd
	data []byte
	done bool
}

func (w *memSnapshotWriter) ID() kraft.LogEnd { return w.id }
func (w *memSnapshotWriter) Size() int64      { return int64(len(w.data)) }
func (w *memSnapshotWriter) Append(chunk []byte) error {
	w.data = append(w.data, chunk...)
	return nil
}
func (w *memSnapshotWriter) Write(p []byte) (int, error) { return len(p), w.Append(p) }
func (w *memSnapshotWriter) Freeze() error {
	if !w.done {
		w.done = true
		w.m.frozen[w.id] = w.data
	}
	return nil
}
func (w *memSnapshotWriter) Abort() error { w.done = true; return nil }
