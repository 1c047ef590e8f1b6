package compare

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// memSide is a Side over tape lines held in memory.
func memSide(t *testing.T, name string, lines ...string) Side {
	t.Helper()
	data := []byte(strings.Join(lines, "\n") + "\n")
	x := tape.NewIndex(bytes.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	return Side{Name: name, Index: x, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

// A tool whose icons (2025-11-25) changed is a changed definition, the
// diff naming the icon's member.
func TestDiffIcons(t *testing.T) {
	list := func(src string) []string {
		return []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/list","_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.000Z"}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"},"icons":[{"src":"` + src + `","mimeType":"image/png","sizes":["48x48"]}]}]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.010Z"}}`,
		}
	}
	r, err := Compare(memSide(t, "a", list("https://example.com/a.png")...), memSide(t, "b", list("https://example.com/b.png")...), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Servers) != 1 || len(r.Servers[0].Definitions) != 1 {
		t.Fatalf("report %+v, want one changed definition", r.Servers)
	}
	d := r.Servers[0].Definitions[0]
	if d.Name != "echo" || d.Change != "changed" || len(d.Diff) != 1 || d.Diff[0].Path != "/icons/0/src" {
		t.Fatalf("definition %+v, want echo changed at /icons/0/src", d)
	}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "~ tool echo changed") || !strings.Contains(b.String(), "/icons/0/src") {
		t.Errorf("diff text does not name the icon:\n%s", b.String())
	}
}
