package tape

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe is read as a stream (to its end, into an unlinked file the
// index can read at random), and one with no writer is an error at once:
// open(2) on it used to block forever, deaf to SIGINT.
func TestOpenPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "tape.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Open(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no writer") {
			t.Errorf("Open(fifo with no writer) = %v, want an error saying it had no writer", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open(fifo with no writer) still blocked after 5s")
	}

	const lines = `{"jsonrpc":"2.0","id":1,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.100Z"}}
`
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.WriteString(lines)
		w.Close()
	}()
	defer r.Close()
	// /proc/self/fd/N names the pipe as /dev/stdin or <(...) do.
	x, err := OpenIndex(filepath.Join("/proc/self/fd", strconv.Itoa(int(r.Fd()))))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Len() != 2 {
		t.Errorf("index of a pipe has %d messages, want 2", x.Len())
	}
}

func TestOpenRefusesDevicesAndDirectories(t *testing.T) {
	for path, want := range map[string]string{"/dev/null": "is a device", t.TempDir(): "is a directory"} {
		if _, err := Open(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v, want an error saying it %s", path, err, want)
		}
	}
}
