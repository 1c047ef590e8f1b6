package library

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// row is one message as the index keeps it.
type row struct {
	seq                    int
	ts                     int64
	kind                   tape.Kind
	method, target, status string
	off                    int64
	n                      int
}

// summary is what the index keeps of a whole tape.
type summary struct {
	isTape                bool
	indexed               int64
	read                  int64 // bytes of the tape read this time
	initSeq               int   // seq of the first initialize request, -1 when none
	servers               []string
	client, clientVersion string
	protocol              string
	start, end            int64
	messages, calls       int
	rpcErrors, toolErrors int
	pending, warnings     int
}

// tapeRows is one tape's reading, streamed to the writer.
type tapeRows struct {
	file   fileInfo
	chunks chan []row
	fixups []row // responses read before their request: their target, set last
	sum    summary
	err    error

	decided chan struct{} // closed (by decide, once) when prior says how the tape is read
	decide  func()
	read    *atomic.Int64 // bytes read, for progress
	prior   *prior        // the indexed part, when only appended to since: read from its old end
	updates []row         // an append's context messages whose status changed
	resume  []byte        // what the next append needs (append.go); nil: read it whole next time
	tail    []byte        // fingerprint of the indexed bytes (append.go)
	window  int           // the most the window reading lines holds but for a longer line; 0: 256 KiB
}

const chunkRows = 4096

// plainReaderAt hides the *os.File from tape.Index, which would map a large
// file into memory: a tape truncated while mapped would fault (SIGBUS).
// Read through read(2), a truncated tape just ends early.
type plainReaderAt struct{ f *os.File }

func (p plainReaderAt) ReadAt(b []byte, off int64) (int, error) { return p.f.ReadAt(b, off) }

// readTape indexes one tape with the tape package (pairing, failures,
// targets) and streams its rows to t.chunks. It opens the file read-only
// and takes no lock: a recorder appending to it is never held up. A tape
// with a prior (only appended to since it was indexed) is read from its old
// end (readAppend); when that cannot be done, whole.
func readTape(ctx context.Context, t *tapeRows) error {
	f, err := os.Open(t.file.path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := min(st.Size(), t.file.size) // no further than the version stat'ed: the rest is for the next refresh
	if t.prior != nil {
		err := readAppend(ctx, t, f, size, t.decide)
		if !errors.Is(err, errNoResume) {
			return err
		}
		t.prior = nil // nothing was sent yet: read it whole
	}
	t.decide()
	if size > 0 && !looksLikeTape(f) {
		return nil // a file that is not a tape: remembered as such
	}
	src := plainReaderAt{f}
	x := tape.NewIndex(src)
	settled := time.Since(time.Unix(0, t.file.mtime)) > settle
	// A tape still being recorded is indexed up to its last whole line.
	prog := t.progress()
	if err := x.Extend(size, func() bool { return settled }, prog); err != nil {
		return err
	}
	prog(x.Size())
	n := x.Len()
	if n > 0 && x.Entry(0).Kind == tape.KindInvalid {
		return nil // its first line is no message: not a tape
	}
	s := &t.sum
	s.isTape = true
	s.indexed = x.Size()
	s.read = x.Size()
	s.servers = nonEmpty(x.Servers())
	s.rpcErrors, s.toolErrors = x.Failures()
	s.rpcErrors += x.StartFailures() // a server that never started: an error of the tape
	s.warnings = x.WarningCount()
	if err := emit(ctx, t, x, src, span{}); err != nil {
		return err
	}
	s.messages = n
	t.tail, err = fingerprint(f, s.indexed)
	return err
}

// progress returns a func for tape.Index.Extend that adds what it reads
// to t.read.
func (t *tapeRows) progress() func(int64) {
	var last int64
	return func(n int64) {
		if t.read != nil {
			t.read.Add(n - last)
		}
		last = n
	}
}

// span places the messages of an index in the tape: a full read's are
// where the index says; an append's index starts with k context messages
// re-read from the indexed part, then the new bytes from the old end on.
type span struct {
	k       int
	ctx     []resumeEntry
	seqBase int   // the tape's seq of the first new message
	offBase int64 // the tape's offset of the first new byte
	ctxLen  int64 // bytes of context before it in the index's source
}

func (v span) seq(j int) int {
	if j < v.k {
		return v.ctx[j].seq
	}
	return v.seqBase + j - v.k
}

// emit takes the entries of x (kind, method, time, pairing: the tape's one
// classifying pass is x's) with their bytes read from src, x's source, and
// streams the rows of the new ones to t.chunks; context messages whose
// status or target changed go to t.updates. It adds to t.sum what the
// messages say, and collects the tape's resume entries.
func emit(ctx context.Context, t *tapeRows, x *tape.Index, src io.ReaderAt, v span) error {
	s := &t.sum
	n := x.Len()
	targets := map[int]string{} // request seq → target, until its response
	chunk := make([]row, 0, min(chunkRows, max(1, n-v.k)))
	sent := 0
	send := func() error {
		if len(chunk) == 0 {
			return nil
		}
		select {
		case t.chunks <- chunk:
		case <-ctx.Done():
			return ctx.Err()
		}
		sent += len(chunk)
		chunk = make([]row, 0, min(chunkRows, max(1, n-v.k-sent)))
		return nil
	}
	initSeq := -1
	for j := range v.k {
		if v.ctx[j].seq == s.initSeq && s.client != "" {
			initSeq = j
		}
	}
	resumable := true
	var res []resumeEntry
	var last resumeEntry
	// Buffers sized to the tape: a library holds many small tapes.
	raws := newRawReader(src, x.Size(), int(min(int64(cmp.Or(t.window, 256<<10)), max(4<<10, x.Size()))))
	for i := range n {
		e := x.Entry(i)
		raw, err := raws.message(x, &e)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break // cut since it was indexed: the next refresh reads it again
		}
		if err != nil {
			return err
		}
		e.Raw = raw
		fresh := e.Seq >= v.k
		r := row{seq: v.seq(e.Seq), kind: e.Kind, off: e.Offset, n: len(e.Raw)}
		if fresh {
			r.off = v.offBase + e.Offset - v.ctxLen
		} else {
			r.off = v.ctx[e.Seq].off
			if v.ctx[e.Seq].status == "pending" {
				s.pending-- // counted again below if it still is
			}
		}
		if !e.Time.IsZero() && fresh {
			r.ts = e.Time.UnixNano()
			if s.start == 0 || r.ts < s.start {
				s.start = r.ts
			}
			s.end = max(s.end, r.ts)
		}
		switch e.Kind {
		case tape.KindRequest:
			if fresh {
				s.calls++
			}
			r.method = e.Method
			r.target = tape.Target(e.Method, e.Raw)
			p := x.Pair(e.Seq)
			switch {
			case p.Partner < 0 && p.Cancelled:
				r.status = "cancelled"
			case p.Partner < 0:
				r.status = "pending"
				s.pending++
			default:
				r.status = responseStatus(x, p.Partner)
				if p.Partner > e.Seq {
					if r.target != "" {
						targets[e.Seq] = r.target
					}
				} else if r.target != "" {
					t.fixups = append(t.fixups, row{seq: v.seq(p.Partner), target: r.target})
				}
			}
			if s.client == "" && e.Method == tape.MethodDiscover {
				// 2026-07-28: no initialize; each request names its client
				// in its _meta, the server/discover probe first.
				if name, version, protocol := tape.RequestIdentity(e.Raw); name != "" {
					s.client, s.clientVersion = name, version
					if s.protocol == "" {
						s.protocol = protocol
					}
				}
			}
			if e.Method == "initialize" && s.client == "" {
				ci := gjson.GetBytes(e.Raw, "params.clientInfo")
				s.client, s.clientVersion = ci.Get("name").String(), ci.Get("version").String()
				s.protocol = gjson.GetBytes(e.Raw, "params.protocolVersion").String()
				initSeq = e.Seq
				s.initSeq = r.seq
			}
		case tape.KindResponse:
			r.method = x.MethodOf(e.Seq)
			p := x.Pair(e.Seq)
			r.status = "orphan"
			if p.Partner >= 0 {
				r.status = responseStatus(x, e.Seq)
				r.target = targets[p.Partner]
				delete(targets, p.Partner)
				if p.Partner == initSeq {
					if v := gjson.GetBytes(e.Raw, "result.protocolVersion"); v.Type == gjson.String {
						s.protocol = v.String() // the version agreed on
					}
				}
			}
		case tape.KindNotification, tape.KindLifecycle:
			r.method = e.Method
		}
		frozen := false
		if !fresh {
			// A context message settled before the old end (an answered
			// initialize, the last message) keeps what it was: its partner
			// is not re-read.
			was := v.ctx[e.Seq].status
			switch e.Kind {
			case tape.KindRequest:
				frozen = was != "pending" && was != "cancelled"
			case tape.KindResponse:
				frozen = was != "orphan"
			}
			if frozen {
				if r.status == "pending" {
					s.pending--
				}
				r.status = was
			}
		}
		re := resumeEntry{seq: r.seq, off: r.off, n: r.n, status: r.status}
		if needed(&r) {
			if e.Batch != 0 || len(res) == maxResume {
				resumable = false
			}
			res = append(res, re)
		}
		last = re
		if e.Batch != 0 {
			last.n = -1
		}
		if !fresh {
			if !frozen && r.status != v.ctx[e.Seq].status { // its method and target come with its partner
				t.updates = append(t.updates, r)
			}
			continue
		}
		chunk = append(chunk, r)
		if len(chunk) == chunkRows {
			if err := send(); err != nil {
				return err
			}
		}
	}
	if last.n < 0 {
		resumable = false
	}
	if resumable && last.n > 0 && (len(res) == 0 || res[len(res)-1].seq != last.seq) {
		res = append(res, last) // the last line: time and order go on from it
	}
	if resumable && n > 0 {
		t.resume = appendResume(nil, res)
	}
	return send()
}

// rawReader reads the bytes of an index's messages in the order of their
// offsets, through a window over the source: one read(2) for many lines.
type rawReader struct {
	src   io.ReaderAt
	limit int64  // bytes indexed: nothing past them is read
	buf   []byte // the window, holding [at, at+len(buf))
	at    int64
	size  int // the window's size when it is filled anew
}

func newRawReader(src io.ReaderAt, limit int64, size int) *rawReader {
	return &rawReader{src: src, limit: limit, size: size}
}

// message returns the bytes of entry e (the slice is valid until the next
// call): those of its line from its offset, without the line's newline
// and, for a message that is one, the blanks after the JSON object, as
// tape.Reader gives them (Entry.Raw). A message of a batch, which shares
// its line, is read through x.Message.
func (r *rawReader) message(x *tape.Index, e *tape.Entry) ([]byte, error) {
	if e.Batch != 0 {
		m, err := x.Message(e.Seq)
		return m.Raw, err
	}
	line, err := r.line(e.Offset)
	if err != nil {
		return nil, err
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1] // the line as tape.Reader reads it
	}
	if e.Kind != tape.KindInvalid {
		// A message is the object alone: only blanks may follow it.
		line = bytes.TrimRight(line, " \t\r\n")
	}
	return line, nil
}

// line returns the bytes from off up to the next newline or the limit.
func (r *rawReader) line(off int64) ([]byte, error) {
	if off < r.at || off > r.at+int64(len(r.buf)) {
		r.at, r.buf = off, r.buf[:0]
	}
	for {
		start := int(off - r.at)
		if k := bytes.IndexByte(r.buf[start:], '\n'); k >= 0 {
			return r.buf[start : start+k], nil
		}
		end := r.at + int64(len(r.buf))
		if end >= r.limit {
			return r.buf[start:], nil // the last line, without a newline
		}
		// Move the line's start to the front and read more after it.
		n := copy(r.buf[:cap(r.buf)], r.buf[start:])
		r.at += int64(start)
		if want := max(r.size, 2*n); cap(r.buf) < want {
			nb := make([]byte, n, want)
			copy(nb, r.buf[:n])
			r.buf = nb
		}
		room := r.buf[n:cap(r.buf)]
		room = room[:min(int64(len(room)), r.limit-(r.at+int64(n)))]
		k, err := r.src.ReadAt(room, r.at+int64(n))
		if k < len(room) && err == nil {
			err = io.ErrUnexpectedEOF
		}
		if k < len(room) {
			return nil, fmt.Errorf("read tape at byte %d: %w", r.at+int64(n+k), err)
		}
		r.buf = r.buf[:n+k]
	}
}

// responseStatus is the status of the exchange response i ends.
func responseStatus(x *tape.Index, i int) string {
	if x.Pair(i).Late {
		return "late"
	}
	if x.Negotiation(i) {
		return "negotiation" // a rejected server/discover probe: not an error
	}
	return x.Failure(i).String() // ok, error, tool-error
}

// looksLikeTape reads the start of f: a tape's first line that is not
// blank is a JSON object or array (a batch). A file that starts otherwise
// (a binary, a text file) is not read further.
func looksLikeTape(f *os.File) bool {
	buf := make([]byte, 512)
	n, _ := f.ReadAt(buf, 0)
	b := bytes.TrimPrefix(buf[:n], []byte("\xef\xbb\xbf"))
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) == 0 || b[0] == '{' || b[0] == '['
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
