package tape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
)

// lineReader splits a stream into lines with no limit on their length.
// The returned line shares the reader's buffer until the next call.
type lineReader struct {
	r       io.Reader
	buf     []byte
	start   int   // first unread byte of buf
	end     int   // end of valid data in buf
	scanned int   // bytes after start already searched for '\n'
	off     int64 // stream offset of buf[start]
	eof     bool
	err     error
	line    int   // number of the last line returned, from 1
	max     int64 // the longest line it reads (MaxLine), 0 for no bound
}

const minBuffer = 256 << 10

func newLineReader(r io.Reader, size int) *lineReader {
	if size < 4096 {
		size = minBuffer
	}
	return &lineReader{r: r, buf: make([]byte, size)}
}

// next returns the next line without its "\n" or "\r\n", the stream offset of
// its first byte, and whether a newline ended it (false only for a last line).
// It returns io.EOF after the last line, or the underlying reader's error.
func (lr *lineReader) next() (line []byte, off int64, nl bool, err error) {
	for {
		if k := bytes.IndexByte(lr.buf[lr.start+lr.scanned:lr.end], '\n'); k >= 0 {
			stop := lr.start + lr.scanned + k
			line, off = lr.buf[lr.start:stop], lr.off
			lr.off += int64(stop + 1 - lr.start)
			lr.start, lr.scanned = stop+1, 0
			return lr.finish(line, off, true)
		}
		lr.scanned = lr.end - lr.start
		if lr.max > 0 && int64(lr.scanned) > lr.max {
			return nil, lr.off, false, fmt.Errorf("line %d: %w: expected at most %d bytes, found more", lr.line+1, ErrLineTooLong, lr.max)
		}
		if lr.err != nil {
			return nil, lr.off, false, lr.err // not the end of the tape: no last line
		}
		if lr.eof {
			if lr.start == lr.end {
				return nil, lr.off, false, io.EOF
			}
			line, off = lr.buf[lr.start:lr.end], lr.off
			lr.off += int64(lr.end - lr.start)
			lr.start, lr.scanned = lr.end, 0
			return lr.finish(line, off, false)
		}
		lr.fill()
	}
}

func (lr *lineReader) finish(line []byte, off int64, nl bool) ([]byte, int64, bool, error) {
	lr.line++
	if lr.line == 1 && bytes.HasPrefix(line, []byte("\xef\xbb\xbf")) {
		line, off = line[3:], off+3
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, off, nl, nil
}

func (lr *lineReader) fill() {
	if lr.start > 0 {
		n := copy(lr.buf, lr.buf[lr.start:lr.end])
		lr.start, lr.end = 0, n
	}
	if lr.end == len(lr.buf) {
		grown := make([]byte, 2*len(lr.buf))
		copy(grown, lr.buf[:lr.end])
		lr.buf = grown
	}
	n, err := lr.r.Read(lr.buf[lr.end:])
	lr.end += n
	if err != nil {
		lr.eof = true
		if !errors.Is(err, io.EOF) {
			lr.err = err
		}
	}
}

// ReaderOption configures a Reader or an Index.
type ReaderOption func(*readerConfig)

type readerConfig struct {
	strict  bool
	buffer  int
	maxLine int64
	// digester, when set, gives each classifying worker of an Index its
	// Digester (WithDigests).
	digester func() Digester
}

// Strict makes a malformed line an error (wrapping ErrMalformed, with its line
// number) instead of an invalid entry and a warning. A torn last line stays a
// warning even then: it is what a recorder killed mid-write leaves.
func Strict() ReaderOption { return func(c *readerConfig) { c.strict = true } }

// BufferSize sets the initial read buffer; lines longer than it grow it.
func BufferSize(n int) ReaderOption { return func(c *readerConfig) { c.buffer = n } }

// MaxLine bounds the lines a Reader reads: a line longer than n bytes is
// an error wrapping ErrLineTooLong that names the line, instead of a buffer
// that grows without end (a tape from /dev/zero, a hostile file). Zero
// means no bound, as a Reader has by default.
func MaxLine(n int64) ReaderOption { return func(c *readerConfig) { c.maxLine = n } }

// Reader streams the entries of a tape.
type Reader struct {
	lr       *lineReader
	cfg      readerConfig
	cls      classifier
	seq      int
	batch    batchNumbers
	queue    []Entry
	lines    [][]byte // the line of each queued entry
	line     []byte   // the line of the entry Next returned last
	torn     bool     // the last line had no newline and was no message
	warnings warningList
	err      error // what stopped Entries, if not the end of the input
}

// NewReader returns a Reader of the tape in r. It reads lines of any length,
// accepts "\r\n" line endings, a UTF-8 byte order mark and blank lines.
func NewReader(r io.Reader, opts ...ReaderOption) *Reader {
	rd := &Reader{}
	for _, o := range opts {
		o(&rd.cfg)
	}
	rd.lr = newLineReader(r, rd.cfg.buffer)
	rd.lr.max = rd.cfg.maxLine
	return rd
}

// Next returns the next entry, or io.EOF after the last one. The entry's Raw
// is a copy the caller owns. Problems that do not stop the reading are
// collected as warnings (see Warnings).
func (r *Reader) Next() (Entry, error) {
	for len(r.queue) == 0 {
		line, off, nl, err := r.lr.next()
		if err != nil {
			return Entry{}, err
		}
		msgs := r.cls.classify(line)
		if len(msgs) == 0 {
			continue
		}
		lineNo := r.lr.line
		r.torn = !nl && slices.ContainsFunc(msgs, func(m msgInfo) bool { return m.kind == KindInvalid })
		if w, ferr := lineProblems(msgs, line, lineNo, nl, r.cfg.strict); ferr != nil {
			return Entry{}, ferr
		} else {
			r.warnings.add(w...)
		}
		batch := r.batch.of(line, msgs)
		own := bytes.Clone(line)
		for i := range msgs {
			e := msgs[i].entry(own)
			e.Seq, e.Line, e.Offset, e.Batch = r.seq, lineNo, off+int64(msgs[i].start), batch
			r.seq++
			r.queue = append(r.queue, e)
			r.lines = append(r.lines, own)
		}
	}
	e := r.queue[0]
	r.queue, r.line, r.lines = r.queue[1:], r.lines[0], r.lines[1:]
	return e, nil
}

// Entries returns the tape's entries in order, for a range loop: the one
// read loop of every whole-tape pass. A line that is torn or malformed is
// skipped (it is among the Warnings; in Strict mode Next's error for it).
// The loop ends at the end of the input, or at an error that stops the
// reading, which Err then returns.
func (r *Reader) Entries() iter.Seq[Entry] {
	return func(yield func(Entry) bool) {
		for {
			e, err := r.Next()
			switch {
			case errors.Is(err, io.EOF):
				return
			case errors.Is(err, ErrTorn), errors.Is(err, ErrMalformed):
				continue
			case err != nil:
				r.err = err
				return
			}
			if !yield(e) {
				return
			}
		}
	}
}

// Err returns the error that ended Entries' loop early, or nil when it
// reached the end of the input (or its caller stopped it).
func (r *Reader) Err() error { return r.err }

// Line returns the whole line, without its line ending, of the entry Next
// returned last: for a message of a batch, the array it travelled in. The
// entries of one line share it.
func (r *Reader) Line() []byte { return r.line }

// Torn reports whether the last line read was torn: it ended the input
// without a newline and is no message (what a recorder killed mid-write
// leaves). Unlike the ErrTorn warning, it is known however many warnings
// came before.
func (r *Reader) Torn() bool { return r.torn }

// Warnings returns the problems met so far that did not stop the reading.
func (r *Reader) Warnings() []Warning { return r.warnings.list() }

// WarningCount returns how many warnings there were, including those beyond
// the first MaxWarnings that are not kept.
func (r *Reader) WarningCount() int { return r.warnings.n }

// MaxWarnings is how many warnings a Reader or an Index keeps; beyond it
// they are only counted, so a tape with a problem on every line stays small.
const MaxWarnings = 1000

type warningList struct {
	kept []Warning
	n    int
}

func (l *warningList) add(ws ...Warning) {
	for _, w := range ws {
		l.n++
		if len(l.kept) < MaxWarnings {
			l.kept = append(l.kept, w)
		}
	}
}

func (l *warningList) list() []Warning { return append([]Warning(nil), l.kept...) }

// lineProblems turns what the classifier noticed on a line into warnings, or
// into an error for a malformed line in strict mode.
func lineProblems(msgs []msgInfo, line []byte, lineNo int, nl, strict bool) ([]Warning, error) {
	var ws []Warning
	for i := range msgs {
		m := &msgs[i]
		switch {
		case m.kind == KindInvalid && !nl:
			ws = append(ws, Warning{lineNo, fmt.Errorf("line %d: %w: %s (a recorder stopped mid-write?)", lineNo, ErrTorn, m.problem)})
		case m.kind == KindInvalid && strict:
			return nil, fmt.Errorf("line %d: %w: %s", lineNo, ErrMalformed, m.problem)
		case m.kind == KindInvalid:
			ws = append(ws, Warning{lineNo, fmt.Errorf("line %d: %w: %s; kept as an invalid entry", lineNo, ErrMalformed, m.problem)})
		}
		if m.badUTF8 {
			ws = append(ws, Warning{lineNo, fmt.Errorf("line %d: %w: invalid UTF-8 in the message", lineNo, ErrMalformed)})
		}
		if m.noVersion && m.kind != KindInvalid {
			found := "no \"jsonrpc\" member"
			if m.version.ok() {
				found = string(line[m.version.start:m.version.end])
			}
			ws = append(ws, Warning{lineNo, fmt.Errorf("line %d: %w: expected \"jsonrpc\":\"2.0\", found %s", lineNo, ErrMalformed, found)})
		}
		if m.kind != KindInvalid && m.kind != KindLifecycle || m.kind == KindLifecycle && !m.dir.ok() {
			if len(m.notes) > 0 {
				ws = append(ws, Warning{lineNo, fmt.Errorf("line %d: %s", lineNo, strings.Join(m.notes, "; "))})
			}
		}
		if m.badUTF8 {
			break // one warning a line is enough when every message shares the line
		}
	}
	return ws, nil
}
