package tui

// The summary column: what went wrong or what was asked, on the row, so a
// failing tape reads without opening each message.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// summaryMax bounds a summary's length before the column cuts it: a frame
// never formats a 30 MB result.
const summaryMax = 240

// summarize returns the summary of message e (raw is its line, method its
// request's method for a response):
//   - a JSON-RPC error: its code and message;
//   - a tool error: the tool's first line of text;
//   - another response: "pong" for a ping, the values of a completion, the
//     model and text of a sampling answer, the statuses of tasks/list, a
//     count for a list, else its first line of text or the result, compact;
//   - a call: its arguments (compact JSON); a completion what it completes
//     and the text so far; a sampling request its first message, model
//     hints and token limit; another request its params;
//   - a notification: its params (progress as "1/3", a log line as
//     "level: data", a resource's update as its URI), "client ready" for
//     initialized, "client's roots changed" for roots/list_changed;
//   - a lifecycle record: the stderr line, "POST 202" or "GET 200 (SSE)"
//     for an HTTP exchange, "401 challenge: resource_metadata=…" for an
//     authorization challenge, the document's resource and authorization
//     server for protected resource metadata, the command or reason of a
//     start or close;
//   - an invalid line: its text.
func summarize(e tape.Entry, raw []byte, method string) string {
	switch e.Kind {
	case tape.KindInvalid:
		if e.Problem != "" {
			return oneLine(e.Problem + ": " + string(raw))
		}
		return oneLine(string(raw))
	case tape.KindResponse:
		return responseSummary(raw, method)
	case tape.KindRequest:
		return requestSummary(raw, method)
	case tape.KindNotification:
		return notificationSummary(raw, e.Method)
	case tape.KindLifecycle:
		return lifecycleSummary(raw, e.Method)
	}
	return ""
}

func responseSummary(raw []byte, method string) string {
	if er := gjson.GetBytes(raw, "error"); er.Exists() {
		code := er.Get("code").Raw
		if name := tape.ErrorName(er.Get("code").Int()); name != "" {
			code += " " + name
		}
		s := strings.TrimSpace(code + " " + er.Get("message").String())
		if d := er.Get("data"); d.Exists() {
			s += " · " + compact(d.Raw)
		}
		return oneLine(s)
	}
	res := gjson.GetBytes(raw, "result")
	if !res.Exists() {
		return ""
	}
	switch {
	case method == "ping" && tape.ParamsLine([]byte(res.Raw), summaryMax) == "":
		return "pong" // an empty result: the peer is alive
	case method == "completion/complete" && res.Get("completion.values").IsArray():
		return completionSummary(res.Get("completion"))
	case method == "tasks/list" && res.Get("tasks").IsArray():
		return taskListSummary(res.Get("tasks").Array())
	case (method == "sampling/createMessage" || method == "tasks/result") && res.Get("model").Type == gjson.String && res.Get("role").Exists():
		// A CreateMessageResult, answered at once or as a task's result.
		s := "model " + res.Get("model").String()
		if text := firstText(res); text != "" {
			s += " · " + text
		}
		return oneLine(s)
	}
	if text := firstText(res); text != "" {
		return oneLine(text)
	}
	for _, list := range []string{"tools", "prompts", "resources", "resourceTemplates", "roots", "messages", "contents"} {
		if a := res.Get(list); a.IsArray() {
			n := len(a.Array())
			return fmt.Sprintf("%d %s", n, list)
		}
	}
	if v := res.Get("protocolVersion"); v.Exists() && method == "initialize" {
		return oneLine(strings.TrimSpace(res.Get("serverInfo.name").String()+" "+res.Get("serverInfo.version").String()) + " · " + v.String())
	}
	return tape.ParamsLine([]byte(res.Raw), summaryMax)
}

// firstText returns the first text of a result's content, or its
// structured content's compact JSON.
func firstText(res gjson.Result) string {
	for _, c := range res.Get("content").Array() {
		if t := c.Get("text"); t.Exists() {
			return t.String()
		}
		if c.Get("type").String() == "resource_link" {
			s := "resource_link " + c.Get("uri").String()
			if n := c.Get("name").String(); n != "" {
				s += " (" + n + ")"
			}
			return s
		}
		if ty := c.Get("type").String(); ty != "" {
			return "(" + ty + ")"
		}
	}
	if sc := res.Get("structuredContent"); sc.Exists() {
		return compact(sc.Raw)
	}
	return ""
}

func requestSummary(raw []byte, method string) string {
	p := gjson.GetBytes(raw, "params")
	switch tape.TargetKind(method) {
	case tape.TargetTool, tape.TargetPrompt:
		if a := p.Get("arguments"); a.Exists() {
			return compact(a.Raw)
		}
		return ""
	case tape.TargetResource:
		return "" // the target column has the URI
	}
	if method == "elicitation/create" && p.Get("mode").String() == "url" {
		// URL mode (2025-11-25): the user goes to a page; the answer
		// says only whether they agreed to.
		return oneLine("url " + p.Get("url").String() + " · " + p.Get("message").String())
	}
	switch method {
	case "completion/complete":
		return completeSummary(p)
	case "sampling/createMessage":
		return samplingSummary(p)
	}
	if method == "initialize" {
		return oneLine(strings.TrimSpace(p.Get("clientInfo.name").String()+" "+p.Get("clientInfo.version").String()) + " · " + p.Get("protocolVersion").String())
	}
	if method == tape.MethodListen {
		if what, _, ok := tape.ListenFilter(raw); ok {
			return oneLine("listen: " + listenWords(what))
		}
	}
	if !p.Exists() {
		return ""
	}
	return tape.ParamsLine([]byte(p.Raw), summaryMax)
}

func notificationSummary(raw []byte, method string) string {
	p := gjson.GetBytes(raw, "params")
	switch method {
	case "notifications/progress":
		s := p.Get("progress").Raw
		if t := p.Get("total"); t.Exists() {
			s += "/" + t.Raw
		}
		if m := p.Get("message"); m.Exists() {
			s += " " + m.String()
		}
		return oneLine(s)
	case "notifications/message":
		d := p.Get("data")
		ds := d.String()
		if d.IsObject() || d.IsArray() {
			ds = compact(d.Raw)
		}
		return oneLine(p.Get("level").String() + ": " + ds)
	case "notifications/cancelled":
		return oneLine("request " + p.Get("requestId").Raw + " " + p.Get("reason").String())
	case "notifications/initialized":
		return "client ready"
	case "notifications/roots/list_changed":
		return "client's roots changed"
	case "notifications/resources/updated":
		if u := p.Get("uri"); u.Type == gjson.String {
			return oneLine(u.String())
		}
	case "notifications/elicitation/complete":
		return oneLine("elicitation " + p.Get("elicitationId").String() + " complete")
	case tape.MethodListenAck:
		if what, sub, ok := tape.ListenFilter(raw); ok {
			s := "subscribed: " + listenWords(what)
			if sub != "" {
				s = "subscription " + sub + " " + s
			}
			return oneLine(s)
		}
	}
	if !p.Exists() {
		return ""
	}
	return tape.ParamsLine([]byte(p.Raw), summaryMax)
}

// completeSummary is a completion/complete request's row: what it
// completes and the argument typed so far, `prompt "greet" arg
// "name"="Jo"`, with the arguments already given (2025-06-18's context).
func completeSummary(p gjson.Result) string {
	ref := p.Get("ref")
	s := strings.TrimPrefix(ref.Get("type").String(), "ref/")
	if n := ref.Get("name"); n.Exists() {
		s += " " + strconv.Quote(n.String())
	} else if u := ref.Get("uri"); u.Exists() {
		s += " " + u.String()
	}
	a := p.Get("argument")
	s += " arg " + strconv.Quote(a.Get("name").String()) + "=" + strconv.Quote(a.Get("value").String())
	if c := p.Get("context.arguments"); c.IsObject() {
		var given []string
		c.ForEach(func(k, v gjson.Result) bool {
			given = append(given, strconv.Quote(k.String())+"="+strconv.Quote(v.String()))
			return true
		})
		if len(given) > 0 {
			s += " · given " + strings.Join(given, " ")
		}
	}
	return oneLine(strings.TrimSpace(s))
}

// completionSummary is a completion/complete answer's row: "2 values:
// Sales, Support", "3 of 40 values: …" when the server has more.
func completionSummary(c gjson.Result) string {
	var vals []string
	for _, v := range c.Get("values").Array() {
		vals = append(vals, v.String())
	}
	s := text.Plural(len(vals), "value")
	if t := c.Get("total"); t.Exists() && t.Int() > int64(len(vals)) {
		s = fmt.Sprintf("%d of %s", len(vals), text.Plural(int(t.Int()), "value"))
	} else if c.Get("hasMore").Bool() {
		s += " (more)"
	}
	if len(vals) > 0 {
		s += ": " + strings.Join(vals, ", ")
	}
	return oneLine(s)
}

// taskStatuses are the task statuses in the order a tasks/list row counts
// them: running first, then ended.
var taskStatuses = []string{"working", "input_required", "completed", "failed", "cancelled"}

// taskListSummary is a tasks/list answer's row: "3 tasks (2 working, 1
// completed)".
func taskListSummary(tasks []gjson.Result) string {
	n := map[string]int{}
	var other []string
	for _, t := range tasks {
		st := t.Get("status").String()
		if n[st]++; n[st] == 1 && !slices.Contains(taskStatuses, st) {
			other = append(other, st)
		}
	}
	var parts []string
	for _, st := range append(slices.Clone(taskStatuses), other...) {
		if n[st] > 0 {
			if st == "" {
				st = "no status"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
		}
	}
	s := text.Plural(len(tasks), "task")
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return oneLine(s)
}

// samplingSummary is a sampling/createMessage request's row: the first
// message's role and text, the model the server prefers, the token limit:
// `user: "Hello" · 2 messages · models claude · max 10 tokens`.
func samplingSummary(p gjson.Result) string {
	msgs := p.Get("messages").Array()
	var parts []string
	if len(msgs) > 0 {
		m := msgs[0]
		body := "(" + m.Get("content.type").String() + ")"
		if c := m.Get("content"); c.IsArray() { // 2025-11-25: a list of blocks
			body = "(" + c.Get("0.type").String() + ")"
			if t := c.Get("0.text"); t.Exists() {
				body = strconv.Quote(t.String())
			}
		} else if t := c.Get("text"); t.Exists() {
			body = strconv.Quote(t.String())
		}
		parts = append(parts, m.Get("role").String()+": "+body)
	}
	if len(msgs) != 1 {
		parts = append(parts, text.Plural(len(msgs), "message"))
	}
	var hints []string
	for _, h := range p.Get("modelPreferences.hints").Array() {
		if n := h.Get("name").String(); n != "" {
			hints = append(hints, n)
		}
	}
	if len(hints) > 0 {
		parts = append(parts, "models "+strings.Join(hints, ", "))
	}
	if mt := p.Get("maxTokens"); mt.Exists() {
		parts = append(parts, "max "+text.Plural(int(mt.Int()), "token"))
	}
	return oneLine(strings.Join(parts, " · "))
}

// listenWords is a subscriptions/listen filter (tape.ListenFilter) on one
// line: the lists whose list_changed it takes, then the resources it
// watches.
func listenWords(what []string) string {
	var lists, rest []string
	for _, w := range what {
		if strings.HasPrefix(w, "updates of ") {
			rest = append(rest, w)
		} else {
			lists = append(lists, w)
		}
	}
	var parts []string
	if len(lists) > 0 {
		parts = append(parts, strings.Join(lists, ", ")+" list_changed")
	}
	parts = append(parts, rest...)
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

func lifecycleSummary(raw []byte, method string) string {
	if status, ok := tape.Challenge(raw); ok && method == tape.MethodHTTPExchange {
		return challengeSummary(status, gjson.GetBytes(raw, "params"))
	}
	if ex, ok := tape.ParseHTTPExchange(method, raw); ok {
		return exchangeSummary(ex)
	}
	p := gjson.GetBytes(raw, "params")
	switch method {
	case tape.MethodStderr:
		return oneLine(firstLine(p.Get("text").String()))
	case tape.MethodHTTPMetadata:
		return metadataSummary(p)
	case tape.MethodHTTPAuth:
		return authServerSummary(p)
	case tape.MethodStart:
		if u := p.Get("upstream"); u.Exists() {
			return oneLine("proxy " + p.Get("listen").String() + " → " + u.String())
		}
		parts := []string{p.Get("command").String()}
		for _, a := range p.Get("args").Array() {
			parts = append(parts, a.String())
		}
		s := strings.Join(parts, " ")
		if e := p.Get("error"); e.Exists() {
			s += " · " + e.String()
		}
		return oneLine(s)
	case tape.MethodClose:
		var parts []string
		for _, k := range []string{"reason", "code", "signal", "error", "undelivered", "abandoned"} {
			if v := p.Get(k); v.Exists() {
				parts = append(parts, k+" "+v.String())
			}
		}
		return oneLine(strings.Join(parts, " · "))
	}
	if !p.Exists() {
		return ""
	}
	return compact(p.Raw)
}

// challengeSummary is a recorded 401 or 403's row: "401 challenge:
// resource_metadata=URL · error=invalid_token", "403 step-up: scope=… ·
// error=insufficient_scope · resource_metadata=URL", or the header as it
// was when it names no resource_metadata (as the spec requires it to).
func challengeSummary(status int, p gjson.Result) string {
	kind := "challenge"
	if status == 403 {
		kind = "step-up"
	}
	var parts []string
	for _, v := range p.Get(tape.ParamWWWAuthenticate).Array() {
		cp := tape.ChallengeParams(v.String())
		meta, ok := cp["resource_metadata"]
		if !ok {
			parts = append(parts, "no resource_metadata: "+v.String())
			continue
		}
		if sc, ok := cp["scope"]; ok && status == 403 {
			parts = append(parts, `scope="`+sc+`"`)
		}
		if e, ok := cp["error"]; ok {
			parts = append(parts, "error="+e)
		}
		if status == 403 {
			parts = append(parts, "resource_metadata="+meta)
		} else {
			parts = append([]string{"resource_metadata=" + meta}, parts...)
		}
	}
	return oneLine(fmt.Sprintf("%d %s: %s", status, kind, strings.Join(parts, " · ")))
}

// metadataSummary is a protected resource metadata document's row:
// "metadata /.well-known/oauth-protected-resource/mcp · resource URL ·
// authorization server URL · scopes a b", or the status it was fetched
// with when that was no 200.
// authServerSummary is an authorization server exchange through the proxy
// (record --proxy-auth): "token POST 200 · /tapedeck-auth/1/token",
// "authorization GET 302 → http://127.0.0.1:9/callback".
func authServerSummary(p gjson.Result) string {
	s := strings.TrimSpace(p.Get("endpoint").String() + " " + p.Get("method").String() + " " + p.Get("status").Raw)
	switch {
	case p.Get("error").Exists():
		s += " · " + p.Get("error").String()
	case p.Get("response.location.url").Exists():
		s += " → " + p.Get("response.location.url").String()
	default:
		s += " · " + p.Get("path").String()
	}
	return oneLine(s)
}

func metadataSummary(p gjson.Result) string {
	s := "metadata " + p.Get("path").String()
	if st := p.Get("status").Int(); st != 200 {
		return oneLine(fmt.Sprintf("%s · %d", s, st))
	}
	d := p.Get("document")
	if r := d.Get("resource"); r.Exists() {
		s += " · resource " + r.String()
	}
	var as, sc []string
	for _, a := range d.Get("authorization_servers").Array() {
		as = append(as, a.String())
	}
	for _, a := range d.Get("scopes_supported").Array() {
		sc = append(sc, a.String())
	}
	if len(as) > 0 {
		s += " · authorization server " + strings.Join(as, " ")
	}
	if len(sc) > 0 {
		s += " · scopes " + strings.Join(sc, " ")
	}
	return oneLine(s)
}

// compact returns JSON text on one line, cut to summaryMax; an empty
// object or array says nothing and is left out.
func compact(s string) string {
	if t := strings.TrimSpace(s); t == "{}" || t == "[]" {
		return ""
	}
	if len(s) > 8*summaryMax {
		s = s[:8*summaryMax]
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return oneLine(s)
	}
	return oneLine(b.String())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// oneLine folds whitespace runs (newlines included) to one space and cuts
// to summaryMax runes; control characters become spaces, so a summary
// never moves the terminal's cursor.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == ' ' || r >= 0x80 && r < 0xa0 {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
				n++
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
		if n++; n >= summaryMax {
			b.WriteString("…")
			break
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// exchangeSummary is an HTTP exchange's summary: "GET 200 (SSE)".
func exchangeSummary(ex tape.HTTPExchange) string {
	s := ex.Method
	if ex.Status != 0 {
		s += " " + strconv.Itoa(ex.Status)
	}
	if ex.SSE {
		s += " (SSE)"
	}
	if ex.LastEventID != "" {
		s += " resumed after " + ex.LastEventID
	}
	if ex.Body != "" {
		s += " · " + ex.Body
	}
	return oneLine(s)
}
