package importer

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// The gateway log of a go-sdk client with server-everything imports whole:
// each REQUEST and RESPONSE its message, OUT sent and IN received, the
// gateway's own event skipped.
func TestImportGHAW(t *testing.T) {
	data := sample(t, "gh-aw/everything-rpc-messages.jsonl")
	if f, ok := Detect(data[:200]); !ok || f != "gh-aw" {
		t.Errorf("Detect: %q %v, expected gh-aw", f, ok)
	}
	res, es := importTape(t, "gh-aw", data, Options{})
	if res.Messages != 33 || res.Skipped != 1 || res.Lifecycle != 1 || len(res.Servers) != 1 || res.Servers[0] != "everything" {
		t.Fatalf("result %+v: expected 33 messages, 1 skipped event, 1 start, server everything", res)
	}
	w := wire(es)
	if w[0].Method != "initialize" || w[0].Dir != tape.DirSend || w[1].Kind != tape.KindResponse || w[1].Dir != tape.DirRecv {
		t.Errorf("first messages: %+v %+v", w[0], w[1])
	}
	if progress := count(w, func(e tape.Entry) bool { return e.Method == "notifications/progress" && e.Dir == tape.DirRecv }); progress != 3 {
		t.Errorf("%d progress notifications from the server, expected 3", progress)
	}
	if w[0].Time.IsZero() || tapeTime(w[0].Time).Format("15:04:05.000") != "14:43:01.518" {
		t.Errorf("first time %v, expected 14:43:01.518", w[0].Time)
	}
	// A payload given as a string holding the message reads the same.
	str := `{"timestamp":"2026-01-02T03:04:05Z","direction":"OUT","type":"REQUEST","server_id":"s","payload":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"}`
	if _, es := importTape(t, "gh-aw", []byte(str), Options{}); len(wire(es)) != 1 || wire(es)[0].Method != "ping" {
		t.Errorf("payload as a string: %+v", es)
	}
}

func TestImportGHAWErrors(t *testing.T) {
	good := `{"timestamp":"2026-01-02T03:04:05Z","direction":"OUT","type":"REQUEST","server_id":"s","payload":{"jsonrpc":"2.0","id":1,"method":"ping"}}` + "\n"
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"gh-aw", "empty input"}},
		{"not JSON", good + "{\"type\":\n", []string{"line 2", "invalid JSON"}},
		{"not an object", good + "[1]\n", []string{"line 2", "$", "expected an rpc-messages.jsonl envelope (an object), found an array"}},
		{"no type", good + `{"timestamp":"2026-01-02T03:04:05Z"}` + "\n", []string{"line 2", "$.type", "expected a string, found nothing"}},
		{"bad direction", `{"timestamp":"2026-01-02T03:04:05Z","direction":"UP","type":"REQUEST","payload":{}}`, []string{"line 1", "$.direction", `expected "IN" or "OUT", found "UP"`}},
		{"bad time", `{"timestamp":"noon","type":"REQUEST","payload":{}}`, []string{"line 1", "$.timestamp", `found "noon"`}},
		{"no payload", `{"timestamp":"2026-01-02T03:04:05Z","type":"RESPONSE","direction":"IN"}`, []string{"line 1", "$.payload", "expected the JSON-RPC message of a RESPONSE, found nothing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Import("gh-aw", strings.NewReader(c.in), &buf, Options{})
			wantError(t, err, c.want...)
		})
	}
	var out bytes.Buffer
	_, err := Import("gh-aw", io.LimitReader(zeros{}, 1<<20), &out, Options{MaxLine: 4 << 10})
	var ie *Error
	if !errors.As(err, &ie) || ie.Line != 1 || !strings.Contains(err.Error(), "at most 4096 bytes") {
		t.Errorf("gh-aw, a 1 MiB line over a 4 KiB limit: got %v, want an error at line 1 naming the limit", err)
	}
}

func FuzzImportGHAW(f *testing.F) {
	data := sample(f, "gh-aw/everything-rpc-messages.jsonl")
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i := 0; i+3 <= len(lines); i += 7 {
		f.Add(bytes.Join(lines[i:i+3], nil))
	}
	f.Add([]byte(`{"timestamp":"2026-01-02T03:04:05Z","type":"REQUEST","payload":"not json"}`))
	f.Add([]byte(`{"timestamp":"2026-01-02T03:04:05Z","type":"DIFC_FILTERED","server_id":"s"}` + "\n\n"))
	f.Add([]byte(`{"timestamp":"2026-01-02T03:04:05Z","direction":"IN","type":"RESPONSE","payload":[{"jsonrpc":"2.0","id":1,"result":{}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, "gh-aw", data)
		checkParallelEqualsSerial(t, "gh-aw", data)
	})
}
