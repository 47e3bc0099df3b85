// Package gencodec writes node/codec_gen.go, the event tags, encoders and
// decoders of kraft's own wire format (node/codec.go), from the catalogue
// of messages (kraft.RPCs, docs/design.md D230) and, by reflection over
// each event's struct, its fields (D270). The command
// internal/cmd/gencodec runs it (`go generate ./node`);
// node's TestCodecIsGenerated runs it into memory and compares.
// GenerateCanonical writes replica/canonical_gen.go, the explorer's
// canonical encoding of the same events (D320).
//
// Tags are append-only (D271): an event keeps the tag pinnedTags or the
// previous generated file gives it, and a new event gets the next free
// one, so a kraftd of an older version still talks to a newer one.
package gencodec

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/kraftquorum/kraft"
)

// pinnedTags are the tags of kraft's wire format version 1 as the codec
// had them when it was written by hand, by index. They are never
// renumbered; an event that leaves the catalogue keeps its tag reserved
// here.
var pinnedTags = []string{
	1:  "ReceiveVoteRequest",
	2:  "ReceiveVoteResponse",
	3:  "ReceiveBeginQuorumEpoch",
	4:  "ReceiveEndQuorumEpoch",
	5:  "ReceiveFetch",
	6:  "ReceiveFetchSnapshot",
	7:  "ReceiveFetchResponse",
	8:  "ReceiveLeaderlessEpoch",
	9:  "ReceiveQuorumResponse",
	10: "ReceiveFetchSnapshotResponse",
	11: "ReceiveAddVoter",
	12: "ReceiveRemoveVoter",
	13: "ReceiveAPIVersionsResponse",
}

// notOnWire are the catalogue's events that do not travel between kraft
// replicas: the host makes them itself. ReceiveUpdateVoter is an
// operator's request to the local leader (node.Node.UpdateVoter); Kafka
// peers send it over Kafka's wire (package kafkawire), never kraft's.
var notOnWire = map[string]bool{
	"ReceiveUpdateVoter": true,
}

// hostSet are event fields the receiving host sets, so they are not on
// the wire and decode as their zero value. ReceiveFetchResponse.Records
// says the message carries records; the records travel beside the event
// (docs/design.md D240).
var hostSet = map[string]bool{
	"ReceiveFetchResponse.Records": true,
}

const (
	kraftPkg = "github.com/kraftquorum/kraft"
	uuidPkg  = "github.com/google/uuid"
)

// Generate returns node/codec_gen.go's source for the events of
// kraft.RPCs. prev is the file's current source (nil if there is none):
// its tags are kept.
func Generate(prev []byte) ([]byte, error) {
	prevTags, err := ParseTags(prev)
	if err != nil {
		return nil, err
	}
	var events []reflect.Type
	for _, r := range kraft.RPCs() {
		for _, e := range append([]kraft.Event{r.RequestEvent}, r.ResponseEvents...) {
			if e != nil {
				events = append(events, reflect.TypeOf(e))
			}
		}
	}
	return generate(events, prevTags)
}

// ConstName is the name of the tag constant of the event named event.
func ConstName(event string) string { return "wire" + strings.TrimPrefix(event, "Receive") }

// ParseTags reads the tag constants of a generated file: event name by
// tag. The generated file writes each constant with its event's name as
// a line comment.
func ParseTags(src []byte) (map[int]string, error) {
	tags := map[int]string{}
	if len(src) == 0 {
		return tags, nil
	}
	f, err := parser.ParseFile(token.NewFileSet(), "codec_gen.go", src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("gencodec: previous file: %w", err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			v := s.(*ast.ValueSpec)
			if len(v.Names) != 1 || len(v.Values) != 1 || v.Comment == nil {
				continue
			}
			lit, ok := v.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.INT {
				continue
			}
			tag, err := strconv.Atoi(lit.Value)
			if err != nil {
				return nil, fmt.Errorf("gencodec: previous file: tag %s: %w", lit.Value, err)
			}
			event := strings.TrimSpace(v.Comment.Text())
			if ConstName(event) != v.Names[0].Name {
				continue
			}
			tags[tag] = event
		}
	}
	return tags, nil
}

// AssignTags gives each of events (names, in catalogue order, deduplicated
// here) a tag: its pinned one, else the one prev gave it, else the next
// free one. A tag of prev must be pinned's or name an event of events:
// tags are never reused.
func AssignTags(events []string, pinned []string, prev map[int]string) (map[string]int, error) {
	byName := map[string]int{}
	used := map[int]bool{0: true} // 0 is "no event"
	for tag, name := range pinned {
		if name == "" {
			continue
		}
		byName[name] = tag
		used[tag] = true
	}
	current := map[string]bool{}
	for _, e := range events {
		current[e] = true
	}
	prevTags := make([]int, 0, len(prev))
	for tag := range prev {
		prevTags = append(prevTags, tag)
	}
	sort.Ints(prevTags)
	for _, tag := range prevTags {
		name := prev[tag]
		if old, ok := byName[name]; ok && old != tag {
			return nil, fmt.Errorf("gencodec: %s has tag %d, the previous file gave it %d", name, old, tag)
		}
		if tag < len(pinned) && pinned[tag] != "" && pinned[tag] != name {
			return nil, fmt.Errorf("gencodec: tag %d is pinned to %q, the previous file gave it to %s", tag, pinned[tag], name)
		}
		if !current[name] && (tag >= len(pinned) || pinned[tag] != name) {
			return nil, fmt.Errorf("gencodec: %s (tag %d) left the catalogue: pin its tag in pinnedTags so that it is never reused", name, tag)
		}
		byName[name] = tag
		used[tag] = true
	}
	out := map[string]int{}
	next := 1
	for _, e := range events {
		if _, ok := out[e]; ok {
			continue
		}
		tag, ok := byName[e]
		if !ok {
			for used[next] {
				next++
			}
			tag = next
			used[tag] = true
		}
		if tag > 255 {
			return nil, fmt.Errorf("gencodec: %s: no tag left (a tag is a byte)", e)
		}
		out[e] = tag
	}
	return out, nil
}

// event is one message event to generate.
type event struct {
	typ  reflect.Type
	tag  int
	enc  []string // the statements that append the body
	dec  []string // the statements that decode it into e
	desc string   // the body in the format's notation
}

func generate(types []reflect.Type, prev map[int]string) ([]byte, error) {
	var names []string
	seen := map[reflect.Type]bool{}
	var unique []reflect.Type
	for _, t := range types {
		if seen[t] || notOnWire[t.Name()] {
			continue
		}
		seen[t] = true
		unique = append(unique, t)
		names = append(names, t.Name())
	}
	tags, err := AssignTags(names, pinnedTags, prev)
	if err != nil {
		return nil, err
	}
	g := &gen{imports: map[string]bool{kraftPkg: true}}
	var events []event
	for _, t := range unique {
		if t.Kind() != reflect.Struct || t.PkgPath() != kraftPkg {
			return nil, fmt.Errorf("gencodec: %v is not a struct of package kraft", t)
		}
		ev := event{typ: t, tag: tags[t.Name()]}
		ev.enc, ev.dec, ev.desc, err = g.fields(t, "e", t.Name())
		if err != nil {
			return nil, err
		}
		events = append(events, ev)
	}
	sort.Slice(events, func(i, j int) bool { return events[i].tag < events[j].tag })
	src := g.file(events)
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("gencodec: formatting the output: %w\n%s", err, src)
	}
	return out, nil
}

// gen holds what the generated file needs beyond the events.
type gen struct {
	imports map[string]bool
	vars    int // pointer targets declared so far, for unique names
}

// typeName is t as the generated file (package node) spells it.
func (g *gen) typeName(t reflect.Type) (string, error) {
	switch t.PkgPath() {
	case "":
		if t.Name() == "" {
			return "", fmt.Errorf("gencodec: unnamed type %v", t)
		}
		return t.Name(), nil
	case kraftPkg:
		return "kraft." + t.Name(), nil
	case uuidPkg:
		g.imports[uuidPkg] = true
		return "uuid." + t.Name(), nil
	}
	return "", fmt.Errorf("gencodec: type %v of package %s", t, t.PkgPath())
}

// fields returns the statements that encode and decode the fields of
// struct type t held in x, and the body's description. path names the
// struct for hostSet and errors.
func (g *gen) fields(t reflect.Type, x, path string) (enc, dec []string, desc string, err error) {
	var parts []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		fp := path + "." + f.Name
		if hostSet[fp] {
			continue
		}
		if !f.IsExported() {
			return nil, nil, "", fmt.Errorf("gencodec: %s is not exported", fp)
		}
		e, d, s, err := g.value(f.Type, x+"."+f.Name, fp)
		if err != nil {
			return nil, nil, "", err
		}
		enc = append(enc, e...)
		dec = append(dec, d...)
		parts = append(parts, f.Name+":"+s)
	}
	return enc, dec, strings.Join(parts, " "), nil
}

// value returns the statements that encode and decode the value x of
// type t, and its description in the format's notation.
func (g *gen) value(t reflect.Type, x, path string) (enc, dec []string, desc string, err error) {
	switch fullName(t) {
	case uuidPkg + ".UUID":
		return []string{"b = append(b, " + x + "[:]...)"}, []string{x + " = d.uuid()"}, "uuid", nil
	case uuidPkg + ".NullUUID":
		return []string{"b = appendNullUUID(b, " + x + ")"}, []string{x + " = d.nullUUID()"}, "nulluuid", nil
	case kraftPkg + ".LogEnd":
		return []string{"b = appendLogEnd(b, " + x + ")"}, []string{x + " = d.logEnd()"}, "logend", nil
	}
	// scalar is a value of a fixed size: appendF(b, base(x)) and
	// x = T(read), where read is of type readType.
	scalar := func(appendF, base, read, readType, notation string) ([]string, []string, string, error) {
		name, err := g.typeName(t)
		if err != nil {
			return nil, nil, "", err
		}
		if name != readType {
			read = name + "(" + read + ")"
		}
		arg := x
		if name != base {
			arg = base + "(" + x + ")"
		}
		return []string{"b = " + appendF + "(b, " + arg + ")"}, []string{x + " = " + read}, notation, nil
	}
	switch t.Kind() { //nolint:exhaustive // the kinds the format has; the rest are refused below
	case reflect.Bool:
		return scalar("appendBool", "bool", "d.bool()", "bool", "bool")
	case reflect.Int16:
		return scalar("appendU16", "uint16", "d.u16()", "uint16", "i16")
	case reflect.Int32:
		return scalar("appendI32", "int32", "d.i32()", "int32", "i32")
	case reflect.Int64:
		return scalar("appendI64", "int64", "d.i64()", "int64", "i64")
	case reflect.Int:
		// An int is 64 bits on the wire; decoding checks that it fits.
		return scalar("appendI64", "int64", "d.int()", "int", "i64")
	case reflect.Uint64:
		return scalar("appendU64", "uint64", "d.u64()", "uint64", "u64")
	case reflect.Struct:
		enc, dec, desc, err := g.fields(t, x, path)
		return enc, dec, "(" + desc + ")", err
	case reflect.Pointer:
		return g.optional(t, x, path)
	}
	return nil, nil, "", fmt.Errorf("gencodec: %s: no wire encoding for %v (kind %v)", path, t, t.Kind())
}

// optional encodes the pointer x as optional(...): a bool that says
// whether it is set, then the value it points to.
func (g *gen) optional(t reflect.Type, x, path string) (enc, dec []string, desc string, err error) {
	elem := t.Elem()
	name, err := g.typeName(elem)
	if err != nil {
		return nil, nil, "", err
	}
	g.vars++
	v := "v" + strconv.Itoa(g.vars)
	// A struct's fields are reached through the pointer; any other
	// value is dereferenced.
	in := "(*" + x + ")"
	if elem.Kind() == reflect.Struct {
		in = x
		if special(elem) {
			in = "*" + x
		}
	}
	e, _, s, err := g.value(elem, in, path)
	if err != nil {
		return nil, nil, "", err
	}
	_, d, _, err := g.value(elem, v, path)
	if err != nil {
		return nil, nil, "", err
	}
	enc = append(enc, "b = appendBool(b, "+x+" != nil)", "if "+x+" != nil {")
	enc = append(enc, e...)
	enc = append(enc, "}")
	dec = append(dec, "if d.bool() {")
	if len(d) == 1 && strings.HasPrefix(d[0], v+" = ") {
		dec = append(dec, v+" := "+strings.TrimPrefix(d[0], v+" = "))
	} else {
		dec = append(dec, "var "+v+" "+name)
		dec = append(dec, d...)
	}
	dec = append(dec, x+" = &"+v, "}")
	return enc, dec, "optional" + wrapParen(s), nil
}

// fullName is t's package path and name.
func fullName(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

// special says whether t has an encoding of its own rather than its
// fields'.
func special(t reflect.Type) bool {
	switch fullName(t) {
	case uuidPkg + ".UUID", uuidPkg + ".NullUUID", kraftPkg + ".LogEnd":
		return true
	}
	return false
}

// wrapParen puts s in parentheses unless it has them already.
func wrapParen(s string) string {
	if strings.HasPrefix(s, "(") {
		return s
	}
	return "(" + s + ")"
}

// file writes the generated file's source, unformatted.
func (g *gen) file(events []event) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("// Code generated by gencodec. DO NOT EDIT.")
	p("")
	p("package node")
	p("")
	p("import (")
	paths := make([]string, 0, len(g.imports))
	for path := range g.imports {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		p("%q", path)
	}
	p(")")
	p("")
	p("// The event tags and bodies of kraft's wire format (codec.go), generated")
	p("// by internal/cmd/gencodec from the catalogue of messages (kraft.RPCs),")
	p("// fields in the order of their declaration in package kraft")
	p("// (docs/design.md D270). Tags are append-only (D271).")
	p("//")
	for _, line := range table(events) {
		p("//\t%s", line)
	}
	p("//")
	p("// Tag 0 is no event, with no body.")
	p("const (")
	p("wireNoEvent byte = 0")
	for _, e := range events {
		p("%s byte = %d // %s", ConstName(e.typ.Name()), e.tag, e.typ.Name())
	}
	p(")")
	p("")
	p("// appendEventBody appends ev's tag and body; false if ev is not a")
	p("// message event.")
	p("func appendEventBody(b []byte, ev kraft.Event) ([]byte, bool) {")
	p("switch e := ev.(type) {")
	for _, e := range events {
		p("case kraft.%s:", e.typ.Name())
		p("b = append(b, %s)", ConstName(e.typ.Name()))
		for _, line := range e.enc {
			p("%s", line)
		}
	}
	p("default:")
	p("return b, false")
	p("}")
	p("return b, true")
	p("}")
	p("")
	p("// eventBody decodes the body of an event of the tag; false if no event")
	p("// has the tag.")
	p("func (d *wireDecoder) eventBody(tag byte) (kraft.Event, bool) {")
	p("switch tag {")
	for _, e := range events {
		p("case %s:", ConstName(e.typ.Name()))
		p("var e kraft.%s", e.typ.Name())
		for _, line := range e.dec {
			p("%s", line)
		}
		p("return e, true")
	}
	p("}")
	p("return nil, false")
	p("}")
	return b.Bytes()
}

// words splits a body's description at the spaces between its fields,
// keeping a parenthesised group in one piece.
func words(desc string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range desc {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ' ':
			if depth == 0 {
				out = append(out, desc[start:i])
				start = i + 1
			}
		}
	}
	return append(out, desc[start:])
}

// table lays out the events' bodies: tag, name, then the fields, wrapped
// at 76 columns.
func table(events []event) []string {
	const indent, width = 28, 76
	var lines []string
	for _, e := range events {
		head := fmt.Sprintf("%d %s", e.tag, e.typ.Name())
		line := head
		if len(head) >= indent {
			lines = append(lines, head)
			line = ""
		}
		line += strings.Repeat(" ", indent-len(line))
		fresh := true
		for _, word := range words(e.desc) {
			if !fresh && len(line)+1+len(word) > width {
				lines = append(lines, line)
				line = strings.Repeat(" ", indent)
				fresh = true
			}
			if !fresh {
				line += " "
			}
			line += word
			fresh = false
		}
		lines = append(lines, line)
	}
	return lines
}
