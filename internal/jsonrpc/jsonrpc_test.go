package jsonrpc

import (
	"errors"
	"strings"
	"testing"
)

// TestReadLines: blank lines are skipped, lines keep their newline, a last
// line without one is read, each line is a slice of its own, and an error
// from the callback stops the reading and is returned.
func TestReadLines(t *testing.T) {
	var got [][]byte
	noLimit := func() error { t.Fatal("no line is over the limit"); return nil }
	err := ReadLines(strings.NewReader("a\n\n  \r\nb\r\nc"), 0, func(l []byte) error {
		got = append(got, l)
		return nil
	}, noLimit)
	if err != nil || len(got) != 3 || string(got[0]) != "a\n" || string(got[1]) != "b\r\n" || string(got[2]) != "c" {
		t.Fatalf("ReadLines = %q, %v; want [a\\n b\\r\\n c], nil", got, err)
	}
	got[0][0] = 'x'
	if string(got[1]) != "b\r\n" {
		t.Errorf("lines share a buffer: %q", got)
	}
	stop := errors.New("stop")
	n := 0
	err = ReadLines(strings.NewReader("a\nb\nc\n"), 0, func([]byte) error { n++; return stop }, noLimit)
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("a failing callback: %d calls, %v; want 1, stop", n, err)
	}
}

// A line over the limit is skipped to its end and reported, however it
// arrives (a 768 MB line used to grow a 2.4 GB buffer); the lines around it
// are read.
func TestReadLinesLimit(t *testing.T) {
	long := strings.Repeat("x", 300<<10) // past bufio's 64 KiB buffer
	for _, in := range []string{"a\n" + long + "\nb\n", "a\n" + long} {
		var got []string
		over := 0
		err := ReadLines(strings.NewReader(in), 100<<10, func(l []byte) error {
			got = append(got, string(l))
			return nil
		}, func() error { over++; return nil })
		want := []string{"a\n", "b\n"}
		if !strings.HasSuffix(in, "\n") {
			want = want[:1]
		}
		if err != nil || over != 1 || strings.Join(got, "") != strings.Join(want, "") {
			t.Errorf("got %d lines %.20q, %d over, %v; want %q and one over", len(got), got, over, err, want)
		}
	}
}

// An error answer keeps the id's bytes as given; a spliced id leaves every
// other byte as it was.
func TestErrorResponseAndSpliceID(t *testing.T) {
	got := string(ErrorResponse([]byte(`"a\u0062"`), -32000, `say "no"`, []byte(`{"k":1}`)))
	want := `{"jsonrpc":"2.0","id":"a\u0062","error":{"code":-32000,"message":"say \"no\"","data":{"k":1}}}`
	if got != want {
		t.Errorf("ErrorResponse = %s\nexpected     %s", got, want)
	}
	msg := []byte(`{"id" : 7,"jsonrpc":"2.0","result":{"x":1.50}}`)
	if got, want := string(SpliceID(msg, []byte(`"live-1"`))), `{"id" : "live-1","jsonrpc":"2.0","result":{"x":1.50}}`; got != want {
		t.Errorf("SpliceID = %s, expected %s", got, want)
	}
	if got := SpliceID([]byte(`{"jsonrpc":"2.0","method":"n"}`), []byte(`1`)); string(got) != `{"jsonrpc":"2.0","method":"n"}` {
		t.Errorf("SpliceID of a message without an id = %s, expected it unchanged", got)
	}
}
