package compare

import (
	"bytes"
	"encoding/json"
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

// TestDigestedKeysAgree: the key calls hashes (long string values digested
// on the way by the scan) is the canonical bytes the decoding path gives
// with the same strings digested after (digester.canon), for every message
// TestScanAgreesWithGjson reads and every normalizer: two calls' params
// are the same key by either path exactly when their canonical bytes are
// the same. And a long string is digested: two params that differ in one
// byte of it get different keys, params with the same meaning the same.
func TestDigestedKeysAgree(t *testing.T) {
	d := &digester{seed: maphash.MakeSeed()}
	long := strings.Repeat("lorem ipsum ", 20)
	msgs := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":{"q":"` + long + `","n":[1,"` + long + `"]}},"_meta":{"ts":"x"}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"n":[1.0,"` + long + `"],"q":"` + long + `"},"name":"s"},"_meta":{"ts":"x"}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":{"q":"\u006C` + long[1:] + `","n":[1,"` + long + `"]}},"_meta":{"ts":"x"}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":{"q":"L` + long[1:] + `","n":[1,"` + long + `"]}},"_meta":{"ts":"x"}}`),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s","arguments":{"` + long + `":"\u00e9` + long + `"}},"_meta":{"ts":"x"}}`),
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		p := randomParams(rng)
		if p == "" {
			p = "null"
		}
		if rng.IntN(2) == 0 {
			p = strings.NewReplacer(`"plain"`, `"`+long+`"`, `"é"`, `"é`+long+`"`, `"\u0041"`, `"\u0041`+long+`"`, `"tab`, `"tab`+long).Replace(p)
		}
		msgs = append(msgs, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+p+`,"_meta":{"ts":"x"}}`))
	}
	key := []byte("tools/call\x00")
	digested := 0
	for _, n := range []*tape.Normalizer{{}, {Exact: true}, {KeepVolatile: true}, {Ignore: []tape.Path{{"arguments", "x"}}}} {
		cs := canonScan{digest: d}
		for _, m := range msgs {
			got := paramsKey(&cs, slices0(key), m, n)
			want := gjsonParamsKey(key, m, n)
			if params := gjsonGet(m, "params").Raw; json.Valid([]byte(params)) {
				want = d.canon(nil, want)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("normalizer %+v, message %s: digested key %q, decoded and digested %q", *n, m, got, want)
			}
			if bytes.IndexByte(got, 0xFF) >= 0 {
				digested++
			}
		}
	}
	if digested < 100 {
		t.Errorf("only %d keys digested a string: the test does not test it", digested)
	}
	var cs canonScan
	cs.digest = d
	k := make([][]byte, 4)
	for i := range k {
		k[i] = paramsKey(&cs, slices0(key), msgs[i], &tape.Normalizer{})
	}
	if !bytes.Equal(k[0], k[1]) || !bytes.Equal(k[0], k[2]) {
		t.Errorf("params of one meaning keyed apart:\n%q\n%q\n%q", k[0], k[1], k[2])
	}
	if bytes.Equal(k[0], k[3]) {
		t.Errorf("params that differ in a long string keyed alike: %q", k[0])
	}
}

// TestAnswerHash: answerHash's fast region starts with the answer's bytes
// (answerBytes), so equal hashes mean equal answers, for every response
// TestScanAgreesWithGjson reads; it is taken only where the tape's _meta
// closes the message, and a member between the result and the _meta
// changes the hash but not the answer.
func TestAnswerHash(t *testing.T) {
	seed := maphash.MakeSeed()
	for _, c := range []struct {
		msg  string
		fast bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"a":"x"},"_meta":{"dir":"recv","ts":"t"}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"a":"x"} , "_meta" :{"dir":"recv"} } `, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"a":"x"},"_meta":{"dir":"recv"}} `, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"a":"x","_meta":{"dir":"recv"}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"_meta":{"dir":"recv"},"result":{"a":"x","_meta":{"y":1}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":"a,\"_meta\":{}}","x":1}`, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1},"_meta":{"dir":"recv"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":[1,2],"extra":3,"_meta":{"dir":"recv"}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":[1,2],"_meta":{"dir":"recv","x":{"y":1}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":[1,2],"_meta":{"dir":"recv","ts":"{"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":[1,2],"_meta":{"dir":"recv","_meta":{"y":1}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"_meta":{"y":1}},"x":{"_meta":{}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"_meta":{"dir":"recv"},"result":{"a":"x"},"_meta":{"dir":"recv"}}`, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"_meta\":{\"dir\":\"recv\"}}\r\n", true},
	} {
		v, ok := resultToMeta([]byte(c.msg))
		if ok != c.fast {
			t.Errorf("%s: fast %v, want %v", c.msg, ok, c.fast)
		}
		if ok && !bytes.HasPrefix(v, answerBytes([]byte(c.msg))) {
			t.Errorf("%s: region %s does not start with the answer %s", c.msg, v, answerBytes([]byte(c.msg)))
		}
		if h := answerHash(seed, []byte(c.msg)); h&1 == 1 != c.fast {
			t.Errorf("%s: hash tagged %d", c.msg, h&1)
		}
	}
	// Every response of the testdata tapes and of a synthetic one.
	paths, _ := filepath.Glob("../../testdata/*.tape.jsonl")
	hostile, _ := filepath.Glob("../../testdata/hostile/*.tape.jsonl")
	synth := filepath.Join(t.TempDir(), "realistic.tape.jsonl")
	if _, err := tape.WriteSynth(synth, tape.SynthOptions{Messages: 2000, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	fast := 0
	for _, p := range append(append(paths, hostile...), synth) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for l := range bytes.Lines(data) {
			if v, ok := resultToMeta(l); ok {
				fast++
				if want := answerBytes(l); !bytes.HasPrefix(v, want) {
					t.Fatalf("%s: %.80s: region %.80s does not start with the answer %.80s", p, l, v, want)
				}
			}
		}
	}
	if fast < 500 {
		t.Errorf("only %d answers hashed by their region", fast)
	}
	a := []byte(`{"jsonrpc":"2.0","id":1,"result":[1,2],"extra":3,"_meta":{"dir":"recv"}}`)
	b := []byte(`{"jsonrpc":"2.0","id":2,"result":[1,2],"extra":4,"_meta":{"dir":"recv","ts":"t"}}`)
	if answerHash(seed, a) == answerHash(seed, b) {
		t.Error("answers with different members after the result hashed alike")
	}
	c := []byte(`{"jsonrpc":"2.0","id":2,"result":[1,2],"_meta":{"dir":"recv","ts":"u"}}`)
	d := []byte(`{"jsonrpc":"2.0","id":3,"result":[1,2],"_meta":{"dir":"recv","ts":"v"}}`)
	if answerHash(seed, c) != answerHash(seed, d) {
		t.Error("the same result with different ids and _meta hashed apart")
	}
}
