package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// UpdateTape replaces the answer that differed with the live one, its
// recorded id and _meta kept, every other line byte for byte; a batch's
// line is left and reported; --in-place keeps the old tape as .bak.
func TestUpdateTape(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00Z"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"v":"old"},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:01Z"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:02Z"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"v":"same"},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:03Z"}}`,
	}
	src := filepath.Join(t.TempDir(), "t.jsonl")
	orig := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(src, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(src)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rep := VerifyReport{Server: "s", Calls: []CallResult{
		{Method: "tools/call", Line: 1, Response: 1, Answer: []byte(`{"jsonrpc":"2.0","id":7,"result":{"v":"new"}}`)},
		{Method: "tools/call", Line: 3, Response: 3, Pass: true, Answer: []byte(`{"jsonrpc":"2.0","id":8,"result":{"v":"same"}}`)},
	}}

	dst := filepath.Join(t.TempDir(), "new.jsonl")
	res, err := UpdateTape(src, dst, x, rep)
	if err != nil || res.Replaced != 1 || len(res.Batches) != 0 {
		t.Fatalf("UpdateTape: %+v, %v: expected one answer replaced", res, err)
	}
	got, _ := os.ReadFile(dst)
	want := lines[0] + "\n" + `{"jsonrpc":"2.0","id":1,"result":{"v":"new"},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:01Z"}}` + "\n" + lines[2] + "\n" + lines[3] + "\n"
	if string(got) != want {
		t.Errorf("updated tape:\n%s\nexpected:\n%s", got, want)
	}

	// In place: the old tape kept as .bak.
	if _, err := UpdateTape(src, src, x, rep); err != nil {
		t.Fatal(err)
	}
	if bak, _ := os.ReadFile(src + ".bak"); string(bak) != orig {
		t.Errorf(".bak holds %q, expected the tape as it was", bak)
	}
	if now, _ := os.ReadFile(src); string(now) != want {
		t.Errorf("in place:\n%s\nexpected:\n%s", now, want)
	}

	// Nothing differed: nothing written.
	none := filepath.Join(t.TempDir(), "none.jsonl")
	if res, err := UpdateTape(src, none, x, VerifyReport{Calls: rep.Calls[1:]}); err != nil || res.Replaced != 0 {
		t.Errorf("nothing differed: %+v, %v", res, err)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("nothing differed, yet %s was written (%v)", none, err)
	}
}
