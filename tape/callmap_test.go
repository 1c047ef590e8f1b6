package tape

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// TestReadCallsMappedAgrees: ReadCallsMapped gives the calls ReadCalls
// gives (same order, every field) on the tapes of
// TestReadCallsAgreesWithReader and on one of what its one-pass scan
// leaves to callMessage (escaped member names, messages that are not
// valid JSON though the index read them) or must read as callMessage does
// (duplicate ids and params, a _meta first or in the middle, targets of
// every kind, a traceparent outside params._meta); with Alias a message's
// head and tail join into ReadCalls' bytes, and only valid JSON has a
// tail; with Lean an answer is left out only where no field needs it,
// and a message's head and tail join into ReadCalls' bytes.
func TestReadCallsMappedAgrees(t *testing.T) {
	paths := append(agreementTapes(t), fastPathTape(t))
	var tails, copies, skipped int
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := MapTape(f)
		if len(data) == 0 {
			if err == nil {
				t.Errorf("%s: an empty tape mapped", path)
			}
			f.Close()
			continue // ReadCalls reads it
		}
		if err != nil {
			t.Fatal(err)
		}
		cut := bytes.IndexByte(data[len(data)/2:], '\n') + len(data)/2 + 1
		for _, size := range []int{len(data), cut} {
			x := NewIndex(bytes.NewReader(data))
			if err := x.Extend(int64(size), nil); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if size == len(data) && len(data) > 0 {
				shorterThanIndex(t, path, data, x)
			}
			for _, server := range append([]string{""}, x.Servers()...) {
				var want []Call
				if err := ReadCalls(bytes.NewReader(data), x, server, func(c Call) error { want = append(want, c); return nil }); err != nil {
					t.Fatal(err)
				}
				for _, o := range []CallOptions{{}, {Alias: true}, {Lean: true}, {Alias: true, Lean: true}} {
					where := fmt.Sprintf("%s (%d bytes indexed, server %q, %+v)", path, size, server, o)
					var got []Call
					if err := ReadCallsMapped(m, x, server, o, func(c Call) error { got = append(got, c); return nil }); err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					if len(got) != len(want) {
						t.Fatalf("%s: %d calls, ReadCalls gives %d", where, len(got), len(want))
					}
					for i, g := range got {
						w := want[i]
						if !o.Alias && !o.Lean && (g.RequestTail != nil || g.ResponseTail != nil) {
							t.Fatalf("%s: call %d has a tail without Alias or Lean", where, i)
						}
						for _, b := range []struct{ head, tail *[]byte }{{&g.RequestRaw, &g.RequestTail}, {&g.ResponseRaw, &g.ResponseTail}} {
							if *b.tail == nil {
								if *b.head != nil {
									copies++
								}
								continue
							}
							tails++
							joined := joinTail(*b.head, *b.tail)
							if o.Alias && !o.Lean && !jsonscan.Valid(joined) {
								t.Errorf("%s: call %d: %s then %s is not valid JSON, yet has a tail", where, i, *b.head, *b.tail)
							}
							*b.head, *b.tail = joined, nil
						}
						if o.Lean && g.ResponseRaw == nil && w.ResponseRaw != nil {
							if g.Method == "initialize" || g.Status == "error" || g.Status == "negotiation" {
								t.Errorf("%s: call %d (%s) has no answer's bytes with Lean", where, i, w)
							}
							skipped++
							g.ResponseRaw = w.ResponseRaw
						}
						if !g.End.Equal(w.End) {
							t.Errorf("%s: call %d ends at %v, ReadCalls' %v", where, i, g.End, w.End)
						}
						g.End = w.End
						if !reflect.DeepEqual(g, w) {
							t.Errorf("%s: call %d is\n%#v\nReadCalls'\n%#v", where, i, g, w)
						}
					}
					if len(want) > 1 {
						stop := errors.New("stop")
						n := 0
						if err := ReadCallsMapped(m, x, server, o, func(Call) error { n++; return stopAt(n, 2, stop) }); err != stop || n != 2 {
							t.Fatalf("%s: fn failing at the second call: %v after %d", where, err, n)
						}
					}
				}
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if tails == 0 || copies == 0 || skipped == 0 {
		t.Errorf("%d messages left in place, %d copied, %d answers skipped: expected some of each", tails, copies, skipped)
	}
}

// shorterThanIndex: a tape cut (mid-line, at two thirds) after x indexed
// it gives ReadCallsMapped the calls it gives ReadCalls, up to the cut.
func shorterThanIndex(t *testing.T, path string, data []byte, x *Index) {
	short := data[:len(data)*2/3]
	p := filepath.Join(t.TempDir(), "short.tape.jsonl")
	if err := os.WriteFile(p, short, 0o644); err != nil {
		t.Fatal(err)
	}
	want, got := callsBothWays(t, short, mappedPath(t, p), x)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s cut to %d bytes: %d calls, ReadCalls gives %d, or they differ", path, len(short), len(got), len(want))
	}
}

// callsBothWays reads x's calls from data with ReadCalls (want) and
// from m with ReadCallsMapped (got).
func callsBothWays(t *testing.T, data []byte, m *Mapping, x *Index) (want, got []Call) {
	t.Helper()
	if err := ReadCalls(bytes.NewReader(data), x, "", func(c Call) error { want = append(want, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := ReadCallsMapped(m, x, "", CallOptions{}, func(c Call) error { got = append(got, c); return nil }); err != nil {
		t.Fatal(err)
	}
	return want, got
}

// fastPathTape writes a tape of what ReadCallsMapped's scan must read as
// callMessage, Target and the traceparent's lookup read it, or leave to them.
func fastPathTape(t *testing.T) string {
	const meta = `"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}`
	const rmeta = `"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:01.000Z"}`
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{},` + meta + `}`,
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"},` + rmeta + `}`,
		// duplicate ids and params: the last id, the first params
		`{"jsonrpc":"2.0","id":"a","id":2,"method":"tools/call","params":{"name":"first"},"params":{"name":"second"},` + meta + `}`,
		`{"jsonrpc":"2.0","id":2,"result":{"content":[]},` + rmeta + `}`,
		// _meta first, and in the middle with white space
		`{` + meta + `,"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p"}}`,
		`{ "jsonrpc" : "2.0" , ` + rmeta + ` , "id" : 3 , "result" : { } }`,
		// a resource, a completion's ref by name and by uri, a non-object params, no params
		`{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"file:///a","name":"not this"},` + meta + `}`,
		`{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"r"}},` + meta + `}`,
		`{"jsonrpc":"2.0","id":6,"method":"completion/complete","params":{"ref":{"uri":"file:///r"}},` + meta + `}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"name",` + meta + `}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","name":"top",` + meta + `}`,
		// traceparents: in params._meta, only in the arguments, in a second _meta
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"t","_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},` + meta + `}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"t","arguments":{"traceparent":"x"}},` + meta + `}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"_meta":{},"_meta":{"traceparent":"y"}},` + meta + `}`,
		// escaped member names: left to callMessage
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"n\u0061me":"esc","_meta":{"trace\u0070arent":"z"}},` + meta + `}`,
		`{"jsonrpc":"2.0","\u0069d":13,"id":13,"method":"ping",` + meta + `}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"m","_meta":{"tr\u0061ceparent":"w","traceparent":"v"}},` + meta + `}`,
		// not valid JSON, though its structure holds: copied
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"bad","arguments":{"x":tru}},` + meta + `}`,
		`{"jsonrpc":"2.0","id":15,"result":{"content":[{"type":"text","text":"\x"}]},` + rmeta + `}`,
		// literals holding a quote or a bracket, which members and skipValue read apart
		`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"odd","a":t"}"},` + meta + `}`,
		`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"a":t{,"name":"odder"}},` + meta + `}`,
		`{"jsonrpc":"2.0","id":18,"result":{"x":n"]"},` + rmeta + `}`,
		// an error and a tool error
		`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"e"},` + meta + `}`,
		`{"jsonrpc":"2.0","id":16,"error":{"code":-32602,"message":"bad \"params\""},` + rmeta + `}`,
		`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"te"},` + meta + `}`,
		`{"jsonrpc":"2.0","id":17,"result":{"isError":true,"content":[]},` + rmeta + `}`,
		`{"jsonrpc":"2.0","id":4,"result":{"contents":[]},` + rmeta + `}`,
		`{"jsonrpc":"2.0","id":9,"result":{},` + rmeta + `}`,
	}
	p := filepath.Join(t.TempDir(), "fast.tape.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadCallsMappedOneCore: on one core ReadCallsMapped reads its ranges
// on the caller's goroutine, with the same calls, and stops where fn fails.
func TestReadCallsMappedOneCore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if _, err := WriteSynth(path, SynthOptions{Messages: 5000, Seed: 9, Profile: SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex(bytes.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	m := mappedPath(t, path)
	want, got := callsBothWays(t, data, m, x)
	if len(want) < 2*readChunkLen/2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("%d calls, ReadCalls gives %d (expected more than a range's), or they differ", len(got), len(want))
	}
	stop := errors.New("stop")
	n := 0
	if err := ReadCallsMapped(m, x, "", CallOptions{}, func(Call) error { n++; return stopAt(n, len(want)/2, stop) }); err != stop || n != len(want)/2 {
		t.Fatalf("fn failing at call %d: %v after %d", len(want)/2, err, n)
	}
}
