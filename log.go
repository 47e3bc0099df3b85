package kraft

import "fmt"

// LogState describes the local log at start: its end and its epoch history
// (Kafka's leader-epoch cache), the first offset of each epoch in ascending
// order. An empty Epochs with End.Offset > 0 is read as a log whose records
// all belong to End.Epoch. The host passes the log it recovered from disk
// and made durable (a sync on open), so every record of it counts as
// flushed.
type LogState struct {
	End    LogEnd
	Epochs []EpochStart
}

// logView is the state's picture of the local log: what it needs to decide
// alone (vote comparisons, fetch positions, divergence, truncation). It
// keeps the log as Kafka does (docs/design.md D30): end is the written log
// end (every record the host wrote, flushed or not; Kafka's log end offset)
// with its epoch history, and flushed is the offset below which every
// record is durable (flushed <= end.Offset). Epochs is shared between
// states and never written in place: appends go through a slice whose
// capacity is clipped, so they copy.
type logView struct {
	end     LogEnd
	epochs  []EpochStart
	flushed int64
}

func newLogView(l LogState) (logView, error) {
	if l.End.Offset < 0 || l.End.Epoch < 0 {
		return logView{}, fmt.Errorf("kraft: log end %+v is negative", l.End)
	}
	if len(l.Epochs) == 0 {
		if l.End.Offset == 0 {
			return logView{end: l.End}, nil
		}
		return logView{end: l.End, epochs: []EpochStart{{Epoch: l.End.Epoch, StartOffset: 0}}, flushed: l.End.Offset}, nil
	}
	for i, e := range l.Epochs {
		if e.Epoch < 0 || e.StartOffset < 0 || e.StartOffset >= l.End.Offset {
			return logView{}, fmt.Errorf("kraft: epoch entry %+v outside the log [0, %d)", e, l.End.Offset)
		}
		if i > 0 && (e.Epoch <= l.Epochs[i-1].Epoch || e.StartOffset <= l.Epochs[i-1].StartOffset) {
			return logView{}, fmt.Errorf("kraft: epoch entries %+v and %+v out of order", l.Epochs[i-1], e)
		}
	}
	if last := l.Epochs[len(l.Epochs)-1]; last.Epoch != l.End.Epoch {
		return logView{}, fmt.Errorf("kraft: log end epoch %d is not the last epoch %d", l.End.Epoch, last.Epoch)
	}
	epochs := make([]EpochStart, len(l.Epochs))
	copy(epochs, l.Epochs)
	return logView{end: l.End, epochs: epochs, flushed: l.End.Offset}, nil
}

// appended returns the view after the host wrote records up to end. The
// caller has checked that end extends the log (a larger offset, an epoch
// not below the last one).
func (v logView) appended(end LogEnd) logView {
	if len(v.epochs) == 0 || end.Epoch > v.epochs[len(v.epochs)-1].Epoch {
		// A new epoch starts at the previous log end. The clipped capacity
		// makes append copy, so older states keep their history.
		v.epochs = append(v.epochs[:len(v.epochs):len(v.epochs)], EpochStart{Epoch: end.Epoch, StartOffset: v.end.Offset})
	}
	v.end = end
	return v
}

// endOffsetForEpoch returns the largest local epoch not greater than epoch
// and the offset where it ends (the start of the next epoch, or the log end).
// With no such epoch it returns the requested epoch itself and the start of
// the first epoch, as Kafka's LeaderEpochFileCache.endOffsetFor does ("the
// requested epoch is smaller than any known epoch").
// Kafka's ReplicatedLog.endOffsetForEpoch (without snapshots).
func (v logView) endOffsetForEpoch(epoch Epoch) (Epoch, int64) {
	lower := epoch
	for _, e := range v.epochs {
		if e.Epoch > epoch {
			return lower, e.StartOffset
		}
		lower = e.Epoch
	}
	return v.end.Epoch, v.end.Offset
}

// truncated returns the view after every record at or after offset was
// removed.
func (v logView) truncated(offset int64) logView {
	if offset >= v.end.Offset {
		return v
	}
	n := len(v.epochs)
	for n > 0 && v.epochs[n-1].StartOffset >= offset {
		n--
	}
	if n == 0 {
		v.epochs = nil
	} else {
		v.epochs = v.epochs[:n:n]
	}
	v.end = LogEnd{Offset: offset}
	if n > 0 {
		v.end.Epoch = v.epochs[n-1].Epoch
	}
	if v.flushed > offset {
		v.flushed = offset
	}
	return v
}

// truncationPoint is where a follower truncates its log after the leader
// answered with the diverging point d (Kafka's handleFetchResponse).
func (v logView) truncationPoint(d LogOffsetMetadata) int64 {
	if d.Epoch == 0 {
		return min64(d.Offset, v.end.Offset)
	}
	e, o := v.endOffsetForEpoch(d.Epoch)
	if e == d.Epoch {
		return min64(o, d.Offset)
	}
	return o
}

func min64(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}
