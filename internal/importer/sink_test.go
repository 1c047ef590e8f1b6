package importer

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// writeLog records each Write its tapeSink made: its bytes, and whether
// they were taken from where they were lent (not copied).
type writeLog struct {
	chunk  []byte // the lent memory
	writes []string
	direct []bool
	failAt int // the Write (1-based) that fails, 0 for none
}

func (w *writeLog) Write(p []byte) (int, error) {
	if w.failAt > 0 && len(w.writes)+1 == w.failAt {
		return 0, errors.New("disk full")
	}
	w.writes = append(w.writes, string(p))
	w.direct = append(w.direct, len(p) > 0 && within(w.chunk, p))
	return len(p), nil
}

// within reports whether p lies in c's memory.
func within(c, p []byte) bool {
	for i := range c {
		if &c[i] == &p[0] {
			return len(c)-i >= len(p)
		}
	}
	return false
}

// A sink writes what it is given in order, lent or written: a long run
// of lent records, back to back in the chunk, in one write from the
// chunk (not copied); a short run, or records given apart, copied into
// its buffer; what is written after a lent run after it.
func TestTapeSinkOrder(t *testing.T) {
	long := bytes.Repeat([]byte("x"), sinkDirect) // a record as long as a direct run
	chunk := append(append(append([]byte{}, "a1\n"...), long...), "a3\nb1\n"...)
	w := &writeLog{chunk: chunk}
	s := newTapeSink(w)
	defer s.close()
	s.chunk = chunk
	r := func(start, end int) rec { return rec{start: start, end: end}.bytesIn(chunk) }
	n1, n2 := 3, 3+len(long)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Write([]byte("start\n")); err != nil {
		t.Fatal(err)
	}
	for _, x := range []rec{r(0, n1), r(n1, n2), r(n2, n2+3)} {
		if !s.owns(x) {
			t.Fatalf("owns(%d:%d) = false, expected true for the chunk's bytes", x.start, x.end)
		}
		must(s.lend(x.b))
	}
	if s.owns(rec{start: 0, end: 3, b: []byte("a1\n")}) {
		t.Fatal("owns of a copy = true, expected false")
	}
	if _, err := s.Write([]byte("held\n")); err != nil { // settles the run first
		t.Fatal(err)
	}
	must(s.lend(r(n2+3, len(chunk)).b)) // a short run: copied at settle
	s.settle()
	s.chunk = nil
	must(s.Flush())

	want := "start\na1\n" + string(long) + "a3\nheld\nb1\n"
	if got := strings.Join(w.writes, ""); got != want {
		t.Fatalf("the sink wrote %d bytes %.40q..., expected %d bytes %.40q...", len(got), got, len(want), want)
	}
	// "start\n" buffered, then flushed before the run; the run of three
	// records in one write from the chunk; "held\n" and "b1\n" buffered.
	if len(w.writes) != 3 || w.writes[0] != "start\n" || !w.direct[1] || len(w.writes[1]) != n2+3 || w.direct[2] || w.writes[2] != "held\nb1\n" {
		lens := make([]int, len(w.writes))
		for i := range w.writes {
			lens[i] = len(w.writes[i])
		}
		t.Fatalf("writes of %v bytes (from the chunk: %v), expected 6, %d from the chunk, then 8 copied", lens, w.direct, n2+3)
	}
}

// A write error stops the sink: later writes and lends report it.
func TestTapeSinkError(t *testing.T) {
	chunk := bytes.Repeat([]byte("y"), 2*sinkDirect)
	w := &writeLog{chunk: chunk, failAt: 1}
	s := newTapeSink(w)
	defer s.close()
	s.chunk = chunk
	if err := s.lend(chunk); err != nil {
		t.Fatalf("lend = %v, expected nil (nothing written yet)", err)
	}
	s.settle()
	if err := s.Flush(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Flush = %v, expected the write's error", err)
	}
	if _, err := s.Write([]byte("more\n")); err == nil {
		t.Fatal("Write after a failed write = nil, expected its error")
	}
	if err := s.lend(chunk[:1]); err == nil {
		t.Fatal("lend after a failed write = nil, expected its error")
	}
}

// Import's records lent from the chunks are the bytes the importers
// write through a Writer of their own (each record copied), on logs
// long enough for runs written from the chunks, with reorders and
// session starts among them, on one worker and on several.
func TestImportLentEqualsCopied(t *testing.T) {
	big := strings.Repeat("z", 3000)
	var snoop strings.Builder
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3000 {
		ts := func(us int) string {
			return t0.Add(time.Duration(i*100+us) * time.Microsecond).Format(time.RFC3339Nano)
		}
		if i%40 == 7 { // an answer logged before its request, which came first
			fmt.Fprintf(&snoop, `{"session_id":"s","server_label":"srv","ts":%q,"direction":"s2c","transport":"stdio","raw":{"jsonrpc":"2.0","id":%d,"result":{"t":%q}}}`+"\n", ts(5), i, big)
			fmt.Fprintf(&snoop, `{"session_id":"s","server_label":"srv","ts":%q,"direction":"c2s","transport":"stdio","raw":{"jsonrpc":"2.0","id":%d,"method":"tools/call"}}`+"\n", ts(0), i)
			continue
		}
		fmt.Fprintf(&snoop, `{"session_id":"s%d","server_label":"srv","ts":%q,"direction":"c2s","transport":"stdio","raw":{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"a":%q}}}`+"\n", i/1000, ts(0), i, big)
		fmt.Fprintf(&snoop, `{"session_id":"s%d","server_label":"srv","ts":%q,"direction":"s2c","transport":"stdio","raw":{"jsonrpc":"2.0","id":%d,"result":{}}}`+"\n", i/1000, ts(5), i)
	}
	logs := []struct {
		format string
		data   []byte
		f      Func
	}{
		{"mcpsnoop", []byte(snoop.String()), MCPSnoop},
		{"mcpsnoop", snoopReorderLog(3000, ""), MCPSnoop},
		{"gh-aw", ghawLogOf(3000, ""), GHAW},
		{"gh-aw", bytes.ReplaceAll(ghawLogOf(3000, ""), []byte(`"tools/call"`), []byte(`"tools/call","params":{"a":"`+big+`"}`)), GHAW},
	}
	for _, l := range logs {
		for _, workers := range []int{1, 2} {
			o := Options{workers: workers, chunk: 256 << 10}
			var copied bytes.Buffer
			wantRes, wantErr := l.f(bytes.NewReader(l.data), tape.NewWriter(&copied).KeepMicroseconds(), o)
			w := &writeLog{}
			res, err := Import(l.format, bytes.NewReader(l.data), w, o)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || fmt.Sprint(res) != fmt.Sprint(wantRes) {
				t.Fatalf("%s, %d workers: Import = %+v, %v; expected %+v, %v", l.format, workers, res, err, wantRes, wantErr)
			}
			if got := strings.Join(w.writes, ""); got != copied.String() {
				t.Fatalf("%s, %d workers: Import wrote %d bytes, expected the %d the importer writes through its own Writer", l.format, workers, len(got), copied.Len())
			}
			if copied.Len() > 2*sinkSize && len(w.writes) < 2 {
				t.Fatalf("%s, %d workers: %d writes, expected several", l.format, workers, len(w.writes))
			}
		}
	}
}

// Reading a usual envelope makes no string of what the line before
// already said (its direction, type, server, session), and no local
// escapes to the heap: neither an mcpsnoop line (its id handed to the
// reorder as the line's bytes) nor a gh-aw line allocates.
func TestLineParseAllocs(t *testing.T) {
	snoop := &snoopWorker{enc: newRecEncoder()}
	lines := [][]byte{
		[]byte(`{"session_id":"s1","server_label":"srv","seq":1,"ts":"2025-03-01T12:00:00.000001Z","direction":"c2s","transport":"stdio","raw":{"jsonrpc":"2.0","id":"req-1234","method":"tools/call","params":{}}}` + "\n"),
		[]byte(`{"session_id":"s1","server_label":"srv","seq":2,"ts":"2025-03-01T12:00:00.000002Z","direction":"s2c","transport":"stdio","raw":{"jsonrpc":"2.0","method":"notifications/progress","params":{}}}` + "\n"),
	}
	buf := make([]byte, 0, 64<<10)
	for _, l := range lines {
		snoopParse(snoop, l, buf, &snoopRec{}) // the strings the next lines repeat
	}
	for i, want := range []float64{0, 0} {
		if n := testing.AllocsPerRun(100, func() { snoopParse(snoop, lines[i], buf[:0], &snoopRec{}) }); n > want {
			t.Errorf("mcpsnoop line %d: %v allocations, expected at most %v", i, n, want)
		}
	}
	gh := &ghawWorker{enc: newRecEncoder()}
	line := []byte(`{"timestamp":"2025-03-01T12:00:00.000001Z","direction":"OUT","type":"REQUEST","server_id":"srv0","payload":{"jsonrpc":"2.0","id":1,"method":"tools/call"}}` + "\n")
	ghawParse(gh, line, buf, &ghawRec{})
	if n := testing.AllocsPerRun(100, func() { ghawParse(gh, line, buf[:0], &ghawRec{}) }); n > 0 {
		t.Errorf("gh-aw line: %v allocations, expected none", n)
	}
}

// A chunk's output has room for its records at once, made once for
// chunks of any length (not grown record by record, nor made again for a
// longer chunk), and a finished import's chunk storage serves the next.
func TestLineChunkOutMadeOnce(t *testing.T) {
	wk := &ghawWorker{enc: newRecEncoder()}
	log := ghawLogOf(4000, "")
	c := &lineChunk[ghawRec]{size: 64 << 10}
	var first *byte
	for _, n := range []int{60 << 10, 70 << 10, 64 << 10} {
		k := bytes.LastIndexByte(log[:n], '\n')
		c.data = log[:k+1]
		workChunk(c, wk, 1<<20, ghawParse)
		if len(c.out) == 0 {
			t.Fatal("no records encoded")
		}
		if first == nil {
			first = &c.out[0]
		} else if &c.out[0] != first {
			t.Fatalf("a chunk of %d bytes made its output again, expected the room made for the first", k+1)
		}
	}

	// An import gives its chunks' storage back; the next takes it.
	chunkPool.Lock()
	chunkPool.free = nil
	chunkPool.Unlock()
	if _, _, msg := importWith("gh-aw", bytes.NewReader(log), Options{workers: 2, chunk: 64 << 10}); msg != "" {
		t.Fatal(msg)
	}
	chunkPool.Lock()
	n := len(chunkPool.free)
	chunkPool.Unlock()
	if n == 0 {
		t.Fatal("no chunk storage kept after an import, expected the chunks'")
	}
	if c := newLineChunk[ghawRec](); cap(c.out) == 0 || len(c.out) != 0 || len(c.items) != 0 {
		t.Fatalf("a new chunk's output has cap %d, len %d, %d items; expected a kept one's room, empty", cap(c.out), len(c.out), len(c.items))
	}
}
