package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// Bare tapedeck with tapes in the library: the sessions view at 80×24
// lists them newest first; a search for a word only one tape holds lists
// its messages, and enter opens the debugger on that tape at the hit; q
// there comes back; enter on a row opens that tape; d the demo.
func TestTmuxSessions(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	state := t.TempDir()
	tapes := filepath.Join(state, "tapedeck", "tapes")
	if err := os.MkdirAll(tapes, 0o700); err != nil {
		t.Fatal(err)
	}
	putTape(t, tapes, "older.jsonl", libraryTape("2026-03-01", "acme"), time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC))
	putTape(t, tapes, "newer.jsonl", libraryTape("2026-03-02", "globex"), time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC))

	tt := startTmuxSize(t, 80, 24, "env", "XDG_STATE_HOME="+state, bin)
	s := tt.waitFor(10*time.Second, "library · 2 tapes", "newer.jsonl", "older.jsonl")
	if n, o := strings.Index(s, "newer.jsonl"), strings.Index(s, "older.jsonl"); n > o {
		t.Errorf("the table is not newest first:\n%s", s)
	}
	for _, want := range []string{"START", "DURATION", "SERVER", "CALLS", "ERRORS", "PATH", "billing", "2 (1 tool)", "3.5s", "claude-code 2.1.0"} {
		if !strings.Contains(s, want) {
			t.Errorf("the sessions view lacks %q:\n%s", want, s)
		}
	}
	for i, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if w := len([]rune(l)); w > 80 {
			t.Errorf("line %d is %d wide: %q", i, w, l)
		}
	}

	// / searches every tape: globex is only on the newer one, in the
	// call (#2) and its failed answer (#3), newest first.
	tt.keys("/")
	tt.typeText("globex")
	s = tt.waitFor(5*time.Second, "search globex · 2 hits", "newer.jsonl:3", "newer.jsonl:2", "»globex«")
	if strings.Contains(s, "older.jsonl") {
		t.Errorf("a hit on the tape without the word:\n%s", s)
	}
	if strings.Index(s, "newer.jsonl:3") > strings.Index(s, "newer.jsonl:2") {
		t.Errorf("hits not newest first:\n%s", s)
	}
	tt.keys("j", "Enter")
	s = tt.waitFor(5*time.Second, "newer.jsonl · 6 messages")
	if l := rowLine(s, 2); !strings.Contains(l, "›") {
		t.Errorf("the debugger did not open at the hit, #2: %q\n%s", l, s)
	}
	if !strings.Contains(s, "#2  line 3") || !strings.Contains(s, `"name": "create_invoice"`) {
		t.Errorf("the message pane does not show #2:\n%s", s)
	}

	// q in the debugger comes back to the hits; esc to the table.
	tt.keys("q")
	tt.waitFor(5*time.Second, "search globex · 2 hits")
	tt.keys("Escape")
	tt.waitFor(2*time.Second, "library · 2 tapes")
	tt.keys("j", "Enter")
	s = tt.waitFor(5*time.Second, "older.jsonl · 6 messages", "(} next)")
	if l := rowLine(s, 3); !strings.Contains(l, "›") || !strings.Contains(l, "tool-error") {
		t.Errorf("the older tape does not open post-mortem on its first failure: %q\n%s", l, s)
	}
	tt.keys("q")
	tt.waitFor(5*time.Second, "library · 2 tapes")
	tt.keys("d")
	tt.waitFor(5*time.Second, "79 messages")
	tt.keys("q")
	tt.waitFor(5*time.Second, "library · 2 tapes")
	tt.keys("q")
	tt.waitExit(5 * time.Second)
}

// Bare tapedeck on a fresh install (no tape, no index) opens the demo, as
// tapedeck demo does, and writes nothing to the state directory.
func TestTmuxBareOpensDemoWithoutTapes(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	for _, argv := range [][]string{{bin}, {bin, "demo"}} {
		state := t.TempDir()
		tt := startTmuxSize(t, 80, 24, append([]string{"env", "XDG_STATE_HOME=" + state}, argv...)...)
		tt.waitFor(10*time.Second, "demo.tape.jsonl (embedded)", "79 messages")
		tt.keys("q")
		tt.waitExit(5 * time.Second)
		if entries, _ := os.ReadDir(state); len(entries) != 0 {
			t.Errorf("%v wrote to a state directory without tapes: %v", argv[1:], entries)
		}
	}
}
