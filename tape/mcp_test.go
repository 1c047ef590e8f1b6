package tape

import (
	"bytes"
	"strings"
	"testing"
)

func TestTarget(t *testing.T) {
	for _, tt := range []struct{ method, raw, want string }{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"name":"not me"},"name":"echo"}}`, "echo"},
		{"tools/call", `{"name":"echo\u00e9","arguments":{}}`, "echoé"},
		{"prompts/get", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greet"}}`, "greet"},
		{"resources/read", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`, "file:///a"},
		{"completion/complete", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"}}}`, "p"},
		{"completion/complete", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"file:///r"}}}`, "file:///r"},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}`, ""},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, ""},
		{"tools/call", `not json`, ""},
	} {
		if got := Target(tt.method, []byte(tt.raw)); got != tt.want {
			t.Errorf("Target(%s, %s) = %q, want %q", tt.method, tt.raw, got, tt.want)
		}
	}
}

// A tool's failure (result.isError) is a failure like a JSON-RPC error,
// told apart; the request of a failed exchange reports it too.
func TestFailure(t *testing.T) {
	meta := func(dir string) string {
		return `,"_meta":{"dir":"` + dir + `","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`
	}
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail"}` + meta("send"),
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}` + meta("recv"),
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}` + meta("send"),
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}` + meta("recv")[1:],
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ok"}` + meta("send"),
		`{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":false}` + meta("recv"),
	}
	lines[3] = `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}` + meta("recv")
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l + "\n")
	}
	x := NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), nil); err != nil {
		t.Fatal(err)
	}
	want := []Failure{ToolError, ToolError, RPCError, RPCError, NoFailure, NoFailure}
	for i, w := range want {
		if got := x.Failure(i); got != w {
			t.Errorf("Failure(%d) = %v, want %v", i, got, w)
		}
	}
	if e := x.Entry(1); !e.ToolError || e.Error || e.Failed() != ToolError {
		t.Errorf("entry 1: %+v", e)
	}
	if m := x.MethodOf(1); m != "tools/call" {
		t.Errorf("MethodOf(1) = %q", m)
	}
	st := ComputeStats(x, "")
	if tot := st.Servers[0].Total; tot.Errors != 1 || tot.ToolErrors != 1 {
		t.Errorf("stats: %d errors, %d tool errors; want 1 and 1", tot.Errors, tot.ToolErrors)
	}
}

// Timestamps that leap ahead, go back, or put a response before its
// request are warned about, with their lines.
func TestClockWarnings(t *testing.T) {
	line := func(dir, ts, msg string) string {
		return msg[:len(msg)-1] + `,"_meta":{"dir":"` + dir + `","server":"s","ts":"` + ts + `"}}` + "\n"
	}
	data := line("send", "2026-05-16T12:00:00.000Z", `{"jsonrpc":"2.0","id":1,"method":"ping"}`) +
		line("recv", "2100-01-01T00:00:00.000Z", `{"jsonrpc":"2.0","method":"notifications/message"}`) +
		line("send", "2026-05-16T12:00:05.000Z", `{"jsonrpc":"2.0","id":2,"method":"ping"}`) +
		line("recv", "2026-05-16T12:00:04.000Z", `{"jsonrpc":"2.0","id":2,"result":{}}`)
	x := NewIndex(strings.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range x.Warnings() {
		got = append(got, w.Error())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"line 2: _meta.ts leaps", "line 3: _meta.ts goes back", "line 4: response id 2 is stamped 1s before its request (line 3)"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}
