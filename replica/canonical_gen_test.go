package replica

import (
	"bytes"
	"encoding/binary"
	"os"
	"reflect"
	"testing"

	"github.com/google/uuid"
	"github.com/kraftquorum/kraft"
	"github.com/kraftquorum/kraft/internal/gencodec"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestCanonicalEncodingIsGenerated: canonical_gen.go is what
// internal/cmd/gencodec -canonical writes from the catalogue of messages
// today, so a new message event, or a new field of one, fails here until
// `go generate ./...` is run (docs/design.md D320).
func TestCanonicalEncodingIsGenerated(t *testing.T) {
	have, err := os.ReadFile("canonical_gen.go")
	require.NoError(t, err)
	want, err := gencodec.GenerateCanonical()
	require.NoError(t, err)
	require.Equal(t, string(want), string(have), "replica/canonical_gen.go is stale: run `go generate ./...`")
}

// messageEventTypes are the catalogue's message events.
func messageEventTypes() []reflect.Type {
	var out []reflect.Type
	seen := map[reflect.Type]bool{}
	for _, r := range kraft.RPCs() {
		for _, e := range append([]kraft.Event{r.RequestEvent}, r.ResponseEvents...) {
			if t := reflect.TypeOf(e); e != nil && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// TestCanonicalEventEncodingIsInjective: two random message events, of any
// types of the catalogue, have the same canonical bytes exactly when they
// are equal but for the fields the host sets (ReceiveFetchResponse.Records)
// and the UUID of a NullUUID that is not Valid (no value, as Kafka's null
// cluster id); neither's bytes are a proper prefix of the other's; an
// event's bytes, followed by anything, read back to it by the format's
// rules (decodeCanonical), so a list of events reads back one way too; and
// an event with any one field changed has other bytes. The explorer
// deduplicates worlds by these bytes (docs/design.md D320). Values are
// drawn mostly from a few small ones, so that equal and nearly equal events
// are frequent.
func TestCanonicalEventEncodingIsInjective(t *testing.T) {
	types := messageEventTypes()
	event := func(t *rapid.T, label string) reflect.Value {
		typ := types[rapid.IntRange(0, len(types)-1).Draw(t, label+" type")]
		v := reflect.New(typ).Elem()
		fillCanonRandom(t, v)
		return v
	}
	rapid.Check(t, func(t *rapid.T) {
		a, b := event(t, "a"), event(t, "b")
		ea := appendCanonicalEvent(nil, a.Interface().(kraft.Event))
		eb := appendCanonicalEvent(nil, b.Interface().(kraft.Event))
		require.NotEqual(t, byte(255), ea[0], "%T took the JSON fallback", a.Interface())
		equal := reflect.DeepEqual(normalized(a).Interface(), normalized(b).Interface())
		require.Equal(t, equal, bytes.Equal(ea, eb), "%+v\n%+v", a.Interface(), b.Interface())
		if !equal {
			require.False(t, bytes.HasPrefix(ea, eb) || bytes.HasPrefix(eb, ea), "a prefix: %+v\n%+v", a.Interface(), b.Interface())
		}
		require.Equal(t, ea, appendCanonicalEvent(nil, normalized(a).Interface().(kraft.Event)), "a host-set field or a null UUID changes the bytes")

		// The bytes read back, and exactly all of them, by the format's
		// rules (decodeCanonical): the encoding is a prefix code.
		got, n, ok := decodeCanonical(types, append(ea, eb...))
		require.True(t, ok, "% x does not read back", ea)
		require.Equal(t, len(ea), n, "% x read back %d bytes", ea, n)
		require.Equal(t, normalized(a).Interface(), normalized(got).Interface())

		// Each field of a changed in turn: other bytes.
		for k := 0; ; k++ {
			c := reflect.New(a.Type()).Elem()
			c.Set(a)
			if !changeField(t, c, k) {
				break
			}
			if reflect.DeepEqual(normalized(a).Interface(), normalized(c).Interface()) {
				continue // a null UUID's bytes
			}
			ec := appendCanonicalEvent(nil, c.Interface().(kraft.Event))
			require.NotEqual(t, ea, ec, "field %d: %+v\n%+v", k, a.Interface(), c.Interface())
		}
	})
}

// normalized is a copy of the event v with the fields the host sets and
// the UUIDs of NullUUIDs that are not Valid zeroed.
func normalized(v reflect.Value) reflect.Value {
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	if r, ok := c.Addr().Interface().(*kraft.ReceiveFetchResponse); ok {
		r.Records = false
	}
	for i := 0; i < c.NumField(); i++ {
		if n, ok := c.Field(i).Addr().Interface().(*uuid.NullUUID); ok && !n.Valid {
			n.UUID = uuid.UUID{}
		}
	}
	return c
}

// fillCanonRandom sets every field of v, recursively, to a random value,
// mostly one of a few small ones.
func fillCanonRandom(t *rapid.T, v reflect.Value) {
	switch v.Kind() { //nolint:exhaustive // the kinds message events have
	case reflect.Bool:
		v.SetBool(rapid.Bool().Draw(t, "bool"))
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		x := rapid.Int64Range(-1, 2).Draw(t, "small")
		if rapid.IntRange(0, 9).Draw(t, "large?") == 0 {
			x = rapid.Int64().Draw(t, "int") >> (64 - v.Type().Bits())
		}
		v.SetInt(x)
	case reflect.Uint64:
		x := rapid.Uint64Range(0, 2).Draw(t, "small")
		if rapid.IntRange(0, 9).Draw(t, "large?") == 0 {
			x = rapid.Uint64().Draw(t, "uint")
		}
		v.SetUint(x)
	case reflect.Array: // a UUID: zero, one of two, or random
		switch rapid.IntRange(0, 3).Draw(t, "uuid") {
		case 1:
			v.Index(0).SetUint(1)
		case 2:
			v.Index(v.Len() - 1).SetUint(1)
		case 3:
			for i := 0; i < v.Len(); i++ {
				v.Index(i).SetUint(uint64(rapid.Byte().Draw(t, "byte")))
			}
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fillCanonRandom(t, v.Field(i))
		}
	case reflect.Pointer:
		if rapid.Bool().Draw(t, "set") {
			v.Set(reflect.New(v.Type().Elem()))
			fillCanonRandom(t, v.Elem())
		}
	default:
		t.Fatalf("fillCanonRandom: kind %v", v.Kind())
	}
}

// changeField changes the k-th leaf of the event v that the canonical
// encoding carries (a scalar, a random byte of a UUID, a pointer's
// presence); false if v has no k-th leaf.
func changeField(t *rapid.T, v reflect.Value, k int) bool {
	var walk func(v reflect.Value, path string) bool
	walk = func(v reflect.Value, path string) bool {
		switch v.Kind() { //nolint:exhaustive // the kinds message events have
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				p := path + "." + v.Type().Field(i).Name
				if p != "ReceiveFetchResponse.Records" && walk(v.Field(i), p) {
					return true
				}
			}
			return false
		case reflect.Pointer:
			if k == 0 {
				if v.IsNil() {
					v.Set(reflect.New(v.Type().Elem()))
				} else {
					v.Set(reflect.Zero(v.Type()))
				}
				return true
			}
			k--
			return !v.IsNil() && walk(v.Elem(), path)
		}
		if k > 0 {
			k--
			return false
		}
		switch v.Kind() { //nolint:exhaustive // the kinds message events have
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
			v.SetInt(v.Int() ^ 1)
		case reflect.Uint64:
			v.SetUint(v.Uint() ^ 1)
		case reflect.Array:
			b := v.Index(rapid.IntRange(0, v.Len()-1).Draw(t, "byte"))
			b.SetUint(b.Uint() ^ 1)
		default:
			t.Fatalf("changeField: %s: kind %v", path, v.Kind())
		}
		return true
	}
	return walk(v, v.Type().Name())
}

// decodeCanonical reads a message event from the front of b by the rules
// canonical_gen.go follows (a tag, the catalogue's index plus one, then the
// fields: integers as varints, a presence byte before a pointer's value or
// a NullUUID's UUID, a UUID's 16 bytes, a bool as 0 or 1, a struct field by
// field, ReceiveFetchResponse.Records left out): the event and the bytes
// read, or false.
func decodeCanonical(types []reflect.Type, b []byte) (reflect.Value, int, bool) {
	if len(b) == 0 || int(b[0]) < 1 || int(b[0]) > len(types) {
		return reflect.Value{}, 0, false
	}
	v := reflect.New(types[b[0]-1]).Elem()
	i := 1
	boolean := func() (bool, bool) {
		if i >= len(b) || b[i] > 1 {
			return false, false
		}
		i++
		return b[i-1] == 1, true
	}
	var read func(v reflect.Value, path string) bool
	read = func(v reflect.Value, path string) bool {
		if n, ok := v.Addr().Interface().(*uuid.NullUUID); ok {
			if n.Valid, ok = boolean(); !ok {
				return false
			}
			return !n.Valid || read(reflect.ValueOf(&n.UUID).Elem(), path)
		}
		switch v.Kind() { //nolint:exhaustive // the kinds message events have
		case reflect.Bool:
			x, ok := boolean()
			v.SetBool(x)
			return ok
		case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
			x, n := binary.Varint(b[i:])
			if n <= 0 || v.OverflowInt(x) {
				return false
			}
			i += n
			v.SetInt(x)
		case reflect.Uint64:
			x, n := binary.Uvarint(b[i:])
			if n <= 0 {
				return false
			}
			i += n
			v.SetUint(x)
		case reflect.Array:
			if len(b)-i < v.Len() {
				return false
			}
			reflect.Copy(v, reflect.ValueOf(b[i:i+v.Len()]))
			i += v.Len()
		case reflect.Pointer:
			set, ok := boolean()
			if !ok || !set {
				return ok
			}
			v.Set(reflect.New(v.Type().Elem()))
			return read(v.Elem(), path)
		case reflect.Struct:
			for f := 0; f < v.NumField(); f++ {
				p := path + "." + v.Type().Field(f).Name
				if p != "ReceiveFetchResponse.Records" && !read(v.Field(f), p) {
					return false
				}
			}
		default:
			return false
		}
		return true
	}
	if !read(v, v.Type().Name()) {
		return reflect.Value{}, 0, false
	}
	return v, i, true
}
