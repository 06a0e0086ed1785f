package gosync

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"
)

// TestBackfillLoopOneLevel: the backfill loop (backfill.go, fleet.go) calls
// the unexported wrappers of queries.go, which map errors, and neither the
// generated queries (s.q) nor the Store's public methods: one level.
func TestBackfillLoopOneLevel(t *testing.T) {
	public := map[string]bool{}
	st := reflect.TypeOf(&Store{})
	for i := 0; i < st.NumMethod(); i++ {
		public[st.Method(i).Name] = true
	}
	if !public["ClaimCheckpoint"] || !public["Checkpoint"] {
		t.Fatalf("Store's method set misread: %v", public)
	}
	fset := token.NewFileSet()
	for _, file := range []string{"backfill.go", "fleet.go"} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		wrappers := 0
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || !isStore(sel.X) {
				return true
			}
			switch {
			case sel.Sel.Name == "q":
				t.Errorf("%s: the generated queries (%s.q) called directly", fset.Position(sel.Pos()), exprString(sel.X))
			case public[sel.Sel.Name]:
				t.Errorf("%s: public method %s.%s called from the loop", fset.Position(sel.Pos()), exprString(sel.X), sel.Sel.Name)
			default:
				wrappers++
			}
			return true
		})
		if wrappers == 0 {
			t.Errorf("%s: no call of a Store wrapper found (the check would pass vacuously)", file)
		}
	}
}

// isStore: the loop's Store is s (a method's receiver) or r.s (a fleet run's).
func isStore(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name == "s"
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		return ok && id.Name == "r" && x.Sel.Name == "s"
	}
	return false
}

func exprString(x ast.Expr) string {
	if sel, ok := x.(*ast.SelectorExpr); ok {
		return exprString(sel.X) + "." + sel.Sel.Name
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}
