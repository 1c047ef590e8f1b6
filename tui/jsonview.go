package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/formatters"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
)

// Fold limits for the detail views: a message of megabytes (a base64 image,
// a file's contents) stays readable and cheap to render until unfolded.
const (
	foldString = 160 // runes of a string shown when folded
	foldArray  = 25  // items of an array shown when folded
	maxChroma  = 256 << 10
	maxIndent  = 64 // deeper nesting is shown as recorded: indenting 100 000 levels would take gigabytes
)

// tooDeep reports whether raw nests objects and arrays deeper than maxIndent.
func tooDeep(raw []byte) bool {
	depth, inString := 0, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			if depth++; depth > maxIndent {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// prettyJSON indents raw JSON keeping its key order and number literals. With
// fold, long strings and arrays are cut with a marker saying how much is
// hidden. Input that is not JSON, or nests deeper than maxIndent, is
// returned as it is.
func prettyJSON(raw []byte, fold bool) string {
	if tooDeep(raw) {
		return string(raw)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	p := printer{dec: dec, fold: fold}
	tok, err := dec.Token()
	if err != nil {
		return string(raw)
	}
	if err := p.value(tok, 0); err != nil {
		return string(raw)
	}
	return p.b.String()
}

// prettyJSONMarked is prettyJSON (unfolded) that also reports which lines
// print a value whose path mark accepts.
func prettyJSONMarked(raw []byte, mark func(path []string) bool) (string, map[int]bool) {
	if tooDeep(raw) {
		return string(raw), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	p := printer{dec: dec, mark: mark, marked: map[int]bool{}}
	tok, err := dec.Token()
	if err != nil {
		return string(raw), nil
	}
	if err := p.value(tok, 0); err != nil {
		return string(raw), nil
	}
	return p.b.String(), p.marked
}

type printer struct {
	dec  *json.Decoder
	b    strings.Builder
	fold bool

	// For diffs: the path being printed, the current line, and the lines
	// whose path mark accepts.
	path   []string
	line   int
	mark   func(path []string) bool
	marked map[int]bool
}

func (p *printer) indent(depth int) {
	p.line++
	p.b.WriteByte('\n')
	for range depth {
		p.b.WriteString("  ")
	}
}

func (p *printer) value(tok json.Token, depth int) error {
	switch t := tok.(type) {
	case json.Delim:
		closing := byte('}')
		if t == '[' {
			closing = ']'
		}
		p.b.WriteByte(byte(t))
		if !p.dec.More() {
			_, err := p.dec.Token()
			p.b.WriteByte(closing)
			return err
		}
		n := 0
		for p.dec.More() {
			if n > 0 {
				p.b.WriteByte(',')
			}
			if t == '[' && p.fold && n == foldArray {
				rest := 0
				for p.dec.More() {
					if err := p.skip(); err != nil {
						return err
					}
					rest++
				}
				p.indent(depth + 1)
				fmt.Fprintf(&p.b, "… %d more items", rest)
				break
			}
			p.indent(depth + 1)
			seg := strconv.Itoa(n)
			if t == '{' {
				k, err := p.dec.Token()
				if err != nil {
					return err
				}
				seg = fmt.Sprint(k)
				p.str(seg, false)
				p.b.WriteString(": ")
			}
			v, err := p.dec.Token()
			if err != nil {
				return err
			}
			p.path = append(p.path, seg)
			first := p.line
			if err := p.value(v, depth+1); err != nil {
				return err
			}
			if p.mark != nil && p.mark(p.path) {
				for l := first; l <= p.line; l++ {
					p.marked[l] = true
				}
			}
			p.path = p.path[:len(p.path)-1]
			n++
		}
		if _, err := p.dec.Token(); err != nil {
			return err
		}
		p.indent(depth)
		p.b.WriteByte(closing)
	case string:
		p.str(t, p.fold)
	case json.Number:
		p.b.WriteString(t.String())
	case bool:
		fmt.Fprint(&p.b, t)
	case nil:
		p.b.WriteString("null")
	}
	return nil
}

// skip consumes one value.
func (p *printer) skip() error {
	depth := 0
	for {
		tok, err := p.dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

func (p *printer) str(s string, fold bool) {
	hidden := 0
	if fold && utf8.RuneCountInString(s) > foldString {
		cut := 0
		for i := range s {
			if cut == foldString {
				hidden = len(s) - i
				s = s[:i]
				break
			}
			cut++
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	q := bytes.TrimRight(buf.Bytes(), "\n")
	if hidden > 0 {
		p.b.Write(q[:len(q)-1])
		fmt.Fprintf(&p.b, `…(+%s)"`, sizeText(hidden))
		return
	}
	p.b.Write(q)
}

func sizeText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// highlightJSON colours JSON text with chroma's style name; text too large
// to colour cheaply is returned plain.
func highlightJSON(text, style string) string {
	if len(text) > maxChroma {
		return text
	}
	lexer := lexers.Get("json")
	st := styles.Get(style)
	f := formatters.Get("terminal16m")
	if lexer == nil || st == nil || f == nil {
		return text
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, text)
	if err != nil {
		return text
	}
	var b strings.Builder
	if err := f.Format(io.Writer(&b), st, it); err != nil {
		return text
	}
	return b.String()
}
