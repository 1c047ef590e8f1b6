package tape

import (
	"os"
	"strings"
	"testing"
)

// AddAuth on a tape of the SDK's OAuth demo recorded through the proxy
// (testdata/oauth-stepup.tape.jsonl: a 401 to the first initialize, the
// metadata served, a 403 insufficient_scope step-up to a tools/call, each
// refused request sent again with a token), and on the same tape cut
// before the step-up's retry: the client did not retry it.
func TestAddAuth(t *testing.T) {
	data, err := os.ReadFile("testdata/oauth-stepup.tape.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	for _, c := range []struct {
		name, text string
		want       AuthStats
		line       string
	}{
		{"whole", string(data), AuthStats{Challenges: 1, StepUps: 1, Metadata: 1, Retried: 2, Refused: 2},
			"1 challenge (401), 1 step-up (403), 1 metadata document served; the client retried with a token (2 of 2 refused requests)"},
		{"no retry of the step-up", strings.Join(lines[:12], ""), AuthStats{Challenges: 1, StepUps: 1, Metadata: 1, Retried: 1, Refused: 2},
			"1 challenge (401), 1 step-up (403), 1 metadata document served; the client retried 1 of 2 refused requests"},
		{"challenge only", strings.Join(lines[:4], ""), AuthStats{Challenges: 1, Metadata: 1, Refused: 1},
			"1 challenge (401), 1 metadata document served; the client did not retry (1 refused request)"},
		{"through the proxy", strings.Join(lines[:4], "") + authLine("metadata") + authLine("registration") + authLine("authorization") + authLine("token") + authLine("token") + authLine("revocation"),
			AuthStats{Challenges: 1, Metadata: 1, Refused: 1, ServerMetadata: 1, Registrations: 1, Authorizations: 1, TokenRequests: 2, OtherExchanges: 1},
			"1 challenge (401), 1 metadata document served; the client did not retry (1 refused request); through the proxy: 1 authorization server metadata document, 1 registration, 1 authorize request, 2 token requests, 1 other exchange"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := indexOf(t, c.text)
			var st Stats
			AddAuth(&st, x, "")
			if st.Auth == nil || *st.Auth != c.want {
				t.Fatalf("AddAuth: got %+v, want %+v", st.Auth, c.want)
			}
			if got := st.Auth.String(); got != c.line {
				t.Errorf("String:\ngot  %s\nwant %s", got, c.line)
			}
			st.Auth = nil
			if AddAuth(&st, x, "another server"); st.Auth != nil {
				t.Errorf("another server's auth: got %+v, want nil", st.Auth)
			}
		})
	}
	x := indexOf(t, tapeOf(`send a {"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `recv a {"jsonrpc":"2.0","id":1,"result":{}}`))
	var st Stats
	if AddAuth(&st, x, ""); st.Auth != nil {
		t.Errorf("a tape without auth: got %+v, want nil", st.Auth)
	}
}

// authLine is a MethodHTTPAuth record of endpoint, as record --proxy-auth
// writes one.
func authLine(endpoint string) string {
	return `{"jsonrpc":"2.0","method":"$http/auth","params":{"endpoint":"` + endpoint + `","method":"POST","status":200},"_meta":{"dir":"lifecycle","server":"127.0.0.1:36723","ts":"2026-01-02T03:04:06.000Z","transport":"http"}}` + "\n"
}

// Fingerprint: the marker and 12 hex digits of SHA-256, equal for equal
// secrets, different for different ones, never the secret.
func TestFingerprint(t *testing.T) {
	a, b := Fingerprint("code-1234567890"), Fingerprint("code-1234567891")
	if a != Fingerprint("code-1234567890") || a == b {
		t.Errorf("Fingerprint: %q and %q for two secrets, want equal for equal only", a, b)
	}
	// sha256("abc") = ba7816bf8f01...
	if got := Fingerprint("abc"); got != RedactedMarker+" sha256:ba7816bf8f01" {
		t.Errorf("Fingerprint(abc) = %q", got)
	}
	if strings.Contains(a, "code-") {
		t.Errorf("Fingerprint keeps the secret: %q", a)
	}
}
