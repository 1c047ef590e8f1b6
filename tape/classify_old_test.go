package tape

// The classifier as it was before the index's fast paths (issue 23), kept
// verbatim to check that the new one reads every line the same way.

import (
	"bytes"
	"fmt"
	"time"
	"unicode/utf8"
)

type oldClassifier struct {
	stack []byte
	msgs  []msgInfo
	wire  bool
}

func (c *oldClassifier) oldClassify(b []byte) []msgInfo {
	c.msgs = c.msgs[:0]
	i := skipWS(b, 0)
	if i == len(b) {
		return c.msgs
	}
	invalid := func(problem string) []msgInfo {
		c.msgs = append(c.msgs[:0], msgInfo{start: 0, end: len(b), kind: KindInvalid, problem: problem})
		return c.msgs
	}
	bad := !utf8.Valid(b)
	switch b[i] {
	case '{':
		m, end, err := c.oldObject(b, i)
		if err != nil {
			out := invalid(err.Error())
			out[0].dir, out[0].server, out[0].ts, out[0].when = m.dir, m.server, m.ts, m.when // known when only the meaning was wrong
			return out
		}
		if j := skipWS(b, end); j != len(b) {
			return invalid(fmt.Sprintf("expected end of line after the message at column %d, found %s", j+1, found(b, j)))
		}
		m.badUTF8 = bad
		c.msgs = append(c.msgs, m)
	case '[':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return invalid("expected messages in the batch, found an empty array")
		}
		for {
			if i >= len(b) || b[i] != '{' {
				return invalid(fmt.Sprintf("expected a JSON-RPC object in the batch at column %d, found %s", i+1, found(b, i)))
			}
			m, end, err := c.oldObject(b, i)
			if err != nil {
				return invalid(err.Error())
			}
			m.badUTF8 = bad
			c.msgs = append(c.msgs, m)
			i = skipWS(b, end)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == ']' {
				if j := skipWS(b, i+1); j != len(b) {
					return invalid(fmt.Sprintf("expected end of line after the batch at column %d, found %s", j+1, found(b, j)))
				}
				break
			}
			return invalid(fmt.Sprintf("expected ',' or ']' in the batch at column %d, found %s", i+1, found(b, i)))
		}
	default:
		return invalid(fmt.Sprintf("expected a JSON-RPC object or batch at column %d, found %s", i+1, found(b, i)))
	}
	return c.msgs
}

func (c *oldClassifier) oldObject(b []byte, i int) (msgInfo, int, error) {
	m := msgInfo{start: i}
	var params, result, meta, alt span
	var hasResult, hasError bool
	end, err := c.oldMembers(b, i, func(key []byte, v span) {
		switch string(key) {
		case "jsonrpc":
			m.version = v
		case "id":
			m.id = v
		case "method":
			m.method = v
		case "params":
			params = v
		case "result":
			hasResult, result = true, v
		case "error":
			hasError = true
		case "_meta":
			meta = v
		case AltMetaKey:
			alt = v
		}
	})
	if err != nil {
		return m, 0, err
	}
	if alt.ok() { // the message has a _meta of its own (see AltMetaKey)
		meta = alt
		m.altMeta = true // a field added since: what the index says of it
	}
	m.end = end
	m.noVersion = string(m.version.in(b)) != `"2.0"`
	if !c.wire {
		c.oldMeta(b, &m, meta)
	}
	if m.method.ok() && b[m.method.start] != '"' {
		return m, 0, fmt.Errorf("expected \"method\" to be a string, found %s", found(b, m.method.start))
	}
	if m.id.ok() {
		if err := idProblem(b, m.id, m.method.ok()); err != nil {
			return m, 0, err
		}
		if id := m.id.in(b); id[0] != '"' && bytes.ContainsAny(id, ".eE") {
			m.notes = append(m.notes, fmt.Sprintf("id %s is not an integer: MCP ids are strings or integers", id))
		}
	}
	method := []byte(nil)
	if m.method.ok() {
		method = m.method.in(b)
	}
	switch {
	case m.method.ok() && (len(method) > 1 && method[1] == '$' || bytes.Equal(m.dir.in(b), []byte(`"lifecycle"`))):
		m.kind = KindLifecycle
	case m.method.ok() && m.id.ok():
		m.kind = KindRequest
	case m.method.ok():
		m.kind = KindNotification
	case m.id.ok() && (hasResult || hasError):
		m.kind = KindResponse
		m.isError = hasError
		if hasResult && hasError {
			m.notes = append(m.notes, `expected "result" or "error" in a response, found both; read as an error`)
		}
	case hasResult || hasError:
		return m, 0, fmt.Errorf("expected \"id\" in a response, found none")
	default:
		return m, 0, fmt.Errorf("expected a JSON-RPC message (\"method\", or \"id\" with \"result\" or \"error\"), found neither")
	}
	if params.ok() && b[params.start] == '{' {
		cancel := string(method) == `"notifications/cancelled"`
		_, _ = c.oldMembers(b, params.start, func(key []byte, v span) {
			switch {
			case cancel && string(key) == "requestId":
				m.cancels = v
			case string(key) == "inputResponses":
				m.inputResp = true
			}
		})
	}
	if m.kind == KindResponse && result.ok() && b[result.start] == '{' {
		_, _ = c.oldMembers(b, result.start, func(key []byte, v span) {
			switch string(key) {
			case "resultType":
				m.inputReq = string(v.in(b)) == `"input_required"`
			case "isError":
				m.toolError = string(v.in(b)) == "true"
			}
		})
	}
	return m, end, nil
}

func (c *oldClassifier) oldMeta(b []byte, m *msgInfo, meta span) {
	if !meta.ok() {
		m.notes = append(m.notes, "no _meta: direction, server and time unknown")
		return
	}
	if b[meta.start] != '{' {
		m.notes = append(m.notes, fmt.Sprintf("expected _meta to be an object, found %s", found(b, meta.start)))
		return
	}
	_, _ = c.oldMembers(b, meta.start, func(key []byte, v span) {
		switch string(key) {
		case "inReplyTo":
			m.replyTo = v
		case "batch":
			m.batch = v
		case "exchange":
			m.exchange = v
		case MetaInjected:
			m.injected = true
			m.dropped = bytes.Contains(v.in(b), []byte(`"dropped":true`))
		}
		if b[v.start] != '"' {
			switch k := string(key); k {
			case "dir", "server", "ts", "session":
				m.notes = append(m.notes, fmt.Sprintf("expected _meta.%s to be a string, found %s", k, found(b, v.start)))
			}
			return
		}
		switch string(key) {
		case "dir":
			m.dir = v
		case "server":
			m.server = v
		case "ts":
			m.ts = v
		case "session":
			m.session = v
		}
	})
	switch string(m.dir.in(b)) { // no allocation for the comparison
	case `"send"`, `"recv"`, `"lifecycle"`:
	case "":
		if !hasNote(m.notes, "_meta.dir") {
			m.notes = append(m.notes, "no _meta.dir: direction unknown")
		}
	default:
		m.notes = append(m.notes, fmt.Sprintf(`expected _meta.dir "send", "recv" or "lifecycle", found %s`, m.dir.in(b)))
	}
	if !m.server.ok() && !hasNote(m.notes, "_meta.server") {
		m.notes = append(m.notes, "no _meta.server")
	}
	if m.ts.ok() {
		var ok bool
		if m.when, ok = parseTS(m.ts.in(b)); !ok {
			m.notes = append(m.notes, fmt.Sprintf("expected _meta.ts in RFC 3339, found %s", m.ts.in(b)))
		} else if u := m.when.Unix(); u < minUnix || u >= maxUnix {
			m.notes = append(m.notes, fmt.Sprintf("_meta.ts %s is outside the years %d to %d: time unknown", m.ts.in(b), minYear, maxYear))
			m.when = time.Time{}
		}
	} else if !hasNote(m.notes, "_meta.ts") {
		m.notes = append(m.notes, "no _meta.ts: time unknown")
	}
}

func (c *oldClassifier) oldMembers(b []byte, i int, fn func(key []byte, v span)) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, fmt.Errorf("expected a member name at column %d, found %s", i+1, found(b, i))
		}
		kend, err := oldSkipString(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i+1 : kend-1]
		i = skipWS(b, kend)
		if i >= len(b) || b[i] != ':' {
			return 0, fmt.Errorf("expected ':' after member %q at column %d, found %s", key, i+1, found(b, i))
		}
		i = skipWS(b, i+1)
		vend, err := c.oldSkipValue(b, i)
		if err != nil {
			return 0, fmt.Errorf("member %q: %w", key, err)
		}
		fn(key, span{i, vend})
		i = skipWS(b, vend)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return 0, fmt.Errorf("expected ',' or '}' after member %q at column %d, found %s", key, i+1, found(b, i))
	}
}

func (c *oldClassifier) oldSkipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("expected a value at column %d, found end of line", i+1)
	}
	switch b[i] {
	case '"':
		return oldSkipString(b, i)
	case '{', '[':
	default:
		j := i
		for j < len(b) && !isDelim(b[j]) {
			j++
		}
		if j == i || !bytes.ContainsRune([]byte("-0123456789tfn"), rune(b[i])) {
			return 0, fmt.Errorf("expected a value at column %d, found %s", i+1, found(b, i))
		}
		return j, nil
	}
	start := i
	stack := c.stack[:0]
	for i < len(b) {
		switch ch := b[i]; ch {
		case '"':
			j, err := oldSkipString(b, i)
			if err != nil {
				c.stack = stack
				return 0, err
			}
			i = j
			continue
		case '{', '[':
			stack = append(stack, ch)
		case '}', ']':
			open := byte('{')
			if ch == ']' {
				open = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != open {
				c.stack = stack
				return 0, fmt.Errorf("unbalanced %q at column %d in the value starting at column %d", ch, i+1, start+1)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				c.stack = stack
				return i + 1, nil
			}
		}
		i++
	}
	c.stack = stack
	return 0, fmt.Errorf("expected the value starting at column %d to close, found end of line (%d still open)", start+1, len(stack))
}

func oldSkipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, fmt.Errorf("expected the string starting at column %d to close, found end of line", i+1)
		}
		q := j + k
		bs := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			bs++
		}
		if bs%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}
