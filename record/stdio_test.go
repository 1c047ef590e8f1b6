package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

func TestRelayLines(t *testing.T) {
	long := `{"jsonrpc":"2.0","method":"x","params":{"blob":"` + strings.Repeat("A", 3<<20) + `"}}`
	input := "{\"a\":1}\r\n\n" + long + "\nnot json\n{\"tail\":true}"
	var out bytes.Buffer
	var lines []string
	err := relayLines(iotest.HalfReader(strings.NewReader(input)), &out, func(l []byte) {
		// Whatever the relay has forwarded so far must not include this line:
		// the tape comes first.
		if bytes.Contains(out.Bytes(), l) && len(l) > 0 {
			t.Errorf("line %.20q forwarded before it was recorded", l)
		}
		lines = append(lines, string(l))
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != input {
		t.Errorf("forwarded %d bytes that differ from the %d input bytes", out.Len(), len(input))
	}
	want := []string{`{"a":1}`, "", long, "not json", `{"tail":true}`}
	if len(lines) != len(want) {
		t.Fatalf("recorded %d lines, want %d", len(lines), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: got %.40q, want %.40q", i, lines[i], want[i])
		}
	}
}

// TestRelayLinesBrokenWriter checks that the relay keeps reading (and
// recording) after the peer is gone, so the other side never blocks.
func TestRelayLinesBrokenWriter(t *testing.T) {
	n := 0
	err := relayLines(strings.NewReader("a\nb\nc\n"), errWriter{}, func([]byte) { n++ }, nil, nil)
	if err == nil || n != 3 {
		t.Fatalf("got err %v and %d lines recorded, want the write error and 3 lines", err, n)
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

func readTape(t *testing.T, b []byte) []tape.Entry {
	t.Helper()
	r := tape.NewReader(bytes.NewReader(b), tape.Strict())
	var out []tape.Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("tape does not read back: %v\n%s", err, b)
		}
		out = append(out, e)
	}
	if w := r.Warnings(); len(w) > 0 {
		t.Fatalf("tape warnings: %v\n%s", w, b)
	}
	return out
}

func TestStdioRecordsOutputsAndStatus(t *testing.T) {
	script := `read line; echo "banner: not json"; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; echo "log line" >&2; exit 3`
	var tp, stdout, stderr bytes.Buffer
	red, err := tape.NewRedactor(nil, nil, []string{`--token=\S+`})
	if err != nil {
		t.Fatal(err)
	}
	s := &Stdio{Command: "sh", Args: []string{"-c", script, "--token=abc"}, Tape: &tp, Server: "sh-server", Redact: red}
	st, err := s.Run(context.Background(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if st.Code != 3 || st.Signal != 0 {
		t.Errorf("status %v, want exit status 3", st)
	}
	if want := "banner: not json\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	if stderr.String() != "log line\n" {
		t.Errorf("stderr %q, want the server's line passed through", stderr.String())
	}
	es := readTape(t, tp.Bytes())
	var got []string
	for _, e := range es {
		got = append(got, string(e.Dir)+" "+e.Method+" "+string(e.ID))
		if e.Server != "sh-server" {
			t.Errorf("line %d: server %q, want sh-server", e.Line, e.Server)
		}
	}
	want := []string{"lifecycle $transport/start ", "send ping 1", "lifecycle $transport/invalid ", "recv  1", "lifecycle $transport/stderr ", "lifecycle $transport/close "}
	// stdout and stderr are relayed concurrently: compare as sets of lines
	// with the fixed ends in place.
	if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] || !sameSet(got, want) {
		t.Errorf("tape:\n%s\nwant (in some order):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if bytes.Contains(tp.Bytes(), []byte("--token=abc")) || !bytes.Contains(tp.Bytes(), []byte(`"[REDACTED]"`)) {
		t.Errorf("the start record's args were not redacted:\n%s", tp.Bytes())
	}
	if !bytes.Contains(tp.Bytes(), []byte(`"text":"banner: not json"`)) || !bytes.Contains(tp.Bytes(), []byte(`"code":3`)) {
		t.Errorf("tape lacks the invalid frame's text or the exit code:\n%s", tp.Bytes())
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestStdioEscalates checks the shutdown of a server that ignores both the
// end of its stdin and SIGTERM: it is killed, and Run returns promptly.
func TestStdioEscalates(t *testing.T) {
	var tp bytes.Buffer
	s := &Stdio{Command: "sh", Args: []string{"-c", `trap '' TERM; while :; do sleep 0.05; done`},
		Tape: &tp, Grace: 100 * time.Millisecond, KillAfter: 100 * time.Millisecond}
	start := time.Now()
	st, err := s.Run(context.Background(), strings.NewReader(""), io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if st.Signal != syscall.SIGKILL || st.Code != 128+9 {
		t.Errorf("status %v (code %d), want killed by SIGKILL (code 137)", st, st.Code)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Run took %v after stdin closed, want about 200ms", d)
	}
	if !bytes.Contains(tp.Bytes(), []byte(`"reason":"stdin closed","signal":"SIGKILL"`)) {
		t.Errorf("close record lacks the reason and signal:\n%s", tp.Bytes())
	}
}

// TestStdioForwardsSignals checks that a signal given to the shim reaches
// the server, whose exit status comes back.
func TestStdioForwardsSignals(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	var stdout bytes.Buffer
	s := &Stdio{Command: "sh", Args: []string{"-c", `trap 'exit 5' USR1; echo ready; while :; do sleep 0.02; done`},
		Tape: io.Discard, Signals: sigs}
	ready := make(chan struct{})
	w := &notifyWriter{w: &stdout, ready: ready}
	done := make(chan ExitStatus, 1)
	go func() {
		st, err := s.Run(context.Background(), stdinR, w, io.Discard)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("server never printed ready")
	}
	sigs <- syscall.SIGUSR1
	select {
	case st := <-done:
		if st.Code != 5 {
			t.Errorf("status %v, want exit status 5 from the server's USR1 trap", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not exit after SIGUSR1")
	}
}

type notifyWriter struct {
	w     io.Writer
	ready chan struct{}
	once  bool
}

func (n *notifyWriter) Write(b []byte) (int, error) {
	if !n.once {
		n.once = true
		close(n.ready)
	}
	return n.w.Write(b)
}

func TestStdioStartFailure(t *testing.T) {
	var tp bytes.Buffer
	s := &Stdio{Command: "/nonexistent/server", Tape: &tp}
	st, err := s.Run(context.Background(), strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || st.Code != 127 {
		t.Fatalf("got %v, %v; want exit 127 and an error", st, err)
	}
	if !strings.Contains(err.Error(), "/nonexistent/server") {
		t.Errorf("error %q does not name the command", err)
	}
	es := readTape(t, tp.Bytes())
	if len(es) != 2 || es[1].Method != tape.MethodClose {
		t.Errorf("tape has %d records, want start and close:\n%s", len(es), tp.Bytes())
	}
}

// TestStdioServerCrash: a server killed mid-session is recorded with its
// signal, the client's stdout ends (EOF), and Run returns although the
// client never closed stdin.
func TestStdioServerCrash(t *testing.T) {
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	var tp bytes.Buffer
	outR, outW := io.Pipe()
	s := &Stdio{Command: "sh", Args: []string{"-c", `read l; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; kill -9 $$`}, Tape: &tp}
	done := make(chan ExitStatus, 1)
	go func() {
		st, err := s.Run(context.Background(), stdinR, outW, io.Discard)
		if err != nil {
			t.Error(err)
		}
		outW.Close() // what the tapedeck command does by exiting
		done <- st
	}()
	go io.WriteString(stdinW, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	got, _ := io.ReadAll(outR)
	if string(got) != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Errorf("client got %q", got)
	}
	select {
	case st := <-done:
		if st.Signal != syscall.SIGKILL || st.Code != 137 {
			t.Errorf("status %v, want killed by SIGKILL", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the server died")
	}
	es := readTape(t, tp.Bytes())
	if last := es[len(es)-1]; last.Method != tape.MethodClose || !bytes.Contains(last.Raw, []byte(`"signal":"SIGKILL"`)) {
		t.Errorf("last record %s", last.Raw)
	}
}

// TestStdioClientStdoutGone: when the client stops reading (its stdout
// breaks) the shim shuts the server down even though stdin stays open.
func TestStdioClientStdoutGone(t *testing.T) {
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	var tp bytes.Buffer
	s := &Stdio{Command: "sh", Args: []string{"-c", `while read l; do echo "$l"; done`}, Tape: &tp,
		Grace: 200 * time.Millisecond, KillAfter: 200 * time.Millisecond}
	done := make(chan ExitStatus, 1)
	go func() {
		st, err := s.Run(context.Background(), stdinR, errWriter{}, io.Discard)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	go io.WriteString(stdinW, `{"jsonrpc":"2.0","method":"x"}`+"\n")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the client's stdout broke")
	}
	if !bytes.Contains(tp.Bytes(), []byte(`"reason":"client stdout closed"`)) {
		t.Errorf("close record lacks the reason:\n%s", tp.Bytes())
	}
}

// A line over the limit is forwarded as it comes, not held without bound,
// and recorded by size and prefix; the lines around it are recorded whole.
// (2 GB without a newline grew a 4.2 GB buffer, and a server that exited
// mid-line left it neither forwarded nor recorded.)
func TestRelayLinesOversize(t *testing.T) {
	long := strings.Repeat("B", 5000)
	for _, tt := range []struct {
		input, want string
		ended       bool
	}{
		{"a\n" + long + "\nb\n", "a\nb\n", true},
		{"a\n" + long, "a\n", false},
	} {
		var out bytes.Buffer
		var lines []string
		type over struct {
			size   int64
			prefix string
			ended  bool
		}
		var overs []over
		err := relayLinesMax(iotest.OneByteReader(strings.NewReader(tt.input)), &out, 1000, func(l []byte) { lines = append(lines, string(l)+"\n") }, nil,
			func(size int64, prefix []byte, ended bool) { overs = append(overs, over{size, string(prefix), ended}) })
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != tt.input {
			t.Errorf("forwarded %d bytes, want all %d", out.Len(), len(tt.input))
		}
		if strings.Join(lines, "") != tt.want {
			t.Errorf("recorded %q, want %q", lines, tt.want)
		}
		if len(overs) != 1 || overs[0].size != int64(len(long)) || !strings.HasPrefix(long, overs[0].prefix) || overs[0].prefix == "" || overs[0].ended != tt.ended {
			t.Errorf("oversize calls %+v, want one of size %d, ended %v", overs, len(long), tt.ended)
		}
	}
}

// A slow client gets everything the server wrote before exiting: the shim
// waits while the client keeps reading (it gave up 500 ms after the server
// exited: 43-45 of 50 lines of 100 KB reached a client reading 64 KiB every
// 50 ms).
func TestStdioSlowClientGetsEverything(t *testing.T) {
	line := strings.Repeat("x", 100_000)
	script := `i=0; while [ $i -lt 30 ]; do echo ` + line + `; i=$((i+1)); done`
	pr, pw := io.Pipe()
	var tapeBuf bytes.Buffer
	s := &Stdio{Command: "sh", Args: []string{"-c", script}, Tape: &tapeBuf}
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(context.Background(), strings.NewReader(""), pw, io.Discard)
		pw.Close()
		done <- err
	}()
	got := 0
	buf := make([]byte, 64<<10)
	for {
		n, err := pr.Read(buf)
		got += n
		if err != nil {
			break
		}
		time.Sleep(40 * time.Millisecond) // about 2 s for the 3 MB, well past the old 1 s
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := 30 * (len(line) + 1); got != want {
		t.Errorf("the slow client got %d bytes, want all %d", got, want)
	}
}

// failingTape fails writes on demand, after writing part of them, as a
// full disk does.
type failingTape struct {
	mu   sync.Mutex
	b    bytes.Buffer
	full bool
}

func (f *failingTape) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.full {
		n := len(p) / 2
		f.b.Write(p[:n])
		return n, syscall.ENOSPC
	}
	return f.b.Write(p)
}

func (f *failingTape) set(full bool) { f.mu.Lock(); f.full = full; f.mu.Unlock() }

// A full disk is said at once (once), relaying goes on, and when space
// comes back the tape resumes on a line boundary with a record of what was
// lost: no partial record glued to a later one, no silent hole.
func TestStdioDiskFull(t *testing.T) {
	tp := &failingTape{}
	var warnings []error
	var wmu sync.Mutex
	pr, pw := io.Pipe()
	s := &Stdio{Command: "cat", Tape: tp, Warn: func(err error) { wmu.Lock(); warnings = append(warnings, err); wmu.Unlock() }}
	var out mcptest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(context.Background(), pr, &out, io.Discard)
		done <- err
	}()
	send := func(from, to int) {
		for i := from; i < to; i++ {
			fmt.Fprintf(pw, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
		}
		for deadline := time.Now().Add(5 * time.Second); strings.Count(out.String(), "\n") < to; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("relayed %d lines, want %d", strings.Count(out.String(), "\n"), to)
			}
		}
	}
	send(0, 5)
	tp.set(true)
	send(5, 10) // relayed, though the tape cannot take them
	tp.set(false)
	send(10, 15)
	pw.Close()
	err := <-done
	if err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Run: %v, want the tape's ENOSPC reported", err)
	}
	wmu.Lock()
	if len(warnings) != 1 {
		t.Errorf("%d warnings, want the first failure said once", len(warnings))
	}
	wmu.Unlock()
	r := tape.NewReader(bytes.NewReader(tp.b.Bytes()))
	var ids []string
	lost := 0
	for {
		e, err := r.Next()
		if err != nil {
			break
		}
		switch {
		case e.Kind == tape.KindRequest:
			ids = append(ids, string(e.ID))
		case e.Method == tape.MethodLost:
			lost++
		}
	}
	if lost == 0 {
		t.Errorf("no %s record on the tape", tape.MethodLost)
	}
	if len(ids) < 10 || ids[0] != "0" || ids[len(ids)-1] != "14" || !slices.Contains(ids, "10") {
		t.Errorf("requests on the tape %v, want 0-4 and 10-14 whole", ids)
	}
	for _, w := range r.Warnings() {
		if !strings.Contains(w.Error(), "kept as an invalid entry") {
			t.Errorf("warning %v: a record glued to another?", w)
		}
	}
}

// slowRecvTape is a tape on which each record of the server's output takes
// a while to write (a slow disk).
type slowRecvTape struct {
	syncBuffer
	delay time.Duration
}

func (s *slowRecvTape) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"dir":"recv"`)) {
		time.Sleep(s.delay)
	}
	return s.syncBuffer.Write(p)
}

// Once the server has gone, a relay still recording what it read is not
// abandoned: every message on the tape reaches the client before Run
// returns (the shim gave up 1 s after the server exited whenever it found
// the relay between two writes to the client twice in a row, and the
// process exited with messages on the tape the client never got).
func TestStdioSlowTapeDeliversEverything(t *testing.T) {
	tp := &slowRecvTape{delay: 700 * time.Millisecond}
	line := `{"jsonrpc":"2.0","method":"n"}`
	script := `for i in 1 2 3 4; do echo '` + line + `'; sleep 0.05; done`
	var out syncBuffer
	s := &Stdio{Command: "sh", Args: []string{"-c", script}, Tape: tp}
	if _, err := s.Run(context.Background(), strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := bytes.Count(out.Bytes(), []byte("\n"))
	onTape := bytes.Count(tp.Bytes(), []byte(`"method":"n"`))
	if got != 4 || onTape != 4 {
		t.Errorf("the client got %d lines and the tape holds %d messages when Run returned, want 4 and 4", got, onTape)
	}
	if bytes.Contains(tp.Bytes(), []byte("abandoned")) {
		t.Errorf("the close record says the output was abandoned:\n%s", tp.Bytes())
	}
}

// A client that stops reading is given up on once its write has made no
// progress for stuckWrite, and the close record says how many bytes and
// lines of what the tape holds it never got.
func TestStdioClientStopsReadingUndelivered(t *testing.T) {
	line := `{"jsonrpc":"2.0","method":"n","params":{"x":"` + strings.Repeat("x", 50_000) + `"}}`
	script := `i=0; while [ $i -lt 20 ]; do echo '` + line + `'; i=$((i+1)); done`
	pr, pw := io.Pipe()
	defer pr.Close()
	tp := &syncBuffer{}
	s := &Stdio{Command: "sh", Args: []string{"-c", script}, Tape: tp, stuckWrite: 300 * time.Millisecond}
	var received int
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, writePiece)
		for range 2 { // two pieces, then it stops reading
			n, err := io.ReadFull(pr, buf)
			received += n
			if err != nil {
				return
			}
		}
	}()
	if _, err := s.Run(context.Background(), strings.NewReader(""), pw, io.Discard); err != nil {
		t.Fatal(err)
	}
	<-read
	b := tp.Bytes()
	var closeParams struct {
		Undelivered      int64  `json:"undelivered"`
		UndeliveredLines int64  `json:"undelivered_lines"`
		Abandoned        string `json:"abandoned"`
	}
	messages := 0
	for _, e := range readTape(t, b) {
		switch {
		case e.Method == "n":
			messages++
		case e.Method == tape.MethodClose:
			var rec struct {
				Params json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal(e.Raw, &rec); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(rec.Params, &closeParams); err != nil {
				t.Fatal(err)
			}
		}
	}
	total := int64(messages * (len(line) + 1))
	if messages == 0 || closeParams.Abandoned == "" {
		t.Fatalf("tape holds %d messages, close record %+v: want some, and the output abandoned", messages, closeParams)
	}
	// A write cut short may have passed part of its piece unseen: the count
	// is what the shim did not see delivered.
	if u := closeParams.Undelivered; u < total-int64(received) || u >= total-int64(received)+writePiece {
		t.Errorf("close record says %d bytes undelivered; the tape holds %d bytes of messages, the client got %d",
			u, total, received)
	}
	// The lines are those the undelivered bytes touch: the last u bytes of
	// the output hold the newlines of ceil(u / a line's length) lines. A
	// piece cut short can make that one line or more than the client
	// lacks whole (it counts what was not seen delivered), never fewer.
	lineLen := int64(len(line) + 1)
	u := closeParams.Undelivered
	whole := int64(received) / lineLen
	if want := (u + lineLen - 1) / lineLen; closeParams.UndeliveredLines != want || want < int64(messages)-whole {
		t.Errorf("close record says %d lines undelivered for %d bytes (want %d); the tape holds %d messages, the client got %d whole",
			closeParams.UndeliveredLines, u, want, messages, whole)
	}
}
