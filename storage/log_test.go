package storage

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/kraftquorum/kraft"
)

// logKinds builds each Log implementation, empty, for the tests every
// implementation must pass. The file log rolls segments every 100 bytes so
// that reads and truncations cross them.
func logKinds(t *testing.T) map[string]func() Log {
	return map[string]func() Log{
		"mem": func() Log { return NewMemLog() },
		"file": func() Log {
			l, _, err := Open(t.TempDir(), Options{SegmentBytes: 100})
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
	}
}

func rec(n int) []byte { return []byte(fmt.Sprintf("record-%03d", n)) }

func TestLogEmpty(t *testing.T) {
	for name, open := range logKinds(t) {
		l := open()
		require.Equal(t, kraft.LogEnd{}, l.End(), name)
		require.Equal(t, kraft.LogState{}, l.State(), name)
		require.Equal(t, int64(0), l.Flushed(), name)
		es, err := l.Read(0, 100)
		require.NoError(t, err, name)
		require.Empty(t, es, name)
		_, err = l.Read(1, 100)
		require.ErrorIs(t, err, ErrOutOfRange, name)
		_, ok := l.EpochFor(0)
		require.False(t, ok, name)
		require.NoError(t, l.Truncate(0), name)
		require.NoError(t, l.Sync(), name)
	}
}

func TestLogAppendRead(t *testing.T) {
	for name, open := range logKinds(t) {
		l := open()
		end, err := l.Append(1, rec(0), rec(1))
		require.NoError(t, err, name)
		require.Equal(t, kraft.LogEnd{Offset: 2, Epoch: 1}, end, name)
		end, err = l.Append(1) // nothing
		require.NoError(t, err, name)
		require.Equal(t, kraft.LogEnd{Offset: 2, Epoch: 1}, end, name)
		end, err = l.AppendEntries(Entry{Offset: 2, Epoch: 3, Data: rec(2)}, Entry{Offset: 3, Epoch: 3, Data: nil}, Entry{Offset: 4, Epoch: 5, Data: rec(4)})
		require.NoError(t, err, name)
		require.Equal(t, kraft.LogEnd{Offset: 5, Epoch: 5}, end, name)
		end, err = l.Append(5, rec(5), rec(6), rec(7))
		require.NoError(t, err, name)
		require.Equal(t, kraft.LogEnd{Offset: 8, Epoch: 5}, end, name)
		require.Equal(t, end, l.End(), name)

		want := []Entry{
			{0, 1, rec(0)},
			{1, 1, rec(1)},
			{2, 3, rec(2)},
			{3, 3, nil},
			{4, 5, rec(4)},
			{5, 5, rec(5)},
			{6, 5, rec(6)},
			{7, 5, rec(7)},
		}
		require.Equal(t, normalize(want), normalize(readAll(t, l)), name)
		require.Equal(t, kraft.LogState{
			End:    kraft.LogEnd{Offset: 8, Epoch: 5},
			Epochs: []kraft.EpochStart{{Epoch: 1, StartOffset: 0}, {Epoch: 3, StartOffset: 2}, {Epoch: 5, StartOffset: 4}},
		}, l.State(), name)
		for _, e := range want {
			ep, ok := l.EpochFor(e.Offset)
			require.True(t, ok, name)
			require.Equal(t, e.Epoch, ep, name)
		}
		_, ok := l.EpochFor(8)
		require.False(t, ok, name)
		_, ok = l.EpochFor(-1)
		require.False(t, ok, name)

		// Read sizes: at least one record, then whole records up to maxBytes
		// bytes of payload.
		for _, c := range []struct {
			from     int64
			maxBytes int
			n        int
		}{{0, 0, 1}, {0, 10, 1}, {0, 20, 2}, {0, 29, 2}, {0, 30, 4}, {3, 0, 1}, {3, 10, 2}, {5, 1000, 3}, {7, 1, 1}, {8, 100, 0}} {
			es, err := l.Read(c.from, c.maxBytes)
			require.NoError(t, err, name)
			require.Equal(t, normalize(want[c.from:c.from+int64(c.n)]), normalize(es), "%s: Read(%d, %d)", name, c.from, c.maxBytes)
		}
		for _, from := range []int64{-1, 9} {
			_, err := l.Read(from, 100)
			require.ErrorIs(t, err, ErrOutOfRange, name)
		}

		// Data read belongs to the caller.
		es, err := l.Read(0, 100)
		require.NoError(t, err, name)
		es[0].Data = append(es[0].Data, 'Z')
		require.Equal(t, rec(1), es[1].Data, "%s: appending to one record's data changes no other", name)
		es, err = l.Read(0, 1)
		require.NoError(t, err, name)
		es[0].Data[0] = 'X'
		es, err = l.Read(0, 1)
		require.NoError(t, err, name)
		require.Equal(t, rec(0), es[0].Data, name)
	}
}

func TestLogAppendKeepsCallerBuffers(t *testing.T) {
	for name, open := range logKinds(t) {
		l := open()
		buf := []byte("first")
		_, err := l.Append(1, buf)
		require.NoError(t, err, name)
		copy(buf, "XXXXX")
		es, err := l.Read(0, 100)
		require.NoError(t, err, name)
		require.Equal(t, []byte("first"), es[0].Data, name)
	}
}

func TestLogRejectsBadAppends(t *testing.T) {
	for name, open := range logKinds(t) {
		l := open()
		_, err := l.Append(4, rec(0), rec(1))
		require.NoError(t, err, name)
		before := readAll(t, l)

		end, err := l.Append(3, rec(2))
		require.ErrorIs(t, err, ErrEpochRegression, name)
		require.Equal(t, kraft.LogEnd{Offset: 2, Epoch: 4}, end, name)
		_, err = l.Append(-1, rec(2))
		require.ErrorIs(t, err, ErrInvalidAppend, name)
		_, err = l.AppendEntries(Entry{Offset: 2, Epoch: 5}, Entry{Offset: 3, Epoch: 4})
		require.ErrorIs(t, err, ErrEpochRegression, name)
		_, err = l.AppendEntries(Entry{Offset: 3, Epoch: 5})
		require.ErrorIs(t, err, ErrInvalidAppend, name)
		_, err = l.AppendEntries(Entry{Offset: 2, Epoch: 5}, Entry{Offset: 2, Epoch: 5})
		require.ErrorIs(t, err, ErrInvalidAppend, name)
		_, err = l.AppendEntries(Entry{Offset: 1, Epoch: 5})
		require.ErrorIs(t, err, ErrInvalidAppend, name)

		// A rejected append writes nothing.
		require.Equal(t, kraft.LogEnd{Offset: 2, Epoch: 4}, l.End(), name)
		require.Equal(t, before, readAll(t, l), name)
		_, err = l.Append(4, rec(2))
		require.NoError(t, err, name)
	}
}

func TestLogTruncate(t *testing.T) {
	for name, open := range logKinds(t) {
		for to := int64(0); to <= 12; to++ {
			l := open()
			var all []Entry
			for i := 0; i < 10; i++ {
				ep := kraft.Epoch(1 + i/4) // epochs 1 1 1 1 2 2 2 2 3 3
				_, err := l.Append(ep, rec(i))
				require.NoError(t, err)
				all = append(all, Entry{Offset: int64(i), Epoch: ep, Data: rec(i)})
			}
			require.NoError(t, l.Truncate(to), "%s: to %d", name, to)
			keep := all
			if to < 10 {
				keep = all[:to]
				require.Equal(t, to, l.Flushed(), "%s: a truncation is durable, with all before it", name)
			}
			require.Equal(t, normalize(keep), normalize(readAll(t, l)), "%s: to %d", name, to)
			require.Equal(t, stateOf(keep), l.State(), "%s: to %d", name, to)
			require.Equal(t, stateOf(keep).End, l.End(), "%s: to %d", name, to)

			// Appends continue from the cut, in an epoch not below its last.
			_, err := l.Append(2, rec(99))
			if stateOf(keep).End.Epoch > 2 {
				require.ErrorIs(t, err, ErrEpochRegression)
			} else {
				require.NoError(t, err)
				keep = append(keep, Entry{Offset: int64(len(keep)), Epoch: 2, Data: rec(99)})
			}
			require.Equal(t, normalize(keep), normalize(readAll(t, l)), "%s: to %d", name, to)
			require.Equal(t, stateOf(keep), l.State(), "%s: to %d", name, to)
		}
		l := open()
		require.ErrorIs(t, l.Truncate(-1), ErrOutOfRange, name)
	}
}

func TestLogFlushed(t *testing.T) {
	for name, open := range logKinds(t) {
		l := open()
		_, err := l.Append(1, rec(0))
		require.NoError(t, err)
		require.Equal(t, int64(0), l.Flushed(), name)
		ev, err := Flush(l)
		require.NoError(t, err, name)
		require.Equal(t, kraft.LogFlushed{Offset: 1}, ev, name)
		_, err = l.Append(1, rec(1), rec(2))
		require.NoError(t, err)
		require.Equal(t, int64(1), l.Flushed(), name)
		require.NoError(t, l.Sync(), name)
		require.Equal(t, int64(3), l.Flushed(), name)
		require.NoError(t, l.Truncate(1), name)
		require.Equal(t, int64(1), l.Flushed(), name)
	}
}

func TestLogClosed(t *testing.T) {
	for name, open := range logKinds(t) {
		l := open()
		_, err := l.Append(1, rec(0))
		require.NoError(t, err)
		require.NoError(t, l.Close(), name)
		require.ErrorIs(t, l.Close(), ErrClosed, name)
		_, err = l.Append(1, rec(1))
		require.ErrorIs(t, err, ErrClosed, name)
		_, err = l.AppendEntries(Entry{Offset: 1, Epoch: 1})
		require.ErrorIs(t, err, ErrClosed, name)
		_, err = l.Read(0, 10)
		require.ErrorIs(t, err, ErrClosed, name)
		require.ErrorIs(t, l.Truncate(0), ErrClosed, name)
		require.ErrorIs(t, l.Sync(), ErrClosed, name)
	}
}

// TestLogStateStartsKraft: the State of a log is what kraft.NewState takes.
func TestLogStateStartsKraft(t *testing.T) {
	cfg := kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}, Seed: 1}
	for name, open := range logKinds(t) {
		l := open()
		_, err := l.Append(2, rec(0), rec(1))
		require.NoError(t, err)
		_, err = l.Append(5, rec(2))
		require.NoError(t, err)
		s, _, err := kraft.NewState(cfg, nil, l.State())
		require.NoError(t, err, name)
		require.Equal(t, kraft.LogEnd{Offset: 3, Epoch: 5}, s.LogEnd(), name)
		require.Equal(t, kraft.Epoch(5), s.Epoch(), name)
	}
}

func TestAppendedEvents(t *testing.T) {
	require.Empty(t, AppendedEvents(nil))
	got := AppendedEvents([]Entry{{Offset: 5, Epoch: 2}, {Offset: 6, Epoch: 2}, {Offset: 7, Epoch: 3}})
	require.Equal(t, []kraft.LogAppended{{End: kraft.LogEnd{Offset: 7, Epoch: 2}}, {End: kraft.LogEnd{Offset: 8, Epoch: 3}}}, got)
	got = AppendedEvents([]Entry{{Offset: 0, Epoch: 1}, {Offset: 1, Epoch: 4}, {Offset: 2, Epoch: 4}, {Offset: 3, Epoch: 4}, {Offset: 4, Epoch: 9}})
	require.Equal(t, []kraft.LogAppended{
		{End: kraft.LogEnd{Offset: 1, Epoch: 1}}, {End: kraft.LogEnd{Offset: 4, Epoch: 4}}, {End: kraft.LogEnd{Offset: 5, Epoch: 9}},
	}, got)
}

// TestAppendedEventsDriveKraft: stepping the events of appends keeps the
// state's log end equal to the log's.
func TestAppendedEventsDriveKraft(t *testing.T) {
	cfg := kraft.Config{Local: kraft.ReplicaKey{ID: 1}, Voters: []kraft.ReplicaKey{{ID: 1}, {ID: 2}, {ID: 3}}, Seed: 1}
	l := NewMemLog()
	follower := kraft.QuorumRecord{Epoch: 4, LeaderID: 2, VotedKey: kraft.NoReplica}
	s, _, err := kraft.NewState(cfg, &follower, l.State())
	require.NoError(t, err)
	require.Equal(t, kraft.Follower, s.Role())
	batch := []Entry{{Offset: 0, Epoch: 1, Data: rec(0)}, {Offset: 1, Epoch: 1}, {Offset: 2, Epoch: 2}, {Offset: 3, Epoch: 4}}
	_, err = l.AppendEntries(batch...)
	require.NoError(t, err)
	var acts []kraft.Action
	for _, ev := range AppendedEvents(batch) {
		var a []kraft.Action
		s, a = kraft.Step(s, ev)
		acts = append(acts, a...)
	}
	require.Equal(t, l.End(), s.LogEnd())
	ev, err := Flush(l)
	require.NoError(t, err)
	s, a := kraft.Step(s, ev)
	acts = append(acts, a...)
	require.Equal(t, l.End(), s.LogEnd())
	require.Equal(t, l.Flushed(), s.FlushedOffset())
	for _, a := range acts {
		_, fault := a.(kraft.Fault)
		require.False(t, fault, "%+v", a)
	}

	// The epoch history the state rebuilt from the events is the log's.
	restarted, _, err := kraft.NewState(cfg, &follower, l.State())
	require.NoError(t, err)
	require.Equal(t, s.LogEnd(), restarted.LogEnd())
}

// TestLogModelProperty runs random operations on each log and on a plain
// slice (the records from the log start, and the start), and compares them
// after each.
func TestLogModelProperty(t *testing.T) {
	for name, open := range logKinds(t) {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				l := open()
				var model []Entry
				var start kraft.LogEnd
				flushed := int64(0)
				end := func() int64 { return start.Offset + int64(len(model)) }
				for i, n := 0, rapid.IntRange(1, 40).Draw(rt, "ops"); i < n; i++ {
					last := stateFrom(start, model).End.Epoch
					switch rapid.IntRange(0, 7).Draw(rt, "op") {
					case 0, 1:
						ep := last + kraft.Epoch(rapid.IntRange(0, 1).Draw(rt, "bump"))
						k := rapid.IntRange(0, 4).Draw(rt, "k")
						var recs [][]byte
						for j := 0; j < k; j++ {
							d := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(rt, "data")
							recs = append(recs, d)
							model = append(model, Entry{Offset: end(), Epoch: ep, Data: d})
						}
						got, err := l.Append(ep, recs...)
						require.NoError(rt, err)
						require.Equal(rt, stateFrom(start, model).End, got)
					case 2:
						ep := last + kraft.Epoch(rapid.IntRange(0, 2).Draw(rt, "bump"))
						e := Entry{Offset: end(), Epoch: ep, Data: rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(rt, "data")}
						model = append(model, e)
						_, err := l.AppendEntries(e)
						require.NoError(rt, err)
					case 3:
						require.NoError(rt, l.Sync())
						flushed = end()
					case 4:
						to := rapid.Int64Range(start.Offset, end()+1).Draw(rt, "to")
						require.NoError(rt, l.Truncate(to))
						if to < end() {
							model = model[:to-start.Offset]
							flushed = to
						}
					case 5:
						from := rapid.Int64Range(start.Offset, end()).Draw(rt, "from")
						maxBytes := rapid.IntRange(0, 100).Draw(rt, "max")
						es, err := l.Read(from, maxBytes)
						require.NoError(rt, err)
						if from < end() {
							require.NotEmpty(rt, es)
						}
						total := 0
						for j, e := range es {
							require.True(rt, equalEntries([]Entry{model[from-start.Offset+int64(j)]}, []Entry{e}))
							total += len(e.Data)
						}
						if len(es) > 1 {
							require.LessOrEqual(rt, total, maxBytes)
						}
						if next := from + int64(len(es)); len(es) > 0 && next < end() {
							require.Greater(rt, total+len(model[next-start.Offset].Data), maxBytes, "Read stopped early")
						}
						if start.Offset > 0 {
							_, err := l.Read(start.Offset-1, maxBytes)
							require.ErrorIs(rt, err, ErrBelowStart)
						}
					case 6:
						x := rapid.Int64Range(0, end()).Draw(rt, "before")
						require.NoError(rt, l.DeleteBefore(x))
						if x > start.Offset {
							drop := x - start.Offset
							start = kraft.LogEnd{Offset: x, Epoch: model[drop-1].Epoch}
							model = model[drop:]
							if flushed < x {
								flushed = x
							}
						}
					case 7:
						to := kraft.LogEnd{
							Offset: rapid.Int64Range(0, end()+5).Draw(rt, "reset offset"),
							Epoch:  kraft.Epoch(rapid.IntRange(0, 5).Draw(rt, "reset epoch")),
						}
						require.NoError(rt, l.ResetTo(to))
						start, model, flushed = to, nil, to.Offset
					}
					require.Equal(rt, stateFrom(start, model), l.State())
					require.Equal(rt, start, l.Start())
					require.Equal(rt, start.Offset, l.StartOffset())
					// FileLog may flush more: starting a segment syncs the last.
					require.GreaterOrEqual(rt, l.Flushed(), flushed)
					require.LessOrEqual(rt, l.Flushed(), end())
					if _, mem := l.(*MemLog); mem {
						require.Equal(rt, flushed, l.Flushed())
					}
				}
				require.True(rt, equalEntries(model, readAll(t, l)))
			})
		})
	}
}

// TestLogConcurrentSync appends in one goroutine while another syncs in a
// loop (group commit), and a third reads.
func TestLogConcurrentSync(t *testing.T) {
	for name, open := range logKinds(t) {
		l := open()
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := l.Sync(); err != nil {
					t.Error(err)
					return
				}
				if f, end := l.Flushed(), l.End().Offset; f > end {
					t.Errorf("flushed %d past the end %d", f, end)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if end := l.End().Offset; end > 0 {
					if _, err := l.Read(end-1, 10); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
		for i := 0; i < 300; i++ {
			_, err := l.Append(kraft.Epoch(1+i/100), rec(i))
			require.NoError(t, err, name)
		}
		close(done)
		wg.Wait()
		require.NoError(t, l.Sync())
		require.Equal(t, int64(300), l.Flushed(), name)
		got := readAll(t, l)
		require.Len(t, got, 300, name)
		for i, e := range got {
			require.True(t, bytes.Equal(rec(i), e.Data), name)
		}
	}
}
