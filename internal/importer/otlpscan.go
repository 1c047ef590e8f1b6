package importer

// The fast path of OTLP JSON: a line in the shape tapedeck's export (and a
// collector's file exporter, for the members it uses) writes is read in
// one pass with scan.go's scanner instead of the collector's pdata decoder,
// taking only what the importer needs: ids, names, kinds, times, status,
// the resource's service.name and tapedeck.tape, the carried records (the
// bytes of their JSON strings, unescaped only when written) and the span's
// attributes as their bytes (decoded with pdata only for the spans that
// become a skeleton). It accepts only what pdata reads the same way: a
// member it does not know, a duplicate, an escape in a key, a value of
// another type (an enum by name, a number where a string is usual, bytes)
// hands the whole line back to pdata, whose reading (or error) is the old
// one. The fast path reads the same spans pdata would (TestOTLPScanAgrees).

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

type otlpScan struct {
	b     []byte
	i     int
	spans []traceSpan
}

// scanOTLPLine appends the spans of line (a whole, trimmed line) to spans;
// ok false when the line is not in the fast path's shape (spans as given).
func scanOTLPLine(line []byte, spans []traceSpan) (out []traceSpan, ok bool) {
	p := otlpScan{b: line, spans: spans}
	n := 0
	ok = p.object(func(k []byte) bool {
		if string(k) != "resourceSpans" || n > 0 {
			return false
		}
		n++
		return p.array(p.resourceSpans)
	})
	if !ok || jsonscan.SkipSpace(p.b, p.i) != len(p.b) {
		return spans, false
	}
	return p.spans, true
}

func (p *otlpScan) lit(c byte) bool {
	p.i = jsonscan.SkipSpace(p.b, p.i)
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str returns the bytes between the quotes of the string at p.i.
func (p *otlpScan) str() ([]byte, bool) {
	p.i = jsonscan.SkipSpace(p.b, p.i)
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false
	}
	e := jsonscan.StringEnd(p.b, p.i)
	if e < 0 {
		return nil, false
	}
	s := p.b[p.i+1 : e-1]
	p.i = e
	return s, true
}

// object reads an object, f reading each member's value.
func (p *otlpScan) object(f func(key []byte) bool) bool {
	if !p.lit('{') {
		return false
	}
	if p.lit('}') {
		return true
	}
	for {
		k, ok := p.str()
		if !ok || !p.lit(':') || !f(k) {
			return false
		}
		if p.lit(',') {
			continue
		}
		return p.lit('}')
	}
}

// array reads an array, f reading each element.
func (p *otlpScan) array(f func() bool) bool {
	if !p.lit('[') {
		return false
	}
	if p.lit(']') {
		return true
	}
	for {
		if !f() {
			return false
		}
		if p.lit(',') {
			continue
		}
		return p.lit(']')
	}
}

// once marks member bit in seen, false when it was seen before.
func once(seen *uint32, bit uint32) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

func (p *otlpScan) resourceSpans() bool {
	first := len(p.spans)
	var tapeName, service string
	var seen uint32
	ok := p.object(func(k []byte) bool {
		switch string(k) {
		case "resource":
			return once(&seen, 1) && p.object(func(k []byte) bool {
				if string(k) != "attributes" || !once(&seen, 2) {
					return false
				}
				var sawTape, sawService bool
				return p.keyValues(func(key []byte, kind string, val []byte) bool {
					var dst *string
					switch {
					case string(key) == "tapedeck.tape" && !sawTape:
						sawTape, dst = true, &tapeName
					case string(key) == "service.name" && !sawService:
						sawService, dst = true, &service
					default:
						return true
					}
					if kind != "stringValue" {
						return false // AsString of another type: pdata's
					}
					s, ok := jsonText(val[1 : len(val)-1])
					*dst = s
					return ok
				})
			})
		case "scopeSpans":
			return once(&seen, 4) && p.array(p.scopeSpans)
		case "schemaUrl":
			_, ok := p.str()
			return once(&seen, 8) && ok
		}
		return false
	})
	for i := first; i < len(p.spans); i++ {
		p.spans[i].tape, p.spans[i].service = tapeName, service
	}
	return ok
}

func (p *otlpScan) scopeSpans() bool {
	var seen uint32
	return p.object(func(k []byte) bool {
		switch string(k) {
		case "scope":
			return once(&seen, 1) && p.object(func(k []byte) bool {
				switch string(k) {
				case "name":
					_, ok := p.str()
					return once(&seen, 2) && ok
				case "version":
					_, ok := p.str()
					return once(&seen, 4) && ok
				}
				return false
			})
		case "spans":
			return once(&seen, 8) && p.array(p.span)
		case "schemaUrl":
			_, ok := p.str()
			return once(&seen, 16) && ok
		}
		return false
	})
}

func (p *otlpScan) span() bool {
	epoch := time.Unix(0, 0).UTC() // a time not given: zero, as pdata's AsTime
	s := traceSpan{start: epoch, end: epoch}
	var seen uint32
	ok := p.object(func(k []byte) bool {
		switch string(k) {
		case "traceId":
			id, ok := p.id(16)
			s.traceID = id
			return once(&seen, 1) && ok
		case "spanId":
			id, ok := p.id(8)
			s.spanID = id
			return once(&seen, 2) && ok
		case "parentSpanId":
			id, ok := p.id(8)
			s.parentID = id
			return once(&seen, 4) && ok
		case "name":
			raw, ok := p.str()
			if ok {
				s.name, ok = jsonText(raw)
			}
			return once(&seen, 8) && ok
		case "kind":
			n, ok := p.smallInt()
			switch ptrace.SpanKind(n) {
			case ptrace.SpanKindClient:
				s.kind = "client"
			case ptrace.SpanKindServer:
				s.kind = "server"
			case ptrace.SpanKindInternal:
				s.kind = "internal"
			}
			return once(&seen, 16) && ok
		case "startTimeUnixNano":
			t, ok := p.time()
			s.start = t
			return once(&seen, 32) && ok
		case "endTimeUnixNano":
			t, ok := p.time()
			s.end = t
			return once(&seen, 64) && ok
		case "attributes":
			start := jsonscan.SkipSpace(p.b, p.i)
			if !p.keyValues(nil) {
				return false
			}
			s.attrsRaw = p.b[start:p.i]
			return once(&seen, 128)
		case "events":
			return once(&seen, 256) && p.array(func() bool { return p.event(&s) })
		case "status":
			return once(&seen, 512) && p.object(func(k []byte) bool {
				switch string(k) {
				case "message":
					raw, ok := p.str()
					if ok {
						s.statusMessage, ok = jsonText(raw)
					}
					return once(&seen, 1024) && ok
				case "code":
					n, ok := p.smallInt()
					s.failed = ptrace.StatusCode(n) == ptrace.StatusCodeError
					return once(&seen, 2048) && ok
				}
				return false
			})
		}
		return false
	})
	if !ok {
		return false
	}
	if s.attrsRaw == nil {
		s.attrs = map[string]any{} // AsRaw of no attributes
	}
	p.spans = append(p.spans, s)
	return true
}

// event reads a span event; a tapedeck.record one with an int seq and a
// string record (their first occurrences, as Map.Get) is carried.
func (p *otlpScan) event(s *traceSpan) bool {
	var seen uint32
	var name []byte
	var rec carriedRecord
	var sawSeq, sawRec, seqInt, recStr bool
	ok := p.object(func(k []byte) bool {
		switch string(k) {
		case "timeUnixNano":
			_, ok := p.time()
			return once(&seen, 1) && ok
		case "name":
			var ok bool
			name, ok = p.str()
			return once(&seen, 2) && ok
		case "attributes":
			return once(&seen, 4) && p.keyValues(func(key []byte, kind string, val []byte) bool {
				switch {
				case string(key) == recordSeqAttr && !sawSeq:
					sawSeq = true
					if kind == "intValue" {
						n, err := strconv.ParseInt(string(val[1:len(val)-1]), 10, 64)
						if val[0] != '"' || err != nil {
							return false
						}
						rec.seq, seqInt = n, true
					}
				case string(key) == recordAttr && !sawRec:
					sawRec = true
					if kind == "stringValue" {
						rec.raw, recStr = val[1:len(val)-1], true
					}
				}
				return true
			})
		}
		return false
	})
	if !ok {
		return false
	}
	for _, c := range name {
		if c == '\\' {
			return false // an escaped name: pdata's
		}
	}
	if string(name) == recordEvent && seqInt && recStr {
		s.records = append(s.records, rec)
	}
	return true
}

// keyValues reads an array of KeyValue ({"key": string, "value":
// AnyValue}, each once), calling f (when not nil) with each key's bytes,
// the kind of its value (the AnyValue's one member) and that member's
// value.
func (p *otlpScan) keyValues(f func(key []byte, kind string, val []byte) bool) bool {
	return p.array(func() bool {
		var key, val []byte
		var kind string
		var seen uint32
		ok := p.object(func(k []byte) bool {
			switch string(k) {
			case "key":
				var ok bool
				key, ok = p.str()
				return once(&seen, 1) && ok
			case "value":
				var ok bool
				kind, val, ok = p.anyValue(0)
				return once(&seen, 2) && ok
			}
			return false
		})
		if !ok || seen != 3 {
			return false
		}
		for _, c := range key {
			if c == '\\' {
				return false
			}
		}
		return f == nil || f(key, kind, val)
	})
}

// anyValue reads an AnyValue of one member (or none): a string, an
// integer as a string of digits, a number, a bool, a kvlist or an array.
func (p *otlpScan) anyValue(depth int) (kind string, val []byte, ok bool) {
	if depth > 64 {
		return "", nil, false
	}
	n := 0
	ok = p.object(func(k []byte) bool {
		if n++; n > 1 {
			return false
		}
		start := jsonscan.SkipSpace(p.b, p.i)
		switch string(k) {
		case "stringValue":
			kind = "stringValue"
			_, ok := p.str()
			val = p.b[start:p.i]
			return ok
		case "intValue":
			kind = "intValue"
			raw, ok := p.str()
			val = p.b[start:p.i]
			if !ok {
				return false
			}
			_, err := strconv.ParseInt(string(raw), 10, 64)
			return err == nil
		case "doubleValue":
			kind = "doubleValue"
			e := jsonscan.NumberEnd(p.b, start)
			if e < 0 {
				return false
			}
			p.i = e
			_, err := strconv.ParseFloat(string(p.b[start:e]), 64)
			return err == nil
		case "boolValue":
			kind = "boolValue"
			e := literal(p.b, start, "true")
			if e < 0 {
				e = literal(p.b, start, "false")
			}
			if e < 0 {
				return false // p.i stays where the value was to be
			}
			p.i = e
			return true
		case "kvlistValue", "arrayValue":
			kind = string(k)
			var m int
			return p.object(func(k []byte) bool {
				if string(k) != "values" || m > 0 {
					return false
				}
				m++
				if kind == "kvlistValue" {
					return p.keyValuesAt(depth + 1)
				}
				return p.array(func() bool { _, _, ok := p.anyValue(depth + 1); return ok })
			})
		}
		return false
	})
	return kind, val, ok
}

func (p *otlpScan) keyValuesAt(depth int) bool {
	return p.array(func() bool {
		var seen uint32
		ok := p.object(func(k []byte) bool {
			switch string(k) {
			case "key":
				_, ok := p.str()
				return once(&seen, 1) && ok
			case "value":
				_, _, ok := p.anyValue(depth)
				return once(&seen, 2) && ok
			}
			return false
		})
		return ok && seen == 3
	})
}

// id reads a trace or span id of n bytes: lowercase hex, or "" (none).
func (p *otlpScan) id(n int) (string, bool) {
	raw, ok := p.str()
	if !ok || len(raw) != 0 && len(raw) != 2*n {
		return "", false
	}
	zero := true
	for _, c := range raw {
		if !(c-'0' < 10 || c-'a' < 6) {
			return "", false
		}
		zero = zero && c == '0'
	}
	if zero {
		return "", true
	}
	return string(raw), true
}

// smallInt reads an enum given as a number: 0 to 9.
func (p *otlpScan) smallInt() (int, bool) {
	p.i = jsonscan.SkipSpace(p.b, p.i)
	if p.i >= len(p.b) || !isDigit(p.b[p.i]) {
		return 0, false
	}
	n := int(p.b[p.i] - '0')
	p.i++
	if p.i < len(p.b) && (isDigit(p.b[p.i]) || p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	return n, true
}

// time reads a Unix time in nanoseconds, a string of digits.
func (p *otlpScan) time() (time.Time, bool) {
	raw, ok := p.str()
	if !ok || len(raw) == 0 {
		return time.Time{}, false
	}
	for _, c := range raw {
		if !isDigit(c) {
			return time.Time{}, false
		}
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, int64(n)).UTC(), true
}

// jsonText is the text of a string's bytes between its quotes (checked by
// jsonscan.StringEnd) as pdata's decoder (json-iterator) reads it: bytes other
// than escapes as they are (invalid UTF-8 included).
func jsonText(raw []byte) (string, bool) {
	for _, c := range raw {
		if c == '\\' {
			return string(unescapeJSON(nil, raw)), true
		}
	}
	return string(raw), true
}

// unescapeJSON appends the text of raw, a JSON string's bytes between its
// quotes checked by jsonscan.StringEnd, to dst as json-iterator decodes it: a
// lone surrogate or a bad pair as U+FFFD (and the second of a bad pair as
// itself).
func unescapeJSON(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		k := bytes.IndexByte(raw[i:], '\\')
		if k < 0 {
			dst = append(dst, raw[i:]...)
			break
		}
		j := i + k
		dst = append(dst, raw[i:j]...)
		i = j + 2
		switch c := raw[j+1]; c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := jsonscan.Hex4(raw[j+2 : j+6])
			i = j + 6
			if !utf16.IsSurrogate(r) {
				dst = utf8.AppendRune(dst, r)
				continue
			}
			if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				r2 := jsonscan.Hex4(raw[i+2 : i+6])
				i += 6
				if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
					dst = utf8.AppendRune(dst, c)
				} else {
					dst = utf8.AppendRune(utf8.AppendRune(dst, r), r2)
				}
				continue
			}
			dst = utf8.AppendRune(dst, r) // U+FFFD; an escape after it is read next
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
	}
	return dst
}
