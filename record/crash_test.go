package record_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

const echoServerPackage = "./record/testdata/echoserver"

// floorRelayPackage is the trivial relay the throughput benchmark measures
// as the bound of a recording shim.
const floorRelayPackage = "./record/testdata/floorrelay"

// TestCrashSafety kills the shim (the built tapedeck binary) with SIGKILL at
// random moments of a busy session, 50 times. Every tape must read back with
// at most its last line torn, every response on it must follow its request
// (the tape is written before forwarding), and the server must not outlive
// the shim.
func TestCrashSafety(t *testing.T) {
	shim := mcptest.BuildBinary(t, tapedeckPackage)
	echo := mcptest.BuildBinary(t, echoServerPackage)
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	var total, torn int
	for run := range 50 {
		path := filepath.Join(dir, fmt.Sprintf("crash-%02d.jsonl", run))
		cmd := exec.Command(shim, "record", "-o", path, "--server", "echo", "--", echo)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { // the client: requests of varied sizes, some large
			w := bufio.NewWriter(stdin)
			for i := 0; ; i++ {
				size := 100
				if i%50 == 7 {
					size = 200 << 10
				}
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"data":"%s"}}`+"\n", i, strings.Repeat("x", size))
				if w.Flush() != nil {
					return
				}
			}
		}()
		go io.Copy(io.Discard, stdout)
		time.Sleep(time.Duration(5+rng.IntN(60)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()

		n, tornLine, serverPID := checkCrashTape(t, path)
		total += n
		if tornLine {
			torn++
		}
		if serverPID > 0 {
			waitGone(t, serverPID)
		}
	}
	t.Logf("50 kills: %d messages on the tapes, %d tapes with a torn last line", total, torn)
	if total == 0 {
		t.Fatal("no message was recorded in any run: the test did not exercise the shim")
	}
}

// checkCrashTape reads a tape left by a killed shim.
func checkCrashTape(t *testing.T, path string) (messages int, torn bool, serverPID int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, 0 // killed before it created the tape (or started the server)
	}
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r := tape.NewReader(bytes.NewReader(data))
	var entries []tape.Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		entries = append(entries, e)
	}
	lastLine := bytes.Count(data, []byte("\n")) + 1
	for _, w := range r.Warnings() {
		if !errors.Is(w, tape.ErrTorn) || w.Line != lastLine {
			t.Errorf("%s: %v (only a torn last line is allowed)", path, w)
		}
		torn = true
	}
	if torn {
		entries = entries[:len(entries)-1]
	}
	requests := map[tape.ID]bool{}
	for _, e := range entries {
		switch e.Kind {
		case tape.KindRequest:
			requests[e.ID] = true
		case tape.KindResponse:
			if !requests[e.ID] {
				t.Errorf("%s line %d: response %s before its request", path, e.Line, e.ID)
			}
		case tape.KindLifecycle:
			if e.Method == tape.MethodStart {
				if v, err := tape.Decode(e.Raw); err == nil {
					if pid, ok := v.(map[string]any)["params"].(map[string]any)["pid"]; ok {
						n, _ := strconv.Atoi(fmt.Sprint(pid))
						serverPID = n
					}
				}
			}
		}
	}
	return len(entries), torn, serverPID
}

// waitGone waits for a process to die (a zombie counts as dead: it waits
// for a reaper, not for work).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("server pid %d outlived the killed shim", pid)
}
