package tui

import (
	"fmt"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// row is what the timeline shows of one message. Building it reads the body
// only for calls that name something (tools/call, prompts/get), so rows are
// cached: a frame shows a screenful of them and the cache is bounded.
type row struct {
	entry   tape.Entry
	pair    tape.Pair
	tool    string // params.name of the call (or of the request a response answers)
	status  string
	err     bool
	faint   bool   // version negotiation (a rejected server/discover probe): shown faint, not as a failure
	summary string // what went wrong or what was asked (see summarize)
}

type rowCache struct {
	x    *tape.Index
	rows map[int]row
}

const rowCacheMax = 4096

func newRowCache(x *tape.Index) *rowCache { return &rowCache{x: x, rows: map[int]row{}} }

// get returns message i's row; it never iterates the tape.
func (c *rowCache) get(i int) row {
	if r, ok := c.rows[i]; ok {
		return r
	}
	if len(c.rows) >= rowCacheMax {
		clear(c.rows)
	}
	r := row{entry: c.x.Entry(i), pair: c.x.Pair(i)}
	var raw []byte
	if m, err := c.x.Message(i); err == nil {
		raw = m.Raw
	}
	method := r.entry.Method
	switch {
	case r.entry.Kind == tape.KindRequest:
		if tape.NamesTarget(method) {
			r.tool = tape.Target(method, raw)
		}
	case r.entry.Kind == tape.KindResponse && r.pair.Partner >= 0:
		method = r.pair.Method
		r.tool = callName(c.x, r.pair.Partner, r.pair.Method)
	}
	r.status, r.err = rowStatus(r.entry, r.pair)
	if r.entry.Kind == tape.KindRequest && r.pair.Partner >= 0 && c.x.Entry(r.pair.Partner).Kind == tape.KindLifecycle {
		r.status = "challenged" // refused by a 401/403 challenge: the client retries with a token
	}
	r.faint = r.entry.Negotiation
	r.summary = summarize(r.entry, raw, method)
	if r.entry.Kind == tape.KindResponse && r.entry.Dir == tape.DirRecv {
		// An HTTP session's start: the answer that assigned its id.
		if hm := tape.ParseHTTPMeta(raw); hm.NewSession != "" {
			r.summary = "new session " + shortID(hm.NewSession) + " · " + r.summary
		}
	}
	c.rows[i] = r
	return r
}

// shortID shortens a session id for a row.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

// forget drops cached rows (after the index grew: a pending request may
// have been answered).
func (c *rowCache) forget() { clear(c.rows) }

// callName is the tool, prompt or resource request i (of method) names,
// read only for the methods that name one.
func callName(x *tape.Index, i int, method string) string {
	if !tape.NamesTarget(method) {
		return ""
	}
	e, err := x.Message(i)
	if err != nil {
		return ""
	}
	return tape.Target(method, e.Raw)
}

func rowStatus(e tape.Entry, p tape.Pair) (string, bool) {
	switch e.Kind {
	case tape.KindInvalid:
		return "invalid", true
	case tape.KindLifecycle:
		return "", false
	case tape.KindNotification:
		if e.Method == "notifications/cancelled" {
			return "cancel", false
		}
		return "", false
	case tape.KindRequest:
		switch {
		case p.Cancelled:
			return "cancelled", true
		case p.Pending && e.Dropped:
			return "dropped", false // the debugger or a rule stopped it: no answer is coming
		case p.Pending:
			return "pending", false
		}
		return "", false
	case tape.KindResponse:
		switch {
		case p.Orphan:
			return "orphan", true
		case e.Negotiation:
			return "negotiation", false // a server of an earlier era rejected the probe: not a failure
		case e.Error:
			return "error", true
		case e.ToolError:
			return "tool-error", true
		case p.Late:
			return "late", false
		}
		return "ok", false
	}
	return "", false
}

// arrow is the direction column: from the client's side.
func arrow(d tape.Dir) string {
	switch d {
	case tape.DirSend:
		return "→"
	case tape.DirRecv:
		return "←"
	case tape.DirLifecycle:
		return "•"
	}
	return "?"
}

// label is the method column: the method, or "→ response" naming the
// request's method for responses.
func (r row) label() string {
	switch r.entry.Kind {
	case tape.KindResponse:
		if r.pair.Method != "" {
			return "↳ " + r.pair.Method
		}
		return "↳ response"
	case tape.KindInvalid:
		return "(invalid line)"
	}
	return r.entry.Method
}

func (r row) latency() string {
	if r.pair.Partner < 0 || r.entry.Kind != tape.KindRequest && r.entry.Kind != tape.KindResponse {
		return ""
	}
	return tape.FormatLatency(1, r.pair.Latency)
}

// relTime prints an offset from the tape's start.
func relTime(d time.Duration) string {
	if d < 0 {
		return "-" + relTime(-d)
	}
	if d >= time.Hour {
		return fmt.Sprintf("%dh%02dm%02ds", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	}
	if d >= 100*time.Second {
		return fmt.Sprintf("%dm%04.1fs", int(d.Minutes()), d.Seconds()-60*float64(int(d.Minutes())))
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}
