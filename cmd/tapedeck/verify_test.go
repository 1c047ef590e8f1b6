package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/replay"
)

// TestVerifySDKServer drives the real sdkserver with a tape recorded from
// it: the same server passes; a variant whose answer changed fails with the
// diff and a JUnit failure, unless the changed field is ignored.
func TestVerifySDKServer(t *testing.T) {
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	tapePath := fixture(t, "sdk-sdkserver.tape.jsonl")
	verify := func(flags []string, serverArgs ...string) (string, string, error) {
		args := append([]string{"verify"}, flags...)
		args = append(append(args, tapePath, "--", server), serverArgs...)
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return stdout.String(), stderr.String(), err
	}

	out, stderr, err := verify(nil)
	if err != nil || !strings.Contains(out, "13 calls, 13 passed, 0 failed") {
		t.Fatalf("verify against the same server: %v\n%s%s", err, out, stderr)
	}

	junit := filepath.Join(t.TempDir(), "verify.xml")
	out, _, err = verify([]string{"--junit", junit, "--color=never"}, "--variant", "B")
	if !errors.Is(err, replay.ErrDiverged) || exitCode(err, &bytes.Buffer{}) != 1 {
		t.Fatalf("verify against the changed server: error %v, want ErrDiverged and exit status 1\n%s", err, out)
	}
	for _, want := range []string{"FAIL tools/call answer (line 30)", "/result/content/0/text:\n      - \"the answer is 42\"\n      + \"the answer is 43\"", "13 calls, 12 passed, 1 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("--color=never output has escape codes")
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(x), `tests="13" failures="1"`) || !strings.Contains(string(x), `<failure message="1 differences from the recorded response">`) {
		t.Fatalf("JUnit report:\n%s", x)
	}

	out, _, err = verify([]string{"--ignore", "result.content[0].text", "--color=always"}, "--variant", "B")
	if err != nil || !strings.Contains(out, "\x1b[32mPASS\x1b[0m tools/call answer") {
		t.Fatalf("verify with --ignore of the changed field: %v\n%s", err, out)
	}
}
