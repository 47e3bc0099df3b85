package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/kraftquorum/kraft/node"
)

// The key-value API on kraftd's -http address (docs/kraftd.md, D123-D125):
//
//	PUT    /kv/{key}        the body is the value: 200 {"offset"} once
//	                        committed and applied here
//	GET    /kv/{key}        linearizable (node.Node.ReadIndex): 200
//	                        {"value", "offset"}, 404 {"error", "offset"}
//	GET    /kv/{key}?consistency=stale
//	                        the same from this replica's applied state
//	POST   /kv/{key}/cas    the body is {"from", "to"}: 200 {"offset"}, or
//	                        409 {"error", "value"} (the current value or
//	                        null) when the value was not "from"
//	DELETE /kv/{key}        200 {"offset"}
//
// 400: a bad key, value or body. 421 {"error", "leader", "epoch"}: this
// replica did not and will not apply the operation (it did not lead when
// the write was proposed, or it does not lead for a linearizable read and
// got no read point from the leader: followread.go).
// 503: the outcome is unknown (a write may or may not take effect).

// kvPrefix is the key-value API's path.
const kvPrefix = "/kv/"

// maxCASBody bounds a CAS request's body: two values of maxValueBytes,
// each at most six bytes of JSON per byte (\u0000).
const maxCASBody = 12*maxValueBytes + 1024

// casBody is POST /kv/{key}/cas's body.
type casBody struct {
	From *string `json:"from"`
	To   *string `json:"to"`
}

type offsetBody struct {
	Offset int64 `json:"offset"`
}

type valueBody struct {
	Value  string `json:"value"`
	Offset int64  `json:"offset"`
}

type notFoundBody struct {
	Error  string `json:"error"`
	Offset int64  `json:"offset"`
}

type conflictBody struct {
	Error string  `json:"error"`
	Value *string `json:"value"`
}

// kvHandler serves the key-value API from r and m.
func kvHandler(r replica, m *machine, o *handlerOptions) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		// The path is taken as it is, not cleaned: "." and ".." are keys.
		// Escaped, so that "%2F" is not "/" (keys need no escaping).
		rest := strings.TrimPrefix(req.URL.EscapedPath(), kvPrefix)
		key, cas := rest, false
		if k, ok := strings.CutSuffix(rest, "/cas"); ok {
			key, cas = k, true
		}
		if err := checkKey(key); err != nil {
			writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
			return
		}
		switch {
		case cas:
			if !allow(w, req, http.MethodPost) {
				return
			}
			var b casBody
			dec := json.NewDecoder(http.MaxBytesReader(w, req.Body, maxCASBody))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&b); err != nil || b.From == nil || b.To == nil {
				writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("the body: want {\"from\": string, \"to\": string} (%v)", err)})
				return
			}
			for _, v := range []string{*b.From, *b.To} {
				if err := checkValue(v); err != nil {
					writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
					return
				}
			}
			kvWrite(w, req, r, m, kvOp{op: opCAS, key: key, expected: *b.From, value: *b.To})
		case req.Method == http.MethodPut:
			v, err := io.ReadAll(io.LimitReader(req.Body, maxValueBytes+1))
			if err != nil {
				writeJSON(w, http.StatusBadRequest, errorBody{Error: "reading the value: " + err.Error()})
				return
			}
			if err := checkValue(string(v)); err != nil {
				writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error()})
				return
			}
			kvWrite(w, req, r, m, kvOp{op: opPut, key: key, value: string(v)})
		case req.Method == http.MethodDelete:
			kvWrite(w, req, r, m, kvOp{op: opDelete, key: key})
		case req.Method == http.MethodGet:
			kvRead(w, req, r, m, o, key)
		default:
			w.Header().Set("Allow", "GET, PUT, DELETE")
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: req.Method + " not allowed, use GET, PUT or DELETE"})
		}
	}
}

// kvWrite appends op at the leader and answers once it is committed and
// applied here. Only a refusal of the proposal (node.NotLeaderError: the
// replica did not lead, nothing was appended) is 421; every other failure
// is 503, since the record may have been appended (D124).
func kvWrite(w http.ResponseWriter, req *http.Request, r replica, m *machine, op kvOp) {
	if plantedEarlyAck(w, r, op) { // a kraftdbug build only (D141)
		return
	}
	ctx, cancel := context.WithTimeout(req.Context(), appendTimeout)
	defer cancel()
	offset, err := r.Append(ctx, op.encode())
	if err != nil {
		var nl *node.NotLeaderError
		if errors.As(err, &nl) {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error() + " (the write may or may not take effect)"})
		return
	}
	if err := r.WaitApplied(ctx, offset); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: fmt.Sprintf("committed at offset %d, not applied here yet: %v", offset, err)})
		return
	}
	if op.op != opCAS {
		writeJSON(w, http.StatusOK, offsetBody{Offset: offset})
		return
	}
	out, ok := m.casResult(offset)
	switch {
	case !ok:
		// Applied through a snapshot: committed, but its outcome is not
		// known here.
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: fmt.Sprintf("committed at offset %d, its outcome is not known here", offset)})
	case out.ok:
		writeJSON(w, http.StatusOK, offsetBody{Offset: offset})
	default:
		writeJSON(w, http.StatusConflict, conflictBody{Error: fmt.Sprintf("the value of %q was not %q at offset %d: nothing changed", op.key, op.expected, offset), Value: out.current})
	}
}

// kvRead answers GET /kv/{key}: after node.Node.ReadIndex unless
// consistency=stale. 200's offset is the record that wrote the value;
// 404's is the point the read was served at (every record below it was
// applied). A follower with the leader's HTTP address reads at a point
// the leader gives it (followread.go, D152).
func kvRead(w http.ResponseWriter, req *http.Request, r replica, m *machine, o *handlerOptions, key string) {
	switch c := req.URL.Query().Get("consistency"); c {
	case "stale":
	case "", "linearizable":
		if plantedStaleRead(r) { // a kraftdbug build only (D141)
			break
		}
		ctx, cancel := context.WithTimeout(req.Context(), appendTimeout)
		defer cancel()
		if _, err := r.ReadIndex(ctx); err != nil {
			var nl *node.NotLeaderError
			if !errors.As(err, &nl) {
				writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error() + " (try again)"})
				return
			}
			if _, ferr := followerRead(ctx, r, o, nl); ferr != nil {
				if errors.Is(ferr, errNoPoint) {
					writeError(w, err)
					return
				}
				writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: ferr.Error() + " (try again)"})
				return
			}
		}
	default:
		writeJSON(w, http.StatusBadRequest, errorBody{Error: fmt.Sprintf("consistency %q: want stale or linearizable", c)})
		return
	}
	e, ok, next := m.get(key)
	if !ok {
		writeJSON(w, http.StatusNotFound, notFoundBody{Error: fmt.Sprintf("no key %q", key), Offset: next})
		return
	}
	writeJSON(w, http.StatusOK, valueBody{Value: e.Value, Offset: e.Offset})
}
