package tape

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var ts0 = time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)

// countingWriter records each Write call, to check one call per message.
type countingWriter struct{ calls [][]byte }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.calls = append(c.calls, bytes.Clone(p))
	return len(p), nil
}

func TestWriterSplicesMeta(t *testing.T) {
	tests := []struct {
		name, msg, want string
		meta            Meta
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":1,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
			Meta{Dir: DirSend, Server: "s", Time: ts0}},
		{"bytes kept", `{ "id" : 1 , "result" : { "b" : 1 , "a" : "é\u00e9" } }`,
			`{ "id" : 1 , "result" : { "b" : 1 , "a" : "é\u00e9" } ,"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
			Meta{Dir: DirRecv, Server: "s", Time: ts0}},
		{"extra keys sorted", `{"jsonrpc":"2.0","method":"n"}`,
			`{"jsonrpc":"2.0","method":"n","_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z","session":"abc","status":200}}`,
			Meta{Dir: DirRecv, Server: "s", Time: ts0, Extra: map[string]any{"status": 200, "session": "abc"}}},
		{"multi-line body compacted", "{\n  \"id\": 1,\n  \"result\": {}\n}",
			`{"id":1,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
			Meta{Dir: DirRecv, Server: "s", Time: ts0}},
		{"empty object", `{}`, `{"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`, Meta{Dir: DirRecv, Server: "s", Time: ts0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cw countingWriter
			if err := NewWriter(&cw).Write([]byte(tt.msg), tt.meta); err != nil {
				t.Fatal(err)
			}
			if len(cw.calls) != 1 {
				t.Fatalf("%d Write calls, want 1", len(cw.calls))
			}
			if got := strings.TrimSuffix(string(cw.calls[0]), "\n"); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WriteLifecycle(MethodStart, map[string]any{"command": "srv"}, Meta{Server: "s", Time: ts0}))
	must(w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), Meta{Dir: DirSend, Server: "s", Time: ts0}))
	must(w.Write([]byte(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]`), Meta{Dir: DirRecv, Server: "s", Time: ts0.Add(time.Second)}))
	must(w.WriteInvalid([]byte("Server listening on stdio"), Meta{Dir: DirRecv, Server: "s", Time: ts0}))
	if err := w.Write([]byte("plain text"), Meta{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("writing text: %v, want ErrMalformed", err)
	}
	r := NewReader(&buf)
	got := readAll(t, r)
	kinds := []Kind{KindLifecycle, KindRequest, KindResponse, KindNotification, KindLifecycle}
	if len(got) != len(kinds) {
		t.Fatalf("read back %d entries, want %d", len(got), len(kinds))
	}
	for i, k := range kinds {
		if got[i].Kind != k || got[i].Server != "s" {
			t.Errorf("entry %d: %v of %q, want %v of \"s\"", i, got[i].Kind, got[i].Server, k)
		}
	}
	if got[0].Dir != DirLifecycle || got[4].Method != MethodInvalid || !bytes.Contains(got[4].Raw, []byte(`"text":"Server listening on stdio"`)) {
		t.Errorf("lifecycle records: %s / %s", got[0].Raw, got[4].Raw)
	}
	if !got[2].Time.Equal(ts0.Add(time.Second)) || !bytes.Contains(got[2].Raw, []byte(`"batch":`)) {
		t.Errorf("batch element: %s", got[2].Raw)
	}
	if len(r.Warnings()) != 0 {
		t.Errorf("warnings: %v", r.Warnings())
	}
}

func TestCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "t.jsonl")
	f, _, err := Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(path)
	dst, _ := os.Stat(filepath.Dir(path))
	if st.Mode().Perm() != 0o600 || dst.Mode().Perm() != 0o700 {
		t.Errorf("modes %v and %v, want 0600 file in a 0700 directory", st.Mode().Perm(), dst.Mode().Perm())
	}
	if _, _, err := Create(path, false); !errors.Is(err, os.ErrExist) {
		t.Errorf("second Create: %v, want ErrExist", err)
	}
	f, notes, err := Create(path, true)
	if err != nil || len(notes) != 0 {
		t.Fatalf("append: %v, notes %q", err, notes)
	}
	f.Close()
}

// Two recorders on one tape, the first opened without --append (a shim in
// its shutdown grace) and the second with it (the next session): each
// write lands at the end, so no line overwrites another.
func TestCreateSharedTapeKeepsEveryLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	first, _, err := Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, _, err := Create(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	var want []string
	var wg sync.WaitGroup
	for w, f := range []*os.File{first, second} {
		var lines []string
		for i := range 500 {
			lines = append(lines, fmt.Sprintf(`{"writer":%d,"n":%d,"pad":%q}`, w, i, strings.Repeat("x", i%97)))
		}
		want = append(want, lines...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, l := range lines {
				if _, err := f.Write([]byte(l + "\n")); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read back %d lines, want the %d written, intact", len(got), len(want))
	}
}

// Appending to a tape whose last line is torn ends that line first: the
// torn record stays as it was, and the first new record starts a line.
func TestCreateAppendAfterTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	const whole, torn = `{"jsonrpc":"2.0","method":"a"}` + "\n", `{"jsonrpc":"2.0","id":1,"res`
	if err := os.WriteFile(path, []byte(whole+torn), 0o600); err != nil {
		t.Fatal(err)
	}
	f, notes, err := Create(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "torn") {
		t.Errorf("notes %q, want one about the torn line", notes)
	}
	const next = `{"jsonrpc":"2.0","method":"$transport/start"}` + "\n"
	if _, err := f.Write([]byte(next)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, _ := os.ReadFile(path)
	if string(b) != whole+torn+"\n"+next {
		t.Errorf("tape reads %q, want the torn line kept and the new record on a line of its own", b)
	}
}

// --append takes care with a file that may not be ours: a link is not
// followed, a directory is refused, a tape others can read is tightened,
// and a file another user owns is refused.
func TestCreateAppendRefusals(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Create(link, true); !errors.Is(err, ErrNotATape) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("append to a symlink: %v, want ErrNotATape naming the link", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "secret\n" {
		t.Errorf("the link's target was changed: %q", b)
	}
	if _, _, err := Create(dir, true); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("append to a directory: %v, want an error saying it is a directory", err)
	}
	// A device is written as it is: -o /dev/null --append discards a tape.
	if f, notes, err := Create(os.DevNull, true); err != nil || len(notes) != 0 {
		t.Errorf("append to %s: %v, notes %q; want it opened", os.DevNull, err, notes)
	} else {
		f.Close()
	}
	open := filepath.Join(dir, "open.jsonl")
	if err := os.WriteFile(open, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o666); err != nil {
		t.Fatal(err)
	}
	f, notes, err := Create(open, true)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if st, _ := os.Stat(open); st.Mode().Perm() != 0o600 || len(notes) != 1 || !strings.Contains(notes[0], "0666") {
		t.Errorf("append to a 0666 tape: mode %v, notes %q; want 0600 and a note", st.Mode().Perm(), notes)
	}
	if os.Geteuid() == 0 { // only root can give a file away; CI runs as root
		if err := os.Chown(open, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Create(open, true); !errors.Is(err, ErrNotATape) || !strings.Contains(err.Error(), "4242") {
			t.Errorf("append to another user's tape: %v, want ErrNotATape naming the owner", err)
		}
	}
}

// A message with a top-level _meta of its own keeps it: the tape's record
// goes under AltMetaKey, readers take that, and StripMeta gives back the
// message byte for byte. (It was written with two _meta keys, and replay
// sent the tape's {dir,server,ts} instead of the server's own.)
func TestWriteMessageWithOwnMeta(t *testing.T) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"trace":"abc"}}`,
		`{"_meta":{"trace":"abc"},"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"_tapedeck":"mine"}`,
	} {
		var buf bytes.Buffer
		if err := NewWriter(&buf).Write([]byte(msg), Meta{Dir: DirRecv, Server: "s", Time: ts0}); err != nil {
			t.Fatal(err)
		}
		line := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := StripMeta(line); string(got) != msg {
			t.Errorf("StripMeta(%s) = %s, want the message as it was", line, got)
		}
		e := Classify(line)
		if len(e) != 1 || e[0].Dir != DirRecv || e[0].Server != "s" || !e[0].Time.Equal(ts0) {
			t.Errorf("%s read as %+v", line, e)
		}
		if !bytes.Contains(RecordMeta(line), []byte(`"server":"s"`)) {
			t.Errorf("RecordMeta(%s) = %s", line, RecordMeta(line))
		}
		if _, ok := NewEncoder(DirRecv, "s").AppendLine(nil, []byte(msg), ts0); ok {
			t.Errorf("the encoder's fast path took %s, whose _meta it would duplicate", msg)
		}
	}
	// Tapes written before: the tape's _meta came second; it is the one
	// read and the one stripped.
	old := `{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"trace":"abc"},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`
	if got := string(StripMeta([]byte(old))); got != `{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"trace":"abc"}}` {
		t.Errorf("StripMeta(old) = %s", got)
	}
	if e := Classify([]byte(old)); e[0].Server != "s" {
		t.Errorf("old tape line read as %+v", e[0])
	}
	// An ordinary message keeps the mcporter-compatible _meta.
	var buf bytes.Buffer
	if err := NewWriter(&buf).Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"_meta":{"x":1}}}`), Meta{Dir: DirRecv, Server: "s", Time: ts0}); err != nil {
		t.Fatal(err)
	}
	if want := `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"x":1}},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}` + "\n"; buf.String() != want {
		t.Errorf("got %s want %s", buf.String(), want)
	}
}
