// Package sse reads and writes server-sent event streams
// (text/event-stream), as MCP's Streamable HTTP and legacy HTTP+SSE
// transports use them.
//
// The Reader keeps each event's raw bytes next to its parsed fields, so a
// proxy can forward an event exactly as it arrived (comments and field
// order included) while recording its data. Lines may be of any length and
// end in "\n", "\r\n" or "\r".
//
// Non-goals: reconnection and retry policy (a client's business) and
// dispatching by event type.
package sse

import (
	"bytes"
	"errors"
	"io"
	"strconv"
)

// Event is one server-sent event.
type Event struct {
	// ID is the event's id field; HasID tells an empty id ("id:" resets the
	// last event id) from none.
	ID    string
	HasID bool
	// Event is the event type; empty means "message".
	Event string
	// Data is the data lines joined with "\n". An event with no data line
	// (a priming event, or a lone id) has nil Data.
	Data []byte
	// Retry is the retry field in milliseconds, or -1 if absent.
	Retry int
	// Raw is the event's bytes as read, through its terminating blank
	// line; comment lines before the event are included. For an event cut
	// off by the end of the stream, Raw lacks the blank line.
	Raw []byte
}

// Type returns the event type, "message" when the event names none.
func (e *Event) Type() string {
	if e.Event == "" {
		return "message"
	}
	return e.Event
}

// ErrTooLong is what Next returns for an event longer than Reader.Max:
// the event's Raw holds the bytes read of it so far.
var ErrTooLong = errors.New("sse: event longer than the limit")

// Reader parses events from a stream.
type Reader struct {
	// Max bounds an event's size in bytes (its raw lines); 0 means no
	// bound. An event past it is returned as read so far, with ErrTooLong,
	// and the rest of it is what Skip returns.
	Max int

	r          io.Reader
	buf        []byte
	start, end int
	err        error
	skipLF     bool // a '\r' ended the last line: a '\n' right after it belongs to it
}

// NewReader returns a Reader of the stream r.
func NewReader(r io.Reader) *Reader {
	return NewReaderSize(r, 32<<10)
}

// NewReaderSize returns a Reader of the stream r whose buffer starts at
// size bytes (at least 16); it grows for longer lines. A proxy relaying many
// short streams of small events keeps its garbage down with a small one.
func NewReaderSize(r io.Reader, size int) *Reader {
	return &Reader{r: r, buf: make([]byte, max(size, 16))}
}

// Reset discards the Reader's state and makes it read src, keeping its
// buffer: a proxy can reuse Readers across streams.
func (r *Reader) Reset(src io.Reader) {
	*r = Reader{r: src, buf: r.buf, Max: r.Max}
}

// Size returns the size of the Reader's buffer.
func (r *Reader) Size() int { return len(r.buf) }

// Next returns the next event. At the end of the stream it returns io.EOF,
// or, if the stream ended inside an event, that event (Raw without its blank
// line) with io.ErrUnexpectedEOF. Blocks of comment lines alone are not
// events: their bytes go to the next event's Raw, or come back alone with
// io.EOF at the end of the stream.
func (r *Reader) Next() (Event, error) {
	e := Event{Retry: -1}
	var raw []byte
	var data [][]byte
	fields := false
	for {
		line, lineRaw, err := r.line(r.Max - len(raw))
		raw = append(raw, lineRaw...)
		if errors.Is(err, ErrTooLong) {
			e.Raw = raw
			return e, err
		}
		if err != nil {
			e.Raw = raw
			if errors.Is(err, io.EOF) {
				if len(line) > 0 && parseField(&e, &data, line) {
					fields = true
				}
				if fields {
					e.Data = joinData(data)
					return e, io.ErrUnexpectedEOF
				}
				if len(raw) > 0 {
					return e, io.EOF
				}
			}
			return e, err
		}
		if len(line) == 0 { // blank line: dispatch
			if fields {
				e.Data = joinData(data)
				e.Raw = raw
				return e, nil
			}
			continue
		}
		if parseField(&e, &data, line) {
			fields = true
		}
	}
}

// Skip reads the rest of an event Next found too long, a chunk at a time:
// it returns the chunk's raw bytes, and done when the event's blank line
// ended it (its bytes included). A relay forwards the chunks as they come.
func (r *Reader) Skip() (raw []byte, done bool, err error) {
	_, lineRaw, err := r.line(0)
	switch {
	case errors.Is(err, ErrTooLong):
		return lineRaw, false, nil
	case err != nil:
		return lineRaw, true, err
	}
	blank := len(bytes.TrimRight(lineRaw, "\r\n")) == 0
	return lineRaw, blank, nil
}

// parseField applies one line to e, and reports whether it was a field.
func parseField(e *Event, data *[][]byte, line []byte) bool {
	if line[0] == ':' {
		return false // comment
	}
	name, value, found := bytes.Cut(line, []byte(":"))
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "data":
		*data = append(*data, bytes.Clone(value))
	case "id":
		if bytes.IndexByte(value, 0) >= 0 {
			return false
		}
		e.ID, e.HasID = string(value), true
	case "event":
		if string(value) == "message" {
			e.Event = "message" // the usual type, without allocating
		} else {
			e.Event = string(value)
		}
	case "retry":
		n, err := strconv.Atoi(string(value))
		if err != nil || n < 0 {
			return false
		}
		e.Retry = n
	default:
		return false
	}
	return true
}

func joinData(data [][]byte) []byte {
	if data == nil {
		return nil
	}
	if len(data) == 1 && data[0] != nil {
		return data[0] // already a copy
	}
	if out := bytes.Join(data, []byte("\n")); out != nil {
		return out
	}
	return []byte{} // data present but empty: not the same as no data
}

// line returns one line's content and its raw bytes (content, terminator,
// and the '\n' of a CRLF split by the last read). Both are valid until the
// next call. A '\r' ends a line at once: waiting to see whether '\n'
// follows would hold an event back until the next one arrives.
func (r *Reader) line(room int) (content, raw []byte, err error) {
	skip, pos := 0, 0 // offsets from r.start
	for {
		if r.skipLF && r.start+pos < r.end {
			r.skipLF = false
			if r.buf[r.start] == '\n' {
				skip, pos = 1, 1
			}
		}
		if i := bytes.IndexAny(r.buf[r.start+pos:r.end], "\r\n"); i >= 0 {
			j := r.start + pos + i
			content = r.buf[r.start+skip : j]
			if r.buf[j] == '\r' {
				if j+1 < r.end {
					if r.buf[j+1] == '\n' {
						j++
					}
				} else {
					r.skipLF = true
				}
			}
			raw = r.buf[r.start : j+1]
			r.start = j + 1
			return content, raw, nil
		}
		pos = r.end - r.start
		if r.Max > 0 && pos > room {
			// No end in sight within the bound: hand out what there is.
			raw = r.buf[r.start:r.end]
			r.start = r.end
			return raw, raw, ErrTooLong
		}
		if r.err != nil {
			content, raw = r.buf[r.start+skip:r.end], r.buf[r.start:r.end]
			r.start = r.end
			return content, raw, r.err
		}
		r.fill()
	}
}

func (r *Reader) fill() {
	if r.start > 0 {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		grown := make([]byte, 2*len(r.buf))
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	if err != nil {
		r.err = err
	} else if n == 0 {
		r.err = io.ErrNoProgress
	}
}

// Write writes e to w as one event, with an id field if e.HasID, an event
// field if e.Event is set, a retry field if e.Retry >= 0, one data line per
// line of e.Data (at least one, so an event with empty data is still an
// event), and the blank line that ends it. Raw is ignored.
func Write(w io.Writer, e Event) error {
	_, err := w.Write(Append(nil, e))
	return err
}

// Append appends e to b as Write writes it.
func Append(b []byte, e Event) []byte {
	if e.HasID {
		b = append(append(append(b, "id: "...), e.ID...), '\n')
	}
	if e.Event != "" {
		b = append(append(append(b, "event: "...), e.Event...), '\n')
	}
	if e.Retry >= 0 && (e.Retry > 0 || e.HasID || e.Event != "" || e.Data != nil) {
		b = append(strconv.AppendInt(append(b, "retry: "...), int64(e.Retry), 10), '\n')
	}
	data := e.Data
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		b = append(append(append(b, "data: "...), bytes.TrimSuffix(line, []byte{'\r'})...), '\n')
		if !more {
			break
		}
		data = rest
	}
	return append(b, '\n')
}

// Each calls fn with each event of r that carries data, until the stream
// ends or fn returns false. An event cut off by the end of the stream is
// dropped, as a browser drops it.
func Each(r io.Reader, fn func(Event) bool) error {
	rd := NewReader(r)
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if e.Data != nil && !fn(e) {
			return nil
		}
	}
}

// Events returns the events that carry data of a whole stream held in
// memory (an HTTP body as a HAR file keeps it), an event cut off by the end
// of the text included: there the text ends, not a connection.
func Events(b []byte) []Event {
	rd := NewReader(bytes.NewReader(b))
	var out []Event
	for {
		e, err := rd.Next()
		if e.Data != nil && (err == nil || errors.Is(err, io.ErrUnexpectedEOF)) {
			out = append(out, e)
		}
		if err != nil {
			return out
		}
	}
}
