package record

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAfterProbe(t *testing.T) {
	const (
		start    = `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"s"}}`
		discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","_meta":{"dir":"send","server":"s"}}`
		answer   = `{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s"}}`
		list     = `{"jsonrpc":"2.0","id":2,"method":"tools/list","_meta":{"dir":"send","server":"s"}}`
		close    = `{"jsonrpc":"2.0","method":"$transport/close","_meta":{"dir":"lifecycle","server":"s"}}`
	)
	now := time.Now()
	tests := []struct {
		name   string
		lines  []string
		server string
		age    time.Duration
		want   bool
		why    string
	}{
		{"a fresh probe", []string{start, discover, answer, close}, "s", time.Second, true, "is a server/discover probe"},
		{"a probe too old", []string{start, discover, answer, close}, "s", time.Minute, false, "more than 30s"},
		{"a session", []string{start, discover, answer, list, answer, close}, "s", time.Second, false, "is not a server/discover probe"},
		{"a probe, then a session", []string{start, discover, answer, close, start, list, answer, close}, "s", time.Second, false, "is not"},
		{"another server's probe", []string{start, discover, answer, close}, "other", time.Second, false, "is not"},
		{"nothing but a start", []string{start}, "s", time.Second, false, "is not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(path, []byte(strings.Join(tt.lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			mtime := now.Add(-tt.age)
			if err := os.Chtimes(path, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			ok, why, err := AfterProbe(path, tt.server, now)
			if err != nil {
				t.Fatal(err)
			}
			if ok != tt.want || !strings.Contains(why, tt.why) {
				t.Errorf("AfterProbe = %v, %q; want %v, with %q", ok, why, tt.want, tt.why)
			}
		})
	}
}
