package library

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// skipTop are top-level members whose strings say nothing to search for:
// the envelope, and the tape's own metadata.
var skipTop = map[string]bool{"jsonrpc": true, "id": true, "method": true, "_tapedeck": true}

// skipAny are members skipped at any depth: _meta (the tape's, or the
// protocol's own: progress tokens, trace context, client info) and the
// type tags of content and schemas ("text", "object").
var skipAny = map[string]bool{"_meta": true, "type": true}

// Text returns the searchable text of a message: the string values (not
// the keys) of its params, result or error, in order, separated by
// spaces, up to limit bytes (0: no limit). Numbers, booleans and keys are
// left out, and so are the envelope (jsonrpc, id, method), every _meta
// (the tape's and the protocol's) and "type" tags. raw is one message as it is on the tape; text that is not JSON
// gives what could be read before the problem.
func Text(raw []byte, limit int) string {
	var sb strings.Builder
	w := textWalker{b: raw, out: &sb, limit: limit}
	w.walk()
	return sb.String()
}

type textWalker struct {
	b     []byte
	i     int
	out   *strings.Builder
	limit int
}

func (w *textWalker) full() bool { return w.limit > 0 && w.out.Len() >= w.limit }

// walk scans the JSON text, tracking the depth and the key of each
// top-level member.
func (w *textWalker) walk() {
	depth := 0
	for w.i < len(w.b) && !w.full() {
		c := w.b[w.i]
		switch c {
		case '{', '[':
			depth++
			w.i++
		case '}', ']':
			depth--
			w.i++
		case '"':
			start := w.i
			end, esc := w.stringEnd(start)
			if end < 0 {
				return
			}
			w.i = end
			j := w.i
			for j < len(w.b) && (w.b[j] == ' ' || w.b[j] == '\t' || w.b[j] == '\r' || w.b[j] == '\n') {
				j++
			}
			if j < len(w.b) && w.b[j] == ':' { // a key
				w.i = j + 1
				key := w.b[start+1 : end-1]
				if depth == 1 && skipTop[string(key)] || skipAny[string(key)] { // no allocation for the lookups
					w.skipValue()
				}
				continue
			}
			w.emit(w.b[start:end], esc)
		default:
			w.i++
		}
	}
}

// skipValue skips the value at w.i (after a key's colon).
func (w *textWalker) skipValue() {
	for w.i < len(w.b) && (w.b[w.i] == ' ' || w.b[w.i] == '\t' || w.b[w.i] == '\r' || w.b[w.i] == '\n') {
		w.i++
	}
	depth := 0
	for w.i < len(w.b) {
		switch c := w.b[w.i]; c {
		case '"':
			end, _ := w.stringEnd(w.i)
			if end < 0 {
				w.i = len(w.b)
				return
			}
			w.i = end
			if depth == 0 {
				return
			}
		case '{', '[':
			depth++
			w.i++
		case '}', ']':
			if depth == 0 {
				return // the enclosing object ends: an empty value
			}
			depth--
			w.i++
			if depth == 0 {
				return
			}
		case ',':
			if depth == 0 {
				return
			}
			w.i++
		default:
			w.i++
		}
	}
}

// stringEnd returns the index just past the string starting at the quote
// at i, and whether it holds escapes; -1 when it does not end.
func (w *textWalker) stringEnd(i int) (int, bool) {
	esc := false
	for j := i + 1; ; {
		// The next quote, found a word at a time (a result's text can be
		// 64 KiB long); it ends the string unless a backslash escapes it.
		k := bytes.IndexByte(w.b[j:], '"')
		if k < 0 {
			return -1, esc
		}
		q := j + k
		bs := bytes.IndexByte(w.b[j:q], '\\')
		if bs < 0 {
			return q + 1, esc
		}
		esc = true
		p := j + bs // each backslash escapes the byte after it
		for p < q {
			if w.b[p] == '\\' {
				p += 2
			} else {
				p++
			}
		}
		if p == q {
			return q + 1, esc
		}
		j = q + 1 // an escaped quote
	}
}

func (w *textWalker) emit(quoted []byte, esc bool) {
	var s string
	if esc {
		if err := json.Unmarshal(quoted, &s); err != nil {
			s = string(quoted[1 : len(quoted)-1])
		}
	} else {
		s = string(quoted[1 : len(quoted)-1])
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	if w.out.Len() > 0 {
		w.out.WriteByte(' ')
	}
	if w.limit > 0 {
		if room := w.limit - w.out.Len(); len(s) > room {
			s = cutUTF8(s, room)
		}
	}
	w.out.WriteString(s)
}

// cutUTF8 cuts s to at most n bytes without splitting a rune, and without
// leaving half a word at the end.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	s = s[:n]
	if i := strings.LastIndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }); i > 0 {
		s = s[:i]
	}
	return s
}

// Snippet returns about width characters of text around the first place
// one of terms occurs (case-insensitively), each occurrence of each term
// in it between » and «, with … where text was cut. Without a match it is
// the start of text.
func Snippet(text string, terms []string, width int) string {
	text = strings.Join(strings.Fields(text), " ") // one line
	lower := strings.ToLower(text)
	at, n := -1, 0
	for _, t := range terms {
		if t == "" {
			continue
		}
		if i := strings.Index(lower, strings.ToLower(t)); i >= 0 && (at < 0 || i < at) {
			at, n = i, len(t)
		}
	}
	if at < 0 || len(lower) != len(text) { // a case fold changed lengths: no marks
		if len(text) > width {
			return cutUTF8(text, width) + "…"
		}
		return text
	}
	before := max(0, (width-n)/3)
	start := max(0, at-before)
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	if start > 0 { // start at a word
		if sp := strings.IndexByte(text[start:at], ' '); sp >= 0 {
			start += sp + 1
		}
	}
	end := min(len(text), at+n+width-n-(at-start))
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	var sb strings.Builder
	if start > 0 {
		sb.WriteString("…")
	}
	// Every term is marked, each place it occurs in the snippet (the
	// longest at a place first), not only the first one found.
	stop := max(end, at+n)
	for i := start; i < stop; {
		m := 0
		for _, t := range terms {
			if len(t) > m && i+len(t) <= stop && strings.HasPrefix(lower[i:], strings.ToLower(t)) {
				m = len(t)
			}
		}
		if m == 0 {
			sb.WriteByte(text[i])
			i++
			continue
		}
		sb.WriteString("»")
		sb.WriteString(text[i : i+m])
		sb.WriteString("«")
		i += m
	}
	if end < len(text) {
		sb.WriteString("…")
	}
	return sb.String()
}
