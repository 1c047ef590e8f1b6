package importer

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// mcp-recorder's own cassette (tests/cassettes/mock_session.json): each
// interaction's request sent, its response received latency_ms later,
// interactions end to end from recorded_at; the 202 of the notification
// and the DELETE and GET as $http/exchange; HTTP meta (status, SSE).
func TestImportMCPRecorderCassette(t *testing.T) {
	data := sample(t, "mcp-recorder/mock_session.json")
	var doc struct {
		Metadata struct {
			RecordedAt time.Time `json:"recorded_at"`
		}
		Interactions []struct {
			Type      string
			Request   json.RawMessage
			Response  json.RawMessage
			LatencyMS int  `json:"latency_ms"`
			IsSSE     bool `json:"response_is_sse"`
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	res, es := importTape(t, "mcp-recorder", data, Options{})
	if res.Messages != 13 || res.Lifecycle != 4 || strings.Join(res.Servers, ",") != "Test Calculator" {
		t.Fatalf("result %+v, want 13 messages (6 requests, their 6 answers, 1 notification), 4 lifecycle, server Test Calculator", res)
	}
	w := wire(es)
	at := doc.Metadata.RecordedAt
	k := 0
	for i, in := range doc.Interactions {
		end := at.Add(time.Duration(in.LatencyMS) * time.Millisecond)
		if in.Type == "lifecycle" {
			at = end
			continue
		}
		send := w[k]
		k++
		if send.Dir != tape.DirSend || canon(t, send.Raw) != canon(t, in.Request) || !send.Time.Equal(tapeTime(at)) {
			t.Errorf("interaction %d request: %s at %v, want send of %s at %v", i, send.Dir, send.Time, in.Request, tapeTime(at))
		}
		if string(in.Response) != "null" {
			recv := w[k]
			k++
			hm := tape.ParseHTTPMeta(recv.Raw)
			if recv.Dir != tape.DirRecv || canon(t, recv.Raw) != canon(t, in.Response) || !recv.Time.Equal(tapeTime(end)) || hm.Status != 200 || (hm.Stream != 0) != in.IsSSE {
				t.Errorf("interaction %d response: %s at %v %+v, want recv at %v", i, recv.Dir, recv.Time, hm, tapeTime(end))
			}
		}
		at = end
	}
	var exchanges []string
	for _, e := range es {
		if e.Method == tape.MethodHTTPExchange {
			var p struct{ Params map[string]any }
			_ = json.Unmarshal(e.Raw, &p)
			exchanges = append(exchanges, p.Params["method"].(string))
		}
	}
	if strings.Join(exchanges, ",") != "POST,DELETE,GET" {
		t.Errorf("$http/exchange records %v, want the 202, the DELETE and the GET", exchanges)
	}
}

// agent-vcr's sample recordings: the initialize handshake, then each
// interaction's request at its timestamp and response latency_ms later
// (errors kept), server calculator-server, the command on $transport/start.
func TestImportAgentVCRRecordings(t *testing.T) {
	for _, c := range []struct {
		file               string
		interactions, errs int
	}{
		{"agent-vcr/calculator-v1.vcr", 3, 0},
		{"agent-vcr/calculator-v2.vcr", 4, 0},
		{"agent-vcr/calculator-errors.vcr", 4, 2},
	} {
		t.Run(c.file, func(t *testing.T) {
			data := sample(t, c.file)
			var doc struct {
				Session struct {
					Interactions []struct {
						Timestamp string
						Request   json.RawMessage
						Response  json.RawMessage
						LatencyMS float64 `json:"latency_ms"`
					}
				}
			}
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			res, es := importTape(t, "agent-vcr", data, Options{})
			if res.Messages != 2+2*c.interactions || strings.Join(res.Servers, ",") != "calculator-server" {
				t.Fatalf("result %+v, want %d messages of calculator-server", res, 2+2*c.interactions)
			}
			if !strings.Contains(string(es[0].Raw), `"command":"node calculator-server.js"`) {
				t.Errorf("start record: %s", es[0].Raw)
			}
			w := wire(es)
			if w[0].Method != "initialize" || w[0].Dir != tape.DirSend || w[1].Kind != tape.KindResponse {
				t.Errorf("handshake: %+v %+v", w[0], w[1])
			}
			for i, in := range doc.Session.Interactions {
				at, err := time.Parse("2006-01-02T15:04:05.999999999", in.Timestamp)
				if err != nil {
					t.Fatal(err)
				}
				req, resp := w[2+2*i], w[3+2*i]
				end := at.Add(time.Duration(in.LatencyMS * float64(time.Millisecond)))
				if req.Dir != tape.DirSend || canon(t, req.Raw) != canon(t, in.Request) || !req.Time.Equal(tapeTime(at)) {
					t.Errorf("interaction %d request at %v: %s", i, req.Time, req.Raw)
				}
				if resp.Dir != tape.DirRecv || canon(t, resp.Raw) != canon(t, in.Response) || !resp.Time.Equal(tapeTime(end)) {
					t.Errorf("interaction %d response at %v, want %v: %s", i, resp.Time, tapeTime(end), resp.Raw)
				}
			}
			if n := count(w, func(e tape.Entry) bool { return e.Error }); n != c.errs {
				t.Errorf("%d error answers, want %d", n, c.errs)
			}
		})
	}
}

// A server's request (direction server_to_client) is received and the
// client's answer sent; buffered notifications come before the response.
func TestImportAgentVCRDirections(t *testing.T) {
	in := `{"format_version":"1.0.0","metadata":{"version":"1.0.0","recorded_at":"2026-02-08T10:30:00+02:00","transport":"stdio"},
"session":{"initialize_request":{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}},"initialize_response":{"jsonrpc":"2.0","id":0,"result":{}},
"interactions":[
 {"sequence":0,"timestamp":"2026-02-08T10:30:01.000+02:00","direction":"client_to_server","request":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}},"response":{"jsonrpc":"2.0","id":1,"result":{}},"notifications":[{"jsonrpc":"2.0","method":"notifications/progress","params":{}}],"latency_ms":10},
 {"sequence":1,"timestamp":"2026-02-08T10:30:02.000+02:00","direction":"server_to_client","request":{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}},"response":{"jsonrpc":"2.0","id":"s1","result":{}},"latency_ms":5}]}}`
	_, es := importTape(t, "agent-vcr", []byte(in), Options{Server: "x"})
	var got []string
	for _, e := range wire(es) {
		got = append(got, string(e.Dir)+" "+e.Kind.String()+" "+e.Time.UTC().Format("15:04:05.000"))
	}
	want := "send request 08:30:00.000|recv response 08:30:00.000|send request 08:30:01.000|recv notification 08:30:01.010|recv response 08:30:01.010|recv request 08:30:02.000|send response 08:30:02.005"
	if strings.Join(got, "|") != want {
		t.Errorf("records\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
}

func TestImportCassettesMalformed(t *testing.T) {
	rec := func(interactions string) string {
		return `{"version":"1.0","metadata":{"recorded_at":"2026-02-17T20:25:23Z","server_url":"http://h"},"interactions":[` + interactions + `]}`
	}
	vcr := func(interactions string) string {
		return `{"format_version":"1.0.0","metadata":{"recorded_at":"2026-02-08T10:30:00"},"session":{"initialize_request":{"jsonrpc":"2.0","id":0,"method":"initialize"},"initialize_response":{"jsonrpc":"2.0","id":0,"result":{}},"interactions":[` + interactions + `]}}`
	}
	for _, c := range []struct {
		name, format, in string
		want             []string
	}{
		{"rec syntax", "mcp-recorder", "{\n\"version\": 1.0,,\n}", []string{"mcp-recorder: line 2, column", "invalid JSON"}},
		{"rec not a cassette", "mcp-recorder", `"x"`, []string{"$", "expected an mcp-recorder cassette", `found a string "\"x\""`}},
		{"rec version", "mcp-recorder", `{"version":"2.0","metadata":{}}`, []string{"$.version", `expected a cassette of format version 1.x, found "2.0"`}},
		{"rec no recorded_at", "mcp-recorder", `{"metadata":{},"interactions":[]}`, []string{"$.metadata.recorded_at", "found nothing"}},
		{"rec interactions", "mcp-recorder", `{"metadata":{"recorded_at":"2026-02-17T20:25:23Z"},"interactions":5}`, []string{"$.interactions", "expected an array, found a number"}},
		{"rec type", "mcp-recorder", rec(`{"type":"rpc","request":{}}`), []string{"$.interactions[0].type", `found "rpc"`}},
		{"rec request", "mcp-recorder", rec(`{"type":"jsonrpc_request","request":[1]}`), []string{"$.interactions[0].request", "expected a JSON-RPC message (an object), found an array"}},
		{"rec not JSON-RPC", "mcp-recorder", rec(`{"type":"notification","request":{"hello":1}}`), []string{"$.interactions[0].request", "jsonrpc and a method"}},
		{"rec response", "mcp-recorder", rec(`{"type":"jsonrpc_request","request":{"jsonrpc":"2.0","id":1,"method":"a"},"response":"ok"}`), []string{"$.interactions[0].response", "found a string"}},
		{"rec latency", "mcp-recorder", rec(`{},{"type":"notification","request":{"jsonrpc":"2.0","method":"a"},"latency_ms":-3}`), []string{"$.interactions[0].type"}},
		{"rec latency 2", "mcp-recorder", rec(`{"type":"notification","request":{"jsonrpc":"2.0","method":"a"},"latency_ms":-3}`), []string{"$.interactions[0].latency_ms", "found -3"}},
		{"rec status", "mcp-recorder", rec(`{"type":"notification","request":{"jsonrpc":"2.0","method":"a"},"response_status":"202"}`), []string{"$.interactions[0].response_status", "expected a number"}},
		{"rec lifecycle", "mcp-recorder", rec(`{"type":"lifecycle"}`), []string{"$.interactions[0].http_method", "expected the HTTP method"}},
		{"vcr version", "agent-vcr", `{"format_version":"3.0.0"}`, []string{"$.format_version", `found "3.0.0"`}},
		{"vcr no session", "agent-vcr", `{"metadata":{"recorded_at":"2026-02-08T10:30:00"}}`, []string{"$.session", "expected an object, found nothing"}},
		{"vcr init", "agent-vcr", `{"metadata":{"recorded_at":"2026-02-08T10:30:00"},"session":{"initialize_request":null}}`, []string{"$.session.initialize_request", "found null"}},
		{"vcr timestamp", "agent-vcr", vcr(`{"timestamp":"soon"}`), []string{"$.session.interactions[0].timestamp", `found "soon"`}},
		{"vcr direction", "agent-vcr", vcr(`{"timestamp":"2026-02-08T10:30:01","direction":"sideways"}`), []string{"$.session.interactions[0].direction", `found "sideways"`}},
		{"vcr notifications", "agent-vcr", vcr(`{"timestamp":"2026-02-08T10:30:01","direction":"client_to_server","request":{"jsonrpc":"2.0","id":1,"method":"a"},"notifications":[{"jsonrpc":"2.0","method":"n"},3]}`), []string{"$.session.interactions[0].notifications[1]", "found a number"}},
		{"vcr args", "agent-vcr", `{"metadata":{"recorded_at":"2026-02-08T10:30:00","server_args":"-v"}}`, []string{"$.metadata.server_args", "expected an array"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Import(c.format, strings.NewReader(c.in), io.Discard, Options{})
			wantError(t, err, c.want...)
		})
	}
}

func FuzzImportMCPRecorder(f *testing.F) {
	f.Add(sample(f, "mcp-recorder/mock_session.json"))
	f.Add([]byte(`{"version":"1.0","metadata":{"recorded_at":"2026-02-17T20:25:23Z","server_url":"http://h"},"interactions":[{"type":"jsonrpc_request","request":{"jsonrpc":"2.0","id":1,"method":"a"},"response":{"jsonrpc":"2.0","id":1,"result":{}},"response_is_sse":true,"latency_ms":3},{"type":"lifecycle","http_method":"GET","http_path":"/mcp"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, "mcp-recorder", data)
	})
}

func FuzzImportAgentVCR(f *testing.F) {
	for _, n := range []string{"calculator-v1", "calculator-errors"} {
		f.Add(sample(f, "agent-vcr/"+n+".vcr"))
	}
	f.Add([]byte(`{"metadata":{"recorded_at":"2026-02-08T10:30:00","server_args":["a"]},"session":{"initialize_request":{"jsonrpc":"2.0","id":0,"method":"initialize"},"initialize_response":{"jsonrpc":"2.0","id":0,"result":{}},"interactions":[{"timestamp":"2026-02-08T10:30:01","direction":"server_to_client","request":{"jsonrpc":"2.0","id":1,"method":"a"},"notifications":[],"latency_ms":1}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, "agent-vcr", data)
	})
}
