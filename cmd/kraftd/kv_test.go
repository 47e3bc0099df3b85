package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/kafkawire"
	"github.com/kraftquorum/kraft/node"
	"github.com/stretchr/testify/require"
)

// TestKVRecordRoundTrip: each operation decodes to itself; the opaque
// records of POST /append and damaged key-value records are not
// operations.
func TestKVRecordRoundTrip(t *testing.T) {
	for _, op := range []kvOp{
		{op: opPut, key: "k", value: "v"},
		{op: opPut, key: strings.Repeat("a", maxKeyBytes), value: ""},
		{op: opDelete, key: "a.b_c-D9"},
		{op: opCAS, key: "k", expected: "from", value: "to"},
		{op: opCAS, key: "k", expected: "", value: "é"},
	} {
		got, ok := decodeKVOp(op.encode())
		require.True(t, ok, "%+v", op)
		require.Equal(t, op, got)
	}
	good := kvOp{op: opCAS, key: "k", expected: "ab", value: "c"}.encode()
	for _, data := range [][]byte{
		[]byte("payload"),
		[]byte(kvMagic),
		append([]byte(kvMagic), 2, opPut, 1, 'k'),         // another version
		append([]byte(kvMagic), kvVersion, 'X', 1, 'k'),   // another op
		append([]byte(kvMagic), kvVersion, opPut, 5, 'k'), // key cut short
		append([]byte(kvMagic), kvVersion, opPut, 1, '/'), // bad key
		append([]byte(kvMagic), kvVersion, opDelete, 1, 'k', 'x'),
		append([]byte(kvMagic), kvVersion, opCAS, 1, 'k', 9, 'a'), // "from" cut short
		good[:len(good)-2],
		kvOp{op: opPut, key: "k", value: "a\xffb"}.encode(),
		kvOp{op: opCAS, key: "k", expected: "\xff", value: "b"}.encode(),
	} {
		_, ok := decodeKVOp(data)
		require.False(t, ok, "%q", data)
	}
}

// TestKVValidation: keys are 1-128 bytes of [A-Za-z0-9._-]; values are
// UTF-8 of at most 1 MiB.
func TestKVValidation(t *testing.T) {
	for _, k := range []string{"a", "Z9", ".", "..", "a-b_c.d", strings.Repeat("k", 128)} {
		require.NoError(t, checkKey(k), k)
	}
	for _, k := range []string{"", strings.Repeat("k", 129), "a/b", "a b", "é", "a%2F", "a\x00"} {
		require.Error(t, checkKey(k), k)
	}
	require.NoError(t, checkValue(""))
	require.NoError(t, checkValue(strings.Repeat("é", maxValueBytes/2)))
	require.Error(t, checkValue(strings.Repeat("x", maxValueBytes+1)))
	require.Error(t, checkValue("a\xffb"))
}

// apply applies one record at offset.
func applyAt(m *machine, offset int64, data []byte) {
	m.apply([]node.Record{{Offset: offset, Epoch: 1, Data: data}})
}

// TestMachineKV: puts, deletes and CAS records change the map, each CAS's
// outcome is kept by offset (200: it matched; 409: the value, or none);
// opaque records change only the digest, which covers every record.
func TestMachineKV(t *testing.T) {
	m := &machine{}
	applyAt(m, 1, kvOp{op: opPut, key: "a", value: "1"}.encode())
	applyAt(m, 2, []byte("opaque"))
	e, ok, next := m.get("a")
	require.True(t, ok)
	require.Equal(t, kvEntry{Value: "1", Offset: 1}, e)
	require.Equal(t, int64(3), next)

	applyAt(m, 3, kvOp{op: opCAS, key: "a", expected: "1", value: "2"}.encode())
	applyAt(m, 4, kvOp{op: opCAS, key: "a", expected: "1", value: "3"}.encode())
	applyAt(m, 5, kvOp{op: opCAS, key: "none", expected: "", value: "x"}.encode())
	out, ok := m.casResult(3)
	require.True(t, ok)
	require.Equal(t, casOutcome{ok: true}, out)
	out, ok = m.casResult(4)
	require.True(t, ok)
	require.False(t, out.ok)
	require.Equal(t, "2", *out.current)
	out, ok = m.casResult(5)
	require.True(t, ok)
	require.Equal(t, casOutcome{}, out, "absent is not \"\"")
	_, ok = m.casResult(5)
	require.False(t, ok, "an outcome is taken once")
	_, ok, _ = m.get("none")
	require.False(t, ok)
	e, _, _ = m.get("a")
	require.Equal(t, kvEntry{Value: "2", Offset: 3}, e)

	applyAt(m, 6, kvOp{op: opDelete, key: "a"}.encode())
	_, ok, next = m.get("a")
	require.False(t, ok)
	require.Equal(t, int64(7), next)
	require.Equal(t, int64(6), m.status().Records)

	// The same records with the opaque one changed: another digest.
	other := &machine{}
	for i, d := range [][]byte{kvOp{op: opPut, key: "a", value: "1"}.encode(), []byte("opaqu3")} {
		applyAt(other, int64(i+1), d)
	}
	ref := &machine{}
	for i, d := range [][]byte{kvOp{op: opPut, key: "a", value: "1"}.encode(), []byte("opaque")} {
		applyAt(ref, int64(i+1), d)
	}
	require.NotEqual(t, ref.status().Digest, other.status().Digest)

	// Outcomes are bounded.
	b := &machine{}
	for i := int64(1); i <= maxOutcomes+10; i++ {
		applyAt(b, i, kvOp{op: opCAS, key: "k", expected: "x", value: "y"}.encode())
	}
	require.Len(t, b.outcomes, maxOutcomes)
	_, ok = b.casResult(10)
	require.False(t, ok)
	_, ok = b.casResult(maxOutcomes + 10)
	require.True(t, ok)
	// ... and so are the bytes of the values they hold.
	big := &machine{}
	value := strings.Repeat("v", maxValueBytes)
	applyAt(big, 1, kvOp{op: opPut, key: "k", value: value}.encode())
	n := int64(maxOutcomeBytes/maxValueBytes + 5)
	for i := int64(2); i <= n; i++ {
		applyAt(big, i, kvOp{op: opCAS, key: "k", expected: "x", value: "y"}.encode())
	}
	require.LessOrEqual(t, big.outcomeBytes, maxOutcomeBytes)
	require.Len(t, big.outcomes, maxOutcomeBytes/maxValueBytes)
	out, ok = big.casResult(n)
	require.True(t, ok)
	require.Equal(t, value, *out.current)
	require.Equal(t, maxOutcomeBytes-maxValueBytes, big.outcomeBytes)
	_, ok = big.casResult(2)
	require.False(t, ok)
}

// TestMachineKVSnapshot: a snapshot holds the map (version 2) and restores
// it; an older snapshot (version 1, no map) restores to an empty map and
// its digest.
func TestMachineKVSnapshot(t *testing.T) {
	m := &machine{}
	applyAt(m, 1, kvOp{op: opPut, key: "a", value: "1 <&> \" é"}.encode())
	applyAt(m, 2, kvOp{op: opPut, key: "b", value: ""}.encode())
	applyAt(m, 3, []byte("opaque"))
	id := kraft.LogEnd{Offset: 4, Epoch: 1}
	var snap bytes.Buffer
	require.NoError(t, m.snapshot(id, &snap))
	require.Contains(t, snap.String(), `"version":2`)
	r := &machine{}
	applyAt(r, 1, kvOp{op: opPut, key: "stale", value: "x"}.encode())
	require.NoError(t, r.restore(id, bytes.NewReader(snap.Bytes())))
	require.Equal(t, m.kv, r.kv)
	_, ok, _ := r.get("stale")
	require.False(t, ok, "a restore replaces the map")
	require.Equal(t, m.status().Digest, r.status().Digest)
	applyAt(m, 4, kvOp{op: opDelete, key: "a"}.encode())
	applyAt(r, 4, kvOp{op: opDelete, key: "a"}.encode())
	require.Equal(t, m.kv, r.kv)
	require.Equal(t, m.status(), func() machineStatus { s := r.status(); s.Restored = nil; return s }())

	// Version 1, as kraftd wrote before the map.
	digest := hex.EncodeToString(bytes.Repeat([]byte{7}, 32))
	v1 := fmt.Sprintf(`{"version":1,"next":4,"records":3,"bytes":10,"digest":%q}`, digest)
	old := &machine{}
	applyAt(old, 1, kvOp{op: opPut, key: "stale", value: "x"}.encode())
	require.NoError(t, old.restore(id, strings.NewReader(v1)))
	require.Empty(t, old.kv)
	require.NotNil(t, old.kv)
	require.Equal(t, digest, old.status().Digest)
	applyAt(old, 4, kvOp{op: opPut, key: "k", value: "v"}.encode())
	e, ok, _ := old.get("k")
	require.True(t, ok)
	require.Equal(t, kvEntry{Value: "v", Offset: 4}, e)

	// Damaged maps are refused.
	for _, bad := range []string{
		fmt.Sprintf(`{"version":1,"next":4,"records":3,"bytes":10,"digest":%q,"kv":{"a":{"value":"1","offset":1}}}`, digest),
		fmt.Sprintf(`{"version":2,"next":4,"records":3,"bytes":10,"digest":%q,"kv":{"a/b":{"value":"1","offset":1}}}`, digest),
		fmt.Sprintf(`{"version":2,"next":4,"records":3,"bytes":10,"digest":%q,"kv":{"a":{"value":"1","offset":4}}}`, digest),
		fmt.Sprintf(`{"version":3,"next":4,"records":3,"bytes":10,"digest":%q}`, digest),
	} {
		require.Error(t, (&machine{}).restore(id, strings.NewReader(bad)), bad)
	}

	// With -wire kafka the same machine snapshot inside Kafka's format.
	var ks bytes.Buffer
	require.NoError(t, kafkaSnapshot(m, kafkawire.Format{})(kraft.LogEnd{Offset: 5, Epoch: 1}, &ks))
	k := &machine{}
	require.NoError(t, kafkaRestore(k)(kraft.LogEnd{Offset: 5, Epoch: 1}, &ks))
	require.Equal(t, m.kv, k.kv)
}

// kvFake is a fakeReplica whose appends apply to m at offsets 1, 2, ...
func kvFake() (*fakeReplica, *machine) {
	m := &machine{}
	f := &fakeReplica{}
	f.onAppend = func(_ int64, data []byte) {
		f.offset++
		applyAt(m, f.offset, data)
	}
	return f, m
}

func kvServe(t *testing.T, f *fakeReplica, m *machine, method, path, body string) (int, map[string]interface{}) {
	t.Helper()
	return serveWith(t, f, m, method, path, body)
}

// TestHTTPKV: every answer of the key-value API on the leader.
func TestHTTPKV(t *testing.T) {
	f, m := kvFake()
	code, out := kvServe(t, f, m, http.MethodGet, "/kv/a", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, json.Number("0"), out["offset"])
	require.Contains(t, out["error"], `no key "a"`)

	code, out = kvServe(t, f, m, http.MethodPut, "/kv/a", "v1 é")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{"offset": json.Number("1")}, out)
	code, out = kvServe(t, f, m, http.MethodGet, "/kv/a", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{"value": "v1 é", "offset": json.Number("1")}, out)
	code, out = kvServe(t, f, m, http.MethodGet, "/kv/a?consistency=stale", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{"value": "v1 é", "offset": json.Number("1")}, out)

	// CAS: success, then 409 with the current value, then 409 with null.
	code, out = kvServe(t, f, m, http.MethodPost, "/kv/a/cas", `{"from": "v1 é", "to": "v2"}`)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{"offset": json.Number("2")}, out)
	code, out = kvServe(t, f, m, http.MethodPost, "/kv/a/cas", `{"from": "v1 é", "to": "v3"}`)
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, "v2", out["value"])
	require.Contains(t, out["error"], "nothing changed")
	code, out = kvServe(t, f, m, http.MethodGet, "/kv/a", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{"value": "v2", "offset": json.Number("2")}, out, "a failed CAS changes nothing")
	code, out = kvServe(t, f, m, http.MethodPost, "/kv/b/cas", `{"from": "", "to": "x"}`)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, out, "value")
	require.Nil(t, out["value"], "absent: null")

	code, out = kvServe(t, f, m, http.MethodDelete, "/kv/a", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, map[string]interface{}{"offset": json.Number("5")}, out)
	code, out = kvServe(t, f, m, http.MethodGet, "/kv/a", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, json.Number("6"), out["offset"])

	// "." and ".." are keys, not paths to clean.
	for _, k := range []string{".", ".."} {
		code, _ = kvServe(t, f, m, http.MethodPut, "/kv/"+k, "dot")
		require.Equal(t, http.StatusOK, code, k)
		code, out = kvServe(t, f, m, http.MethodGet, "/kv/"+k, "")
		require.Equal(t, http.StatusOK, code, k)
		require.Equal(t, "dot", out["value"])
	}

	// 400: bad keys, values and bodies; nothing is appended.
	appended := len(f.appended)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPut, "/kv/" + strings.Repeat("k", 129), "v"},
		{http.MethodGet, "/kv/" + strings.Repeat("k", 129), ""},
		{http.MethodPut, "/kv/a%20b", "v"},
		{http.MethodPut, "/kv/a*b", "v"},
		{http.MethodPut, "/kv/", "v"},
		{http.MethodPut, "/kv/a/b", "v"},
		{http.MethodPut, "/kv/a%2Fb", "v"},
		{http.MethodPost, "/kv/a%2Fcas", `{"from": "a", "to": "b"}`},
		{http.MethodPut, "/kv/k", "a\xffb"},
		{http.MethodPut, "/kv/k", strings.Repeat("x", maxValueBytes+1)},
		{http.MethodPost, "/kv/k/cas", `{"from": "a"}`},
		{http.MethodPost, "/kv/k/cas", `{"from": "a", "to": "b", "x": 1}`},
		{http.MethodPost, "/kv/k/cas", `not json`},
		{http.MethodPost, "/kv/k/cas", fmt.Sprintf(`{"from": "a", "to": %q}`, strings.Repeat("x", maxValueBytes+1))},
		{http.MethodGet, "/kv/k?consistency=eventual", ""},
	} {
		code, out := kvServe(t, f, m, tc.method, tc.path, tc.body)
		require.Equal(t, http.StatusBadRequest, code, "%s %s", tc.method, tc.path)
		require.NotEmpty(t, out["error"])
	}
	require.Len(t, f.appended, appended)
	code, _ = kvServe(t, f, m, http.MethodPut, "/kv/"+strings.Repeat("k", 128), strings.Repeat("é", maxValueBytes/2))
	require.Equal(t, http.StatusOK, code, "the largest key and value")

	code, _ = kvServe(t, f, m, http.MethodPost, "/kv/k", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	code, _ = kvServe(t, f, m, http.MethodGet, "/kv/k/cas", "")
	require.Equal(t, http.StatusMethodNotAllowed, code)

	// POST /append cannot forge a map operation.
	code, _ = kvServe(t, f, m, http.MethodPost, "/append", string(kvOp{op: opPut, key: "a", value: "forged"}.encode()))
	require.Equal(t, http.StatusBadRequest, code)
	code, _ = kvServe(t, f, m, http.MethodGet, "/kv/a", "")
	require.Equal(t, http.StatusNotFound, code)
}

// TestHTTPKVOutcomes: 421 only when the write was refused before it was
// appended, or a linearizable read at a replica that does not lead; 503
// when a write may or may not take effect; a stale read works anywhere.
func TestHTTPKVOutcomes(t *testing.T) {
	f, m := kvFake()
	code, _ := kvServe(t, f, m, http.MethodPut, "/kv/a", "1")
	require.Equal(t, http.StatusOK, code)

	notLeader := &node.NotLeaderError{Leader: 3, Epoch: 7}
	for _, w := range []struct{ method, path, body string }{
		{http.MethodPut, "/kv/a", "2"},
		{http.MethodDelete, "/kv/a", ""},
		{http.MethodPost, "/kv/a/cas", `{"from": "1", "to": "2"}`},
	} {
		f.appendErr = notLeader
		code, out := kvServe(t, f, m, w.method, w.path, w.body)
		require.Equal(t, http.StatusMisdirectedRequest, code, w.method)
		require.Equal(t, json.Number("3"), out["leader"])
		require.Equal(t, json.Number("7"), out["epoch"])
		require.NotEmpty(t, out["error"])
		for _, err := range []error{node.ErrLeadershipLost, errors.New("writing the log: disk full"), node.ErrStopped} {
			f.appendErr = err
			code, out = kvServe(t, f, m, w.method, w.path, w.body)
			require.Equal(t, http.StatusServiceUnavailable, code, "%s %v", w.method, err)
			require.Nil(t, out["leader"])
		}
		f.appendErr, f.waitErr = nil, node.ErrStopped
		code, _ = kvServe(t, f, m, w.method, w.path, w.body)
		require.Equal(t, http.StatusServiceUnavailable, code, "committed, not applied here")
		f.waitErr = nil
	}
	// A CAS committed but applied here through a snapshot: outcome unknown.
	f.onAppend = func(int64, []byte) { f.offset++ }
	code, _ = kvServe(t, f, m, http.MethodPost, "/kv/a/cas", `{"from": "1", "to": "2"}`)
	require.Equal(t, http.StatusServiceUnavailable, code)

	applyAt(m, 100, kvOp{op: opPut, key: "a", value: "1"}.encode())
	f.readErr = &node.NotLeaderError{Leader: 1, Epoch: 4}
	code, out := kvServe(t, f, m, http.MethodGet, "/kv/a", "")
	require.Equal(t, http.StatusMisdirectedRequest, code)
	require.Equal(t, json.Number("1"), out["leader"])
	code, out = kvServe(t, f, m, http.MethodGet, "/kv/a?consistency=stale", "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "1", out["value"])
	f.readErr = errors.New("node: read not confirmed")
	code, _ = kvServe(t, f, m, http.MethodGet, "/kv/a", "")
	require.Equal(t, http.StatusServiceUnavailable, code)
}
