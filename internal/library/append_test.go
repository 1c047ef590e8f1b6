package library

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dumpIndex is everything the index holds of the one tape in it: its row
// as Tapes gives it and each message's row, by seq.
func dumpIndex(t *testing.T, l *Library) string {
	t.Helper()
	ts, err := l.Tapes()
	if err != nil || len(ts) != 1 {
		t.Fatalf("tapes: %v, %v; want one", ts, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%+v\n", ts[0])
	for _, r := range messageRows(t, l) {
		tv := int64(-1)
		if r.ts != 0 {
			tv = r.ts
		}
		fmt.Fprintf(&b, "%d %d %d %s %s %s %d %d\n", r.seq, tv, r.kind, r.method, r.target, r.status, r.off, r.n)
	}
	return b.String()
}

// messageRows is every message the index holds, decoded from its groups,
// by tape and seq.
func messageRows(t *testing.T, l *Library) []row {
	t.Helper()
	rows, err := l.db.Query("SELECT id, facts FROM groups ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []row
	for rows.Next() {
		var id int64
		var facts []byte
		if err := rows.Scan(&id, &facts); err != nil {
			t.Fatal(err)
		}
		rs, err := decodeFacts(facts, int(id&0xffffffff))
		if err != nil {
			t.Fatalf("group %x: %v", id, err)
		}
		out = append(out, rs...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fresh indexes the tape at path into a new index and dumps it.
func fresh(t *testing.T, dir string) string {
	t.Helper()
	l, _ := open(t, "", dir)
	refresh(t, l)
	return dumpIndex(t, l)
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// A tape only appended to is read from its old end, and its index is then
// what a whole read gives: answers to pending requests, cancellations,
// new servers and the counts included. A torn last line waits.
func TestAppendReadsFromOldEnd(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "grow.jsonl")
	write(t, p, sessionTape+
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{}},"_meta":{"dir":"send","server":"srv","ts":"2026-03-01T10:00:05.000Z"}}`+"\n"+
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"cut","arguments":{}},"_meta":{"dir":"send","server":"srv","ts":"2026-03-01T10:00:05.100Z"}}`+"\n")
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	if rep := refresh(t, l); rep.Indexed != 1 || rep.Appended != 0 {
		t.Fatalf("first refresh: %+v, want one tape read whole", rep)
	}
	steps := []struct{ name, add string }{
		{"an answer to a pending request", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"done at last"}],"isError":true},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:06.000Z"}}` + "\n"},
		{"a cancellation", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8},"_meta":{"dir":"send","server":"srv","ts":"2026-03-01T10:00:07.000Z"}}` + "\n"},
		{"a late answer and a new server's call", `{"jsonrpc":"2.0","id":8,"result":{"content":[]},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:08.000Z"}}` + "\n" +
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"other","arguments":{"q":"zanzibar"}},"_meta":{"dir":"send","server":"two","ts":"2026-03-01T10:00:09.000Z"}}` + "\n"},
		{"an answer before its request", `{"jsonrpc":"2.0","id":9,"error":{"code":-32000,"message":"boom"},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:10.000Z"}}` + "\n"},
		{"its request", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"early","arguments":{}},"_meta":{"dir":"send","server":"srv","ts":"2026-03-01T10:00:10.000Z"}}` + "\n"},
	}
	for _, st := range steps {
		appendTo(t, p, st.add)
		rep := refresh(t, l)
		if rep.Appended != 1 || rep.Bytes != int64(len(st.add)) {
			t.Errorf("%s: %+v, want one tape read from its old end, %d bytes", st.name, rep, len(st.add))
		}
		if got, want := dumpIndex(t, l), fresh(t, dir); got != want {
			t.Fatalf("%s: the index after the append\n%s\nwant (a whole read)\n%s", st.name, got, want)
		}
	}

	// A torn line is not indexed until it is whole.
	line := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"half"},"_meta":{"dir":"recv","server":"srv","ts":"2026-03-01T10:00:11.000Z"}}`
	before := dumpIndex(t, l)
	appendTo(t, p, line[:40])
	if rep := refresh(t, l); rep.Bytes != 0 || rep.Messages == 0 {
		t.Errorf("torn line: %+v, want no bytes indexed", rep)
	}
	ts, _ := l.Tapes()
	if !ts[0].Partial {
		t.Errorf("torn line: the tape is not partial: %+v", ts[0])
	}
	if got := dumpIndex(t, l); strings.SplitN(got, "\n", 2)[1] != strings.SplitN(before, "\n", 2)[1] {
		t.Errorf("torn line: messages changed:\n%s\nwant\n%s", got, before)
	}
	appendTo(t, p, line[40:]+"\n")
	if rep := refresh(t, l); rep.Appended != 1 || rep.Bytes != int64(len(line)+1) {
		t.Errorf("the torn line completed: %+v, want %d bytes from the old end", rep, len(line)+1)
	}
	if got, want := dumpIndex(t, l), fresh(t, dir); got != want {
		t.Fatalf("the torn line completed: the index\n%s\nwant\n%s", got, want)
	}
}

// A tape rewritten with other bytes, of the same size or larger, is read
// whole.
func TestRewrittenTapeReadWhole(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"same size", strings.Replace(sessionTape, "claude-code", "claude-kode", 1)},
		{"same size, last line", strings.Replace(sessionTape, "Oslo", "Rome", 1)},
		{"larger", strings.Replace(sessionTape, "Reykjavík", "Reykjavík and Akureyri", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.content == sessionTape {
				t.Fatal("the rewrite changed nothing")
			}
			dir := t.TempDir()
			p := filepath.Join(dir, "re.jsonl")
			write(t, p, sessionTape)
			age(t, p)
			l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
			refresh(t, l)
			write(t, p, tc.content)
			rep := refresh(t, l)
			if rep.Indexed != 1 || rep.Appended != 0 || rep.Bytes != int64(len(tc.content)) {
				t.Errorf("refresh: %+v, want the tape read whole (%d bytes)", rep, len(tc.content))
			}
			if got, want := dumpIndex(t, l), fresh(t, dir); got != want {
				t.Errorf("index\n%s\nwant\n%s", got, want)
			}
		})
	}
}
