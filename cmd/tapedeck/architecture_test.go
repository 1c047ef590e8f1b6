package main

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/tapedeck/tapedeck"

// archRow is one row of ARCHITECTURE.md's package table.
type archRow struct {
	line    int
	pkg     string   // as the first column names it, e.g. "replay/live"
	imports []string // the tapedeck packages its imports column names
	raw     string   // the imports column as written
}

// archTable parses the package table of ARCHITECTURE.md: the rows between
// "## Packages" and the next heading, three columns each.
func archTable(t *testing.T) []archRow {
	t.Helper()
	f, err := os.Open("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tops := topLevelDirs(t)
	tick := regexp.MustCompile("`([^`]+)`")
	var rows []archRow
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Packages"
			continue
		case !in || !strings.HasPrefix(line, "|"):
			continue
		}
		cols := strings.Split(strings.Trim(line, "|"), "|")
		if len(cols) != 3 {
			t.Fatalf("ARCHITECTURE.md:%d: found %d columns in the package table, expected 3 (package, what it holds, imports)", n, len(cols))
		}
		name := tick.FindStringSubmatch(cols[0])
		if name == nil { // the header and its rule
			continue
		}
		r := archRow{line: n, pkg: name[1], raw: strings.TrimSpace(cols[2])}
		for _, m := range tick.FindAllStringSubmatch(cols[2], -1) {
			// A tapedeck package is named by its path from the module's
			// root, so its first element is a directory of the repository;
			// third-party names (`hujson`, `modernc.org/sqlite`) are not.
			if tops[strings.SplitN(m[1], "/", 2)[0]] {
				r.imports = append(r.imports, m[1])
			}
		}
		slices.Sort(r.imports)
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 10 {
		t.Fatalf("found %d rows in ARCHITECTURE.md's package table, expected one a package", len(rows))
	}
	return rows
}

func topLevelDirs(t *testing.T) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs[e.Name()] = true
		}
	}
	return dirs
}

// modulePackages returns each non-test package of the module, by its path
// from the module's root, with the tapedeck packages it imports (sorted).
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	rel := func(p string) (string, bool) {
		if p == modulePath {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, modulePath+"/")
		return r, ok
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		name, ok := rel(f[0])
		if !ok {
			t.Fatalf("go list printed %q, outside module %s", f[0], modulePath)
		}
		imports := []string{}
		for _, imp := range f[1:] {
			if r, ok := rel(imp); ok {
				imports = append(imports, r)
			}
		}
		slices.Sort(imports)
		pkgs[name] = imports
	}
	return pkgs
}

// TestArchitectureImports holds the imports column of ARCHITECTURE.md's
// package table to `go list`: the tapedeck packages a row names are exactly
// those its package's non-test files import. Only tapedeck's own packages
// are checked (a backticked name whose first element is a directory of the
// repository); third-party imports may be summarised ("the OTel SDK") and the
// standard library is not listed. Every package of the module has a row,
// except the helper binaries under internal/mcptest/cmd, which the
// internal/mcptest row describes; a row whose imports column says "not a Go
// package" names a directory with no Go files (testdata).
func TestArchitectureImports(t *testing.T) {
	rows := archTable(t)
	pkgs := modulePackages(t)
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.pkg] {
			t.Errorf("ARCHITECTURE.md:%d: a second row for %s", r.line, r.pkg)
		}
		seen[r.pkg] = true
		got, ok := pkgs[r.pkg]
		if !ok {
			if !strings.Contains(r.raw, "not a Go package") {
				t.Errorf("ARCHITECTURE.md:%d: row %s names no package of the module (go list ./... has none by that path); a directory without Go files says \"not a Go package\" in its imports column", r.line, r.pkg)
			}
			continue
		}
		if r.imports == nil {
			r.imports = []string{}
		}
		if !slices.Equal(got, r.imports) {
			t.Errorf("ARCHITECTURE.md:%d: row %s lists tapedeck imports %v; go list says it imports %v", r.line, r.pkg, r.imports, got)
		}
	}
	for p := range pkgs {
		if !seen[p] && !strings.HasPrefix(p, "internal/mcptest/cmd/") {
			t.Errorf("package %s has no row in ARCHITECTURE.md's package table", p)
		}
	}
}

// maxSourceLines is the length past which a non-test source file is
// several concepts that want files of their own.
const maxSourceLines = 800

// TestSourceFileLength: no non-test .go file of the module is over
// maxSourceLines lines.
func TestSourceFileLength(t *testing.T) {
	n := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		if lines := strings.Count(string(b), "\n"); lines > maxSourceLines {
			t.Errorf("%s has %d lines, over %d: split it by concept", strings.TrimPrefix(path, "../../"), lines, maxSourceLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("found %d source files, expected the module's", n)
	}
}

// TestArchitectureImportantFiles: each file ARCHITECTURE.md's "Important
// files" names exists, so a move that forgets the guide fails here.
func TestArchitectureImportantFiles(t *testing.T) {
	b, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## Important files\n")
	if !ok {
		t.Fatal(`ARCHITECTURE.md has no "## Important files" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	item := regexp.MustCompile("(?m)^- `([^`]+)`:")
	files := item.FindAllStringSubmatch(sec, -1)
	if len(files) < 5 {
		t.Fatalf(`found %d files in "Important files", expected a list of them ("- `+"`path`"+`: why")`, len(files))
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join("../..", f[1])); err != nil {
			t.Errorf("ARCHITECTURE.md's important file %s: %v", f[1], err)
		}
	}
}
