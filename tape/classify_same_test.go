package tape

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// sameLines gathers lines to classify both ways: every line of the
// testdata tapes and hostile inputs, the fuzz corpora, the fuzz seeds and
// synthetic tapes of each profile.
func sameLines(t *testing.T) [][]byte {
	t.Helper()
	var lines [][]byte
	addFile := func(data []byte) {
		for _, l := range bytes.Split(data, []byte("\n")) {
			lines = append(lines, l)
		}
	}
	for _, root := range []string{"../testdata", "testdata"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.HasPrefix(data, []byte("go test fuzz v1\n")) {
				for _, l := range strings.Split(string(data), "\n")[1:] {
					for _, p := range []string{"[]byte(", "string("} {
						if strings.HasPrefix(l, p) && strings.HasSuffix(l, ")") {
							if s, err := strconv.Unquote(l[len(p) : len(l)-1]); err == nil {
								addFile([]byte(s))
							}
						}
					}
				}
				return nil
			}
			if strings.Contains(path, ".jsonl") || strings.Contains(path, "hostile") {
				addFile(data)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range fuzzSeeds {
		lines = append(lines, []byte(s))
	}
	for _, s := range metaSeeds {
		lines = append(lines, []byte(s))
	}
	for _, p := range []SynthProfile{SynthDefault, SynthSmall, SynthRealistic} {
		var buf bytes.Buffer
		if _, err := Synthesize(&buf, SynthOptions{Messages: 1000, Seed: 7, Profile: p, ChangeEvery: 5}); err != nil {
			t.Fatal(err)
		}
		addFile(buf.Bytes())
	}
	return lines
}

// metaSeeds are lines whose _meta the classifier walks while it scans the
// message (topMembers) where skipValue and a walk of members could end
// apart, or where which _meta counts is decided later.
var metaSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","x":t"y},"server":"s"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"s" "ts":"2026-01-01T00:00:00.000Z"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send"},"_meta":{"dir":"recv","server":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","_tapedeck":{"dir":"recv","server":"t"},"_meta":{"dir":"send","server":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"m"},"_tapedeck":{"dir":1,"server":"t","injected":{"dropped":true}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"m","ts":"2026-01-01T00:00:00.000Z","injected":{"dropped":true},"inReplyTo":3,"batch":"b1","exchange":"e"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","_meta":["dir","send"]}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send",}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send"`,
	`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"a":{"b":[1,"}"]},"dir":"recv"}}`,
}

// TestClassifySameAsBefore checks that the classifier's fast paths read
// every line as the classifier before them did (classify_old_test.go):
// the testdata tapes, synthetic tapes, and each line cut short and with
// one byte changed at many places to a byte that matters to the scanner.
func TestClassifySameAsBefore(t *testing.T) {
	lines := sameLines(t)
	if len(lines) < 4000 {
		t.Fatalf("expected at least 4000 lines to compare, found %d", len(lines))
	}
	var c classifier
	var old oldClassifier
	checked := 0
	check := func(line []byte) {
		checked++
		got := withoutParams(t, line, c.classify(line))
		want := old.oldClassify(line)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("line %q:\n got %+v\nwant %+v", line, got, want)
		}
	}
	special := []byte(`"\{}[],: t-1e` + "\x00\xff")
	for n, line := range lines {
		check(line)
		if n%7 != 0 && len(line) > 400 {
			continue // the long synthetic lines: a sample of them is enough
		}
		for cut := 0; cut < len(line); cut += 1 + len(line)/24 {
			check(line[:cut])
			for k, ch := range special {
				if (cut+k)%3 != 0 {
					continue
				}
				m := append([]byte(nil), line...)
				m[cut] = ch
				check(m)
			}
		}
	}
	t.Logf("%d lines compared", checked)
}

// FuzzClassifySameAsBefore: the classifier and the one before its fast
// paths read any line the same way.
func FuzzClassifySameAsBefore(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range metaSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"a":t"x}"},"_meta":{"dir":"recv"}}`))
	f.Add([]byte(`{"params":{"requestId":3},"jsonrpc":"2.0","method":"notifications/cancelled","params":{"x":1}}`))
	f.Add([]byte(`{"id":1,"result":{"isError":true,"resultType":"input_required"},"result":[1]}`))
	f.Add([]byte(`{"id":"a\\\"b","result":{"s":"\\\\","isError":true}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var c classifier
		var old oldClassifier
		got, want := withoutParams(t, line, c.classify(line)), old.oldClassify(line)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("line %q:\n got %+v\nwant %+v", line, got, want)
		}
	})
}

// withoutParams checks the params span the classifier notes (which the
// classifier before did not) and returns msgs without it: a message's
// only params member's value, as encoding/json reads it.
func withoutParams(t *testing.T, line []byte, msgs []msgInfo) []msgInfo {
	t.Helper()
	for i := range msgs {
		m := &msgs[i]
		if m.kind == KindInvalid || !m.params.ok() {
			m.params = span{}
			continue
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(line[m.start:m.end], &members); err == nil {
			if got, want := m.params.in(line), []byte(members["params"]); !bytes.Equal(got, want) {
				t.Fatalf("line %q: message %d's params span holds %q, want %q", line, i, got, want)
			}
		}
		m.params = span{}
	}
	return msgs
}

// TestUnixDays: parseTS's day count is time.Date's, every day of the years
// around the ends of the range it reads and around now (midnights: a whole number of days from 1970).
func TestUnixDays(t *testing.T) {
	for _, span := range [][2]int{{0, 3}, {1968, 2404}, {9996, 9999}} {
		for d := time.Date(span[0], 1, 1, 0, 0, 0, 0, time.UTC); d.Year() <= span[1]; d = d.AddDate(0, 0, 1) {
			if got, want := unixDays(d.Year(), int(d.Month()), d.Day()), d.Unix()/86400; got != want {
				t.Fatalf("unixDays(%s) = %d, time.Date says %d", d.Format("2006-01-02"), got, want)
			}
		}
	}
}

// TestValidUTF8: asciiOrValidUTF8 is utf8.Valid, with bad and multi-byte
// sequences at every place around its 64-byte blocks.
func TestValidUTF8(t *testing.T) {
	for _, ins := range []string{"é", "\xff", "\xe2\x82", "€", "\xf0\x9f\x98\x80", "\xc0\xaf", "\xed\xa0\x80"} {
		for n := 0; n < 200; n++ {
			for at := 0; at <= n; at += 1 + n/50 {
				b := []byte(strings.Repeat("a", at) + ins + strings.Repeat("b", n-at))
				if got, want := asciiOrValidUTF8(b), utf8.Valid(b); got != want {
					t.Fatalf("asciiOrValidUTF8(%q) = %v, utf8.Valid says %v", b, got, want)
				}
			}
		}
	}
}
