package replay

// What a tape says about its transport, for the HTTP replay server: read
// once from the index when the handler is made (learnTape), and per server
// message as it is routed (info).

import (
	"net/http"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/tape"
)

// span is a recorded session: tape positions [lo, hi).
type span struct{ lo, hi int }

// wireInfo is what the tape recorded about how a server message travelled.
type wireInfo struct {
	kind   tape.Kind
	viaGET bool // on the standalone stream
	sse    bool // on an SSE stream
	nullID bool // a response with "id":null (an HTTP-level rejection)
	status int  // the HTTP status of the POST that carried it, 0 if none
	// resumed: it came on a stream the client resumed with Last-Event-ID
	// after the server closed the POST's stream (SEP-1699 polling): it
	// belongs to that POST's exchange, whose response must break first.
	resumed bool
}

// resumedStream names a recorded SSE stream: its session and number.
type resumedStream struct {
	session string
	stream  int64
}

// learnTape finds whether the tape was recorded over HTTP, with sessions,
// with a standalone GET stream and with event ids, and where its recorded
// sessions begin.
func (h *HTTPHandler) learnTape() {
	x, server := h.x, h.server
	var hasInit, hasGet, initSession, eventIDs bool
	var initVersion string
	looked := false
	// Session boundaries: a $transport/start or a DELETE after wire
	// traffic, or a second initialize in the same session.
	starts := []int{0}
	pre := []bool{false}
	reqs := []int{0}
	wire, inited := false, false
	firstReq, lastRefused := -1, -1
	for i := range x.Len() {
		en := x.Entry(i)
		if en.Server != server {
			continue
		}
		if h.challenged[i] {
			// Refused by an auth challenge: not part of a session served.
			if firstReq < 0 {
				lastRefused = i
			}
			continue
		}
		if firstReq < 0 && en.Kind == tape.KindRequest && en.Dir == tape.DirSend {
			firstReq = i
		}
		switch {
		case en.Kind == tape.KindLifecycle && (en.Method == tape.MethodStart || h.isDelete(i, en)):
			if wire {
				if en.Method == tape.MethodStart {
					starts = append(starts, i)
				} else {
					starts = append(starts, i+1)
				}
				pre = append(pre, false)
				reqs = append(reqs, 0)
				wire, inited = false, false
			}
		case en.Kind == tape.KindRequest && en.Dir == tape.DirSend && en.Method == "initialize":
			if inited {
				starts = append(starts, i)
				pre = append(pre, false)
				reqs = append(reqs, 0)
			} else if wire {
				pre[len(pre)-1] = true
			}
			wire, inited = true, true
		case en.IsWire():
			wire = true
		}
		if en.Kind == tape.KindRequest && en.Dir == tape.DirSend {
			reqs[len(reqs)-1]++
		}
		if ex, ok := h.exchange(i, en); ok && ex.Method == http.MethodGet && ex.LastEventID != "" && ex.Stream > 0 {
			if m, err := x.Message(i); err == nil {
				if h.resumed == nil {
					h.resumed = map[resumedStream]bool{}
				}
				h.resumed[resumedStream{tape.ParseHTTPMeta(m.Raw).Session, ex.Stream}] = true
			}
		}
		switch {
		case en.Kind == tape.KindLifecycle && h.isGetStream(i, en) && !h.isResumption(i, en):
			hasGet = true
		case en.Kind == tape.KindRequest && en.Dir == tape.DirSend && en.Method == "initialize" && !hasInit:
			hasInit = true
			if m, err := x.Message(i); err == nil {
				hm := tape.ParseHTTPMeta(m.Raw)
				// Sessions: the id the answer assigned (newSession on the
				// answer), or one the initialize request already had.
				initSession = hm.Session != ""
				if p := x.Pair(i).Partner; p >= 0 {
					if a, err := x.Message(p); err == nil && tape.ParseHTTPMeta(a.Raw).NewSession != "" {
						initSession = true
					}
				}
				initVersion = gjson.GetBytes(m.Raw, "params.protocolVersion").String()
				h.httpTape = h.httpTape || hm.HTTP
			}
			looked = true
		case en.Kind != tape.KindLifecycle && en.Dir == tape.DirRecv && h.httpTape && hasInit && !eventIDs:
			if m, err := x.Message(i); err == nil {
				eventIDs = tape.ParseHTTPMeta(m.Raw).HasEvent
			}
		case !looked && en.IsWire():
			if m, err := x.Message(i); err == nil {
				h.httpTape = tape.ParseHTTPMeta(m.Raw).HTTP
			}
			looked = true
		}
		if en.Kind != tape.KindLifecycle && en.Dir == tape.DirRecv && h.httpTape && !hasGet {
			// The proxy marks what came on the GET stream with http "GET".
			if m, err := x.Message(i); err == nil && tape.ParseHTTPMeta(m.Raw).Method == http.MethodGet && !h.info0(m.Raw) {
				hasGet = true
			}
		}
	}
	h.sessions = hasInit && (!h.httpTape || initSession)
	// A stdio tape never had a GET stream, but its server requests and
	// notifications need one to travel outside a request's answer.
	h.getStream = hasGet || (!h.httpTape && h.sessions)
	h.primeTape = eventIDs && initVersion >= mcphttp.PrimingVersion
	if !h.sessions {
		starts, pre, reqs = []int{0}, []bool{false}, []int{0}
	}
	for i, lo := range starts {
		if i > 0 && reqs[i] == 0 {
			continue // no request (a DELETE at the end): not a session to serve
		}
		if n := len(h.spans); n > 0 {
			h.spans[n-1].hi = lo
		}
		h.spans = append(h.spans, span{lo: lo})
		h.preInit = append(h.preInit, pre[i])
	}
	if n := len(h.spans); n > 1 && reqs[0] == 0 {
		// Lifecycle records before the first session's traffic.
		h.spans = slices.Delete(h.spans, 0, 1)
		h.preInit = slices.Delete(h.preInit, 0, 1)
		h.spans[0].lo = 0
	}
	if lastRefused >= 0 && h.spans[0].lo <= lastRefused {
		// The first session starts after the requests refused before it.
		h.spans[0].lo = lastRefused + 1
	}
}

// isDelete reports whether lifecycle record i (en) is a DELETE that ended
// a session.
func (h *HTTPHandler) isDelete(i int, en tape.Entry) bool {
	ex, ok := h.exchange(i, en)
	return ok && ex.Method == http.MethodDelete
}

// isGetStream reports whether lifecycle record i (en) is a GET answered
// with a stream (status 200).
func (h *HTTPHandler) isGetStream(i int, en tape.Entry) bool {
	ex, ok := h.exchange(i, en)
	return ok && ex.Method == http.MethodGet && ex.SSE && (ex.Status == http.StatusOK || ex.Status == 0)
}

// info0 reports whether a recorded message came on a resumed stream.
func (h *HTTPHandler) info0(raw []byte) bool {
	hm := tape.ParseHTTPMeta(raw)
	return h.resumed[resumedStream{hm.Session, hm.Stream}]
}

// isResumption reports whether lifecycle record i (en) is a GET that
// resumed a stream with Last-Event-ID.
func (h *HTTPHandler) isResumption(i int, en tape.Entry) bool {
	ex, ok := h.exchange(i, en)
	return ok && ex.Method == http.MethodGet && ex.LastEventID != ""
}

// exchange reads lifecycle record i (en) as an HTTP exchange.
func (h *HTTPHandler) exchange(i int, en tape.Entry) (tape.HTTPExchange, bool) {
	if en.Kind != tape.KindLifecycle || !tape.IsHTTPExchange(en.Method) {
		return tape.HTTPExchange{}, false
	}
	m, err := h.x.Message(i)
	if err != nil {
		return tape.HTTPExchange{}, false
	}
	return tape.ParseHTTPExchange(en.Method, m.Raw)
}

// info returns how recorded message seq travelled, reading its _meta once.
func (h *HTTPHandler) info(sess *session, seq int) wireInfo {
	if wi, ok := sess.wire[seq]; ok {
		return wi
	}
	wi := wireInfo{kind: h.x.Entry(seq).Kind}
	if m, err := h.x.Message(seq); err == nil {
		hm := tape.ParseHTTPMeta(m.Raw)
		wi.resumed = hm.Method == http.MethodGet && h.resumed[resumedStream{hm.Session, hm.Stream}]
		wi.viaGET = hm.Method == http.MethodGet && !wi.resumed
		wi.sse = hm.SSE
		wi.status = hm.Status
		wi.nullID = wi.kind == tape.KindResponse && gjson.GetBytes(m.Raw, "id").Type == gjson.Null
	}
	if len(sess.wire) >= memoSize {
		clear(sess.wire)
	}
	sess.wire[seq] = wi
	return wi
}
