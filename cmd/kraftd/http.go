package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kraftquorum/kraft/node"
)

// appendTimeout bounds the wait for an appended record to commit.
const appendTimeout = 10 * time.Second

// maxRecordBytes is the largest record POST /append takes.
const maxRecordBytes = 1 << 20

// replica is what the HTTP API needs of a node.Node.
type replica interface {
	Status() (node.Status, error)
	Append(ctx context.Context, records ...[]byte) (int64, error)
	Resign() error
}

// status is GET /status: the replica's node.Status and, if there is one,
// its state machine's.
type status struct {
	node.Status
	State *machineStatus `json:"state,omitempty"`
}

// newHandler serves the HTTP API (m may be nil: no state in /status):
//
//	GET  /status  200 node.Status and the state machine's status as JSON
//	POST /append  the body is one record: 200 {"offset": N} once committed;
//	              421 {"error", "leader"} on a replica that does not lead;
//	              503 {"error"} if leadership was lost or the commit timed
//	              out (the record may or may not commit)
//	POST /resign  200 {} on the leader, 421 elsewhere
func newHandler(r replica, m *machine) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodGet) {
			return
		}
		st, err := r.Status()
		if err != nil {
			writeError(w, err)
			return
		}
		body := status{Status: st}
		if m != nil {
			ms := m.status()
			body.State = &ms
		}
		writeJSON(w, http.StatusOK, body)
	})
	mux.HandleFunc("/append", func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodPost) {
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxRecordBytes))
		if err != nil {
			writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: "reading the record: " + err.Error()})
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), appendTimeout)
		defer cancel()
		offset, err := r.Append(ctx, body)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, struct {
			Offset int64 `json:"offset"`
		}{offset})
	})
	mux.HandleFunc("/resign", func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodPost) {
			return
		}
		if err := r.Resign(); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
	})
	return mux
}

// allow answers 405 to any method but method.
func allow(w http.ResponseWriter, req *http.Request, method string) bool {
	if req.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: req.Method + " not allowed, use " + method})
	return false
}

type errorBody struct {
	Error string `json:"error"`
}

// writeError answers err: 421 with the leader's id (-1 if unknown) when
// this replica does not lead, 503 when the outcome is unknown or the
// replica has stopped, 500 otherwise.
func writeError(w http.ResponseWriter, err error) {
	var nl *node.NotLeaderError
	switch {
	case errors.As(err, &nl):
		writeJSON(w, http.StatusMisdirectedRequest, struct {
			Error  string `json:"error"`
			Leader int32  `json:"leader"`
			Epoch  int32  `json:"epoch"`
		}{err.Error(), int32(nl.Leader), int32(nl.Epoch)})
	case errors.Is(err, node.ErrLeadershipLost),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled):
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error() + " (the record may or may not commit)"})
	case errors.Is(err, node.ErrStopped):
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error()})
	default:
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: err.Error()})
	}
}

func writeJSON(w http.ResponseWriter, code int, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// httpServer is an http.Server that counts the requests it is serving, so
// that stop can let them finish and then close every connection at once.
// (http.Server.Shutdown also waits up to 5s for connections on which no
// request has arrived, which a client's connection pool leaves behind.)
type httpServer struct {
	http.Server
	active int64 // atomic: requests being served
}

func newHTTPServer(h http.Handler) *httpServer {
	s := &httpServer{}
	s.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		atomic.AddInt64(&s.active, 1)
		defer atomic.AddInt64(&s.active, -1)
		h.ServeHTTP(w, req)
	})
	s.ReadHeaderTimeout = 10 * time.Second
	return s
}

// stop waits up to wait for the requests being served to finish, then
// closes the listener and every connection.
func (s *httpServer) stop(wait time.Duration) {
	s.SetKeepAlivesEnabled(false)
	deadline := time.Now().Add(wait)
	for atomic.LoadInt64(&s.active) > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	_ = s.Close()
}
