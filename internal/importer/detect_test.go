package importer

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDetect tells each real input of testdata/import by its first bytes
// (the whole file, its first 4 KiB, and a cut that ends inside a value),
// and that a tape, a source file and other JSON are none of them.
func TestDetect(t *testing.T) {
	for _, tt := range []struct {
		file, format string
		refused      bool // a HAR of mcpsnoop's, without the messages: the HAR import says so
	}{
		{"mcpsnoop/everything-stdio.jsonl", "mcpsnoop", false},
		{"mcpsnoop/everything-http.jsonl", "mcpsnoop", false},
		{"har/everything-http.har", "har", false},
		{"har/mcpsnoop-export.har", "har", true},
		{"agent-vcr/calculator-v1.vcr", "agent-vcr", false},
		{"agent-vcr/calculator-errors.vcr", "agent-vcr", false},
		{"mcp-recorder/mock_session.json", "mcp-recorder", false},
	} {
		data := sample(t, tt.file)
		for _, n := range []int{len(data), 4096, 400} {
			head := data[:min(n, len(data))]
			if got, ok := Detect(head); !ok || got != tt.format {
				t.Errorf("%s, first %d bytes: Detect = %q, %v; want %q", tt.file, len(head), got, ok, tt.format)
			}
		}
		// What Detect says is what Import reads.
		if _, err := Import(tt.format, bytes.NewReader(data), &bytes.Buffer{}, Options{}); (err != nil) != tt.refused {
			t.Errorf("%s: detected as %s, import --from %s: %v (want refused: %v)", tt.file, tt.format, tt.format, err, tt.refused)
		}
	}
	tapeBytes, err := os.ReadFile(filepath.Join("..", "..", "testdata", "import", "har", "everything-http.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	goSource, err := os.ReadFile("detect.go")
	if err != nil {
		t.Fatal(err)
	}
	for name, head := range map[string][]byte{
		"a tape":         tapeBytes,
		"go source":      goSource,
		"empty":          nil,
		"package.json":   []byte(`{"name":"x","version":"1.0.0","scripts":{}}`),
		"an array":       []byte(`[{"log":{}}]`),
		"not json":       []byte("{not json"),
		"a bare message": []byte(`{"jsonrpc":"2.0","id":1,"method":"ping","session_id":"a","direction":"c2s"}`),
	} {
		if got, ok := Detect(head); ok {
			t.Errorf("%s: Detect = %q, want no format", name, got)
		}
	}
	if got, ok := Detect([]byte("\xef\xbb\xbf{\"log\":{\"version\":\"1.2\"")); !ok || got != "har" {
		t.Errorf("a HAR after a byte order mark: Detect = %q, %v; want har", got, ok)
	}
	for _, f := range Formats() {
		if d := Describe(f); d == "" || d == "a "+f+" file" && f != "har" {
			t.Errorf("Describe(%q) = %q, want a name of its own", f, d)
		}
	}
}

// FuzzDetect feeds the first bytes of a file to Detect: a format it names
// is one Import knows, and no input panics.
func FuzzDetect(f *testing.F) {
	for _, s := range []string{`{"log":{"entries":[]}}`, `{"metadata":{},"interactions":[]}`, `{"ts":"x","direction":"c2s"}` + "\n", `{"session":{}}`, `[`, ``, "\xef\xbb\xbf{"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		format, ok := Detect(head)
		if ok && !slices.Contains(Formats(), format) {
			t.Fatalf("Detect(%q) = %q, not a format Import knows", head, format)
		}
	})
}
