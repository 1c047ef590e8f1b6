package export

// The HAR entries built from a tape's messages, in the index's order: a
// request opens an entry (an HTTP exchange, or a stdio message as a POST),
// its answer, events and status finish it.

import (
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/sse"
	"github.com/tapedeck/tapedeck/tape"
)

// harBuilder builds the entries of one export.
type harBuilder struct {
	x        *tape.Index
	file     io.ReaderAt // the tape, where bodies kept as refs are read again
	err      error       // the first failure to read one
	upstream string
	entries  []*harEntry
	open     map[int]*harEntry    // request seq → its entry, awaiting the answer
	streams  map[int64]*harEntry  // SSE stream number → the entry carrying it
	urls     map[[2]string]string // server and path → its stdio:// URL
	nextTry  int                  // when emitting: the entries (not yet emitted) at which to try again
	n        int
	slab     []harEntry // the next entries' storage
}

// harSlab is how many entries are allocated at once.
const harSlab = 64

func (h *harBuilder) url(e tape.Entry, path string) string {
	if h.upstream != "" {
		return h.upstream
	}
	k := [2]string{e.Server, path}
	u, ok := h.urls[k]
	if !ok {
		if h.urls == nil {
			h.urls = map[[2]string]string{}
		}
		u = "stdio://" + urlName(e.Server) + path
		h.urls[k] = u
	}
	return u
}

func urlName(s string) string {
	if s == "" {
		return "server"
	}
	return strings.NewReplacer(" ", "-", "/", "-").Replace(s)
}

func (h *harBuilder) entry(start time.Time, method, url string, hm tape.HTTPMeta) *harEntry {
	h.n++
	// Entries are allocated harSlab at a time: one allocation each cost
	// the first pass about a fifth of its time.
	if len(h.slab) == 0 {
		h.slab = make([]harEntry, harSlab)
	}
	en := &h.slab[0]
	h.slab = h.slab[1:]
	*en = harEntry{start: start, order: h.n, exchange: hm.Exchange}
	en.startLater = true
	en.Request = harRequest{Method: method, URL: url, HTTPVersion: "HTTP/1.1", Cookies: []harNV{}, Headers: []harNV{}, QueryString: []harNV{}, HeadersSize: -1, BodySize: 0}
	en.Response = harResponse{Status: 0, HTTPVersion: "HTTP/1.1", Cookies: []harNV{}, Headers: []harNV{}, HeadersSize: -1, BodySize: -1, Content: harContent{MimeType: "application/json"}}
	for _, kv := range []harNV{{"Mcp-Session-Id", hm.Session}, {"MCP-Protocol-Version", hm.Protocol}, {"Mcp-Method", hm.MCPMethod}, {"Mcp-Name", hm.MCPName}} {
		if kv.Value != "" {
			en.Request.Headers = append(en.Request.Headers, kv)
		}
	}
	for _, p := range hm.Params() {
		en.Request.Headers = append(en.Request.Headers, harNV{tape.MCPParamHeader + p.Name, p.Value})
	}
	en.Timings = harTimings{Send: 0, Wait: 0, Receive: 0}
	h.entries = append(h.entries, en)
	return en
}

// exchange adds lifecycle record e if it is an HTTP exchange whose answer
// held no message, and reports whether it was one.
func (h *harBuilder) exchange(e tape.Entry, hm tape.HTTPMeta) bool {
	ex, ok := tape.ParseHTTPExchange(e.Method, e.Raw)
	if !ok {
		return false
	}
	if ex.Method == "POST" {
		// The answer to a POSTed notification or reply (202): its
		// message is the entry opened for it.
		if en := h.lastOpenPost(); en != nil {
			h.finish(en, e, ex.Status, harString(ex.Body), "text/plain")
			return true
		}
	}
	en := h.entry(e.Time, ex.Method, h.url(e, ""), hm)
	en.Response.Status, en.Response.StatusText = ex.Status, statusText(ex.Status)
	if ex.Stream != 0 {
		en.Response.Content.MimeType = "text/event-stream"
		h.setStream(ex.Stream, en)
	}
	if ex.Body != "" {
		en.Response.Content.setText(harString(ex.Body))
	}
	return true
}

// addMessage adds message e (its Raw valid only during the call), body its
// bytes without _meta and hm its HTTP metadata.
func (h *harBuilder) addMessage(e tape.Entry, body harMessage, hm tape.HTTPMeta) {
	switch {
	case e.Kind == tape.KindLifecycle && e.Method == tape.MethodStart:
		if u := gjson.GetBytes(e.Raw, "params.upstream"); u.Exists() {
			h.upstream = u.String()
		}
	case e.Kind == tape.KindLifecycle && h.exchange(e, hm):
	case e.Kind == tape.KindLifecycle || e.Kind == tape.KindInvalid:
	case e.Dir == tape.DirSend || (!hm.HTTP && e.Kind == tape.KindRequest):
		// A message the client sent (or, on a stdio tape, a server's own
		// request): a POST of its own.
		path := "/"
		if e.Dir == tape.DirRecv {
			path = "/client"
		}
		en := h.entry(e.Time, "POST", h.url(e, path), hm)
		setPostData(en, body)
		en.Request.BodySize = len(body.raw) - (body.b - body.a)
		en.Comment = describe(e)
		if e.Kind == tape.KindRequest {
			h.openRequest(e, en, hm)
		} else if !hm.HTTP {
			h.finish(en, e, 202, harText{}, "")
		} else {
			h.setOpen(-e.Seq-1, en) // answered by the next $http/exchange 202
		}
	case e.Kind == tape.KindResponse:
		p := h.x.Pair(e.Seq)
		en := h.open[p.Partner]
		if en == nil {
			return
		}
		h.unsetOpen(p.Partner)
		status := hm.Status
		if status == 0 {
			status = 200
		}
		if hm.SSE {
			en.Response.Content.MimeType = "text/event-stream"
			h.addEvent(en, hm, body)
			if hm.Stream != 0 {
				h.setStream(hm.Stream, en)
			}
			h.finish(en, e, status, en.Response.Content.text(), "text/event-stream")
			return
		}
		h.finish(en, e, status, body.text(), "application/json")
	default:
		// A server message on a stream: a notification or the server's own
		// request, on the POST's stream or the GET stream.
		if en := h.streams[hm.Stream]; hm.HTTP && en != nil {
			h.addEvent(en, hm, body)
			return
		}
		if hm.HTTP {
			// On the stream of a POST not answered yet: it comes before the
			// answer in the same body. Only a request's POST has a stream
			// (a notification or reply is answered 202). A sessionless
			// exchange's message names its POST (hm.Exchange); else the
			// tape does not say which POST opened the stream: the earliest
			// one still without a stream (not a pick of the map's order,
			// so that two exports of a tape are the same).
			var first *harEntry
			for k, en := range h.open {
				if k < 0 || en.Response.Content.MimeType != "application/json" || hm.Stream == 0 {
					continue // a POSTed notification or reply: its 202 has no stream
				}
				if first == nil {
					first = en
					continue
				}
				own, firstOwn := hm.Exchange != 0 && en.exchange == hm.Exchange, hm.Exchange != 0 && first.exchange == hm.Exchange
				if own && !firstOwn || own == firstOwn && en.order < first.order {
					first = en
				}
			}
			if first != nil {
				first.Response.Content.MimeType = "text/event-stream"
				h.addEvent(first, hm, body)
				h.setStream(hm.Stream, first)
				return
			}
		}
		en := h.entry(e.Time, "POST", h.url(e, "/client"), hm)
		en.Comment = describe(e) + " (server to client)"
		setPostData(en, body)
		en.Request.BodySize = len(body.raw) - (body.b - body.a)
		if e.Kind == tape.KindRequest {
			h.openRequest(e, en, hm)
		} else {
			h.finish(en, e, 202, harText{}, "")
		}
	}
}

// lastOpenPost returns the latest POSTed notification or reply awaiting
// its 202.
func (h *harBuilder) lastOpenPost() *harEntry {
	best := 0
	var out *harEntry
	for k, en := range h.open {
		if k < 0 && en.order > best {
			best, out = en.order, en
		}
	}
	for k, en := range h.open {
		if en == out {
			h.unsetOpen(k)
		}
	}
	return out
}

// setPostData sets en's POST body, kept in en.
func setPostData(en *harEntry, body harMessage) {
	pd := &en.postData
	*pd = harPostData{MimeType: "application/json", Params: []harNV{}, body: body.text()}
	pd.Text = pd.body.s
	en.Request.PostData = pd
}

// text is the POST's body.
func (pd *harPostData) text() harText {
	if pd.body.ref {
		return pd.body
	}
	return harString(pd.Text)
}

// addEvent appends message body to en's response as an SSE event.
func (h *harBuilder) addEvent(en *harEntry, hm tape.HTTPMeta, body harMessage) {
	text, err := readText(h.file, en.Response.Content.text())
	if err != nil && h.err == nil {
		h.err = err
	}
	en.Response.Content.setText(harString(text + sseEvent(hm.Event, body.String())))
}

func (h *harBuilder) finish(en *harEntry, e tape.Entry, status int, text harText, mime string) {
	en.Response.Status, en.Response.StatusText = status, statusText(status)
	if mime != "" {
		en.Response.Content.MimeType = mime
	}
	en.Response.Content.setText(text)
	en.Response.BodySize = text.size()
	if !e.Time.IsZero() && !en.start.IsZero() {
		ms := float64(e.Time.Sub(en.start)) / float64(time.Millisecond)
		en.Time, en.Timings.Wait = ms, ms
	}
}

// flush ends what never got an answer.
func (h *harBuilder) flush() {
	for _, en := range h.open {
		if en.Response.Status == 0 && !en.unanswered {
			en.Comment += " (no answer on the tape)"
		}
	}
}

func sseEvent(id, data string) string {
	return string(sse.Append(nil, sse.Event{ID: id, HasID: id != "", Event: "message", Data: []byte(data), Retry: -1}))
}

func describe(e tape.Entry) string {
	return strings.TrimSpace("#" + strconv.Itoa(e.Seq) + " " + e.Kind.String() + " " + e.Method)
}

func statusText(code int) string {
	switch code {
	case 0:
		return ""
	case 200:
		return "OK"
	case 202:
		return "Accepted"
	case 400:
		return "Bad Request"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 409:
		return "Conflict"
	}
	return ""
}
