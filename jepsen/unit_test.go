package jepsen

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
)

// op builds a Porcupine operation of one client.
func op(client int, call, ret int64, in input, out output) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
}

func put(k, v string) input      { return input{Kind: opPut, Key: k, Value: v} }
func get(k string) input         { return input{Kind: opGet, Key: k} }
func cas(k, f, v string) input   { return input{Kind: opCAS, Key: k, From: f, Value: v} }
func read(v string) output       { return output{Outcome: outOK, Value: v, Present: true} }
func conflict(v string) output   { return output{Outcome: outConflict, Value: v, Present: true} }
func outcomeOf(o outcome) output { return output{Outcome: o} }

// TestModelStaleReadIsIllegal: a read that starts after a write was
// acknowledged and returns the value before it is not linearizable; the
// same read concurrent with the write is.
func TestModelStaleReadIsIllegal(t *testing.T) {
	ok := outcomeOf(outOK)
	stale := []porcupine.Operation{
		op(0, 0, 10, put("a", "1"), ok),
		op(0, 20, 30, put("a", "2"), ok),
		op(1, 40, 50, get("a"), read("1")),
	}
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(kvModel, stale, time.Second))
	concurrent := []porcupine.Operation{
		op(0, 0, 10, put("a", "1"), ok),
		op(0, 20, 45, put("a", "2"), ok),
		op(1, 40, 50, get("a"), read("1")),
	}
	require.Equal(t, porcupine.Ok, porcupine.CheckOperationsTimeout(kvModel, concurrent, time.Second))
	// Keys are independent registers: another key's write changes nothing.
	other := []porcupine.Operation{
		op(0, 0, 10, put("b", "1"), ok),
		op(1, 40, 50, get("a"), outcomeOf(outAbsent)),
	}
	require.Equal(t, porcupine.Ok, porcupine.CheckOperationsTimeout(kvModel, other, time.Second))
}

// TestModelCASAbsentIsNeverFrom: a CAS on an absent key fails with 409
// and null, even from ""; a 409 must name the current value.
func TestModelCASAbsentIsNeverFrom(t *testing.T) {
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(kvModel, []porcupine.Operation{
		op(0, 0, 10, cas("a", "", "x"), outcomeOf(outOK)),
	}, time.Second))
	require.Equal(t, porcupine.Ok, porcupine.CheckOperationsTimeout(kvModel, []porcupine.Operation{
		op(0, 0, 10, cas("a", "", "x"), outcomeOf(outConflict)),
		op(0, 20, 30, put("a", "1"), outcomeOf(outOK)),
		op(0, 40, 50, cas("a", "0", "x"), conflict("1")),
		op(0, 60, 70, cas("a", "1", "2"), outcomeOf(outOK)),
		op(0, 80, 90, get("a"), read("2")),
	}, time.Second))
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(kvModel, []porcupine.Operation{
		op(0, 20, 30, put("a", "1"), outcomeOf(outOK)),
		op(0, 40, 50, cas("a", "0", "x"), conflict("0")),
	}, time.Second))
}

// TestModelRefusedIsNotApplied: a 421 write did not happen; an
// indeterminate one may take effect, or not, at any time after its call.
func TestModelRefusedIsNotApplied(t *testing.T) {
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(kvModel, []porcupine.Operation{
		op(0, 0, 10, put("a", "1"), outcomeOf(outRefused)),
		op(1, 20, 30, get("a"), read("1")),
	}, time.Second))
	const end = 1000
	for _, seen := range []output{read("1"), outcomeOf(outAbsent)} {
		require.Equal(t, porcupine.Ok, porcupine.CheckOperationsTimeout(kvModel, []porcupine.Operation{
			op(0, 0, end, put("a", "1"), outcomeOf(outUnknown)),
			op(1, 20, 30, get("a"), seen),
		}, time.Second), "%+v", seen)
	}
	// Once read, it cannot be unread.
	require.Equal(t, porcupine.Illegal, porcupine.CheckOperationsTimeout(kvModel, []porcupine.Operation{
		op(0, 0, end, put("a", "1"), outcomeOf(outUnknown)),
		op(1, 20, 30, get("a"), read("1")),
		op(1, 40, 50, get("a"), outcomeOf(outAbsent)),
	}, time.Second))
}

// TestSnapshotPrunesOnlyUnobservedUnknownWrites: the history Porcupine
// checks leaves out 421s, indeterminate reads and indeterminate writes
// whose value nothing observes, keeps an indeterminate write read later,
// one whose value a kept indeterminate CAS names as "from", and every
// indeterminate delete; a kept indeterminate write returns where a
// definite operation first requires its value, else at the end.
func TestSnapshotPrunesOnlyUnobservedUnknownWrites(t *testing.T) {
	h := newHistory()
	add := func(in input, out output, pending bool) {
		i := h.invoke(0, 1, in)
		if !pending {
			h.complete(i, out)
		}
	}
	unknown := outcomeOf(outUnknown)
	add(put("a", "lost"), unknown, false)
	add(put("a", "read"), unknown, false)
	add(get("a"), read("read"), false)
	add(put("a", "chain"), unknown, false)
	add(cas("a", "chain", "casread"), unknown, false)
	add(get("a"), read("casread"), false)
	add(put("a", "pending"), output{}, true)
	add(get("a"), unknown, false)
	add(put("a", "refused"), outcomeOf(outRefused), false)
	add(input{Kind: opDel, Key: "a"}, unknown, false) // absent is no value: kept
	ops, counts := h.snapshot()
	var kept []string
	returns := map[string]int64{}
	for _, o := range ops {
		in := o.Input.(input)
		kept = append(kept, string(in.Kind)+" "+in.Value)
		returns[string(in.Kind)+" "+in.Value] = o.Return
	}
	require.Equal(t, []string{"put read", "get ", "put chain", "cas casread", "get ", "delete "}, kept)
	// An indeterminate write ends where a definite operation first
	// requires its value; otherwise at the end of the history.
	h.mu.Lock()
	readAt, casReadAt, lastCall := h.ops[2].ret, h.ops[5].ret, h.ops[len(h.ops)-1].call
	h.mu.Unlock()
	require.Equal(t, readAt, returns["put read"])
	require.Equal(t, casReadAt, returns["cas casread"])
	require.Greater(t, returns["put chain"], lastCall)
	require.Greater(t, returns["delete "], lastCall)
	require.Equal(t, 2, counts["unknown, never observed"])
	require.Equal(t, 1, counts[outRefused])
}

// TestLinkCutsOneDirection: a link with its forward direction cut
// delivers nothing to the target; with its backward direction cut the
// target receives but its answers are lost; healed, both flow again. A
// change of the cuts closes the connections open before it.
func TestLinkCutsOneDirection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	got := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					got <- string(buf[:n])
					_, _ = c.Write(buf[:n]) // echo
				}
			}()
		}
	}()
	l, err := newLink(1, 2, ln.Addr().String())
	require.NoError(t, err)
	defer l.close()
	try := func(msg string) (arrived, echoed bool) {
		c, err := net.Dial("tcp", l.addr())
		require.NoError(t, err)
		defer func() { _ = c.Close() }()
		_, err = c.Write([]byte(msg))
		require.NoError(t, err)
		select {
		case m := <-got:
			require.Equal(t, msg, m)
			arrived = true
		case <-time.After(300 * time.Millisecond):
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 64)
		n, err := io.ReadAtLeast(c, buf, len(msg))
		return arrived, err == nil && string(buf[:n]) == msg
	}
	a, e := try("open")
	require.True(t, a && e, "an open link delivers both ways")
	old, err := net.Dial("tcp", l.addr())
	require.NoError(t, err)
	defer func() { _ = old.Close() }()
	time.Sleep(50 * time.Millisecond) // accepted before the cut
	l.cut(true, false)
	_ = old.SetReadDeadline(time.Now().Add(time.Second))
	_, err = old.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "a cut closes the connections it found")
	a, e = try("fwd")
	require.False(t, a || e, "forward cut: nothing arrives")
	l.cut(false, true)
	a, e = try("back")
	require.True(t, a, "backward cut: the target receives")
	require.False(t, e, "backward cut: its answer is lost")
	l.cut(false, false)
	a, e = try("healed")
	require.True(t, a && e)
}

// TestRouterHandsAConnectionToTheDialersLink: a dynamic quorum's router
// reads the hello's node id and hands the connection, hello included, to
// that dialer's link, so a cut of one dialer's link leaves another's
// traffic through the same router alone; a connection with no hello, or
// the hello of an id that has no link, is closed.
func TestRouterHandsAConnectionToTheDialersLink(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	got := make(chan []byte, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, helloLen+16)
				n, _ := io.ReadAtLeast(c, buf, helloLen+1)
				got <- append([]byte(nil), buf[:n]...)
				_ = c.Close()
			}()
		}
	}()
	links := map[int]*link{}
	for _, from := range []int{1, 3} {
		l, err := newLink(from, 2, ln.Addr().String())
		require.NoError(t, err)
		defer l.close()
		links[from] = l
	}
	r, err := newRouter(2, links)
	require.NoError(t, err)
	defer func() { _ = r.ln.Close() }()
	hello := func(id int32) []byte {
		h := make([]byte, helloLen)
		binary.BigEndian.PutUint32(h, uint32(helloLen-4))
		copy(h[4:8], "KRFT")
		h[8] = 1
		binary.BigEndian.PutUint32(h[9:13], uint32(id))
		return h
	}
	// send dials the router, writes the hello of id and one byte, and
	// returns what reached the target (nil if nothing did) and whether
	// the router closed the connection.
	send := func(first []byte) (arrived []byte, closed bool) {
		c, err := net.Dial("tcp", r.addr())
		require.NoError(t, err)
		defer func() { _ = c.Close() }()
		_, err = c.Write(append(append([]byte(nil), first...), 'x'))
		require.NoError(t, err)
		select {
		case arrived = <-got:
		case <-time.After(300 * time.Millisecond):
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		// Closed with the byte after the hello unread, the connection may
		// end in a reset rather than EOF; a timeout means it is open.
		var ne net.Error
		return arrived, err != nil && !(errors.As(err, &ne) && ne.Timeout())
	}
	b, _ := send(hello(1))
	require.Equal(t, append(hello(1), 'x'), b, "the target gets the hello and what follows it")
	links[1].cut(true, false)
	b, _ = send(hello(1))
	require.Nil(t, b, "node 1's link is cut: nothing of node 1 arrives")
	b, _ = send(hello(3))
	require.Equal(t, append(hello(3), 'x'), b, "node 3's link is open: node 3's arrives")
	b, closed := send(hello(4))
	require.Nil(t, b)
	require.True(t, closed, "no link for node 4: the router closes the connection")
	bad := hello(3)
	copy(bad[4:8], "NOPE")
	b, closed = send(bad)
	require.Nil(t, b)
	require.True(t, closed, "no hello: the router closes the connection")
}
