package vcr_test

import (
	"os"
	"strings"
	"testing"
)

// The README's "Use tapes in Go tests" code is this package's Example,
// which CI runs: they must not drift apart.
func TestREADMEExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := string(src[strings.Index(string(src), "func Example() {"):])
	if !strings.Contains(string(readme), strings.TrimRight(fn, "\n")) {
		t.Error("README.md's Go example is not vcr's Example (example_test.go): copy it again")
	}
}
