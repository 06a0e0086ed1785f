package gosync_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// TestExportedNamesDocumented: `go doc` of every exported name of the
// package says what it is for (a doc comment on it or on its const/var
// group).
func TestExportedNamesDocumented(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := pkgs["gosync"]
	if !ok {
		t.Fatal("no package gosync")
	}
	d := doc.New(p, "github.com/gosync/gosync/gosync", 0)
	need := func(name, comment string) {
		if ast.IsExported(name) && strings.TrimSpace(comment) == "" {
			t.Errorf("%s has no doc comment", name)
		}
	}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				need(n, v.Doc)
			}
		}
	}
	for _, f := range d.Funcs {
		need(f.Name, f.Doc)
	}
	values(d.Consts)
	values(d.Vars)
	for _, ty := range d.Types {
		need(ty.Name, ty.Doc)
		for _, f := range append(ty.Funcs, ty.Methods...) {
			need(ty.Name+"."+f.Name, f.Doc)
		}
		values(ty.Consts)
		values(ty.Vars)
	}
}
