package importer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// stdioEntry is a HAR entry of tapedeck's stdio mapping: a ping at start
// (ms after a fixed time) answered after took ms.
func stdioHAREntry(id, startMS, tookMS int) string {
	t := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(startMS) * time.Millisecond).Format(time.RFC3339Nano)
	return fmt.Sprintf(`{"startedDateTime":%q,"time":%d,"request":{"method":"POST","url":"stdio://s/","headers":[],"postData":{"text":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}"}},"response":{"status":200,"headers":[],"content":{"mimeType":"application/json","text":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}"}}}`, t, tookMS, id, id)
}

func harDocOf(entries ...string) string {
	return `{"log":{"version":"1.2","creator":{"name":"test"},"entries":[` + strings.Join(entries, ",\n") + "]}}\n"
}

// Entries out of time order (a later entry started first, an answer that
// ends after the next entry's start) are written in time order: each
// record where its time puts it, whatever the entry's place in the HAR.
func TestImportHAROutOfOrderEntries(t *testing.T) {
	doc := harDocOf(stdioHAREntry(1, 10, 50), stdioHAREntry(2, 0, 5), stdioHAREntry(3, 20, 1))
	_, es := importTape(t, "har", []byte(doc), Options{})
	var got []string
	for _, e := range wire(es) {
		got = append(got, fmt.Sprintf("%s%s@%d", e.Dir, e.ID, e.Time.Sub(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)).Milliseconds()))
	}
	want := "send2@0 recv2@5 send1@10 send3@20 recv3@21 recv1@60"
	if strings.Join(got, " ") != want {
		t.Fatalf("records %s\nwant    %s", strings.Join(got, " "), want)
	}
}

// A malformed entry in the middle of a HAR far longer than one chunk of
// the reader is named by its number and path, whether it is not JSON or
// JSON that is not a HAR entry; an error in an earlier entry comes first.
func TestImportHARMalformedMiddleEntry(t *testing.T) {
	var es []string
	for i := range 20000 { // about 6 MB: past the reader's first chunk
		es = append(es, stdioHAREntry(i, i, 1))
	}
	const bad = 15000
	for _, c := range []struct {
		name, entry string
		want        []string
	}{
		{"syntax", `{"startedDateTime":"2026-05-01T10:00:00Z","time":1,"request":{"method":"POST" "url":"stdio://s/"}}`, []string{fmt.Sprintf("$.log.entries[%d]", bad), "invalid JSON", "invalid character"}},
		{"control character in a body", strings.Replace(stdioHAREntry(bad, bad, 1), `\"ping\"`, "\"pi\x01ng\"", 1), []string{fmt.Sprintf("$.log.entries[%d]", bad), "invalid JSON"}},
		{"status a string", strings.Replace(stdioHAREntry(bad, bad, 1), `"status":200`, `"status":"200"`, 1), []string{fmt.Sprintf("$.log.entries[%d].response.status", bad), "expected a number", "found a string"}},
		{"not a message", strings.Replace(stdioHAREntry(bad, bad, 1), `\"method\":\"ping\"`, `\"x\":1`, 1), []string{fmt.Sprintf("$.log.entries[%d].request.postData.text", bad), "expected a JSON-RPC message"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := append([]string(nil), es...)
			in[bad] = c.entry
			_, err := Import("har", strings.NewReader(harDocOf(in...)), io.Discard, Options{})
			wantError(t, err, c.want...)
			// An earlier entry's error is the one reported.
			in[bad-100] = strings.Replace(in[bad-100], `"time":1`, `"time":"1"`, 1)
			_, err = Import("har", strings.NewReader(harDocOf(in...)), io.Discard, Options{})
			wantError(t, err, fmt.Sprintf("$.log.entries[%d].time", bad-100), "expected a number")
		})
	}
}

// A HAR cut short is refused, naming where it ends: by line and column in
// a short document, by the entry cut in a long one.
func TestImportHARTruncated(t *testing.T) {
	short := harDocOf(stdioHAREntry(1, 0, 1), stdioHAREntry(2, 1, 1))
	for _, n := range []int{len(short) - 3, len(short) / 2, 20, 1} {
		_, err := Import("har", strings.NewReader(short[:n]), io.Discard, Options{})
		wantError(t, err, "line ", "column ", "invalid JSON")
	}
	var es []string
	for i := range 5000 { // past harHead: no line and column kept
		es = append(es, stdioHAREntry(i, i, 1))
	}
	long := harDocOf(es...)
	cut := strings.Index(long, stdioHAREntry(4000, 4000, 1)) + 100
	_, err := Import("har", strings.NewReader(long[:cut]), io.Discard, Options{})
	wantError(t, err, "$.log.entries[4000]", "the document ends too early")
	_, err = Import("har", strings.NewReader(strings.TrimSuffix(long, "]}}\n")), io.Discard, Options{})
	wantError(t, err, "$.log.entries", "the document ends too early")
}

// An entry over the bound is refused by its number, however the input is
// chunked.
func TestImportHAREntryTooLong(t *testing.T) {
	doc := harDocOf(stdioHAREntry(1, 0, 1), stdioHAREntry(2, 1, 1), strings.Replace(stdioHAREntry(3, 2, 1), "ping", strings.Repeat("p", 100<<10), 1))
	_, err := Import("har", strings.NewReader(doc), io.Discard, Options{MaxDocument: 64 << 10})
	wantError(t, err, "$.log.entries[2]", "at most 65536 bytes")
}

// harUnescape reads what jsonscan.Unescape reads: runs, every escape,
// surrogate pairs whole or broken, bytes that are not UTF-8.
func TestHARUnescapeAgrees(t *testing.T) {
	for _, s := range []string{
		``, `plain`, `\"a\"`, `x\\y\/z`, `\n\t\r\b\f`, `\u00e9t\u00E9`, `\ud83d\ude00`, `\ud83d\ud83d\ude00`, `\ud83dx`, `\ude00`,
		"caf\xc3\xa9", "bad\xff\xfe", `{\"jsonrpc\":\"2.0\",\"result\":{\"t\":\"\u00e9\\n\"}}`, `\u0041\"\u0042`, "\xe2\x82", `a\\\"b`,
	} {
		if !jsonscan.Valid([]byte(`"` + s + `"`)) {
			t.Fatalf("bad case %q", s)
		}
		want := jsonscan.Unescape(nil, []byte(s))
		if got := harUnescape(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("harUnescape(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzHARUnescape(f *testing.F) {
	f.Add([]byte(`{\"a\":\"\u00e9\ud83d\ude00\n\"}`))
	f.Fuzz(func(t *testing.T, s []byte) {
		if !jsonscan.Valid(append(append([]byte{'"'}, s...), '"')) {
			return
		}
		if got, want := harUnescape(nil, s), jsonscan.Unescape(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("harUnescape(%q) = %q, want %q", s, got, want)
		}
	})
}

// Bytes after the document that start no JSON value are a syntax error
// said by its line and column in a short document (as encoding/json says
// it), by what encoding/json says of them in a long one; a second value
// after the document is "more", as before.
func TestImportHARTrailingBytes(t *testing.T) {
	short := harDocOf(stdioHAREntry(1, 0, 1))
	for _, tail := range []string{"x", " ]", "\n}", ",", "\"\\q\"", "tx"} {
		_, err := Import("har", strings.NewReader(short+tail), io.Discard, Options{})
		wantError(t, err, "line ", "column ", "invalid JSON: invalid character")
	}
	for _, tail := range []string{" []", "1", `"more"`, "null"} {
		_, err := Import("har", strings.NewReader(short+tail), io.Discard, Options{})
		wantError(t, err, "$: invalid JSON: expected the end of the document, found more")
	}
	var es []string
	for i := range 5000 { // past harHead: no line and column kept
		es = append(es, stdioHAREntry(i, i, 1))
	}
	_, err := Import("har", strings.NewReader(harDocOf(es...)+"x"), io.Discard, Options{})
	wantError(t, err, "$: invalid JSON: invalid character 'x' looking for beginning of value")
}

// A HAR that is a regular file is imported as one that is not (a pipe, a
// reader): the same tape, whatever the entries' order, escapes, spaces
// around the messages or base64 answers; and its stdio records keep where
// their messages are in the file, not the messages (the import holds the
// records, not the document's bodies: 402 MB peak RSS for a 276 MB HAR
// when it held them).
func TestImportHARFileKeepsPlaces(t *testing.T) {
	esc := `{"startedDateTime":"2026-05-01T10:00:00.007Z","time":0,"request":{"method":"POST","url":"stdio://s/client","headers":[],"postData":{"text":" \n{\"jsonrpc\":\"2.0\",\"id\":\"\\u00e9\\ud83d\\ude00\\/\",\"method\":\"roots/list\"}\t"}},"response":{"status":200,"headers":[],"content":{"encoding":"base64","text":"eyJqc29ucnBjIjoiMi4wIiwiaWQiOiJcdTAwZTkiLCJyZXN1bHQiOnt9fQ=="}}}`
	doc := harDocOf(stdioHAREntry(1, 10, 50), stdioHAREntry(2, 0, 5), esc, stdioHAREntry(3, 7, 0), stdioHAREntry(4, 7, 1), stdioHAREntry(5, 20, 1))
	path := filepath.Join(t.TempDir(), "in.har")
	// Something before the document: the file is read from where its
	// reader stands.
	if err := os.WriteFile(path, []byte("xx"+doc), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(2, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	h := &harImport{}
	h.src, h.srcBase, _ = harSource(f)
	if h.src == nil || h.srcBase != 2 {
		t.Fatalf("harSource of a regular file at offset 2: %v at %d, want the file at 2", h.src, h.srcBase)
	}
	if _, err := h.read(f); err != nil {
		t.Fatal(err)
	}
	refs := 0
	for _, r := range h.recs {
		if r.ref {
			refs++
		}
		if r.msg != nil && !(r.m.Dir == tape.DirSend && r.entry == 2) {
			t.Errorf("record of entry %d (%s) holds its message %q, want its place in the file", r.entry, r.m.Dir, r.msg)
		}
	}
	if refs != 11 || len(h.arena) != 0 {
		t.Errorf("%d records kept their places, %d bytes of texts held; want 11 and none", refs, len(h.arena))
	}

	if _, err := f.Seek(2, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var fromFile, fromReader bytes.Buffer
	if _, err := Import("har", f, &fromFile, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Import("har", strings.NewReader(doc), &fromReader, Options{}); err != nil {
		t.Fatal(err)
	}
	if fromFile.String() != fromReader.String() {
		t.Fatalf("from the file:\n%s\nfrom a reader:\n%s", fromFile.String(), fromReader.String())
	}
	if !strings.Contains(fromFile.String(), `"id":"\u00e9\ud83d\ude00\/","method":"roots/list"`) {
		t.Errorf("the escaped id is not on the tape:\n%s", fromFile.String())
	}
}

// A HAR file that changes between the scan of its entries and the writing
// of their messages (read again from the file) fails the import, saying
// so, instead of writing whatever bytes are there by then.
func TestImportHARFileChangedMidway(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in.har")
	if err := os.WriteFile(path, []byte(harDocOf(stdioHAREntry(1, 0, 5), stdioHAREntry(2, 10, 5))), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mapStage = func(stage string) {
		if stage != "har-read" {
			return
		}
		w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteString("\n")
		w.Close()
	}
	defer func() { mapStage = nil }()
	_, err = Import("har", f, io.Discard, Options{})
	wantError(t, err, "the file changed while it was imported (")
}
