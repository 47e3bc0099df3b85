package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/node"
)

// appendTimeout bounds the wait for an appended record to commit.
const appendTimeout = 10 * time.Second

// maxRecordBytes is the largest record POST /append takes.
const maxRecordBytes = 1 << 20

// voterChangeTimeout bounds the wait for a voter change to commit.
const voterChangeTimeout = 10 * time.Second

// replica is what the HTTP API needs of a node.Node.
type replica interface {
	Status() (node.Status, error)
	Append(ctx context.Context, records ...[]byte) (int64, error)
	Resign() error
	TransferLeadership(ctx context.Context, target kraft.NodeID) (node.Transfer, error)
	Voters() ([]node.VoterInfo, int16, error)
	AddVoter(ctx context.Context, key kraft.ReplicaKey, endpoint string) error
	RemoveVoter(ctx context.Context, key kraft.ReplicaKey) error
	UpdateVoter(ctx context.Context, key kraft.ReplicaKey, endpoint string) error
	Metrics() (node.Metrics, error)
	ReadIndex(ctx context.Context) (int64, error)
	WaitApplied(ctx context.Context, offset int64) error
}

// voterBody is the JSON body of POST /voters/add, /voters/remove and
// /voters/update, and one voter of GET /voters. The directory id is a
// UUID in either text form (8-4-4-4-12 hex digits or Kafka's base64).
type voterBody struct {
	ID          *int32 `json:"id"`
	DirectoryID string `json:"directory_id"`
	Endpoint    string `json:"endpoint,omitempty"`
}

// votersBody is GET /voters: the voter set in force as this replica knows
// it, the kraft.version, and this replica's own key and endpoint (what
// POST /voters/add at the leader needs to add it).
type votersBody struct {
	KRaftVersion int16            `json:"kraft_version"`
	Voters       []node.VoterInfo `json:"voters"`
	Local        node.VoterInfo   `json:"local"`
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
//	              413 {"error"} if the body is over maxRecordBytes or
//	              unreadable; 421 {"error", "leader"} on a replica that
//	              does not lead; 503 {"error"} if leadership was lost or the
//	              commit timed out (the record may or may not commit); 500
//	              {"error"} if writing it to the log failed; 400 if it
//	              starts with kvMagic (a key-value operation: use /kv)
//	POST /resign  200 {} on the leader, 421 elsewhere
//	POST /resign?to=ID (or the body {"to": ID})
//	              hands the leadership to voter ID (docs/design.md D135):
//	              200 {"leader", "epoch", "ms"} once ID leads; 421 off the
//	              leader; 400 if ID is this replica or no voter; 504
//	              {"error", "leader", "epoch"} if ID did not catch up or
//	              get elected in time (the leader leads on when ID did
//	              not catch up), 409 if another replica took over
//	GET  /voters  200 {"kraft_version", "voters", "local"}
//	POST /voters/add, /voters/remove, /voters/update
//	              the body is {"id", "directory_id", "endpoint"} (no
//	              endpoint for remove): 200 {} once the change is committed
//	              (update: written); 421 on a replica that does not lead;
//	              400 on a bad body; 409 {"error", "code"} DUPLICATE_VOTER;
//	              404 VOTER_NOT_FOUND; 503 REQUEST_TIMED_OUT (another change
//	              is not committed yet, or the new voter did not catch up or
//	              answer in time; try again); 400 for the other codes
//	GET  /readindex 200 {"offset", "epoch"}: a read point at the leader,
//	              for the followers' linearizable reads (followread.go)
//	GET  /metrics 200 node.Metrics in the Prometheus text format (metrics.go)
//	GET  /healthz 200: the process is alive
//	/kv/{key}     the replicated map (kvhttp.go), if m is not nil
//	GET  /readyz  200 if the replica leads with a majority of the voters in
//	              contact (D89), or follows a leader and its high
//	              watermark is at most readyMaxLag records behind the
//	              leader's; 503 otherwise; the body says why
//
// local is this replica's own key and endpoint, for GET /voters.
func newHandler(r replica, m *machine, local node.VoterInfo, readyMaxLag int64, opts ...handlerOption) http.Handler {
	var o handlerOptions
	for _, f := range opts {
		f(&o)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/readindex", readIndexHandler(r)) // followread.go
	addOpsHandlers(mux, r, readyMaxLag)
	mux.HandleFunc("/voters", votersHandler(r, local))
	for _, kind := range []kraft.VoterChangeKind{kraft.AddVoter, kraft.RemoveVoter, kraft.UpdateVoter} {
		path := map[kraft.VoterChangeKind]string{kraft.AddVoter: "/voters/add", kraft.RemoveVoter: "/voters/remove", kraft.UpdateVoter: "/voters/update"}[kind]
		mux.HandleFunc(path, voterChangeHandler(r, kind))
	}
	mux.HandleFunc("/status", statusHandler(r, m))
	mux.HandleFunc("/append", appendHandler(r))
	mux.HandleFunc("/resign", resignHandler(r))
	if m == nil {
		return mux
	}
	kv := kvHandler(r, m, &o)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// Before the mux, which would redirect /kv/. and /kv/.. (keys).
		if strings.HasPrefix(req.URL.Path, kvPrefix) {
			kv(w, req)
			return
		}
		mux.ServeHTTP(w, req)
	})
}

// votersHandler serves GET /voters: the voter set and this replica.
func votersHandler(r replica, local node.VoterInfo) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodGet) {
			return
		}
		vs, version, err := r.Voters()
		if err != nil {
			writeError(w, err)
			return
		}
		if vs == nil {
			vs = []node.VoterInfo{}
		}
		writeJSON(w, http.StatusOK, votersBody{KRaftVersion: version, Voters: vs, Local: local})
	}
}

// voterChangeHandler serves POST /voters/add, /voters/remove or
// /voters/update, as kind says.
func voterChangeHandler(r replica, kind kraft.VoterChangeKind) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodPost) {
			return
		}
		key, endpoint, err := readVoterBody(req, w, kind != kraft.RemoveVoter)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), voterChangeTimeout)
		defer cancel()
		switch kind {
		case kraft.AddVoter:
			err = r.AddVoter(ctx, key, endpoint)
		case kraft.RemoveVoter:
			err = r.RemoveVoter(ctx, key)
		case kraft.UpdateVoter:
			err = r.UpdateVoter(ctx, key, endpoint)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

// statusHandler serves GET /status: the replica's status and, with a
// machine, its state.
func statusHandler(r replica, m *machine) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
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
	}
}

// appendHandler serves POST /append: the body is a record to append.
func appendHandler(r replica) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodPost) {
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxRecordBytes))
		if err != nil {
			writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: "reading the record: " + err.Error()})
			return
		}
		if isKVRecord(body) {
			// Map operations go through /kv (D123).
			writeJSON(w, http.StatusBadRequest, errorBody{Error: "a record starting with " + kvMagic + " is a key-value operation: use /kv"})
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
	}
}

// resignHandler serves POST /resign: the leader resigns, or hands
// leadership over to the replica the request names.
func resignHandler(r replica) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !allow(w, req, http.MethodPost) {
			return
		}
		to, ok, err := resignTarget(req, w)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
			return
		}
		if ok {
			transfer(w, req, r, to)
			return
		}
		if err := r.Resign(); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

// transferTimeout bounds POST /resign?to=ID: the target's catch-up has
// the election timeout at most (node.TransferLeadership), the election a
// few round trips.
const transferTimeout = 10 * time.Second

// resignTarget reads the target of POST /resign: ?to=ID or the body
// {"to": ID}; ok is false for a plain resignation (no target).
func resignTarget(req *http.Request, w http.ResponseWriter) (kraft.NodeID, bool, error) {
	if q := req.URL.Query().Get("to"); q != "" {
		id, err := strconv.ParseInt(q, 10, 32)
		if err != nil || id < 0 {
			return 0, false, fmt.Errorf("?to=%q: want a voter's non-negative id", q)
		}
		return kraft.NodeID(id), true, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, 1<<16))
	if err != nil {
		return 0, false, fmt.Errorf("reading the body: %w", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return 0, false, nil
	}
	var b struct {
		To *int32 `json:"to"`
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || b.To == nil || *b.To < 0 {
		return 0, false, errors.New(`the body: want {"to": ID} with a voter's non-negative id, or no body`)
	}
	return kraft.NodeID(*b.To), true, nil
}

// transfer answers POST /resign?to=ID.
func transfer(w http.ResponseWriter, req *http.Request, r replica, to kraft.NodeID) {
	ctx, cancel := context.WithTimeout(req.Context(), transferTimeout)
	defer cancel()
	tr, err := r.TransferLeadership(ctx, to)
	type failed struct {
		Error  string `json:"error"`
		Leader int32  `json:"leader"`
		Epoch  int32  `json:"epoch"`
	}
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, struct {
			Leader int32 `json:"leader"`
			Epoch  int32 `json:"epoch"`
			Ms     int64 `json:"ms"`
		}{int32(tr.Leader), int32(tr.Epoch), tr.Took.Milliseconds()})
	case errors.Is(err, node.ErrTransferTarget):
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
	case errors.Is(err, node.ErrTransferOvertaken):
		writeJSON(w, http.StatusConflict, failed{err.Error(), int32(tr.Leader), int32(tr.Epoch)})
	case errors.Is(err, node.ErrTransferTimeout), errors.Is(err, context.DeadlineExceeded):
		writeJSON(w, http.StatusGatewayTimeout, failed{err.Error(), int32(tr.Leader), int32(tr.Epoch)})
	default:
		writeError(w, err)
	}
}

// readVoterBody reads a voter change's JSON body: an id and a directory
// id, and an endpoint (host:port) if withEndpoint.
func readVoterBody(req *http.Request, w http.ResponseWriter, withEndpoint bool) (kraft.ReplicaKey, string, error) {
	var b voterBody
	dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return kraft.ReplicaKey{}, "", fmt.Errorf("the body: %w (want {\"id\": N, \"directory_id\": UUID, \"endpoint\": host:port})", err)
	}
	if b.ID == nil || *b.ID < 0 {
		return kraft.ReplicaKey{}, "", errors.New("the body: want a non-negative \"id\"")
	}
	dir, err := parseUUID(b.DirectoryID)
	if err != nil {
		return kraft.ReplicaKey{}, "", fmt.Errorf("the body: \"directory_id\" %q: %w", b.DirectoryID, err)
	}
	if withEndpoint {
		if err := checkAddr(b.Endpoint, false); err != nil {
			return kraft.ReplicaKey{}, "", fmt.Errorf("the body: \"endpoint\" %q: %w", b.Endpoint, err)
		}
	} else if b.Endpoint != "" {
		return kraft.ReplicaKey{}, "", errors.New("the body: no \"endpoint\" for a removal")
	}
	return kraft.ReplicaKey{ID: kraft.NodeID(*b.ID), DirectoryID: dir}, b.Endpoint, nil
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
// this replica does not lead, 429 when the leader refused the write
// because too many wait for their commit (nothing was appended: retry
// later, docs/design.md D211), 503 when the outcome is unknown or the
// replica has stopped, 500 otherwise.
func writeError(w http.ResponseWriter, err error) {
	var nl *node.NotLeaderError
	var vc *node.VoterChangeError
	switch {
	case errors.As(err, &vc):
		code := http.StatusBadRequest
		switch vc.Code {
		case kraft.ErrDuplicateVoter:
			code = http.StatusConflict
		case kraft.ErrVoterNotFound:
			code = http.StatusNotFound
		case kraft.ErrRequestTimedOut:
			code = http.StatusServiceUnavailable
		}
		writeJSON(w, code, struct {
			Error string `json:"error"`
			Code  string `json:"code"`
		}{err.Error(), vc.Code.String()})
	case errors.As(err, &nl):
		writeJSON(w, http.StatusMisdirectedRequest, struct {
			Error  string `json:"error"`
			Leader int32  `json:"leader"`
			Epoch  int32  `json:"epoch"`
		}{err.Error(), int32(nl.Leader), int32(nl.Epoch)})
	case errors.Is(err, node.ErrTooManyAppends):
		// Definite, as 421: refused before anything was written (D211).
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusTooManyRequests, errorBody{Error: err.Error() + " (nothing was appended: retry later)"})
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
