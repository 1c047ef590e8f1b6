package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// recordLines writes what writeRecord writes, record by record, for
// records in its shape and out of it: the same tape, results and errors
// (a record the one walk declines, such as an id of null, reaches
// writeRecord as it was).
func TestRecordLinesAgree(t *testing.T) {
	recs := []string{
		`{"jsonrpc":"2.0","method":"$transport/start","params":{},"_meta":{"dir":"lifecycle","server":"s","ts":"2026-01-01T00:00:00.000Z"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.001Z"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":"\u00e9\n"},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.001234Z"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:01.000Z"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:02.000Z","session":"x"}}`,
		`{"jsonrpc":"2.0","_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:03.000Z"},"id":3,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping" , "_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:04.000Z"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"ping","_meta":{"dir":"send","server":"t","ts":"2026-01-01T00:00:05.000Z"},"_tapedeck":{"dir":"send","server":"s","ts":"2026-01-01T00:00:05.000Z"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping","params":{"_meta":{"k":1}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:06.000Z"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping","_meta":{"x":1},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:07.000Z"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"ping","_meta":{"dir":"send","server":"s","ts":"not a time"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"ping","_meta":{"dir":"sideways","server":"s","ts":"2026-01-01T00:00:09.000Z"}}`,
		`{"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:10.000Z"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"ping","_meta":{"dir":"send","server":"s\u00e9","ts":"2026-01-01T00:00:11.000Z"}}`,
		`{"jsonrpc":"2.0","id":12,"method":"ping",,"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:12.000Z"}}`,
		`{"jsonrpc":"2.0","id":13,"method":"ping"}`,
		` {"jsonrpc":"2.0","id":14,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:14.000Z"}} `,
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"x","arguments":{"q":"\"quoted\" \\ text"}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:15.000Z"}}`,
		`{"jsonrpc":"2.0","id":16,"error":{"code":-32601,"message":"no"},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:16.000Z"}}`,
	}
	for _, server := range []string{"", "renamed"} {
		o := Options{Server: server}
		for i := range recs {
			// Each record alone after the first, and all of them in a row
			// (the batch between the slow path's records).
			for _, set := range [][]string{{recs[0], recs[i]}, recs[:i+1]} {
				var want, got bytes.Buffer
				wo, go_ := newOut(tape.NewWriter(&want).KeepMicroseconds()), newOut(tape.NewWriter(&got).KeepMicroseconds())
				rl := recordLines{out: go_, o: o}
				var werr, gerr error
				for _, r := range set {
					if werr == nil {
						werr = writeRecord(wo, []byte(r), o)
					}
					if gerr == nil {
						// The fast path's records: the bytes of a JSON string.
						raw := jsonQuoted(r)
						gerr = rl.write(carriedRecord{raw: raw[1 : len(raw)-1]})
					}
				}
				if err := rl.flush(); gerr == nil {
					gerr = err
				}
				if fmt.Sprint(werr) != fmt.Sprint(gerr) {
					t.Fatalf("record %d (server %q): writeRecord: %v, recordLines: %v", i, server, werr, gerr)
				}
				if !bytes.Equal(want.Bytes(), got.Bytes()) || !reflect.DeepEqual(wo.result(), go_.result()) {
					t.Fatalf("record %d (server %q): writeRecord wrote\n%s%+v\nrecordLines wrote\n%s%+v", i, server, want.Bytes(), wo.result(), got.Bytes(), go_.result())
				}
			}
		}
	}
}

func jsonQuoted(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
