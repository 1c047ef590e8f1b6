package tape

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tapeOf builds tape text from compact message specs: "dir server body"
// lines, given ts at 100 ms steps.
func tapeOf(lines ...string) string {
	var b strings.Builder
	for i, l := range lines {
		parts := strings.SplitN(l, " ", 3)
		ts := ts0.Add(time.Duration(i) * 100 * time.Millisecond).Format(TimeFormat)
		body := parts[2]
		fmt.Fprintf(&b, `%s,"_meta":{"dir":"%s","server":"%s","ts":"%s"}}`+"\n", body[:len(body)-1], parts[0], parts[1], ts)
	}
	return b.String()
}

func indexOf(t *testing.T, text string) *Index {
	t.Helper()
	x := NewIndex(bytes.NewReader([]byte(text)))
	if err := x.Extend(int64(len(text)), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestPairingIDSpaces(t *testing.T) {
	// Client and server both use id 1; a second server reuses it too.
	x := indexOf(t, tapeOf(
		`send a {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,     // 0
		`recv a {"jsonrpc":"2.0","id":1,"method":"roots/list"}`,                 // 1 server→client
		`send b {"jsonrpc":"2.0","id":1,"method":"tools/list"}`,                 // 2
		`send a {"jsonrpc":"2.0","id":1,"result":{"roots":[]}}`,                 // 3 reply to 1
		`recv b {"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`,                 // 4 reply to 2
		`recv a {"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}`,     // 5 reply to 0
		`recv a {"jsonrpc":"2.0","id":9,"result":{}}`,                           // 6 orphan
		`send a {"jsonrpc":"2.0","id":2,"method":"ping"}`,                       // 7 pending
		`recv a {"jsonrpc":"2.0","method":"notifications/message","params":{}}`, // 8
	))
	want := map[int]int{0: 5, 1: 3, 2: 4, 3: 1, 4: 2, 5: 0, 6: -1, 7: -1, 8: -1}
	for i, p := range want {
		if got := x.Pair(i).Partner; got != p {
			t.Errorf("Partner(%d) = %d, want %d", i, got, p)
		}
	}
	if p := x.Pair(5); p.Method != "tools/call" || p.Latency != 500*time.Millisecond || !x.Entry(5).Error {
		t.Errorf("pair of the error response: %+v", p)
	}
	if p := x.Pair(3); p.Method != "roots/list" || p.Latency != 200*time.Millisecond {
		t.Errorf("pair of the client's reply: %+v", p)
	}
	if !x.Pair(6).Orphan || !x.Pair(7).Pending || x.Pair(0).Pending {
		t.Errorf("orphan %+v / pending %+v", x.Pair(6), x.Pair(7))
	}
	st := ComputeStats(x, "a")
	if len(st.Servers) != 1 {
		t.Fatalf("stats for server a: %+v", st)
	}
	tot := st.Servers[0].Total
	if tot.Requests != 3 || tot.Responses != 3 || tot.Errors != 1 || tot.Orphans != 1 || tot.Pending != 1 || tot.Notifications != 1 {
		t.Errorf("totals for a: %+v", tot)
	}
}

func TestPairingCancelledLateReorderedDuplicate(t *testing.T) {
	x := indexOf(t, tapeOf(
		`recv s {"jsonrpc":"2.0","id":5,"result":{}}`,                                          // 0 before its request
		`send s {"jsonrpc":"2.0","id":5,"method":"ping"}`,                                      // 1
		`send s {"jsonrpc":"2.0","id":6,"method":"tools/call"}`,                                // 2 cancelled
		`send s {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}`, // 3
		`recv s {"jsonrpc":"2.0","id":6,"result":{}}`,                                          // 4 late
		`send s {"jsonrpc":"2.0","id":7,"method":"a"}`,                                         // 5
		`send s {"jsonrpc":"2.0","id":7,"method":"b"}`,                                         // 6 duplicate id
		`recv s {"jsonrpc":"2.0","id":7,"result":{}}`,                                          // 7 pairs with the newest
		`send s {"jsonrpc":"2.0","id":"7","method":"c"}`,                                       // 8 string "7" is another id
	))
	if p := x.Pair(0); p.Partner != 1 || !p.Reordered || p.Orphan {
		t.Errorf("reordered response: %+v", p)
	}
	if p := x.Pair(2); !p.Cancelled || p.Pending || p.Partner != 4 {
		t.Errorf("cancelled request: %+v", p)
	}
	if p := x.Pair(4); !p.Late {
		t.Errorf("late response: %+v", p)
	}
	if x.Pair(7).Partner != 5 || !x.Pair(6).Pending || !x.Pair(8).Pending {
		t.Errorf("duplicate ids: 7→%d, 6 pending %v, 8 pending %v", x.Pair(7).Partner, x.Pair(6).Pending, x.Pair(8).Pending)
	}
	var texts []string
	for _, w := range x.Warnings() {
		texts = append(texts, w.Error())
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "line 2: request id 5 recorded after its response (line 1)") || !strings.Contains(all, "line 7: request id 7 reused") {
		t.Errorf("warnings:\n%s", all)
	}
	st := ComputeStats(x, "")
	tot := st.Servers[0].Total
	if tot.Cancelled != 1 || tot.Late != 1 || tot.Pending != 2 {
		t.Errorf("totals: %+v", tot)
	}
}

func TestPairingConnections(t *testing.T) {
	// Two sessions of one server appended to one tape restart their ids.
	x := indexOf(t, tapeOf(
		`lifecycle s {"jsonrpc":"2.0","method":"$transport/start"}`,
		`send s {"jsonrpc":"2.0","id":0,"method":"initialize"}`,
		`lifecycle s {"jsonrpc":"2.0","method":"$transport/start"}`,
		`send s {"jsonrpc":"2.0","id":0,"method":"initialize"}`,
		`recv s {"jsonrpc":"2.0","id":0,"result":{}}`,
	))
	if x.Pair(4).Partner != 3 || !x.Pair(1).Pending {
		t.Errorf("second session's response paired with %d; first request pending %v", x.Pair(4).Partner, x.Pair(1).Pending)
	}
}

func TestInputRequiredChain(t *testing.T) {
	x := indexOf(t, tapeOf(
		`send s {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy"}}`,
		`recv s {"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}`,
		`send s {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy","inputResponses":{"a":{}}}}`,
		`recv s {"jsonrpc":"2.0","id":2,"result":{"content":[]}}`,
	))
	if p := x.Pair(2); p.ChainPrev != 1 {
		t.Errorf("retry's ChainPrev = %d, want 1", p.ChainPrev)
	}
	if got := x.Chain(2); fmt.Sprint(got) != "[0 2]" {
		t.Errorf("Chain(2) = %v, want [0 2]", got)
	}
}

func TestIndexMessageAndBatch(t *testing.T) {
	text := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]` + "\n" +
		`[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":1,"result":{}}]` + "\n"
	x := indexOf(t, text)
	if x.Len() != 4 || x.Pair(0).Partner != 3 || x.Pair(1).Partner != 2 {
		t.Fatalf("batch pairing: len %d, 0→%d, 1→%d", x.Len(), x.Pair(0).Partner, x.Pair(1).Partner)
	}
	if x.Entry(0).Batch != 1 || x.Entry(3).Batch != 2 {
		t.Errorf("batch numbers %d and %d", x.Entry(0).Batch, x.Entry(3).Batch)
	}
	m, err := x.Message(1)
	if err != nil || string(m.Raw) != `{"jsonrpc":"2.0","id":2,"method":"b"}` || m.ID != "2" {
		t.Errorf("Message(1) = %s id %s, %v", m.Raw, m.ID, err)
	}
}

// TestIndexFollow grows a file the way a recorder does, line by line and
// mid-line, and extends the index after each write.
func TestIndexFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex(r)
	defer x.Close()
	notFinal := func() bool { return false }
	extend := func() {
		st, _ := f.Stat()
		if err := x.Extend(st.Size(), notFinal); err != nil {
			t.Fatal(err)
		}
	}
	f.WriteString(reqLine + "\n" + respLine[:50])
	extend()
	if x.Len() != 1 {
		t.Fatalf("after a line and a half: %d messages, want 1", x.Len())
	}
	f.WriteString(respLine[50:] + "\n")
	extend()
	if x.Len() != 2 || x.Pair(0).Partner != 1 {
		t.Fatalf("after the rest: %d messages, partner %d", x.Len(), x.Pair(0).Partner)
	}
	if len(x.Warnings()) != 0 {
		t.Errorf("warnings: %v", x.Warnings())
	}
}

func TestOpenIndexErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenIndex(dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	if _, err := OpenIndex(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o600)
	x, err := OpenIndex(empty)
	if err != nil || x.Len() != 0 {
		t.Errorf("empty file: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte(reqLine+"\n{oops\n"), 0o600)
	if _, err := OpenIndex(bad, Strict()); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("strict: %v", err)
	}
	blankTail := filepath.Join(dir, "blank")
	os.WriteFile(blankTail, []byte(reqLine+"\n   "), 0o600)
	if x, err := OpenIndex(blankTail); err != nil || x.Len() != 1 {
		t.Errorf("blank unterminated last line: %v", err)
	}
}

// TestIndexMatchesReader checks that the mapped index and the streaming
// reader see the same messages on a synthetic tape big enough to span
// several mapping windows.
func TestIndexMatchesReader(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	path := filepath.Join(t.TempDir(), "synth.jsonl")
	f, _ := os.Create(path)
	size, err := Synthesize(f, SynthOptions{Messages: 80_000, Seed: 7, Servers: []string{"a", "b"}})
	f.Close()
	if err != nil || size < 2*mapWindow {
		t.Fatalf("synthesize: %d bytes, %v (want more than two windows)", size, err)
	}
	x, err := OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rf, _ := os.Open(path)
	defer rf.Close()
	r := NewReader(rf)
	i := 0
	for ; ; i++ {
		e, err := r.Next()
		if err != nil {
			break
		}
		got := x.Entry(i)
		if got.Offset != e.Offset || got.Line != e.Line || got.Kind != e.Kind || got.Server != e.Server || (e.Kind != KindResponse && got.Method != e.Method) {
			t.Fatalf("message %d: index %+v, reader %+v", i, got, e)
		}
	}
	if i != x.Len() || i != 80_000 {
		t.Fatalf("reader saw %d, index %d, want 80000", i, x.Len())
	}
	pending := 0 // the generator may stop between a request and its response
	for _, s := range ComputeStats(x, "").Servers {
		pending += s.Total.Pending
		if s.Total.Orphans != 0 || s.Total.Requests != s.Total.Responses+s.Total.Pending {
			t.Errorf("server %s: %+v", s.Server, s.Total)
		}
	}
	if pending > 1 {
		t.Errorf("%d pending requests, want at most the last one", pending)
	}
}

// TestIndexManyServers: more server names than the index's 16-bit field
// holds share one last name instead of wrapping around.
func TestIndexManyServers(t *testing.T) {
	var b strings.Builder
	for i := range 70_000 {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"s%d","ts":"2026-05-16T12:00:00.000Z"}}`+"\n", i)
	}
	x := indexOf(t, b.String())
	servers := x.Servers()
	if len(servers) != 1<<16 || servers[len(servers)-1] != "(more)" {
		t.Fatalf("%d servers, last %q", len(servers), servers[len(servers)-1])
	}
	if got := x.Entry(69_999).Server; got != "(more)" {
		t.Errorf("server of the last message: %q", got)
	}
	if got := x.Entry(100).Server; got != "s100" {
		t.Errorf("server of message 100: %q", got)
	}
}

// TestPairingNullIDInReplyTo: an error answer with id null pairs with the
// request the HTTP recorder tied it to (_meta.inReplyTo).
func TestPairingNullIDInReplyTo(t *testing.T) {
	x := indexOf(t, `{"jsonrpc":"2.0","id":1,"method":"server/discover","_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}
{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.010Z","inReplyTo":1}}
{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.020Z"}}
`)
	if p := x.Pair(1); p.Partner != 0 || p.Method != "server/discover" || p.Latency != 10*time.Millisecond {
		t.Errorf("null-id answer with inReplyTo: %+v", p)
	}
	if p := x.Pair(2); !p.Orphan {
		t.Errorf("null-id answer without inReplyTo: %+v, want an orphan", p)
	}
}

// TestStatsBuckets: orphan responses and invalid lines are counted in rows
// of their own, apart from each other and from any method; a reordered pair
// stays out of the latencies; a timestamp at the Unix epoch is a time.
func TestStatsBuckets(t *testing.T) {
	text := `{"jsonrpc":"2.0","id":9,"result":{},"_meta":{"dir":"recv","server":"s","ts":"1970-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":{},"method":"m","_meta":{"dir":"send","server":"s","ts":"1970-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"method":"","_meta":{"dir":"send","server":"s","ts":"1970-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":2,"method":"ping","_meta":{"dir":"send","server":"s","ts":"1970-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":2,"result":{},"_meta":{"dir":"recv","server":"s","ts":"1970-01-01T00:00:00.250Z"}}
{"jsonrpc":"2.0","id":3,"result":{},"_meta":{"dir":"recv","server":"s","ts":"1970-01-01T00:00:01.000Z"}}
{"jsonrpc":"2.0","id":3,"method":"late","_meta":{"dir":"send","server":"s","ts":"1970-01-01T00:00:02.000Z"}}
`
	x := indexOf(t, text)
	if p := x.Pair(4); !p.Timed || p.Latency != 250*time.Millisecond {
		t.Errorf("pair at the epoch: %+v", p)
	}
	if p := x.Pair(6); !p.Reordered || p.Latency != -time.Second {
		t.Errorf("reordered pair: %+v, want a latency of -1s", p)
	}
	st := ComputeStats(x, "s")
	rows := map[string]MethodStats{}
	for _, m := range st.Servers[0].Methods {
		rows[m.label()] = m
	}
	if m := rows["(orphan responses)"]; m.Responses != 1 || m.Orphans != 1 || m.Invalid != 0 {
		t.Errorf("orphans row: %+v", m)
	}
	if m := rows["(invalid lines)"]; m.Invalid != 1 || m.Responses != 0 {
		t.Errorf("invalid row: %+v", m)
	}
	if m := rows[`""`]; m.Requests != 1 || m.Pending != 1 {
		t.Errorf("empty-method row: %+v", m)
	}
	if m := rows["late"]; m.Requests != 1 || m.Latency.Count != 0 {
		t.Errorf("reordered pair in the latencies: %+v", m)
	}
	if m := rows["ping"]; m.Latency.Count != 1 || m.Latency.Max != 250*time.Millisecond {
		t.Errorf("ping at the epoch: %+v", m.Latency)
	}
}

// A batch is one array on a line, or consecutive lines with one
// _meta.batch (the Writer's way): the index and the reader number both.
func TestBatchNumbers(t *testing.T) {
	data := `{"jsonrpc":"2.0","id":1,"method":"a","_meta":{"dir":"send","batch":5}}
{"jsonrpc":"2.0","id":2,"method":"b","_meta":{"dir":"send","batch":5}}
{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"},"_meta":{"dir":"recv"}}
[{"jsonrpc":"2.0","id":3,"method":"c"},{"jsonrpc":"2.0","id":4,"method":"d"}]
{"jsonrpc":"2.0","id":5,"method":"e","_meta":{"dir":"send","batch":5}}
{"jsonrpc":"2.0","id":6,"method":"f","_meta":{"dir":"send","batch":6}}
`
	want := []int{1, 1, 0, 2, 2, 3, 4}
	x := indexOf(t, data)
	r := NewReader(strings.NewReader(data))
	for i, w := range want {
		if got := x.Entry(i).Batch; got != w {
			t.Errorf("index: message %d in batch %d, want %d", i, got, w)
		}
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e.Batch != w {
			t.Errorf("reader: message %d in batch %d, want %d", i, e.Batch, w)
		}
	}
}

// Session-less HTTP POSTs reusing one id (two clients initializing at
// once) pair by their POST (_meta.exchange) whatever order the answers
// came in, with no "reused" warning; an answer without one (legacy SSE,
// on the GET stream) pairs first in, first out.
func TestPairingByExchange(t *testing.T) {
	line := func(dir, body, meta string) string {
		return body[:len(body)-1] + `,"_meta":{"dir":"` + dir + `","server":"s","ts":"2026-01-02T03:04:05.000Z"` + meta + "}}\n"
	}
	req := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`
	resp := `{"jsonrpc":"2.0","id":0,"result":{}}`
	x := indexOf(t, line("send", req, `,"exchange":1`)+
		line("send", req, `,"exchange":2`)+
		line("recv", resp, `,"exchange":2,"newSession":"b"`)+
		line("recv", resp, `,"exchange":1,"newSession":"a"`)+
		line("send", req, `,"exchange":3`)+
		line("send", req, `,"exchange":4`)+
		line("recv", resp, ``)+
		line("recv", resp, ``))
	if ws := x.Warnings(); len(ws) != 0 {
		t.Errorf("warnings: %v", ws)
	}
	for req, want := range map[int]int{0: 3, 1: 2, 4: 6, 5: 7} {
		if got := x.Pair(req).Partner; got != want {
			t.Errorf("request %d paired with %d, want %d", req, got, want)
		}
	}
}

func TestNextFailure(t *testing.T) {
	x := indexOf(t, tapeOf(
		`send a {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ok"}}`,
		`recv a {"jsonrpc":"2.0","id":1,"result":{"content":[]}}`,
		`send a {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail"}}`,
		`recv a {"jsonrpc":"2.0","id":2,"result":{"isError":true,"content":[]}}`,
		`send a {"jsonrpc":"2.0","id":3,"method":"nope"}`,
		`recv a {"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}`,
	))
	for _, c := range []struct{ from, dir, want int }{
		{0, 1, 3}, {3, 1, 3}, {4, 1, 5}, {6, 1, -1}, {5, -1, 5}, {4, -1, 3}, {2, -1, -1}, {-1, 1, -1},
	} {
		if got := x.NextFailure(c.from, c.dir); got != c.want {
			t.Errorf("NextFailure(%d, %d) = %d, want %d", c.from, c.dir, got, c.want)
		}
	}
	if rpc, tool := x.Failures(); rpc != 1 || tool != 1 {
		t.Errorf("Failures() = %d, %d; want 1 JSON-RPC error and 1 tool error", rpc, tool)
	}
}

// The context cost of a server's definitions: its last listing, measured.
func TestContextCosts(t *testing.T) {
	x := indexOf(t, tapeOf(
		`send a {"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		`recv a {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x"}]}}`,
		`send a {"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`recv a {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"x","description":"12345678"},{"name":"y"}]}}`,
	))
	st := ComputeStats(x, "")
	AddContextCosts(&st, x)
	want := `{"tools":[{"name":"x","description":"12345678"},{"name":"y"}]}`
	if c := st.Servers[0].Context; len(c) != 1 || c[0].Items != 2 || c[0].Bytes != len(want) || c[0].ApproxTokens != (len(want)+3)/4 || c[0].Seq != 3 {
		t.Errorf("context costs %+v, want the last listing: 2 items, %d bytes", c, len(want))
	}
}

// TestIndexNamesBadUTF8: a line whose server or method name holds a byte
// that is not UTF-8 is flagged and its names are read as encoding/json
// reads them (U+FFFD), while a valid line's names are taken as they are.
func TestIndexNamesBadUTF8(t *testing.T) {
	x := indexOf(t, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\xffcall\",\"_meta\":{\"dir\":\"send\",\"server\":\"s\xfe\",\"ts\":\"2026-01-01T00:00:00.000Z\"}}\n"+
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/caf\xc3\xa9\",\"_meta\":{\"dir\":\"send\",\"server\":\"s\xc3\xa9\",\"ts\":\"2026-01-01T00:00:00.001Z\"}}\n")
	if got, want := x.Entry(0).Method, "tools/\uFFFDcall"; got != want {
		t.Errorf("method of the bad line: expected %q, found %q", want, got)
	}
	if got, want := x.Entry(0).Server, "s\uFFFD"; got != want {
		t.Errorf("server of the bad line: expected %q, found %q", want, got)
	}
	if got, want := x.Entry(1).Method, "tools/café"; got != want {
		t.Errorf("method of the valid line: expected %q, found %q", want, got)
	}
	if got, want := x.Entry(1).Server, "sé"; got != want {
		t.Errorf("server of the valid line: expected %q, found %q", want, got)
	}
	if x.recs.at(0).flags&flagBadUTF8 == 0 || x.recs.at(1).flags&flagBadUTF8 != 0 {
		t.Errorf("flagBadUTF8: expected on the first line only, found %b and %b", x.recs.at(0).flags, x.recs.at(1).flags)
	}
}
