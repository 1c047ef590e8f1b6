//go:build unix

package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// pipeOf is a pipe already filled with data and closed by its writer,
// named as a shell's <(cat t.jsonl) names it: /dev/fd/N.
func pipeOf(t *testing.T, data string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := w.WriteString(data); err != nil { // within the pipe's buffer
		t.Fatal(err)
	}
	w.Close()
	return fmt.Sprintf("/dev/fd/%d", r.Fd())
}

// Commands that index a tape and then read its messages again (diff,
// export) take a pipe as the README says every command does: the pipe is
// read once into a temporary file, and the second reading is of that file.
// Before, the second reading opened the pipe again and found it empty:
// "read the pipe /dev/fd/63: the pipe had no writer, or its writer wrote
// nothing".
func TestCommandsReadAPipeOnce(t *testing.T) {
	data := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{"content":[]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.002Z"}}
`
	out, errOut, code := runCLI(t, "diff", pipeOf(t, data), pipeOf(t, data))
	if code != 0 || !strings.Contains(out, "A ") {
		t.Errorf("diff of two pipes: exit %d, stdout %q, stderr %q; want the report, exit 0", code, out, errOut)
	}
	for _, format := range []string{"json", "har", "otlp", "html"} {
		out, errOut, code := runCLI(t, "export", "--format", format, pipeOf(t, data))
		if code != 0 || !strings.Contains(out, "tools/call") {
			t.Errorf("export --format %s of a pipe: exit %d, stderr %q, stdout %.200q; want the call exported", format, code, errOut, out)
		}
	}
}

// --server on a tape that names more servers than the index tells apart:
// a name past them is said to be past the limit, not "not on the tape",
// and the list of the tape's servers in the message is cut short (it was
// all 65 535 names, built in quadratic time: a minute).
func TestServerFlagPastTheLimit(t *testing.T) {
	var b strings.Builder
	for i := range 70_000 {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"s%d","ts":"2026-05-16T12:00:00.000Z"}}`+"\n", i)
	}
	path := writeFile(t, "many.jsonl", b.String())
	for _, cmd := range [][]string{{"export", "--format", "json"}, {"stats"}} {
		_, errOut, code := runCLI(t, append(cmd, "--server", "s69000", path)...)
		if code != 1 || !strings.Contains(errOut, `--server "s69000": not among the tape's first 65535 servers`) ||
			!strings.Contains(errOut, `"s9" and 65525 more`) {
			t.Errorf("%s --server past the limit: exit %d, %.300q", cmd[0], code, errOut)
		}
	}
	if _, errOut, code := runCLI(t, "export", "--format", "json", "--server", "s100", path); code != 0 {
		t.Errorf("export --server s100 (within the limit): exit %d, %.300q", code, errOut)
	}
}
