package tui

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// A notice too long for the status line wraps onto a line of its own, the
// essential part (the file y wrote) first and whole, and ? help stays.
func TestNoticeWrapsEssentialFirst(t *testing.T) {
	dir := t.TempDir()
	m, _ := newTestModel(t, Options{CopyDir: dir})
	m = m.resize(80, 24)
	m = send(t, m, keys("y")...)
	copies, _ := filepath.Glob(filepath.Join(dir, "tapedeck-*.json"))
	if len(copies) != 1 {
		t.Fatalf("y wrote %v, want one file", copies)
	}
	lines := strings.Split(screen(m), "\n")
	if len(lines) != 24 {
		t.Fatalf("screen has %d lines, want 24", len(lines))
	}
	// The path comes first; a long one (a deep TMPDIR) wraps onto the
	// second line, so read the two lines as one text.
	notice := strings.TrimSpace(lines[20]) + strings.TrimSpace(lines[21])
	if !strings.HasPrefix(notice, copies[0]+":") || !strings.Contains(lines[21], "clipboard") {
		t.Errorf("the notice's lines are %q and %q, want the file %s first", lines[20], lines[21], copies[0])
	}
	if !strings.Contains(lines[22], "whole tape") {
		t.Errorf("the status line under the notice is %q, want the segments", lines[22])
	}
}

// Every notice goes to the log, which :messages shows; a notice clears
// itself after its timeout unless a newer one replaced it.
func TestMessagesLogAndTimeout(t *testing.T) {
	m, clock := newTestModel(t, Options{})
	var expiry []tea.Cmd
	m.noticeAfter = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		c := func() tea.Msg { clock.t = clock.t.Add(d); return fn(clock.t) }
		expiry = append(expiry, c)
		return nil // run by hand below
	}
	m = send(t, m, keys("}", ":goto 99999", "enter", ":bogus", "enter")...)
	if len(m.notices) != 3 || len(expiry) != 3 {
		t.Fatalf("%d notices logged, %d expiries; want 3 each: %+v", len(m.notices), len(expiry), m.notices)
	}
	last := m.notice
	m = send(t, m, expiry[1]()) // an older notice's expiry leaves the newest alone
	if m.notice != last {
		t.Errorf("an older notice's expiry cleared %q", last)
	}
	m = send(t, m, expiry[2]())
	if m.notice != "" {
		t.Errorf("after its timeout the notice is still %q", m.notice)
	}
	for _, size := range []struct{ w, h int }{{80, 24}, {160, 45}} {
		mm := m.resize(size.w, size.h)
		mm = send(t, mm, keys(":messages", "enter")...)
		got := screen(mm)
		for _, n := range m.notices {
			if !strings.Contains(got, n.text[:20]) {
				t.Errorf("%dx%d: :messages lacks %q", size.w, size.h, n.text)
			}
		}
		golden(t, fmt.Sprintf("messages-%dx%d", size.w, size.h), got)
		if mm = send(t, mm, keys("x")...); mm.showLog {
			t.Errorf("a key did not close the log")
		}
	}
}

// Re-opening / starts with empty text, the filter in force shown as the
// placeholder; :goto past the tape's end says so and stays.
func TestFilterReopensEmptyAndGotoPastEnd(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = send(t, m, keys("/tool:echo", "enter")...)
	m = send(t, m, keys("/")...)
	if v := m.prompt.input.Value(); v != "" {
		t.Errorf("/ re-opened with %q, want empty", v)
	}
	if !strings.Contains(ansi.Strip(m.prompt.View()), "now: tool:echo") {
		t.Errorf("the prompt %q does not show the filter in force", ansi.Strip(m.prompt.View()))
	}
	m = send(t, m, keys("slow", "enter")...)
	if m.filter.q.Query != "slow" {
		t.Errorf("typing after / gave the filter %q, want slow", m.filter.q.Query)
	}
	before := m.timeline.Cursor()
	m = send(t, m, keys(":goto 99s", "enter")...)
	if !strings.Contains(m.notice, "goto 1m39s: past the tape's end") || m.noticeOK || m.timeline.Cursor() != before {
		t.Errorf(":goto 99s: notice %q (ok %v), cursor %d (was %d); want an alert and no move", m.notice, m.noticeOK, m.timeline.Cursor(), before)
	}
}

// The hint bar's and the help's colours have WCAG AA contrast (4.5:1)
// against the background, on dark and light terminals alike.
func TestHintContrast(t *testing.T) {
	lum := func(c color.Color) float64 {
		r, g, b, _ := c.RGBA()
		ch := func(v uint32) float64 {
			x := float64(v) / 0xffff
			if x <= 0.04045 {
				return x / 12.92
			}
			return math.Pow((x+0.055)/1.055, 2.4)
		}
		return 0.2126*ch(r) + 0.7152*ch(g) + 0.0722*ch(b)
	}
	for _, dark := range []bool{true, false} {
		s := NewStyles(dark)
		bg := lum(s.Background)
		for name, st := range map[string]lipgloss.Style{"key": s.Help.ShortKey, "description": s.Help.ShortDesc, "separator": s.Help.ShortSeparator, "help description": s.Help.FullDesc} {
			fg := lum(st.GetForeground())
			ratio := (max(fg, bg) + 0.05) / (min(fg, bg) + 0.05)
			if ratio < 4.5 {
				t.Errorf("dark %v: the hint %s's contrast is %.2f:1, want at least 4.5:1", dark, name, ratio)
			}
		}
	}
}
