package tape_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// stateLines: a handshake over HTTP, tools listed, a tools/list_changed,
// tools listed again with one tool swapped, a subscription, a call left
// unanswered, a ping answered, a subscription refused and one undone.
var stateLines = []string{
	`send {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{}},"clientInfo":{"name":"cli","version":"2"}}}`,
	`recv {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":false}},"serverInfo":{"name":"srv","version":"9"}}}`,
	`send {"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	`recv {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"alpha"},{"name":"beta"}]}}`,
	`recv {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
	`send {"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	`recv {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"alpha"},{"name":"gamma"}]}}`,
	`send {"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"file:///a"}}`,
	`recv {"jsonrpc":"2.0","id":3,"result":{}}`,
	`send {"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"gamma"}}`,
	`send {"jsonrpc":"2.0","id":5,"method":"ping"}`,
	`recv {"jsonrpc":"2.0","id":5,"result":{}}`,
	`send {"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{"uri":"file:///b"}}`,
	`recv {"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"no such resource"}}`,
	`send {"jsonrpc":"2.0","id":7,"method":"resources/unsubscribe","params":{"uri":"file:///a"}}`,
	`recv {"jsonrpc":"2.0","id":7,"result":{}}`,
}

func stateTape(lines []string) string {
	var b strings.Builder
	for i, l := range lines {
		dir, msg, _ := strings.Cut(l, " ")
		fmt.Fprintf(&b, `%s,"_meta":{"dir":%q,"server":"s","ts":"2026-01-01T00:00:%02d.000Z","transport":"http","http":"POST","session":"sid-1"}}`+"\n", msg[:len(msg)-1], dir, i)
	}
	return b.String()
}

func stateIndex(t *testing.T, data string) *tape.Index {
	t.Helper()
	x := tape.NewIndex(strings.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestStateAt(t *testing.T) {
	x := stateIndex(t, stateTape(stateLines))
	s := tape.NewStateIndex(x)

	st := s.At(0)
	if st.InitAt != 0 || st.Asked != "2025-11-25" || st.Version != "" || st.ClientInfo != "cli 2" || st.ServerInfo != "" {
		t.Errorf("at #0 (initialize sent): %+v", st)
	}
	if want := []tape.Capability{{"roots", []string{"listChanged"}}, {"sampling", nil}}; !reflect.DeepEqual(st.ClientCaps, want) {
		t.Errorf("client capabilities %+v, want %+v", st.ClientCaps, want)
	}
	if st.Server != "s" || st.Session != "sid-1" || !reflect.DeepEqual(st.Pending, []int{0}) || len(st.Lists) != 0 {
		t.Errorf("at #0: server %q session %q pending %v lists %+v", st.Server, st.Session, st.Pending, st.Lists)
	}

	st = s.At(3)
	if st.Version != "2025-06-18" || st.ServerInfo != "srv 9" || len(st.Pending) != 0 {
		t.Errorf("at #3: %+v", st)
	}
	if want := []tape.Capability{{"tools", []string{"listChanged"}}, {"resources", []string{"subscribe"}}}; !reflect.DeepEqual(st.ServerCaps, want) {
		t.Errorf("server capabilities %+v, want %+v (a false flag left out)", st.ServerCaps, want)
	}
	if len(st.Lists) != 1 || st.Lists[0].Method != "tools/list" || !reflect.DeepEqual(st.Lists[0].Last, &tape.Listing{Seq: 3, Names: []string{"alpha", "beta"}}) || st.Lists[0].Prev != nil {
		t.Errorf("lists at #3: %+v", st.Lists)
	}

	if l := s.At(4).Lists[0]; l.ChangedSince != 4 || l.ChangedBetween != -1 {
		t.Errorf("at #4 the list_changed is since the last listing: %+v", l)
	}

	l := s.At(6).Lists[0]
	if l.Last.Seq != 6 || l.Prev.Seq != 3 || l.ChangedBetween != 4 || l.ChangedSince != -1 {
		t.Errorf("at #6: %+v", l)
	}
	if !reflect.DeepEqual(l.Added(), []string{"gamma"}) || !reflect.DeepEqual(l.Removed(), []string{"beta"}) {
		t.Errorf("added %v removed %v, want [gamma] [beta]", l.Added(), l.Removed())
	}

	for _, c := range []struct {
		seq  int
		subs []string
	}{{7, nil}, {8, []string{"file:///a"}}, {13, []string{"file:///a"}}, {15, nil}} {
		if got := s.At(c.seq).Subscriptions; !reflect.DeepEqual(got, c.subs) {
			t.Errorf("subscriptions at #%d: %q, want %q", c.seq, got, c.subs)
		}
	}

	if got := s.At(10).Pending; !reflect.DeepEqual(got, []int{9, 10}) {
		t.Errorf("pending at #10: %v, want [9 10]", got)
	}
	if got := s.At(11).Pending; !reflect.DeepEqual(got, []int{9}) {
		t.Errorf("pending at #11: %v, want [9] (the ping answered)", got)
	}
	if !reflect.DeepEqual(tape.StateAt(x, 11), s.At(11)) {
		t.Error("StateAt differs from a StateIndex's At")
	}
}

// The index follows a growing tape: an answer appended later changes the
// state at messages after it, not before.
func TestStateIndexFollows(t *testing.T) {
	data := stateTape(stateLines[:1])
	x := tape.NewIndex(strings.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	s := tape.NewStateIndex(x)
	if st := s.At(0); st.Version != "" || len(st.Pending) != 1 {
		t.Fatalf("before the answer: %+v", st)
	}
	all := stateTape(stateLines[:4])
	x2 := tape.NewIndex(strings.NewReader(all))
	if err := x2.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	s = tape.NewStateIndex(x2)
	_ = s.At(0)
	if err := x2.Extend(int64(len(all)), nil); err != nil {
		t.Fatal(err)
	}
	if st := s.At(3); st.Version != "2025-06-18" || len(st.Pending) != 0 || len(st.Lists) != 1 {
		t.Errorf("after the tape grew: %+v", st)
	}
	if st := s.At(0); st.Version != "" || !reflect.DeepEqual(st.Pending, []int{0}) {
		t.Errorf("at #0 after the tape grew: %+v", st)
	}
}

// A request answered more than the pending window later stays pending at
// every message in between, and one never answered to the end.
func TestStatePendingFarAnswer(t *testing.T) {
	lines := []string{`send {"jsonrpc":"2.0","id":"far","method":"tools/call","params":{"name":"slow"}}`,
		`send {"jsonrpc":"2.0","id":"never","method":"ping"}`}
	for i := range 5000 {
		lines = append(lines, fmt.Sprintf(`recv {"jsonrpc":"2.0","method":"notifications/message","params":{"n":%d}}`, i))
	}
	lines = append(lines, `recv {"jsonrpc":"2.0","id":"far","result":{}}`)
	x := stateIndex(t, stateTape(lines))
	s := tape.NewStateIndex(x)
	n := len(lines)
	if got := s.At(n - 2).Pending; !reflect.DeepEqual(got, []int{0, 1}) {
		t.Errorf("pending at #%d: %v, want [0 1]", n-2, got)
	}
	if got := s.At(n - 1).Pending; !reflect.DeepEqual(got, []int{1}) {
		t.Errorf("pending at #%d: %v, want [1]", n-1, got)
	}
}

// A 2026-07-28 session has no initialize: its handshake is the
// server/discover probe (testdata/ts-v2-http, the v2 SDK's client and
// server), the client's identity in the probe's _meta and the server's in
// its answer's. A probe a server of an earlier era rejected negotiates
// nothing: the initialize after it is the handshake
// (testdata/sdk-everything-discover).
func TestStateDiscover(t *testing.T) {
	x, err := tape.OpenIndex("../testdata/ts-v2-http.tape.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	st := tape.NewStateIndex(x).At(x.Len() - 1)
	if !st.Discover || st.InitAt < 0 || x.Entry(st.InitAt).Method != tape.MethodDiscover {
		t.Fatalf("handshake at %d (discover %v): expected the server/discover probe", st.InitAt, st.Discover)
	}
	if st.ClientInfo != "v2-http-client 2.4.0" || st.ServerInfo != "v2-http-server 2.4.0" || st.Asked != "2026-07-28" || st.Version != "2026-07-28" {
		t.Errorf("client %q server %q asked %q version %q: expected the v2 client and server at 2026-07-28", st.ClientInfo, st.ServerInfo, st.Asked, st.Version)
	}
	if len(st.ServerCaps) == 0 {
		t.Errorf("no server capabilities: expected the probe's answer's (tools, prompts)")
	}
	// The client ended its subscriptions/listen with notifications/cancelled
	// (never answered): pending until then, not after.
	listen, cancel := -1, -1
	for i := range x.Len() {
		switch x.Entry(i).Method {
		case tape.MethodListen:
			listen = i
		case "notifications/cancelled":
			cancel = i
		}
	}
	if listen < 0 || cancel < listen {
		t.Fatalf("listen at %d, cancelled at %d: expected a listen request and its cancellation", listen, cancel)
	}
	si := tape.NewStateIndex(x)
	if p := si.At(cancel - 1).Pending; !slices.Contains(p, listen) {
		t.Errorf("pending before the cancellation %v: expected the listen request #%d", p, listen)
	}
	if p := si.At(cancel).Pending; slices.Contains(p, listen) {
		t.Errorf("pending after the cancellation %v: the listen request #%d was cancelled, it awaits no answer", p, listen)
	}

	y, err := tape.OpenIndex("../testdata/sdk-everything-discover.tape.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	st = tape.NewStateIndex(y).At(y.Len() - 1)
	if st.InitAt < 0 || st.Discover || y.Entry(st.InitAt).Method != "initialize" {
		t.Errorf("handshake at %d (discover %v): expected the initialize after the rejected probe", st.InitAt, st.Discover)
	}
}
