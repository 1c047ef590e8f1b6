package importer

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jaegerBuilt is an answer in Jaeger's own member order (a span's
// traceID first, as a trace's is: a guessed span start may be a trace's),
// of traces traces of spans spans each, every span carrying one record
// (one in ten an answer with an escaped, non-ASCII result).
func jaegerBuilt(traces, spans int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"data":[`)
	seq := 0
	for t := range traces {
		if t > 0 {
			b.WriteByte(',')
		}
		tid := fmt.Sprintf("%032x", t+1)
		fmt.Fprintf(&b, `{"traceID":"%s","spans":[`, tid)
		for s := range spans {
			if s > 0 {
				b.WriteByte(',')
			}
			rec := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","_meta":{"dir":"send","server":"s%d","ts":"2026-01-01T00:00:%02d.000Z"}}`, seq, t, seq%60)
			if s%10 == 3 {
				rec = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"text":"é\n\"x\""},"_meta":{"dir":"recv","server":"s%d","ts":"2026-01-01T00:00:%02d.000Z"}}`, seq, t, seq%60)
			}
			q, _ := jsonString(rec)
			fmt.Fprintf(&b, `{"traceID":"%s","spanID":"%016x","flags":1,"operationName":"ping","references":[{"refType":"CHILD_OF","traceID":"%s","spanID":"%016x"}],"startTime":%d,"duration":%d,"tags":[{"key":"mcp.method.name","type":"string","value":"ping"},{"key":"span.kind","type":"string","value":"client"}],"logs":[{"timestamp":1,"fields":[{"key":"event","type":"string","value":"tapedeck.record"},{"key":"tapedeck.seq","type":"int64","value":%d},{"key":"tapedeck.record","type":"string","value":%s}]}],"processID":"p1","warnings":null}`,
				tid, seq+1, tid, seq, 1767225600000000+seq, 5, s, q)
			seq++
		}
		fmt.Fprintf(&b, `],"processes":{"p1":{"serviceName":"svc","tags":[{"key":"tapedeck.tape","type":"string","value":"t%d"}]}},"warnings":null}`, t)
	}
	b.WriteString(`],"total":0,"limit":0,"offset":0,"errors":null}`)
	return b.Bytes()
}

func jsonString(s string) (string, error) {
	return strconv.Quote(s), nil // the records above hold nothing Go quotes unlike JSON
}

// normJaeger makes spans comparable: attributes decoded, records as text.
func normJaeger(t *testing.T, spans []traceSpan) []traceSpan {
	t.Helper()
	for i := range spans {
		if err := spans[i].decodeAttrs(); err != nil {
			t.Fatal(err)
		}
		for j, r := range spans[i].records {
			spans[i].records[j] = carriedRecord{seq: r.seq, line: string(r.text(nil))}
		}
	}
	return spans
}

// jaegerParBodies are answers to scan on several workers: built ones, and
// the answers of testdata tapes exported with bodies.
func jaegerParBodies(t *testing.T) map[string][]byte {
	bodies := map[string][]byte{
		"one trace":    jaegerBuilt(1, 300),
		"three traces": jaegerBuilt(3, 80),
		"many traces":  jaegerBuilt(40, 3),
	}
	tapes, _ := filepath.Glob("../../testdata/*.tape.jsonl")
	if len(tapes) < 5 {
		t.Fatalf("%d tapes in testdata", len(tapes))
	}
	dst := filepath.Join(t.TempDir(), "answer.json")
	for _, src := range tapes[:5] {
		jaegerAnswer(t, src, dst, true)
		b, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		bodies[filepath.Base(src)] = b
	}
	return bodies
}

// Segments on 1, 2 and 7 workers, of any size, read the spans one scan
// reads, and a scan with several workers takes segments.
func TestJaegerParAgrees(t *testing.T) {
	for name, body := range jaegerParBodies(t) {
		want, ok := scanJaegerWith(body, Options{workers: 1})
		if !ok {
			t.Fatalf("%s: the fast path did not take it", name)
		}
		want = normJaeger(t, want)
		for _, w := range []int{1, 2, 7} {
			for _, chunk := range []int{100, 700, 5000} {
				got, ok, taken := scanJaegerPar(body, Options{workers: w, chunk: chunk})
				if !ok {
					t.Fatalf("%s, %d workers, segments of %d: the fast path did not take it", name, w, chunk)
				}
				if !reflect.DeepEqual(normJaeger(t, got), want) {
					t.Fatalf("%s, %d workers, segments of %d: read other spans than one scan", name, w, chunk)
				}
				if w == 1 && taken != 0 {
					t.Errorf("%s: one worker took %d segments", name, taken)
				}
				if w > 1 && chunk == 100 && len(body) > 10000 && taken == 0 {
					t.Errorf("%s (%d bytes), %d workers, segments of %d: no segment taken", name, len(body), w, chunk)
				}
			}
		}
	}
}

// serveJaeger serves body as the query API's answer; cut: a
// Content-Length that many bytes longer than what is sent.
func serveJaeger(t *testing.T, body []byte, cut int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)+cut))
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// importJaegerWith imports the answer at base with o: the tape and the
// error.
func importJaegerWith(t *testing.T, base string, o Options) ([]byte, error) {
	var out bytes.Buffer
	q := JaegerQuery{Service: "svc", Start: time.Unix(0, 0), End: time.Unix(1, 0)}
	_, err := JaegerContext(context.Background(), http.DefaultClient, base, q, &out, o)
	return out.Bytes(), err
}

// The tapes imported on 1, 2 and 7 workers are the same bytes.
func TestJaegerParImport(t *testing.T) {
	for name, body := range jaegerParBodies(t) {
		base := serveJaeger(t, body, 0)
		want, err := importJaegerWith(t, base, Options{workers: 1})
		if err != nil || len(want) == 0 {
			t.Fatalf("%s: %v, %d bytes", name, err, len(want))
		}
		for _, w := range []int{2, 7} {
			got, err := importJaegerWith(t, base, Options{workers: w, chunk: 100})
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s, %d workers: %v, a tape of %d bytes unlike one worker's %d", name, w, err, len(got), len(want))
			}
		}
	}
}

// A malformed span mid-answer, or an answer cut short, fails on every
// number of workers as on one, naming what was expected and found.
func TestJaegerParMalformed(t *testing.T) {
	body := string(jaegerBuilt(3, 80))
	mid := strings.Index(body, fmt.Sprintf(`"spanID":"%016x"`, 121)) // the second trace's 41st span
	if mid < 0 {
		t.Fatal("no span 121")
	}
	at := func(old, new string) []byte { // old replaced once, in span 121
		k := strings.Index(body[mid:], old)
		if k < 0 {
			t.Fatalf("no %s after span 121", old)
		}
		return []byte(body[:mid+k] + new + body[mid+k+len(old):])
	}
	cases := []struct {
		name string
		body []byte
		want string
	}{
		{"a fractional time", at(`"duration":5`, `"duration":5.5`), "cannot unmarshal number 5.5"},
		{"a missing brace", at(`,"processID"`, `},"processID"`), "invalid"},
		{"a record without its seq", at(`{"key":"tapedeck.seq","type":"int64","value":40},`, ``), `$.data[1].spans[40].logs[0]: expected a tapedeck.record event with tapedeck.seq and tapedeck.record, found one without`},
		{"cut mid-span", []byte(body[:mid+50]), "unexpected end of JSON input"},
		{"cut before its end", []byte(body[:len(body)-1]), "unexpected end of JSON input"},
	}
	for _, c := range cases {
		base := serveJaeger(t, c.body, 0)
		_, want := importJaegerWith(t, base, Options{workers: 1})
		if want == nil || !strings.Contains(want.Error(), c.want) {
			t.Fatalf("%s: one worker: %v, want an error with %q", c.name, want, c.want)
		}
		for _, w := range []int{2, 7} {
			if _, ok := scanJaegerWith(c.body, Options{workers: w, chunk: 100}); ok {
				t.Errorf("%s, %d workers: the fast path took it", c.name, w)
			}
			if _, err := importJaegerWith(t, base, Options{workers: w, chunk: 100}); err == nil || err.Error() != want.Error() {
				t.Errorf("%s, %d workers: %v, want one worker's %v", c.name, w, err, want)
			}
		}
	}
	// The answer cut short on the wire: its Content-Length longer than
	// what came.
	base := serveJaeger(t, []byte(body[:mid]), len(body)-mid)
	if _, err := importJaegerWith(t, base, Options{workers: 2, chunk: 100}); err == nil || !strings.Contains(err.Error(), "reading "+base) || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("an answer cut short on the wire: %v", err)
	}
}

// A worker leaves a guess at a trace's start alone, and takes a span's.
func TestJaegerTraceAt(t *testing.T) {
	body := jaegerBuilt(3, 2)
	traces, spans := 0, 0
	for i := range body {
		if !bytes.HasPrefix(body[i:], []byte(`{"traceID":`)) {
			continue
		}
		if bytes.HasPrefix(body[i+len(`{"traceID":"`)+32:], []byte(`","spans":`)) {
			traces++
			if !jaegerTraceAt(body, i) {
				t.Errorf("a trace at %d not told: %.60s", i, body[i:])
			}
		} else {
			spans++
			if jaegerTraceAt(body, i) {
				t.Errorf("a span at %d taken for a trace: %.60s", i, body[i:])
			}
		}
	}
	if traces != 3 || spans != 6 {
		t.Errorf("%d traces and %d spans looked at, want 3 and 6", traces, spans)
	}
	for _, s := range []string{`{"traceID":"a"}`, `{"traceID":1,"spans":[]}`, `{"traceID":"a`, `{`, `{"`} {
		if jaegerTraceAt([]byte(s), 0) {
			t.Errorf("%s taken for a trace", s)
		}
	}
}
