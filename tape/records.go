package tape

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// ErrNoRecords is wrapped by the error of a file that has lines but not one
// tape record among them (a JSON-RPC message or a lifecycle record): a log
// another tool wrote, a source file. Such a file is no tape, whereas an
// empty file is an empty one (a recording that has just started).
var ErrNoRecords = errors.New("holds no tape records")

// HeadSize is how many of a file's first bytes a NoRecordsError keeps, to
// tell what the file is instead.
const HeadSize = 64 << 10

// NoRecordsError says why a file is no tape: its first line that is not
// blank, and what that line is not.
type NoRecordsError struct {
	Line    int    // the first line that is not blank, from 1
	Text    string // its start, quoted
	Problem string // why it is no record, as the classifier says
	Head    []byte // the file's first bytes (up to HeadSize), for sniffing
}

func (e *NoRecordsError) Error() string {
	return fmt.Sprintf("%v: line %d is %s: %s", ErrNoRecords, e.Line, e.Text, e.Problem)
}

func (e *NoRecordsError) Unwrap() error { return ErrNoRecords }

// CheckRecords returns a *NoRecordsError when the index holds entries and
// every one is invalid. A tape with one record or more, and one with no
// entry at all (an empty file, blank lines, a recording that has just
// started), are no error.
func (x *Index) CheckRecords() error {
	x.mu.RLock()
	n := x.recs.len()
	for i := range n {
		if x.recs.at(i).kind != KindInvalid {
			x.mu.RUnlock()
			return nil
		}
	}
	x.mu.RUnlock()
	if n == 0 {
		return nil
	}
	m, err := x.Message(0)
	if err != nil {
		return err
	}
	return noRecords(x.src, m.Line, quoteStart(m.Raw), m.Problem)
}

// FindRecord reads the first size bytes of src line by line up to the
// first tape record, and returns a *NoRecordsError if there is none but
// there are lines that are not blank. With partial (a tape being written
// and followed), a last line without its newline is not read: it may be a
// record half written.
func FindRecord(src io.ReaderAt, size int64, partial bool) error {
	lr := newLineReader(io.NewSectionReader(src, 0, size), 0)
	var (
		c     classifier
		first *NoRecordsError
	)
	for {
		line, _, nl, err := lr.next()
		if errors.Is(err, io.EOF) || err == nil && !nl && partial {
			break
		}
		if err != nil {
			return fmt.Errorf("read tape at byte %d: %w", lr.off, err)
		}
		msgs := c.classify(line)
		for _, m := range msgs {
			if m.kind != KindInvalid {
				return nil
			}
		}
		if len(msgs) > 0 && first == nil {
			first = &NoRecordsError{Line: lr.line, Text: quoteStart(line), Problem: msgs[0].problem}
		}
	}
	if first == nil {
		return nil
	}
	return noRecords(src, first.Line, first.Text, first.Problem)
}

// noRecords makes the error of a file whose first line that is not blank
// is line, its start quoted in text.
func noRecords(src io.ReaderAt, line int, text, problem string) *NoRecordsError {
	e := &NoRecordsError{Line: line, Text: text, Problem: problem}
	head := make([]byte, HeadSize)
	n, _ := src.ReadAt(head, 0)
	e.Head = head[:n]
	return e
}

// quoteStart quotes the start of a line, cut at a rune boundary after 60
// bytes.
func quoteStart(b []byte) string {
	const max = 60
	if len(b) <= max {
		return strconv.Quote(string(b))
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strconv.Quote(string(b[:cut])) + "…"
}
