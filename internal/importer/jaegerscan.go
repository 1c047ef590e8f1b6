package importer

// The fast path of Jaeger's query API answer: read in one pass with
// scan.go's scanner instead of encoding/json into structs, the carried
// records kept as the bytes of their JSON strings (unescaped as
// encoding/json would only when written) and the span's tags as their
// bytes (decoded by kvValue only for the spans that become a skeleton).
// It takes only what encoding/json reads the same way: a key of another
// case or with an escape, a duplicate, an "errors" member that is not
// null, a value of another type, an escaped or non-UTF-8 event name, a
// record log without its seq or line hand the whole answer back to
// jaegerDecode, whose reading (or error) is the old one
// (TestJaegerScanAgrees, FuzzJaegerScan).

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// jaegerKVRaw is a tag as its bytes, for kvValue later.
type jaegerKVRaw struct {
	key       string
	typ       string
	value     []byte
	valueNull bool
}

func scanJaeger(body []byte) ([]traceSpan, bool) {
	return scanJaegerWith(body, Options{})
}

// scanJaegerWith is scanJaeger with the spans on o.lineWorkers() cores
// (jaeger_par.go).
func scanJaegerWith(body []byte, o Options) ([]traceSpan, bool) {
	spans, ok, _ := scanJaegerPar(body, o)
	return spans, ok
}

// scanJaegerPar is scanJaegerWith, and how many segments the scan took
// from the workers (or scanned itself).
func scanJaegerPar(body []byte, o Options) (_ []traceSpan, _ bool, taken int) {
	p := otlpScan{b: body}
	jp := newJaegerPar(body, o)
	defer jp.stop()
	defer func() { taken = jp.taken }()
	var seen uint32
	ok := p.object(func(k []byte) bool {
		switch string(k) {
		case "data":
			return once(&seen, 1) && p.array(func() bool { return p.jaegerTrace(jp) })
		case "errors":
			return once(&seen, 2) && p.null()
		}
		return p.unknown(k, "data", "errors")
	})
	if !ok || jsonscan.SkipSpace(p.b, p.i) != len(p.b) {
		return nil, false, 0
	}
	return p.spans, true, 0
}

// null reads a null.
func (p *otlpScan) null() bool {
	p.i = jsonscan.SkipSpace(p.b, p.i)
	if e := literal(p.b, p.i, "null"); e >= 0 {
		p.i = e
		return true
	}
	return false
}

// unknown skips the value of a member encoding/json ignores: a key that
// matches none of the struct's fields, in any case.
func (p *otlpScan) unknown(k []byte, fields ...string) bool {
	for _, c := range k {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	for _, f := range fields {
		if strings.EqualFold(string(k), f) {
			return false
		}
	}
	p.i = jsonscan.SkipSpace(p.b, p.i)
	e := jsonscan.ValueEnd(p.b, p.i, 2)
	if e < 0 {
		return false
	}
	p.i = e
	return true
}

// plainStr reads a string with no escape and valid UTF-8: its text.
func (p *otlpScan) plainStr() (string, bool) {
	raw, ok := p.str()
	if !ok {
		return "", false
	}
	return plainText(raw)
}

func plainText(raw []byte) (string, bool) {
	for _, c := range raw {
		if c == '\\' {
			return "", false
		}
	}
	if !utf8.Valid(raw) {
		return "", false
	}
	return string(raw), true
}

// int64 reads an integer (a JSON number encoding/json puts in an int64).
func (p *otlpScan) int64() (int64, bool) {
	p.i = jsonscan.SkipSpace(p.b, p.i)
	e := jsonscan.NumberEnd(p.b, p.i)
	if e < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(p.b[p.i:e]), 10, 64)
	p.i = e
	return n, err == nil
}

type jaegerRawSpan struct {
	s         traceSpan
	processID string
}

func (p *otlpScan) jaegerTrace(jp *jaegerPar) bool {
	var spans []jaegerRawSpan
	type process struct {
		service, tape string
	}
	procs := map[string]process{}
	var seen uint32
	ok := p.object(func(k []byte) bool {
		switch string(k) {
		case "spans":
			return once(&seen, 1) && (p.null() || p.jaegerSpanArray(jp, &spans))
		case "processes":
			return once(&seen, 2) && (p.null() || p.object(func(k []byte) bool {
				id, ok := plainText(k)
				if _, dup := procs[id]; !ok || dup {
					return false
				}
				var pr process
				var seen uint32
				ok = p.null() || p.object(func(k []byte) bool {
					switch string(k) {
					case "serviceName":
						var ok bool
						pr.service, ok = p.plainStr()
						return once(&seen, 1) && ok
					case "tags":
						return once(&seen, 2) && p.jaegerTags(func(kv jaegerKVRaw) bool {
							if kv.key == "tapedeck.tape" {
								pr.tape, _ = kvValue(jaegerKV{Key: kv.key, Type: kv.typ, Value: kv.value}).(string)
							}
							return true
						})
					}
					return p.unknown(k, "serviceName", "tags")
				})
				procs[id] = pr
				return ok
			}))
		}
		return p.unknown(k, "spans", "processes")
	})
	if !ok {
		return false
	}
	for _, s := range spans {
		pr := procs[s.processID]
		s.s.service, s.s.tape = pr.service, pr.tape
		p.spans = append(p.spans, s.s)
	}
	return true
}

func (p *otlpScan) jaegerSpan() (jaegerRawSpan, bool) {
	var r jaegerRawSpan
	s := &r.s
	var startTime, duration int64
	var seen uint32
	ok := p.null() || p.object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "traceID":
			s.traceID, ok = p.plainStr()
			return once(&seen, 1) && ok
		case "spanID":
			s.spanID, ok = p.plainStr()
			return once(&seen, 2) && ok
		case "operationName":
			s.name, ok = p.plainStr()
			return once(&seen, 4) && ok
		case "references":
			return once(&seen, 8) && (p.null() || p.array(func() bool {
				var typ, id string
				var seen uint32
				ok := p.object(func(k []byte) bool {
					var ok bool
					switch string(k) {
					case "refType":
						typ, ok = p.plainStr()
						return once(&seen, 1) && ok
					case "spanID":
						id, ok = p.plainStr()
						return once(&seen, 2) && ok
					}
					return p.unknown(k, "refType", "spanID")
				})
				if typ == "CHILD_OF" {
					s.parentID = id
				}
				return ok
			}))
		case "startTime":
			startTime, ok = p.int64()
			return once(&seen, 16) && ok
		case "duration":
			duration, ok = p.int64()
			return once(&seen, 32) && ok
		case "tags":
			return once(&seen, 64) && p.jaegerTags(func(kv jaegerKVRaw) bool {
				switch kv.key {
				case "span.kind", "otel.status_code", "otel.status_description":
					v := kvValue(jaegerKV{Key: kv.key, Type: kv.typ, Value: kv.value})
					switch kv.key {
					case "span.kind":
						s.kind, _ = v.(string)
					case "otel.status_code":
						s.failed = v == "ERROR"
					default:
						s.statusMessage, _ = v.(string)
					}
				default:
					s.tagsRaw = append(s.tagsRaw, kv)
				}
				return true
			})
		case "logs":
			return once(&seen, 128) && (p.null() || p.array(func() bool { return p.jaegerLog(s) }))
		case "processID":
			r.processID, ok = p.plainStr()
			return once(&seen, 256) && ok
		}
		return p.unknown(k, "traceID", "spanID", "operationName", "references", "startTime", "duration", "tags", "logs", "processID")
	})
	s.start, s.end = time.UnixMicro(startTime).UTC(), time.UnixMicro(startTime+duration).UTC()
	return r, ok
}

// jaegerLog reads a log; a tapedeck.record one is carried (one without
// its seq or line is jaegerDecode's to refuse).
func (p *otlpScan) jaegerLog(s *traceSpan) bool {
	var name string
	var line []byte
	var seq int64 = -1
	var seen uint32
	ok := p.null() || p.object(func(k []byte) bool {
		if string(k) != "fields" {
			return p.unknown(k, "fields")
		}
		return once(&seen, 1) && p.jaegerTags(func(kv jaegerKVRaw) bool {
			switch kv.key {
			case "event":
				// kvValue's string: a plain one here, else jaegerDecode's
				if kv.typ != "string" || len(kv.value) < 2 || kv.value[0] != '"' {
					return false
				}
				n, ok := plainText(kv.value[1 : len(kv.value)-1])
				name = n
				return ok
			case recordAttr:
				if kv.typ != "string" || len(kv.value) < 2 || kv.value[0] != '"' {
					return false
				}
				line = kv.value[1 : len(kv.value)-1]
			case recordSeqAttr:
				if kv.typ != "int64" {
					return false
				}
				n, err := strconv.ParseInt(string(kv.value), 10, 64)
				if err != nil {
					return false
				}
				seq = n
			}
			return true
		})
	})
	if !ok {
		return false
	}
	if name != recordEvent {
		return true
	}
	if seq < 0 || len(line) == 0 {
		return false
	}
	s.records = append(s.records, carriedRecord{seq: seq, raw: line, std: true})
	return true
}

// jaegerTags reads an array of {key, type, value}, f taking each.
func (p *otlpScan) jaegerTags(f func(jaegerKVRaw) bool) bool {
	return p.null() || p.array(func() bool {
		var kv jaegerKVRaw
		var seen uint32
		ok := p.object(func(k []byte) bool {
			var ok bool
			switch string(k) {
			case "key":
				kv.key, ok = p.plainStr()
				return once(&seen, 1) && ok
			case "type":
				kv.typ, ok = p.plainStr()
				return once(&seen, 2) && ok
			case "value":
				p.i = jsonscan.SkipSpace(p.b, p.i)
				var e int
				if p.i < len(p.b) && p.b[p.i] == '"' {
					e = jsonscan.StringEnd(p.b, p.i) // a record's line: most of the answer
				} else {
					e = jsonscan.ValueEnd(p.b, p.i, 2)
				}
				if e < 0 {
					return false
				}
				kv.value = p.b[p.i:e]
				p.i = e
				return once(&seen, 4)
			}
			return p.unknown(k, "key", "type", "value")
		})
		return ok && f(kv)
	})
}
