package kraft_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kraftquorum/kraft"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestPropertyStepInDecidesAsStepInto: on states reached by simulated runs,
// random event sequences (any field nonsense, and Fetch responses with
// records) step through StepIn and StepInto (which steps a copy and keeps
// its input to return to, D300) side by side; at every step StepIn's state
// is StepInto's next state and its actions are StepInto's, an event
// answered with a Fault or AppendFetched leaves StepIn's state as it was,
// and StepIn changes nothing but its own State (a deep copy of the state it
// started from still equals the state StepInto stepped).
func TestPropertyStepInDecidesAsStepInto(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var into, in kraft.Buffer
		for i, s := range reachableStates(t) {
			cur := s // StepIn's, updated in place
			n := rapid.IntRange(1, 30).Draw(t, fmt.Sprintf("events for replica %d", i))
			for j := 0; j < n; j++ {
				e := genEvent.Draw(t, "event")
				if r, ok := e.(kraft.ReceiveFetchResponse); ok {
					r.Records = rapid.Bool().Draw(t, "records")
					e = r
				}
				before := kraft.CloneState(s)
				next, acts := kraft.StepInto(&into, s, e)
				var inActs []kraft.Action
				if rapid.IntRange(0, 3).Draw(t, "one-shot buffer") == 0 {
					inActs = kraft.StepIn(nil, &cur, e)
				} else {
					inActs = kraft.StepIn(&in, &cur, e)
				}
				if !reflect.DeepEqual(next, cur) {
					t.Fatalf("StepIn on %T%+v made\n%v\nStepInto made\n%v", e, e, cur, next)
				}
				// (An empty list may be nil or not, by buffer.)
				if (len(acts) > 0 || len(inActs) > 0) && !reflect.DeepEqual(acts, inActs) {
					t.Fatalf("StepIn on %T%+v gave %v, StepInto %v", e, e, inActs, acts)
				}
				if !reflect.DeepEqual(before, s) {
					t.Fatalf("StepIn on %T%+v changed a state it does not own:\nbefore %v\nafter  %v", e, e, before, s)
				}
				if len(acts) == 1 {
					switch acts[0].(type) {
					case kraft.Fault, kraft.AppendFetched:
						if !reflect.DeepEqual(before, cur) {
							t.Fatalf("StepIn on %T%+v answered %v and left\n%v\nnot\n%v", e, e, acts, cur, before)
						}
					}
				}
				s = next
			}
		}
	})
}

// TestStepInPlaceCasesCannotUndo: stepTo steps an event in place, with no
// copy of the State, unless its case keeps the state first (stepSaved);
// an in-place step cannot be undone, so no handler of an in-place case may
// reach a fault (failf, a write of the stepper's fault) or ask for records
// to be appended first (a write of appendFirst), nor may the end of an
// in-place step (toResigned). And no case keeps the state without need.
// The package's calls are read from its source by name (a method of any
// type with the name counts, and so does a name read without a call, such
// as a method value f := t.failf called as f: both can only add calls);
// docs/design.md D300.
func TestStepInPlaceCasesCannotUndo(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	calls := map[string]map[string]bool{} // function or method name -> names it calls
	var stepTo *ast.FuncDecl
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if fd.Name.Name == "stepTo" && fd.Recv == nil {
				stepTo = fd
			}
			if calls[fd.Name.Name] == nil {
				calls[fd.Name.Name] = map[string]bool{}
			}
			for c := range calledIn(fd.Body) {
				calls[fd.Name.Name][c] = true
			}
		}
	}
	require.NotNil(t, stepTo, "no func stepTo")
	undoes := func(from map[string]bool) string {
		seen := map[string]bool{}
		var walk func(n string, path string) string
		walk = func(n, path string) string {
			if n == "failf" || n == "=fault" || n == "=appendFirst" {
				return path
			}
			if seen[n] {
				return ""
			}
			seen[n] = true
			for c := range calls[n] {
				if p := walk(c, path+" > "+c); p != "" {
					return p
				}
			}
			return ""
		}
		for n := range from {
			if n == "stepSaved" {
				continue
			}
			if p := walk(n, n); p != "" {
				return p
			}
		}
		return ""
	}
	require.Empty(t, undoes(map[string]bool{"toResigned": true}), "the end of an in-place step may be undone")

	var sw *ast.TypeSwitchStmt
	ast.Inspect(stepTo.Body, func(n ast.Node) bool {
		if s, ok := n.(*ast.TypeSwitchStmt); ok && sw == nil {
			sw = s
		}
		return sw == nil
	})
	require.NotNil(t, sw, "stepTo has no type switch")
	// The shortcuts before the switch (a Fetch's, D340) step in place too.
	shortcuts := 0
	for _, st := range stepTo.Body.List {
		if st == ast.Stmt(sw) {
			break
		}
		if is, ok := st.(*ast.IfStmt); ok {
			shortcuts++
			path := undoes(calledIn(is.Body))
			require.Empty(t, path, "a shortcut before stepTo's switch steps in place, but may be undone: %s", path)
		}
	}
	require.Positive(t, shortcuts)
	saved, inPlace := 0, 0
	for _, st := range sw.Body.List {
		cc := st.(*ast.CaseClause)
		var types []string
		for _, x := range cc.List {
			types = append(types, fmt.Sprint(x))
		}
		body := map[string]bool{}
		for _, b := range cc.Body {
			for c := range calledIn(b) {
				body[c] = true
			}
		}
		path := undoes(body)
		if body["stepSaved"] {
			saved++
			require.NotEmpty(t, path, "case %v keeps the state, but its handler can neither fault nor append first", types)
		} else {
			inPlace++
			require.Empty(t, path, "case %v steps in place, but its handler may be undone: %s", types, path)
		}
	}
	require.Positive(t, saved)
	require.Positive(t, inPlace)
}

// calledIn lists the names n calls (f(), x.f()) or reads (any identifier
// or selector, so that a function value a handler calls later counts as
// called), and the fields it assigns that undo a step, as "=fault" and
// "=appendFirst".
func calledIn(n ast.Node) map[string]bool {
	out := map[string]bool{}
	ast.Inspect(n, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			switch fn := x.Fun.(type) {
			case *ast.Ident:
				out[fn.Name] = true
			case *ast.SelectorExpr:
				out[fn.Sel.Name] = true
			case *ast.IndexExpr: // a generic call, f[T]()
				if id, ok := fn.X.(*ast.Ident); ok {
					out[id.Name] = true
				}
			}
		case *ast.SelectorExpr:
			// A method value (f := t.failf; f()) or a method passed on
			// (g(t.failf)) counts as a call: any name read may be called.
			out[x.Sel.Name] = true
		case *ast.Ident:
			out[x.Name] = true
		case *ast.UnaryExpr:
			// &t.fault: a write through the pointer cannot be seen.
			if sel, ok := x.X.(*ast.SelectorExpr); ok && x.Op == token.AND && (sel.Sel.Name == "fault" || sel.Sel.Name == "appendFirst") {
				out["="+sel.Sel.Name] = true
			}
		case *ast.AssignStmt:
			for _, l := range x.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok && (sel.Sel.Name == "fault" || sel.Sel.Name == "appendFirst") {
					out["="+sel.Sel.Name] = true
				}
			}
		case *ast.CompositeLit:
			// stepper{fault: ...} and the like.
			for _, el := range x.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && (k.Name == "fault" || k.Name == "appendFirst") {
						out["="+k.Name] = true
					}
				}
			}
		}
		return true
	})
	return out
}
