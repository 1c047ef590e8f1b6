package library

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

var ctx = context.Background()

// A session: initialize, a tool that works, one that fails (isError),
// a JSON-RPC error, a request never answered, and a log notification.
const sessionTape = `{"jsonrpc":"2.0","method":"$transport/start","params":{"command":"srv"},"_meta":{"dir":"lifecycle","server":"srv","ts":"2026-03-01T10:00:00.000Z"}}
{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.0"}},"_meta":{"dir":"send","server":"srv","ts":"2026-03-01T10:00:00.100Z"}}
{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"srv","version":"1"}},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:00.200Z"}}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Reykjavík","days":3}},"_meta":{"dir":"send","server":"srv","ts":"2026-03-01T10:00:01.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Sleet and a strong northerly gale"}]},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:01.500Z"}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy","arguments":{"target":"production"}},"_meta":{"dir":"send","server":"srv","ts":"2026-03-01T10:00:02.000Z"}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","data":"quota almost exhausted"},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:02.100Z"}}
{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"permission denied for production cluster"}],"isError":true},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:02.500Z"}}
{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///etc/motd"},"_meta":{"dir":"send","server":"srv","ts":"2026-03-01T10:00:03.000Z"}}
{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"resource not found: motd"},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:03.100Z"}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"weather","arguments":{"city":"Oslo"}},"_meta":{"dir":"send","server":"srv","ts":"2026-03-01T10:00:04.000Z"}}
`

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// setMtime puts a file's modification time in the past, as a tape no one
// writes to any more.
func age(t *testing.T, path string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, db, dir string) (*Library, *bytes.Buffer) {
	t.Helper()
	var notes bytes.Buffer
	l, err := Open(Options{Path: db, DefaultDir: dir, Notes: &notes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, &notes
}

func refresh(t *testing.T, l *Library) Report {
	t.Helper()
	rep, err := l.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestSummary(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.jsonl"), sessionTape)
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	rep := refresh(t, l)
	if rep.Indexed != 1 || rep.Messages != 11 {
		t.Fatalf("report %+v", rep)
	}
	ts, err := l.Tapes()
	if err != nil || len(ts) != 1 {
		t.Fatalf("tapes %v, %v", ts, err)
	}
	got := ts[0]
	want := Tape{
		Path: filepath.Join(dir, "a.jsonl"), Size: int64(len(sessionTape)), Servers: []string{"srv"},
		Client: "claude-code", ClientVersion: "2.1.0", Protocol: "2025-06-18",
		Start: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Duration: 4 * time.Second,
		Messages: 11, Calls: 5, RPCErrors: 1, ToolErrors: 1, Pending: 1,
	}
	got.ModTime = time.Time{}
	if fmt.Sprint(got) != fmt.Sprint(want) || !got.Start.Equal(want.Start) {
		t.Errorf("tape\n got %+v\nwant %+v", got, want)
	}
}

func TestSearch(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.jsonl"), sessionTape)
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	refresh(t, l)
	path := filepath.Join(dir, "a.jsonl")
	for _, tc := range []struct {
		name string
		q    Query
		want []string // path:seq status target
	}{
		{"word in a result", Query{Text: "sleet"}, []string{"4 ok weather"}},
		{"word in arguments, diacritics folded", Query{Text: "reykjavik"}, []string{"3 ok weather"}},
		{"two words, any order", Query{Text: "gale sleet"}, []string{"4 ok weather"}},
		{"phrase", Query{Text: `"permission denied"`}, []string{"7 tool-error deploy"}},
		{"phrase in the wrong order", Query{Text: `"denied permission"`}, nil},
		{"prefix", Query{Text: "produc*"}, []string{"7 tool-error deploy", "5 tool-error deploy"}},
		// Messages are kept in groups (group.go): a group matching as a
		// whole is no hit, each message must match alone.
		{"words of two messages", Query{Text: "sleet quota"}, nil},
		{"NOT a word another message holds", Query{Text: "sleet NOT quota"}, []string{"4 ok weather"}},
		{"NOT a word the same message holds", Query{Text: "sleet NOT gale"}, nil},
		{"OR", Query{Text: "motd OR quota"}, []string{"9 error file:///etc/motd", "8 error file:///etc/motd", "6  "}},
		{"a notification's text", Query{Text: "quota"}, []string{"6  "}},
		{"JSON-RPC error message", Query{Text: "motd", Status: "rpc-error"}, []string{"9 error file:///etc/motd", "8 error file:///etc/motd"}},
		{"failures of both kinds", Query{Status: "error"}, []string{"9 error file:///etc/motd", "8 error file:///etc/motd", "7 tool-error deploy", "5 tool-error deploy"}},
		{"tool errors", Query{Status: "tool-error"}, []string{"7 tool-error deploy", "5 tool-error deploy"}},
		{"by tool", Query{Tool: "weather"}, []string{"10 pending weather", "4 ok weather", "3 ok weather"}},
		{"by tool and status", Query{Tool: "weather", Status: "pending"}, []string{"10 pending weather"}},
		{"by method", Query{Method: "resources/read"}, []string{"9 error file:///etc/motd", "8 error file:///etc/motd"}},
		{"since", Query{Tool: "weather", Since: time.Date(2026, 3, 1, 10, 0, 3, 0, time.UTC)}, []string{"10 pending weather"}},
		{"keys are not text", Query{Text: "arguments"}, nil},
		{"the envelope is not text", Query{Text: "jsonrpc"}, nil},
		{"tape metadata is not text", Query{Text: "recv"}, nil},
		{"punctuation is no syntax", Query{Text: "tools/call -x (y) weather:"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := l.Search(tc.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				if h.Path != path {
					t.Errorf("path %s", h.Path)
				}
				got = append(got, fmt.Sprintf("%d %s %s", h.Seq, h.Status, h.Target))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("hits\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	hits, err := l.Search(Query{Text: "gale"})
	if err != nil || len(hits) != 1 || hits[0].Snippet != "Sleet and a strong northerly »gale«" {
		t.Errorf("snippet: %+v, %v", hits, err)
	}
	if _, err := l.Search(Query{Status: "broken"}); err == nil || !strings.Contains(err.Error(), "expected one of ok, error") {
		t.Errorf("bad status: %v", err)
	}
	if _, err := l.Search(Query{Text: "--"}); err == nil {
		t.Error("a query without words: no error")
	}
}

func TestIncremental(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	write(t, a, sessionTape)
	write(t, b, sessionTape)
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	if rep := refresh(t, l); rep.Indexed != 2 {
		t.Fatalf("first: %+v", rep)
	}
	if rep := refresh(t, l); rep.Indexed != 0 || rep.Removed != 0 || rep.Scanned != 2 {
		t.Fatalf("unchanged: %+v", rep)
	}
	// A tape grows: only it is read again, and its new message found.
	f, _ := os.OpenFile(b, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"fog over the fjord"}]},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:05.000Z"}}` + "\n")
	f.Close()
	if rep := refresh(t, l); rep.Indexed != 1 || rep.Messages != 12 {
		t.Fatalf("appended: %+v", rep)
	}
	hits, _ := l.Search(Query{Text: "fjord"})
	if len(hits) != 1 || hits[0].Path != b || hits[0].Status != "ok" || hits[0].Target != "weather" {
		t.Errorf("new message: %+v", hits)
	}
	if hits, _ := l.Search(Query{Tool: "weather", Status: "pending"}); len(hits) != 1 || hits[0].Path != a {
		t.Errorf("b's call no longer pending: %+v", hits)
	}
	// A tape removed is forgotten, with its messages.
	os.Remove(a)
	if rep := refresh(t, l); rep.Removed != 1 || rep.Indexed != 0 {
		t.Fatalf("removed: %+v", rep)
	}
	if hits, _ := l.Search(Query{Text: "sleet"}); len(hits) != 1 || hits[0].Path != b {
		t.Errorf("after removal: %+v", hits)
	}
	if n := len(messageRows(t, l)); n != 12 {
		t.Errorf("%d messages in the index, want 12", n)
	}
}

// A tape being recorded ends in an unfinished line: it is indexed up to
// the line before, and again once the line is finished. A line left
// unfinished long enough is a torn tape, indexed as it is.
func TestTapeBeingRecorded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rec.jsonl")
	lines := strings.SplitAfter(sessionTape, "\n")
	half := lines[3][:40]
	write(t, p, strings.Join(lines[:3], "")+half)
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	refresh(t, l)
	ts, _ := l.Tapes()
	if len(ts) != 1 || ts[0].Messages != 3 || !ts[0].Partial {
		t.Fatalf("being recorded: %+v", ts)
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(lines[3][40:])
	f.Close()
	refresh(t, l)
	ts, _ = l.Tapes()
	if len(ts) != 1 || ts[0].Messages != 4 || ts[0].Partial || ts[0].Pending != 1 {
		t.Fatalf("line finished: %+v", ts)
	}
	// Cut off for good: the recorder was killed mid-line an hour ago.
	f, _ = os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(half)
	f.Close()
	refresh(t, l)
	if ts, _ = l.Tapes(); ts[0].Messages != 4 || !ts[0].Partial {
		t.Fatalf("fresh torn line: %+v", ts)
	}
	age(t, p)
	if rep := refresh(t, l); rep.Indexed != 1 {
		t.Fatalf("settled torn line not indexed: %+v", rep)
	}
	if ts, _ = l.Tapes(); ts[0].Messages != 5 || ts[0].Partial || ts[0].Warnings == 0 {
		t.Fatalf("settled torn line: %+v", ts)
	}
	if rep := refresh(t, l); rep.Indexed != 0 {
		t.Fatalf("indexed again: %+v", rep)
	}
}

// Garbage among the tapes: files that are not tapes are skipped (and
// remembered, not read again), never an error.
func TestGarbageFiles(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "good.jsonl"), sessionTape)
	write(t, filepath.Join(dir, "binary.jsonl"), "\x00\x01\x02ELF\xff\xfe garbage")
	write(t, filepath.Join(dir, "prose.jsonl"), "Dear diary,\ntoday I recorded nothing.\n")
	write(t, filepath.Join(dir, "notrpc.jsonl"), `{"hello":"world"}`+"\n"+`{"x":1}`+"\n")
	write(t, filepath.Join(dir, "README.md"), "# not a tape\n")
	write(t, filepath.Join(dir, "notes.txt"), `{"jsonrpc":"2.0","method":"x"}`+"\n")
	write(t, filepath.Join(dir, ".hidden.jsonl"), sessionTape)
	write(t, filepath.Join(dir, "empty.jsonl"), "")
	os.Mkdir(filepath.Join(dir, "sub.jsonl"), 0o700)
	os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling.jsonl"))
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	rep := refresh(t, l)
	if rep.Indexed != 2 || rep.Skipped != 3 {
		t.Errorf("report %+v", rep)
	}
	ts, err := l.Tapes()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range ts {
		names = append(names, filepath.Base(tp.Path))
	}
	if fmt.Sprint(names) != "[empty.jsonl good.jsonl]" {
		t.Errorf("tapes %v", names)
	}
	if rep := refresh(t, l); rep.Indexed != 0 || rep.Skipped != 0 {
		t.Errorf("garbage read again: %+v", rep)
	}
}

// A tape that disappears between the listing and its reading is
// forgotten; one truncated after it was stat'ed is read as far as it
// goes. Neither is an error.
func TestTapeVanishesOrShrinks(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	write(t, a, sessionTape)
	write(t, b, sessionTape)
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	stale := scan([]string{dir})
	os.Remove(a)
	lines := strings.SplitAfter(sessionTape, "\n")
	write(t, b, strings.Join(lines[:5], "")+lines[5][:20]) // cut mid-line
	rep, err := l.index(ctx, stale, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Indexed != 1 || rep.Removed != 1 {
		t.Errorf("report %+v", rep)
	}
	ts, _ := l.Tapes()
	if len(ts) != 1 || ts[0].Path != b || ts[0].Messages != 5 {
		t.Fatalf("tapes %+v", ts)
	}
	// The stale stat is what was stored: the next refresh reads b again.
	if rep := refresh(t, l); rep.Indexed != 1 {
		t.Errorf("refresh after the shrink: %+v", rep)
	}
}

// A tape rewritten and truncated over and over while it is indexed: no
// error, no crash (the tape is never mapped into memory, where a
// truncation would fault), and the index ends up right.
func TestTapeTruncatedWhileIndexing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "churn.jsonl")
	var big bytes.Buffer
	tape.Synthesize(&big, tape.SynthOptions{Messages: 4000})
	write(t, p, big.String())
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				continue
			}
			f.Truncate(int64(i*7919) % int64(big.Len()))
			f.Close()
			os.WriteFile(p, big.Bytes(), 0o600)
		}
	}()
	for range 20 {
		if _, err := l.Refresh(ctx); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
	write(t, p, big.String())
	age(t, p)
	refresh(t, l)
	ts, _ := l.Tapes()
	if len(ts) != 1 || ts[0].Messages != 4000 {
		t.Errorf("after the churn: %+v", ts)
	}
}

// A state directory that cannot be written: an index in memory, a note.
func TestUnwritableStateDir(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.jsonl"), sessionTape)
	blocker := filepath.Join(t.TempDir(), "state")
	write(t, blocker, "a file where the state directory should be")
	cases := map[string]string{"under a file": filepath.Join(blocker, "tapedeck", "index.db")}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := t.TempDir()
		os.Chmod(ro, 0o500)
		t.Cleanup(func() { os.Chmod(ro, 0o700) })
		cases["read-only"] = filepath.Join(ro, "tapedeck", "index.db")
	}
	for name, db := range cases {
		t.Run(name, func(t *testing.T) {
			l, notes := open(t, db, dir)
			if !l.Memory() || !strings.Contains(notes.String(), "using an index in memory") {
				t.Errorf("memory %v, notes %q", l.Memory(), notes)
			}
			if rep := refresh(t, l); rep.Indexed != 1 {
				t.Errorf("report %+v", rep)
			}
			if hits, err := l.Search(Query{Text: "sleet"}); err != nil || len(hits) != 1 {
				t.Errorf("search: %v, %v", hits, err)
			}
		})
	}
}

// A corrupt index is rebuilt from the tapes with a note, not an error:
// a file that is no database, and a database with damaged pages.
func TestCorruptIndex(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.jsonl"), sessionTape)
	t.Run("not a database", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "index.db")
		write(t, db, strings.Repeat("this is not SQLite\n", 500))
		l, notes := open(t, db, dir)
		if !strings.Contains(notes.String(), "rebuilding it") {
			t.Errorf("notes %q", notes)
		}
		refresh(t, l)
		if ts, err := l.Tapes(); err != nil || len(ts) != 1 {
			t.Errorf("tapes %v, %v", ts, err)
		}
	})
	t.Run("damaged pages", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "index.db")
		l, _ := open(t, db, dir)
		refresh(t, l)
		l.db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		l.Close()
		b, _ := os.ReadFile(db)
		for i := 4096; i < len(b); i++ { // every page but the header's
			b[i] = byte(i * 31)
		}
		write(t, db, string(b))
		l, notes := open(t, db, dir)
		rep, err := l.Refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := l.Search(Query{Text: "sleet"})
		if err != nil || len(hits) != 1 {
			t.Errorf("search: %v, %v (report %+v)", hits, err, rep)
		}
		if !strings.Contains(notes.String(), "rebuilding it") {
			t.Errorf("notes %q", notes)
		}
	})
	t.Run("another version", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "index.db")
		l, _ := open(t, db, dir)
		added := t.TempDir()
		if _, err := l.Add(added); err != nil {
			t.Fatal(err)
		}
		l.db.Exec("PRAGMA user_version = 99")
		l.Close()
		l, notes := open(t, db, dir)
		if !strings.Contains(notes.String(), "another version") || strings.Contains(notes.String(), "unreadable") {
			t.Errorf("notes %q: expected one note, that the index is of another version", notes)
		}
		if rep := refresh(t, l); rep.Indexed != 1 {
			t.Errorf("report %+v", rep)
		}
		// The directories the user added are not a cache: they outlive
		// the rebuild.
		if roots, err := l.Roots(); err != nil || !slices.Contains(roots, added) {
			t.Errorf("roots after the rebuild %v, %v: expected %s among them", roots, err, added)
		}
	})
}

// Two indexers at once on one index: two processes (this test binary run
// again as a helper) and two libraries in this one, over tapes that keep
// changing. No error, and the index is whole and right at the end.
func TestConcurrentIndexers(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		var b bytes.Buffer
		tape.Synthesize(&b, tape.SynthOptions{Messages: 300, Seed: uint64(i)})
		write(t, filepath.Join(dir, fmt.Sprintf("t%02d.jsonl", i)), b.String())
	}
	db := filepath.Join(t.TempDir(), "index.db")
	const rounds = 6
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperIndexer$")
	helper.Env = append(os.Environ(), "LIBRARY_HELPER_DB="+db, "LIBRARY_HELPER_DIR="+dir, fmt.Sprintf("LIBRARY_HELPER_ROUNDS=%d", rounds))
	var out bytes.Buffer
	helper.Stdout, helper.Stderr = &out, &out
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Open(Options{Path: db, DefaultDir: dir, Workers: 2})
			if err != nil {
				t.Error(err)
				return
			}
			defer l.Close()
			for r := range rounds {
				if w == 0 { // change a few tapes between the rounds
					p := filepath.Join(dir, fmt.Sprintf("t%02d.jsonl", r))
					f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
					f.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"round marker"},"_meta":{"dir":"recv","server":"synth","ts":"2026-01-02T00:00:00.000Z"}}` + "\n")
					f.Close()
				}
				if _, err := l.Refresh(ctx); err != nil {
					t.Errorf("indexer %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := helper.Wait(); err != nil {
		t.Fatalf("helper indexer: %v\n%s", err, out.String())
	}
	l, notes := open(t, db, dir)
	refresh(t, l)
	if notes.Len() > 0 {
		t.Errorf("notes %q", notes)
	}
	var check string
	l.db.QueryRow("PRAGMA integrity_check").Scan(&check)
	if check != "ok" {
		t.Errorf("integrity_check: %s", check)
	}
	if _, err := l.db.Exec("INSERT INTO text(text, rank) VALUES ('integrity-check', 0)"); err != nil {
		t.Errorf("FTS5 integrity-check: %v", err)
	}
	ts, _ := l.Tapes()
	total := 0
	for _, tp := range ts {
		total += tp.Messages
	}
	rows := len(messageRows(t, l))
	if len(ts) != 40 || total != 40*300+rounds || rows != total {
		t.Errorf("%d tapes, %d messages, %d rows; want 40, %d", len(ts), total, rows, 40*300+rounds)
	}
	if hits, _ := l.Search(Query{Text: "round marker"}); len(hits) != rounds {
		t.Errorf("%d markers found, want %d", len(hits), rounds)
	}
}

// TestHelperIndexer is TestConcurrentIndexers' second process.
func TestHelperIndexer(t *testing.T) {
	db := os.Getenv("LIBRARY_HELPER_DB")
	if db == "" {
		t.Skip("a helper process of TestConcurrentIndexers")
	}
	var rounds int
	fmt.Sscan(os.Getenv("LIBRARY_HELPER_ROUNDS"), &rounds)
	l, err := Open(Options{Path: db, DefaultDir: os.Getenv("LIBRARY_HELPER_DIR"), Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range rounds * 2 {
		if _, err := l.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRootsAndOlder(t *testing.T) {
	def, other := t.TempDir(), t.TempDir()
	write(t, filepath.Join(def, "a.jsonl"), sessionTape)
	write(t, filepath.Join(other, "b.jsonl"), strings.ReplaceAll(sessionTape, "2026-03-01", "2026-05-01"))
	single := filepath.Join(t.TempDir(), "single.json") // a file named on its own: any name
	write(t, single, strings.ReplaceAll(sessionTape, "2026-03-01", "2026-04-01"))
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), def)
	if _, err := l.Add(other, single); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Add(filepath.Join(other, "missing")); err == nil {
		t.Error("adding a missing directory: no error")
	}
	refresh(t, l)
	ts, _ := l.Tapes()
	var names []string
	for _, tp := range ts {
		names = append(names, filepath.Base(tp.Path))
	}
	if fmt.Sprint(names) != "[b.jsonl single.json a.jsonl]" {
		t.Errorf("newest first: %v", names)
	}
	if ts, _ := l.Tapes(other); len(ts) != 1 || filepath.Base(ts[0].Path) != "b.jsonl" {
		t.Errorf("under %s: %+v", other, ts)
	}
	for _, p := range []string{filepath.Join(def, "a.jsonl"), single} {
		age(t, p)
	}
	refresh(t, l)
	old, _, err := l.Older(time.Date(2026, 4, 15, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, tp := range old {
		names = append(names, filepath.Base(tp.Path))
	}
	if fmt.Sprint(names) != "[a.jsonl single.json]" {
		t.Errorf("older: %v", names)
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"echo","arguments":{"msg":"hi \"you\"\n"}},"_meta":{"dir":"send","server":"s","ts":"x"}}`, `echo hi "you"`},
		{`{"_meta":{"dir":"recv"},"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\u00e9b"}],"isError":false,"_meta":{"k":"v"}}}`, "aéb"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"boom","data":{"k":["x","y"]}}}`, "boom x y"},
		{`{"params":{"a":"one","b":{}},"_meta":{},"x":"two"}`, "one two"},
		{`{"params":{"a":"cut here`, ""},
	} {
		if got := Text([]byte(tc.in), 0); got != tc.want {
			t.Errorf("Text(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := `{"params":{"a":"` + strings.Repeat("word ", 200) + `"}}`
	if got := Text([]byte(long), 50); len(got) > 50 || !strings.HasSuffix(got, "word") {
		t.Errorf("limit: %q", got)
	}
}

func TestParseAge(t *testing.T) {
	now := time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"24h":                  now.Add(-24 * time.Hour),
		"90m":                  now.Add(-90 * time.Minute),
		"7d":                   now.Add(-7 * 24 * time.Hour),
		"2w":                   now.Add(-14 * 24 * time.Hour),
		"1.5d":                 now.Add(-36 * time.Hour),
		"2026-01-31":           time.Date(2026, 1, 31, 0, 0, 0, 0, time.Local),
		"2026-01-31T08:00:00Z": time.Date(2026, 1, 31, 8, 0, 0, 0, time.UTC),
	} {
		got, err := ParseAge(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "-3h", "7x", "d"} {
		if _, err := ParseAge(bad, now); err == nil {
			t.Errorf("ParseAge(%q): no error", bad)
		}
	}
}

func TestSnippet(t *testing.T) {
	text := strings.Repeat("lorem ipsum ", 20) + "the Needle is here " + strings.Repeat("dolor sit ", 20)
	got := Snippet(text, []string{"needle"}, 60)
	if !strings.Contains(got, "»Needle«") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") || len([]rune(got)) > 70 {
		t.Errorf("snippet %q", got)
	}
	if got := Snippet("short text", []string{"absent"}, 60); got != "short text" {
		t.Errorf("no match: %q", got)
	}
	// Every query word is marked, each time it occurs (issue 24 item 7:
	// only the first word was).
	if got, want := Snippet(`{"error":"Card declined: the card was declined by the bank"}`, []string{"declined", "card", "bank"}, 100), `{"error":"»Card« »declined«: the »card« was »declined« by the »bank«"}`; got != want {
		t.Errorf("several words: %q, want %q", got, want)
	}
	// Overlapping terms: the longest at a place wins.
	if got, want := Snippet("tools/call and tool", []string{"tool", "tools/call"}, 100), "»tools/call« and »tool«"; got != want {
		t.Errorf("overlapping terms: %q, want %q", got, want)
	}
}

// The go-sdk client's server/discover probe, rejected by a 2025-era server
// before initialize (-32601 over stdio, HTTP 400 over HTTP), is version
// negotiation: not among a tape's errors, and found by status negotiation,
// not by status error.
func TestNegotiationCounts(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"demo.jsonl": "../../assets/demo.tape.jsonl",
		"http.jsonl": "../../testdata/sdk-everything-http.tape.jsonl",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, name), string(b))
		age(t, filepath.Join(dir, name))
	}
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	refresh(t, l)
	ts, err := l.Tapes()
	if err != nil || len(ts) != 2 {
		t.Fatalf("tapes %v, %v", ts, err)
	}
	want := map[string][2]int{"demo.jsonl": {2, 2}, "http.jsonl": {1, 1}} // JSON-RPC errors, tool errors
	for _, tp := range ts {
		w := want[filepath.Base(tp.Path)]
		if tp.RPCErrors != w[0] || tp.ToolErrors != w[1] {
			t.Errorf("%s: %d errors, %d tool errors; want %d, %d (the rejected probe is no error)", filepath.Base(tp.Path), tp.RPCErrors, tp.ToolErrors, w[0], w[1])
		}
	}
	hits, err := l.Search(Query{Method: "server/discover", Status: "negotiation"})
	if err != nil || len(hits) != 4 { // the probe and its answer, in each tape
		t.Errorf("status negotiation: %d hits, %v; want 4", len(hits), err)
	}
	hits, err = l.Search(Query{Method: "server/discover", Status: "error"})
	if err != nil || len(hits) != 0 {
		t.Errorf("status error: %d server/discover hits, %v; want none", len(hits), err)
	}
}

// TestIndexIsPrivate: the index holds what the tapes hold (0600), so it is
// created 0600, with its WAL, and an index an older version left 0644 is
// made private when opened.
func TestIndexIsPrivate(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.jsonl"), sessionTape)
	state := t.TempDir()
	db := filepath.Join(state, "index.db")
	l, _ := open(t, db, dir)
	refresh(t, l)
	for _, name := range []string{"index.db", "index.db-wal", "index.db-shm"} {
		fi, err := os.Stat(filepath.Join(state, name))
		if err != nil {
			if name != "index.db" && errors.Is(err, os.ErrNotExist) {
				continue
			}
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group and others", name, perm)
		}
	}
	l.Close()
	if err := os.Chmod(db, 0o644); err != nil {
		t.Fatal(err)
	}
	l, _ = open(t, db, dir)
	refresh(t, l)
	if fi, err := os.Stat(db); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("an index left 0644, opened again: %v %v, want 0600", fi.Mode().Perm(), err)
	}
}

// The sessions view's search line: search's QUERY with its flags as
// words (tool:, method:, status:, since:), quoted words left alone.
func TestParseSearchLine(t *testing.T) {
	now := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	q, err := ParseSearchLine(`"card declined" tool:create_invoice status:error since:24h acme*  method:tools/call url:x`, now)
	if err != nil {
		t.Fatal(err)
	}
	if q.Text != `"card declined" acme* url:x` || q.Tool != "create_invoice" || q.Status != "error" || q.Method != "tools/call" || !q.Since.Equal(now.Add(-24*time.Hour)) {
		t.Errorf("parsed %+v", q)
	}
	q, err = ParseSearchLine(`"tool:x in quotes"`, now)
	if err != nil || q.Text != `"tool:x in quotes"` || q.Tool != "" {
		t.Errorf("quoted: %+v %v", q, err)
	}
	for _, bad := range []string{"status:bad", "since:yesterday", "   "} {
		if _, err := ParseSearchLine(bad, now); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A 2026-07-28 session has no initialize: the client names itself in the
// server/discover probe's _meta, and the library takes it from there
// (testdata/ts-v2-http, recorded from the v2 SDK's client and server).
func TestModernClient(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../../testdata/ts-v2-http.tape.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "v2.jsonl"), string(data))
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	refresh(t, l)
	ts, err := l.Tapes()
	if err != nil || len(ts) != 1 {
		t.Fatalf("tapes %v, %v", ts, err)
	}
	if got := ts[0]; got.Client != "v2-http-client" || got.ClientVersion != "2.4.0" || got.Protocol != "2026-07-28" {
		t.Errorf("client %q %q, protocol %q: expected v2-http-client 2.4.0 speaking 2026-07-28, as its server/discover says", got.Client, got.ClientVersion, got.Protocol)
	}
}
