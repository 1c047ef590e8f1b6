package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cmd/tapedeck is flags → options → run: no non-test source file starts a
// goroutine (a go statement) or a listener of its own (net.Listen, a
// .Serve( call, an http.Server); the packages whose job it is do.
func TestCmdStartsNoGoroutineOrListener(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	scanned := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		scanned++
		for _, what := range liveCode(f) {
			t.Errorf("%s: %s: cmd/tapedeck is flags → options → run; move it to the package whose job it is", fset.Position(what.pos), what.what)
		}
	}
	if scanned < 20 {
		t.Fatalf("scanned %d files of cmd/tapedeck, expected its sources (more than 20)", scanned)
	}
}

type liveHit struct {
	pos  token.Pos
	what string
}

// liveCode finds go statements, net.Listen calls, .Serve( calls and
// http.Server values in f.
func liveCode(f *ast.File) []liveHit {
	var hits []liveHit
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			hits = append(hits, liveHit{n.Pos(), "a go statement"})
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "net" && strings.HasPrefix(sel.Sel.Name, "Listen") {
					hits = append(hits, liveHit{n.Pos(), "net." + sel.Sel.Name})
				}
				if sel.Sel.Name == "Serve" {
					hits = append(hits, liveHit{n.Pos(), "a .Serve( call"})
				}
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "http" && n.Sel.Name == "Server" {
				hits = append(hits, liveHit{n.Pos(), "an http.Server"})
			}
		}
		return true
	})
	return hits
}

// The scan finds what it looks for.
func TestLiveCodeScan(t *testing.T) {
	src := `package main
func f() {
	go run()
	go func() {}()
	ln, _ := net.Listen("tcp", ":0")
	srv := &http.Server{}
	srv.Serve(ln)
	_ = mcphttp.Listen(":0") // a package's: not cmd's own
}`
	f, err := parser.ParseFile(token.NewFileSet(), "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range liveCode(f) {
		got = append(got, h.what)
	}
	want := "a go statement|a go statement|net.Listen|an http.Server|a .Serve( call"
	if strings.Join(got, "|") != want {
		t.Errorf("found %q, expected %q", strings.Join(got, "|"), want)
	}
}
