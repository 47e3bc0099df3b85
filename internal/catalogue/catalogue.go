// Package catalogue reads the kraft package's source for its closed sets
// of events and actions, so that tests of kraft and of its hosts check
// every type the package defines instead of a hand-kept count. An event is
// a type with an isEvent method, an action one with an isAction method
// (event.go and action.go seal the two interfaces that way; messages.go
// declares the message types).
package catalogue

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
)

// Catalogue is the package's events and actions, by type name, sorted.
type Catalogue struct {
	Events  []string
	Actions []string
}

// parse parses the non-test Go files of package kraft in dir.
func parse(dir string) (map[string]*ast.File, error) { return parseIn(dir, "kraft") }

// parseIn parses the non-test Go files of package pkg in dir.
func parseIn(dir, pkg string) (map[string]*ast.File, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return nil, err
	}
	p, ok := pkgs[pkg]
	if !ok {
		return nil, fmt.Errorf("catalogue: no package %s in %s", pkg, dir)
	}
	return p.Files, nil
}

// Load reads the catalogue of the kraft package in dir.
func Load(dir string) (Catalogue, error) {
	files, err := parse(dir)
	if err != nil {
		return Catalogue{}, err
	}
	var c Catalogue
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || (fn.Name.Name != "isEvent" && fn.Name.Name != "isAction") {
				continue
			}
			recv, ok := fn.Recv.List[0].Type.(*ast.Ident)
			if !ok {
				return Catalogue{}, fmt.Errorf("catalogue: %s has a pointer or generic receiver", fn.Name.Name)
			}
			switch fn.Name.Name {
			case "isEvent":
				c.Events = append(c.Events, recv.Name)
			case "isAction":
				c.Actions = append(c.Actions, recv.Name)
			}
		}
	}
	sort.Strings(c.Events)
	sort.Strings(c.Actions)
	if len(c.Events) == 0 || len(c.Actions) == 0 {
		return Catalogue{}, fmt.Errorf("catalogue: no events or no actions in %s", dir)
	}
	return c, nil
}

// Case is one clause of a type switch: the type names it lists and
// whether its body does anything.
type Case struct {
	Types []string
	Empty bool
}

// TypeSwitch returns the clauses of the first type switch in the function
// (or method) named fn of the kraft package in dir; a default clause has
// no types.
func TypeSwitch(dir, fn string) ([]Case, error) { return TypeSwitchIn(dir, "kraft", fn) }

// TypeSwitchIn is TypeSwitch for the package pkg in dir, a host of kraft:
// a case naming kraft.X (a type of package kraft) gives X.
func TypeSwitchIn(dir, pkg, fn string) ([]Case, error) {
	files, err := parseIn(dir, pkg)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Name.Name != fn || fd.Body == nil {
				continue
			}
			var sw *ast.TypeSwitchStmt
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if s, ok := n.(*ast.TypeSwitchStmt); ok && sw == nil {
					sw = s
				}
				return sw == nil
			})
			if sw == nil {
				return nil, fmt.Errorf("catalogue: %s has no type switch", fn)
			}
			var out []Case
			for _, s := range sw.Body.List {
				cc := s.(*ast.CaseClause)
				c := Case{Empty: len(cc.Body) == 0}
				for _, e := range cc.List {
					if sel, ok := e.(*ast.SelectorExpr); ok && pkg != "kraft" {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "kraft" {
							c.Types = append(c.Types, sel.Sel.Name)
							continue
						}
					}
					id, ok := e.(*ast.Ident)
					if !ok {
						return nil, fmt.Errorf("catalogue: %s switches on a type that is not a plain name", fn)
					}
					c.Types = append(c.Types, id.Name)
				}
				out = append(out, c)
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("catalogue: no function %s in %s", fn, dir)
}
