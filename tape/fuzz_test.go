package tape

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

var fuzzSeeds = []string{
	reqLine, respLine, "", "   ", "not json", "[]", "[1]", "{}", "5", `"x"`, "\xef\xbb\xbf" + reqLine,
	`{"jsonrpc":"2.0","id":18446744073709551617,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1.5,"result":null}`,
	`{"id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"a\"}b\\"}}`,
	`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`,
	`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
	`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"` + "\xff" + `"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":[[[[[[[[]]]]]]]]}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`,
}

// FuzzClassify checks that the classifier never panics, that every entry
// lies within the line, and that it agrees with encoding/json: a valid JSON
// object with a string method and a string or number id (or none) is a
// request or a notification, never invalid.
func FuzzClassify(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.ContainsAny(line, "\n") {
			return // Classify sees single lines
		}
		entries := Classify(line)
		for _, e := range entries {
			if len(e.Raw) > len(line) || !bytes.Contains(line, e.Raw) {
				t.Fatalf("entry raw %q is not part of the line %q", e.Raw, line)
			}
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(line, &obj) != nil {
			return
		}
		var method string
		if json.Unmarshal(obj["method"], &method) != nil {
			return
		}
		if id, ok := obj["id"]; ok {
			if id = bytes.TrimSpace(id); len(id) == 0 || !(id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9') {
				return
			}
		}
		if len(entries) != 1 || entries[0].Kind == KindInvalid {
			t.Fatalf("valid message %q classified %+v", line, entries)
		}
		if entries[0].Method != method {
			t.Fatalf("method %q, encoding/json says %q", entries[0].Method, method)
		}
	})
}

// FuzzReader checks that reading arbitrary bytes never panics, that each
// entry's Raw stands at its Offset in the input, and that the index sees
// the same messages as the reader.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s + "\n" + reqLine + "\r\n\n" + s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), BufferSize(4096))
		n := 0
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if e.Offset < 0 || e.Offset+int64(len(e.Raw)) > int64(len(data)) || !bytes.Equal(data[e.Offset:e.Offset+int64(len(e.Raw))], e.Raw) {
				t.Fatalf("entry %d: raw %q not at offset %d", n, e.Raw, e.Offset)
			}
			n++
		}
		x := NewIndex(bytes.NewReader(data))
		if err := x.Extend(int64(len(data)), nil); err != nil {
			t.Fatalf("index: %v", err)
		}
		if x.Len() != n {
			t.Fatalf("index has %d messages, reader %d", x.Len(), n)
		}
		_ = ComputeStats(x, "")
	})
}
