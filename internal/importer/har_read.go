package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Reading a HAR document as a stream: the log's members, its entries one
// at a time, errors naming the entry.

// harReader is a HAR's input: each value it reads bounded (mark starts a
// value), its first harHead bytes kept for syntax errors.
type harReader struct {
	r       io.Reader
	max, n  int64
	head    []byte
	tooLong bool
}

var errHARValueTooLong = errors.New("value too long")

func (b *harReader) Read(p []byte) (int, error) {
	if b.n > b.max {
		b.tooLong = true
		return 0, errHARValueTooLong
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if len(b.head) < harHead {
		b.head = append(b.head, p[:min(n, harHead-len(b.head))]...)
	}
	return n, err
}

func (b *harReader) mark() { b.n = 0 }

// fail turns an error of the decoder at path into an *Error: a value over
// the bound names it, a syntax error says its line and column when the
// document is short enough to have been kept whole, its path otherwise;
// the input's own errors (a context done) are returned as they are.
func (h *harImport) fail(b *harReader, path string, err error) error {
	if b.tooLong || errors.Is(err, errHARValueTooLong) {
		return errorf(formatHAR, path, "expected a JSON value of at most %d bytes, found a longer one", b.max)
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	rest, rerr := io.ReadAll(io.LimitReader(b.r, int64(harHead-len(b.head))+1))
	if rerr == nil && len(b.head)+len(rest) <= harHead {
		doc := append(b.head, rest...)
		var v any
		if uerr := json.Unmarshal(doc, &v); uerr != nil {
			return syntaxError(formatHAR, doc, uerr)
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("the document ends too early")
	}
	return errorf(formatHAR, path, "invalid JSON: %v", err)
}

// tokenKind names what a token read where a value was expected is.
func tokenKind(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string " + quoteStart([]byte(v))
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}

// read streams the document: $.log.creator, then each of $.log.entries,
// and returns how many entries it read.
func (h *harImport) read(r io.Reader) (int, error) {
	b := &harReader{r: r, max: h.o.maxDocument()}
	dec := json.NewDecoder(b)
	dec.UseNumber()
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) && !b.tooLong {
		return 0, &Error{Format: formatHAR, Err: errors.New("expected a JSON document, found an empty input")}
	}
	if err != nil {
		return 0, h.fail(b, "$", err)
	}
	if tok != json.Delim('{') {
		return 0, errorf(formatHAR, "$", "expected a HAR document {\"log\": {...}}, found %s", tokenKind(tok))
	}
	entries, sawLog := 0, false
	for dec.More() {
		b.mark()
		key, err := dec.Token()
		if err != nil {
			return 0, h.fail(b, "$", err)
		}
		if key != "log" || sawLog {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return 0, h.fail(b, fmt.Sprintf("$.%v", key), err)
			}
			continue
		}
		sawLog = true
		if entries, err = h.readLog(dec, b); err != nil {
			return 0, err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return 0, h.fail(b, "$", err)
	}
	if _, err := dec.Token(); err == nil {
		return 0, errorf(formatHAR, "$", "invalid JSON: expected the end of the document, found more")
	} else if !errors.Is(err, io.EOF) {
		return 0, h.fail(b, "$", err)
	}
	if !sawLog {
		return 0, errorf(formatHAR, "$.log", "expected an object, found nothing (the member is missing)")
	}
	return entries, nil
}

func (h *harImport) readLog(dec *json.Decoder, b *harReader) (int, error) {
	b.mark()
	tok, err := dec.Token()
	if err != nil {
		return 0, h.fail(b, "$.log", err)
	}
	if tok != json.Delim('{') {
		return 0, errorf(formatHAR, "$.log", "expected an object, found %s", tokenKind(tok))
	}
	entries, sawEntries := 0, false
	for dec.More() {
		b.mark()
		key, err := dec.Token()
		if err != nil {
			return 0, h.fail(b, "$.log", err)
		}
		path := fmt.Sprintf("$.log.%v", key)
		if key == "entries" && !sawEntries {
			sawEntries = true
			if entries, err = h.readEntries(dec, b); err != nil {
				return 0, err
			}
			continue
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, h.fail(b, path, err)
		}
		if key != "creator" {
			continue
		}
		if c := (node{format: formatHAR, path: path, raw: raw}); !c.absent() {
			if err := c.load(); err != nil {
				return 0, err
			}
			if h.creator, err = c.get("name").optStr(); err != nil {
				return 0, err
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, h.fail(b, "$.log", err)
	}
	if !sawEntries {
		return 0, errorf(formatHAR, "$.log.entries", "expected an array, found nothing (the member is missing)")
	}
	return entries, nil
}

func (h *harImport) readEntries(dec *json.Decoder, b *harReader) (int, error) {
	b.mark()
	tok, err := dec.Token()
	if err != nil {
		return 0, h.fail(b, "$.log.entries", err)
	}
	if tok != json.Delim('[') {
		return 0, errorf(formatHAR, "$.log.entries", "expected an array, found %s", tokenKind(tok))
	}
	i := 0
	for ; dec.More(); i++ {
		path := fmt.Sprintf("$.log.entries[%d]", i)
		b.mark()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return 0, h.fail(b, path, err)
		}
		if err := h.entry(i, node{format: formatHAR, path: path, raw: raw}); err != nil {
			return 0, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, h.fail(b, "$.log.entries", err)
	}
	return i, nil
}
