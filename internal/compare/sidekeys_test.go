package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// mutateTape rewrites some lines of a synthetic tape so that they mean
// what they meant in other bytes (params' keys reordered and spaced, a
// string's letter as a \u escape, a volatile _meta member added, an
// answer spaced) or, with rename, mean something else (a tool's name
// changed).
func mutateTape(t *testing.T, data []byte, rename bool) []byte {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	n := 0
	for i, l := range lines {
		switch {
		case strings.Contains(l, `"method":"tools/call"`):
			n++
			switch n % 6 {
			case 1: // keys reordered (encoding/json sorts them), spaces after colons
				var msg map[string]json.RawMessage
				if err := json.Unmarshal([]byte(l), &msg); err != nil {
					t.Fatal(err)
				}
				var params map[string]any
				if err := json.Unmarshal(msg["params"], &params); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(params)
				b = bytes.ReplaceAll(b, []byte(`":{`), []byte(`": {`))
				l = strings.Replace(l, string(msg["params"]), string(b), 1)
			case 2: // a letter of the query as an escape
				if k := strings.Index(l, `"query":"`); k >= 0 {
					if e := strings.IndexByte(l[k+9:], 'e'); e >= 0 {
						at := k + 9 + e
						l = l[:at] + `\u0065` + l[at+1:]
					}
				}
			case 3: // a progress token in the params' _meta
				l = strings.Replace(l, `"params":{`, `"params":{"_meta":{"progressToken":7},`, 1)
			case 4: // another name: a different call
				if rename {
					l = strings.Replace(l, `"name":"`, `"name":"x`, 1)
				}
			case 5: // a member of the tape's _meta
				l = strings.Replace(l, `"_meta":{"dir"`, `"_meta":{"x":"y","dir"`, 1)
			}
		case rename && strings.Contains(l, `"error":{"code":`) && i%2 == 0: // another error
			l = strings.Replace(l, `"error":{"code":-32602`, `"error":{"code":-32099`, 1)
		case strings.Contains(l, `"result":{"content"`) && i%5 == 0:
			l = strings.Replace(l, `"result":{"content":`, `"result": { "content" :`, 1)
		}
		lines[i] = l
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// TestKeyedSameAsPlain: sides whose indexes computed the calls' keys and
// answers' hashes (OpenSideKeyed, as tapedeck diff opens them) compare
// exactly as sides read by Compare itself (OpenSide): on a tape against
// itself, against a tape with changed answers and calls left out, and
// against copies whose params and answers are in other bytes of the same
// meaning or of another, with and without ignored paths.
func TestKeyedSameAsPlain(t *testing.T) {
	dir := t.TempDir()
	pa, pb, pm := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "m.jsonl")
	opts := tape.SynthOptions{Messages: 4000, Seed: 5, Profile: tape.SynthRealistic}
	if _, err := tape.WriteSynth(pa, opts); err != nil {
		t.Fatal(err)
	}
	opts.ChangeEvery, opts.DropEvery = 50, 300
	if _, err := tape.WriteSynth(pb, opts); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pm, mutateTape(t, data, true), 0o644); err != nil {
		t.Fatal(err)
	}
	same := filepath.Join(dir, "same.jsonl") // a's meaning in other bytes
	if data, err = os.ReadFile(pa); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(same, mutateTape(t, data, false), 0o644); err != nil {
		t.Fatal(err)
	}
	report := func(r Report) string {
		var buf bytes.Buffer
		if err := r.WriteText(&buf); err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s\n%s\n%d %v", buf.String(), j, r.Differences(), r.Servers[0].Aligned)
	}
	ignore := []tape.Path{{"result", "content", "0", "text"}}
	for _, pair := range [][2]string{{pa, pa}, {pa, pb}, {pa, pm}, {pm, pa}, {pm, pb}, {pa, same}, {same, pb}} {
		for _, o := range []Options{{LatencyAbs: 100 * time.Millisecond, LatencyRatio: 2}, {Ignore: ignore}} {
			name := filepath.Base(pair[0]) + "-" + filepath.Base(pair[1]) + fmt.Sprint("-ignore", len(o.Ignore))
			a, err := OpenSide(pair[0])
			if err != nil {
				t.Fatal(err)
			}
			b, err := OpenSide(pair[1])
			if err != nil {
				t.Fatal(err)
			}
			want, err := Compare(a, b, o)
			a.Index.Close()
			b.Index.Close()
			if err != nil {
				t.Fatal(err)
			}
			k := NewKeys(o)
			ka, err := OpenSideKeyed(pair[0], k)
			if err != nil {
				t.Fatal(err)
			}
			kb, err := OpenSideKeyed(pair[1], k)
			if err != nil {
				t.Fatal(err)
			}
			digested := 0
			for _, x := range []*tape.Index{ka.Index, kb.Index} {
				ds := x.Digests()
				for i := range x.Len() {
					if ds.At(i).OK {
						digested++
					}
				}
			}
			if digested < (ka.Index.Len()+kb.Index.Len())*3/4 {
				t.Fatalf("%s: %d of %d messages digested by the indexes, expected most", name, digested, ka.Index.Len()+kb.Index.Len())
			}
			got, err := Compare(ka, kb, o)
			ka.Index.Close()
			kb.Index.Close()
			if err != nil {
				t.Fatal(err)
			}
			if g, w := report(got), report(want); g != w {
				t.Errorf("%s: keyed sides compare otherwise:\n got %.2000s\nwant %.2000s", name, g, w)
			}
			if pair[0] == pair[1] && want.Differences() != 0 {
				t.Errorf("%s: a tape against itself: %d differences", name, want.Differences())
			}
			if pair[1] == same && got.Differences() != 0 {
				t.Errorf("%s: the same calls in other bytes: %d differences, want none", name, got.Differences())
			}
			if pair[1] == pm && got.Differences() <= 10 {
				t.Errorf("%s: %d differences, want more than 10 (one call in 6 renamed)", name, got.Differences())
			}
		}
	}
}
