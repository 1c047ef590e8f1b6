package mcptest

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

// Import paths of the test programs in this package's cmd directory.
const (
	SDKClientPackage = "github.com/tapedeck/tapedeck/internal/mcptest/cmd/sdkclient"
	SDKServerPackage = "github.com/tapedeck/tapedeck/internal/mcptest/cmd/sdkserver"
)

type build struct {
	once sync.Once
	path string
	out  []byte
	err  error
}

var (
	buildsMu sync.Mutex
	builds   = map[string]*build{}
	buildDir string // one temp dir per test process, removed by Main
)

// Main runs a package's tests (call it from TestMain) and then removes the
// binaries BuildBinary built, which no single test owns, so that "go test"
// leaves nothing in the temp directory:
//
//	func TestMain(m *testing.M) { mcptest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	buildsMu.Lock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	buildsMu.Unlock()
	os.Exit(code)
}

// BuildBinary runs `go build` on the package pkg (an import path or a
// ./relative path from the repository root) once per test process and returns
// the binary's path. Later calls, from any test, reuse it.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	root := RepoRoot(t)
	buildsMu.Lock()
	b, ok := builds[pkg]
	if !ok {
		b = &build{}
		builds[pkg] = b
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "mcptest-bin-")
		if err != nil {
			buildsMu.Unlock()
			t.Fatalf("mcptest: temp dir for binaries: %v", err)
		}
		buildDir = dir
	}
	dir := buildDir
	buildsMu.Unlock()

	b.once.Do(func() {
		// A directory per package keeps the program's own name (its usage
		// text shows it) without clashes between packages of one base name.
		sub, err := os.MkdirTemp(dir, "")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(sub, path.Base(pkg))
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = root
		b.out, b.err = cmd.CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("mcptest: go build %s: %v\n%s", pkg, b.err, b.out)
	}
	return b.path
}
