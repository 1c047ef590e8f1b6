package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/replay"
)

func verifyInstancesRun(t *testing.T, tapeName string, urls ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"verify", "--color=never", fixture(t, tapeName), "--instances", strings.Join(urls, ",")}, strings.NewReader(""), &stdout, &stderr)
	return stdout.String() + stderr.String(), err
}

// TestVerifyInstances drives three live instances of a real server at once
// with one tape. Three server-everything instances over Streamable HTTP
// with sessions all answer as recorded and agree; of three go-sdk
// sdkserver instances (stateless, 2026-07-28) the second is the variant
// whose answer tool says 43: the report names it, against the tape and
// against the other two.
func TestVerifyInstances(t *testing.T) {
	t.Run("server-everything", func(t *testing.T) {
		a, b, c := mcptest.StartEverythingHTTP(t), mcptest.StartEverythingHTTP(t), mcptest.StartEverythingHTTP(t)
		out, err := verifyInstancesRun(t, "sdk-everything-http.tape.jsonl", a, b, c)
		if err != nil {
			t.Fatalf("verify --instances: %v\n%s", err, out)
		}
		for _, want := range []string{"PASS instance 1 " + a + ": 16 calls", "PASS instance 2 " + b + ": 16 calls", "PASS instance 3 " + c + ": 16 calls", "3 instances, 0 calls splitting them"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("sdkserver, one changed", func(t *testing.T) {
		a := mcptest.StartSDKServerHTTP(t, "--stateless")
		b := mcptest.StartSDKServerHTTP(t, "--stateless", "--variant", "B")
		c := mcptest.StartSDKServerHTTP(t, "--stateless")
		out, err := verifyInstancesRun(t, "sdk-sdkserver-http-stateless.tape.jsonl", a, b, c)
		if !errors.Is(err, replay.ErrDiverged) {
			t.Fatalf("error %v, want ErrDiverged\n%s", err, out)
		}
		for _, want := range []string{
			"PASS instance 1 " + a + ": 13 calls answered as the tape does",
			"FAIL instance 2 " + b + ": 1 of 13 calls answered differently from the tape: tools/call answer (line 30)",
			"PASS instance 3 " + c + ": 13 calls answered as the tape does",
			"SPLIT tools/call answer (line 30): instance 1 " + a + ", instance 3 " + c + "\n    instance 2 " + b + " differs:\n      /result/content/0/text:",
			`"the answer is 43"`,
			"3 instances, 1 call splitting them",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
}

func TestVerifyInstancesArgs(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"verify", fixture(t, "sdk-sdkserver-http-stateless.tape.jsonl"), "--instances", "http://127.0.0.1:1/mcp"}, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "expected two or more URLs") {
		t.Errorf("one instance: error %v, want one asking for two or more", err)
	}
	err = run(context.Background(), []string{"verify", fixture(t, "sdk-sdkserver-http-stateless.tape.jsonl"), "--instances", "http://a/mcp,http://b/mcp", "--url", "http://c/mcp"}, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "give --instances alone") {
		t.Errorf("--instances with --url: error %v", err)
	}
}
