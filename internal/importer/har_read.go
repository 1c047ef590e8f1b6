package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// Reading a HAR document as a stream, by the scanner: the document is read
// a chunk at a time into one buffer, and each value (the log's members,
// each entry) is cut, validated and read in place (har_scan.go), without
// json.Decoder; the bytes of the entries already read are dropped as the
// buffer moves on, so memory holds one chunk (or the longest entry), not
// the document. Each value is bounded by Options.MaxDocument; errors name
// the value's path ($.log.entries[7]), or the line and column of a syntax
// error in a document short enough to have been kept whole.

// harChunk is how much of the document is read at a time.
const harChunk = 4 << 20

// harDoc is the document being read: buf[i:] not yet consumed.
type harDoc struct {
	r     io.Reader
	buf   []byte
	i     int
	base  int64 // where buf[0] is in the input
	eof   bool
	max   int64
	chunk int    // the size of the last read
	head  []byte // the document's first harHead bytes, for syntax errors

	// Buffers are used again once apply is done with the entries cut from
	// them: sent counts the batches sent to apply, applied those it read
	// (nil before the entries), retired the buffers left, each with the
	// batch after which it is free.
	sent    int64
	applied *atomic.Int64
	retired []harRetired
}

type harRetired struct {
	b     []byte
	batch int64
}

// harRetiredMax is how many left buffers are kept for use again.
const harRetiredMax = 3

// more reads the next chunk after buf[keep:] (keep <= i), into a new
// buffer: the entries cut from the old one may still be being read (by
// harImport.apply). At the end of the input it sets eof.
func (d *harDoc) more(keep int) error {
	tail := d.buf[keep:]
	// Chunks grow from 64 KiB to harChunk (a short document is read in a
	// short buffer); a long value is read as much again at a time.
	d.chunk = min(max(2*d.chunk, 64<<10), harChunk)
	need := len(tail) + max(d.chunk, 2*len(tail))
	var nb []byte
	if d.applied != nil {
		done := d.applied.Load()
		for k, r := range d.retired {
			if r.batch <= done && cap(r.b) >= need {
				nb = r.b[:len(tail)]
				d.retired = append(d.retired[:k], d.retired[k+1:]...)
				break
			}
		}
		// The batch being filled may hold entries of the buffer left.
		if cap(d.buf) > 0 {
			if len(d.retired) == harRetiredMax {
				d.retired = append(d.retired[:0], d.retired[1:]...)
			}
			d.retired = append(d.retired, harRetired{d.buf[:0], d.sent + 1})
		}
	}
	if nb == nil {
		nb = make([]byte, len(tail), need)
	}
	copy(nb, tail)
	d.buf = nb
	d.i -= keep
	d.base += int64(keep)
	for !d.eof {
		n, err := d.r.Read(d.buf[len(d.buf):cap(d.buf)])
		if len(d.head) < harHead {
			d.head = append(d.head, d.buf[len(d.buf):len(d.buf)+min(n, harHead-len(d.head))]...)
		}
		d.buf = d.buf[:len(d.buf)+n]
		if errors.Is(err, io.EOF) {
			d.eof = true
			break
		}
		if err != nil {
			return err
		}
		if n > 0 {
			break
		}
	}
	return nil
}

// space skips white space, reading on; it reports false at the input's end.
func (d *harDoc) space() (bool, error) {
	for {
		d.i = jsonscan.SkipSpace(d.buf, d.i)
		if d.i < len(d.buf) {
			return true, nil
		}
		if d.eof {
			return false, nil
		}
		if err := d.more(d.i); err != nil {
			return false, err
		}
	}
}

// value cuts the value at buf[i] (after space) with scan, which returns
// its end or -1, reading on while it is cut short by the buffer's end,
// and consumes it. The slice is valid until the next read.
func (h *harImport) value(d *harDoc, path string, scan func(b []byte, i int) int) ([]byte, error) {
	for {
		s := d.i
		e := scan(d.buf, s)
		// A value that ends where the buffer does may go on (a number):
		// it is whole only when something follows it, or at the end.
		if e >= 0 && (e < len(d.buf) || d.eof) {
			if int64(e-s) > d.max {
				return nil, errorf(formatHAR, path, "expected a JSON value of at most %d bytes, found a longer one", d.max)
			}
			d.i = e
			return d.buf[s:e], nil
		}
		if d.eof || (e < 0 && harComplete(d.buf, s)) {
			return nil, h.syntax(d, path)
		}
		if int64(len(d.buf)-s) > d.max {
			return nil, errorf(formatHAR, path, "expected a JSON value of at most %d bytes, found a longer one", d.max)
		}
		if err := d.more(s); err != nil {
			return nil, err
		}
	}
}

// anyValue scans any JSON value nested depth deep.
func anyValue(depth int) func(b []byte, i int) int {
	return func(b []byte, i int) int { return jsonscan.ValueEnd(b, i, depth) }
}

// syntax is the error of invalid JSON at buf[i], a value at path: its line
// and column when the whole document fits in harHead bytes, else the path
// and what encoding/json says of the value.
func (h *harImport) syntax(d *harDoc, path string) error {
	if len(d.head) < harHead {
		// The document may be short: read it to its end, or past harHead.
		for !d.eof && len(d.head) < harHead {
			if err := d.more(d.i); err != nil {
				return err
			}
		}
		if d.eof && len(d.head) < harHead {
			var v any
			if err := json.Unmarshal(d.head, &v); err != nil {
				return syntaxError(formatHAR, d.head, err)
			}
		}
	}
	rest := d.buf[d.i:]
	if e := harValueExtent(rest); e >= 0 {
		rest = rest[:e]
	}
	var v any
	err := json.Unmarshal(rest, &v)
	var se *json.SyntaxError
	if err == nil || !errors.As(err, &se) || int(se.Offset) >= len(rest) && d.eof {
		return errorf(formatHAR, path, "invalid JSON: the document ends too early")
	}
	return errorf(formatHAR, path, "invalid JSON: %v", err)
}

// harStart is the kind of the value starting at b[i], as json.Decoder's
// Token names it ("" when no value starts there).
func harStart(b []byte, i int) string {
	if i >= len(b) {
		return ""
	}
	switch c := b[i]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || isDigit(c):
		return "a number"
	}
	return ""
}

// expect checks that the value at the cursor starts with open ('{' or
// '['), and consumes it.
func (h *harImport) expect(d *harDoc, path string, open byte, doc string) error {
	ok, err := d.space()
	if err != nil {
		return err
	}
	if !ok {
		return h.syntax(d, path)
	}
	if d.buf[d.i] == open {
		d.i++
		return nil
	}
	// A string may run past the buffer: read it whole to quote it, as
	// json.Decoder's token (its text).
	if d.buf[d.i] == '"' {
		raw, err := h.value(d, path, jsonscan.StringEnd)
		if err != nil {
			return err
		}
		text, _ := jsonscan.Unquote(nil, raw)
		return errorf(formatHAR, path, "expected %s, found a string %s", doc, quoteStart(text))
	}
	found := harStart(d.buf, d.i)
	if found == "" {
		return h.syntax(d, path)
	}
	return errorf(formatHAR, path, "expected %s, found %s", doc, found)
}

// members reads an object's members (its '{' consumed): each key, then
// val, which consumes the value.
func (h *harImport) members(d *harDoc, path string, val func(key string) error) error {
	first := true
	for {
		ok, err := d.space()
		if err != nil {
			return err
		}
		if !ok {
			return h.syntax(d, path)
		}
		if d.buf[d.i] == '}' && first {
			d.i++
			return nil
		}
		if !first {
			switch d.buf[d.i] {
			case '}':
				d.i++
				return nil
			case ',':
				d.i++
				if ok, err = d.space(); err != nil {
					return err
				} else if !ok {
					return h.syntax(d, path)
				}
			default:
				return h.syntax(d, path)
			}
		}
		first = false
		if d.buf[d.i] != '"' {
			return h.syntax(d, path)
		}
		k, err := h.value(d, path, jsonscan.StringEnd)
		if err != nil {
			return err
		}
		key := unquoteKey(k[1 : len(k)-1])
		if ok, err = d.space(); err != nil {
			return err
		} else if !ok || d.buf[d.i] != ':' {
			return h.syntax(d, path)
		}
		d.i++
		if ok, err = d.space(); err != nil {
			return err
		} else if !ok {
			return h.syntax(d, path)
		}
		if err := val(key); err != nil {
			return err
		}
	}
}

// read streams the document: $.log.creator, then each of $.log.entries,
// and returns how many entries it read.
func (h *harImport) read(r io.Reader) (int, error) {
	d := &harDoc{r: r, max: h.o.maxDocument()}
	if size := harSize(r); size > 0 {
		d.chunk = min(size+1, harChunk)
		d.buf = make([]byte, 0, d.chunk)
	}
	ok, err := d.space()
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, &Error{Format: formatHAR, Err: errors.New("expected a JSON document, found an empty input")}
	}
	if err := h.expect(d, "$", '{', `a HAR document {"log": {...}}`); err != nil {
		return 0, err
	}
	entries, sawLog := 0, false
	err = h.members(d, "$", func(key string) error {
		if key != "log" || sawLog {
			_, err := h.value(d, "$."+key, anyValue(1))
			return err
		}
		sawLog = true
		var err error
		entries, err = h.readLog(d)
		return err
	})
	if err != nil {
		return 0, err
	}
	if ok, err := d.space(); err != nil {
		return 0, err
	} else if ok {
		return 0, h.trailing(d)
	}
	if !sawLog {
		return 0, errorf(formatHAR, "$.log", "expected an object, found nothing (the member is missing)")
	}
	return entries, nil
}

// trailing is the error of what follows the document at buf[i]: a
// value (its first token whole) is "more"; anything else is invalid JSON,
// said by its line and column when the whole document fits in harHead
// bytes, else as encoding/json says it.
func (h *harImport) trailing(d *harDoc) error {
	for !d.eof && len(d.head) < harHead { // a short document: read it whole
		if err := d.more(d.i); err != nil {
			return err
		}
	}
	var rest io.Reader = bytes.NewReader(d.buf[d.i:])
	if !d.eof {
		rest = io.MultiReader(rest, d.r)
	}
	_, err := json.NewDecoder(rest).Token()
	if err == nil {
		return errorf(formatHAR, "$", "invalid JSON: expected the end of the document, found more")
	}
	if len(d.head) < harHead && d.eof {
		var v any
		if uerr := json.Unmarshal(d.head, &v); uerr != nil {
			return syntaxError(formatHAR, d.head, uerr)
		}
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("the document ends too early")
	}
	return errorf(formatHAR, "$", "invalid JSON: %v", err)
}

// harSource is r when it is a regular file (through ctxReader) that can
// be read again at an offset, with where in the file r's reading starts.
func harSource(r io.Reader) (io.ReaderAt, int64, bool) {
	if harSize(r) == 0 {
		return nil, 0, false
	}
	if c, ok := r.(ctxReader); ok {
		r = c.r
	}
	f, ok := r.(interface {
		io.ReaderAt
		io.Seeker
	})
	if !ok {
		return nil, 0, false
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0, false
	}
	return f, off, true
}

// harSize is the size of r when it is a regular file (through ctxReader),
// else 0.
func harSize(r io.Reader) int {
	if c, ok := r.(ctxReader); ok {
		r = c.r
	}
	f, ok := r.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return 0
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	return int(st.Size())
}

func (h *harImport) readLog(d *harDoc) (int, error) {
	if err := h.expect(d, "$.log", '{', "an object"); err != nil {
		return 0, err
	}
	entries, sawEntries := 0, false
	err := h.members(d, "$.log", func(key string) error {
		path := "$.log." + key
		if key == "entries" && !sawEntries {
			sawEntries = true
			var err error
			entries, err = h.readEntries(d)
			return err
		}
		raw, err := h.value(d, path, anyValue(2))
		if err != nil || key != "creator" {
			return err
		}
		if c := (node{format: formatHAR, path: path, raw: raw}); !c.absent() {
			if err := c.load(); err != nil {
				return err
			}
			if h.creator, err = c.get("name").optStr(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if !sawEntries {
		return 0, errorf(formatHAR, "$.log.entries", "expected an array, found nothing (the member is missing)")
	}
	return entries, nil
}

// harBatch is a run of entries cut by the scanner, for apply.
type harBatch struct {
	first  int // the first entry's number
	raws   [][]byte
	offs   []int64 // where each raw is in the input
	fields []harFields
}

// harBatchLen is how many entries go to apply at a time.
const harBatchLen = 256

// readEntries cuts the entries (and validates them) while apply reads
// them, in order, on another goroutine: the two halves of the work on the
// two cores. The first error by entry number is returned: apply's (on
// entries already cut) before the scanner's (on the entry it could not
// cut).
func (h *harImport) readEntries(d *harDoc) (int, error) {
	if err := h.expect(d, "$.log.entries", '[', "an array"); err != nil {
		return 0, err
	}
	batches := make(chan *harBatch, 4)
	done := make(chan error, 1)
	d.applied = &h.applied
	go func() { done <- h.apply(batches) }()
	n, err := h.cutEntries(d, batches)
	close(batches)
	if aerr := <-done; aerr != nil {
		return 0, aerr
	}
	return n, err
}

// apply reads each entry of each batch in order, until one fails; it
// drains the rest.
func (h *harImport) apply(batches <-chan *harBatch) error {
	var err error
	for b := range batches {
		for k := 0; err == nil && k < len(b.raws); k++ {
			i := b.first + k
			err = h.entry(i, fmt.Sprintf("$.log.entries[%d]", i), b.raws[k], b.offs[k], &b.fields[k])
		}
		if err != nil {
			h.failed.Store(true)
		}
		h.applied.Add(1) // its entries' bytes are not used any more
	}
	return err
}

// cutEntries cuts the entries into batches for apply, until the array's
// end, an error, or apply's failure, and returns how many it cut.
func (h *harImport) cutEntries(d *harDoc, batches chan<- *harBatch) (int, error) {
	b := &harBatch{}
	send := func(next int) {
		if len(b.raws) > 0 {
			batches <- b
			d.sent++
		}
		b = &harBatch{first: next, raws: make([][]byte, 0, harBatchLen), offs: make([]int64, 0, harBatchLen), fields: make([]harFields, 0, harBatchLen)}
	}
	defer func() { send(0) }()
	var f harFields
	for i := 0; ; i++ {
		if len(b.raws) == harBatchLen {
			send(i)
			if h.failed.Load() {
				return i, nil // apply's error is the one returned
			}
		}
		ok, err := d.space()
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, h.syntax(d, "$.log.entries")
		}
		if d.buf[d.i] == ']' && i == 0 {
			d.i++
			return 0, nil
		}
		if i > 0 {
			switch d.buf[d.i] {
			case ']':
				d.i++
				return i, nil
			case ',':
				d.i++
				if ok, err := d.space(); err != nil {
					return 0, err
				} else if !ok {
					return 0, h.syntax(d, "$.log.entries")
				}
			default:
				return 0, h.syntax(d, "$.log.entries")
			}
		}
		raw, err := h.value(d, fmt.Sprintf("$.log.entries[%d]", i), f.scan)
		if err != nil {
			return 0, err
		}
		b.raws = append(b.raws, raw)
		b.offs = append(b.offs, d.base+int64(d.i-len(raw)))
		b.fields = append(b.fields, f)
	}
}

// harValueExtent is the end of the value at b[0] by its brackets and
// strings alone (not checked), or -1 when b ends first.
func harValueExtent(b []byte) int {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexByte(b[j:], '"')
				if k < 0 {
					return -1
				}
				j += k
				n := 0
				for p := j - 1; p > i && b[p] == '\\'; p-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			i = j
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\r', '\n', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// harComplete reports whether the value at b[i] ends, by its brackets and
// strings, before b does: a value cut by the buffer's end is read on, one
// that ends and is not valid is an error now.
func harComplete(b []byte, i int) bool { return harValueExtent(b[i:]) >= 0 }
