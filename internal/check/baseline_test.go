package check

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// listing is a tape on which each server lists its tools once: "echo",
// whose description is desc.
func serverListing(t *testing.T, desc string, servers ...string) *tape.Index {
	t.Helper()
	var b strings.Builder
	for i, s := range servers {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/list","_meta":{"dir":"send","server":%q,"ts":"2026-05-16T12:00:00.000Z"}}`+"\n", i+1, s)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"result":{"tools":[{"name":"echo","description":%q,"inputSchema":{"type":"object"}}]},"_meta":{"dir":"recv","server":%q,"ts":"2026-05-16T12:00:00.010Z"}}`+"\n", i+1, desc, s)
	}
	text := b.String()
	x := tape.NewIndex(bytes.NewReader([]byte(text)))
	if err := x.Extend(int64(len(text)), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestBaselineApplies: a baseline none of whose servers is on the tape
// (an HTTP recording named after its host, an imported one after its
// command) fails the check with a finding that names the servers of both;
// --baseline-server (BaselineAs, BaselineOnly) checks a server named
// otherwise against the baseline's, and then drift is found as by name.
func TestBaselineApplies(t *testing.T) {
	base := NewBaseline(serverListing(t, "Echoes", "everything"))
	if got := base.ServerNames(); len(got) != 1 || got[0] != "everything" {
		t.Fatalf("baseline servers %v, want [everything]", got)
	}
	tests := []struct {
		name    string
		x       *tape.Index
		as      map[string]string
		only    string
		failOn  []string
		want    []string // each finding's message, in order
		fail    bool
		servers []string // each finding's Server
	}{
		{name: "same name, same tools", x: serverListing(t, "Echoes", "everything")},
		{name: "same name, drift", x: serverListing(t, "Echoes twice", "everything"),
			want: []string{`tool echo changed (server everything): /description: expected "Echoes", got "Echoes twice"`}, fail: true, servers: []string{"everything"}},
		{name: "another name", x: serverListing(t, "Echoes", "127.0.0.1"),
			want: []string{`the baseline does not apply: it has server "everything", the tape has server "127.0.0.1"; check a tape's server against a baseline's server of another name with --baseline-server TAPE_SERVER=BASELINE_SERVER`}, fail: true, servers: []string{""}},
		{name: "another name, drift not in --fail-on", x: serverListing(t, "Echoes", "index.js"), failOn: []string{RuleError},
			want: []string{`the baseline does not apply: it has server "everything", the tape has server "index.js"; check a tape's server against a baseline's server of another name with --baseline-server TAPE_SERVER=BASELINE_SERVER`}, servers: []string{""}},
		{name: "another name mapped", x: serverListing(t, "Echoes", "127.0.0.1"), as: map[string]string{"127.0.0.1": "everything"}},
		{name: "another name mapped, drift", x: serverListing(t, "Echoes twice", "127.0.0.1"), as: map[string]string{"127.0.0.1": "everything"},
			want: []string{`tool echo changed (server 127.0.0.1, baseline server everything): /description: expected "Echoes", got "Echoes twice"`}, fail: true, servers: []string{"127.0.0.1"}},
		{name: "mapping of another server", x: serverListing(t, "Echoes", "127.0.0.1"), as: map[string]string{"index.js": "everything"},
			want: []string{`the baseline does not apply: it has server "everything", the tape has server "127.0.0.1"; check a tape's server against a baseline's server of another name with --baseline-server TAPE_SERVER=BASELINE_SERVER`}, fail: true, servers: []string{""}},
		{name: "only server", x: serverListing(t, "Echoes twice", "index.js"), only: "everything",
			want: []string{`tool echo changed (server index.js, baseline server everything): /description: expected "Echoes", got "Echoes twice"`}, fail: true, servers: []string{"index.js"}},
		{name: "only server, two on the tape", x: serverListing(t, "Echoes", "a", "b"), only: "everything",
			want: []string{`the baseline does not apply: --baseline-server everything names the baseline's server for a tape's only server, and the tape has servers "a", "b"; give --baseline-server TAPE_SERVER=everything`}, fail: true, servers: []string{""}},
		{name: "one of two servers in the baseline", x: serverListing(t, "Echoes", "everything", "other")},
		{name: "no servers", x: serverListing(t, "Echoes"),
			want: []string{`the baseline does not apply: it has server "everything", the tape has no servers; check a tape's server against a baseline's server of another name with --baseline-server TAPE_SERVER=BASELINE_SERVER`}, fail: true, servers: []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			failOn := tt.failOn
			if failOn == nil {
				failOn = DefaultFailOn
			}
			fs := mustTape(t, "t.jsonl", tt.x, Options{FailOn: failOn, Baseline: &base, BaselineAs: tt.as, BaselineOnly: tt.only})
			var got, servers []string
			for _, f := range fs {
				if f.Rule != RuleDrift || f.Tape != "t.jsonl" {
					t.Errorf("finding %+v, want rule %s on t.jsonl", f, RuleDrift)
				}
				got, servers = append(got, f.Message), append(servers, f.Server)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if strings.Join(servers, ",") != strings.Join(tt.servers, ",") {
				t.Errorf("servers %q, want %q", servers, tt.servers)
			}
			if Failed(fs) != tt.fail {
				t.Errorf("Failed = %v, want %v", Failed(fs), tt.fail)
			}
		})
	}
}

// TestBaselineRoundTrip: a baseline written and read back is the same, and
// a file that is none is refused saying what was expected.
func TestBaselineRoundTrip(t *testing.T) {
	base := NewBaseline(serverListing(t, "Echoes", "b", "a"))
	var buf bytes.Buffer
	if err := base.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadBaseline(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.ServerNames(); strings.Join(got, ",") != "a,b" {
		t.Errorf("servers %v, want [a b]", got)
	}
	if d := back.Drift(serverListing(t, "Echoes", "a", "b"), nil); len(d) != 0 {
		t.Errorf("drift of the baseline's own tape: %v", d)
	}
	if _, err := ReadBaseline(strings.NewReader(`{"version":2,"servers":{}}`)); err == nil || !strings.Contains(err.Error(), "expected version 1 with servers, found version 2") {
		t.Errorf("a version 2 baseline: %v", err)
	}
}
