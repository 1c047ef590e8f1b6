package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// harSchema compiles the HAR 1.2 JSON schema of testdata/har-schema.
func harSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	dir := filepath.Join(mcptest.RepoRoot(t), "testdata", "har-schema")
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the HAR schema files in %s: %v", dir, err)
	}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := c.AddResource("file://"+f, doc); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile("file://" + filepath.Join(dir, "har.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// export --format har: a session recorded through tapedeck's HTTP proxy
// (the go-sdk client and server, with a session and SSE answers) and a
// stdio recording both give logs the HAR 1.2 schema accepts, with each
// POST, its JSON-RPC message, its answer, the session header and the SSE
// events.
func TestExportHAR(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	upstream := mcptest.StartSDKServerHTTP(t)
	rec := filepath.Join(t.TempDir(), "http.jsonl")
	proxied, stop := startTapedeck(t, bin, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", rec)
	if out, stderr, err := runPeer(t, nil, client, "--steps=init,tools,echo,error,answer", "--url", proxied); err != nil {
		t.Fatalf("client: %v\n%s%s", err, out, stderr)
	}
	stop()
	schema := harSchema(t)
	if err := schema.Validate(map[string]any{"log": map[string]any{"version": "1.2"}}); err == nil {
		t.Fatal("the schema accepts a log without creator and entries: it checks nothing")
	}
	for _, c := range []struct{ name, path string }{{"http", rec}, {"stdio", fixture(t, "sdk-everything-2025-06-18.tape.jsonl")}} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "export", c.path, "--format", "har")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
			if err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			if err := schema.Validate(doc); err != nil {
				t.Fatalf("the HAR 1.2 schema refuses the export: %v", err)
			}
			var har struct {
				Log struct {
					Entries []struct {
						Request struct {
							Method, URL string
							Headers     []struct{ Name, Value string }
							PostData    *struct{ Text string }
						}
						Response struct {
							Status  int
							Content struct{ MimeType, Text string }
						}
					}
				}
			}
			if err := json.Unmarshal([]byte(out), &har); err != nil {
				t.Fatal(err)
			}
			var calls, sse, session, errors int
			for _, e := range har.Log.Entries {
				if e.Request.PostData != nil && strings.Contains(e.Request.PostData.Text, `"method":"tools/call"`) {
					calls++
				}
				if e.Response.Content.MimeType == "text/event-stream" && strings.Contains(e.Response.Content.Text, "data: {") {
					sse++
				}
				if strings.Contains(e.Response.Content.Text, `"error"`) || strings.Contains(e.Response.Content.Text, `"isError":true`) {
					errors++
				}
				for _, h := range e.Request.Headers {
					if h.Name == "Mcp-Session-Id" && h.Value != "" {
						session++
					}
				}
			}
			if calls < 3 || errors == 0 {
				t.Errorf("%d tools/call entries, %d failed answers:\n%.2000s", calls, errors, out)
			}
			if c.name == "http" && (sse == 0 || session == 0 || !strings.HasPrefix(har.Log.Entries[0].Request.URL, "http://")) {
				t.Errorf("HTTP tape: %d SSE answers, %d entries with a session header, first URL %q", sse, session, har.Log.Entries[0].Request.URL)
			}
			if c.name == "stdio" && !strings.HasPrefix(har.Log.Entries[0].Request.URL, "stdio://everything/") {
				t.Errorf("stdio tape: first URL %q", har.Log.Entries[0].Request.URL)
			}
		})
	}
}
