package tape

import (
	"context"
	"errors"
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

// A pipe is copied into a temporary file up to a bound (a writer that never
// stops used to fill the temporary directory), and its reading stops when
// the context is done (a writer that writes nothing used to hold it).
func TestOpenContextBoundsAndStopsPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "tape.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The writer end, opened read-write so that it does not wait for a reader.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	stopWriting := make(chan struct{})
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		line := []byte(strings.Repeat("x", 1023) + "\n")
		for {
			select {
			case <-stopWriting:
				return
			default:
			}
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	}()
	_, err = OpenContext(context.Background(), fifo, 1<<20)
	close(stopWriting)
	if err == nil || !strings.Contains(err.Error(), "at most 1048576 bytes") {
		t.Errorf("OpenContext(endless pipe, 1 MiB) = %v, want an error naming the bound", err)
	}
	// Unblock the writer (the pipe may be full) and wait for it.
	go func() {
		buf := make([]byte, 1<<16)
		r, err := os.OpenFile(fifo, os.O_RDONLY|oNonBlock, 0)
		if err != nil {
			return
		}
		defer r.Close()
		for {
			select {
			case <-wrote:
				return
			default:
			}
			r.Read(buf)
		}
	}()
	<-wrote

	// A writer that holds the pipe open and writes nothing: the context ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := OpenContext(ctx, fifo, 0)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("OpenContext(silent pipe) = %v, want the context's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OpenContext(silent pipe) still reading 5s after its context ended")
	}
}
