package importer

import (
	"bytes"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// harFields are the members of a HAR entry the import reads, found in the
// one walk that validates the entry (scan): each the value's bytes, nil
// when the member is missing. A member given twice is its last value (as
// encoding/json reads it), with the members under it from that value only.
type harFields struct {
	started, time, request, response []byte
	// request's
	method, url, reqHeaders, postData []byte
	text                              []byte // postData.text
	// response's
	status, respHeaders, content []byte
	ctext, mime, enc             []byte // content.text, mimeType, encoding
}

// scan validates the entry at b[i] as jsonscan.ValueEnd does (nested
// three deep: the document, log, entries), keeping the members the import
// reads, and returns its end or -1. Its bodies' strings are each crossed
// once.
func (f *harFields) scan(b []byte, i int) int {
	*f = harFields{}
	if i >= len(b) || b[i] != '{' {
		return jsonscan.ValueEnd(b, i, 3)
	}
	return harObject(b, i, 4, func(key []byte, vs int) int {
		switch string(key) {
		case "startedDateTime":
			return keep(&f.started, b, vs, 4)
		case "time":
			return keep(&f.time, b, vs, 4)
		case "request":
			f.method, f.url, f.reqHeaders, f.postData, f.text = nil, nil, nil, nil, nil
			if b[vs] != '{' {
				return keep(&f.request, b, vs, 4)
			}
			e := harObject(b, vs, 5, func(key []byte, vs int) int {
				switch string(key) {
				case "method":
					return keep(&f.method, b, vs, 5)
				case "url":
					return keep(&f.url, b, vs, 5)
				case "headers":
					return keep(&f.reqHeaders, b, vs, 5)
				case "postData":
					f.text = nil
					if b[vs] != '{' {
						return keep(&f.postData, b, vs, 5)
					}
					e := harObject(b, vs, 6, func(key []byte, vs int) int {
						if string(key) == "text" {
							return keep(&f.text, b, vs, 6)
						}
						return jsonscan.ValueEnd(b, vs, 6)
					})
					if e >= 0 {
						f.postData = b[vs:e]
					}
					return e
				}
				return jsonscan.ValueEnd(b, vs, 5)
			})
			if e >= 0 {
				f.request = b[vs:e]
			}
			return e
		case "response":
			f.status, f.respHeaders, f.content, f.ctext, f.mime, f.enc = nil, nil, nil, nil, nil, nil
			if b[vs] != '{' {
				return keep(&f.response, b, vs, 4)
			}
			e := harObject(b, vs, 5, func(key []byte, vs int) int {
				switch string(key) {
				case "status":
					return keep(&f.status, b, vs, 5)
				case "headers":
					return keep(&f.respHeaders, b, vs, 5)
				case "content":
					f.ctext, f.mime, f.enc = nil, nil, nil
					if b[vs] != '{' {
						return keep(&f.content, b, vs, 5)
					}
					e := harObject(b, vs, 6, func(key []byte, vs int) int {
						switch string(key) {
						case "text":
							return keep(&f.ctext, b, vs, 6)
						case "mimeType":
							return keep(&f.mime, b, vs, 6)
						case "encoding":
							return keep(&f.enc, b, vs, 6)
						}
						return jsonscan.ValueEnd(b, vs, 6)
					})
					if e >= 0 {
						f.content = b[vs:e]
					}
					return e
				}
				return jsonscan.ValueEnd(b, vs, 5)
			})
			if e >= 0 {
				f.response = b[vs:e]
			}
			return e
		}
		return jsonscan.ValueEnd(b, vs, 4)
	})
}

// keep scans the value at b[vs] and sets *dst to it.
func keep(dst *[]byte, b []byte, vs, depth int) int {
	e := jsonscan.ValueEnd(b, vs, depth)
	if e >= 0 {
		*dst = b[vs:e]
	}
	return e
}

// harObject is jsonscan.ObjectEnd whose member values are read by val
// (given the key's text and the value's start, it returns the value's end
// or -1), so that an object's members can be walked in the same pass.
func harObject(b []byte, i, depth int, val func(key []byte, vs int) int) int {
	if depth > jsonscan.MaxDepth {
		return -1
	}
	var kb []byte
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		ke := jsonscan.StringEnd(b, i)
		if ke < 0 {
			return -1
		}
		key := b[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			kb = jsonscan.Unescape(kb[:0], key)
			key = kb
		}
		j := jsonscan.SkipSpace(b, ke)
		if j >= len(b) || b[j] != ':' {
			return -1
		}
		vs := jsonscan.SkipSpace(b, j+1)
		if vs >= len(b) {
			return -1
		}
		ve := val(key, vs)
		if ve < 0 {
			return -1
		}
		i = jsonscan.SkipSpace(b, ve)
		if i >= len(b) {
			return -1
		}
		if b[i] == '}' {
			return i + 1
		}
		if b[i] != ',' {
			return -1
		}
		i = jsonscan.SkipSpace(b, i+1)
	}
}

// text is optText of a member the scan validated: the string's text in
// the import's arena (not re-validated), nil when missing or null. With
// scratch (0 or 1) the text goes to that scratch buffer instead, valid
// until the next entry: a stdio entry of a file input keeps where its
// text is in the file (harImport.src), not the text (see harRef).
func (h *harImport) text(n node, scratch int) ([]byte, error) {
	if n.absent() {
		return nil, nil
	}
	raw := bytes.TrimSpace(n.raw)
	if len(raw) < 2 || raw[0] != '"' {
		return nil, n.errorf("expected a string, found %s", n.found())
	}
	s := raw[1 : len(raw)-1]
	if scratch >= 0 {
		h.scratch[scratch] = harUnescape(h.scratch[scratch][:0], s)
		return h.scratch[scratch], nil
	}
	if cap(h.arena)-len(h.arena) < len(s) {
		h.arena = make([]byte, 0, max(harArena, len(s)))
	}
	start := len(h.arena)
	h.arena = harUnescape(h.arena, s)
	return h.arena[start:len(h.arena):len(h.arena)], nil
}

// harRef is where a string's escaped text (between its quotes) is in the
// input file: the member's node raw, a slice of the entry at off.
func harRef(entry []byte, off int64, n node) (int64, int) {
	raw := bytes.TrimSpace(n.raw)
	return off + int64(cap(entry)-cap(raw)) + 1, len(raw) - 2
}

// harArena is the size of the blocks the texts of messages are kept in.
const harArena = 4 << 20

// harUnescape is jsonscan.Unescape of s (a valid JSON string's bytes
// between its quotes), its plain runs found with IndexByte and copied
// whole: a HAR's bodies are JSON in strings, a \" every few bytes.
func harUnescape(dst, s []byte) []byte {
	for len(s) > 0 {
		k := bytes.IndexByte(s, '\\')
		run := s
		if k >= 0 {
			run = s[:k]
		}
		if utf8.Valid(run) {
			dst = append(dst, run...)
		} else {
			dst = jsonscan.Unescape(dst, run)
		}
		if k < 0 {
			return dst
		}
		switch c := s[k+1]; c {
		case '"', '\\', '/':
			dst = append(dst, c)
			s = s[k+2:]
			continue
		}
		// Other escapes (\n, \u...) to the next plain byte, where a
		// surrogate pair is read whole.
		j := k
		for j < len(s) && s[j] == '\\' {
			if s[j+1] == 'u' {
				j += 6
			} else {
				j += 2
			}
		}
		dst = jsonscan.Unescape(dst, s[k:j])
		s = s[j:]
	}
	return dst
}
