package compare

import (
	"hash/maphash"
	"os"
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// calls reads the index and the calls' bytes itself instead of
// tape.ReadCalls: it must say of every call what ReadCalls says (status,
// answer, error code, target, latency), on tapes of every shape:
// challenged by HTTP 401/403, cancelled, answered late or before the
// request, batches, duplicates, errors.
func TestCallsAgreeWithReadCalls(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/hostile/*.tape.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("../../testdata/*.tape.jsonl")
	paths = append(append(paths, more...), "../../tape/testdata/oauth-stepup.tape.jsonl")
	synth := filepath.Join(t.TempDir(), "realistic.tape.jsonl")
	if _, err := tape.WriteSynth(synth, tape.SynthOptions{Messages: 3000, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	cancelled := filepath.Join(t.TempDir(), "cancelled.tape.jsonl")
	if err := os.WriteFile(cancelled, []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:01.000Z"}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, synth, cancelled)
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	statuses := map[string]int{}
	for _, path := range paths {
		side, err := OpenSide(path)
		if err != nil {
			continue // a tape no index is made of (empty): nothing to agree on
		}
		got, err := calls(side, "", &tape.Normalizer{}, seeds, nil, nil)
		if err != nil {
			t.Errorf("%s: calls: %v", path, err)
			continue
		}
		var want []tape.Call
		r, err := side.Open()
		if err != nil {
			t.Fatal(err)
		}
		err = tape.ReadCalls(r, side.Index, "", func(c tape.Call) error {
			if c.Dir == tape.DirSend {
				want = append(want, c)
			}
			return nil
		})
		r.Close()
		if err != nil {
			t.Fatalf("%s: ReadCalls: %v", path, err)
		}
		byReq := map[int32]call{}
		for _, k := range got {
			byReq[k.req] = k
		}
		if len(got) != len(want) || len(byReq) != len(got) {
			t.Errorf("%s: calls gives %d calls, ReadCalls %d", path, len(got), len(want))
		}
		for _, c := range want {
			statuses[c.Status]++
			k, ok := byReq[int32(c.Request)]
			if !ok {
				t.Errorf("%s: call #%d %s (%s) missing from calls", path, c.Request, c.Method, c.Status)
				continue
			}
			timed := c.Response >= 0 && !c.Start.IsZero() && !c.End.IsZero()
			if k.resp != int32(c.Response) || k.status != c.Status || k.code != int32(c.ErrorCode) || k.method != c.Method || target(side.Index, k) != c.Target || k.timed != timed || (timed && k.latency != c.Latency) {
				t.Errorf("%s: call #%d: calls says resp %d %s code %d %s %q timed %v %v; ReadCalls resp %d %s code %d %s %q timed %v %v",
					path, c.Request, k.resp, k.status, k.code, k.method, target(side.Index, k), k.timed, k.latency,
					c.Response, c.Status, c.ErrorCode, c.Method, c.Target, timed, c.Latency)
			}
		}
	}
	// The tapes must hold the shapes this test is about.
	for _, s := range []string{"ok", "error", "pending", "cancelled", "late", "challenged"} {
		if statuses[s] == 0 {
			t.Errorf("no call with status %q among the tapes: the test checks less than it says (%v)", s, statuses)
		}
	}
}
