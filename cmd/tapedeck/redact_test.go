package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

func TestRedactCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"password":"hunter2","user":"ann"}},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.100Z"}}`,
		`[{"jsonrpc":"2.0","id":2,"method":"a","params":{"token":"sk-AAAA1111"}},{"jsonrpc":"2.0","method":"b"}]`,
		`garbage line with sk-BBBB2222`,
		`{"jsonrpc":"2.0","method":"$transport/stderr","params":{"text":"auth with sk-CCCC3333"},"_meta":{"dir":"lifecycle","server":"s","ts":"2026-05-16T12:00:00.200Z"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"x","params":{"password":"torn`,
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.jsonl")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"redact", in, "-o", out, "--redact-key", "password", "--redact-value", `sk-[A-Z0-9]+`}, nil, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o600 {
		t.Errorf("output mode %v, want 0600", fi.Mode().Perm())
	}
	for _, secret := range []string{"hunter2", "sk-AAAA1111", "sk-BBBB2222", "sk-CCCC3333"} {
		if bytes.Contains(got, []byte(secret)) {
			t.Errorf("output still holds %q:\n%s", secret, got)
		}
	}
	outLines := strings.Split(string(got), "\n")
	if len(outLines) != len(lines) {
		t.Fatalf("output has %d lines, want %d:\n%s", len(outLines), len(lines), got)
	}
	if outLines[1] != lines[1] { // untouched: no rule matched
		t.Errorf("line 2 changed:\ngot  %s\nwant %s", outLines[1], lines[1])
	}
	// The torn last line: the key rule reaches it too, and it stays torn.
	if want := `{"jsonrpc":"2.0","id":3,"method":"x","params":{"password":"[REDACTED]"`; outLines[5] != want {
		t.Errorf("torn line:\ngot  %s\nwant %s", outLines[5], want)
	}
	if outLines[3] != "garbage line with [REDACTED]" {
		t.Errorf("invalid line: %s", outLines[3])
	}
	if !strings.HasPrefix(outLines[2], "[") || !strings.Contains(outLines[2], `"redacted":["params.token"]`) {
		t.Errorf("batch line: %s", outLines[2])
	}
	e := tape.Classify([]byte(outLines[0]))
	if len(e) != 1 || e[0].Server != "s" || !strings.Contains(outLines[0], `"redacted":["params.arguments.password"]`) {
		t.Errorf("first line: %s", outLines[0])
	}
	if !strings.Contains(stderr.String(), "5 lines redacted") || !strings.Contains(stderr.String(), "torn") {
		t.Errorf("stderr: %s", stderr.String())
	}
	// The output must not be overwritten by accident.
	err = run(context.Background(), []string{"redact", in, "-o", out, "--redact-key", "password"}, nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second run: %v, want an already-exists error", err)
	}
}

// TestRedactKeepsUnmatchedLines: lines no rule matches, batches and invalid
// arrays included, are copied byte for byte; a line that cannot be decoded
// stops the command rather than passing its secrets through.
func TestRedactKeepsUnmatchedLines(t *testing.T) {
	lines := []string{
		`[ {"jsonrpc":"2.0","id":1,"method":"a"} , {"jsonrpc":"2.0","id":2,"method":"b"} ]`,
		`[]`,
		`[{"jsonrpc":"2.0","id":2,"method":"a"}, 5]`,
		`{"jsonrpc":"2.0","id":3,"method":"c"}`,
	}
	in := writeFile(t, "in.jsonl", strings.Join(lines, "\n")+"\n")
	out, errOut, code := runCLI(t, "redact", in, "-o", "-", "--redact-key", "token")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out != strings.Join(lines, "\n")+"\n" {
		t.Errorf("unmatched lines changed:\ngot:\n%s\nwant:\n%s", out, strings.Join(lines, "\n"))
	}
	deep := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"token":"SECRET","a":` + strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000) + `}}`
	in = writeFile(t, "deep.jsonl", lines[3]+"\n"+deep+"\n")
	out, errOut, code = runCLI(t, "redact", in, "-o", "-", "--redact-key", "token")
	if code != 1 || strings.Contains(out, "SECRET") || !strings.Contains(errOut, "line 2: malformed tape line: cannot decode the line to redact it") {
		t.Errorf("undecodable line: exit %d, stdout %.80q, stderr %q", code, out, errOut)
	}
}

// A redact stopped by an undecodable line writes the lines before it (it
// said so, and left an empty file); a torn last line stays torn however
// many warnings came first (the torn warning used to be the 1001st, not
// kept, and the line got a newline).
func TestRedactStopsHonestlyAndKeepsTornEnd(t *testing.T) {
	var b strings.Builder
	for i := range 1200 {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"x","params":{"token":"t%d"}}`+"\n", i, i) // no _meta: a warning each
	}
	good := b.String()
	deep := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"token":"SECRET","a":` + strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000) + `}}`
	in := writeFile(t, "stop.jsonl", good+deep+"\n")
	out, errOut, code := runCLI(t, "redact", in, "-o", "-", "--redact-key", "token")
	if code != 1 || !strings.Contains(errOut, "nothing written past line 1200") {
		t.Fatalf("exit %d, stderr %.200q", code, errOut)
	}
	if n := strings.Count(out, "\n"); n != 1200 || strings.Contains(out, "SECRET") || strings.Count(out, "[REDACTED]") != 1200 {
		t.Errorf("output holds %d lines (%d redacted), want the 1200 before the bad one, redacted", n, strings.Count(out, "[REDACTED]"))
	}

	const torn = `{"jsonrpc":"2.0","id":9,"method":"x","params":{"token":"abc`
	in = writeFile(t, "torn.jsonl", good+torn)
	out, errOut, code = runCLI(t, "redact", in, "-o", "-", "--redact-key", "token")
	if code != 0 {
		t.Fatalf("exit %d: %.200s", code, errOut)
	}
	if !strings.HasSuffix(out, `"token":"[REDACTED]"`) {
		t.Errorf("output ends %q, want the torn line, redacted, with no newline", out[max(0, len(out)-60):])
	}
	if !strings.Contains(errOut, "more warnings not shown") {
		t.Errorf("stderr does not count the warnings it did not show")
	}
}
