package export

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
	"github.com/tapedeck/tapedeck/tape/tapetest"
)

// HAR of a tape on disk keeps where its bodies are and reads them again
// as it writes the entries: its output is the log of the entries with
// their bodies held (which TestHARWriterAgrees holds to encoding/json),
// on every fixture tape.
func TestHARRefsAgree(t *testing.T) {
	refs := 0
	for _, src := range fixtureSources(t) {
		entries, err := harEntries(src)
		if err != nil {
			t.Fatalf("%s: %v", src.Name, err)
		}
		var want, got bytes.Buffer
		if err := writeHAR(&want, entries, nil, "v", "exported from "+src.Name+" by tapedeck export --format har"); err != nil {
			t.Fatal(err)
		}
		if err := HAR(&got, src, "v"); err != nil {
			t.Fatalf("%s: %v", src.Name, err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			i := 0
			for i < want.Len() && i < got.Len() && want.Bytes()[i] == got.Bytes()[i] {
				i++
			}
			t.Fatalf("%s: HAR with its bodies read from the tape differs at byte %d:\nexpected …%s\nfound    …%s", src.Name, i, want.Bytes()[max(0, i-80):min(want.Len(), i+80)], got.Bytes()[max(0, i-80):min(got.Len(), i+80)])
		}
		// The entries HAR wrote kept refs, not bodies.
		r, err := src.Open()
		if err != nil {
			t.Fatal(err)
		}
		kept, err := readHAREntries(r, src, r.(*os.File), nil, nil)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range kept {
			if pd := en.Request.PostData; pd != nil && pd.body.ref {
				refs++
				if pd.Text != "" {
					t.Fatalf("%s: a body kept as a ref and as text %q", src.Name, pd.Text)
				}
			}
		}
	}
	if refs < 3000/2 {
		t.Fatalf("expected the requests' bodies kept as refs (at least the realistic tape's 1500), found %d", refs)
	}
}

// A tape cut shorter after HAR read it: the bodies it reads again are not
// there, and HAR says so instead of writing what is not on the tape.
func TestHARTapeChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if _, err := tape.WriteSynth(path, tape.SynthOptions{Messages: 50, Seed: 3, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := readHAREntries(f, Source{Name: "t", Index: x}, f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	g, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	m, err := tape.MapTape(g)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	err = writeHAR(&bytes.Buffer{}, entries, m.Bytes(), "v", "")
	if err == nil || !strings.Contains(err.Error(), "read the message at byte") {
		t.Fatalf("expected an error reading a body past the tape's new end, found %v", err)
	}
}

// appendHAREscaped escapes as jsonscan.AppendQuoted (held to
// encoding/json) does without HTML escaping, and so does harCut's body
// split in two.
func TestHAREscapedAgrees(t *testing.T) {
	cases := []string{"", "plain", `a"b\c`, "\x00\x1f\t\n\r\b\f", "é€😀", "\u2028x\u2029", "\xff\xfe", "ab\xe2\x80", "\xe2\x80\xa8", "<&>", strings.Repeat("abc\"", 40)}
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte("abcdefghijklmnop \"\\\x00\x7f\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\xff<")
	for range 2000 {
		b := make([]byte, rng.Intn(100))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for at := range 40 { // one byte to escape at each place of the word loops
		for _, special := range []string{`"`, `\`, "\x01", "\x7f", "é", "\u2028", "\xff"} {
			cases = append(cases, strings.Repeat("a", at)+special+strings.Repeat("b", 20))
		}
	}
	// Long runs, crossed by harPlainRun: a byte to escape at each place
	// after them, and long strings with rare ones.
	for at := 60; at < 220; at++ {
		for _, special := range []string{`"`, `\`, "\x01", "\x7f", "é", "\u2028", "\xff"} {
			cases = append(cases, strings.Repeat("a", at)+special+strings.Repeat("b", at%70)+special+strings.Repeat("c", 90))
		}
	}
	for range 500 {
		b := make([]byte, rng.Intn(3000))
		for i := range b {
			b[i] = 'a' + byte(i%26)
			if rng.Intn(150) == 0 {
				b[i] = alphabet[rng.Intn(len(alphabet))]
			}
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		want := jsonscan.AppendQuoted(nil, c, false)
		got := append(appendHAREscaped([]byte{'"'}, []byte(c)), '"')
		if !bytes.Equal(got, want) {
			t.Fatalf("%q: expected %s, found %s", c, want, got)
		}
	}
}

// harCut cuts what tape.StripMeta cuts and finds what tape.RecordMeta
// finds, wherever the record's _meta sits, told by the index whether the
// record metadata is the AltMetaKey member; the stdio record's _meta last
// (harTailMeta) is found from the message's end.
func TestHARCut(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv"}}`,
		`{"_meta":{"dir":"send"},"jsonrpc":"2.0","id":1,"method":"x"}`,
		`{ "_meta" : {"dir":"send"} , "id":1}`,
		`{"id":1 ,  "_meta":{"a":1}  }`,
		`{"_meta":{"own":1},"id":2,"_tapedeck":{"dir":"recv"}}`,
		`{"_tapedeck":{"dir":"recv"},"_meta":{"own":1}}`,
		`{"_meta":{"x":1}}`,
		`{"id":1}`,
		`{"a":"_meta\":","_meta":{}}`,
		`{"_meta":1,"_meta":{"dir":"send"}}`,
		// The stdio record's _meta last, and what only looks like it.
		`{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s","ts":"t"}}`,
		`{"jsonrpc":"2.0","method":"m","_meta":{"dir":"send","server":"","ts":""}}`,
		`{"jsonrpc":"2.0","id":1 ,"_meta":{"dir":"send","server":"s","ts":"t"}}`,
		`{"jsonrpc":"2.0","id":1, "_meta":{"dir":"send","server":"s","ts":"t"}}`,
		`{"_meta":{"x":1},"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"s","ts":"t"}}`,
		`{"_tapedeck":{"dir":"recv","server":"s","ts":"t"},"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"s","ts":"t"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"_meta":{"dir":"send","server":"s","ts":"t"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1,"_meta":{"dir":"send","server":"s","ts":"t"}},"_meta":{"dir":"send","server":"s","ts":"t"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","s":",\"_meta\":{\"dir\":\"send\",\"server\":\"s\",\"ts\":\"t\"}}"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"s\\","ts":"t"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"s","ts":"t","transport":"http"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":"s","ts":"t"} }`,
	}
	// The index says which records keep their metadata in AltMetaKey:
	// the lines on a tape of their own, and the fixture tapes.
	path := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	type msg struct {
		raw []byte
		alt bool
	}
	var msgs []msg
	for _, ix := range append([]*tape.Index{x}, func() (xs []*tape.Index) {
		for _, src := range fixtureSources(t) {
			xs = append(xs, src.Index)
		}
		return xs
	}()...) {
		for i := range ix.Len() {
			m, err := ix.Message(i)
			if err != nil {
				t.Fatal(err)
			}
			_, size, alt := ix.EntryAt(i)
			if m.Batch == 0 && size != len(m.Raw) {
				t.Fatalf("%s: EntryAt's size %d, expected the message's %d bytes", m.Raw, size, len(m.Raw))
			}
			if m.Kind != tape.KindInvalid {
				msgs = append(msgs, msg{m.Raw, alt})
			}
		}
	}
	tail, alts := 0, 0
	for _, m := range msgs {
		raw, l := m.raw, string(m.raw)
		if m.alt {
			alts++
		}
		if _, _, ok := harTailMeta(raw); ok && !m.alt {
			tail++
		}
		meta, a, b := harCut(raw, m.alt)
		if want := tape.RecordMeta(raw); !bytes.Equal(meta, want) {
			t.Fatalf("%s: meta %s, expected %s", l, meta, want)
		}
		if meta != nil && stdioMeta(meta) && !reflect.DeepEqual(tape.ParseHTTPMeta(raw), tape.HTTPMeta{}) {
			t.Fatalf("%s: taken for a stdio record, but it has HTTP metadata %+v", l, tape.ParseHTTPMeta(raw))
		}
		got := string(raw[:a]) + string(raw[b:])
		if want := string(tape.StripMeta(raw)); got != want {
			t.Fatalf("%s: body %s, expected %s", l, got, want)
		}
	}
	if tail < 3000 || alts < 1 {
		t.Fatalf("expected the fixture tapes' stdio records cut from their end (3000 or more) and records with AltMetaKey (1 or more), found %d and %d", tail, alts)
	}
}

// stdioMeta takes only a stdio record's three members for one.
func TestHARStdioMeta(t *testing.T) {
	for meta, want := range map[string]bool{
		`{"dir":"send","server":"s","ts":"2026-01-01T00:00:00Z"}`:                  true,
		`{"dir":"send","server":"","ts":""}`:                                       true,
		`{"dir":"send","server":"s","ts":"t","transport":"http"}`:                  false,
		`{"dir":"send","server":"s\"","ts":"t"}`:                                   false,
		`{"dir":"send","server":"s","ts":"t"} `:                                    false,
		`{"dir":"send","transport":"http","server":"s","ts":"t"}`:                  false,
		`{"dir":"send","server":"s","ts":"t","session":"x","protocolVersion":"1"}`: false,
		`{"dir":"send","server":"s"}`:                                              false,
	} {
		if got := stdioMeta([]byte(meta)); got != want {
			t.Fatalf("stdioMeta(%s) = %v, expected %v", meta, got, want)
		}
	}
}

// HAR writes entries while it reads (those answered, which no message left
// can start before), in the order of the whole tape's entries sorted at
// the end: on a tape whose times go back now and then, answers out of
// order and one request never answered.
func TestHARStreamsInOrder(t *testing.T) {
	var lines []tapetest.Line
	const n = 3000
	ms := func(i int) int {
		if i%97 == 0 {
			return i*10 - 2500 // before the 250 requests already on the tape
		}
		return i * 10
	}
	for i := range n {
		lines = append(lines, tapetest.Line{Dir: tape.DirSend, MS: ms(i), Msg: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d"}}`, i, i)})
		if j := i - 3; j >= 0 && j != 5 {
			lines = append(lines, tapetest.Line{Dir: tape.DirRecv, MS: ms(i) + 1, Msg: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"n":%d}}`, j, j)})
		}
	}
	_, data := tapetest.Build(t, "s", lines...)
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	src := Source{Name: "t", Index: x, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
	all, err := harEntries(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var streamed []*harEntry
	batches := 0
	if _, err := readHAREntries(f, src, f, nil, func(b []*harEntry) bool {
		batches++
		streamed = append(streamed, b...)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if batches < n/harChunk {
		t.Fatalf("expected the entries handed over as the tape is read, in %d batches or more, found %d", n/harChunk, batches)
	}
	if len(streamed) != len(all) {
		t.Fatalf("expected %d entries, found %d", len(all), len(streamed))
	}
	for i := range all {
		if streamed[i].order != all[i].order {
			t.Fatalf("entry %d: expected the one made %dth (%s), found the %dth (%s)", i, all[i].order, all[i].start, streamed[i].order, streamed[i].start)
		}
	}
	var want, got bytes.Buffer
	if err := writeHAR(&want, all, nil, "v", "exported from t by tapedeck export --format har"); err != nil {
		t.Fatal(err)
	}
	if err := HAR(&got, src, "v"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("HAR written as the tape is read differs from the HAR of its entries sorted at the end")
	}
	if !strings.Contains(got.String(), "#7 request tools/call (no answer on the tape)") {
		t.Fatal("expected request 5 (seq 7) without an answer")
	}
}

// HAR to a file (a gathering writer: the bodies' long runs handed to
// writev from the tape's mapping, not copied) writes what HAR to a buffer
// writes (each run copied), on a tape whose answers have long runs.
func TestHARGatherAgrees(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	if _, err := tape.WriteSynth(path, tape.SynthOptions{Messages: 3000, Seed: 7, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	src := Source{Name: path, Index: x, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
	var want bytes.Buffer
	if err := HAR(&want, src, "v"); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "t.har"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, ok := newSink(out, 1<<16).(*gatherWriter); !ok {
		t.Fatal("expected a gathering writer for a file")
	}
	if err := HAR(out, src, "v"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		i := 0
		for i < len(got) && i < want.Len() && got[i] == want.Bytes()[i] {
			i++
		}
		t.Fatalf("HAR to a file (%d bytes) differs from HAR to a buffer (%d bytes) at byte %d", len(got), want.Len(), i)
	}
	// The runs were left in the mapping: the formatter noted them.
	raw := []byte(`{"text":"` + strings.Repeat("plain text ", 300) + `\n` + strings.Repeat("more ", 300) + `"}`)
	var al []harAlias
	l := harLines{data: raw, aliases: &al}
	b, err := l.appendText(nil, harText{off: 0, n: int32(len(raw)), a: int32(len(raw)), b: int32(len(raw)), ref: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(al) != 2 {
		t.Fatalf("expected the body's two long runs noted as aliases, found %d", len(al))
	}
	var joined []byte
	at := 0
	for _, a := range al {
		joined = append(append(joined, b[at:a.at]...), a.p...)
		at = a.at
	}
	joined = append(joined, b[at:]...)
	if want := jsonscan.AppendQuoted(nil, string(raw), false); !bytes.Equal(joined, want) {
		t.Fatalf("the text with its aliases put back: expected %s, found %s", want, joined)
	}
}
