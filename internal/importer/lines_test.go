package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// importWith imports data with o, returning the tape, the result and the
// error's text.
func importWith(format string, r io.Reader, o Options) (string, Result, string) {
	var buf bytes.Buffer
	res, err := Import(format, r, &buf, o)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return buf.String(), res, msg
}

// snoopReorderLog is an mcpsnoop log of several sessions whose answers
// are often logged before their requests (some repaired: the request's
// time is earlier; some not), with stderr, text frames, HTTP status
// envelopes and repeated session headers among them, and bad after
// everything when it is not "".
func snoopReorderLog(n int, bad string) []byte {
	var b strings.Builder
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ts := func(us int) string { return t0.Add(time.Duration(us) * time.Microsecond).Format(time.RFC3339Nano) }
	env := func(session, dir string, us int, rest string) {
		fmt.Fprintf(&b, `{"session_id":%q,"server_label":"srv","seq":1,"ts":%q,"direction":%q,"transport":"stdio"%s}`+"\n", session, ts(us), dir, rest)
	}
	for i := range n {
		s := fmt.Sprintf("s%d", i%3)
		if i%50 == 0 {
			env(s, "meta", i*10, `,"raw":{"command":["srv","--x"],"cwd":"/tmp"}`)
		}
		req := fmt.Sprintf(`,"raw":{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d"}}`, i, i)
		ans := fmt.Sprintf(`,"raw":{"jsonrpc":"2.0","id":%d,"result":{"n":%d}}`, i, i)
		switch i % 7 {
		case 0, 3: // the answer first, the request earlier: repaired
			env(s, "s2c", i*10+5, ans)
			if i%3 == 0 {
				env(s, "stderr", i*10+6, `,"text":"log line"`)
				env(s, "s2c", i*10+6, `,"raw":{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)
			}
			env(s, "c2s", i*10, req)
		case 5: // the answer first and earlier: kept in the log's order
			env(s, "s2c", i*10, ans)
			env(s, "c2s", i*10+5, req)
		case 6: // an answer whose request never comes
			env(s, "s2c", i*10+5, fmt.Sprintf(`,"raw":{"jsonrpc":"2.0","id":"x%d","result":{}}`, i))
			env(s, "c2s", i*10+1, `,"text":"not json"`)
		default:
			env(s, "c2s", i*10, req)
			b.WriteString("\n  \n")
			env(s, "s2c", i*10+5, ans)
		}
	}
	b.WriteString(bad)
	return []byte(b.String())
}

// ghawLogOf is an rpc-messages.jsonl of n exchanges over three servers,
// gateway events among them, and bad after everything.
func ghawLogOf(n int, bad string) []byte {
	var b strings.Builder
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("srv%d", i%3)
		ts := t0.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
		fmt.Fprintf(&b, `{"timestamp":%q,"direction":"OUT","type":"REQUEST","server_id":%q,"payload":{"jsonrpc":"2.0","id":%d,"method":"tools/call"}}`+"\n", ts, id, i)
		if i%5 == 0 {
			fmt.Fprintf(&b, `{"timestamp":%q,"type":"DIFC_FILTERED","server_id":%q,"reason":"r"}`+"\n", ts, id)
		}
		fmt.Fprintf(&b, `{"timestamp":%q,"direction":"IN","type":"RESPONSE","server_id":%q,"payload":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}"}`+"\n", ts, id, i)
	}
	b.WriteString(bad)
	return []byte(b.String())
}

// The line-oriented importers on several workers with small chunks write
// what one worker writes, and fail the same way at the same line: on the
// real logs, on logs whose reorders, session starts and skipped events
// fall across chunk boundaries, on a bad line in a late chunk, a line past
// the bound and a read error.
func TestImportParallelEqualsSerial(t *testing.T) {
	type input struct {
		name, format string
		data         []byte
		o            Options
		failAfter    int // a read error after this many bytes, if > 0
	}
	inputs := []input{
		{name: "stdio", format: "mcpsnoop", data: sample(t, "mcpsnoop/everything-stdio.jsonl")},
		{name: "http", format: "mcpsnoop", data: sample(t, "mcpsnoop/everything-http.jsonl")},
		{name: "gh-aw", format: "gh-aw", data: sample(t, "gh-aw/everything-rpc-messages.jsonl")},
		{name: "reorders", format: "mcpsnoop", data: snoopReorderLog(400, "")},
		{name: "reorders-bad-line", format: "mcpsnoop", data: snoopReorderLog(400, `{"session_id":"s1","direction":"c2s","ts":"nope"}`+"\n")},
		{name: "reorders-unended", format: "mcpsnoop", data: bytes.TrimSuffix(snoopReorderLog(100, ""), []byte("\n"))},
		{name: "reorders-long-line", format: "mcpsnoop", data: snoopReorderLog(200, `{"pad":"`+strings.Repeat("x", 3000)+`"}`+"\n"), o: Options{MaxLine: 2000}},
		{name: "reorders-read-error", format: "mcpsnoop", data: snoopReorderLog(300, ""), failAfter: 20000},
		{name: "ghaw-many", format: "gh-aw", data: ghawLogOf(300, "")},
		{name: "ghaw-bad-line", format: "gh-aw", data: ghawLogOf(300, `{"type":"REQUEST","timestamp":"2025-03-01T12:00:00Z","direction":"SIDEWAYS"}`)},
		{name: "ghaw-long-unended", format: "gh-aw", data: ghawLogOf(100, strings.Repeat("y", 5000)), o: Options{MaxLine: 4000}},
		{name: "empty", format: "gh-aw", data: []byte("\n \n")},
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			reader := func() io.Reader {
				if in.failAfter > 0 {
					return io.MultiReader(bytes.NewReader(in.data[:in.failAfter]), iotest.ErrReader(errors.New("disk gone")))
				}
				return bytes.NewReader(in.data)
			}
			so := in.o
			so.workers = 1
			want, wantRes, wantErr := importWith(in.format, reader(), so)
			if len(want) == 0 && wantErr == "" {
				t.Fatal("the serial import wrote nothing and did not fail")
			}
			if bad := strings.Contains(in.name, "bad") || strings.Contains(in.name, "long") || strings.Contains(in.name, "error") || in.name == "empty"; bad != (wantErr != "") {
				t.Fatalf("serial error %q, want one: %v", wantErr, bad)
			}
			if in.name == "reorders" && wantRes.Reordered == 0 {
				t.Fatal("the serial import reordered nothing: the log does not test the repair")
			}
			for _, chunk := range []int{1, 97, 1000, 4096, 0} {
				po := in.o
				po.workers, po.chunk = 4, chunk
				got, res, err := importWith(in.format, reader(), po)
				if err != wantErr {
					t.Errorf("chunk %d: error %q, serial %q", chunk, err, wantErr)
				}
				if !reflect.DeepEqual(res, wantRes) {
					t.Errorf("chunk %d: result %+v, serial %+v", chunk, res, wantRes)
				}
				if got != want {
					t.Errorf("chunk %d: the tape differs from the serial one (%d bytes, serial %d)", chunk, len(got), len(want))
				}
			}
		})
	}
}

// checkParallelEqualsSerial fails t when importing data on several
// workers with small chunks writes, counts or fails otherwise than on one.
func checkParallelEqualsSerial(t *testing.T, format string, data []byte) {
	t.Helper()
	want, wantRes, wantErr := importWith(format, bytes.NewReader(data), Options{workers: 1, MaxLine: 300})
	for _, chunk := range []int{1, 64} {
		got, res, err := importWith(format, bytes.NewReader(data), Options{workers: 3, chunk: chunk, MaxLine: 300})
		if got != want || err != wantErr || !reflect.DeepEqual(res, wantRes) {
			t.Fatalf("chunk %d: tape %q, %+v, error %q; serial: tape %q, %+v, error %q", chunk, got, res, err, want, wantRes, wantErr)
		}
	}
}
