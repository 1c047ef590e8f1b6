package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// A reader of stdout that goes away (stats TAPE | head) ends the run
// quietly with status 0, as it does cat's; it used to print "write
// /dev/stdout: broken pipe" and exit 1.
func TestStdoutReaderGone(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	var big strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&big, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`+"\n", i, i%50)
		fmt.Fprintf(&big, `{"jsonrpc":"2.0","id":%d,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.010Z"}}`+"\n", i)
	}
	path := writeFile(t, "big.jsonl", big.String())
	for _, args := range [][]string{
		{"stats", path},
		{"stats", "--json", path},
		{"export", path, "--format", "json"},
		{"export", path, "--format", "html"},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // the reader is gone before the first write
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = w, &stderr
		err = cmd.Run()
		w.Close()
		if err != nil || stderr.Len() != 0 {
			t.Errorf("%s with stdout's reader gone: %v, stderr %q; want status 0 and nothing said", strings.Join(args, " "), err, stderr.String())
		}
	}
}
