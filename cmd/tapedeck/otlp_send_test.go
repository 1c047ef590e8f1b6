package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// export --endpoint fails, saying what the endpoint answered, when the
// spans were not accepted; "sent" only when they were.
func TestExportOTLPNotAccepted(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer ok.Close()
	path := writeFile(t, "s.jsonl", session)
	for _, tc := range []struct{ endpoint, want string }{
		{mcptest.DeadEndpoint(t), "connection refused"},
		{notFound.URL, "404 Not Found"},
	} {
		_, errOut, code := runCLI(t, "export", path, "--format", "otlp", "--endpoint", tc.endpoint)
		if code != 1 || strings.Contains(errOut, "sent to") || !strings.Contains(errOut, "3 of 3 spans not accepted by "+tc.endpoint) || !strings.Contains(errOut, tc.want) {
			t.Errorf("export to %s: exit %d, stderr %q; want exit 1 and an error with %q", tc.endpoint, code, errOut, tc.want)
		}
	}
	_, errOut, code := runCLI(t, "export", path, "--format", "otlp", "--endpoint", ok.URL)
	if code != 0 || errOut != "tapedeck export: 3 spans sent to "+ok.URL+"\n" {
		t.Errorf("export to an endpoint that accepts: exit %d, stderr %q", code, errOut)
	}
}

// record --otlp-endpoint to a dead port records the whole session, says
// once that the endpoint refused, and at the end how many spans went out.
func TestRecordOTLPDeadEndpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	const answer = `{"jsonrpc":"2.0","id":1,"result":{}}`
	script := `while read l; do echo '` + answer + `'; done`
	endpoint := mcptest.DeadEndpoint(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"record", "--otlp-endpoint", endpoint, "-o", path, "--", "sh", "-c", script}, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), &stdout, &stderr)
	if err != nil {
		t.Fatalf("record: %v\n%s", err, stderr.String())
	}
	if strings.TrimSpace(stdout.String()) != answer {
		t.Errorf("the client got %q", stdout.String())
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"method":"ping"`) || !strings.Contains(string(data), `"result":{}`) {
		t.Errorf("the tape lacks the session:\n%s", data)
	}
	errOut := stderr.String()
	if strings.Count(errOut, "did not accept spans") != 1 || !strings.Contains(errOut, "0 spans sent to "+endpoint+", 1 not accepted") || !strings.Contains(errOut, "connection refused") {
		t.Errorf("stderr does not say the span was not sent:\n%s", errOut)
	}
}
