package library

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// textRows counts the text rows of the index.
func textRows(t *testing.T, l *Library) int {
	t.Helper()
	var n int
	if err := l.db.QueryRow("SELECT count(*) FROM text").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// textBehind counts the tapes whose text is behind their facts, and
// returns the text_seq of the one tape of the index.
func textBehind(t *testing.T, l *Library) (behind int, seq int64) {
	t.Helper()
	if err := l.db.QueryRow("SELECT count(*) FROM tapes WHERE is_tape = 1 AND text_indexed <> indexed").Scan(&behind); err != nil {
		t.Fatal(err)
	}
	if err := l.db.QueryRow("SELECT coalesce(max(text_seq), 0) FROM tapes").Scan(&seq); err != nil {
		t.Fatal(err)
	}
	return behind, seq
}

func search(t *testing.T, l *Library, q Query) []Hit {
	t.Helper()
	hits, err := l.Search(q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	return hits
}

// A refresh (what ls runs) indexes the facts of a tape and no text; a
// search by filters alone needs none either; the first search for words
// indexes the text, and finds the hits.
func TestRefreshIndexesNoText(t *testing.T) {
	dir := t.TempDir()
	synthDir(t, dir, 1, 1000)
	l, _ := open(t, "", dir) // in memory
	if rep := refresh(t, l); rep.Indexed != 1 || rep.Messages != 1002 {
		t.Fatalf("refresh: %+v, want one tape of 1002 messages", rep)
	}
	ts, err := l.Tapes()
	if err != nil || len(ts) != 1 || ts[0].Messages != 1002 {
		t.Fatalf("tapes: %+v, %v", ts, err)
	}
	if n := textRows(t, l); n != 0 {
		t.Fatalf("after a refresh: %d text rows, want none", n)
	}
	if b, _ := textBehind(t, l); b != 1 {
		t.Fatalf("after a refresh: %d tapes with their text behind, want 1", b)
	}
	if hits := search(t, l, Query{Tool: "search", Status: "tool-error"}); len(hits) == 0 {
		t.Fatal("a search by filters found nothing")
	}
	if n := textRows(t, l); n != 0 {
		t.Fatalf("after a search by filters: %d text rows, want none", n)
	}
	hits := search(t, l, Query{Text: needle})
	if len(hits) != 1 || hits[0].Seq != 1000 || !strings.Contains(hits[0].Snippet, "»"+needle+"«") {
		t.Fatalf("search %s: %+v, want the needle call, message 1000", needle, hits)
	}
	if n := textRows(t, l); n == 0 {
		t.Fatal("after a search for words: no text rows")
	}
	if b, seq := textBehind(t, l); b != 0 || seq != 1002 {
		t.Fatalf("after a search for words: %d tapes behind, text_seq %d; want 0 and 1002", b, seq)
	}
	// A tape gone takes its text with it.
	if err := os.Remove(filepath.Join(dir, "synth-00000.jsonl")); err != nil {
		t.Fatal(err)
	}
	if rep := refresh(t, l); rep.Removed != 1 {
		t.Fatalf("refresh after removal: %+v", rep)
	}
	if n := textRows(t, l); n != 0 {
		t.Fatalf("tape removed: %d text rows left", n)
	}
}

// A search after a line is appended to a tape whose text was indexed
// finds the new line's words (the append is read from the old end, the
// text pass writes the new groups only) and the old hits once each.
func TestSearchAfterAppend(t *testing.T) {
	dir := t.TempDir()
	synthDir(t, dir, 1, 1000)
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	refresh(t, l)
	if hits := search(t, l, Query{Text: needle}); len(hits) != 1 {
		t.Fatalf("search %s: %d hits, want 1", needle, len(hits))
	}
	rowsBefore := textRows(t, l)
	path := filepath.Join(dir, "synth-00000.jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = tape.NewWriter(f).Write([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"an appended wombatline"}}`),
		tape.Meta{Dir: tape.DirRecv, Server: "synth", Time: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if rep := refresh(t, l); rep.Appended != 1 {
		t.Fatalf("refresh after one line: %+v, want it read from the old end", rep)
	}
	if b, _ := textBehind(t, l); b != 1 {
		t.Fatalf("after the append: %d tapes with their text behind, want 1", b)
	}
	hits := search(t, l, Query{Text: "wombatline"})
	if len(hits) != 1 || hits[0].Seq != 1002 || !strings.Contains(hits[0].Snippet, "»wombatline«") {
		t.Fatalf("search wombatline: %+v, want message 1002", hits)
	}
	if n := textRows(t, l); n != rowsBefore+1 {
		t.Fatalf("%d text rows after the append, want %d (+ the new group's)", n, rowsBefore+1)
	}
	if hits := search(t, l, Query{Text: needle}); len(hits) != 1 {
		t.Fatalf("search %s after the append: %d hits, want 1", needle, len(hits))
	}
}

// A text pass stopped halfway leaves the groups it wrote with their text
// and text_seq after them; the next search completes it, and finds what a
// pass never stopped finds.
func TestTextPassCancelled(t *testing.T) {
	dir := t.TempDir()
	synthDir(t, dir, 1, 1000)
	queries := []Query{{Text: needle}, {Text: "a*", Limit: 100_000}, {Text: "search NOT failed", Limit: 100_000}}

	whole, _ := open(t, "", dir)
	refresh(t, whole)
	var want [][]Hit
	for _, q := range queries {
		want = append(want, search(t, whole, q))
	}
	wantRows := textRows(t, whole)

	// A group a transaction, and the context ended after the third.
	defer func(g int, d time.Duration) { textGroups, textBatchTime, textWritten = g, d, nil }(textGroups, textBatchTime)
	textGroups, textBatchTime = 1, 0
	l, _ := open(t, filepath.Join(t.TempDir(), "index.db"), dir)
	refresh(t, l)
	cctx, cancel := context.WithCancel(ctx)
	written := 0
	textWritten = func() {
		if written++; written == 3 {
			cancel()
		}
	}
	if _, err := l.SearchContext(cctx, queries[0]); !errors.Is(err, context.Canceled) {
		t.Fatalf("search with its context ended: %v, want context.Canceled", err)
	}
	if b, seq := textBehind(t, l); b != 1 || seq != 3*groupSize {
		t.Fatalf("after the stop: %d tapes behind, text_seq %d; want 1 and %d", b, seq, 3*groupSize)
	}
	if n := textRows(t, l); n != 3 {
		t.Fatalf("after the stop: %d text rows, want the 3 groups'", n)
	}
	textWritten = nil
	for i, q := range queries {
		got := search(t, l, q)
		if len(got) == 0 || !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("search %+v after the stop: %d hits, differ from an index never stopped (%d hits)", q, len(got), len(want[i]))
		}
	}
	if b, _ := textBehind(t, l); b != 0 {
		t.Fatalf("after the next search: %d tapes behind", b)
	}
	if n := textRows(t, l); n != wantRows {
		t.Fatalf("%d text rows, an index never stopped has %d", n, wantRows)
	}
}

// A text pass longer than ProgressAfter says so on Options.Progress, as
// a refresh does.
func TestTextPassProgress(t *testing.T) {
	dir := t.TempDir()
	synthDir(t, dir, 2, 200)
	var out bytes.Buffer
	l, err := Open(Options{Path: filepath.Join(t.TempDir(), "index.db"), DefaultDir: dir, Progress: &out, ProgressAfter: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	refresh(t, l)
	if strings.Contains(out.String(), "text") {
		t.Fatalf("a refresh spoke of text: %q", out.String())
	}
	out.Reset()
	defer func() { textWritten = nil }()
	textWritten = func() { time.Sleep(5 * time.Millisecond) }
	if hits := search(t, l, Query{Text: needle}); len(hits) != 1 {
		t.Fatalf("search: %d hits, want 1", len(hits))
	}
	s := out.String()
	if !strings.Contains(s, "tapedeck: indexing the text of 2 tape(s): ") || !strings.Contains(s, "tapedeck: indexed the text of 2 tape(s), ") {
		t.Fatalf("progress of the text pass: %q", s)
	}
}
