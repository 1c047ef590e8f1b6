package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// Meta is the _meta object a Writer adds to each message.
type Meta struct {
	Dir    Dir
	Server string
	Time   time.Time
	// Extra holds more _meta keys (transport, status, session, stream, ...),
	// written after dir, server and ts in key order. mcporter ignores them.
	Extra map[string]any
}

// TimeFormat is the layout of _meta.ts: RFC 3339 in UTC with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// TimeFormatMicro is _meta.ts with microseconds, still RFC 3339 (ISO 8601):
// a Writer made KeepMicroseconds uses it for a time with a part below the
// millisecond (an import whose source has one), so latencies below a
// millisecond survive. Every reader reads both forms.
const TimeFormatMicro = "2006-01-02T15:04:05.000000Z07:00"

// appendTS appends t in UTC as _meta.ts: milliseconds, or microseconds
// when t has a part below the millisecond.
func appendTS(b []byte, t time.Time, micro bool) []byte {
	t = t.UTC()
	if micro && t.Nanosecond()%int(time.Millisecond) >= int(time.Microsecond) {
		return t.AppendFormat(b, TimeFormatMicro)
	}
	return t.AppendFormat(b, TimeFormat)
}

// appendJSON appends the _meta object.
func (m Meta) appendJSON(b []byte, micro bool) ([]byte, error) {
	b = append(b, `{"dir":`...)
	b = jsonscan.AppendQuoted(b, string(m.Dir), false)
	b = append(b, `,"server":`...)
	b = jsonscan.AppendQuoted(b, m.Server, false)
	b = append(b, `,"ts":"`...)
	b = appendTS(b, m.Time, micro)
	b = append(b, '"')
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		if k != "dir" && k != "server" && k != "ts" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := marshalNoEscape(m.Extra[k])
		if err != nil {
			return nil, fmt.Errorf("_meta.%s: %w", k, err)
		}
		b = append(b, ',')
		b = jsonscan.AppendQuoted(b, k, false)
		b = append(b, ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// AppendString appends s as a JSON string, escaped as Writer escapes it
// (for a _meta member encoded outside tape, such as record's shadow lane's).
func AppendString(b []byte, s string) []byte { return jsonscan.AppendQuoted(b, s, false) }

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Writer appends messages to a tape. Each message reaches the underlying
// writer in a single Write call, so a crash leaves at most the last line torn.
// A Writer is safe for concurrent use.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	micro bool
}

// NewWriter returns a Writer that appends to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// KeepMicroseconds makes w write a time with a part below the millisecond
// with its microseconds (TimeFormatMicro) and returns w; by default _meta.ts
// has milliseconds, as the recorders' Encoder writes it.
func (w *Writer) KeepMicroseconds() *Writer {
	w.micro = true
	return w
}

// Write appends msg, one JSON-RPC object or batch array, with m as its _meta.
// The message's bytes are kept as they are; _meta is spliced in before the
// closing brace. A message spread over several lines (a pretty-printed HTTP
// body) is compacted to one, which changes only whitespace. Anything that is
// not a JSON object is refused with ErrMalformed: record it with
// WriteInvalid instead.
func (w *Writer) Write(msg []byte, m Meta) error {
	msg = bytes.TrimSpace(msg)
	if bytes.ContainsAny(msg, "\r\n") {
		var c bytes.Buffer
		if err := json.Compact(&c, msg); err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		msg = c.Bytes()
	}
	if len(msg) < 2 || msg[0] != '{' || msg[len(msg)-1] != '}' {
		if len(msg) > 0 && msg[0] == '[' {
			return w.writeBatch(msg, m)
		}
		return fmt.Errorf("%w: expected a JSON object, found %s", ErrMalformed, found(msg, 0))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b := append(w.buf[:0], msg[:len(msg)-1]...)
	if len(bytes.TrimSpace(msg[1:len(msg)-1])) > 0 {
		b = append(b, ',')
	}
	if ownMeta(msg) {
		b = append(append(append(b, '"'), AltMetaKey...), `":`...)
	} else {
		b = append(b, `"_meta":`...)
	}
	b, err := m.appendJSON(b, w.micro)
	if err != nil {
		return err
	}
	b = append(b, "}\n"...)
	w.buf = b
	_, err = w.w.Write(b)
	return err
}

// WriteLines appends lines an Encoder made (whole lines, newlines
// included) in one write: the fast path of a writer that holds the
// Writer's underlying io.Writer for nothing else (an import).
func (w *Writer) WriteLines(lines []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.w.Write(lines)
	return err
}

// AltMetaKey holds a record's tape metadata instead of "_meta" when the
// message carries a top-level "_meta" (or AltMetaKey) of its own: the
// message keeps its own, byte for byte, and replay sends it as it was. Tape
// readers take the last AltMetaKey member of a line when there is one, else
// the last "_meta" (see RecordMeta). Every other record keeps the
// mcporter-compatible "_meta".
const AltMetaKey = "_tapedeck"

// ownMeta reports whether msg, a JSON object, has a top-level "_meta" or
// AltMetaKey member of its own.
func ownMeta(msg []byte) bool {
	if !bytes.Contains(msg, []byte(`"_meta"`)) && !bytes.Contains(msg, []byte(`"`+AltMetaKey+`"`)) {
		return false // the usual case, decided without a walk
	}
	var c classifier
	found := false
	_, _ = c.members(msg, 0, func(key []byte, _ span) {
		found = found || string(key) == "_meta" || string(key) == AltMetaKey
	})
	return found
}

// writeBatch records each message of a batch on its own line, with
// _meta.batch naming the batch, so mcporter can read every one.
func (w *Writer) writeBatch(msg []byte, m Meta) error {
	var c classifier
	msgs := c.classify(msg)
	if len(msgs) == 0 || msgs[0].kind == KindInvalid && len(msgs) == 1 && msgs[0].start == 0 && msgs[0].end == len(msg) {
		return fmt.Errorf("%w: expected a batch of JSON-RPC objects", ErrMalformed)
	}
	mm := m
	mm.Extra = make(map[string]any, len(m.Extra)+1)
	for k, v := range m.Extra {
		mm.Extra[k] = v
	}
	if _, ok := mm.Extra["batch"]; !ok {
		mm.Extra["batch"] = m.Time.UnixNano()
	}
	for _, x := range msgs {
		if err := w.Write(msg[x.start:x.end], mm); err != nil {
			return err
		}
	}
	return nil
}

// WriteLifecycle appends a lifecycle record: a "$"-method that is not a wire
// message, such as "$transport/start". m.Dir is forced to DirLifecycle.
func (w *Writer) WriteLifecycle(method string, params any, m Meta) error {
	b := []byte(`{"jsonrpc":"2.0","method":`)
	b = jsonscan.AppendQuoted(b, method, false)
	if params != nil {
		p, err := marshalNoEscape(params)
		if err != nil {
			return fmt.Errorf("%s params: %w", method, err)
		}
		b = append(b, `,"params":`...)
		b = append(b, p...)
	}
	b = append(b, '}')
	m.Dir = DirLifecycle
	return w.Write(b, m)
}

// Lifecycle methods written by tapedeck. Replay ignores every "$"-method.
const (
	MethodStart   = "$transport/start"
	MethodClose   = "$transport/close"
	MethodStderr  = "$transport/stderr"
	MethodInvalid = "$transport/invalid"
	// MethodOversize records a line too long to hold back and record whole
	// (a recorder forwards it as it comes): params from (the direction),
	// size, prefix (its first bytes) and ended (false when the input ended
	// before its newline).
	MethodOversize = "$transport/oversize"
	// MethodLost records that writing the tape failed and records are
	// missing before it: params bytes, writes and reason.
	MethodLost = "$transport/lost"
	// MethodUnanswered records a request a live server (replay's fallback)
	// did not answer, whose client got an error instead: params method,
	// id and reason.
	MethodUnanswered = "$transport/unanswered"
)

// WriteInvalid records a frame that is not a JSON-RPC message (a stray line
// on a server's stdout, say) as a lifecycle record holding its text, with the
// direction it travelled in _meta.from.
func (w *Writer) WriteInvalid(frame []byte, m Meta) error {
	extra := make(map[string]any, len(m.Extra)+1)
	for k, v := range m.Extra {
		extra[k] = v
	}
	extra["from"] = string(m.Dir)
	m.Extra = extra
	return w.WriteLifecycle(MethodInvalid, map[string]string{"text": string(frame)}, m)
}

// Create opens a tape file for writing with mode 0600, creating its missing
// parent directories with mode 0700. Every write appends (O_APPEND), so
// recorders sharing one tape (a shim still in its shutdown grace and the next
// session's, say) interleave whole lines and never overwrite each other.
//
// Without appendTo an existing file is an error (os.ErrExist), so nothing
// recorded is overwritten by accident. With appendTo an existing tape is
// appended to, with care, since it may not be ours: a symbolic link is
// refused (ErrNotATape), as is a file another user owns, or a directory (a
// device or a pipe is written as it is); a tape others may read or write is
// tightened to 0600; a tape
// whose last line is torn (what SIGKILL leaves) is ended with a newline, so
// that the first new record starts a line of its own. Notes say what was
// changed, for the user to read.
func Create(path string, appendTo bool) (f *os.File, notes []string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, err
	}
	if !appendTo {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		return f, nil, err
	}
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND|oNoFollow, 0o600)
	if err != nil {
		if isSymlinkRefusal(path, err) {
			return nil, nil, fmt.Errorf("%w: %s is a symbolic link; name the tape itself", ErrNotATape, path)
		}
		return nil, nil, err
	}
	notes, err = adoptTape(f, path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, notes, nil
}

// ErrNotATape is what Create says of a path it will not append to.
var ErrNotATape = errors.New("not a tape to append to")

// adoptTape checks an existing tape opened for appending and makes it safe
// to add to (see Create).
func adoptTape(f *os.File, path string) ([]string, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	switch m := fi.Mode(); {
	case m.IsDir():
		return nil, fmt.Errorf("%w: %s is a directory", ErrNotATape, path)
	case !m.IsRegular():
		// A device or a pipe (-o /dev/null --append discards the tape):
		// nothing to protect or to end with a newline.
		return nil, nil
	}
	if owner, mine := ownedByMe(fi); !mine {
		return nil, fmt.Errorf("%w: %s belongs to user %d, not to this user; copy it to append to it", ErrNotATape, path, owner)
	}
	var notes []string
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return nil, fmt.Errorf("tighten %s to 0600: %w", path, err)
		}
		notes = append(notes, fmt.Sprintf("%s had mode %04o, which let others read the tape; it is 0600 now", path, perm))
	}
	if size := fi.Size(); size > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			return nil, fmt.Errorf("read the end of %s: %w", path, err)
		}
		if last[0] != '\n' {
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return nil, err
			}
			notes = append(notes, fmt.Sprintf("%s ended in a torn line (a recorder was killed while writing); it is kept as it is, and the new records start on the next line", path))
		}
	}
	return notes, nil
}

func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeDir != 0:
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	default:
		return "special file"
	}
}
