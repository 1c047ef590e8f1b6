package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// waitFor polls cond until it returns nil, and fails the test when timeout
// passes first, saying what it waited for and what cond last reported. It
// polls often at first and backs off to a quarter of a second, so a fast
// condition costs little and a slow one (a trace store ingesting spans)
// is not hammered.
func waitFor(t testing.TB, timeout time.Duration, cond func() error, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := 10 * time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; the last try: %v", timeout, what, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// holdsFor checks cond for d, polling as waitFor does, and fails the test
// the first time it does not hold: for what must not happen (a held answer
// reaching the client), where a fixed sleep would look only at the end.
func holdsFor(t testing.TB, d time.Duration, cond func() error, what string) {
	t.Helper()
	end := time.Now().Add(d)
	pause := 10 * time.Millisecond
	for {
		if err := cond(); err != nil {
			t.Fatalf("%s did not hold for %s: %v", what, d, err)
		}
		if time.Now().After(end) {
			return
		}
		time.Sleep(min(pause, time.Until(end)+time.Millisecond))
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// lacks is a holdsFor condition: out does not hold unwanted.
func lacks(out fmt.Stringer, unwanted string) func() error {
	return func() error {
		if s := out.String(); strings.Contains(s, unwanted) {
			return fmt.Errorf("the output has %q:\n%s", unwanted, s)
		}
		return nil
	}
}

// printed is a waitFor condition: out holds want.
func printed(out fmt.Stringer, want string) func() error {
	return func() error {
		if s := out.String(); !strings.Contains(s, want) {
			return fmt.Errorf("the output so far is %q, without %q", s, want)
		}
		return nil
	}
}

// failRecorder records what waitFor does to a test, to test waitFor.
type failRecorder struct {
	testing.TB
	failed string
}

func (f *failRecorder) Helper() {}
func (f *failRecorder) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f)
}

func TestWaitFor(t *testing.T) {
	n := 0
	waitFor(t, 5*time.Second, func() error {
		if n++; n < 3 {
			return fmt.Errorf("try %d", n)
		}
		return nil
	}, "the third try")
	if n != 3 {
		t.Errorf("cond ran %d times, want 3 (until it held)", n)
	}
	f := &failRecorder{TB: t}
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != f {
				t.Errorf("waitFor did not fail the test on timeout (recovered %v)", r)
			}
		}()
		waitFor(f, 50*time.Millisecond, func() error { return fmt.Errorf("still 0 of 2") }, "two spans")
	}()
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("waitFor gave up after %s, before its 50ms", d)
	}
	if want := "waited 50ms for two spans; the last try: still 0 of 2"; f.failed != want {
		t.Errorf("failure message %q, want %q", f.failed, want)
	}
}
