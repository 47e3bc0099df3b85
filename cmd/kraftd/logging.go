package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"time"
)

// kraftd's log (docs/design.md D85, D86): log/slog records on stderr, as
// text (key=value) or JSON (-log-format), from -log-level up, with UTC
// timestamps. The runtime's records (package node) carry an "event" and,
// where an operator acts, an "advice" attribute; kraftd's own lines
// (startup, recovery, shutdown) are records whose message is the line,
// at the level lineLevels gives it.

// newSlogger makes kraftd's logger: format "text" or "json", records of
// level and above, times in UTC.
func newSlogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
				a.Value = slog.TimeValue(a.Value.Time().UTC())
			}
			return a
		},
	}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// parseLogFlags checks -log-format and -log-level.
func parseLogFlags(format, level string) (slog.Level, error) {
	if format != "text" && format != "json" {
		return 0, fmt.Errorf("-log-format %q: want text or json", format)
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return 0, fmt.Errorf("-log-level %q: want debug, info, warn or error", level)
	}
	return l, nil
}

// lineLevels gives kraftd's own lines (written with a log.Logger, "kraftd:
// ..." and the line) their level, by the start of the line; the others
// are Info. Errors are the lines before kraftd exits with status 1, and
// the causes of a damaged data directory (docs/design.md D112); warnings
// what an operator should look at.
var lineLevels = []struct {
	prefix string
	level  slog.Level
}{
	{"kraftd: creating the data directory", slog.LevelError},
	{"kraftd: opening the", slog.LevelError},
	{"kraftd: storage:", slog.LevelError},
	{"kraftd: meta.properties:", slog.LevelError},
	{"kraftd: node:", slog.LevelError},
	{"kraftd: the data directory", slog.LevelError},
	{"kraftd: damaged:", slog.LevelError},
	{"kraftd: moving the damaged data", slog.LevelError},
	{"kraftd: datadir:", slog.LevelError},
	{"kraftd: finished moving the damaged data", slog.LevelWarn},
	{"kraftd: starting the replica", slog.LevelError},
	{"kraftd: -http:", slog.LevelError},
	{"kraftd: the replica stopped", slog.LevelError},
	{"kraftd: HTTP server", slog.LevelError},
	{"kraftd: stopped with an error", slog.LevelError},
	{"kraftd: " + syncDelayEnv + "=", slog.LevelError},
	{"kraftd: fault injection:", slog.LevelWarn},
	{"kraftd: -config:", slog.LevelWarn},
	{"kraftd: log recovery dropped", slog.LevelWarn},
	{"kraftd: stopped leading without a successor", slog.LevelWarn},
}

// lineHandler sets the level of kraftd's own lines (lineLevels).
type lineHandler struct{ slog.Handler }

func (h lineHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h lineHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, l := range lineLevels {
		if strings.HasPrefix(r.Message, l.prefix) {
			r.Level = l.level
			break
		}
	}
	if strings.HasSuffix(r.Message, "again: exiting at once") {
		r.Level = slog.LevelWarn
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// lineLogger is a log.Logger whose lines are records of l (lineHandler).
func lineLogger(l *slog.Logger) *log.Logger {
	return slog.NewLogLogger(lineHandler{l.Handler()}, slog.LevelInfo)
}

// Defaults of -lag-threshold and -slow-sync-threshold: the runtime's.
const (
	defaultLagThreshold      = 10000
	defaultSlowSyncThreshold = 500 * time.Millisecond
)
