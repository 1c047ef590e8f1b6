// Package text shapes tapedeck's text for people.
//
// Text from tapes and peers is made safe to print on a terminal (Safe,
// Writer): a tape holds whatever a client, a server or an attacker put in
// it, and printed raw, an escape sequence in a method name or an error
// message changes the window title, clears the screen or writes the
// clipboard (OSC 52). The TUI draws through its own renderer; every other
// text output goes through this package. Counts are written with their
// noun (Plural), durations shortly (Duration).
package text

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Plural writes n and noun, with an s unless n is 1: "1 divergence",
// "2 divergences".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// Duration is a duration for a table: 850ms, 12.4s, 3m05s, 2h10m.
func Duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// Safe returns s with every control character other than newline and tab
// written as a Go escape (\x1b, \x0d, \u009b), so that it prints as text.
func Safe(s string) string {
	if clean(s) {
		return s
	}
	return string(appendSafe(nil, []byte(s), false))
}

func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c == 0xc2 {
			return false // 0xc2 starts U+0080-U+00BF, the C1 controls among them
		}
	}
	return true
}

// appendSafe appends b with its control characters escaped; with sgr, the
// colour sequences tapedeck writes itself (ESC [ digits and ; m) are kept.
func appendSafe(out, b []byte, sgr bool) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\n' || c == '\t':
			out = append(out, c)
			i++
		case c == 0x1b && sgr && isSGR(b[i:]):
			n := sgrLen(b[i:])
			out = append(out, b[i:i+n]...)
			i += n
		case c < 0x20 || c == 0x7f:
			out = append(out, `\x`...)
			out = append(out, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			i++
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r >= 0x80 && r <= 0x9f { // C1 controls: \u009b is an 8-bit CSI
				out = append(out, strconv.QuoteRuneToASCII(r)[1:7]...)
			} else {
				out = append(out, b[i:i+n]...)
			}
			i += n
		}
	}
	return out
}

// isSGR reports whether b starts with a Select Graphic Rendition sequence:
// ESC [ then digits and semicolons, then m. Colours are harmless, and verify
// and stats write them when asked to.
func isSGR(b []byte) bool { return sgrLen(b) > 0 }

func sgrLen(b []byte) int {
	if len(b) < 3 || b[0] != 0x1b || b[1] != '[' {
		return 0
	}
	for i := 2; i < len(b) && i < 32; i++ {
		switch c := b[i]; {
		case c == 'm':
			return i + 1
		case c >= '0' && c <= '9' || c == ';':
		default:
			return 0
		}
	}
	return 0
}

// Writer escapes what is written to w as Safe does, but keeps colour
// sequences. Each Write is escaped on its own: a sequence split across two
// writes is escaped, never let through. A Writer is safe for concurrent
// use when w is.
type Writer struct {
	w   io.Writer
	mu  sync.Mutex // guards buf
	buf []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Unwrap returns the writer Writer writes to (to ask it, say, whether it
// is a terminal).
func (s *Writer) Unwrap() io.Writer { return s.w }

// Write writes p, escaped; it reports len(p) when the escaped bytes were
// all written.
func (s *Writer) Write(p []byte) (int, error) {
	if clean(string(p)) {
		return s.w.Write(p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = appendSafe(s.buf[:0], p, true)
	if _, err := s.w.Write(s.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// QuoteList quotes names for a message, the first ten of them and how many
// more ("\"a\", \"b\" and 3 more"), "none" when there are none: a tape may
// name 65 536 servers.
func QuoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	const shown = 10
	var b strings.Builder
	for i, n := range names[:min(len(names), shown)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(n))
	}
	if len(names) > shown {
		fmt.Fprintf(&b, " and %d more", len(names)-shown)
	}
	return b.String()
}
