package tape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// ReadCalls gives every request once, with the response the index paired
// it with, its status and target, in one pass over a real recording.
func TestReadCalls(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "assets", "demo.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex(bytes.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	statuses := map[string]int{}
	err = ReadCalls(bytes.NewReader(data), x, "", func(c Call) error {
		if seen[c.Request] {
			t.Errorf("request #%d given twice", c.Request)
		}
		seen[c.Request] = true
		if p := x.Pair(c.Request); p.Partner != c.Response {
			t.Errorf("%v: response #%d, the index pairs #%d", c, c.Response, p.Partner)
		}
		if c.Response >= 0 && (len(c.ResponseRaw) == 0 || c.End.IsZero() || c.Latency < 0) {
			t.Errorf("%v: answer not filled in: %+v", c, c)
		}
		if c.Method == "tools/call" && c.Target == "" {
			t.Errorf("%v: no target", c)
		}
		statuses[c.Status]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	requests := 0
	for i := range x.Len() {
		if x.Entry(i).Kind == KindRequest {
			requests++
		}
	}
	rpc, tool := x.Failures()
	if len(seen) != requests || statuses["error"] != rpc || statuses["tool-error"] != tool {
		t.Errorf("%d calls (statuses %v) for %d requests, %d errors, %d tool errors", len(seen), statuses, requests, rpc, tool)
	}
}

// TestReadCallsAgreesWithReader: ReadCalls, which walks the index and
// reads only the calls' bytes, gives the very calls (same order, every
// field) that reading the tape through NewReader gave (readCallsReader, the
// former ReadCalls), for all servers and for each one, on every testdata
// tape and on tapes with answers before their requests, cancellations and
// late answers, HTTP exchanges refused by a challenge, several servers,
// batches, a message's own _meta, timestamps with an offset, escaped
// names and a tape that grew after its index was built; and it stops as
// the former did when fn fails.
func TestReadCallsAgreesWithReader(t *testing.T) {
	paths := agreementTapes(t)
	calls := map[string]int{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The index of the whole tape, and of its first half: the tape grew
		// after that index was built (the reader gets all of it).
		cut := bytes.IndexByte(data[len(data)/2:], '\n') + len(data)/2 + 1
		for _, size := range []int{len(data), cut} {
			x := NewIndex(bytes.NewReader(data))
			if err := x.Extend(int64(size), nil); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, server := range append([]string{""}, x.Servers()...) {
				var want, got []Call
				werr := readCallsReader(bytes.NewReader(data), x, server, func(c Call) error { want = append(want, c); return nil })
				gerr := ReadCalls(bytes.NewReader(data), x, server, func(c Call) error { got = append(got, c); return nil })
				if werr != nil || gerr != nil {
					t.Fatalf("%s (%d bytes indexed, server %q): errors %v and %v", path, size, server, werr, gerr)
				}
				if len(got) != len(want) {
					t.Fatalf("%s (%d bytes indexed, server %q): %d calls, the reader's way %d", path, size, server, len(got), len(want))
				}
				for i := range want {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("%s (%d bytes indexed, server %q): call %d is\n%#v\nthe reader's way\n%#v", path, size, server, i, got[i], want[i])
					}
					calls[want[i].Status]++
				}
				if len(want) > 1 { // fn's error ends both at the same call
					stop := errors.New("stop")
					var nw, ng int
					werr := readCallsReader(bytes.NewReader(data), x, server, func(Call) error { nw++; return stopAt(nw, 2, stop) })
					gerr := ReadCalls(bytes.NewReader(data), x, server, func(Call) error { ng++; return stopAt(ng, 2, stop) })
					if werr != stop || gerr != stop || nw != ng {
						t.Fatalf("%s: fn failing at the second call: %v after %d calls, the reader's way %v after %d", path, gerr, ng, werr, nw)
					}
				}
			}
		}
	}
	for _, s := range []string{"ok", "error", "tool-error", "pending", "cancelled", "late", "challenged"} {
		if calls[s] == 0 {
			t.Errorf("no call was %s: the tapes do not cover it (%v)", s, calls)
		}
	}
}

// agreementTapes returns the tapes TestReadCallsAgreesWithReader and
// TestReadMessagesAgreesWithReader read: every testdata tape, synthetic
// ones, and one of oddities written into t's temporary directory.
func agreementTapes(t *testing.T) []string {
	paths, _ := filepath.Glob("../testdata/*.tape.jsonl")
	hostile, _ := filepath.Glob("../testdata/hostile/*.tape.jsonl")
	paths = append(append(paths, hostile...), "testdata/oauth-stepup.tape.jsonl", "../assets/demo.tape.jsonl")
	dir := t.TempDir()
	for _, o := range []SynthOptions{
		{Messages: 3000, Seed: 1, Profile: SynthRealistic},
		{Messages: 3000, Seed: 2, Profile: SynthSmall},
		{Messages: 3000, Seed: 3, Profile: SynthRealistic, ChangeEvery: 7, DropEvery: 11},
	} {
		p := filepath.Join(dir, fmt.Sprintf("synth-%d.tape.jsonl", o.Seed))
		if _, err := WriteSynth(p, o); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	const ts = `"ts":"2026-05-16T12:00:0`
	odd := strings.Join([]string{
		`{"jsonrpc":"2.0","method":"$transport/start","params":{},"_meta":{"dir":"lifecycle","server":"a","ts":"2026-05-16T12:00:00.000Z"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{},"_meta":{"dir":"send","server":"a",` + ts + `0.001Z"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"},"_meta":{"dir":"recv","server":"a",` + ts + `0.002Z"}}`,
		// b's answer before its request (Reordered), then the request
		`{"jsonrpc":"2.0","id":"x","result":{"content":[]},"_meta":{"dir":"recv","server":"b",` + ts + `0.003Z"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"early","arguments":{}},"_meta":{"dir":"send","server":"b",` + ts + `0.004Z"}}`,
		// cancelled, then answered late; cancelled and never answered
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"},"_meta":{"dir":"send","server":"a",` + ts + `0.005Z"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slower"},"_meta":{"dir":"send","server":"a",` + ts + `0.006Z"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2},"_meta":{"dir":"send","server":"a",` + ts + `0.007Z"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3},"_meta":{"dir":"send","server":"a",` + ts + `0.008Z"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"isError":true,"content":[]},"_meta":{"dir":"recv","server":"a",` + ts + `0.009Z"}}`,
		// a batch of two requests, answered by a batch
		`[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"b1"}},{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"b2"}}]`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"one"},"_meta":{"dir":"send","server":"a","ts":"2026-05-16T14:00:01.5+02:00","batch":1}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"two"},"_meta":{"dir":"send","server":"a",` + ts + `1.600Z","batch":1}}`,
		`[{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"no"},"_meta":{"dir":"recv","server":"a",` + ts + `1.700Z"}},{"jsonrpc":"2.0","id":4,"result":{},"_meta":{"dir":"recv","server":"a",` + ts + `1.800Z"}}]`,
		// a message's own _meta, the tape's under _tapedeck; escapes
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"m","_meta":{"traceparent":"00-abc-def-01"}},"_meta":{"own":true},"_tapedeck":{"dir":"send","server":"a",` + ts + `2.000Z"}}`,
		`  {"_meta":{"own":1},"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"text","text":"q\"\\"}]},"_tapedeck":{"dir":"recv","server":"a",` + ts + `2.100Z"}}  `,
		`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///x"},"_meta":{"dir":"send","server":"\u0063",` + ts + `2.200Z"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"contents":[]},"_meta":{"dir":"recv","server":"c",` + ts + `2.300Z"}}` + "\r",
		`{"jsonrpc":"2.0","id":8,"method":"ping","_meta":{"dir":"sideways","server":"c","ts":"not a time"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"ping","_meta":{"dir":"recv","server":"c",` + ts + `2.400Z"}}`,
		`{"jsonrpc":"2.0","id":9,"result":{},"_meta":{"dir":"send","server":"c",` + ts + `2.500Z"}}`,
		``,
		`not json`,
		`{"jsonrpc":"2.0","id":10,"result":{},"_meta":{"dir":"recv","server":"c",` + ts + `2.600Z"}}`,
	}, "\n") + "\n"
	oddPath := filepath.Join(dir, "odd.tape.jsonl")
	if err := os.WriteFile(oddPath, []byte(odd), 0o644); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, oddPath)
	return paths
}

// TestReadMessagesAgreesWithReader: ReadMessages gives every valid message
// NewReader gives (of each server, and up to the index's end when the tape
// grew since), with the same entry, Body StripMeta's and HTTP
// ParseHTTPMeta's of its bytes, on the tapes of
// TestReadCallsAgreesWithReader; and fn's error ends it.
func TestReadMessagesAgreesWithReader(t *testing.T) {
	kinds := map[Kind]int{}
	httpSeen := false
	for _, path := range agreementTapes(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cut := bytes.IndexByte(data[len(data)/2:], '\n') + len(data)/2 + 1
		for _, size := range []int{len(data), cut} {
			x := NewIndex(bytes.NewReader(data))
			if err := x.Extend(int64(size), nil); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, server := range append([]string{""}, x.Servers()...) {
				var want []Entry
				rd := NewReader(bytes.NewReader(data))
				for e := range rd.Entries() {
					if e.Seq >= x.Len() {
						break
					}
					if e.Kind != KindInvalid && (server == "" || e.Server == server) {
						want = append(want, e)
					}
				}
				if err := rd.Err(); err != nil {
					t.Fatal(err)
				}
				i := 0
				err := ReadMessages(bytes.NewReader(data), x, server, func(m *Message) error {
					where := fmt.Sprintf("%s (%d bytes indexed, server %q), message %d", path, size, server, i)
					if i >= len(want) {
						return fmt.Errorf("%s: more messages than the reader's %d", where, len(want))
					}
					w := want[i]
					i++
					got := m.Entry
					// What a Reader does not fill in (ID: Message leaves
					// it out) or cannot know (Negotiation: only an index
					// judges a probe by its request).
					got.ID, got.Negotiation = w.ID, w.Negotiation
					if !bytes.Equal(got.Raw, w.Raw) {
						t.Errorf("%s: bytes\n%s\nthe reader's\n%s", where, got.Raw, w.Raw)
					}
					got.Raw, w.Raw = nil, nil
					if !reflect.DeepEqual(got, w) && !(got.Time.Equal(w.Time) && sameButTime(got, w)) {
						t.Errorf("%s: entry\n%+v\nthe reader's\n%+v", where, got, w)
					}
					if !bytes.Equal(m.Body, StripMeta(m.Raw)) {
						t.Errorf("%s: body %s, StripMeta's %s", where, m.Body, StripMeta(m.Raw))
					}
					if hm := ParseHTTPMeta(m.Raw); !reflect.DeepEqual(m.HTTP, hm) {
						t.Errorf("%s: HTTP %+v, ParseHTTPMeta's %+v", where, m.HTTP, hm)
					}
					httpSeen = httpSeen || m.HTTP.HTTP
					kinds[w.Kind]++
					return nil
				})
				if err != nil || i != len(want) {
					t.Fatalf("%s (%d bytes indexed, server %q): %d messages (%v), the reader's %d", path, size, server, i, err, len(want))
				}
				if len(want) > 1 {
					stop := errors.New("stop")
					n := 0
					if err := ReadMessages(bytes.NewReader(data), x, server, func(*Message) error { n++; return stopAt(n, 2, stop) }); err != stop || n != 2 {
						t.Fatalf("%s: fn failing at the second message: %v after %d", path, err, n)
					}
				}
			}
		}
	}
	for _, k := range []Kind{KindRequest, KindResponse, KindNotification, KindLifecycle} {
		if kinds[k] == 0 {
			t.Errorf("no message was a %v: the tapes do not cover it (%v)", k, kinds)
		}
	}
	if !httpSeen {
		t.Error("no message was recorded over HTTP: the tapes do not cover it")
	}
}

// sameButTime reports whether a and b are equal but for the location of
// their Time.
func sameButTime(a, b Entry) bool {
	a.Time, b.Time = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

func stopAt(n, at int, err error) error {
	if n == at {
		return err
	}
	return nil
}

// readCallsReader is ReadCalls as it was before it walked the index: the
// tape read through NewReader, every line classified again. The reference
// TestReadCallsAgreesWithReader holds ReadCalls to.
func readCallsReader(r io.Reader, x *Index, server string, fn func(Call) error) error {
	rd := NewReader(r)
	open := map[int]Call{} // request seq → call awaiting its response
	var order []int        // requests in recorded order, to flush the unanswered ones
	for e := range rd.Entries() {
		if server != "" && e.Server != server {
			continue
		}
		if e.Seq >= x.Len() {
			break // written after the index was built
		}
		switch e.Kind {
		case KindRequest:
			c := Call{Request: e.Seq, Response: -1, Server: e.Server, Dir: e.Dir, Method: e.Method, ID: e.ID, Start: e.Time, Line: e.Line}
			if bytes.Contains(e.Raw, []byte(`"http"`)) { // the HTTP dialect's _meta, else no need to parse it
				if hm := ParseHTTPMeta(e.Raw); hm.HTTP {
					c.Session, c.HTTP = hm.Session, true
				}
			}
			c.RequestRaw = StripMeta(e.Raw)
			if bytes.Contains(c.RequestRaw, []byte("traceparent")) {
				if tp := gjson.GetBytes(c.RequestRaw, "params._meta.traceparent"); tp.Type == gjson.String {
					c.TraceParent = tp.String()
				}
			}
			c.Target = Target(e.Method, c.RequestRaw)
			p := x.Pair(e.Seq)
			switch {
			case p.Partner < 0 && p.Cancelled:
				c.Status = "cancelled"
			case p.Partner < 0:
				c.Status = "pending"
			case x.Entry(p.Partner).Kind == KindLifecycle:
				c.Status = "challenged"
			}
			if p.Partner >= 0 && p.Partner < e.Seq {
				// Answered before it was recorded (Reordered): the answer
				// came first and waits in open under the response's seq.
				if r, ok := open[-p.Partner-1]; ok {
					delete(open, -p.Partner-1)
					c = complete(c, r.ResponseRaw, r.End, p.Partner, x)
					if err := fn(c); err != nil {
						return err
					}
					continue
				}
			}
			open[e.Seq] = c
			order = append(order, e.Seq)
		case KindResponse:
			p := x.Pair(e.Seq)
			if p.Partner < 0 {
				continue // an orphan: no call to complete
			}
			c, ok := open[p.Partner]
			if !ok {
				// Its request comes later on the tape (Reordered).
				open[-e.Seq-1] = Call{ResponseRaw: StripMeta(e.Raw), End: e.Time}
				continue
			}
			delete(open, p.Partner)
			if err := fn(complete(c, StripMeta(e.Raw), e.Time, e.Seq, x)); err != nil {
				return err
			}
		}
	}
	if err := rd.Err(); err != nil {
		return err
	}
	for _, seq := range order {
		if c, ok := open[seq]; ok {
			if err := fn(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// containsTraceparent agrees with bytes.Contains: at either end, split
// across the last bytes, after near misses, with 'p's everywhere.
func TestContainsTraceparent(t *testing.T) {
	const w = "traceparent"
	cases := []string{"", "p", w, w[:10], w[1:], "x" + w, w + "x", "tracepartraceparent", "pppppppppppppp" + w,
		"traceparenX", "raceparent", "aaaaaparent", "trace" + "pp" + "arent", strings.Repeat("pa", 50) + w[:10],
		strings.Repeat("tracepar", 20) + w + strings.Repeat("p", 7), `{"params":{"_meta":{"traceparent":"00-1-2-01"}}}`}
	for i := range len(w) + 3 {
		cases = append(cases, strings.Repeat("p", i)+w, w+strings.Repeat("p", i), strings.Repeat("q", i)+w[:len(w)-1])
	}
	found := 0
	for _, c := range cases {
		want := bytes.Contains([]byte(c), []byte(w))
		if got := containsTraceparent([]byte(c)); got != want {
			t.Errorf("containsTraceparent(%q) = %v, bytes.Contains says %v", c, got, want)
		}
		if want {
			found++
		}
	}
	if found == 0 || found == len(cases) {
		t.Fatalf("%d of %d cases contain the word: both answers must be tested", found, len(cases))
	}
}

// TestReadCallsMessageOverBuffer: a message longer than ReadCalls' read
// buffer (1 MiB) comes whole, its first MiB included: the reader's buffer
// holding it is read again for the rest of the line, so its start must be
// copied before.
func TestReadCallsMessageOverBuffer(t *testing.T) {
	const meta = `"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}`
	const rmeta = `"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:01.000Z"}`
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"pad":"` + strings.Repeat("x", 3<<20/2) + `"}},` + meta + `}`
	data := []byte(`{"jsonrpc":"2.0","id":0,"method":"ping",` + meta + "}\n" +
		big + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]},` + rmeta + "}\n")
	x := NewIndex(bytes.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	var calls []Call
	if err := ReadCalls(bytes.NewReader(data), x, "", func(c Call) error { calls = append(calls, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 {
		t.Fatalf("%d calls, expected 2", len(calls))
	}
	c := calls[0]
	if want := StripMeta([]byte(big)); !bytes.Equal(c.RequestRaw, want) {
		t.Errorf("the big request's bytes begin %.60q (%d bytes), expected %.60q (%d bytes)", c.RequestRaw, len(c.RequestRaw), want, len(want))
	}
	if c.Method != "tools/call" || c.Target != "big" || c.ID != "1" || c.Server != "s" || c.Start.IsZero() {
		t.Errorf("the big request's call is %v (id %q, server %q, start %v), expected tools/call big, id 1, server s, a start", c, c.ID, c.Server, c.Start)
	}
}
