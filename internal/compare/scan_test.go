package compare

import (
	"bytes"
	"hash/maphash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// gjsonParamsKey and gjsonAnswer are what calls computed before the member
// scan: gjson found the params or the answer, then the canonical scan (or
// the decoding path) read them.
func gjsonParamsKey(key, raw []byte, n *tape.Normalizer) []byte {
	params := gjsonGet(raw, "params").Raw
	var cs canonScan
	if b, ok := cs.params(slices0(key), []byte(params), n); ok {
		return b
	}
	if v, err := n.NormalizeParams([]byte(params)); err == nil {
		if b, err := tape.CanonicalValue(v); err == nil {
			return append(slices0(key), b...)
		}
	}
	return append(slices0(key), params...)
}

func slices0(b []byte) []byte { return append([]byte(nil), b...) }

func gjsonAnswer(raw []byte) []byte {
	ans := gjsonGet(raw, "result")
	if !ans.Exists() {
		ans = gjsonGet(raw, "error")
	}
	return []byte(ans.Raw)
}

// TestScanAgreesWithGjson: the member scan gives calls the same params key
// and the same answer bytes as finding the members with gjson did, for every
// message of the testdata tapes, of synthetic ones and of odd hand-made and
// random messages (members in any order, duplicates, escaped keys, params
// that are not objects, values glued to what follows).
func TestScanAgreesWithGjson(t *testing.T) {
	var msgs [][]byte
	paths, _ := filepath.Glob("../../testdata/hostile/*.tape.jsonl")
	more, _ := filepath.Glob("../../testdata/*.tape.jsonl")
	paths = append(append(paths, more...), "../../tape/testdata/oauth-stepup.tape.jsonl")
	synth := filepath.Join(t.TempDir(), "realistic.tape.jsonl")
	if _, err := tape.WriteSynth(synth, tape.SynthOptions{Messages: 2000, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(t.TempDir(), "small.tape.jsonl")
	if _, err := tape.WriteSynth(small, tape.SynthOptions{Messages: 2000, Profile: tape.SynthSmall}); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, synth, small)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for l := range bytes.Lines(data) {
			msgs = append(msgs, bytes.TrimRight(l, "\r\n"))
		}
	}
	for _, m := range []string{
		`{"params":{"b":1,"a":2},"id":1,"method":"tools/call"}`,
		`{"id":1,"method":"x","params":{"a":1},"params":{"b":2}}`,
		`{"id":1,"method":"x","par\u0061ms":{"a":1}}`,
		`{"id":1,"method":"x","params":[1, 2 ,3]}`,
		`{"id":1,"method":"x","params":"s"}`,
		`{"id":1,"method":"x","params":12}`,
		`{"id":1,"method":"x","params":12x}`,
		`{"id":1,"method":"x","params":truex,"a":1}`,
		`{"id":1,"method":"x","params":null}`,
		`{"id":1,"method":"x"}`,
		`{"id":1,"method":"x","params" : { "z" : "\u00e9" , "a":[ ] } , "_meta":{}}`,
		`{"id":1,"method":"x","params":{"q":"a\\\"b"}}`,
		`{"id":1,"result":{"a":"}]\"{"},"_meta":{"ts":"x"}}`,
		`{"id":1,"error":{"code":-1},"result":7}`,
		`{"id":1,"error":{"code":-1}}`,
		`{"id":1,"r\u0065sult":{"a":1},"error":{}}`,
		`{"id":1,"result":"text with \\\\\" quotes"}`,
		`{"id":1,"result":[ {"a" : [1,{"b":[]}]} ] }`,
		`{"id":1}`,
		`{}`,
		` {"id":1,"result":true }`,
	} {
		msgs = append(msgs, []byte(m))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		p := randomParams(rng)
		if p == "" {
			p = "null"
		}
		msgs = append(msgs, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+p+`,"_meta":{"ts":"x"}}`))
		msgs = append(msgs, []byte(`{"jsonrpc":"2.0","id":1,"result":`+p+`}`))
	}
	key := []byte("tools/call\x00")
	for _, n := range []*tape.Normalizer{{}, {Exact: true}, {KeepVolatile: true}, {Ignore: []tape.Path{{"result", "x"}}}} {
		var cs canonScan
		for _, m := range msgs {
			if !strings.HasPrefix(strings.TrimSpace(string(m)), "{") {
				continue // not an object: the index calls it no request or response
			}
			got := paramsKey(&cs, slices0(key), m, n)
			if want := gjsonParamsKey(key, m, n); !bytes.Equal(got, want) {
				t.Fatalf("normalizer %+v, message %s: params key %q, gjson's path %q", *n, m, got, want)
			}
			if got, want := answerBytes(m), gjsonAnswer(m); !bytes.Equal(got, want) {
				t.Fatalf("message %s: answer %q, gjson's %q", m, got, want)
			}
		}
	}
}

// TestAnswersAgreeWithLastAnswer: the last answers found in one walk a
// server are those lastAnswer finds in a walk a method, on every testdata
// tape, for every server and method asked (one no list names included).
func TestAnswersAgreeWithLastAnswer(t *testing.T) {
	paths, _ := filepath.Glob("../../testdata/*.tape.jsonl")
	hostile, _ := filepath.Glob("../../testdata/hostile/*.tape.jsonl")
	methods := []string{"initialize", tape.MethodDiscover, "tools/call"}
	for _, l := range tape.Lists() {
		methods = append(methods, l.Method)
	}
	found := 0
	for _, p := range append(paths, hostile...) {
		x, err := tape.OpenIndex(p)
		if err != nil {
			continue // no index is made of it (empty)
		}
		a := newAnswers(x)
		seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
		for _, s := range append(x.Servers(), "nobody") {
			// filled in on the way by calls
			filled := newAnswers(x)
			side := Side{Name: p, Index: x, Open: func() (io.ReadCloser, error) { return os.Open(p) }}
			if _, err := calls(side, s, &tape.Normalizer{}, seeds, nil, filled); err != nil {
				t.Fatal(err)
			}
			if _, ok := filled.seqs[s]; !ok {
				t.Errorf("%s, server %q: calls gave no last answers", p, s)
			}
			for _, m := range methods {
				got, want := a.last(s, m), lastAnswer(x, s, m)
				if !bytes.Equal(got, want) {
					t.Errorf("%s, server %q, %s: %.60q, lastAnswer %.60q", p, s, m, got, want)
				}
				if got := filled.last(s, m); !bytes.Equal(got, want) {
					t.Errorf("%s, server %q, %s: %.60q as calls found it, lastAnswer %.60q", p, s, m, got, want)
				}
				if want != nil {
					found++
				}
			}
		}
		x.Close()
	}
	if found < 20 {
		t.Errorf("only %d answers found: the tapes do not test it", found)
	}
}
