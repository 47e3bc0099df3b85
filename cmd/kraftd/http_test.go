package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
	"github.com/stretchr/testify/require"
)

// fakeReplica answers the HTTP API's calls with canned results.
type fakeReplica struct {
	status    node.Status
	statusErr error
	offset    int64
	appendErr error
	resignErr error
	appended  [][]byte

	// TransferLeadership answers transfer and transferErr, and records
	// the targets.
	transfer    node.Transfer
	transferErr error
	transferTo  []kraft.NodeID

	voters       []node.VoterInfo
	kraftVersion int16
	changeErr    error
	changes      []string

	metrics node.Metrics

	// The key-value API: onAppend sees each appended record at offset;
	// ReadIndex answers readErr, WaitApplied waitErr.
	onAppend func(offset int64, data []byte)
	readErr  error
	waitErr  error
}

func (f *fakeReplica) ReadIndex(context.Context) (int64, error) { return f.offset, f.readErr }

func (f *fakeReplica) WaitApplied(context.Context, int64) error { return f.waitErr }

func (f *fakeReplica) Metrics() (node.Metrics, error) { return f.metrics, f.statusErr }

func (f *fakeReplica) Status() (node.Status, error) { return f.status, f.statusErr }

func (f *fakeReplica) Append(_ context.Context, records ...[]byte) (int64, error) {
	f.appended = append(f.appended, records...)
	if f.onAppend != nil && f.appendErr == nil {
		for _, r := range records {
			f.onAppend(f.offset, r)
		}
	}
	return f.offset, f.appendErr
}

func (f *fakeReplica) Resign() error { return f.resignErr }

func (f *fakeReplica) TransferLeadership(_ context.Context, to kraft.NodeID) (node.Transfer, error) {
	f.transferTo = append(f.transferTo, to)
	return f.transfer, f.transferErr
}

func (f *fakeReplica) Voters() ([]node.VoterInfo, int16, error) {
	return f.voters, f.kraftVersion, f.statusErr
}

func (f *fakeReplica) AddVoter(_ context.Context, key kraft.ReplicaKey, endpoint string) error {
	f.changes = append(f.changes, fmt.Sprintf("add %v %s", key, endpoint))
	return f.changeErr
}

func (f *fakeReplica) RemoveVoter(_ context.Context, key kraft.ReplicaKey) error {
	f.changes = append(f.changes, fmt.Sprintf("remove %v", key))
	return f.changeErr
}

func (f *fakeReplica) UpdateVoter(_ context.Context, key kraft.ReplicaKey, endpoint string) error {
	f.changes = append(f.changes, fmt.Sprintf("update %v %s", key, endpoint))
	return f.changeErr
}

func serveOnce(t *testing.T, r replica, method, path, body string) (int, map[string]interface{}) {
	t.Helper()
	return serveWith(t, r, nil, method, path, body)
}

func serveWith(t *testing.T, r replica, m *machine, method, path, body string) (int, map[string]interface{}) {
	t.Helper()
	rec := httptest.NewRecorder()
	newHandler(r, m, node.VoterInfo{ID: 2}, 100).ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var out map[string]interface{}
	dec := json.NewDecoder(rec.Body)
	dec.UseNumber()
	require.NoError(t, dec.Decode(&out))
	return rec.Code, out
}

func TestHTTPStatus(t *testing.T) {
	f := &fakeReplica{status: node.Status{ID: 2, Role: "Follower", Epoch: 3, Leader: 1, HighWatermark: 10, LogEnd: 12}}
	code, out := serveOnce(t, f, http.MethodGet, "/status", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{
		"id": json.Number("2"), "role": "Follower", "epoch": json.Number("3"), "leader": json.Number("1"),
		"high_watermark": json.Number("10"), "log_end": json.Number("12"), "log_end_epoch": json.Number("0"),
		"flushed": json.Number("0"), "log_start": json.Number("0"), "kraft_version": json.Number("0"),
	}, out)

	// With snapshots and a state machine.
	f.status.LogStart = 7
	f.status.LatestSnapshot = &node.SnapshotID{Offset: 7, Epoch: 2}
	f.status.SnapshotsTaken = 1
	m := &machine{}
	m.apply([]node.Record{{Offset: 8, Data: []byte("x")}})
	code, out = serveWith(t, f, m, http.MethodGet, "/status", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, json.Number("7"), out["log_start"])
	require.Equal(t, map[string]interface{}{"offset": json.Number("7"), "epoch": json.Number("2")}, out["latest_snapshot"])
	require.Equal(t, json.Number("1"), out["snapshots_taken"])
	require.Equal(t, map[string]interface{}{
		"records": json.Number("1"), "bytes": json.Number("1"), "applied": json.Number("9"),
		"digest": m.status().Digest,
	}, out["state"])

	f.statusErr = node.ErrStopped
	code, out = serveOnce(t, f, http.MethodGet, "/status", "")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "node: stopped", out["error"])

	code, _ = serveOnce(t, f, http.MethodPost, "/status", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
}

func TestHTTPAppend(t *testing.T) {
	f := &fakeReplica{offset: 41}
	code, out := serveOnce(t, f, http.MethodPost, "/append", "payload")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{"offset": json.Number("41")}, out)
	require.Equal(t, [][]byte{[]byte("payload")}, f.appended)

	for _, tc := range []struct {
		err    error
		code   int
		leader interface{}
	}{
		{&node.NotLeaderError{Leader: 3, Epoch: 7}, http.StatusMisdirectedRequest, json.Number("3")},
		{&node.NotLeaderError{Leader: -1, Epoch: 7}, http.StatusMisdirectedRequest, json.Number("-1")},
		{fmt.Errorf("wrapped: %w", &node.NotLeaderError{Leader: 2}), http.StatusMisdirectedRequest, json.Number("2")},
		{node.ErrTooManyAppends, http.StatusTooManyRequests, nil},
		{node.ErrLeadershipLost, http.StatusServiceUnavailable, nil},
		{context.DeadlineExceeded, http.StatusServiceUnavailable, nil},
		{fmt.Errorf("%w: disk", node.ErrStopped), http.StatusServiceUnavailable, nil},
		{errors.New("something else"), http.StatusInternalServerError, nil},
	} {
		f.appendErr = tc.err
		code, out := serveOnce(t, f, http.MethodPost, "/append", "x")
		require.Equal(t, tc.code, code, "%v", tc.err)
		require.Equal(t, tc.leader, out["leader"], "%v", tc.err)
		require.Contains(t, out["error"], tc.err.Error())
	}

	// A refused write is definite and says when to retry (D211).
	f.appendErr = node.ErrTooManyAppends
	rec := httptest.NewRecorder()
	newHandler(f, nil, node.VoterInfo{ID: 2}, 100).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/append", strings.NewReader("x")))
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), "nothing was appended")
	f.appendErr = nil

	code, _ = serveOnce(t, f, http.MethodGet, "/append", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	code, _ = serveOnce(t, f, http.MethodPost, "/append", strings.Repeat("x", maxRecordBytes+1))
	require.Equal(t, http.StatusRequestEntityTooLarge, code)
}

func TestHTTPResign(t *testing.T) {
	f := &fakeReplica{}
	code, out := serveOnce(t, f, http.MethodPost, "/resign", "")
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, out)
	f.resignErr = &node.NotLeaderError{Leader: 1, Epoch: 2}
	code, out = serveOnce(t, f, http.MethodPost, "/resign", "")
	require.Equal(t, http.StatusMisdirectedRequest, code)
	require.Equal(t, json.Number("1"), out["leader"])
	require.Equal(t, json.Number("2"), out["epoch"])
}

// TestHTTPResignToATarget: POST /resign?to=ID and the body {"to": ID}
// transfer the leadership to ID: 200 with the new leader, its epoch and
// the time taken; 421 off the leader; 400 for a target that is no other
// voter or a bad id; 504 when the target did not take over in time; 409
// when another replica did. A plain POST /resign transfers nothing.
func TestHTTPResignToATarget(t *testing.T) {
	f := &fakeReplica{transfer: node.Transfer{Leader: 3, Epoch: 7, Took: 42 * time.Millisecond}}
	code, out := serveOnce(t, f, http.MethodPost, "/resign?to=3", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{"leader": json.Number("3"), "epoch": json.Number("7"), "ms": json.Number("42")}, out)
	code, _ = serveOnce(t, f, http.MethodPost, "/resign", `{"to": 2}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []kraft.NodeID{3, 2}, f.transferTo)
	code, _ = serveOnce(t, f, http.MethodPost, "/resign", "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, f.transferTo, 2, "a plain resignation")

	for _, bad := range []struct{ path, body string }{
		{"/resign?to=x", ""}, {"/resign?to=-1", ""}, {"/resign", `{"to": "x"}`}, {"/resign", `{"id": 3}`},
	} {
		code, _ = serveOnce(t, f, http.MethodPost, bad.path, bad.body)
		require.Equal(t, http.StatusBadRequest, code, "%+v", bad)
	}
	require.Len(t, f.transferTo, 2)

	for _, tc := range []struct {
		err  error
		tr   node.Transfer
		code int
	}{
		{&node.NotLeaderError{Leader: 1, Epoch: 2}, node.Transfer{}, http.StatusMisdirectedRequest},
		{fmt.Errorf("node: transfer to 9: %w", node.ErrTransferTarget), node.Transfer{Leader: 1}, http.StatusBadRequest},
		{fmt.Errorf("node: transfer to 3: %w", node.ErrTransferTimeout), node.Transfer{Leader: 1, Epoch: 2}, http.StatusGatewayTimeout},
		{fmt.Errorf("node: transfer to 3: %w", node.ErrTransferOvertaken), node.Transfer{Leader: 2, Epoch: 3}, http.StatusConflict},
	} {
		f.transfer, f.transferErr = tc.tr, tc.err
		code, out = serveOnce(t, f, http.MethodPost, "/resign?to=3", "")
		require.Equal(t, tc.code, code, "%v", tc.err)
		require.Contains(t, out["error"], tc.err.Error())
		if tc.code == http.StatusGatewayTimeout || tc.code == http.StatusConflict {
			require.Equal(t, json.Number(fmt.Sprint(tc.tr.Leader)), out["leader"])
			require.Equal(t, json.Number(fmt.Sprint(tc.tr.Epoch)), out["epoch"])
		}
	}
}

// freeAddr returns a free address on 127.0.0.1.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func httpPost(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/octet-stream", strings.NewReader(body)) //nolint:noctx // a test against a local server
	if err != nil {
		return 0, nil
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func decodeOffset(t *testing.T, body []byte) int64 {
	t.Helper()
	var out struct{ Offset int64 }
	require.NoError(t, json.Unmarshal(body, &out), string(body))
	return out.Offset
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const testDir = "b5f2c9d4-8a1e-4c3b-9f7d-2e6a1b0c4d8e"

// TestHTTPVoters: GET /voters shows the voter set, the kraft.version and
// the local key; POST /voters/add, /remove and /update pass the key and
// endpoint on and map the answers to status codes.
func TestHTTPVoters(t *testing.T) {
	dir := uuid.MustParse(testDir)
	f := &fakeReplica{kraftVersion: 1, voters: []node.VoterInfo{{ID: 1, DirectoryID: dir, Endpoint: "127.0.0.1:9091"}}}
	code, out := serveOnce(t, f, http.MethodGet, "/voters", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{
		"kraft_version": json.Number("1"),
		"voters":        []interface{}{map[string]interface{}{"id": json.Number("1"), "directory_id": testDir, "endpoint": "127.0.0.1:9091"}},
		"local":         map[string]interface{}{"id": json.Number("2"), "directory_id": "00000000-0000-0000-0000-000000000000"},
	}, out)
	code, _ = serveOnce(t, &fakeReplica{}, http.MethodGet, "/voters", "")
	require.Equal(t, http.StatusOK, code, "a static voter set")
	code, _ = serveOnce(t, f, http.MethodPost, "/voters", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)

	body := `{"id": 4, "directory_id": "` + testDir + `", "endpoint": "127.0.0.1:9094"}`
	for _, path := range []string{"/voters/add", "/voters/update"} {
		code, out = serveOnce(t, f, http.MethodPost, path, body)
		require.Equal(t, http.StatusOK, code, "%s: %v", path, out)
	}
	code, _ = serveOnce(t, f, http.MethodPost, "/voters/remove", `{"id": 4, "directory_id": "tfLJ1IoeTDuffS5qGwxNjg"}`)
	require.Equal(t, http.StatusOK, code)
	key := kraft.ReplicaKey{ID: 4, DirectoryID: dir}
	require.Equal(t, []string{
		fmt.Sprintf("add %v 127.0.0.1:9094", key), fmt.Sprintf("update %v 127.0.0.1:9094", key), fmt.Sprintf("remove %v", key),
	}, f.changes)

	for name, bad := range map[string]string{
		"not JSON":          "x",
		"no id":             `{"directory_id": "` + testDir + `", "endpoint": "127.0.0.1:1"}`,
		"negative id":       `{"id": -1, "directory_id": "` + testDir + `", "endpoint": "127.0.0.1:1"}`,
		"no directory id":   `{"id": 4, "endpoint": "127.0.0.1:1"}`,
		"zero directory id": `{"id": 4, "directory_id": "00000000-0000-0000-0000-000000000000", "endpoint": "127.0.0.1:1"}`,
		"no endpoint":       `{"id": 4, "directory_id": "` + testDir + `"}`,
		"bad endpoint":      `{"id": 4, "directory_id": "` + testDir + `", "endpoint": "nowhere"}`,
		"unknown field":     `{"id": 4, "directory_id": "` + testDir + `", "endpoint": "127.0.0.1:1", "x": 1}`,
	} {
		code, _ := serveOnce(t, f, http.MethodPost, "/voters/add", bad)
		require.Equal(t, http.StatusBadRequest, code, name)
	}
	code, _ = serveOnce(t, f, http.MethodPost, "/voters/remove", body)
	require.Equal(t, http.StatusBadRequest, code, "an endpoint with a removal")
	code, _ = serveOnce(t, f, http.MethodGet, "/voters/add", body)
	require.Equal(t, http.StatusMethodNotAllowed, code)

	for _, tc := range []struct {
		err  error
		code int
	}{
		{&node.VoterChangeError{Kind: kraft.AddVoter, Code: kraft.ErrDuplicateVoter}, http.StatusConflict},
		{&node.VoterChangeError{Kind: kraft.RemoveVoter, Code: kraft.ErrVoterNotFound}, http.StatusNotFound},
		{&node.VoterChangeError{Kind: kraft.AddVoter, Code: kraft.ErrRequestTimedOut}, http.StatusServiceUnavailable},
		{&node.VoterChangeError{Kind: kraft.AddVoter, Code: kraft.ErrInvalidRequest}, http.StatusBadRequest},
		{&node.NotLeaderError{Leader: 3, Epoch: 2}, http.StatusMisdirectedRequest},
		{context.DeadlineExceeded, http.StatusServiceUnavailable},
	} {
		f.changeErr = tc.err
		code, out := serveOnce(t, f, http.MethodPost, "/voters/add", body)
		require.Equal(t, tc.code, code, "%v", tc.err)
		var vc *node.VoterChangeError
		if errors.As(tc.err, &vc) {
			require.Equal(t, vc.Code.String(), out["code"])
		}
	}
}
