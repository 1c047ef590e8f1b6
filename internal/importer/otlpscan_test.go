package importer

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// agreeOTLP checks that the fast path, where it takes line, reads the
// spans pdata reads (attributes and records decoded), and reports whether
// it took it.
func agreeOTLP(t *testing.T, line []byte) bool {
	t.Helper()
	fast, ok := scanOTLPLine(line, nil)
	if !ok {
		return false
	}
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(line)
	if err != nil {
		t.Fatalf("the fast path took a line pdata refuses (%v): %.300s", err, line)
	}
	slow := pdataSpans(td)
	norm := func(spans []traceSpan) []traceSpan {
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
	if a, b := norm(fast), norm(slow); !reflect.DeepEqual(a, b) {
		t.Fatalf("fast path and pdata disagree on %.300s:\nfast %+v\npdata %+v", line, a, b)
	}
	return true
}

// The fast path reads what pdata reads on the OTLP exports of every tape
// in testdata (with bodies and without), takes every one of their lines,
// and hands back to pdata the lines in shapes it does not take.
func TestOTLPScanAgrees(t *testing.T) {
	tapes, _ := filepath.Glob("../../testdata/*.tape.jsonl")
	hostile, _ := filepath.Glob("../../testdata/hostile/*.tape.jsonl")
	tapes = append(tapes, hostile...)
	if len(tapes) < 10 {
		t.Fatalf("%d tapes in testdata", len(tapes))
	}
	dir := t.TempDir()
	lines := 0
	for _, src := range tapes {
		for _, bodies := range []bool{true, false} {
			dst := filepath.Join(dir, "x.json")
			if bodies {
				otlpExport(t, src, dst)
			} else {
				otlpExportNoBodies(t, src, dst)
			}
			b, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				lines++
				if !agreeOTLP(t, line) {
					t.Errorf("%s (bodies %v): the fast path did not take %.200s", src, bodies, line)
				}
			}
		}
	}
	if lines < 20 {
		t.Fatalf("only %d lines exported", lines)
	}
	if !agreeOTLP(t, []byte(strings.TrimSpace(otherEmitter))) {
		t.Error("the fast path did not take the other emitter's spans")
	}
	// Escapes pdata (json-iterator) reads its own way: surrogates, a bad
	// pair, a lone one before another escape.
	esc := `{"resourceSpans":[{"resource":{"attributes":[{"key":"tapedeck.tape","value":{"stringValue":"t\u00e9\ud83d\ude00"}}]},"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"a\ud800b\ud800\u0041\ud800\nc\udc00\ud83d","events":[{"name":"tapedeck.record","attributes":[{"key":"tapedeck.seq","value":{"intValue":"-3"}},{"key":"tapedeck.record","value":{"stringValue":"x\"\\\/\b\f\n\r\t\u0001\ud83d\ude00\ud83dz\ud83d\\"}},{"key":"tapedeck.record","value":{"stringValue":"second"}}]}]}]}]}]}`
	if !agreeOTLP(t, []byte(esc)) {
		t.Error("the fast path did not take escaped strings")
	}
	// Shapes left to pdata: read the same way through Import either way.
	for _, s := range []string{
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0AF7651916CD43DD8448EB211C80319C","spanId":"b7ad6b7169203331","name":"x"}]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":"b7ad6b7169203331","kind":"SPAN_KIND_SERVER","name":"x"}]}]}]}`,
		`{"resource_spans":[{"scope_spans":[{"spans":[{"span_id":"b7ad6b7169203331","name":"x"}]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":"b7ad6b7169203331","startTimeUnixNano":5,"name":"x","flags":1}]}]}]}`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":"b7ad6b7169203331","name":"x","name":"y"}]}]}]}`,
	} {
		if _, ok := scanOTLPLine([]byte(s), nil); ok {
			t.Errorf("the fast path took %s", s)
		}
	}
}

// otlpExportNoBodies writes `export --format otlp` (no bodies) of src.
func otlpExportNoBodies(tb testing.TB, src, dst string) {
	otlpExportWith(tb, src, dst, false)
}

// Whatever line the fast path takes, pdata reads the same spans from.
func FuzzOTLPScan(f *testing.F) {
	f.Add([]byte(strings.TrimSpace(otherEmitter)))
	f.Add([]byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"tapedeck.tape","value":{"stringValue":"t"}}]},"scopeSpans":[{"scope":{"name":"s","version":"1"},"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","parentSpanId":"","name":"ping","kind":2,"status":{"message":"m","code":2},"events":[{"timeUnixNano":"1","name":"tapedeck.record","attributes":[{"key":"tapedeck.seq","value":{"intValue":"0"}},{"key":"tapedeck.record","value":{"stringValue":"{\"a\":\"\u00e9\"}"}}]}],"attributes":[{"key":"k","value":{"arrayValue":{"values":[{"doubleValue":1.5},{"boolValue":true},{}]}}},{"key":"k","value":{"kvlistValue":{}}}]}]}]}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		agreeOTLP(t, bytes.TrimSpace(line))
	})
}
