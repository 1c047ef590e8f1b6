package record

import (
	"bytes"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// TestRecordMetaFastPath checks that the proxy's fast path writes the line
// tape.Writer writes for the same message and _meta, for every member.
func TestRecordMetaFastPath(t *testing.T) {
	full := &exchange{method: "POST", session: "s-1", protocolVersion: "2025-06-18", mcpMethod: "tools/call", mcpName: "echo", newSession: "s-2"}
	odd := &exchange{method: "GET", session: "a\"b\\c\u2028<&>\x01é"}
	cases := []recordMeta{
		{ex: full},
		{ex: full, status: 200},
		{ex: full, status: 200, stream: 7, event: "ev-1", hasEvent: true},
		{ex: full, status: 200, stream: 7, event: "", hasEvent: true},
		{ex: full, status: 400, inReplyTo: `"abc"`},
		{ex: &exchange{method: "POST"}},
		{ex: &exchange{method: "POST"}, status: 202},
		{ex: &exchange{method: "POST", no: 12}},
		{ex: &exchange{method: "POST", no: 12, newSession: "s-9"}, status: 200, stream: 3, event: "e", hasEvent: true},
		{ex: odd, status: 200, stream: 1, event: "<é>", hasEvent: true},
	}
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"x":"<&>"}}`)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	for i, m := range cases {
		var want bytes.Buffer
		if err := tape.NewWriter(&want).Write(msg, tape.Meta{Dir: tape.DirRecv, Server: "srv", Time: ts, Extra: m.fields()}); err != nil {
			t.Fatal(err)
		}
		got, ok := tape.NewEncoder(tape.DirRecv, "srv").AppendLineMeta(nil, msg, ts, m.appendJSON(nil))
		if !ok {
			t.Fatalf("case %d: the fast path refused a plain message", i)
		}
		if string(got) != want.String() {
			t.Errorf("case %d:\ngot  %s\nwant %s", i, got, want.String())
		}
	}
}

// TestReadBody reads bodies of declared, wrong and unknown lengths whole.
func TestReadBody(t *testing.T) {
	body := bytes.Repeat([]byte("abcdefgh"), 1000)
	for _, size := range []int64{-1, 0, 1, 100, int64(len(body)), int64(len(body)) + 5, 1 << 30} {
		got, err := readBody(bytes.NewReader(body), size)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("size %d: got %d bytes, %v; want %d bytes", size, len(got), err, len(body))
		}
	}
}

// TestShadowMetaFastPath checks that a shadow lane record's fast path
// writes the line tape.Writer writes for the same message and _meta: the
// lane's members sorted in among the HTTP ones (shadow* before status).
func TestShadowMetaFastPath(t *testing.T) {
	post := tape.HTTPMeta{HTTP: true, Method: "POST", Session: "b-1", Protocol: "2025-06-18"}
	answered := post
	answered.Status, answered.NewSession = 200, "b-2"
	odd := tape.HTTPMeta{HTTP: true, Method: "DELETE", Session: "a\"b\\c\u2028<&>\x01é", Status: 404}
	cases := []shadowMeta{
		{},
		{of: []byte(`7`), client: "c-1"},
		{http: post},
		{http: post, of: []byte(`"x,\"status\":1"`), client: "c-1"},
		{http: answered, of: []byte(`7`), client: "c-1"},
		{http: answered, client: `,"status":`},
		{http: odd, of: []byte(`{"a":1}`)},
		{http: tape.HTTPMeta{HTTP: true, Method: "POST", Status: 202, Stream: 3}},
	}
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"x":"<&>"}}`)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	for i, m := range cases {
		var want bytes.Buffer
		if err := tape.NewWriter(&want).Write(msg, tape.Meta{Dir: tape.DirRecv, Server: "srv~shadow", Time: ts, Extra: m.fields()}); err != nil {
			t.Fatal(err)
		}
		got, ok := tape.NewEncoder(tape.DirRecv, "srv~shadow").AppendLineMeta(nil, msg, ts, m.appendJSON(nil))
		if !ok {
			t.Fatalf("case %d: the fast path refused a plain message", i)
		}
		if string(got) != want.String() {
			t.Errorf("case %d:\ngot  %s\nwant %s", i, got, want.String())
		}
	}
}
