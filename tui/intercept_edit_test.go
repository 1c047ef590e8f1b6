package tui

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

const heldCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`

// An edit over the line limit is refused before it is parsed (a 100 MB
// edit used to take 1 GB and cut the client off), and the edited file is
// read with the same bound.
func TestEditBounded(t *testing.T) {
	big := append([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"`), bytes.Repeat([]byte("a"), maxEdit)...)
	big = append(big, `"}}`...)
	if raw, problem := checkEdit([]byte(heldCall), big); raw != nil || !strings.Contains(problem, "at most 67108864 bytes") {
		t.Errorf("checkEdit(an edit of %d bytes) = %d bytes, %q; want it refused naming the limit", len(big), len(raw), problem)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "held.json")
	if err := os.WriteFile(path, bytes.Repeat([]byte(" "), 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readEdit(path, 4096); err == nil || !strings.Contains(err.Error(), "at most 4096 bytes") {
		t.Errorf("readEdit(5000 bytes, 4096) = %v, want the limit named", err)
	}
	if _, err := readEdit("/dev/zero", 4096); err == nil || !strings.Contains(err.Error(), "expected the edited file") {
		t.Errorf("readEdit(/dev/zero) = %v, want a device refused", err)
	}
	os.WriteFile(path, []byte(heldCall), 0o600)
	if data, err := readEdit(path, 4096); err != nil || string(data) != heldCall {
		t.Errorf("readEdit(the held call) = %q, %v", data, err)
	}
}

// An $EDITOR that never exits is stopped after the bound (it used to stop
// the whole live session, the terminal being its): the command is killed,
// and its context says why.
func TestEditorBounded(t *testing.T) {
	dir := t.TempDir()
	editor := filepath.Join(dir, "editor")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nexec sleep 30\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd, ctx, cancel := editorCommand(editor, filepath.Join(dir, "held.json"), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := cmd.Run()
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the editor ran %v, want it stopped after 200ms", took)
	}
	if err == nil || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Errorf("editor run: %v, context %v; want it killed at its deadline", err, ctx.Err())
	}
	if maxEditTime > 10*time.Minute || maxEditTime <= 0 {
		t.Errorf("maxEditTime %v, want a bound no longer than a rule's delay (10m)", maxEditTime)
	}
}

func FuzzCheckEdit(f *testing.F) {
	f.Add([]byte(heldCall), []byte(heldCall))
	f.Add([]byte(heldCall), []byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`), []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`), []byte("[1,2]"))
	f.Add([]byte(heldCall), []byte("  {\n  \"jsonrpc\": \"2.0\",\n  \"id\": 7,\n  \"method\": \"x\"\n}\n"))
	f.Fuzz(func(t *testing.T, held, edited []byte) {
		raw, problem := checkEdit(held, edited)
		if (raw == nil) == (problem == "") {
			t.Fatalf("checkEdit = %q, %q: want exactly one of a message and a problem", raw, problem)
		}
		if raw != nil {
			if es := tape.Classify(raw); len(es) != 1 || !es[0].IsWire() {
				t.Fatalf("checkEdit accepted %q, not one JSON-RPC message", raw)
			}
		}
	})
}
