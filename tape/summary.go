package tape

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// ParamsLine returns a message's params (or its result: any JSON object)
// on one line for people: without its "_meta" member (request metadata
// such as a 2026-07-28 client's protocol version and client info, which
// would push what matters past the cut), compacted, control characters
// as spaces, cut to max runes with "…". It returns "" for no params and
// for an empty object or array, which say nothing. Text that is not JSON is
// folded onto one line as it is. The TUI's summary column, replay's
// report and diff's unmatched calls all summarize params with it.
func ParamsLine(params []byte, max int) string {
	params = bytes.TrimSpace(params)
	if cut, first, ok := metaMember(params); ok {
		params = spliceOut(params, cut, first)
	}
	if t := string(bytes.TrimSpace(params)); t == "" || t == "{}" || t == "[]" {
		return ""
	}
	if limit := 8 * max; max > 0 && len(params) > limit {
		params = params[:limit] // too long to show whole: compacting the head is enough
	}
	var b bytes.Buffer
	if json.Compact(&b, params) == nil {
		params = b.Bytes()
	}
	out := make([]byte, 0, min(len(params), 4*max+4))
	space, n := false, 0
	for i := 0; i < len(params); {
		r, size := utf8.DecodeRune(params[i:])
		i += size
		if r < 0x20 || r == 0x7f || r == ' ' || r >= 0x80 && r < 0xa0 {
			if !space && len(out) > 0 {
				out = append(out, ' ')
				n++
			}
			space = true
			continue
		}
		space = false
		out = utf8.AppendRune(out, r)
		if n++; max > 0 && n >= max && i < len(params) {
			out = append(out, "…"...)
			break
		}
	}
	return string(bytes.TrimRight(out, " "))
}

// metaMember finds the top-level "_meta" member of the object in b: the
// span to cut (from the end of the member before it, or from the opening
// brace's inside when it is the first), as recordMetaMember does.
func metaMember(b []byte) (cut span, first, ok bool) {
	var c classifier
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return span{}, false, false
	}
	prevEnd, isFirst := i+1, true
	var meta span
	var metaFirst bool
	_, err := c.members(b, i, func(key []byte, v span) {
		if string(key) == "_meta" {
			meta, metaFirst = span{prevEnd, v.end}, isFirst
		}
		isFirst = false
		prevEnd = v.end
	})
	if err != nil || !meta.ok() {
		return span{}, false, false
	}
	return meta, metaFirst, true
}

// spliceOut returns b without the member at cut. Not first: the cut starts
// just after the previous value, so the comma before the key goes with it.
// First: the comma after it goes instead.
func spliceOut(b []byte, cut span, first bool) []byte {
	out := make([]byte, 0, len(b))
	out = append(out, b[:cut.start]...)
	rest := b[cut.end:]
	if first {
		j := skipWS(rest, 0)
		if j < len(rest) && rest[j] == ',' {
			rest = rest[j+1:]
		}
	}
	return append(out, rest...)
}
