package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestStatsGolden runs `tapedeck stats` on every tape under the repository's
// testdata/ (real recordings and hostile inputs) and compares stdout and
// stderr with golden files. Refresh them with `go test ./cmd/tapedeck -update`
// and read the diff.
func TestStatsGolden(t *testing.T) {
	tapes, err := filepath.Glob("../../testdata/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	hostile, _ := filepath.Glob("../../testdata/hostile/*.jsonl")
	tapes = append(tapes, hostile...)
	if len(tapes) < 10 {
		t.Fatalf("found %d testdata tapes, expected the fixtures", len(tapes))
	}
	for _, tp := range tapes {
		name := strings.TrimSuffix(strings.TrimPrefix(tp, "../../testdata/"), ".tape.jsonl")
		t.Run(name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "stats", tp)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got := "$ tapedeck stats " + strings.TrimPrefix(tp, "../../") + "\n" + strings.ReplaceAll(out, "../../", "") + "--- stderr\n" + errOut
			golden := filepath.Join("testdata", "stats", strings.ReplaceAll(name, "/", "_")+".golden")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("stats output changed; got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
