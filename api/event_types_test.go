package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEventTypesListWhatIsWritten: every event type the FSM and the
// leader write is in EventTypes, and EventTypes holds nothing they never
// write, so that a filter (the CLI's --type) neither refuses a real type
// nor offers one that matches nothing. It reads the writers' source: the
// first argument of every event(...) and recordEvent(...) call, a string
// literal or a string constant of those packages or this one.
func TestEventTypesListWhatIsWritten(t *testing.T) {
	consts := map[string]string{} // constant name → value, across the packages read
	var calls []*ast.CallExpr
	fset := token.NewFileSet()
	for _, dir := range []string{".", "../fsm", "../leader"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, name := range n.Names {
						if i < len(n.Values) {
							if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
								consts[name.Name], _ = strconv.Unquote(lit.Value)
							}
						}
					}
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "event" || sel.Sel.Name == "recordEvent") && len(n.Args) > 0 {
						calls = append(calls, n)
					}
				}
				return true
			})
		}
	}
	written := map[string]bool{}
	for _, call := range calls {
		var typ string
		switch a := call.Args[0].(type) {
		case *ast.BasicLit:
			typ, _ = strconv.Unquote(a.Value)
		case *ast.Ident:
			typ = consts[a.Name]
		case *ast.SelectorExpr:
			typ = consts[a.Sel.Name]
		}
		if typ == "" {
			continue // a variable (RecordEvent's request): its values are literals elsewhere
		}
		written[typ] = true
		if !slices.Contains(EventTypes, typ) {
			t.Errorf("%s writes event type %q, missing from EventTypes", fset.Position(call.Pos()), typ)
		}
	}
	if len(written) < 10 {
		t.Fatalf("found only %d event types written (%v): the source scan is broken", len(written), written)
	}
	for _, typ := range EventTypes {
		if !written[typ] {
			t.Errorf("EventTypes lists %q, which nothing writes", typ)
		}
	}
}
