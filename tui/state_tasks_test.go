package tui

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/tape"
)

// taskModel is the debugger on the server-everything task tape
// (simulate-research-query, 3 polls, tasks/result, one more poll).
func taskModel(t *testing.T, w, h int) (Model, *tape.Index) {
	t.Helper()
	x, err := tape.OpenIndex(filepath.Join("..", "testdata", "ts-everything-task.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	clock := &fakeClock{t: time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)}
	m := New(x, Options{Now: clock.now, CopyDir: t.TempDir(), Name: "task"})
	m.tick = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { clock.t = clock.t.Add(d); return fn(clock.t) }
	}
	m.noticeAfter = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil } // notices stay: tests read them
	return m.resize(w, h), x
}

// The state pane lists the task running at the cursor (the call that
// created it, its last reported status and message, its polls so far, how
// long it has run) and, once it ended, how it ended: at 80×24 and 160×45.
func TestStateTasksGolden(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {160, 45}} {
		for _, c := range []struct {
			name string
			seq  int
			want []string
		}{
			// #15: the third poll (line 16), 0.92 s into the task.
			{"task-running", 15, []string{"1 task running:", "916ed7c8… tools/call simulate-research-query #5", `working "Gathering sources..." · 3 polls · 924.0ms so far`}},
			// #23: the last poll (line 24), after the task completed.
			{"task-ended", 23, []string{"none running", "ended by then: 1 completed"}},
		} {
			name := fmt.Sprintf("%s-%dx%d", c.name, size.w, size.h)
			t.Run(name, func(t *testing.T) {
				m, x := taskModel(t, size.w, size.h)
				if e := x.Entry(c.seq); e.Method != "tasks/get" || e.Kind != tape.KindRequest {
					t.Fatalf("#%d is %s %v, want a tasks/get request", c.seq, e.Method, e.Kind)
				}
				m = send(t, m, keys("4", fmt.Sprintf(":goto %d", c.seq), "enter")...)
				got := screen(m)
				flat := strings.Join(strings.Fields(got), " ")
				for _, w := range c.want {
					if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
						t.Errorf("the screen lacks %q:\n%s", w, got)
					}
				}
				if n := strings.Count(got, "\n") + 1; n != size.h {
					t.Errorf("screen has %d lines, want %d", n, size.h)
				}
				for i, l := range strings.Split(got, "\n") {
					if w := ansi.StringWidth(l); w > size.w {
						t.Errorf("line %d is %d columns wide, want at most %d: %q", i, w, size.w, l)
					}
				}
				golden(t, name, got)
			})
		}
	}
}
