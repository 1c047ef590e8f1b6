package tape

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// FuzzRedactor: a redacted line is valid JSON whenever its input was, no
// value under a key rule survives, and what nothing matched comes back byte
// for byte.
func FuzzRedactor(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"apiKey":"SECRETVALUE","n":{"apiKey":["SECRETVALUE",1]}},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z","session":"SECRETVALUE"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"apiKey\":\"SECRETVALUE\"}"}]}}`))
	f.Add([]byte(`{"params":{"APIKEY" : "SECRETVAL`))
	r := &Redactor{Keys: []string{"apiKey"}, Values: []*regexp.Regexp{regexp.MustCompile(`SECRET[A-Z]*`)}}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.ContainsAny(line, "\n") {
			return
		}
		out, changed, err := r.RedactLine(line)
		if err != nil {
			// Not JSON: the text path must still hide the value rule's matches.
			txt := r.RedactText(bytes.Clone(line))
			if regexp.MustCompile(`SECRET[A-Z]*`).Match(txt) {
				t.Fatalf("RedactText left a match: %q", txt)
			}
			return
		}
		if !changed {
			if !bytes.Equal(out, line) {
				t.Fatalf("unchanged line rewritten: %q -> %q", line, out)
			}
			return
		}
		if json.Valid(line) && !json.Valid(out) {
			t.Fatalf("redacted output is not JSON: %q -> %q", line, out)
		}
		v, err := Decode(out)
		if err != nil {
			return
		}
		var walk func(v any, underKey bool)
		walk = func(v any, underKey bool) {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					if strings.Contains(k, "SECRET") {
						t.Fatalf("a member name kept a match: %q in %q", k, out)
					}
					walk(e, underKey || strings.EqualFold(k, "apiKey"))
				}
			case []any:
				for _, e := range x {
					walk(e, underKey)
				}
			case string:
				if underKey && x != RedactedMarker {
					t.Fatalf("value %q under a key rule survived in %q", x, out)
				}
				if strings.Contains(x, "SECRET") {
					t.Fatalf("a value rule's match survived: %q in %q", x, out)
				}
			}
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, e := range m {
			if meta, ok := e.(map[string]any); ok && (k == "_meta" || k == AltMetaKey) {
				for mk, mv := range meta {
					if mk != "dir" && mk != "server" && mk != "ts" && mk != MetaRedacted {
						walk(mv, strings.EqualFold(mk, "apiKey"))
					}
				}
				continue
			}
			walk(e, strings.EqualFold(k, "apiKey"))
		}
	})
}

// FuzzNormalize: normalizing is idempotent (a normalized value, encoded and
// normalized again, is the same value) and never panics.
func FuzzNormalize(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1},"arguments":{"n":1.0e0}}}`))
	p, _ := ParsePath("params.arguments.ts")
	n := Normalizer{Ignore: []Path{p}}
	f.Fuzz(func(t *testing.T, msg []byte) {
		v, err := n.Normalize(msg)
		if err != nil {
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("normalized value does not encode: %v", err)
		}
		w, err := n.Normalize(b)
		if err != nil {
			t.Fatalf("normalized %q does not normalize again: %v", b, err)
		}
		if !reflect.DeepEqual(v, w) {
			t.Fatalf("not idempotent: %q\n first  %#v\n second %#v", msg, v, w)
		}
	})
}

// FuzzParseTS: the fast path agrees with time.Parse, and any time it
// accepts is one time.Parse accepts too.
func FuzzParseTS(f *testing.F) {
	for _, s := range []string{"2026-05-16T12:00:00.123Z", "2026-13-16T12:00:00.000Z", "2026-02-29T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2026-05-16T12:00:00Z", "yesterday"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTS([]byte(`"` + s + `"`))
		want, err := time.Parse(time.RFC3339Nano, s)
		if ok != (err == nil) {
			t.Fatalf("parseTS(%q) ok=%v, time.Parse err=%v", s, ok, err)
		}
		if ok && !got.Equal(want) {
			t.Fatalf("parseTS(%q) = %v, time.Parse = %v", s, got, want)
		}
		// Through the classifier's cache, after a time of the same second
		// and after itself, it reads the same.
		var c tsCache
		for _, prev := range []string{"2026-05-16T12:00:00.000Z", s} {
			c.parse([]byte(`"` + prev + `"`))
			if cg, cok := c.parse([]byte(`"` + s + `"`)); cok != ok || cg != got {
				t.Fatalf("tsCache.parse(%q) after %q = %v, %v; parseTS = %v, %v", s, prev, cg, cok, got, ok)
			}
		}
	})
}

// FuzzIndexFollow: indexing a tape in pieces as it grows (follow mode)
// gives the same index as indexing it at once.
func FuzzIndexFollow(f *testing.F) {
	f.Add([]byte(reqLine+"\n"+respLine+"\n"), uint16(7), uint16(50))
	f.Add([]byte("garbage\n"+reqLine+"\n"+`[{"jsonrpc":"2.0","id":2,"method":"a"}]`+"\n"+respLine), uint16(1), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, a, b uint16) {
		whole := NewIndex(bytes.NewReader(data))
		if err := whole.Extend(int64(len(data)), nil); err != nil {
			return
		}
		parts := NewIndex(bytes.NewReader(data))
		cuts := []int64{int64(a) % int64(len(data)+1), int64(b) % int64(len(data)+1)}
		if cuts[0] > cuts[1] {
			cuts[0], cuts[1] = cuts[1], cuts[0]
		}
		for _, c := range cuts {
			if err := parts.Extend(c, func() bool { return false }); err != nil {
				t.Fatalf("extend to %d: %v", c, err)
			}
		}
		if err := parts.Extend(int64(len(data)), nil); err != nil {
			t.Fatalf("final extend: %v", err)
		}
		if whole.Len() != parts.Len() {
			t.Fatalf("%d messages at once, %d in pieces (cuts %v) of %q", whole.Len(), parts.Len(), cuts, data)
		}
		for i := range whole.Len() {
			mw, errW := whole.Message(i)
			mp, errP := parts.Message(i)
			if (errW == nil) != (errP == nil) || mw.Line != mp.Line || mw.Kind != mp.Kind || mw.Method != mp.Method || !bytes.Equal(mw.Raw, mp.Raw) {
				t.Fatalf("message %d differs: %+v vs %+v", i, mw, mp)
			}
			if whole.Pair(i) != parts.Pair(i) {
				t.Fatalf("pairing %d differs: %+v vs %+v", i, whole.Pair(i), parts.Pair(i))
			}
		}
	})
}
