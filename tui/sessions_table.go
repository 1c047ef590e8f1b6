package tui

// The sessions view's two tables: the library's tapes (columns fitted to
// the width, paths kept whole before anything else is cut) and search hits.

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/internal/text"
)

// The table's columns, as tapedeck ls prints them.
const (
	colStart = iota
	colDur
	colServer
	colClient
	colCalls
	colErrors
	colPath
	nCols
)

var tapeHeaders = [nCols]string{"START", "DURATION", "SERVER", "CLIENT", "CALLS", "ERRORS", "PATH"}

// recordingMark starts the path of a tape still being recorded.
const recordingMark = "● "

// tapeCells is a row's cells; short writes the start without the year and
// the seconds.
func tapeCells(r SessionRow, short bool) [nCols]string {
	var c [nCols]string
	c[colStart], c[colDur] = "-", "-"
	if !r.Start.IsZero() {
		if short {
			c[colStart] = r.Start.Local().Format("01-02 15:04")
		} else {
			c[colStart] = r.Start.Local().Format("2006-01-02 15:04:05")
		}
		c[colDur] = text.Duration(r.Duration)
	}
	c[colServer] = safeLine(strings.Join(r.Servers, ","))
	if c[colServer] == "" {
		c[colServer] = "-"
	}
	c[colClient] = safeLine(r.Client)
	if c[colClient] == "" {
		c[colClient] = "-"
	}
	c[colCalls] = fmt.Sprint(r.Calls)
	c[colErrors] = fmt.Sprint(r.RPCErrors + r.ToolErrors)
	if r.ToolErrors > 0 {
		c[colErrors] += fmt.Sprintf(" (%d tool)", r.ToolErrors)
	}
	c[colPath] = safeLine(show(r.Path, r.Show))
	if r.Recording {
		c[colPath] = recordingMark + c[colPath]
	}
	return c
}

// narrowCol is how narrow tapeWidths makes the server and client columns
// to keep a path whole.
const narrowCol = 12

// tapeWidths fits the columns to the screen: each as wide as its widest
// cell when they fit; else, when that keeps every path whole, the start
// loses its year and seconds and then the server and client columns
// narrow (to narrowCol); else the same to keep every tape's name whole,
// the path cut from the left; else the path is cut from the left to no
// less than 30, then the start loses its year and seconds, then the client's column goes
// (the status line names the client of the tape under the cursor) and the
// path and the server share what is left. A width of 0 hides a column.
func (m Sessions) tapeWidths() (w [nCols]int, short bool) {
	const gap = 2
	natural := func(short bool) [nCols]int {
		var w [nCols]int
		for i, h := range tapeHeaders {
			w[i] = ansi.StringWidth(h)
		}
		for _, r := range m.rows {
			for i, c := range tapeCells(r, short) {
				w[i] = max(w[i], ansi.StringWidth(c))
			}
		}
		return w
	}
	total := func(w [nCols]int) int {
		n := 0
		for _, x := range w {
			if x > 0 {
				n += x + gap
			}
		}
		return n - gap
	}
	// A whole path first, else every tape's name whole (the path cut from
	// the left before its name): with the full start, with the short one,
	// then with the server and client columns narrowed (to narrowCol; the
	// status line names both of the tape under the cursor). The path takes
	// what room is left.
	nameW := 0
	for _, r := range m.rows {
		c := tapeCells(r, true)[colPath]
		if i := strings.LastIndex(c, "/"); i >= 0 {
			c = "…" + c[i+1:]
			if r.Recording {
				c = recordingMark + c
			}
		}
		nameW = max(nameW, ansi.StringWidth(c))
	}
	for _, whole := range []bool{true, false} {
		for _, short := range []bool{false, true} {
			nat := natural(short)
			w := nat
			want := w[colPath]
			if !whole {
				want = min(want, max(nameW, 30))
			}
			w[colPath] = 0
			need := want - (m.width - total(w) - gap)
			for need > 0 && short && max(w[colServer], w[colClient]) > narrowCol {
				if w[colServer] >= w[colClient] {
					w[colServer]--
				} else {
					w[colClient]--
				}
				need--
			}
			if need <= 0 {
				w[colPath] = min(nat[colPath], m.width-total(w)-gap)
				return w, short
			}
		}
	}
	for _, short := range []bool{false, true} {
		w := natural(short)
		pathW := w[colPath]
		w[colPath] = 0
		room := m.width - total(w) - gap
		if room >= min(pathW, 30) {
			w[colPath] = min(pathW, room)
			return w, short
		}
	}
	w = natural(true)
	pathW, serverW := w[colPath], w[colServer]
	w[colPath], w[colClient], w[colServer] = 0, 0, 0
	room := max(m.width-total(w)-2*gap, 12)
	w[colServer] = max(min(serverW, room/3), 6)
	w[colPath] = max(min(pathW, room-w[colServer]), 6)
	return w, true
}

// tapeLines is the table's header and one line a tape.
func (m Sessions) tapeLines() (string, []string) {
	s := m.styles
	w, short := m.tapeWidths()
	cellAt := func(i int, c string) string {
		if w[i] == 0 {
			return ""
		}
		if i == colPath {
			// Cut the path, not the mark before it.
			if rest, ok := strings.CutPrefix(c, recordingMark); ok {
				return recordingMark + cutLeft(rest, w[i]-ansi.StringWidth(recordingMark))
			}
			return cutLeft(c, w[i])
		}
		return pad(c, w[i])
	}
	join := func(cells [nCols]string) string {
		var b strings.Builder
		for i, c := range cells {
			if w[i] == 0 {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c)
		}
		return b.String()
	}
	var hc [nCols]string
	for i, h := range tapeHeaders {
		hc[i] = cellAt(i, h)
	}
	lines := make([]string, 0, len(m.rows))
	for i, r := range m.rows {
		cells := tapeCells(r, short)
		for j := range cells {
			cells[j] = cellAt(j, cells[j])
		}
		if i == m.cursor {
			lines = append(lines, s.Timeline.Cursor.Render(padANSI(join(cells), m.width)))
			continue
		}
		if r.RPCErrors+r.ToolErrors > 0 && w[colErrors] > 0 {
			cells[colErrors] = s.Timeline.Error.Render(cells[colErrors])
		}
		lines = append(lines, padANSI(s.Timeline.Row.Render(join(cells)), m.width))
	}
	return padANSI(join(hc), m.width), lines
}

// hitLines is the hits' header and one line a hit: TAPE:SEQ, the method
// and target, the snippet.
func (m Sessions) hitLines() (string, []string) {
	s := m.styles
	locs := make([]string, len(m.hits))
	whats := make([]string, len(m.hits))
	lw, ww := len("TAPE:SEQ"), len("MESSAGE")
	for i, h := range m.hits {
		locs[i] = fmt.Sprintf("%s:%d", safeLine(show(h.Path, h.Show)), h.Seq)
		what := h.Method
		if h.Target != "" {
			what += " " + h.Target
		}
		if what == "" {
			what = h.Kind
		}
		whats[i] = safeLine(what)
		lw = max(lw, ansi.StringWidth(locs[i]))
		ww = max(ww, ansi.StringWidth(whats[i]))
	}
	lw = min(lw, max(m.width*3/10, 12))
	ww = min(ww, max(m.width/3, 10))
	header := pad("TAPE:SEQ", lw) + "  " + pad("MESSAGE", ww) + "  SNIPPET"
	lines := make([]string, 0, len(m.hits))
	for i, h := range m.hits {
		loc, what := cutLeft(locs[i], lw), pad(whats[i], ww)
		snip := safeLine(h.Snippet)
		failed := h.Status == "error" || h.Status == "tool-error"
		if i == m.cursor {
			lines = append(lines, s.Timeline.Cursor.Render(padANSI(loc+"  "+what+"  "+snip, m.width)))
			continue
		}
		if failed {
			what = s.Timeline.Error.Render(what)
		} else {
			what = s.Timeline.Row.Render(what)
		}
		lines = append(lines, padANSI(s.Timeline.Row.Render(loc)+"  "+what+"  "+s.Timeline.Summary.Render(snip), m.width))
	}
	return padANSI(header, m.width), lines
}

// show is how a path is written: shown, or the path itself.
func show(path, shown string) string {
	if shown != "" {
		return shown
	}
	return path
}

// safeLine is text from a tape on one line: control characters escaped,
// newlines and tabs as spaces.
func safeLine(s string) string {
	return strings.NewReplacer("\n", " ", "\t", " ").Replace(text.Safe(s))
}

// cutLeft cuts s to w columns from the left, with "…" where it was cut:
// the end of a path is what names it.
func cutLeft(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw <= w {
		return s + strings.Repeat(" ", w-sw)
	}
	return "…" + ansi.TruncateLeft(s, sw-w+1, "")
}
