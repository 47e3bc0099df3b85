package jepsen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// record is one operation of the history: when it was sent (call) and
// answered (ret, -1 while it is pending), in nanoseconds since the start.
type record struct {
	client    int
	in        input
	out       output
	call, ret int64
	node      int // the replica it was sent to
}

// history is the operations of every client, in the order they were sent.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []record
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return int64(time.Since(h.start)) }

// invoke records an operation as sent and returns its index.
func (h *history) invoke(client, node int, in input) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, record{client: client, node: node, in: in, call: h.now(), ret: -1})
	return len(h.ops) - 1
}

func (h *history) complete(i int, out output) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops[i].out, h.ops[i].ret = out, h.now()
}

// snapshot returns the history so far as Porcupine's operations: an
// indeterminate write, and a pending one (which may yet take effect or
// not), returns at the end of the history, after every other operation;
// indeterminate and pending reads are left out (a read changes nothing).
// Treating a pending operation as indeterminate only allows more
// linearizations, so a snapshot that is not linearizable proves the whole
// history is not either.
func (h *history) snapshot() (ops []porcupine.Operation, counts map[outcome]int) {
	h.mu.Lock()
	recs := append([]record(nil), h.ops...)
	h.mu.Unlock()
	end := h.now()
	for _, r := range recs {
		if r.ret > end {
			end = r.ret
		}
	}
	end++
	observed := observedValues(recs)
	seenBy := firstObservers(recs)
	counts = map[outcome]int{}
	for _, r := range recs {
		out, ret := r.out, r.ret
		if ret < 0 {
			out = output{Outcome: outUnknown}
		}
		counts[out.Outcome]++
		if out.Outcome == outRefused {
			// Definite and not applied: the model's step for it is legal
			// in every state and changes nothing, so leaving it out
			// changes no verdict and saves Porcupine the search.
			continue
		}
		if out.Outcome == outUnknown {
			if r.in.Kind == opGet {
				continue
			}
			if r.in.Kind != opDel && !observed[r.in.Key+"="+r.in.Value] {
				counts["unknown, never observed"]++
				continue
			}
			ret = end
			if by, ok := seenBy[r.in.Key+"="+r.in.Value]; ok && r.in.Kind != opDel {
				ret = max(by, r.call)
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: r.client, Input: r.in, Output: out,
			Call: r.call, Return: ret, Metadata: fmt.Sprintf("node %d", r.node)})
	}
	return ops, counts
}

// dump writes every operation as a JSON line: the client, the node, the
// input, the output, and the call and return times in ms (-1: pending).
func (h *history) dump(t *testing.T, path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b bytes.Buffer
	for _, r := range h.ops {
		ret := -1.0
		if r.ret >= 0 {
			ret = float64(r.ret) / 1e6
		}
		line, _ := json.Marshal(map[string]interface{}{"client": r.client, "node": r.node, "in": r.in,
			"out": r.out, "call_ms": float64(r.call) / 1e6, "ret_ms": ret})
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Logf("writing the history: %v", err)
		return
	}
	t.Logf("history: %s", path)
}

// observedValues returns the values (as key=value) that the operations
// Porcupine checks observe: read, found by a 409, or named as a CAS's
// "from", by a definite operation or by an indeterminate CAS that is kept
// itself (its "to" observed), to a fixpoint.
//
// An indeterminate put or CAS whose value nothing observes is left out of
// the history Porcupine checks (D143): the same verdict with far less
// search (each indeterminate write may be linearized anywhere after its
// call; Porcupine tries them early and backtracks, exponentially in their
// number). Both ways hold. A linearization without such a write W gains W
// at its very end: an indeterminate write may always take effect last.
// In a linearization with W, the operations after W up to the next put or
// delete neither read W's value nor depend on it (that would observe it,
// and values are unique), so they are indeterminate operations whose
// steps are legal in any state and whose results nothing kept observes,
// and W can be taken out.
func observedValues(recs []record) map[string]bool {
	seen := map[string]bool{}
	for _, r := range recs {
		if r.ret < 0 || r.out.Outcome == outRefused || r.out.Outcome == outUnknown {
			continue
		}
		if r.in.Kind == opCAS {
			seen[r.in.Key+"="+r.in.From] = true
		}
		if r.out.Present || (r.in.Kind == opGet && r.out.Outcome == outOK) {
			seen[r.in.Key+"="+r.out.Value] = true
		}
	}
	for grew := true; grew; {
		grew = false
		for _, r := range recs {
			if r.in.Kind != opCAS || (r.ret >= 0 && r.out.Outcome != outUnknown) {
				continue
			}
			if seen[r.in.Key+"="+r.in.Value] && !seen[r.in.Key+"="+r.in.From] {
				seen[r.in.Key+"="+r.in.From] = true
				grew = true
			}
		}
	}
	return seen
}

// firstObservers returns, for each value (as key=value), the earliest
// return time of a definite operation that requires the key to hold it:
// a read of it, a 409 naming it, a CAS from it that succeeded. Values are
// unique, so only the one write of that value can have put it there, and
// it took effect before that return: an indeterminate write ends there
// rather than at the end of the history (D143). The same linearizations
// remain, and Porcupine no longer carries the write as pending through the
// rest of the history.
func firstObservers(recs []record) map[string]int64 {
	by := map[string]int64{}
	note := func(kv string, ret int64) {
		if old, ok := by[kv]; !ok || ret < old {
			by[kv] = ret
		}
	}
	for _, r := range recs {
		if r.ret < 0 {
			continue
		}
		switch {
		case r.in.Kind == opGet && r.out.Outcome == outOK:
			note(r.in.Key+"="+r.out.Value, r.ret)
		case r.in.Kind == opCAS && r.out.Outcome == outConflict && r.out.Present:
			note(r.in.Key+"="+r.out.Value, r.ret)
		case r.in.Kind == opCAS && r.out.Outcome == outOK:
			note(r.in.Key+"="+r.in.From, r.ret)
		}
	}
	return by
}

// clients are concurrent workers sending operations on a few keys to the
// replica each believes leads (D143).
type clients struct {
	c        *cluster
	h        *history
	keys     []string
	stop     atomic.Bool
	wg       sync.WaitGroup
	nextProc atomic.Int64
	mu       sync.Mutex
	seen     map[string][]string // recent values read or written, by key
	odd      []string            // answers outside the API's table
}

func startClients(c *cluster, h *history, workers, nkeys int, seed int64) *clients {
	cl := &clients{c: c, h: h, seen: map[string][]string{}}
	for k := 0; k < nkeys; k++ {
		cl.keys = append(cl.keys, fmt.Sprintf("k%d", k))
	}
	cl.nextProc.Store(int64(workers))
	for w := 0; w < workers; w++ {
		cl.wg.Add(1)
		go cl.run(w, rand.New(rand.NewSource(seed+int64(w)+1)))
	}
	return cl
}

func (cl *clients) halt() {
	cl.stop.Store(true)
	cl.wg.Wait()
}

func (cl *clients) note(key, v string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	s := append(cl.seen[key], v)
	if len(s) > 4 {
		s = s[len(s)-4:]
	}
	cl.seen[key] = s
}

func (cl *clients) recent(key string, rng *rand.Rand) string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	s := cl.seen[key]
	if len(s) == 0 {
		return "none"
	}
	return s[rng.Intn(len(s))]
}

// clientTimeout bounds one request: a paused or cut-off replica holds a
// request that long, and its outcome is then unknown.
const clientTimeout = 700 * time.Millisecond

func (cl *clients) run(w int, rng *rand.Rand) {
	defer cl.wg.Done()
	hc := &http.Client{Timeout: clientTimeout}
	proc, target, n := w, 1+rng.Intn(cl.c.n), 0
	for !cl.stop.Load() {
		n++
		key := cl.keys[rng.Intn(len(cl.keys))]
		var in input
		switch r := rng.Intn(10); {
		case r < 4:
			in = input{Kind: opGet, Key: key}
		case r < 7:
			in = input{Kind: opPut, Key: key, Value: fmt.Sprintf("%d.%d", w, n)}
		case r < 9:
			in = input{Kind: opCAS, Key: key, From: cl.recent(key, rng), Value: fmt.Sprintf("%d.%d", w, n)}
		default:
			in = input{Kind: opDel, Key: key}
		}
		if rng.Intn(3) == 0 {
			// A third of the operations go to any replica: a client that
			// only followed hints would be stuck at a cut-off leader
			// together with every other client.
			target = 1 + rng.Intn(cl.c.n)
		}
		out, leader := cl.do(hc, proc, target, in)
		switch out.Outcome {
		case outRefused:
			if leader > 0 {
				target = leader
			} else {
				target = 1 + rng.Intn(cl.c.n)
				time.Sleep(20 * time.Millisecond)
			}
		case outUnknown:
			// As in Jepsen, a client whose operation has an unknown outcome
			// is a new process: its old operation stays open.
			proc = int(cl.nextProc.Add(1)) - 1
			target = 1 + rng.Intn(cl.c.n)
			time.Sleep(20 * time.Millisecond)
		case outOK:
			if in.Kind == opGet || in.Kind == opPut || in.Kind == opCAS {
				cl.note(key, out.Value)
			}
		}
		time.Sleep(time.Duration(5+rng.Intn(20)) * time.Millisecond)
	}
}

// do sends in to node target and classifies the answer; leader is a 421's
// leader hint.
func (cl *clients) do(hc *http.Client, proc, target int, in input) (output, int) {
	url := "http://" + cl.c.proc(target).http + "/kv/" + in.Key
	var req *http.Request
	var err error
	switch in.Kind {
	case opGet:
		req, err = http.NewRequest(http.MethodGet, url, nil)
	case opPut:
		req, err = http.NewRequest(http.MethodPut, url, bytes.NewBufferString(in.Value))
	case opDel:
		req, err = http.NewRequest(http.MethodDelete, url, nil)
	case opCAS:
		body, _ := json.Marshal(map[string]string{"from": in.From, "to": in.Value})
		req, err = http.NewRequest(http.MethodPost, url+"/cas", bytes.NewReader(body))
	}
	if err != nil {
		panic(err)
	}
	i := cl.h.invoke(proc, target, in)
	out, leader := classify(hc.Do(req))
	if out.Outcome == outOK && in.Kind != opGet {
		out.Value = in.Value
	}
	if out.Outcome == "" {
		cl.mu.Lock()
		cl.odd = append(cl.odd, fmt.Sprintf("%+v at node %d: %d %s", in, target, out.Code, out.Value))
		cl.mu.Unlock()
		out = output{Outcome: outUnknown, Code: out.Code}
	}
	cl.h.complete(i, out)
	return out, leader
}

// answer is a key-value answer's JSON body (docs/kraftd.md).
type answer struct {
	Value  *string `json:"value"`
	Leader int     `json:"leader"`
	Error  string  `json:"error"`
}

// classify maps an HTTP answer to an outcome (docs/kraftd.md, D124): an
// empty Outcome is an answer the API's table does not have.
func classify(resp *http.Response, err error) (output, int) {
	if err != nil {
		return output{Outcome: outUnknown}, 0
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return output{Outcome: outUnknown, Code: resp.StatusCode}, 0
	}
	var a answer
	_ = json.Unmarshal(b, &a)
	o := output{Code: resp.StatusCode}
	switch resp.StatusCode {
	case http.StatusOK:
		o.Outcome = outOK
		if a.Value != nil {
			o.Value, o.Present = *a.Value, true
		}
	case http.StatusNotFound:
		o.Outcome = outAbsent
	case http.StatusConflict:
		o.Outcome = outConflict
		if a.Value != nil {
			o.Value, o.Present = *a.Value, true
		}
	case http.StatusMisdirectedRequest:
		return output{Outcome: outRefused, Code: resp.StatusCode}, a.Leader
	case http.StatusTooManyRequests:
		// The leader refused the write before appending it (kraftd's D211).
		return output{Outcome: outRefused, Code: resp.StatusCode}, 0
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		o.Outcome = outUnknown
	default:
		o.Value = string(b)
	}
	return o, 0
}
