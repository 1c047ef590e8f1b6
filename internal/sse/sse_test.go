package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r io.Reader) ([]Event, error) {
	t.Helper()
	rd := NewReader(r)
	var out []Event
	for {
		e, err := rd.Next()
		if err != nil {
			if len(e.Raw) > 0 {
				out = append(out, e)
			}
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, e)
	}
}

func TestReader(t *testing.T) {
	stream := ": keepalive\n\nid: 1\nevent: message\ndata: {\"a\":\ndata:1}\n\n" +
		"id: 2\r\ndata:\r\n\r\n" + // a priming event: id and empty data
		"retry: 500\rdata: x\r\r" + // lone CRs
		"data: " + strings.Repeat("z", 100000) + "\n\n" +
		"id\n\ndata: cut"
	for name, r := range map[string]io.Reader{
		"whole":    strings.NewReader(stream),
		"one byte": iotest.OneByteReader(strings.NewReader(stream)),
	} {
		t.Run(name, func(t *testing.T) {
			evs, err := readAll(t, r)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("err %v, want io.ErrUnexpectedEOF for the cut last event", err)
			}
			var raw bytes.Buffer
			for _, e := range evs {
				raw.Write(e.Raw)
			}
			if raw.String() != stream {
				t.Errorf("raw bytes do not add up to the stream")
			}
			if len(evs) != 6 {
				t.Fatalf("%d events, want 6: %+v", len(evs), evs)
			}
			if e := evs[0]; e.ID != "1" || !e.HasID || e.Type() != "message" || string(e.Data) != "{\"a\":\n1}" || !strings.HasPrefix(string(e.Raw), ": keepalive") {
				t.Errorf("event 0: %+v", e)
			}
			if e := evs[1]; e.ID != "2" || e.Data == nil || len(e.Data) != 0 {
				t.Errorf("event 1 (priming): %+v", e)
			}
			if e := evs[2]; e.Retry != 500 || string(e.Data) != "x" {
				t.Errorf("event 2: %+v", e)
			}
			if e := evs[3]; len(e.Data) != 100000 {
				t.Errorf("event 3: %d bytes of data", len(e.Data))
			}
			if e := evs[4]; !e.HasID || e.ID != "" || e.Data != nil {
				t.Errorf("event 4 (id reset): %+v", e)
			}
			if e := evs[5]; string(e.Data) != "cut" {
				t.Errorf("event 5: %+v", e)
			}
		})
	}
}

func TestWriteReadsBack(t *testing.T) {
	var b bytes.Buffer
	in := []Event{
		{ID: "7", HasID: true, Event: "message", Data: []byte(`{"jsonrpc":"2.0"}`), Retry: -1},
		{ID: "8", HasID: true, Data: []byte{}, Retry: 1000},
		{Data: []byte("two\nlines"), Retry: -1},
	}
	for _, e := range in {
		if err := Write(&b, e); err != nil {
			t.Fatal(err)
		}
	}
	out, err := readAll(t, &b)
	if err != nil || len(out) != len(in) {
		t.Fatalf("read back %d events, err %v", len(out), err)
	}
	for i := range in {
		g, w := out[i], in[i]
		if g.ID != w.ID || g.HasID != w.HasID || g.Event != w.Event || string(g.Data) != string(w.Data) || g.Retry != w.Retry {
			t.Errorf("event %d: got %+v, want %+v", i, g, w)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add("id: 1\ndata: x\n\n")
	f.Add("data: a\r\ndata: b\r\r\n: c\n")
	f.Fuzz(func(t *testing.T, s string) {
		rd := NewReader(strings.NewReader(s))
		var raw bytes.Buffer
		for {
			e, err := rd.Next()
			raw.Write(e.Raw)
			if err != nil {
				break
			}
		}
		if raw.String() != s {
			t.Fatalf("raw bytes %q do not add up to the stream %q", raw.String(), s)
		}
	})
}

// TestReaderSmallBuffer reads events longer than the buffer it starts with.
func TestReaderSmallBuffer(t *testing.T) {
	long := strings.Repeat("x", 1000)
	in := "event: message\ndata: " + long + "\n\nid: 2\ndata: a\ndata: b\n\n"
	r := NewReaderSize(strings.NewReader(in), 1)
	e, err := r.Next()
	if err != nil || string(e.Data) != long || e.Type() != "message" || len(e.Raw) != len("event: message\ndata: \n\n")+len(long) {
		t.Fatalf("first event: got %q (%d raw bytes), %v", e.Data, len(e.Raw), err)
	}
	e, err = r.Next()
	if err != nil || string(e.Data) != "a\nb" || e.ID != "2" {
		t.Fatalf("second event: got data %q id %q, %v; want \"a\\nb\" and 2", e.Data, e.ID, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("end: got %v, want io.EOF", err)
	}
}

// TestReaderReset reuses a Reader on a second stream after the first was
// left mid-event: nothing of the first leaks into the second.
func TestReaderReset(t *testing.T) {
	r := NewReaderSize(strings.NewReader("id: 1\ndata: first\n\ndata: cut\r"), 8)
	if e, err := r.Next(); err != nil || string(e.Data) != "first" {
		t.Fatalf("first stream: got %q, %v", e.Data, err)
	}
	r.Reset(strings.NewReader("\ndata: second\n\n"))
	e, err := r.Next()
	if err != nil || string(e.Data) != "second" || e.HasID || string(e.Raw) != "\ndata: second\n\n" {
		t.Fatalf("after Reset: got data %q raw %q id %v, %v; want only the second stream", e.Data, e.Raw, e.HasID, err)
	}
}

// An event over Max comes back as read so far with ErrTooLong; Skip hands
// out the rest a chunk at a time, the buffer bounded; the next event reads
// as usual.
func TestReaderMax(t *testing.T) {
	long := "data: " + strings.Repeat("x", 10000) + "\n" + "data: more\n\n"
	r := NewReaderSize(iotest.HalfReader(strings.NewReader(long+"data: next\n\n")), 64)
	r.Max = 1000
	e, err := r.Next()
	if !errors.Is(err, ErrTooLong) || len(e.Raw) == 0 || len(e.Raw) > 2100 {
		t.Fatalf("Next = %d raw bytes, %v; want a bounded prefix and ErrTooLong", len(e.Raw), err)
	}
	got := string(e.Raw)
	for {
		chunk, done, err := r.Skip()
		if err != nil {
			t.Fatal(err)
		}
		got += string(chunk)
		if done {
			break
		}
		if r.Size() > 4096 {
			t.Fatalf("the buffer grew to %d skipping", r.Size())
		}
	}
	if got != long {
		t.Errorf("prefix and skipped chunks make %d bytes, want the event's %d", len(got), len(long))
	}
	if e, err := r.Next(); err != nil || string(e.Data) != "next" {
		t.Errorf("next event %q, %v", e.Data, err)
	}
}

// TestEvents reads a whole body: the events with data, in order, with their
// ids; comments, priming events without data and a last event cut off by
// the end of the text.
func TestEvents(t *testing.T) {
	body := ": hi\n\nid: 0\n\nid: 7\r\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata: x\n\nid: 9\ndata: cut"
	evs := Events([]byte(body))
	type ev struct {
		id    string
		hasID bool
		data  string
	}
	var got []ev
	for _, e := range evs {
		got = append(got, ev{e.ID, e.HasID, string(e.Data)})
	}
	want := []ev{{"7", true, "{\"a\":\n1}"}, {"", false, "x"}, {"9", true, "cut"}}
	if len(got) != len(want) {
		t.Fatalf("Events = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
