package tape

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		kinds   []Kind
		id      ID
		method  string
		dir     Dir
		server  string
		isError bool
		problem string // a fragment of Problem, for invalid lines
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
			kinds: []Kind{KindRequest}, id: "1", method: "tools/call", dir: DirSend, server: "s"},
		{name: "response", line: `{"jsonrpc":"2.0","id":"a-1","result":{},"_meta":{"dir":"recv","server":"s"}}`,
			kinds: []Kind{KindResponse}, id: `"a-1"`, dir: DirRecv, server: "s"},
		{name: "error response", line: `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}`,
			kinds: []Kind{KindResponse}, id: "7", isError: true},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
			kinds: []Kind{KindNotification}, method: "notifications/progress"},
		{name: "lifecycle by method", line: `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"s"}}`,
			kinds: []Kind{KindLifecycle}, method: "$transport/start", dir: DirLifecycle, server: "s"},
		{name: "key order and spaces", line: ` { "_meta" : { "server" : "x" , "dir" : "recv" } , "result" : [ 1 , 2 ] , "id" : -1 , "jsonrpc" : "2.0" } `,
			kinds: []Kind{KindResponse}, id: "-1", dir: DirRecv, server: "x"},
		{name: "huge id", line: `{"jsonrpc":"2.0","id":18446744073709551617,"method":"m"}`,
			kinds: []Kind{KindRequest}, id: "18446744073709551617", method: "m"},
		{name: "float id", line: `{"jsonrpc":"2.0","id":1.5,"result":null}`, kinds: []Kind{KindResponse}, id: "1.5"},
		{name: "zero id", line: `{"jsonrpc":"2.0","id":0,"method":"m"}`, kinds: []Kind{KindRequest}, id: "0", method: "m"},
		{name: "escaped method", line: `{"jsonrpc":"2.0","method":"tools\/call","id":2}`, kinds: []Kind{KindRequest}, id: "2", method: "tools/call"},
		{name: "escaped quote in string", line: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"a\"}b\\"}}`, kinds: []Kind{KindRequest}, id: "1", method: "m"},
		{name: "batch", line: `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`, kinds: []Kind{KindRequest, KindNotification}},
		{name: "not json", line: `hello world`, kinds: []Kind{KindInvalid}, problem: "expected a JSON-RPC object or batch at column 1, found 'h'"},
		{name: "neither", line: `{"jsonrpc":"2.0","foo":1}`, kinds: []Kind{KindInvalid}, problem: "found neither"},
		{name: "result without id", line: `{"jsonrpc":"2.0","result":1}`, kinds: []Kind{KindInvalid}, problem: `expected "id" in a response`},
		{name: "object id", line: `{"jsonrpc":"2.0","id":{},"method":"m"}`, kinds: []Kind{KindInvalid}, problem: `expected "id" to be a string or a number`},
		{name: "number method", line: `{"jsonrpc":"2.0","id":1,"method":5}`, kinds: []Kind{KindInvalid}, problem: `expected "method" to be a string`},
		{name: "unclosed", line: `{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":[1,2}`, kinds: []Kind{KindInvalid}, problem: "unbalanced"},
		{name: "trailing garbage", line: `{"jsonrpc":"2.0","id":1,"method":"m"} x`, kinds: []Kind{KindInvalid}, problem: "expected end of line"},
		{name: "empty batch", line: `[]`, kinds: []Kind{KindInvalid}, problem: "empty array"},
		{name: "blank", line: "  \t ", kinds: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify([]byte(tt.line))
			if len(got) != len(tt.kinds) {
				t.Fatalf("Classify(%s) gave %d entries, want %d: %+v", tt.line, len(got), len(tt.kinds), got)
			}
			for i, k := range tt.kinds {
				if got[i].Kind != k {
					t.Errorf("entry %d: kind %v, want %v (problem %q)", i, got[i].Kind, k, got[i].Problem)
				}
			}
			if len(got) != 1 {
				return
			}
			e := got[0]
			if e.ID != tt.id || e.Method != tt.method || e.Dir != tt.dir || e.Server != tt.server || e.Error != tt.isError {
				t.Errorf("got id=%s method=%q dir=%q server=%q error=%v; want id=%s method=%q dir=%q server=%q error=%v",
					e.ID, e.Method, e.Dir, e.Server, e.Error, tt.id, tt.method, tt.dir, tt.server, tt.isError)
			}
			if !strings.Contains(e.Problem, tt.problem) {
				t.Errorf("problem %q, want it to contain %q", e.Problem, tt.problem)
			}
			if e.Kind != KindInvalid && string(e.Raw) != strings.TrimSpace(tt.line) {
				t.Errorf("raw %q, want the line's bytes %q", e.Raw, strings.TrimSpace(tt.line))
			}
		})
	}
}

func TestClassifyDeepNesting(t *testing.T) {
	const depth = 100_000
	line := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`
	got := Classify([]byte(line))
	if len(got) != 1 || got[0].Kind != KindRequest {
		t.Fatalf("got %+v, want one request", got)
	}
	unbalanced := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", depth) + `}`
	got = Classify([]byte(unbalanced))
	if len(got) != 1 || got[0].Kind != KindInvalid {
		t.Fatalf("unbalanced nesting: got kind %v, want invalid", got[0].Kind)
	}
}

func TestParseTS(t *testing.T) {
	for _, s := range []string{`"2026-05-16T12:00:00.123Z"`, `"2026-05-16T12:00:00.123456+02:00"`, `"2026-05-16T12:00:00Z"`} {
		got, ok := parseTS([]byte(s))
		want, err := timeParse(s[1 : len(s)-1])
		if !ok || err != nil || !got.Equal(want) {
			t.Errorf("parseTS(%s) = %v, %v; want %v", s, got, ok, want)
		}
	}
	if _, ok := parseTS([]byte(`"yesterday"`)); ok {
		t.Errorf("parseTS accepted \"yesterday\"")
	}
}

// The fast path checks its fields as time.Parse does: month 13 or hour 99
// is no timestamp (time.Date would roll it into a valid one).
func TestParseTSFieldRanges(t *testing.T) {
	for _, s := range []string{
		`"2026-13-16T12:00:00.000Z"`, `"2026-00-16T12:00:00.000Z"`, `"2026-02-30T12:00:00.000Z"`,
		`"2026-05-16T99:00:00.000Z"`, `"2026-05-16T12:60:00.000Z"`, `"2026-05-16T12:00:61.000Z"`,
	} {
		if got, ok := parseTS([]byte(s)); ok {
			t.Errorf("parseTS(%s) = %v, accepted; want refused", s, got)
		}
	}
	if _, ok := parseTS([]byte(`"2024-02-29T23:59:59.999Z"`)); !ok {
		t.Errorf("parseTS refused a leap day")
	}
}

// A timestamp far in the past or future is read as unknown with a note:
// kept as Unix nanoseconds it would overflow a latency (year 9999 minus
// year 2026 is more than 2^63 ns).
func TestClassifyImplausibleYear(t *testing.T) {
	for _, ts := range []string{"9999-01-01T00:00:00.000Z", "1600-01-01T00:00:00Z", "2100-01-01T00:00:00.000+00:00"} {
		line := `{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"s","ts":"` + ts + `"}}`
		r := NewReader(strings.NewReader(line + "\n"))
		e, err := r.Next()
		if err != nil {
			t.Fatalf("%s: %v", ts, err)
		}
		var notes []string
		for _, w := range r.Warnings() {
			notes = append(notes, w.Error())
		}
		got := []struct {
			Time  time.Time
			Notes []string
		}{{e.Time, notes}}
		if ts[:4] == "2100" {
			if got[0].Time.IsZero() || len(got[0].Notes) > 0 {
				t.Errorf("%s: time %v notes %q; want read, no note", ts, got[0].Time, got[0].Notes)
			}
			continue
		}
		if !got[0].Time.IsZero() {
			t.Errorf("%s: time %v; want unknown", ts, got[0].Time)
		}
		if !strings.Contains(strings.Join(got[0].Notes, ";"), "outside the years") {
			t.Errorf("%s: notes %q; want one saying the year is outside the range", ts, got[0].Notes)
		}
	}
}

// TestIsASCII checks the segment-wide check that lets the parallel index
// skip each line's UTF-8 check: a byte above 0x7f anywhere (in a whole
// 64-byte block, or in the tail after the last one) is found.
func TestIsASCII(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 200} {
		b := bytes.Repeat([]byte("a"), n)
		if !isASCII(b) {
			t.Errorf("isASCII of %d ASCII bytes: expected true, found false", n)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			if at < 0 || at >= n {
				continue
			}
			c := bytes.Clone(b)
			c[at] = 0x80
			if isASCII(c) {
				t.Errorf("isASCII of %d bytes with 0x80 at %d: expected false, found true", n, at)
			}
			if asciiOrValidUTF8(c) {
				t.Errorf("asciiOrValidUTF8 of %d bytes with 0x80 at %d: expected false, found true", n, at)
			}
		}
	}
}

// TestTSCache checks that timestamps read through the classifier's cache of
// the last date and time read as parseTS reads them: the same second with
// other fractions and forms, then times the cache must not answer (another
// second, a bad fraction, a day that does not exist, the slow path's forms).
func TestTSCache(t *testing.T) {
	var c tsCache
	for _, s := range []string{
		`"2026-05-16T12:00:00.000Z"`, `"2026-05-16T12:00:00.999Z"`, `"2026-05-16T12:00:00.123456Z"`,
		`"2026-05-16T12:00:00.12aZ"`, `"2026-05-16T12:00:00.1234Z"`, `"2026-05-16T12:00:00Z"`,
		`"2026-05-16T12:00:00.000+01:00"`, `"2026-05-16T12:00:01.000Z"`, `"2026-05-16T12:00:00.000Z"`,
		`"2026-02-30T12:00:00.000Z"`, `"2026-02-30T12:00:00.001Z"`, `"2024-02-29T23:59:59.999Z"`,
		`"2024-02-29T23:59:59.999999Z"`, `"2024-02-29T23:59:59.000x"`, `"2024-02-29T23:59:59.000"`,
	} {
		want, wok := parseTS([]byte(s))
		if got, ok := c.parse([]byte(s)); ok != wok || got != want {
			t.Errorf("tsCache.parse(%s) = %v, %v; parseTS = %v, %v", s, got, ok, want, wok)
		}
	}
}
