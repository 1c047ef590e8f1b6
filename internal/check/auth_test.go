package check

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// A recorded 401 challenge without resource_metadata (MCP authorization
// requires it) is a finding; one with it, and a 403 step-up, are not.
func TestAuthChallengeRule(t *testing.T) {
	lines := `{"method":"initialize","params":{},"jsonrpc":"2.0","id":0,"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00Z","exchange":1,"http":"POST","transport":"http"}}
{"jsonrpc":"2.0","method":"$http/exchange","params":{"method":"POST","status":401,"wwwAuthenticate":["Bearer realm=\"x\""]},"_meta":{"dir":"lifecycle","server":"s","ts":"2026-01-01T00:00:00Z","exchange":1,"http":"POST","inReplyTo":0,"status":401,"transport":"http"}}
{"method":"initialize","params":{},"jsonrpc":"2.0","id":0,"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:01Z","exchange":2,"http":"POST","transport":"http"}}
{"jsonrpc":"2.0","method":"$http/exchange","params":{"method":"POST","status":401,"wwwAuthenticate":["Bearer resource_metadata=\"http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp\""]},"_meta":{"dir":"lifecycle","server":"s","ts":"2026-01-01T00:00:01Z","exchange":2,"http":"POST","inReplyTo":0,"status":401,"transport":"http"}}
{"jsonrpc":"2.0","method":"$http/exchange","params":{"method":"POST","status":403,"wwwAuthenticate":["Bearer error=\"insufficient_scope\""]},"_meta":{"dir":"lifecycle","server":"s","ts":"2026-01-01T00:00:02Z","http":"POST","status":403,"transport":"http"}}
`
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var got []Finding
	for _, f := range mustTape(t, "t", x, Options{FailOn: []string{RuleChallenge}}) {
		if f.Rule == RuleChallenge || f.Rule == RulePending {
			got = append(got, f)
		}
	}
	if len(got) != 1 || got[0].Rule != RuleChallenge || got[0].Line != 2 || !got[0].Fail {
		t.Fatalf("findings %+v; want one failing %s at line 2 (and no pending initialize)", got, RuleChallenge)
	}
}
