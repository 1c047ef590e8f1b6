package tape

import (
	"encoding/json"
	"hash/maphash"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestIndexDigests: an index made WithDigests holds, for every message its
// workers classified, what its digester computed of that message's bytes
// (the bytes Message returns), told the message's kind, direction, method
// and params as recorded; an index made without holds none, and indexes
// the same (digests change nothing else).
func TestIndexDigests(t *testing.T) {
	defer runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))) // the workers' path: two cores or more
	runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	data := parallelTape(t, SynthRealistic, 3000, "")
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	seed := maphash.MakeSeed()
	digest := func(m DigestMsg) Digest {
		d := Digest{OK: true}
		d.V[0] = maphash.Bytes(seed, m.Raw)
		d.V[1] = uint64(m.Kind)<<32 | uint64(len(m.Dir))<<16 | uint64(len(m.Method))
		if m.Params != nil {
			d.V[2] = maphash.Bytes(seed, m.Params)
		}
		if m.Error {
			d.V[2] ^= 1
		}
		return d
	}
	x, err := OpenIndex(path, WithDigests(func() Digester { return digest }))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	plain, err := OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	plain.pairs.seed = x.pairs.seed
	if got, want := indexState(x), indexState(plain); len(got["recs"].([]rec)) != len(want["recs"].([]rec)) {
		t.Fatalf("digests changed the index: %d messages, %d without", len(got["recs"].([]rec)), len(want["recs"].([]rec)))
	}
	ds, none := x.Digests(), plain.Digests()
	digested := 0
	for i := range x.Len() {
		if none.At(i).OK {
			t.Fatalf("message %d has a digest in an index made without", i)
		}
		d := ds.At(i)
		if !d.OK {
			continue
		}
		digested++
		m, err := x.Message(i)
		if err != nil {
			t.Fatal(err)
		}
		var members map[string]json.RawMessage
		_ = json.Unmarshal(m.Raw, &members)
		// the method and params as recorded (json.RawMessage: the bytes)
		msg := DigestMsg{Raw: m.Raw, Kind: m.Kind, Dir: m.Dir, Method: members["method"], Params: members["params"], Error: m.Error}
		if m.Kind == KindInvalid { // not read: no method, no params
			msg.Method, msg.Params = nil, nil
		} else if members == nil { // a line encoding/json refuses (bad UTF-8 is replaced, not refused)
			t.Fatalf("message %d: %s is not JSON", i, m.Raw)
		}
		if want := digest(msg); d != want {
			t.Fatalf("message %d (%s): digest %x, want %x", i, m.Raw[:min(len(m.Raw), 120)], d.V, want.V)
		}
	}
	if digested < x.Len()*9/10 {
		t.Fatalf("expected nearly every one of %d messages digested, found %d", x.Len(), digested)
	}
	if ds.At(-1).OK || ds.At(x.Len()).OK {
		t.Fatal("a digest out of range")
	}
}

// TestParamsSpanOnlyOne: the params span a Digester is given is a
// message's only params member; with two, none (which of them counts is
// its reader's choice).
func TestParamsSpanOnlyOne(t *testing.T) {
	var c classifier
	for line, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a": [1, "}"]},"_meta":{"dir":"send"}}`:          `{"a": [1, "}"]}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1},"params":{"b":2},"_meta":{"dir":"send"}}`: "",
		`{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send"}}`:                                   "",
	} {
		msgs := c.classify([]byte(line))
		if len(msgs) != 1 {
			t.Fatalf("%s: %d messages", line, len(msgs))
		}
		if got := string(msgs[0].params.in([]byte(line))); got != want {
			t.Errorf("%s: params span %q, want %q", line, got, want)
		}
	}
}
