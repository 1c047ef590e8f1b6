package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

type snoopEnv struct {
	ServerLabel string          `json:"server_label"`
	TS          time.Time       `json:"ts"`
	Direction   string          `json:"direction"`
	Transport   string          `json:"transport"`
	Raw         json.RawMessage `json:"raw"`
	Text        string          `json:"text"`
	Status      int             `json:"status"`
}

func snoopEnvelopes(t *testing.T, data []byte) []snoopEnv {
	t.Helper()
	var out []snoopEnv
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var e snoopEnv
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// Both real mcpsnoop logs: every frame becomes a message with its bytes,
// its direction, its server and its time, in the log's order; stderr,
// the session header and status-only HTTP answers become lifecycle
// records.
func TestImportMCPSnoopRealLogs(t *testing.T) {
	for _, c := range []struct {
		file                  string
		frames, send, recv    int
		stderr, meta, exchang int
		http                  bool
	}{
		{"mcpsnoop/everything-stdio.jsonl", 41, 18, 23, 1, 1, 0, false},
		{"mcpsnoop/everything-http.jsonl", 41, 18, 23, 0, 0, 3, true},
	} {
		t.Run(c.file, func(t *testing.T) {
			data := sample(t, c.file)
			envs := snoopEnvelopes(t, data)
			res, es := importTape(t, "mcpsnoop", data, Options{})
			if res.Messages != c.frames || len(res.Servers) != 1 || res.Servers[0] != "everything" {
				t.Fatalf("result %+v, want %d messages of server everything", res, c.frames)
			}
			w := wire(es)
			if len(w) != c.frames {
				t.Fatalf("%d wire messages on the tape, want %d", len(w), c.frames)
			}
			if n := count(w, func(e tape.Entry) bool { return e.Dir == tape.DirSend }); n != c.send {
				t.Errorf("%d send, want %d", n, c.send)
			}
			if n := count(w, func(e tape.Entry) bool { return e.Dir == tape.DirRecv }); n != c.recv {
				t.Errorf("%d recv, want %d", n, c.recv)
			}
			if n := count(es, func(e tape.Entry) bool { return e.Method == tape.MethodStderr }); n != c.stderr {
				t.Errorf("%d stderr records, want %d", n, c.stderr)
			}
			if n := count(es, func(e tape.Entry) bool { return e.Method == tape.MethodHTTPExchange }); n != c.exchang {
				t.Errorf("%d $http/exchange records, want %d", n, c.exchang)
			}
			if es[0].Method != tape.MethodStart || !strings.Contains(string(es[0].Raw), `"importedFrom":"mcpsnoop"`) {
				t.Errorf("first record %s, want $transport/start importedFrom mcpsnoop", es[0].Raw)
			}
			if c.meta == 1 && !strings.Contains(string(es[0].Raw), `"command":"node"`) {
				t.Errorf("the session header's command is not on $transport/start: %s", es[0].Raw)
			}
			// Frame by frame, in order: bytes, direction, time.
			i := 0
			for _, env := range envs {
				if env.Raw == nil || env.Direction == "meta" {
					continue
				}
				e := w[i]
				i++
				if got := tape.StripMeta(e.Raw); !bytes.Equal(got, env.Raw) {
					t.Fatalf("frame %d: bytes changed\ngot  %s\nwant %s", i, got, env.Raw)
				}
				if want := map[string]tape.Dir{"c2s": tape.DirSend, "s2c": tape.DirRecv}[env.Direction]; e.Dir != want {
					t.Errorf("frame %d: dir %s, want %s", i, e.Dir, want)
				}
				if !e.Time.Equal(tapeTime(env.TS)) {
					t.Errorf("frame %d: ts %v, want %v", i, e.Time, tapeTime(env.TS))
				}
				if e.Server != env.ServerLabel {
					t.Errorf("frame %d: server %q, want %q", i, e.Server, env.ServerLabel)
				}
				hm := tape.ParseHTTPMeta(e.Raw)
				if hm.HTTP != c.http || (c.http && env.Direction == "s2c" && hm.Status != env.Status) {
					t.Errorf("frame %d: HTTP meta %+v, want http %v status %d", i, hm, c.http, env.Status)
				}
			}
			for j := 1; j < len(es); j++ {
				if es[j].Time.Before(es[j-1].Time) {
					t.Errorf("record %d goes back in time", j)
				}
			}
			// --server renames.
			res, es = importTape(t, "mcpsnoop", data, Options{Server: "ev"})
			if len(res.Servers) != 1 || res.Servers[0] != "ev" || es[1].Server != "ev" {
				t.Errorf("--server ev: %+v", res)
			}
		})
	}
}

// Frames mcpsnoop keeps as text (not JSON, or cut at its cap) and JSON
// that is no JSON-RPC message are kept as invalid frames, not dropped.
func TestImportMCPSnoopOddFrames(t *testing.T) {
	in := `{"session_id":"s","server_label":"x","seq":1,"ts":"2026-01-02T03:04:05.006Z","direction":"s2c","transport":"stdio","text":"hello from a print()"}
{"session_id":"s","server_label":"x","seq":2,"ts":"2026-01-02T03:04:05.007Z","direction":"c2s","transport":"stdio","text":"{\"jsonrpc\":\"2.0\",\"id\":1,","truncated":true}
{"session_id":"s","server_label":"x","seq":3,"ts":"2026-01-02T03:04:05.008Z","direction":"s2c","transport":"stdio","raw":{"hello":1}}
{"session_id":"s","server_label":"x","seq":4,"ts":"2026-01-02T03:04:05.009Z","direction":"c2s","transport":"stdio","raw":[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]}
`
	res, es := importTape(t, "mcpsnoop", []byte(in), Options{})
	if res.Messages != 2 {
		t.Errorf("%d messages, want the 2 of the batch", res.Messages)
	}
	inv := count(es, func(e tape.Entry) bool { return e.Method == tape.MethodInvalid })
	if inv != 3 {
		t.Errorf("%d invalid frames, want 3:\n%v", inv, es)
	}
	if !strings.Contains(string(es[2].Raw), `"truncated":true`) || !strings.Contains(string(es[2].Raw), `"from":"send"`) {
		t.Errorf("truncated frame: %s", es[2].Raw)
	}
	if es[4].Batch == 0 || es[4].Batch != es[5].Batch {
		t.Errorf("the batch is not kept as one: %+v %+v", es[4], es[5])
	}
}

// Malformed logs are refused with the line and the JSON path, saying
// what was expected and what was found.
func TestImportMCPSnoopMalformed(t *testing.T) {
	good := `{"session_id":"s","server_label":"x","seq":1,"ts":"2026-01-02T03:04:05.006Z","direction":"c2s","transport":"stdio","raw":{"jsonrpc":"2.0","id":1,"method":"ping"}}` + "\n"
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"mcpsnoop", "empty input"}},
		{"not JSON", good + "{\"direction\":\n", []string{"line 2", "invalid JSON"}},
		{"not an object", good + "[1,2]\n", []string{"line 2", "$", "expected an mcpsnoop envelope (an object), found an array"}},
		{"no direction", good + `{"ts":"2026-01-02T03:04:05Z"}` + "\n", []string{"line 2", "$.direction", "expected a string, found nothing"}},
		{"bad direction", good + `{"ts":"2026-01-02T03:04:05Z","direction":"up","raw":{}}` + "\n", []string{"line 2", "$.direction", `expected "c2s", "s2c", "stderr" or "meta", found "up"`}},
		{"bad ts", good + good + `{"ts":"yesterday","direction":"c2s"}` + "\n", []string{"line 3", "$.ts", `found "yesterday"`}},
		{"ts a number", `{"ts":12,"direction":"c2s"}`, []string{"line 1", "$.ts", "found a number"}},
		{"label a number", `{"ts":"2026-01-02T03:04:05Z","direction":"c2s","server_label":7}`, []string{"line 1", "$.server_label", "expected a string"}},
		{"nothing to write", `{"ts":"2026-01-02T03:04:05Z","direction":"c2s"}`, []string{"line 1", "expected a c2s envelope with raw"}},
		{"bad status", `{"ts":"2026-01-02T03:04:05Z","direction":"s2c","status":7}`, []string{"line 1", "$.status", "expected an HTTP status"}},
		{"bad meta", `{"ts":"2026-01-02T03:04:05Z","direction":"meta","raw":{"command":"node"}}`, []string{"line 1", "$.raw.command", "expected an array, found a string"}},
		{"raw on stderr", `{"ts":"2026-01-02T03:04:05Z","direction":"stderr","raw":{"a":1}}`, []string{"line 1", "$.raw", "expected no raw message"}},
		{"truncated not bool", `{"ts":"2026-01-02T03:04:05Z","direction":"c2s","text":"x","truncated":"yes"}`, []string{"line 1", "$.truncated", "expected true or false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Import("mcpsnoop", strings.NewReader(c.in), &buf, Options{})
			wantError(t, err, c.want...)
		})
	}
}

func FuzzImportMCPSnoop(f *testing.F) {
	for _, name := range []string{"mcpsnoop/everything-stdio.jsonl", "mcpsnoop/everything-http.jsonl"} {
		data := sample(f, name)
		lines := bytes.SplitAfter(data, []byte("\n"))
		for i := 0; i+3 <= len(lines); i += 7 {
			f.Add(bytes.Join(lines[i:i+3], nil))
		}
	}
	f.Add([]byte(`{"ts":"2026-01-02T03:04:05Z","direction":"c2s","raw":[{"jsonrpc":"2.0","id":1,"method":"a"}]}`))
	f.Add([]byte(`{"ts":"2026-01-02T03:04:05Z","direction":"meta","raw":{"command":["a","b"],"cwd":"/"}}` + "\n\n"))
	f.Add([]byte(`{"ts":"2026-01-02T03:04:05Z","direction":"s2c","status":202,"transport":"http"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, "mcpsnoop", data)
		checkParallelEqualsSerial(t, "mcpsnoop", data)
	})
}

// Inputs past the bounds are refused with an error naming the line, not
// read without end (import from /dev/zero read 24 GB).
func TestImportBounds(t *testing.T) {
	var out bytes.Buffer
	_, err := Import("mcpsnoop", io.LimitReader(zeros{}, 1<<20), &out, Options{MaxLine: 4 << 10})
	var ie *Error
	if !errors.As(err, &ie) || ie.Line != 1 || !strings.Contains(err.Error(), "at most 4096 bytes") {
		t.Errorf("mcpsnoop, a 1 MiB line over a 4 KiB limit: got %v, want an error at line 1 naming the limit", err)
	}
	// A HAR is streamed: its bound is each entry's.
	long := io.MultiReader(strings.NewReader(`{"log":{"entries":[{"x":"`), io.LimitReader(letters{}, 1<<20))
	if _, err := Import("har", long, &out, Options{MaxDocument: 4 << 10}); err == nil || !strings.Contains(err.Error(), "$.log.entries[0]") || !strings.Contains(err.Error(), "at most 4096 bytes") {
		t.Errorf("har, a 1 MiB entry over a 4 KiB limit: got %v, want the entry and the limit named", err)
	}
	for _, format := range []string{"mcp-recorder", "agent-vcr"} {
		_, err := Import(format, io.LimitReader(zeros{}, 1<<20), &out, Options{MaxDocument: 4 << 10})
		if err == nil || !strings.Contains(err.Error(), "at most 4096 bytes") {
			t.Errorf("%s, a 1 MiB document over a 4 KiB limit: got %v, want the limit named", format, err)
		}
	}
}

type zeros struct{}

type letters struct{}

func (letters) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = 'a'
	}
	return len(b), nil
}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// An import stops when its context is done, whatever the format: each read
// checks it (SIGTERM used to be ignored while an endless input was read).
func TestImportContextStops(t *testing.T) {
	line := `{"ts":"2026-01-02T03:04:05Z","direction":"c2s","raw":{"jsonrpc":"2.0","id":1,"method":"ping"}}` + "\n"
	for format, in := range map[string]func() io.Reader{
		"mcpsnoop":     func() io.Reader { return &chunkReader{next: func() []byte { return []byte(line) }} },
		"har":          func() io.Reader { return harOf(1 << 40) },
		"mcp-recorder": func() io.Reader { return io.MultiReader(strings.NewReader("{"), spaces{}) },
		"agent-vcr":    func() io.Reader { return io.MultiReader(strings.NewReader("{"), spaces{}) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		done := make(chan error, 1)
		go func() {
			_, err := ImportContext(ctx, format, in(), io.Discard, Options{})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped while reading") {
				t.Errorf("%s: ImportContext of an endless input = %v, want the context's error", format, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ImportContext still reading 10s after its context ended", format)
		}
		cancel()
	}
}

type spaces struct{}

func (spaces) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = ' '
	}
	return len(b), nil
}

// An answer mcpsnoop logged before its request (its two directions are
// written by two goroutines): put after the request when the timestamps
// say the request came first, counted once in Result.Reordered; left in
// the log's order when they say otherwise or the request never comes.
func TestImportMCPSnoopRepairsOrder(t *testing.T) {
	env := func(seq int, ts, dir, raw string) string {
		return `{"session_id":"s1","server_label":"srv","seq":` + strconv.Itoa(seq) + `,"ts":"` + ts + `","direction":"` + dir + `","transport":"stdio","raw":` + raw + "}\n"
	}
	log := env(1, "2026-03-01T10:00:00.000100Z", "s2c", `{"jsonrpc":"2.0","id":1,"result":{}}`) + // before its request
		env(2, "2026-03-01T10:00:00.000200Z", "c2s", `{"jsonrpc":"2.0","method":"notifications/initialized"}`) +
		env(3, "2026-03-01T10:00:00.000050Z", "c2s", `{"jsonrpc":"2.0","id":1,"method":"ping"}`) + // stamped first
		env(4, "2026-03-01T10:00:01Z", "s2c", `{"jsonrpc":"2.0","id":2,"result":{}}`) + // before its request, stamped before it too
		env(5, "2026-03-01T10:00:02Z", "c2s", `{"jsonrpc":"2.0","id":2,"method":"ping"}`) +
		env(6, "2026-03-01T10:00:03Z", "s2c", `{"jsonrpc":"2.0","id":9,"result":{}}`) + // never asked
		env(7, "2026-03-01T10:00:04Z", "c2s", `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	res, es := importTape(t, "mcpsnoop", []byte(log), Options{})
	var got []string
	for _, e := range wire(es) {
		got = append(got, string(e.Dir)+" "+string(e.ID)+e.Method)
	}
	want := []string{"send notifications/initialized", "send 1ping", "recv 1", "recv 2", "send 2ping", "recv 9", "send 3ping"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") || res.Reordered != 1 {
		t.Fatalf("tape order %q, %d reordered; want %q, 1 reordered", got, res.Reordered, want)
	}
}

// An import that stops at a bad line keeps what came before it, the
// answers the reorder repair was still holding among it: nothing read is
// lost.
func TestImportMCPSnoopErrorKeepsHeld(t *testing.T) {
	env := func(seq int, dir, raw string) string {
		return `{"session_id":"s1","server_label":"srv","seq":` + strconv.Itoa(seq) + `,"ts":"2026-03-01T10:00:0` + strconv.Itoa(seq) + `Z","direction":"` + dir + `","transport":"stdio","raw":` + raw + "}\n"
	}
	log := env(1, "c2s", `{"jsonrpc":"2.0","method":"notifications/initialized"}`) +
		env(2, "s2c", `{"jsonrpc":"2.0","id":7,"result":{}}`) + // its request never comes: held
		`{"session_id":"s1","raw":"` + strings.Repeat("x", 600) + `"}` + "\n"
	var buf bytes.Buffer
	_, err := Import("mcpsnoop", strings.NewReader(log), &buf, Options{MaxLine: 512})
	if err == nil {
		t.Fatal("a line over MaxLine was imported")
	}
	var got []string
	for _, e := range wire(readTape(t, buf.Bytes())) {
		got = append(got, string(e.Dir)+" "+string(e.ID)+e.Method)
	}
	if want := "send notifications/initialized, recv 7"; strings.Join(got, ", ") != want {
		t.Errorf("after the error the tape holds %q, want %q", got, want)
	}
}

// Lines are read in place (the reader's buffer, not a copy a line): what
// the reorder repair holds is its own copy, so a log read a byte at a
// time, its buffer refilled under the held records, makes the same tape.
func TestImportMCPSnoopHeldSurviveReads(t *testing.T) {
	env := func(seq int, ts, dir, raw string) string {
		return `{"session_id":"s1","server_label":"srv","seq":` + strconv.Itoa(seq) + `,"ts":"` + ts + `","direction":"` + dir + `","transport":"stdio","raw":` + raw + "}\n"
	}
	log := env(1, "2026-03-01T10:00:00.000100Z", "s2c", `{"jsonrpc":"2.0","id":1,"result":{"a":"first answer"}}`) +
		env(2, "2026-03-01T10:00:00.000200Z", "s2c", `{"jsonrpc":"2.0","method":"notifications/progress"}`) +
		env(3, "2026-03-01T10:00:00.000300Z", "c2s", `{"not":"a JSON-RPC message"}`) +
		env(4, "2026-03-01T10:00:00.000050Z", "c2s", `{"jsonrpc":"2.0","id":1,"method":"ping"}`) +
		env(5, "2026-03-01T10:00:01Z", "s2c", `{"jsonrpc":"2.0","id":2,"result":{"b":"never asked"}}`) +
		env(6, "2026-03-01T10:00:02Z", "c2s", `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	var whole, bytewise bytes.Buffer
	if _, err := Import("mcpsnoop", strings.NewReader(log), &whole, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Import("mcpsnoop", iotest.OneByteReader(strings.NewReader(log)), &bytewise, Options{}); err != nil {
		t.Fatal(err)
	}
	if whole.String() != bytewise.String() {
		t.Fatalf("read a byte at a time, the tape is\n%s\nread whole\n%s", bytewise.String(), whole.String())
	}
	if !strings.Contains(whole.String(), "first answer") || !strings.Contains(whole.String(), "never asked") {
		t.Fatalf("held answers missing from\n%s", whole.String())
	}
}

// The reorder repair knows every request not yet answered, however many
// wait (more than its short list of recent ones holds, their ids short or
// long): an answer whose request was logged long before passes in its
// place, and only an answer with no request left waiting (the second
// answer to one request) is held and moved after a later request with
// its id stamped before it.
func TestImportMCPSnoopRepairsOrderManyPending(t *testing.T) {
	seq := 0
	env := func(us int, dir, raw string) string {
		seq++
		ts := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(us) * time.Microsecond).Format(time.RFC3339Nano)
		return `{"session_id":"s1","server_label":"srv","seq":` + strconv.Itoa(seq) + `,"ts":"` + ts + `","direction":"` + dir + `","transport":"stdio","raw":` + raw + "}\n"
	}
	n := 3 * pendingRecent
	id := func(i int) string {
		if i%2 == 0 {
			return strconv.Itoa(i)
		}
		return `"` + strings.Repeat("long-id-", 5) + strconv.Itoa(i) + `"` // more than pendingID bytes
	}
	var log strings.Builder
	var want []string
	for i := range n {
		log.WriteString(env(1000+i, "c2s", `{"jsonrpc":"2.0","id":`+id(i)+`,"method":"ping"}`))
		want = append(want, "send "+id(i)+"ping")
	}
	log.WriteString(env(1500, "c2s", `{"jsonrpc":"2.0","id":0,"method":"again"}`)) // 0 waits once, not twice
	want = append(want, "send 0again")
	for i := n - 1; i >= 0; i-- {
		log.WriteString(env(2000+i, "s2c", `{"jsonrpc":"2.0","id":`+id(i)+`,"result":{}}`))
		want = append(want, "recv "+id(i))
	}
	// Every request answered: a second answer to 0 has none waiting and
	// waits for one; the next request 0, stamped before it, comes first.
	log.WriteString(env(3000, "s2c", `{"jsonrpc":"2.0","id":0,"result":{"second":true}}`))
	log.WriteString(env(2999, "c2s", `{"jsonrpc":"2.0","id":0,"method":"third"}`))
	want = append(want, "send 0third", "recv 0")
	// An answer to a request already answered, then its request again
	// (each of the long ones, now in no list): the same.
	for i := 1; i < n; i += 2 {
		log.WriteString(env(4000+i, "s2c", `{"jsonrpc":"2.0","id":`+id(i)+`,"result":{}}`))
		log.WriteString(env(3500+i, "c2s", `{"jsonrpc":"2.0","id":`+id(i)+`,"method":"later"}`))
		want = append(want, "send "+id(i)+"later", "recv "+id(i))
	}
	res, es := importTape(t, "mcpsnoop", []byte(log.String()), Options{})
	var got []string
	for _, e := range wire(es) {
		got = append(got, string(e.Dir)+" "+string(e.ID)+e.Method)
	}
	if wantMoved := 1 + n/2; strings.Join(got, ", ") != strings.Join(want, ", ") || res.Reordered != wantMoved {
		t.Fatalf("tape order\n%q, %d reordered; want\n%q, %d reordered", got, res.Reordered, want, wantMoved)
	}
}

// The reorder's table of recent requests holds what a set would through
// any sequence of adds and removes (probes that wrap around its slots,
// removals that move later requests back), ids short and long.
func TestPendingTableAgreesWithSet(t *testing.T) {
	type key struct {
		sess int32
		send bool
		id   string
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var tab pendingTable
	set := map[key]bool{}
	for step := range 200_000 {
		var id []byte
		if rng.IntN(3) == 0 {
			id = []byte(strings.Repeat("x", rng.IntN(10)) + strconv.Itoa(rng.IntN(40)))
		} else {
			id = strconv.AppendInt(nil, int64(rng.IntN(60)), 10)
		}
		k := key{int32(rng.IntN(2)), rng.IntN(2) == 0, string(id)}
		i := tab.find(k.sess, k.send, id, idHead(id))
		if (i >= 0) != set[k] {
			t.Fatalf("step %d: %+v found at %d, in the set %v", step, k, i, set[k])
		}
		switch {
		case i >= 0:
			tab.remove(i)
			delete(set, k)
		case tab.n < pendingRecent:
			tab.add(k.sess, k.send, id, idHead(id))
			set[k] = true
		}
		if tab.n != len(set) {
			t.Fatalf("step %d: %d in the table, %d in the set", step, tab.n, len(set))
		}
	}
	for k := range set {
		i := tab.find(k.sess, k.send, []byte(k.id), idHead([]byte(k.id)))
		if i < 0 || string(tab.slots[i].id()) != k.id {
			t.Fatalf("%+v not found with its id at the end (slot %d)", k, i)
		}
	}
}
