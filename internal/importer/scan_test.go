package importer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// checkScanAgrees holds the line importers' one-pass walk of a message
// (messageEnd) to jsonscan.ObjectEnd, and what its head says to
// tape.Peeker.
func checkScanAgrees(t *testing.T, b []byte) {
	t.Helper()
	if len(b) == 0 || b[0] != '{' {
		return
	}
	want := jsonscan.ObjectEnd(b, 0, 1, nil)
	var h msgHead
	if end := messageEnd(b, 0, 1, &h); end != want {
		t.Fatalf("messageEnd(%q) = %d, jsonscan.ObjectEnd %d", b, end, want)
	}
	if want != len(b) {
		return
	}
	hd, ok := h.head()
	if !ok {
		return
	}
	var p tape.Peeker
	ph := p.Peek(b)
	if hd.Kind != ph.Kind || !bytes.Equal(hd.ID, ph.ID) || hd.Plain != ph.Plain || !bytes.Equal(hd.Method, ph.Method) {
		t.Fatalf("head of %q: kind %v id %q method %q plain %v; the Peeker's: kind %v id %q method %q plain %v",
			b, hd.Kind, hd.ID, hd.Method, hd.Plain, ph.Kind, ph.ID, ph.Method, ph.Plain)
	}
}

var scanSeeds = []string{
	`"abc"`, `"a\"b"`, `"\\"`, `"\u00e9x"`, `"\u00g9"`, `"\x"`, "\"a\tb\"", `"unterminated`,
	`"` + strings.Repeat("lorem ipsum ", 20) + `\"quoted\" ` + strings.Repeat("dolor ", 20) + `"`,
	`"` + strings.Repeat(`\"`, 40) + `"`,
	`"` + strings.Repeat("x", 40) + "\x01" + `"`,
	`"` + strings.Repeat("x", 40) + `\` + `"`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"q":"x\ny"}}}`,
	`{"jsonrpc":"2.0","id":"a\"b","result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":-3,"error":{"code":-32601,"message":"no"}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1.5e3}}`,
	`{"jsonrpc":"2.0","method":"$transport/start"}`,
	`{"jsonrpc":"2.0","id":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","_meta":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","_tapedeck":{}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"method":"a"}`,
	`{"jsonrpc":"2.0","i\u0064":1,"method":"a"}`,
	`{"jsonrpc":"2.0","id":1,"method":"a\u0062"}`,
	"{\"jsonrpc\":\"2.0\",\r\"id\":1,\"method\":\"a\"}",
	`{"jsonrpc":"2.0","id":1,"method":"a",}`, `{"a":[1,2,}`, `{"a":tru}`, `{"a":01}`, `{}`, `{ }`, `[1,{"a":[]}]`,
}

func FuzzScanAgrees(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	long := strings.Repeat("lorem ipsum ", 10) // long runs between escapes (the inspector's strings)
	for _, s := range []string{
		`"` + long + `"`, `"` + long + `\"` + long + `"`, `"` + long + `\n` + long + `\\"x"`,
		`"` + long + "\x01" + long + `"`, `"` + long + "\n\"", `"\u00e9` + long + `"`, `"` + long,
		`"` + long + `\`, "\"\xff\xfe" + long + "\"", `"a\\\\\"b"` + long + `"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkScanAgrees(t, b) })
}

// TestScanAgreesRandom holds the scan to jsonscan and the Peeker on
// messages of random strings: plain runs longer than a word, escapes
// (quotes among them), control characters and bytes that are not ASCII,
// at every offset.
func TestScanAgreesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	parts := []string{"a", "lorem ipsum dolor sit amet ", `\"`, `\\`, `\n`, `\u00e9`, `\u12`, `\q`, "\x01", "\t", "é", "\xff", `"`, `\`}
	for range 20000 {
		var s strings.Builder
		for range r.IntN(12) {
			s.WriteString(parts[r.IntN(len(parts))])
		}
		str := `"` + s.String() + `"`
		checkScanAgrees(t, []byte(`{"jsonrpc":"2.0","id":`+str+`,"method":"m","params":{"text":`+str+`,"list":[`+str+`,1]}}`))
		checkScanAgrees(t, []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":`+str+`}]}}`))
	}
}

// parseUTC reads what time.Parse(time.RFC3339Nano) reads the same, and
// leaves everything else to it.
func TestParseUTC(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var in []string
	for range 5000 {
		tm := time.Unix(r.Int64N(1<<36)-1<<35, r.Int64N(1e9)).UTC()
		s := tm.Format(time.RFC3339Nano)
		in = append(in, s, tm.Format("2006-01-02T15:04:05.000Z07:00"), tm.Format("2006-01-02T15:04:05.000000Z07:00"), tm.Format("2006-01-02T15:04:05Z07:00"))
	}
	in = append(in, "2026-02-30T00:00:00Z", "2026-02-29T00:00:00Z", "2024-02-29T00:00:00Z", "2026-01-01T24:00:00Z",
		"2026-01-01T23:59:60Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z",
		"2026-01-01T00:00:00.Z", "2026-01-01T00:00:00.1234567891Z", "2026-01-01T00:00:00.5z", "2026-01-01t00:00:00Z",
		"2026-01-01T00:00:00+02:00", "2026-01-01T00:00:00", "2026-01-01 00:00:00Z", "+026-01-01T00:00:00Z", "2026-01-01T00:00:00.1x3Z")
	var p utcParser // consecutive inputs share their second: its cache is held to parseUTC
	for _, s := range in {
		raw := []byte(`"` + s + `"`)
		got, ok := parseUTC(raw)
		if pt, pok := p.parse(raw); pok != ok || pt != got {
			t.Fatalf("utcParser.parse(%s) = %v, %v; parseUTC %v, %v", raw, pt, pok, got, ok)
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if !ok {
			if err == nil && s == want.UTC().Format(time.RFC3339Nano) && want.Year() >= 0 {
				t.Errorf("parseUTC(%s) refused a time time.Parse reads in the usual shape", raw)
			}
			continue
		}
		if err != nil {
			t.Fatalf("parseUTC(%s) = %v, time.Parse refuses it: %v", raw, got, err)
		}
		if !got.Equal(want) || got.Location() != want.Location() {
			t.Fatalf("parseUTC(%s) = %v (%v), time.Parse %v (%v)", raw, got, got.Location(), want, want.Location())
		}
	}
}

// appendTS writes what tape.Writer (KeepMicroseconds) writes as _meta.ts.
func TestAppendTS(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	times := []time.Time{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 1500, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 999, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))}
	for range 20000 {
		ns := r.Int64N(1e9)
		switch r.IntN(3) {
		case 0:
			ns -= ns % 1e6
		case 1:
			ns -= ns % 1e3
		}
		tm := time.Unix(r.Int64N(1<<36)-1<<35, ns).In(time.FixedZone("z", r.IntN(50000)))
		times = append(times, tm, tm.Add(time.Duration(r.Int64N(2e6))), tm.Add(-time.Duration(r.Int64N(2e6))))
	}
	var w tsWriter // consecutive times often share their second: its cache is held to appendTS
	for _, tm := range times {
		if got, want := w.append([]byte("x"), tm), appendTS([]byte("x"), tm); !bytes.Equal(got, want) {
			t.Fatalf("tsWriter.append(%v) = %s, appendTS %s", tm, got, want)
		}
		want := tm.UTC().AppendFormat(nil, tape.TimeFormat)
		if tm.Nanosecond()%1e6 >= 1e3 {
			want = tm.UTC().AppendFormat(nil, tape.TimeFormatMicro)
		}
		if got := appendTS(nil, tm); !bytes.Equal(got, want) {
			t.Fatalf("appendTS(%v) = %s, want %s", tm, got, want)
		}
	}
}

// recEncoder.plain writes the line tape.Encoder (KeepMicroseconds) writes.
func TestPlainAgreesWithEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	msgs := []string{`{"jsonrpc":"2.0","id":1,"method":"a"}`, ` {"jsonrpc":"2.0","id":"x","result":{}} `, `{ }`, `{}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}`}
	servers := []string{"synth", "", `q"uote`, "é<&>", "\u2028"}
	e := newRecEncoder()
	for i := range 2000 {
		msg, server := msgs[i%len(msgs)], servers[r.IntN(len(servers))]
		dir := []tape.Dir{tape.DirSend, tape.DirRecv}[r.IntN(2)]
		tm := time.Unix(1.7e9+r.Int64N(1e6), r.Int64N(1e9))
		if r.IntN(2) == 0 {
			tm = tm.Truncate(time.Millisecond)
		}
		m := tape.Meta{Dir: dir, Server: server, Time: tm}
		out := []byte("before\n")
		rc, out := e.plain(out, []byte(msg), m)
		want := tape.NewEncoder(dir, server).KeepMicroseconds().AppendLinePlain(nil, []byte(msg), tm, nil)
		if got := out[rc.start:rc.end]; !bytes.Equal(got, want) || rc.start != len("before\n") || rc.msgs != 1 || rc.server != server {
			t.Fatalf("plain(%s, %+v) = %q (record %+v), tape.Encoder's %q", msg, m, got, rc, want)
		}
	}
}

// A message under a key spelled with an escape ("r\u0061w", "p\u0061yload")
// is read as under the plain key: the one-pass walk of the message is
// skipped for it, and the Peeker reads it.
func TestImportEscapedMessageKey(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for _, c := range []struct{ format, plain, escaped string }{
		{"mcpsnoop", `{"ts":"2026-01-02T03:04:05.123456Z","direction":"c2s","raw":%s}`, `{"ts":"2026-01-02T03:04:05.123456Z","direction":"c2s","r\u0061w":%s}`},
		{"gh-aw", `{"timestamp":"2026-01-02T03:04:05.123456789Z","direction":"OUT","type":"REQUEST","server_id":"s","payload":%s}`, `{"timestamp":"2026-01-02T03:04:05.123456789Z","direction":"OUT","type":"REQUEST","server_id":"s","p\u0061yload":%s}`},
	} {
		// Two lines, the first walked: the second's message must not be
		// taken for the first's.
		want, _, werr := importWith(c.format, strings.NewReader(fmt.Sprintf(c.plain, msg)+"\n"+fmt.Sprintf(c.plain, msg)+"\n"), Options{})
		got, _, gerr := importWith(c.format, strings.NewReader(fmt.Sprintf(c.plain, msg)+"\n"+fmt.Sprintf(c.escaped, msg)+"\n"), Options{})
		if werr != "" || gerr != "" || got != want {
			t.Fatalf("%s: with the escaped key:\n%s(%s)\nwant:\n%s(%s)", c.format, got, gerr, want, werr)
		}
		if !strings.Contains(got, `"id":1,"method":"tools/list","_meta":{"dir":"send"`) || !strings.Contains(got, `"ts":"2026-01-02T03:04:05.123456Z"`) {
			t.Fatalf("%s: tape without the message as sent:\n%s", c.format, got)
		}
	}
}
