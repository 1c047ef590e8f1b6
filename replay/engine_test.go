package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// sessionTape is a small recorded session: a handshake with a roots/list
// request from the server, a logging notification, a tool called twice with
// the same arguments, and tools/list.
func sessionTape(t testing.TB) *tape.Index {
	return buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{}},"clientInfo":{"name":"rec","version":"1"}}}`},
		line{recv, 10, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"srv","version":"1"}}}`},
		line{send, 20, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		line{recv, 30, `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`},
		line{send, 40, `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`},
		line{send, 100, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
		line{recv, 150, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"echoing"}}`},
		line{recv, 200, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi 1"}]}}`},
		line{send, 300, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
		line{recv, 400, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi 2"}]}}`},
		line{send, 500, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`},
		line{recv, 600, `{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`},
	)
}

// The live client: other ids, another protocol version and identity,
// params keys in another order.
var (
	liveInit   = `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"clientInfo":{"name":"live","version":"9"},"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}}}}`
	liveInited = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	liveRoots  = `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`
	liveEcho   = func(id, msg string) string {
		return `{"method":"tools/call","jsonrpc":"2.0","id":` + id + `,"params":{"arguments":{"message":"` + msg + `"},"name":"echo","_meta":{"progressToken":7}}}`
	}
	liveList = `{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{}}`
)

// feed sends each message at t0 and returns the messages sent back.
func feed(t *testing.T, e *Engine, msgs ...string) []Output {
	t.Helper()
	var out []Output
	for _, m := range msgs {
		out = append(out, e.Receive([]byte(m), t0)...)
	}
	return out
}

func texts(out []Output) []string {
	s := make([]string, len(out))
	for i, o := range out {
		s[i] = string(o.Msg)
	}
	return s
}

func mustEngine(t *testing.T, x *tape.Index, o EngineOptions) *Engine {
	t.Helper()
	e, err := NewEngine(x, o)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return e
}

func TestEngineStrictSession(t *testing.T) {
	e := mustEngine(t, sessionTape(t), EngineOptions{})
	got := texts(feed(t, e, liveInit, liveInited, liveRoots, liveEcho("10", "hi"), liveEcho("11", "hi"), liveList))
	want := []string{
		`{"jsonrpc":"2.0","id":"a","result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"srv","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":0,"method":"roots/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"echoing"}}`,
		`{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"hi 1"}]}}`,
		`{"jsonrpc":"2.0","id":11,"result":{"content":[{"type":"text","text":"hi 2"}]}}`,
		`{"jsonrpc":"2.0","id":12,"result":{"tools":[]}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("outputs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r := e.Report()
	if err := r.Err(); err != nil || r.Matched != 4 || len(r.Unused) != 0 {
		t.Fatalf("report: err %v matched %d unused %v, want nil 4 none", err, r.Matched, r.Unused)
	}
}

func TestEngineStrictMismatch(t *testing.T) {
	e := mustEngine(t, sessionTape(t), EngineOptions{})
	out := feed(t, e, liveInit, liveInited, liveRoots, liveEcho("10", "bye"))
	last := out[len(out)-1]
	var resp struct {
		ID    int `json:"id"`
		Error struct {
			Code    int        `json:"code"`
			Message string     `json:"message"`
			Data    Divergence `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(last.Msg, &resp); err != nil {
		t.Fatalf("divergence response %s: %v", last.Msg, err)
	}
	if resp.ID != 10 || resp.Error.Code != CodeDiverged {
		t.Fatalf("divergence response %s: want id 10 and code %d", last.Msg, CodeDiverged)
	}
	for _, want := range []string{"replay mismatch for server 's'", `request tools/call {"arguments":{"message":"bye"}`, `did not match next expected tools/call {"name":"echo","arguments":{"message":"hi"}}`, `/params/arguments/message: expected "hi", got "bye"`} {
		if !strings.Contains(resp.Error.Message, want) {
			t.Errorf("divergence message %q lacks %q", resp.Error.Message, want)
		}
	}
	d := resp.Error.Data
	if d.Reason != ReasonMismatch || d.Expected != 5 || d.ExpectedLine != 6 || len(d.Diff) != 1 || d.Diff[0].Path != "/params/arguments/message" || d.Diff[0].Expected != "hi" || d.Diff[0].Actual != "bye" {
		t.Fatalf("divergence data %+v", d)
	}
	r := e.Report()
	if err := r.Err(); !errors.Is(err, ErrDiverged) || len(r.Divergences) != 1 || len(r.Unused) != 3 {
		t.Fatalf("report err %v, %d divergences, %d unused; want ErrDiverged, 1, 3", err, len(r.Divergences), len(r.Unused))
	}
}

func TestEngineUnusedAndIgnore(t *testing.T) {
	e := mustEngine(t, sessionTape(t), EngineOptions{})
	feed(t, e, liveInit, liveInited, liveRoots, liveEcho("10", "hi"))
	r := e.Report()
	if len(r.Unused) != 2 || r.Unused[0].Line != 9 || r.Unused[1].Method != "tools/list" {
		t.Fatalf("unused %+v, want lines 9 and 11", r.Unused)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "2 unused recorded requests") {
		t.Fatalf("report error %v", err)
	}

	p, _ := tape.ParsePath("params.arguments.message")
	e = mustEngine(t, sessionTape(t), EngineOptions{Ignore: []tape.Path{p}})
	out := feed(t, e, liveInit, liveInited, liveRoots, liveEcho("10", "changes every run"))
	if last := string(out[len(out)-1].Msg); last != `{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"hi 1"}]}}` {
		t.Fatalf("with --ignore the call did not match: %s", last)
	}
}

func TestEngineKeyedAndLoose(t *testing.T) {
	tests := []struct {
		mode      Mode
		msgs      []string
		want      []string // substrings of each output, in order
		reportErr bool
	}{
		{Keyed, []string{liveList, liveEcho("1", "hi"), liveEcho("2", "hi")},
			[]string{`"id":12,"result":{"tools":[]}`, `"id":1,"result":{"content":[{"type":"text","text":"hi 1"}]}`, `"text":"hi 2"`}, true /* initialize unused */},
		{Keyed, []string{liveEcho("1", "hi"), liveEcho("2", "hi"), liveEcho("3", "hi"), liveEcho("4", "new")},
			[]string{`hi 1`, `hi 2`, `"code":-32090,"message":"replay mismatch for server 's': request tools/call {\"arguments\":{\"message\":\"hi\"},\"name\":\"echo\",\"_meta\":{\"progressToken\":7}} was sent more often than recorded`, `"reason":"unknown"`}, true},
		{Loose, []string{liveInit, liveEcho("1", "hi"), liveEcho("2", "hi"), liveEcho("3", "hi"), liveEcho("4", "new"), liveList},
			[]string{`2025-11-25`, `hi 1`, `hi 2`, `"id":3,"result":{"content":[{"type":"text","text":"hi 2"}]}`, `"id":4,"error":{"code":-32091`, `"tools":[]`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			e := mustEngine(t, sessionTape(t), EngineOptions{Mode: tt.mode})
			got := texts(feed(t, e, tt.msgs...))
			var msgs []string
			for _, g := range got {
				if !strings.Contains(g, "roots/list") && !strings.Contains(g, "notifications/message") {
					msgs = append(msgs, g)
				}
			}
			if len(msgs) != len(tt.want) {
				t.Fatalf("%v: outputs\n%s\nwant %d", tt.mode, strings.Join(msgs, "\n"), len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(msgs[i], w) {
					t.Errorf("%v: output %d = %s, want it to contain %s", tt.mode, i, msgs[i], w)
				}
			}
			r := e.Report()
			if (r.Err() != nil) != tt.reportErr {
				t.Errorf("%v: report error %v, want error %v", tt.mode, r.Err(), tt.reportErr)
			}
		})
	}
}

// A tape recorded by a client that probed server/discover, failed, and fell
// back to initialize replays to a client that starts with initialize; a
// tape whose probe succeeded does not.
func TestEngineSkipsFailedDiscoverProbe(t *testing.T) {
	probe := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`
	for _, tt := range []struct {
		name   string
		answer string
		diverg int
	}{
		{"failed probe", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, 0},
		{"unanswered probe", ``, 0},
		{"successful probe", `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"]}}`, 1},
	} {
		lines := []line{{send, 0, probe}}
		if tt.answer != "" {
			lines = append(lines, line{recv, 5, tt.answer})
		}
		lines = append(lines,
			line{send, 10, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rec","version":"1"}}}`},
			line{recv, 20, `{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"srv","version":"1"}}}`})
		e := mustEngine(t, buildIndex(t, lines...), EngineOptions{})
		got := texts(feed(t, e, liveInit))
		if n := len(e.Divergences()); n != tt.diverg {
			t.Errorf("%s: %d divergences, want %d: %q", tt.name, n, tt.diverg, got)
		}
		if tt.diverg == 0 {
			if len(got) != 1 || !strings.Contains(got[0], `"id":"a","result"`) {
				t.Errorf("%s: outputs %q", tt.name, got)
			}
			if rep := e.Report(); rep.Err() != nil {
				t.Errorf("%s: report %v, want the skipped probe not counted as unused", tt.name, rep.Err())
			}
		}
	}
}

func TestEngineDiscoverAndPing(t *testing.T) {
	for _, mode := range []Mode{Strict, Keyed} {
		e := mustEngine(t, sessionTape(t), EngineOptions{Mode: mode})
		got := texts(feed(t, e,
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
			liveInit))
		if !strings.Contains(got[0], `"id":1,"error":{"code":-32601`) || got[1] != `{"jsonrpc":"2.0","id":2,"result":{}}` || !strings.Contains(got[2], `"id":"a","result"`) {
			t.Fatalf("%v: outputs %q", mode, got)
		}
		if len(e.Divergences()) != 0 {
			t.Fatalf("%v: a discover probe or ping diverged: %+v", mode, e.Divergences())
		}
	}
}

func TestEngineOutOfOrderResponses(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`},
		line{send, 10, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fast"}}`},
		line{recv, 20, `{"jsonrpc":"2.0","id":2,"result":{"r":"fast"}}`},
		line{recv, 900, `{"jsonrpc":"2.0","id":1,"result":{"r":"slow"}}`},
	)
	e := mustEngine(t, x, EngineOptions{})
	got := texts(feed(t, e,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"slow"}}`,
		`{"jsonrpc":"2.0","id":"y","method":"tools/call","params":{"name":"fast"}}`))
	want := []string{`{"jsonrpc":"2.0","id":"x","result":{"r":"slow"}}`, `{"jsonrpc":"2.0","id":"y","result":{"r":"fast"}}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("outputs %q, want %q", got, want)
	}
	// At speed 1 the recorded latencies put the fast answer first.
	e = mustEngine(t, x, EngineOptions{Speed: 1})
	if out := e.Receive([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"slow"}}`), t0); len(out) != 0 {
		t.Fatalf("at speed 1 the slow answer came at once: %q", texts(out))
	}
	e.Receive([]byte(`{"jsonrpc":"2.0","id":"y","method":"tools/call","params":{"name":"fast"}}`), t0.Add(10*time.Millisecond))
	if due, _ := e.NextDue(); !due.Equal(t0.Add(20 * time.Millisecond)) {
		t.Fatalf("NextDue %v, want +20ms", due)
	}
	got = texts(e.Poll(t0.Add(20 * time.Millisecond)))
	if len(got) != 1 || !strings.Contains(got[0], "fast") {
		t.Fatalf("Poll at +20ms: %q, want the fast answer", got)
	}
	got = texts(e.Poll(t0.Add(900 * time.Millisecond)))
	if len(got) != 1 || !strings.Contains(got[0], "slow") {
		t.Fatalf("Poll at +900ms: %q, want the slow answer", got)
	}
}

func TestEngineSpeedNotifications(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long"}}`},
		line{recv, 100, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`},
		line{recv, 200, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2}}`},
		line{recv, 400, `{"jsonrpc":"2.0","id":1,"result":{}}`},
	)
	e := mustEngine(t, x, EngineOptions{Speed: 2})
	req := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"long"}}`
	if out := e.Receive([]byte(req), t0); len(out) != 0 {
		t.Fatalf("outputs at once at speed 2: %q", texts(out))
	}
	for _, step := range []struct {
		ms   int
		want string
	}{{49, ""}, {50, `"progress":1`}, {100, `"progress":2`}, {199, ""}, {200, `"id":5,"result"`}} {
		got := texts(e.Poll(t0.Add(time.Duration(step.ms) * time.Millisecond)))
		if step.want == "" && len(got) != 0 || step.want != "" && (len(got) != 1 || !strings.Contains(got[0], step.want)) {
			t.Errorf("Poll at %dms: %q, want %q", step.ms, got, step.want)
		}
	}
}

func TestEngineCancellation(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`},
		line{send, 50, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}`},
		line{recv, 60, `{"jsonrpc":"2.0","id":1,"result":{"late":true}}`},
		line{send, 70, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`},
		line{recv, 500, `{"jsonrpc":"2.0","id":2,"result":{"late":false}}`},
	)
	e := mustEngine(t, x, EngineOptions{})
	if out := feed(t, e, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`); len(out) != 0 {
		t.Fatalf("a request cancelled on the tape was answered before its cancellation: %q", texts(out))
	}
	got := texts(feed(t, e, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`))
	if len(got) != 1 || got[0] != `{"jsonrpc":"2.0","id":7,"result":{"late":true}}` {
		t.Fatalf("after the cancellation: %q, want the late response with id 7", got)
	}
	// At a speed, a live cancellation drops a response not yet sent.
	e = mustEngine(t, x, EngineOptions{Speed: 1})
	out := e.Receive([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`), t0)
	out = append(out, e.Receive([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`), t0)...)
	out = append(out, e.Receive([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"slow"}}`), t0)...)
	out = append(out, e.Receive([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8}}`), t0.Add(time.Millisecond))...)
	out = append(out, e.Poll(t0.Add(time.Hour))...)
	if got := texts(out); len(got) != 1 || !strings.Contains(got[0], `"id":7`) {
		t.Fatalf("after cancelling 8: %q, want only the late answer to 7", got)
	}
}

func TestEngineServerRequests(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample"}}`},
		line{recv, 10, `{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"maxTokens":5}}`},
		line{recv, 11, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"ok?"}}`},
		line{send, 20, `{"jsonrpc":"2.0","id":0,"result":{"content":{"type":"text","text":"yes"}}}`},
		line{send, 21, `{"jsonrpc":"2.0","id":1,"result":{"action":"accept"}}`},
		line{recv, 30, `{"jsonrpc":"2.0","id":1,"result":{"done":true}}`},
		line{send, 40, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample"}}`},
		line{recv, 50, `{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"maxTokens":5}}`},
		line{send, 60, `{"jsonrpc":"2.0","id":0,"result":{"content":{"type":"text","text":"yes"}}}`},
		line{recv, 70, `{"jsonrpc":"2.0","id":2,"result":{"done":true}}`},
	)
	e := mustEngine(t, x, EngineOptions{})
	got := texts(feed(t, e, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sample"}}`))
	// The recorded answer came after the client's replies: the replay's
	// answer waits for the live replies, so it can never reach the client
	// before them (a client that refuses sampling sees its refusal matter).
	want := []string{`{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"maxTokens":5}}`, `{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"ok?"}}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("outputs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// While sampling id 0 is outstanding, the tape's next server request
	// with id 0 gets another id.
	got = texts(feed(t, e, `{"jsonrpc":"2.0","id":1,"result":{"action":"decline"}}`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample"}}`))
	if len(got) < 2 || got[1] != `{"jsonrpc":"2.0","id":"tapedeck-1","method":"sampling/createMessage","params":{"maxTokens":5}}` {
		t.Fatalf("outputs %q: want the second sampling request with id \"tapedeck-1\"", got)
	}
	divs := e.Divergences()
	if len(divs) != 1 || divs[0].Reason != ReasonReply || divs[0].Diff[0].Path != "/result/action" || divs[0].Resolution != NotAnswered {
		t.Fatalf("divergences %+v, want the declined elicitation reported (and the reply to an unsent request)", divs)
	}
	if got[0] != "" || divs[0].Message == "" {
		t.Fatalf("the reply divergence should come as an output without a message, with a text: %q %q", got[0], divs[0].Message)
	}
	if len(got) != 2 {
		t.Fatalf("outputs %q: the answer to call 1 must still wait for the reply to sampling 0", got)
	}
	got = texts(feed(t, e, `{"jsonrpc":"2.0","id":0,"result":{"content":{"type":"text","text":"yes"}}}`))
	if len(got) != 1 || got[0] != `{"jsonrpc":"2.0","id":1,"result":{"done":true}}` {
		t.Fatalf("after the last reply call 1 awaited: %q, want its answer", got)
	}
	got = texts(feed(t, e, `{"jsonrpc":"2.0","id":"tapedeck-1","result":{"content":{"type":"text","text":"yes"}}}`, `{"jsonrpc":"2.0","id":99,"result":{}}`))
	if len(got) < 1 || got[0] != `{"jsonrpc":"2.0","id":2,"result":{"done":true}}` {
		t.Fatalf("after the reply call 2 awaited: %q, want its answer", got)
	}
	if divs = e.Divergences(); len(divs) != 2 || divs[1].Reason != ReasonUnexpected {
		t.Fatalf("divergences %+v, want a reply to an unknown id reported", divs)
	}
}

func TestEngineInputRequiredChain(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"book","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		line{recv, 10, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"q":{"method":"elicitation/create","params":{"message":"when?"}}}}}`},
		line{send, 20, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"book","inputResponses":{"q":{"action":"accept","content":{"day":"mon"}}}}}`},
		line{recv, 30, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"booked mon"}]}}`},
	)
	if p := x.Pair(2); p.ChainPrev != 1 {
		t.Fatalf("fixture: the retry's ChainPrev = %d, want 1", p.ChainPrev)
	}
	e := mustEngine(t, x, EngineOptions{})
	got := texts(feed(t, e,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"book","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"x"}}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"book","inputResponses":{"q":{"action":"accept","content":{"day":"mon"}}}}}`))
	if len(got) != 2 || !strings.Contains(got[0], `"id":10,"result":{"resultType":"input_required"`) || !strings.Contains(got[1], `"id":11,"result":{"content":[{"type":"text","text":"booked mon"}]}`) {
		t.Fatalf("chain outputs %q", got)
	}
	e = mustEngine(t, x, EngineOptions{})
	got = texts(feed(t, e,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"book"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"book","inputResponses":{"q":{"action":"accept","content":{"day":"tue"}}}}}`))
	if !strings.Contains(got[1], `-32090`) || !strings.Contains(got[1], `/params/inputResponses/q/content/day`) {
		t.Fatalf("a retry with other input should diverge: %q", got)
	}
}

func TestEngineHoldResolutions(t *testing.T) {
	start := []string{liveInit, liveInited, liveRoots}
	tests := []struct {
		res  Resolution
		want string
	}{
		{SendError, `"id":10,"error":{"code":-32090`},
		{AnswerRecorded, `{"jsonrpc":"2.0","id":10,"result":{"content":[{"type":"text","text":"hi 1"}]}}`},
		// Skipping both echo calls leaves tools/list, which matches.
		{SkipRecorded, `"id":10,"error":{"code":-32090`},
	}
	for _, tt := range tests {
		t.Run(tt.res.String(), func(t *testing.T) {
			e := mustEngine(t, sessionTape(t), EngineOptions{Hold: true})
			feed(t, e, start...)
			out := feed(t, e, liveEcho("10", "bye"))
			if len(out) != 1 || out[0].Msg != nil || out[0].Divergence == nil || out[0].Divergence.Resolution != Pending {
				t.Fatalf("%v: held divergence output %+v", tt.res, out)
			}
			got, err := e.Resolve(out[0].Divergence.ID, tt.res, t0)
			if err != nil {
				t.Fatalf("%v: Resolve: %v", tt.res, err)
			}
			if tt.res == SkipRecorded {
				// The next expected request is the second echo: still a mismatch, held again.
				if len(got) != 1 || got[0].Divergence == nil || got[0].Divergence.Expected != 8 {
					t.Fatalf("skip: outputs %+v, want a new held divergence against seq 8", got)
				}
				got, _ = e.Resolve(got[0].Divergence.ID, SendError, t0)
			}
			if len(got) == 0 || !strings.Contains(string(got[len(got)-1].Msg), tt.want) {
				t.Fatalf("%v: outputs %q, want %s", tt.res, texts(got), tt.want)
			}
			if _, err := e.Resolve(out[0].Divergence.ID, SendError, t0); err == nil {
				t.Fatalf("%v: resolving twice: no error", tt.res)
			}
		})
	}
}

// After the divergence error (e in the debugger) a strict replay moves
// past the expected request, so the client's next call is compared with
// the one recorded after it; SendErrorKeep keeps expecting it.
func TestEngineSendErrorMovesOn(t *testing.T) {
	for _, tt := range []struct {
		res  Resolution
		want string // the answer to the client's next call, "hi"
	}{{SendError, `"hi 2"`}, {SendErrorKeep, `"hi 1"`}} {
		t.Run(tt.res.String(), func(t *testing.T) {
			e := mustEngine(t, sessionTape(t), EngineOptions{Hold: true})
			feed(t, e, liveInit, liveInited, liveRoots)
			out := feed(t, e, liveEcho("10", "bye"))
			if len(out) != 1 || out[0].Divergence == nil {
				t.Fatalf("no held divergence: %+v", out)
			}
			if _, err := e.Resolve(out[0].Divergence.ID, tt.res, t0); err != nil {
				t.Fatal(err)
			}
			next := feed(t, e, liveEcho("11", "hi"))
			if len(next) == 0 || next[len(next)-1].Divergence != nil || !strings.Contains(string(next[len(next)-1].Msg), tt.want) {
				t.Fatalf("the next call after %v: outputs %q, want the answer %s", tt.res, texts(next), tt.want)
			}
		})
	}
}

func TestEngineServers(t *testing.T) {
	x1 := buildIndexServer(t, "alpha", line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"ping"}`})
	if e := mustEngine(t, x1, EngineOptions{}); e.Server() != "alpha" {
		t.Fatalf("Server() = %q", e.Server())
	}
	if _, err := NewEngine(x1, EngineOptions{Server: "beta"}); err == nil || !strings.Contains(err.Error(), `expected one of "alpha"`) {
		t.Fatalf("unknown server error: %v", err)
	}
}

func TestEngineParseError(t *testing.T) {
	e := mustEngine(t, sessionTape(t), EngineOptions{})
	got := texts(feed(t, e, `not json`))
	if len(got) != 1 || !strings.Contains(got[0], `"id":null,"error":{"code":-32700`) {
		t.Fatalf("outputs %q", got)
	}
}

// TestEngineProgress follows the client through the tape: each message it
// sends moves reached to the recorded message it matched and awaiting to the
// next recorded client message; a held divergence moves neither.
func TestEngineProgress(t *testing.T) {
	e, err := NewEngine(sessionTape(t), EngineOptions{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, wantReached, wantAwaiting int) {
		t.Helper()
		if r, a := e.Progress(); r != wantReached || a != wantAwaiting {
			t.Errorf("%s: Progress() = %d, %d; want %d, %d", step, r, a, wantReached, wantAwaiting)
		}
	}
	check("before the client", -1, 0)
	feed(t, e, liveInit)
	check("initialize", 0, 2)
	feed(t, e, liveInited)
	check("initialized (the tape then sends roots/list)", 2, 4)
	feed(t, e, liveRoots)
	check("the roots reply", 4, 5)
	feed(t, e, liveEcho("7", "hi"))
	check("the first echo", 5, 8)
	out := feed(t, e, liveEcho("8", "bye"))
	if len(out) != 1 || out[0].Divergence == nil || out[0].Divergence.Resolution != Pending {
		t.Fatalf("a different echo under Hold: got %+v, want one pending divergence", out)
	}
	check("a held divergence", 5, 8)
	if _, err := e.Resolve(out[0].Divergence.ID, AnswerRecorded, t0); err != nil {
		t.Fatal(err)
	}
	check("answered with the recorded response", 8, 10)
	feed(t, e, liveList)
	check("tools/list, the last request", 10, 12)
}

// unreadableTape is a tape whose second tools/call (line 3) no longer reads
// as JSON: the file changed after it was indexed.
func unreadableTape(t *testing.T) *tape.Index {
	x, b := buildIndexBytes(t, "s",
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"a"}}}`},
		line{recv, 10, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`},
		line{send, 20, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"b"}}}`},
		line{recv, 30, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`},
	)
	i := bytes.Index(b, []byte(`{"jsonrpc":"2.0","id":2,"method"`))
	b[i] = '#'
	return x
}

// A recorded request that cannot be read is not skipped in silence: the
// divergence it causes says which line could not be read, and why.
func TestEngineUnreadableRecordedRequest(t *testing.T) {
	call := func(id, msg string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + msg + `"}}}`
	}
	for _, mode := range []Mode{Strict, Keyed, Loose} {
		e := mustEngine(t, unreadableTape(t), EngineOptions{Mode: mode})
		out := feed(t, e, call("7", "a"), call("8", "b"))
		if len(out) != 2 || out[1].Divergence == nil {
			t.Fatalf("%v: outputs %q, want an answer and a divergence", mode, texts(out))
		}
		d := out[1].Divergence
		if !strings.Contains(d.Message, "the recorded request at tape line 3 could not be read: ") || d.ExpectedLine != 3 || d.Tolerated {
			t.Errorf("%v: divergence %+v, want one naming tape line 3 as unreadable, not tolerated", mode, d)
		}
		if rep := e.Report(); rep.Err() == nil {
			t.Errorf("%v: the replay passed with an unreadable recorded request", mode)
		}
	}
}

// A recorded reply to a server request that cannot be read is a
// divergence, not a silent pass.
func TestEngineUnreadableRecordedReply(t *testing.T) {
	x, b := buildIndexBytes(t, "s",
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`},
		line{recv, 10, `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`},
		line{send, 20, `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`},
		line{recv, 30, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`},
	)
	i := bytes.Index(b, []byte(`{"jsonrpc":"2.0","id":0,"result"`))
	b[i] = '#'
	e := mustEngine(t, x, EngineOptions{})
	out := feed(t, e, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo"}}`, `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`)
	divs := e.Divergences()
	if len(divs) != 1 || divs[0].Reason != ReasonReply || !strings.Contains(divs[0].Message, "the recorded reply at tape line 3 could not be read: ") {
		t.Fatalf("divergences %+v (outputs %q), want one naming the recorded reply at line 3", divs, texts(out))
	}
}

// Recorded progress notifications carry the live request's progressToken
// (mcp-go uses "p7" where the recording's client used 7), and are not sent
// to a live request that asked for no progress.
func TestEngineProgressToken(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":7}}}`},
		line{recv, 1, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1,"total":2}}`},
		line{recv, 2, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":2,"total":2}}`},
		line{recv, 3, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`},
	)
	e := mustEngine(t, x, EngineOptions{})
	out := feed(t, e, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p7"}}}`)
	got := texts(out)
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p7","progress":1,"total":2}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p7","progress":2,"total":2}}`,
		`{"jsonrpc":"2.0","id":"c","result":{"content":[]}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("outputs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !out[0].progress || out[2].progress {
		t.Errorf("progress marks: %v %v", out[0].progress, out[2].progress)
	}
	e = mustEngine(t, x, EngineOptions{})
	if got := texts(feed(t, e, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"slow"}}`)); len(got) != 1 || !strings.Contains(got[0], `"result"`) {
		t.Errorf("a call without a progressToken got %q, want only its answer", got)
	}
}

// One changed call in a strict replay is one divergence (the recorded call
// it replaces is left unused), and after a divergence the replay finds the
// client again further down the tape, saying so.
func TestEngineStrictResync(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
		line{recv, 1, `{"jsonrpc":"2.0","id":1,"result":{"n":1}}`},
		line{send, 2, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		line{recv, 3, `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`},
		line{send, 4, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bye"}}}`},
		line{recv, 5, `{"jsonrpc":"2.0","id":3,"result":{"n":3}}`},
		line{send, 6, `{"jsonrpc":"2.0","id":4,"method":"prompts/list"}`},
		line{recv, 7, `{"jsonrpc":"2.0","id":4,"result":{"prompts":[]}}`},
	)
	changed := `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"message":"HI"}}}`
	list := `{"jsonrpc":"2.0","id":"b","method":"tools/list"}`
	bye := `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo","arguments":{"message":"bye"}}}`
	prompts := `{"jsonrpc":"2.0","id":"d","method":"prompts/list"}`

	e := mustEngine(t, x, EngineOptions{})
	feed(t, e, changed, list, bye, prompts)
	rep := e.Report()
	if len(rep.Divergences) != 1 || len(rep.Unused) != 1 || rep.Unused[0].Line != 1 || rep.Matched != 3 {
		t.Fatalf("one changed call: %d divergences, unused %+v, %d matched; want 1, line 1, 3", len(rep.Divergences), rep.Unused, rep.Matched)
	}

	e = mustEngine(t, x, EngineOptions{})
	extra := `{"jsonrpc":"2.0","id":"x","method":"resources/list"}`
	got := texts(feed(t, e, extra, bye, prompts))
	rep = e.Report()
	if len(rep.Divergences) != 1 || len(rep.Resyncs) != 1 || rep.Resyncs[0].Line != 5 || rep.Resyncs[0].Skipped != 2 {
		t.Fatalf("skipped calls: %d divergences, resyncs %+v; want 1 and a resync at line 5 skipping 2", len(rep.Divergences), rep.Resyncs)
	}
	if len(rep.Unused) != 2 || len(got) != 3 || !strings.Contains(got[1], `"n":3`) || !strings.Contains(got[2], `"prompts"`) {
		t.Fatalf("skipped calls: unused %+v, outputs %q", rep.Unused, got)
	}
}

// Empty params and none are one request: mcp-go's client sends a list
// request's "params":{} where the go-sdk's sends none, and in the
// 2026-07-28 era params holding only the volatile _meta keys read as
// empty. A replay of an mcp-go client's tape to the go-sdk client
// diverged on resources/list.
func TestEngineEmptyParams(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{}}`},
		line{recv, 1, `{"jsonrpc":"2.0","id":1,"result":{"resources":[]}}`},
		line{send, 2, `{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`},
		line{recv, 3, `{"jsonrpc":"2.0","id":2,"result":{"prompts":[]}}`},
		line{send, 4, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
		line{recv, 5, `{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}`},
	)
	live := []string{
		`{"jsonrpc":"2.0","id":"a","method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":"b","method":"prompts/list","params":{}}`,
		`{"jsonrpc":"2.0","id":"c","method":"tools/list","params":{}}`,
	}
	for _, mode := range []Mode{Strict, Keyed} {
		e := mustEngine(t, x, EngineOptions{Mode: mode})
		feed(t, e, live...)
		if rep := e.Report(); rep.Err() != nil || rep.Matched != 3 {
			t.Errorf("mode %v: %d matched, %+v; want 3, no divergence", mode, rep.Matched, rep.Divergences)
		}
	}
	// Exact tells them apart.
	e := mustEngine(t, x, EngineOptions{Exact: true})
	feed(t, e, live[0])
	if rep := e.Report(); len(rep.Divergences) != 1 {
		t.Errorf("Exact: %d divergences, want 1", len(rep.Divergences))
	}
}

// In keyed mode only the server requests recorded within a call the live
// client made are sent, not those of calls it has not made.
func TestEngineKeyedServerRequestsOfOwnCall(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"roots"}}`},
		line{recv, 1, `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`},
		line{send, 2, `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`},
		line{recv, 3, `{"jsonrpc":"2.0","id":1,"result":{"n":1}}`},
		line{send, 4, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		line{recv, 5, `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`},
	)
	e := mustEngine(t, x, EngineOptions{Mode: Keyed})
	if got := texts(feed(t, e, `{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)); len(got) != 1 || !strings.Contains(got[0], `"tools"`) {
		t.Fatalf("tools/list alone: %q, want only its answer (no roots/list of the call not made)", got)
	}
}

// -32093 says whether the recording ended or the server just never answered.
func TestEngineNoAnswerSaysWhy(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hang"}}`},
		line{send, 1, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		line{recv, 2, `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`},
		line{send, 3, `{"jsonrpc":"2.0","id":3,"method":"prompts/list"}`},
	)
	e := mustEngine(t, x, EngineOptions{})
	got := texts(feed(t, e, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"hang"}}`, `{"jsonrpc":"2.0","id":"b","method":"tools/list"}`, `{"jsonrpc":"2.0","id":"c","method":"prompts/list"}`))
	if len(got) != 3 || !strings.Contains(got[0], "the server never answered it, though the tape goes on to line 2") || !strings.Contains(got[2], "the recording ended before the server answered") {
		t.Fatalf("outputs %q", got)
	}
}

// A keyed miss names the nearest recorded request of its method, with the
// diff to it, instead of only "not on the tape".
func TestEngineKeyedMissNamesNearest(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
		line{recv, 1, `{"jsonrpc":"2.0","id":1,"result":{"n":1}}`},
		line{send, 2, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":1,"b":2}}}`},
		line{recv, 3, `{"jsonrpc":"2.0","id":2,"result":{"n":2}}`},
	)
	e := mustEngine(t, x, EngineOptions{Mode: Keyed})
	feed(t, e, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"get-sum","arguments":{"a":1,"b":3}}}`)
	divs := e.Divergences()
	if len(divs) != 1 || divs[0].Expected != 2 || len(divs[0].Diff) != 1 || divs[0].Diff[0].Path != "/params/arguments/b" {
		t.Fatalf("divergences %+v, want the get-sum call at line 3 named, with the diff at /params/arguments/b", divs)
	}
	if !strings.Contains(divs[0].Message, "is not on the tape; the nearest recorded is tools/call") || !strings.Contains(divs[0].Message, "tape line 3") {
		t.Errorf("message %q", divs[0].Message)
	}
}

// A tape with thousands of servers gets an error of bounded size.
func TestEngineManyServersErrorIsShort(t *testing.T) {
	var names []string
	for i := range 5000 {
		names = append(names, fmt.Sprintf("server-%d", i))
	}
	if got := text.QuoteList(names); len(got) > 200 || !strings.Contains(got, "and 4990 more") {
		t.Errorf("quoteList of 5000 names: %d bytes: %.120s", len(got), got)
	}
}

// A timed replay waits at most MaxWait (a minute by default) for one
// recorded message: a clock that jumped to 2100 made it wait 74 years.
func TestEngineMaxWait(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		line{recv, int(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Sub(t0) / time.Millisecond), `{"jsonrpc":"2.0","id":1,"result":{}}`},
	)
	for _, tt := range []struct {
		max  time.Duration
		want time.Duration
	}{{0, DefaultMaxWait}, {5 * time.Second, 5 * time.Second}} {
		e := mustEngine(t, x, EngineOptions{Speed: 1, MaxWait: tt.max})
		e.Receive([]byte(`{"jsonrpc":"2.0","id":"a","method":"ping"}`), t0)
		if due, ok := e.NextDue(); !ok || due.Sub(t0) != tt.want {
			t.Errorf("MaxWait %v: due after %v, want %v", tt.max, due.Sub(t0), tt.want)
		}
	}
}

// A batch the recorded server rejected whole gets that one id-null answer,
// after its last member, in every mode; a batch answered member by member
// is still answered so.
func TestEngineBatchRejectedWhole(t *testing.T) {
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"rec","version":"1"}}}`
	x := buildIndex(t,
		line{send, 0, init},
		line{recv, 10, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"srv","version":"1"}}}`},
		line{send, 20, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`},
		line{recv, 30, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no batches"}}`},
		line{send, 40, `[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]`},
		line{recv, 50, `[{"jsonrpc":"2.0","id":3,"result":{}},{"jsonrpc":"2.0","id":4,"result":{}}]`},
	)
	for _, mode := range []Mode{Strict, Keyed} {
		t.Run(mode.String(), func(t *testing.T) {
			e := mustEngine(t, x, EngineOptions{Mode: mode})
			got := texts(feed(t, e, strings.Replace(init, `"id":0`, `"id":"i"`, 1),
				`[{"jsonrpc":"2.0","id":"a","method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"ping"}]`,
				`[{"jsonrpc":"2.0","id":"c","method":"ping"},{"jsonrpc":"2.0","id":"d","method":"ping"}]`))
			want := []string{
				`{"jsonrpc":"2.0","id":"i","result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"srv","version":"1"}}}`,
				`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no batches"}}`,
				`{"jsonrpc":"2.0","id":"c","result":{}}`,
				`{"jsonrpc":"2.0","id":"d","result":{}}`,
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("outputs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if r := e.Report(); r.Err() != nil || len(r.Unanswered) != 0 || r.Matched != 5 {
				t.Fatalf("report: err %v, unanswered %v, matched %d; want nil, none, 5", r.Err(), r.Unanswered, r.Matched)
			}
		})
	}
}

// A tape a rule faulted when recording replays as the client saw it: a
// server message a rule dropped is not sent, and a dropped answer is said
// to be missing rather than sent.
func TestEngineSkipsWhatRulesDropped(t *testing.T) {
	raw := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.010Z","injected":[{"rule":"no-progress","action":"block","dropped":true}]}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"kept"},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.015Z"}}
{"jsonrpc":"2.0","id":1,"result":{"content":[]},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.020Z"}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lost"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.030Z"}}
{"jsonrpc":"2.0","id":2,"result":{"content":[]},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.040Z","injected":[{"rule":"lose-it","action":"block","dropped":true}]}}
`
	x := tape.NewIndex(strings.NewReader(raw))
	if err := x.Extend(int64(len(raw)), nil); err != nil {
		t.Fatal(err)
	}
	if !x.Entry(1).Dropped || x.Entry(2).Dropped || !x.Entry(5).Dropped || !x.Entry(5).Injected {
		t.Fatalf("dropped flags: %v %v %v", x.Entry(1).Dropped, x.Entry(2).Dropped, x.Entry(5).Dropped)
	}
	e := mustEngine(t, x, EngineOptions{})
	got := strings.Join(texts(feed(t, e,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"lost"}}`)), "\n")
	if strings.Contains(got, "notifications/progress") || !strings.Contains(got, `"kept"`) {
		t.Errorf("the dropped progress was sent, or the kept log was not:\n%s", got)
	}
	if !strings.Contains(got, `"id":8,"error":{"code":-32093`) || !strings.Contains(got, "dropped by a rule when recording") {
		t.Errorf("the dropped answer:\n%s", got)
	}
}

// A tape of two recorder runs, a server/discover probe and then the
// session, serves each replay process the episode its first request opens
// (EngineOptions.Episodes); without the option, or when no episode opens
// with that method, the whole tape is served as before.
func TestEngineEpisodes(t *testing.T) {
	lc := tape.DirLifecycle
	x := buildIndex(t,
		line{lc, 0, tape.MethodStart},
		line{send, 1, `{"jsonrpc":"2.0","id":"p","method":"server/discover","params":{}}`},
		line{recv, 2, `{"jsonrpc":"2.0","id":"p","result":{"supportedVersions":["2026-07-28"]}}`},
		line{lc, 3, tape.MethodClose},
		line{lc, 10, tape.MethodStart},
		line{send, 11, `{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{}}`},
		line{recv, 12, `{"jsonrpc":"2.0","id":0,"result":{"tools":[]}}`},
		line{lc, 13, tape.MethodClose},
	)
	probe := `{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{}}`
	list := `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}`
	for _, tt := range []struct {
		name     string
		episodes bool
		live     string
		want     string
		diverged int
		unused   int
	}{
		{"probe process", true, probe, `"supportedVersions"`, 0, 0},
		{"session process", true, list, `"tools":[]`, 0, 0},
		{"session process without episodes", false, list, `-32090`, 1, 1},
		{"no episode opens with the method", true, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, `"result":{}`, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := mustEngine(t, x, EngineOptions{Episodes: tt.episodes})
			got := texts(feed(t, e, tt.live))
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Errorf("outputs %q, want one with %s", got, tt.want)
			}
			rep := e.Report()
			if len(rep.Divergences) != tt.diverged || len(rep.Unused) != tt.unused {
				t.Errorf("report: %d divergences, %d unused; want %d, %d: %+v", len(rep.Divergences), len(rep.Unused), tt.diverged, tt.unused, rep)
			}
		})
	}
}

// TestEngineResolvePastTheEnd: a divergence past the tape's end (here
// after skipping the one recorded call) has no recorded response to send
// and nothing to skip: answering it anyway, or skipping, sends the
// divergence error, so the client is answered, instead of failing and
// leaving the client waiting.
func TestEngineResolvePastTheEnd(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
		line{recv, 10, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`},
	)
	for _, res := range []Resolution{AnswerRecorded, SkipRecorded} {
		t.Run(res.String(), func(t *testing.T) {
			e := mustEngine(t, x, EngineOptions{Hold: true})
			out := feed(t, e, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bye"}}}`)
			if len(out) != 1 || out[0].Divergence == nil || out[0].Divergence.Expected != 0 {
				t.Fatalf("outputs %+v, want a held mismatch against seq 0", out)
			}
			out, err := e.Resolve(out[0].Divergence.ID, SkipRecorded, t0)
			if err != nil {
				t.Fatalf("skipping the recorded call: %v", err)
			}
			if len(out) != 1 || out[0].Divergence == nil || out[0].Divergence.Expected != -1 || out[0].Divergence.Reason != ReasonBeyondEnd {
				t.Fatalf("after the skip: outputs %+v, want a held divergence past the tape's end", out)
			}
			id := out[0].Divergence.ID
			out, err = e.Resolve(id, res, t0)
			if err != nil {
				t.Fatalf("Resolve(%v) past the tape's end: %v, want the divergence error sent", res, err)
			}
			if len(out) != 1 || !strings.Contains(string(out[0].Msg), `{"jsonrpc":"2.0","id":7,"error":{"code":-32090`) {
				t.Fatalf("Resolve(%v) past the tape's end: outputs %q, want the -32090 error to id 7", res, texts(out))
			}
			if d := e.Divergences()[id-1]; d.Resolution != SendError {
				t.Errorf("the divergence's resolution is %v, want %v (what was sent)", d.Resolution, SendError)
			}
			if _, err := e.Resolve(id, SendError, t0); err == nil {
				t.Errorf("resolving twice: no error")
			}
		})
	}
}

// TestEngineRuleAnswered: a request a rule answered at the edge was sent by
// the client: the recorded request it stands for is consumed without its
// recorded answer, not reported unused, and the report names the rule; the
// next request matches the one recorded after it. A request the tape does
// not hold is listed too, and is no divergence.
func TestEngineRuleAnswered(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
		line{recv, 10, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`},
		line{send, 20, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`},
		line{recv, 30, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"5"}]}}`},
	)
	for _, mode := range []Mode{Strict, Keyed} {
		t.Run(mode.String(), func(t *testing.T) {
			e := mustEngine(t, x, EngineOptions{Mode: mode})
			out := e.RuleAnswered([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`), "echo-from-rule", "respond", t0)
			if len(out) != 0 {
				t.Fatalf("a request a rule answered: outputs %q, want none (the rule answered it)", texts(out))
			}
			e.RuleAnswered([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nope"}}`), "nope-fails", "error", t0)
			e.RuleAnswered([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`), "quiet", "block", t0)
			got := texts(feed(t, e, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}`))
			if len(got) != 1 || !strings.Contains(got[0], `"id":9,"result":{"content":[{"type":"text","text":"5"}]}`) {
				t.Fatalf("the next request: outputs %q, want the recorded add answer", got)
			}
			rep := e.Report()
			if err := rep.Err(); err != nil || len(rep.Unused) != 0 || len(rep.Divergences) != 0 {
				t.Fatalf("report: %v, unused %+v, divergences %+v; want a clean replay", err, rep.Unused, rep.Divergences)
			}
			want := []RuleAnswer{
				{Rule: "echo-from-rule", Action: "respond", Seq: 0, Line: 1, Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"message":"hi"}}`)},
				{Rule: "nope-fails", Action: "error", Seq: -1, Method: "tools/call", Params: json.RawMessage(`{"name":"nope"}`)},
			}
			if !reflect.DeepEqual(rep.RuleAnswered, want) {
				t.Errorf("RuleAnswered %+v, want %+v", rep.RuleAnswered, want)
			}
			if rep.Requests != 3 || rep.Matched != 2 {
				t.Errorf("requests %d, matched %d; want 3 (all sent) and 2 (on the tape)", rep.Requests, rep.Matched)
			}
		})
	}
}

// A tape with more servers than the index tells apart says "more than":
// replay said "65536 servers" of 200,000.
func TestPickServerOverflow(t *testing.T) {
	var buf bytes.Buffer
	const n = 70_000
	for i := range n {
		fmt.Fprintf(&buf, `{"jsonrpc":"2.0","method":"x","_meta":{"dir":"send","server":"s%d","ts":"2026-01-01T00:00:00.000Z"}}`+"\n", i)
	}
	x := tape.NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), nil); err != nil {
		t.Fatal(err)
	}
	_, err := NewEngine(x, EngineOptions{})
	if err == nil || !strings.Contains(err.Error(), "the tape holds more than 65535 servers") || strings.Contains(err.Error(), `"(more)"`) {
		t.Errorf("got %v, want \"the tape holds more than 65535 servers\" without the index's \"(more)\"", err)
	}
	if _, err := NewEngine(x, EngineOptions{Server: "s69999"}); err == nil || !strings.Contains(err.Error(), "not among the tape's first 65535 servers") {
		t.Errorf("a server past the limit: got %v, want it said not among the first 65535", err)
	}
	if _, err := NewEngine(x, EngineOptions{Server: "s7"}); err != nil {
		t.Errorf("a server within the limit: %v", err)
	}
}

// In keyed and loose mode each recorded server message goes out with the
// client message it followed (a progress notification with the call that
// asked for it): a call made out of recorded order neither sends the
// notifications of the calls recorded before it nor leaves them without
// theirs; the roots/list a server sent after the client's
// notifications/roots/list_changed goes out when the live client sends it.
func TestEngineKeyedNotificationsFollowTheirCall(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p1"}}}`},
		line{recv, 1, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1}}`},
		line{recv, 2, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"slow"}}`},
		line{recv, 3, `{"jsonrpc":"2.0","id":1,"result":{"n":1}}`},
		line{recv, 4, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after slow"}}`},
		line{send, 5, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
		line{recv, 6, `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`},
		line{send, 7, `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`},
		line{recv, 8, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"roots"}}`},
		line{send, 9, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`},
		line{recv, 10, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"echo"}}`},
		line{recv, 11, `{"jsonrpc":"2.0","id":2,"result":{"n":2}}`},
	)
	echo := `{"jsonrpc":"2.0","id":"e","method":"tools/call","params":{"name":"echo"}}`
	slow := `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"live"}}}`
	changed := `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`
	for _, mode := range []Mode{Keyed, Loose} {
		e := mustEngine(t, x, EngineOptions{Mode: mode})
		steps := []struct {
			live string
			want []string
		}{
			{echo, []string{`"data":"echo"`, `"id":"e","result":{"n":2}`}},
			{slow, []string{`"progressToken":"live"`, `"data":"slow"`, `"id":"s","result":{"n":1}`, `"data":"after slow"`}},
			{changed, []string{`"method":"roots/list"`}},
			{`{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`, []string{`"data":"roots"`}},
		}
		for _, s := range steps {
			got := texts(feed(t, e, s.live))
			ok := len(got) == len(s.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.Contains(got[i], s.want[i])
			}
			if !ok {
				t.Fatalf("mode %v: after %s got\n%s\nwant messages holding, in order:\n%s", mode, s.live, strings.Join(got, "\n"), strings.Join(s.want, "\n"))
			}
		}
		if rep := e.Report(); rep.Err() != nil || len(rep.Unused) != 0 {
			t.Errorf("mode %v: divergences %+v, unused %+v; want none", mode, rep.Divergences, rep.Unused)
		}
	}
}

// With the stdio edge's Stderr set, the lines the recorded server wrote
// on stderr come out (Output.Stderr, Msg nil) where the tape has them:
// after the answer they followed; without it, none.
func TestEngineStderrLines(t *testing.T) {
	b := []byte(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
		`{"jsonrpc":"2.0","method":"$transport/stderr","params":{"text":"echo: called"},"_meta":{"dir":"lifecycle","server":"s","ts":"2026-05-16T12:00:00.001Z"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[]},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.002Z"}}`,
		`{"jsonrpc":"2.0","method":"$transport/stderr","params":{"text":"other: not ours"},"_meta":{"dir":"lifecycle","server":"t","ts":"2026-05-16T12:00:00.003Z"}}`,
	}, "\n") + "\n")
	x := tape.NewIndex(bytes.NewReader(b))
	if err := x.Extend(int64(len(b)), nil); err != nil {
		t.Fatal(err)
	}
	call := `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo"}}`
	e := mustEngine(t, x, EngineOptions{Server: "s"})
	e.out.stderr = true
	out := feed(t, e, call)
	if len(out) != 2 || string(out[0].Stderr) != "echo: called\n" || out[0].Msg != nil || !strings.Contains(string(out[1].Msg), `"id":"c"`) {
		t.Fatalf("outputs %+v, want the stderr line then the answer", out)
	}
	e = mustEngine(t, x, EngineOptions{Server: "s"})
	if out := feed(t, e, call); len(out) != 1 || out[0].Stderr != nil {
		t.Fatalf("without an edge that writes stderr: %+v, want only the answer", out)
	}
}
