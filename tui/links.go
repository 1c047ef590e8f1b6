package tui

// Following a resource_link (2025-06-18): a tool's result may name a
// resource by its uri instead of carrying it; the client fetches it with
// resources/read. The link key (L) goes from the answer that holds the
// link to the resources/read that fetched it.

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// resourceLinks are the uris of the resource_link items in an answer's
// result.content, in order.
func resourceLinks(raw []byte) []string {
	var uris []string
	for _, c := range gjson.GetBytes(raw, "result.content").Array() {
		if c.Get("type").String() == "resource_link" {
			if u := c.Get("uri").String(); u != "" {
				uris = append(uris, u)
			}
		}
	}
	return uris
}

// followLink moves the cursor from a row whose answer holds a
// resource_link (the answer, or the request it answers) to the next
// resources/read request of the same server whose params.uri is one of
// its links, or says that none was recorded.
func (m Model) followLink() Model {
	seq := m.timeline.Cursor()
	if seq < 0 {
		return m
	}
	en := m.x.Entry(seq)
	ans := seq
	switch en.Kind {
	case tape.KindRequest:
		if ans = m.x.Pair(seq).Partner; ans < 0 {
			m.notify(false, fmt.Sprintf("#%d was never answered on the tape: no resource_link to follow", seq))
			return m
		}
	case tape.KindResponse:
	default:
		m.notify(false, fmt.Sprintf("#%d is %s: L follows a resource_link in an answer", seq, kindPhrase(en)))
		return m
	}
	var uris []string
	if msg, err := m.x.Message(ans); err == nil {
		uris = resourceLinks(msg.Raw)
	}
	if len(uris) == 0 {
		m.notify(false, fmt.Sprintf("#%d's answer holds no resource_link", seq))
		return m
	}
	server := m.x.Entry(ans).Server
	from := max(seq, ans) + 1
	read := findRead(m.x, server, uris, from)
	if read < 0 {
		what := text.Safe(uris[0])
		if len(uris) > 1 {
			what = fmt.Sprintf("any of its %d resource_links (%s)", len(uris), text.Safe(strings.Join(uris, ", ")))
		}
		m.notify(false, fmt.Sprintf("no resources/read of %s was recorded after #%d", what, from-1))
		return m
	}
	if m.timeline.OnlyMatches() && !m.timeline.isMatch(read) {
		m.timeline.SetOnlyMatches(false)
	}
	m.selectSeq(read)
	return m
}

// findRead is the first resources/read request of server at or after
// seq from whose params.uri is one of uris, or -1.
func findRead(x *tape.Index, server string, uris []string, from int) int {
	if !x.HasMethod("resources/read") {
		return -1
	}
	for i := from; i < x.Len(); i++ {
		en := x.Entry(i)
		if en.Method != "resources/read" || en.Kind != tape.KindRequest || en.Server != server {
			continue
		}
		msg, err := x.Message(i)
		if err != nil {
			continue
		}
		u := gjson.GetBytes(msg.Raw, "params.uri").String()
		for _, want := range uris {
			if u == want {
				return i
			}
		}
	}
	return -1
}

// kindPhrase names a row that is neither a request nor an answer, for the
// status line: "a notification (notifications/progress)".
func kindPhrase(en tape.Entry) string {
	switch en.Kind {
	case tape.KindNotification:
		return "a notification (" + text.Safe(en.Method) + ")"
	case tape.KindLifecycle:
		return "a transport event (" + text.Safe(en.Method) + ")"
	default:
		return "not a JSON-RPC message"
	}
}
