package tape

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keys      []string
		paths     []string
		values    []string
		in        string
		want      string // "" means unchanged, byte for byte
		wantPaths []string
	}{
		{
			name:      "key at any depth keeps the shape",
			keys:      []string{"apiKey"},
			in:        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"APIKEY":"s3cr3t","n":1,"nested":{"apiKey":{"a":[1,true,null,"x"]}}}}}`,
			want:      `{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"APIKEY":"[REDACTED]","n":1,"nested":{"apiKey":{"a":[0,false,null,"[REDACTED]"]}}}}}`,
			wantPaths: []string{"params.arguments.APIKEY", "params.arguments.nested.apiKey"},
		},
		{
			name:      "path with wildcard and index",
			paths:     []string{"result.items[*].token", "result.list[1]"},
			in:        `{"jsonrpc":"2.0","id":"a","result":{"items":[{"token":"t1","k":2},{"token":7}],"list":["a","b"]}}`,
			want:      `{"id":"a","jsonrpc":"2.0","result":{"items":[{"k":2,"token":"[REDACTED]"},{"token":0}],"list":["a","[REDACTED]"]}}`,
			wantPaths: []string{"result.items[0].token", "result.items[1].token", "result.list[1]"},
		},
		{
			name:      "value regex replaces only the match",
			values:    []string{`sk-[a-z0-9]+`},
			in:        `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"using key sk-abc123 now","big":12345678901234567890}}`,
			want:      `{"jsonrpc":"2.0","method":"notifications/message","params":{"big":12345678901234567890,"data":"using key [REDACTED] now"}}`,
			wantPaths: []string{"params.data"},
		},
		{
			name: "nothing matched: unchanged bytes",
			keys: []string{"password"}, values: []string{`sk-[a-z]+`},
			in: `{"jsonrpc":"2.0",  "id":1,"result":{"b":1,"a":"<&>"}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRedactor(tc.keys, tc.paths, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			out, paths, err := r.Redact([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(out) != want {
				t.Errorf("got  %s\nwant %s", out, want)
			}
			if !slices.Equal(paths, tc.wantPaths) {
				t.Errorf("paths %q, want %q", paths, tc.wantPaths)
			}
		})
	}
}

func TestRedactLineKeepsMeta(t *testing.T) {
	r := &Redactor{Keys: []string{"server", "token"}, Values: []*regexp.Regexp{regexp.MustCompile(`hunter2`)}}
	line := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"token":"abc","server":"s"},"_meta":{"dir":"send","server":"linear","ts":"2026-05-16T12:00:00.000Z","redacted":["params.old"]}}`
	out, changed, err := r.RedactLine([]byte(line))
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	want := `{"_meta":{"dir":"send","redacted":["params.old","params.server","params.token"],"server":"linear","ts":"2026-05-16T12:00:00.000Z"},"id":1,"jsonrpc":"2.0","method":"x","params":{"server":"[REDACTED]","token":"[REDACTED]"}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	e := Classify(out)
	if len(e) != 1 || e[0].Server != "linear" || e[0].Dir != DirSend || e[0].Time.IsZero() {
		t.Errorf("redacted line lost its _meta: %+v", e)
	}
	keep := `{"jsonrpc":"2.0","method":"$transport/stderr","params":{"text":"fine"}}`
	if out, changed, err := r.RedactLine([]byte(keep)); err != nil || changed || string(out) != keep {
		t.Errorf("%q: got %q changed=%v err=%v, want it unchanged", keep, out, changed, err)
	}
	// A line that cannot be decoded is never passed through unredacted.
	deep := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"token":"SECRET","a":` + strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000) + `}}`
	for _, bad := range []string{"not json {", deep} {
		if out, _, err := r.RedactLine([]byte(bad)); !errors.Is(err, ErrMalformed) || out != nil {
			t.Errorf("%.40q: got %.40q, %v; want ErrMalformed and no output", bad, out, err)
		}
	}
	stderr := `{"jsonrpc":"2.0","method":"$transport/stderr","params":{"text":"password hunter2"}}`
	out, _, _ = r.RedactLine([]byte(stderr))
	if string(out) != `{"_meta":{"redacted":["params.text"]},"jsonrpc":"2.0","method":"$transport/stderr","params":{"text":"password [REDACTED]"}}` {
		t.Errorf("stderr record: got %s", out)
	}
}

func TestNewRedactorErrors(t *testing.T) {
	if _, err := NewRedactor(nil, []string{"a[0"}, nil); err == nil {
		t.Error("bad path accepted")
	}
	if _, err := NewRedactor(nil, nil, []string{"("}); err == nil {
		t.Error("bad regex accepted")
	}
}

func TestIsCredentialHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "cookie": true, "Set-Cookie": true, "Proxy-Authorization": true,
		"X-Api-Key": true, "X-Auth-Token": true, "Api-Key": true, "X-Goog-Api-Key": true,
		"Mcp-Session-Id": false, "Content-Type": false, "Mcp-Protocol-Version": false, "Last-Event-ID": false,
		// A challenge carries no secret, and replay needs it.
		"WWW-Authenticate": false, "Proxy-Authenticate": false,
	} {
		if got := IsCredentialHeader(name); got != want {
			t.Errorf("IsCredentialHeader(%q) = %v, want %v", name, got, want)
		}
	}
}

// Secrets hide in _meta, in JSON inside strings, in member names and in
// lines that are no JSON (a torn last line): every rule reaches them.
func TestRedactReachesEverywhere(t *testing.T) {
	r := &Redactor{Keys: []string{"apiKey"}, Values: []*regexp.Regexp{regexp.MustCompile(`sk-[a-z0-9]{8,}`)}}
	cases := []struct {
		name, line string
		leak       []string // what must not survive
		keep       []string // what must
	}{
		{"_meta session", `{"jsonrpc":"2.0","id":1,"method":"x","_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z","session":"sk-abcdef123456"}}`,
			[]string{"sk-abcdef123456"}, []string{`"dir":"send"`, `"server":"s"`, `"_meta.session"`}},
		{"JSON in a string", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"apiKey\":\"hunter2hunter2\",\"n\":1}"}]},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
			[]string{"hunter2hunter2"}, []string{`\"n\":1`, `result.content[0].text`}},
		{"secret as a member name", `{"jsonrpc":"2.0","id":1,"result":{"tokens":{"sk-abcdef123456":true}},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
			[]string{"sk-abcdef123456"}, []string{`"[REDACTED]":true`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, changed, err := r.RedactLine([]byte(c.line))
			if err != nil || !changed {
				t.Fatalf("changed %v, err %v", changed, err)
			}
			for _, l := range c.leak {
				if strings.Contains(string(out), l) {
					t.Errorf("%q survived: %s", l, out)
				}
			}
			for _, k := range c.keep {
				if !strings.Contains(string(out), k) {
					t.Errorf("%q missing: %s", k, out)
				}
			}
			if _, err := Decode(out); err != nil {
				t.Errorf("output is not JSON: %v", err)
			}
		})
	}
	torn := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"apiKey":"hunter2hunter2","b":1},"_me`, `{"jsonrpc":"2.0","id":1,"method":"x","params":{"apiKey":"[REDACTED]","b":1},"_me`},
		{`{"jsonrpc":"2.0","id":1,"method":"x","params":{"APIKEY" : "hunter2hun`, `{"jsonrpc":"2.0","id":1,"method":"x","params":{"APIKEY" : "[REDACTED]"`},
		{`{"params":{"apiKey":12345,"b":1`, `{"params":{"apiKey":"[REDACTED]","b":1`},
		{`{"params":{"apiKey":{"nested":"hunter2"},"b":1}`, `{"params":{"apiKey":"[REDACTED]"`},
		{`plain text mentioning apiKey with sk-abcdef123456`, `plain text mentioning apiKey with [REDACTED]`},
	}
	for _, c := range torn {
		if got := string(r.RedactText([]byte(c.in))); got != c.want {
			t.Errorf("RedactText(%s)\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}

func TestRedactMetaPath(t *testing.T) {
	p, err := ParsePath("_meta.session")
	if err != nil {
		t.Fatal(err)
	}
	r := &Redactor{Paths: []Path{p}}
	out, changed, err := r.RedactLine([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z","session":"abc123"}}`))
	if err != nil || !changed || strings.Contains(string(out), "abc123") || !strings.Contains(string(out), `"redacted":["_meta.session"]`) {
		t.Errorf("got %s, changed %v, err %v; want _meta.session blanked and listed", out, changed, err)
	}
}
