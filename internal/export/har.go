package export

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/).
//
// An HTTP tape maps to the exchanges it recorded: a POST with its JSON-RPC
// message as postData and its answer (JSON, or the SSE events of its
// stream, as text/event-stream), a POST of a notification or a reply
// answered 202, a standalone GET stream with its events, a DELETE. The
// request headers are the ones the tape kept (Mcp-Session-Id,
// MCP-Protocol-Version, Mcp-Method, Mcp-Name); credentials were never
// written. A stdio tape has no HTTP: each client message maps to a POST to
// stdio://SERVER/ (a server's own request to stdio://SERVER/client), its
// answer as the response's content, a notification answered 202.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

type harEntry struct {
	StartedDateTime string      `json:"startedDateTime"`
	Time            float64     `json:"time"`
	Request         harRequest  `json:"request"`
	Response        harResponse `json:"response"`
	Cache           struct{}    `json:"cache"`
	Timings         harTimings  `json:"timings"`
	Comment         string      `json:"comment,omitempty"`
	start           time.Time
	order           int
	held            int         // how many of the builder's maps hold it: it may change while they do
	startLater      bool        // StartedDateTime is start's, formatted as the entry is written
	unanswered      bool        // a stdio request that nothing on the tape answers after it: done at once
	exchange        int64       // the sessionless POST's exchange number (tape.HTTPMeta.Exchange), 0 if none
	postData        harPostData // Request.PostData's storage, when it has one: one allocation an entry
}

type harNV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type harRequest struct {
	Method      string       `json:"method"`
	URL         string       `json:"url"`
	HTTPVersion string       `json:"httpVersion"`
	Cookies     []harNV      `json:"cookies"`
	Headers     []harNV      `json:"headers"`
	QueryString []harNV      `json:"queryString"`
	PostData    *harPostData `json:"postData,omitempty"`
	HeadersSize int          `json:"headersSize"`
	BodySize    int          `json:"bodySize"`
}

type harPostData struct {
	MimeType string  `json:"mimeType"`
	Params   []harNV `json:"params"`
	Text     string  `json:"text"`
	body     harText // Text's bytes in the tape, when body.ref (Text is then "")
}

type harResponse struct {
	Status      int        `json:"status"`
	StatusText  string     `json:"statusText"`
	HTTPVersion string     `json:"httpVersion"`
	Cookies     []harNV    `json:"cookies"`
	Headers     []harNV    `json:"headers"`
	Content     harContent `json:"content"`
	RedirectURL string     `json:"redirectURL"`
	HeadersSize int        `json:"headersSize"`
	BodySize    int        `json:"bodySize"`
}

type harContent struct {
	Size     int     `json:"size"`
	MimeType string  `json:"mimeType"`
	Text     string  `json:"text,omitempty"`
	body     harText // Text's bytes in the tape, when body.ref (Text is then "")
}

// setText sets the content's text.
func (c *harContent) setText(t harText) {
	c.Text, c.body, c.Size = t.s, t, t.size()
}

// text is the content's text.
func (c *harContent) text() harText {
	if c.body.ref {
		return c.body
	}
	return harString(c.Text)
}

type harTimings struct {
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// HAR writes the tape as a HAR 1.2 log. Entries are held until the tape
// is read (HAR is one JSON document in start order), so its memory grows
// with the tape's messages; their bodies are not held when the tape is a
// regular file (they are read from it again as the entries are written).
func HAR(w io.Writer, src Source, version string) error {
	r, err := src.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	var file *os.File
	var data []byte // the tape mapped whole: pass one and the formatters read it in place
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if m, err := tape.MapTape(f); err == nil { // else the system cannot map it: bodies held
				defer m.Close() // after writeHARFrom: its formatters are done with it
				file, data = f, m.Bytes()
			}
		}
	}
	var at io.ReaderAt
	if file != nil {
		at = file
	}
	// The tape is read on a goroutine of its own while the formatters
	// write the entries it has finished with.
	produce := func(send func([]*harEntry) bool) error {
		_, err := readHAREntries(r, src, at, data, send)
		return err
	}
	return shrank(src.Name, writeHARFrom(w, produce, data, version, "exported from "+src.Name+" by tapedeck export --format har"))
}

// shrank names the tape a reading of its mapping found cut shorter
// (mmap.ErrShrank); another error is returned as it is.
func shrank(name string, err error) error {
	if errors.Is(err, mmap.ErrShrank) {
		return fmt.Errorf("read tape %s: %w", name, err)
	}
	return err
}

// harEntries reads the tape and returns its HAR entries in start order,
// their bodies held.
func harEntries(src Source) ([]*harEntry, error) {
	r, err := src.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	entries, err := readHAREntries(r, src, nil, nil, nil)
	for _, en := range entries {
		en.StartedDateTime, en.startLater = en.start.UTC().Format(time.RFC3339Nano), false
	}
	return entries, shrank(src.Name, err)
}

// readHAREntries reads the tape through r (from its start) in the index's
// order and returns its HAR entries in start order. With file (the tape,
// a regular file), the entries keep where their bodies are instead of the
// bodies; with data (file mapped whole), the messages are read there, in
// place, where the index says they are. As tape.ReadMessages: invalid lines are left out, and so are
// messages written after the index was built or past where the tape now ends.
//
// With emit, the entries are handed to emit in start order as soon as
// they are done (no message left can change them or start before them),
// and none are returned; emit says false to stop the reading.
func readHAREntries(r io.Reader, src Source, file io.ReaderAt, data []byte, emit func([]*harEntry) bool) (_ []*harEntry, err error) {
	x := src.Index
	h := harBuilder{x: x, file: file, streams: map[int64]*harEntry{}, open: map[int]*harEntry{}}
	var later []time.Time // later[k]: the earliest time of messages from harBlock*k on
	if emit != nil {
		later = harLaterTimes(x)
	}
	var mr *tape.MessageReader
	if data == nil {
		mr = tape.NewMessageReader(x, r)
		defer mr.Close()
	}
	defer mmap.Catch(&err)() // the tape cut shorter while mapped: ErrShrank, not a crash
	var scratch []byte
	for seq, n := 0, x.Len(); seq < n; seq++ {
		e, size, altMeta := x.EntryAt(seq)
		if e.Kind == tape.KindInvalid {
			continue
		}
		if src.Server != "" && e.Server != src.Server && e.Server != harMoreServers {
			continue
		}
		var raw []byte
		if data != nil && e.Batch == 0 {
			if e.Offset >= int64(len(data)) {
				break // the tape is shorter than its index: it was cut since
			}
			raw = data[e.Offset:min(e.Offset+int64(size), int64(len(data)))]
		} else {
			if mr == nil {
				mr = tape.NewMessageReader(x, r) // reads a batch's messages from the index
				defer mr.Close()
			}
			raw, err = mr.At(e)
			if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
				break // the tape is shorter than its index: it was cut since
			}
			if err != nil {
				return nil, err
			}
		}
		raw = raw[:harSkipBack(raw, len(raw)-1)+1] // the message, without the line's trailing blanks
		meta, a, b := harCut(raw, altMeta)
		if e.Server == harMoreServers || e.Dir == tape.DirUnknown {
			// The index keeps no name past its limit, and an escaped
			// direction as unknown: read them as the classifier reads the
			// message (as ReadMessages did), an escaped member name not
			// "server" or "dir" (gjson's reading would decode it).
			if es := tape.Classify(raw); len(es) == 1 {
				if e.Server == harMoreServers {
					e.Server = es[0].Server
				}
				e.Dir = es[0].Dir
			}
		}
		if src.Server != "" && e.Server != src.Server {
			continue
		}
		var hm tape.HTTPMeta
		if meta != nil && !stdioMeta(meta) {
			scratch = append(append(append(scratch[:0], `{"_meta":`...), meta...), '}')
			hm = tape.ParseHTTPMeta(scratch)
		}
		e.Raw = raw
		h.addMessage(e, harMessage{raw: raw, a: a, b: b, off: e.Offset, ref: file != nil && e.Batch == 0}, hm)
		if h.err != nil {
			return nil, h.err
		}
		if emit != nil && len(h.entries) >= h.nextTry {
			if !h.emitDone(later, seq+1, emit) {
				return nil, nil
			}
		}
	}
	h.flush()
	if emit != nil {
		for _, en := range h.entries {
			en.held = 0 // nothing is left to change it
		}
		h.emitDone(nil, x.Len(), emit)
		return nil, nil
	}
	sortHAREntries(h.entries)
	return h.entries, nil
}

// writeHAR writes the log of entries as encoding/json writes harLog (with
// SetEscapeHTML(false)): the entries are formatted a chunk at a time by
// one goroutine a core (harFormatters), the chunks written in order as
// they are ready, a few in flight: the log is as large as the tape, and
// its bodies are most of it. TestHARWriterAgrees holds it to encoding/json.
func writeHAR(w io.Writer, entries []*harEntry, data []byte, version, comment string) error {
	return writeHARFrom(w, func(send func([]*harEntry) bool) error {
		send(entries)
		return nil
	}, data, version, comment)
}

// writeHARFrom is writeHAR of the entries produce sends, in order, on a
// goroutine of its own (send says false when the writing failed: produce
// should return); produce's error is returned after what it sent before
// is written.
func writeHARFrom(w io.Writer, produce func(send func([]*harEntry) bool) error, data []byte, version, comment string) error {
	bw := newSink(w, 1<<16)
	b := append([]byte(nil), `{"log":{"version":"1.2","creator":{"name":"tapedeck","version":`...)
	b = jsonscan.AppendQuoted(b, version, false)
	b = append(b, `},"entries":[`...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	type chunk struct {
		entries []*harEntry
		first   bool // the log's first entries: no ',' before them
		b       []byte
		aliases []harAlias // the bodies' runs written from the mapping, between b's bytes
		err     error
		done    chan struct{}
	}
	// The chunks are reused, their buffers grown once: a buffer grown
	// afresh for each chunk cost more than the formatting.
	free := make(chan *chunk, harChunksOut)
	for range harChunksOut {
		free <- &chunk{done: make(chan struct{}, 1)}
	}
	work := make(chan *chunk, harChunksOut)
	order := make(chan *chunk, harChunksOut)
	quit := make(chan struct{})
	var perr error // produce's, read once order is closed
	go func() {    // cut entries into chunks, in order
		defer close(order)
		defer close(work)
		first := true
		perr = produce(func(entries []*harEntry) bool {
			for at := 0; at < len(entries); at += harChunk {
				var c *chunk
				select {
				case c = <-free:
				case <-quit:
					return false
				}
				clear(c.aliases) // no pointer into the mapping kept
				c.entries, c.first, c.b, c.aliases, c.err = entries[at:min(at+harChunk, len(entries))], first, c.b[:0], c.aliases[:0], nil
				first = false
				order <- c
				work <- c
			}
			return true
		})
	}()
	for range harFormatters() {
		go func() {
			l := harLines{data: data}
			for c := range work {
				l.aliases = &c.aliases
				// Grown once to about what the chunk takes: growing it
				// as it fills copied the bodies again.
				need := 0
				for _, en := range c.entries {
					need += harEntryBase + en.Response.Content.Size + len(en.Comment)
					if pd := en.Request.PostData; pd != nil {
						need += pd.text().size()
					}
				}
				c.b = slices.Grow(c.b, need+need/8)
				c.err = mmap.Guard(func() (err error) { // the bodies are read from the mapping
					for i, en := range c.entries {
						if i > 0 || !c.first {
							c.b = append(c.b, ',')
						}
						if c.b, err = l.appendEntry(c.b, en); err != nil {
							return err
						}
					}
					return nil
				})
				c.done <- struct{}{}
			}
		}()
	}
	var werr error
	for c := range order {
		<-c.done
		if werr == nil {
			if werr = c.err; werr == nil {
				// The bodies' runs are read from the mapping as they are
				// written (copied by a bufio sink, handed to writev by a
				// gathering one): flushed before the chunk is reused and
				// the mapping unmapped.
				werr = mmap.Guard(func() error {
					at := 0
					for _, a := range c.aliases {
						bw.WriteAlias(c.b[at:a.at])
						bw.WriteAlias(a.p)
						at = a.at
					}
					bw.WriteAlias(c.b[at:])
					return bw.Flush()
				})
			}
			if werr != nil {
				close(quit)
			}
		}
		c.entries = nil
		free <- c
	}
	if werr != nil {
		return werr
	}
	if perr != nil {
		return perr
	}
	b = append(b[:0], ']')
	if comment != "" {
		b = append(b, `,"comment":`...)
		b = jsonscan.AppendQuoted(b, comment, false)
	}
	b = append(b, "}}\n"...)
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}

// harMoreServers is the name the index gives every server past the most it
// tells apart (tape.Index.ServersOverflow).
const harMoreServers = "(more)"

// harEntryBase is about what an entry takes besides its bodies.
const harEntryBase = 640

const (
	harChunk     = 256 // entries formatted at once
	harChunksOut = 4   // chunks in flight (formatted or being formatted, not yet written)
)

// harFormatters is how many goroutines format a HAR's entries: the cores
// Go may use, up to 4.
func harFormatters() int {
	return min(runtime.GOMAXPROCS(0), 4)
}

// appendEntry appends entry en as encoding/json writes it, its bodies read
// from the tape where it keeps only where they are.
func (l *harLines) appendEntry(b []byte, en *harEntry) ([]byte, error) {
	var err error
	b = append(b, `{"startedDateTime":`...)
	if en.startLater {
		// RFC 3339 has nothing a JSON string escapes.
		b = append(b, '"')
		b = en.start.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	} else {
		b = jsonscan.AppendQuoted(b, en.StartedDateTime, false)
	}
	b = append(b, `,"time":`...)
	b = appendJSONFloat(b, en.Time)
	q := &en.Request
	b = append(b, `,"request":{"method":`...)
	b = jsonscan.AppendQuoted(b, q.Method, false)
	b = append(b, `,"url":`...)
	b = jsonscan.AppendQuoted(b, q.URL, false)
	b = append(b, `,"httpVersion":`...)
	b = jsonscan.AppendQuoted(b, q.HTTPVersion, false)
	b = append(b, `,"cookies":`...)
	b = appendHARNVs(b, q.Cookies)
	b = append(b, `,"headers":`...)
	b = appendHARNVs(b, q.Headers)
	b = append(b, `,"queryString":`...)
	b = appendHARNVs(b, q.QueryString)
	if pd := q.PostData; pd != nil {
		b = append(b, `,"postData":{"mimeType":`...)
		b = jsonscan.AppendQuoted(b, pd.MimeType, false)
		b = append(b, `,"params":`...)
		b = appendHARNVs(b, pd.Params)
		b = append(b, `,"text":`...)
		if b, err = l.appendText(b, pd.text()); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	b = append(b, `,"headersSize":`...)
	b = strconv.AppendInt(b, int64(q.HeadersSize), 10)
	b = append(b, `,"bodySize":`...)
	b = strconv.AppendInt(b, int64(q.BodySize), 10)
	p := &en.Response
	b = append(b, `},"response":{"status":`...)
	b = strconv.AppendInt(b, int64(p.Status), 10)
	b = append(b, `,"statusText":`...)
	b = jsonscan.AppendQuoted(b, p.StatusText, false)
	b = append(b, `,"httpVersion":`...)
	b = jsonscan.AppendQuoted(b, p.HTTPVersion, false)
	b = append(b, `,"cookies":`...)
	b = appendHARNVs(b, p.Cookies)
	b = append(b, `,"headers":`...)
	b = appendHARNVs(b, p.Headers)
	b = append(b, `,"content":{"size":`...)
	b = strconv.AppendInt(b, int64(p.Content.Size), 10)
	b = append(b, `,"mimeType":`...)
	b = jsonscan.AppendQuoted(b, p.Content.MimeType, false)
	if t := p.Content.text(); t.size() > 0 {
		b = append(b, `,"text":`...)
		if b, err = l.appendText(b, t); err != nil {
			return b, err
		}
	}
	b = append(b, `},"redirectURL":`...)
	b = jsonscan.AppendQuoted(b, p.RedirectURL, false)
	b = append(b, `,"headersSize":`...)
	b = strconv.AppendInt(b, int64(p.HeadersSize), 10)
	b = append(b, `,"bodySize":`...)
	b = strconv.AppendInt(b, int64(p.BodySize), 10)
	b = append(b, `},"cache":{},"timings":{"send":`...)
	b = appendJSONFloat(b, en.Timings.Send)
	b = append(b, `,"wait":`...)
	b = appendJSONFloat(b, en.Timings.Wait)
	b = append(b, `,"receive":`...)
	b = appendJSONFloat(b, en.Timings.Receive)
	b = append(b, '}')
	if en.Comment != "" {
		b = append(b, `,"comment":`...)
		b = jsonscan.AppendQuoted(b, en.Comment, false)
	}
	return append(b, '}'), nil
}

// appendHARNVs appends name/value pairs; nil is null, as encoding/json has it.
func appendHARNVs(b []byte, nvs []harNV) []byte {
	if nvs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, nv := range nvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsonscan.AppendQuoted(b, nv.Name, false)
		b = append(b, `,"value":`...)
		b = jsonscan.AppendQuoted(b, nv.Value, false)
		b = append(b, '}')
	}
	return append(b, ']')
}
