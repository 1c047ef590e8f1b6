package tape

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// indexState is everything an Index learned from its tape, for comparing
// two indexes of the same bytes.
func indexState(x *Index) map[string]any {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var recs []rec
	for i := range x.recs.len() {
		recs = append(recs, *x.recs.at(i))
	}
	return map[string]any{
		"size": x.size, "line": x.line, "torn": x.torn, "recs": recs,
		"warnings": x.warnings.list(), "warningCount": x.warnings.n,
		"methods": x.methods.names, "servers": x.servers.names,
		"conns": x.connIdx, "starts": x.starts, "inited": x.inited,
		"pairs": x.pairs, "lastTS": x.lastTS, "batches": x.batches.n,
		"rpcErrors": x.rpcErrors, "toolErrors": x.toolErrors,
		"startFailures": x.startFailures, "injected": x.injected,
	}
}

// parallelTape is a synthetic tape of profile p with odd lines spliced in
// (a BOM, CRLF, blank lines, invalid JSON, a batch, a line with bad UTF-8,
// a response before its request), big enough to be mapped and classified
// in several segments, and ending with tail.
func parallelTape(t *testing.T, p SynthProfile, n int, tail string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Synthesize(&buf, SynthOptions{Messages: n, Seed: 3, Profile: p, ChangeEvery: 7}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	odd := []string{
		"",
		`{"jsonrpc":"2.0","id":"r1","result":{},"_meta":{"dir":"recv","server":"odd","ts":"2026-01-01T00:00:00.000Z"}}`,
		`{"jsonrpc":"2.0","id":"r1","method":"ping","_meta":{"dir":"send","server":"odd","ts":"2026-01-01T00:00:00.000Z"}}` + "\r",
		`not json at all`,
		`[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"bad\xff\",\"_meta\":{\"dir\":\"send\"}}",
		`{"jsonrpc":"2.0","id":5,"method":"x"`,
		"   ",
	}
	var out strings.Builder
	out.WriteString("\xef\xbb\xbf")
	for i, l := range lines {
		out.WriteString(l)
		out.WriteString("\n")
		if i%97 == 0 {
			out.WriteString(odd[(i/97)%len(odd)])
			out.WriteString("\n")
		}
	}
	out.WriteString(tail)
	if out.Len() < mapThreshold+3*segmentBytes {
		t.Fatalf("expected a tape of more than %d bytes, found %d", mapThreshold+3*segmentBytes, out.Len())
	}
	return []byte(out.String())
}

// TestIndexParallelSameAsSerial checks that indexing a mapped tape with
// workers classifying its segments gives the index the serial loop over a
// reader gives: every record, warning, name and pairing state, for each
// profile, a torn last line, an unfinished last line left for later, and
// strict mode's error.
func TestIndexParallelSameAsSerial(t *testing.T) {
	if indexWorkers() < 2 {
		t.Skip("GOMAXPROCS is 1: the parallel path is not taken") // the serial path is what TestIndex* test
	}
	dir := t.TempDir()
	cases := []struct {
		name  string
		p     SynthProfile
		n     int
		tail  string
		final func() bool
		opts  []ReaderOption
	}{
		{"realistic", SynthRealistic, 3000, "", nil, nil},
		{"small", SynthSmall, 50000, "", nil, nil},
		{"default torn", SynthDefault, 6000, `{"jsonrpc":"2.0","id":9,"meth`, nil, nil},
		{"default unfinished", SynthDefault, 6000, `{"jsonrpc":"2.0","id":9,"meth`, func() bool { return false }, nil},
		{"strict", SynthSmall, 50000, "", nil, []ReaderOption{Strict()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := parallelTape(t, tc.p, tc.n, tc.tail)
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".jsonl")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			par := NewIndex(f, tc.opts...)
			perr := par.Extend(int64(len(data)), tc.final)
			ser := NewIndex(bytes.NewReader(data), tc.opts...)
			ser.pairs.seed = par.pairs.seed // ids hash alike
			serr := ser.Extend(int64(len(data)), tc.final)
			if (perr == nil) != (serr == nil) || perr != nil && perr.Error() != serr.Error() {
				t.Fatalf("parallel: %v, serial: %v", perr, serr)
			}
			if tc.opts != nil && perr == nil {
				t.Fatalf("strict indexing of a tape with invalid lines: expected an error, found none")
			}
			if tc.opts == nil && ser.Len() < tc.n {
				t.Fatalf("serial index holds %d messages, expected at least %d", ser.Len(), tc.n)
			}
			got, want := indexState(par), indexState(ser)
			for k := range want {
				if !reflect.DeepEqual(got[k], want[k]) {
					t.Errorf("%s differs:\nparallel %v\n  serial %v", k, clip(got[k]), clip(want[k]))
				}
			}
		})
	}
}

func clip(v any) string {
	s := fmt.Sprintf("%v", v)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// TestPairKeyTellsConnectionsApart checks that one id's hash folded with
// different (server, direction, connection) triples never gives one key:
// the fold is one-to-one in the triple, so the same id on two connections
// never pairs across them.
func TestPairKeyTellsConnectionsApart(t *testing.T) {
	p := newPairer()
	h := p.idHash([]byte(`7`))
	seen := map[pairKey][3]uint64{}
	for _, server := range []uint16{0, 1, 2, 1 << 15, 1<<16 - 1} {
		for dir := range uint8(4) {
			for _, conn := range []uint32{0, 1, 2, 3, 1000, 1 << 20, 1<<32 - 1} {
				k := p.key(server, dir, conn, h)
				if was, ok := seen[k]; ok {
					t.Fatalf("key of (server %d, dir %d, conn %d) equals that of %v", server, dir, conn, was)
				}
				seen[k] = [3]uint64{uint64(server), uint64(dir), uint64(conn)}
			}
		}
	}
}
