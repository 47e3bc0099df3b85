//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// jsonRecords parses kraftd's stderr written with -log-format json: one
// object a line.
func jsonRecords(t *testing.T, out string) []map[string]interface{} {
	t.Helper()
	var recs []map[string]interface{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r map[string]interface{}
		require.NoError(t, json.Unmarshal([]byte(line), &r), "not a JSON record: %q", line)
		recs = append(recs, r)
	}
	return recs
}

// TestRunLogsJSONInUTC: with -log-format json every line of stderr is a
// JSON record with a UTC time and a level; the runtime's records carry
// their event and attributes; -log-level leaves out the records below it.
func TestRunLogsJSONInUTC(t *testing.T) {
	runOnce := func(level string) string {
		ports := []string{freeAddr(t), freeAddr(t)}
		sigs := make(chan os.Signal, 1)
		var stderr syncBuffer
		code := make(chan int, 1)
		args := formatted(t, []string{
			"-cluster-id", testClusterID, "-id", "1", "-voters", "1@" + ports[0], "-dir", t.TempDir(), "-http", ports[1],
			"-election-timeout", "50ms", "-fetch-timeout", "100ms", "-log-format", "json", "-log-level", level,
		})
		go func() { code <- run(args, os.Stdout, &stderr, sigs) }()
		require.Eventually(t, func() bool {
			c, _ := httpPost(t, "http://"+ports[1]+"/append", "x")
			return c == 200
		}, 10*time.Second, 10*time.Millisecond)
		sigs <- os.Interrupt
		require.Equal(t, exitOK, <-code, stderr.String())
		return stderr.String()
	}

	recs := jsonRecords(t, runOnce("info"))
	var leader map[string]interface{}
	for _, r := range recs {
		ts, ok := r["time"].(string)
		require.True(t, ok, "%v", r)
		require.True(t, strings.HasSuffix(ts, "Z"), "UTC: %v", r)
		tm, err := time.Parse(time.RFC3339Nano, ts)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now(), tm, time.Minute)
		require.Contains(t, []string{"INFO", "WARN", "ERROR"}, r["level"], "%v", r)
		if r["event"] == "role_changed" && r["to"] == "Leader" {
			leader = r
		}
	}
	require.NotNil(t, leader, "%v", recs)
	require.Equal(t, "won election", leader["reason"])
	require.Equal(t, 1.0, leader["node"])
	require.Equal(t, 1.0, leader["epoch"])
	require.Equal(t, "stopped", recs[len(recs)-1]["msg"].(string)[len("kraftd: "):])

	for _, r := range jsonRecords(t, runOnce("warn")) {
		require.NotEqual(t, "INFO", r["level"], "-log-level warn: %v", r)
	}
}

// TestLogTimesInUTC: a record's time is written in UTC, whatever its
// zone (the machine's local time), in both formats.
func TestLogTimesInUTC(t *testing.T) {
	at := time.Date(2026, 12, 3, 20, 30, 0, 0, time.FixedZone("UTC+5", 5*3600))
	for format, want := range map[string]string{
		"text": "time=2026-12-03T15:30:00.000Z ",
		"json": `{"time":"2026-12-03T15:30:00Z",`,
	} {
		var b bytes.Buffer
		l := newSlogger(&b, format, slog.LevelInfo)
		require.NoError(t, l.Handler().Handle(context.Background(), slog.NewRecord(at, slog.LevelInfo, "m", 0)))
		require.True(t, strings.HasPrefix(b.String(), want), "%s: %s", format, b.String())
	}
}

// TestKraftdLineLevels: kraftd's own lines get their level from
// lineLevels: the error before an exit with status 1 is an ERROR record.
func TestKraftdLineLevels(t *testing.T) {
	var b bytes.Buffer
	l := lineLogger(newSlogger(&b, "json", -4))
	l.Printf("kraftd: opening the log: %v", "storage: damaged")
	l.Printf("kraftd: -config: line 3: foo is not used by kraftd (ignored)")
	l.Printf("kraftd: HTTP API on http://127.0.0.1:1")
	l.Printf("kraftd: KRAFTD_SYNC_DELAY=\"x\": want a duration such as 500ms")
	recs := jsonRecords(t, b.String())
	require.Len(t, recs, 4)
	require.Equal(t, "ERROR", recs[3]["level"])
	require.Equal(t, "ERROR", recs[0]["level"])
	require.Equal(t, "kraftd: opening the log: storage: damaged", recs[0]["msg"])
	require.Equal(t, "WARN", recs[1]["level"])
	require.Equal(t, "INFO", recs[2]["level"])

	b.Reset()
	l = lineLogger(newSlogger(&b, "text", 8)) // errors only
	l.Printf("kraftd: HTTP API on http://127.0.0.1:1")
	l.Printf("kraftd: the replica stopped: boom")
	require.Equal(t, 1, strings.Count(b.String(), "\n"), b.String())
	require.Contains(t, b.String(), `level=ERROR msg="kraftd: the replica stopped: boom"`)
}

func TestLogFlags(t *testing.T) {
	base := []string{"-cluster-id", testClusterID, "-id", "1", "-voters", "1@127.0.0.1:9091", "-dir", "d"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-log-format", "xml"}, `-log-format "xml": want text or json`},
		{[]string{"-log-level", "loud"}, `-log-level "loud": want debug, info, warn or error`},
		{[]string{"-lag-threshold", "0"}, "-lag-threshold and -slow-sync-threshold: want a positive value"},
		{[]string{"-slow-sync-resign", "-1"}, "-slow-sync-resign -1: want 0 (never) or a number of syncs"},
	} {
		_, err := parseConfig(append(append([]string(nil), base...), tc.args...))
		require.ErrorContains(t, err, tc.want)
	}
	c, err := parseConfig(append(base, "-log-level", "DEBUG", "-log-format", "json", "-lag-threshold", "-1", "-slow-sync-threshold", "2s", "-slow-sync-resign", "3"))
	require.NoError(t, err)
	require.Equal(t, "json", c.logFormat)
	require.Equal(t, "DEBUG", c.logLevel.String())
	require.Equal(t, int64(-1), c.lagThreshold)
	require.Equal(t, 2*time.Second, c.slowSyncThreshold)
	require.Equal(t, 3, c.slowSyncResign)
	c, err = parseConfig(base)
	require.NoError(t, err)
	require.Equal(t, "text", c.logFormat)
	require.Equal(t, "INFO", c.logLevel.String())
}

// TestSyncDelayEnv: a bad KRAFTD_SYNC_DELAY stops kraftd at start, as an
// ERROR record naming it.
func TestSyncDelayEnv(t *testing.T) {
	t.Setenv(syncDelayEnv, "soon")
	var stderr syncBuffer
	code := run(formatted(t, []string{"-cluster-id", testClusterID, "-id", "1", "-voters", "1@" + freeAddr(t), "-dir", t.TempDir(), "-log-format", "json"}),
		os.Stdout, &stderr, nil)
	require.Equal(t, exitFail, code, stderr.String())
	recs := jsonRecords(t, stderr.String())
	last := recs[len(recs)-1]
	require.Equal(t, "ERROR", last["level"])
	require.Equal(t, `kraftd: KRAFTD_SYNC_DELAY="soon": want a duration such as 500ms`, last["msg"])
}
