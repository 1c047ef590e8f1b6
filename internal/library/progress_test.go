package library

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"runtime"
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

// Indexing reports, from another goroutine, the refresh reading tapes:
// how many, their bytes and how far; nothing before or after. Close waits
// for a refresh its context cancelled.
func TestIndexingProgress(t *testing.T) {
	dir := t.TempDir()
	size := synthDir(t, dir, 2, 5000)
	l, err := Open(Options{Path: filepath.Join(t.TempDir(), "index.db"), DefaultDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := l.Indexing(); ok {
		t.Fatalf("before a refresh, indexing %+v", p)
	}
	type result struct {
		rep Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := l.Refresh(ctx)
		done <- result{rep, err}
	}()
	var seen Progress
	var r result
	for got := false; !got; {
		if p, ok := l.Indexing(); ok {
			if seen.Tapes != 0 && p.Read < seen.Read {
				t.Errorf("read went back from %d to %d", seen.Read, p.Read)
			}
			seen = p
		}
		select {
		case r = <-done:
			got = true
		default:
			runtime.Gosched()
		}
	}
	if r.err != nil || r.rep.Indexed != 2 {
		t.Fatalf("refresh: %+v, %v", r.rep, r.err)
	}
	if seen.Tapes != 2 || seen.Total != size || seen.Read < 0 || seen.Read > size {
		t.Errorf("indexing reported %+v, want 2 tapes of %d bytes", seen, size)
	}
	if p, ok := l.Indexing(); ok {
		t.Errorf("after the refresh, indexing %+v", p)
	}
	l.Close()

	// A refresh cancelled mid-way: Close returns once it has ended.
	l, err = Open(Options{Path: filepath.Join(t.TempDir(), "index.db"), DefaultDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	ended := make(chan error, 1)
	go func() {
		_, err := l.Refresh(cctx)
		ended <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		if _, ok := l.Indexing(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no refresh reading tapes after 10 s")
		}
	}
	cancel()
	l.Close()
	select {
	case err := <-ended:
		if err == nil {
			t.Log("the refresh ended before it saw the cancel")
		}
	default:
		t.Error("Close returned while the refresh still ran")
	}
}
