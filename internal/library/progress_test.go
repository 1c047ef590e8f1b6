package library

import (
	"bytes"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// A refresh still reading after ProgressAfter says so, and says how it
// ended; a quicker one says nothing.
func TestRefreshProgress(t *testing.T) {
	dir := t.TempDir()
	size := synthDir(t, dir, 4, 3000)
	for _, tc := range []struct {
		after time.Duration
		want  *regexp.Regexp
	}{
		{time.Nanosecond, regexp.MustCompile(`^tapedeck: indexing 4 tape\(s\): [0-9.]+ MB of ` + regexp.QuoteMeta(mb(size)) + ` read\n(.*\n)*tapedeck: indexed 4 tape\(s\), ` + regexp.QuoteMeta(mb(size)) + ` read, in [0-9.]+m?s\n$`)},
		{time.Hour, regexp.MustCompile(`^$`)},
	} {
		var out bytes.Buffer
		l, err := Open(Options{Path: filepath.Join(t.TempDir(), "index.db"), DefaultDir: dir, Progress: &out, ProgressAfter: tc.after})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := l.Refresh(ctx)
		l.Close()
		if err != nil || rep.Indexed != 4 {
			t.Fatalf("refresh: %+v, %v", rep, err)
		}
		if !tc.want.MatchString(out.String()) {
			t.Errorf("after %v: progress %q, want %v", tc.after, out.String(), tc.want)
		}
	}
}
