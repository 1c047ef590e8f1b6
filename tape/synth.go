package tape

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// SynthOptions shapes a synthetic tape made by Synthesize.
type SynthOptions struct {
	Messages int       // how many messages to write (lifecycle records included)
	Seed     uint64    // the same seed gives the same tape
	Servers  []string  // default {"synth"}
	Start    time.Time // ts of the first message; default 2026-01-01
	// Profile picks the shape of the messages: SynthDefault (the
	// zero value, the shape described at Synthesize), SynthSmall or
	// SynthRealistic.
	Profile SynthProfile
	// ChangeEvery, when > 0, makes every ChangeEvery-th tools/call's answer
	// (counted per server from 0) say something else, and DropEvery every
	// DropEvery-th call (request, progress and answer) left out, without
	// changing anything else: two tapes of one seed, one with these set,
	// differ in exactly those calls (SynthSmall and SynthRealistic).
	ChangeEvery, DropEvery int
}

// SynthProfile is a shape of synthetic tape.
type SynthProfile int

const (
	// SynthDefault: the shape described at Synthesize.
	SynthDefault SynthProfile = iota
	// SynthSmall: one server "s", tools/call {"name":"echo","arguments":{"n":N}}
	// requests, a progress notification and a two-byte answer each, in
	// order, 1 ms apart (about 130 bytes a message). No lifecycle records.
	SynthSmall
	// SynthRealistic: per server a $transport/start, initialize,
	// notifications/initialized and tools/list, then tools/call requests
	// with 1–4 KiB of arguments, up to 16 outstanding at once and answered
	// out of order; 3% of the answers 64 KiB, 2% JSON-RPC errors and 1% a
	// tool's isError; 10% of the messages progress notifications carrying
	// an outstanding call's progressToken (about 2 KB a message).
	SynthRealistic
)

// Synthesize writes a realistic synthetic tape for benchmarks and load
// tests: per server a $transport/start, initialize and tools/list, then
// tools/call requests with 1–4 KiB of arguments, their responses (one in a
// hundred carrying a 64 KiB result, one in twenty an error), and about 10%
// notifications (progress and logging). It returns the bytes written.
func Synthesize(w io.Writer, o SynthOptions) (int64, error) {
	switch o.Profile {
	case SynthSmall:
		return synthSmall(w, o)
	case SynthRealistic:
		return synthRealistic(w, o)
	}
	if len(o.Servers) == 0 {
		o.Servers = []string{"synth"}
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: bw}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	filler := strings.Repeat("lorem ipsum dolor sit amet consectetur adipiscing elit ", 1300) // ~70 KiB
	now := o.Start
	n := 0
	ids := make(map[string]int, len(o.Servers))
	line := func(server, dir, body string) {
		fmt.Fprintf(cw, `%s,"_meta":{"dir":"%s","server":"%s","ts":"%s"}}`+"\n", body[:len(body)-1], dir, server, now.Format(TimeFormat))
		n++
	}
	for _, s := range o.Servers {
		if n >= o.Messages {
			break
		}
		line(s, "lifecycle", `{"jsonrpc":"2.0","method":"$transport/start","params":{"command":"synth"}}`)
	}
	for n < o.Messages {
		s := o.Servers[rng.IntN(len(o.Servers))]
		id := ids[s]
		ids[s]++
		now = now.Add(time.Duration(1+rng.IntN(20)) * time.Millisecond)
		switch id {
		case 0:
			line(s, "send", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"synth","version":"1.0"}}}`, id))
			now = now.Add(3 * time.Millisecond)
			line(s, "recv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"%s","version":"1.0"}}}`, id, s))
			continue
		case 1:
			line(s, "send", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, id))
			now = now.Add(2 * time.Millisecond)
			line(s, "recv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}},{"name":"fetch","inputSchema":{"type":"object"}}]}}`, id))
			continue
		}
		argLen := 1024 + rng.IntN(3*1024)
		off := rng.IntN(len(filler) - argLen)
		tool := [...]string{"search", "fetch", "summarize"}[rng.IntN(3)]
		line(s, "send", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"query":"%s","limit":%d},"_meta":{"progressToken":%d}}}`, id, tool, filler[off:off+argLen], 1+rng.IntN(50), id))
		if n < o.Messages && rng.IntN(10) < 2 { // with the ~10% overall share of notifications
			now = now.Add(time.Duration(rng.IntN(5)) * time.Millisecond)
			if rng.IntN(2) == 0 {
				line(s, "recv", fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,"progress":50,"total":100}}`, id))
			} else {
				line(s, "recv", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"working"}}`)
			}
		}
		if n >= o.Messages {
			break
		}
		now = now.Add(time.Duration(1+rng.IntN(200)) * time.Millisecond)
		switch r := rng.IntN(100); {
		case r == 0:
			line(s, "recv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}]}}`, id, filler[:64<<10]))
		case r < 5:
			line(s, "recv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":"invalid arguments for %s"}}`, id, tool))
		default:
			line(s, "recv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}],"isError":false}}`, id, filler[off:off+64+rng.IntN(256)]))
		}
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, cw.err
}

func synthSmall(w io.Writer, o SynthOptions) (int64, error) {
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: bw}
	for i := 0; i < o.Messages; i++ {
		ts := o.Start.Add(time.Duration(i) * time.Millisecond).Format(TimeFormat)
		id := i / 3
		if o.DropEvery > 0 && id%o.DropEvery == o.DropEvery-1 {
			continue
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(cw, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"n":%d}},"_meta":{"dir":"send","server":"s","ts":%q}}`+"\n", id, id, ts)
		case 1:
			fmt.Fprintf(cw, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1},"_meta":{"dir":"recv","server":"s","ts":%q}}`+"\n", ts)
		case 2:
			text := "ok"
			if o.ChangeEvery > 0 && id%o.ChangeEvery == 0 {
				text = "changed"
			}
			fmt.Fprintf(cw, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%q}]},"_meta":{"dir":"recv","server":"s","ts":%q}}`+"\n", id, text, ts)
		}
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, cw.err
}

func synthRealistic(w io.Writer, o SynthOptions) (int64, error) {
	if len(o.Servers) == 0 {
		o.Servers = []string{"synth"}
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: bw}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	// Words rather than one repeated phrase, so that text is not all alike.
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure reprehenderit in voluptate velit esse cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non proident sunt culpa qui officia deserunt mollit anim id est laborum")
	var fb strings.Builder
	for fb.Len() < 140<<10 {
		fb.WriteString(words[rng.IntN(len(words))])
		fb.WriteByte(' ')
	}
	filler := fb.String()
	now := o.Start
	n := 0
	var buf []byte
	line := func(server, dir string, body []byte) {
		buf = append(buf[:0], body[:len(body)-1]...)
		buf = append(buf, `,"_meta":{"dir":"`...)
		buf = append(buf, dir...)
		buf = append(buf, `","server":"`...)
		buf = append(buf, server...)
		buf = append(buf, `","ts":"`...)
		buf = now.AppendFormat(buf, TimeFormat)
		buf = append(buf, "\"}}\n"...)
		cw.Write(buf)
		n++
	}
	// emit writes a message of a call, or counts it as written when the
	// call is left out, so that the rest of the tape stays the same.
	emit := func(server, dir string, body []byte, dropped bool) {
		if dropped {
			n++
			return
		}
		line(server, dir, body)
	}
	type pending struct {
		id, call int
		tool     string
		dropped  bool
	}
	type server struct {
		name  string
		next  int // the next id
		calls int // tools/calls sent
		open  []pending
	}
	servers := make([]*server, len(o.Servers))
	for i, s := range o.Servers {
		servers[i] = &server{name: s}
		if n < o.Messages {
			line(s, "lifecycle", []byte(`{"jsonrpc":"2.0","method":"$transport/start","params":{"command":"synth"}}`))
		}
	}
	var body []byte
	for n < o.Messages {
		s := servers[rng.IntN(len(servers))]
		now = now.Add(time.Duration(rng.IntN(4000)) * time.Microsecond)
		switch s.next {
		case 0:
			line(s.name, "send", []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"synth","version":"1.0"}}}`))
			now = now.Add(3 * time.Millisecond)
			line(s.name, "recv", fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"%s","version":"1.0"}}}`, s.name))
			line(s.name, "send", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			s.next++
			continue
		case 1:
			line(s.name, "send", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			now = now.Add(2 * time.Millisecond)
			line(s.name, "recv", []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search","inputSchema":{"type":"object"}},{"name":"fetch","inputSchema":{"type":"object"}},{"name":"summarize","inputSchema":{"type":"object"}}]}}`))
			s.next++
			continue
		}
		r := rng.IntN(100)
		switch {
		case r < 10 && len(s.open) > 0: // progress on an outstanding call
			p := s.open[rng.IntN(len(s.open))]
			body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,"progress":%d,"total":100}}`, p.id, 1+rng.IntN(99))
			emit(s.name, "recv", body, p.dropped)
		case r < 55 && len(s.open) < 16 || len(s.open) == 0: // a new call
			id := s.next
			s.next++
			argLen := 1024 + rng.IntN(3*1024)
			off := rng.IntN(len(filler) - argLen)
			tool := [...]string{"search", "fetch", "summarize"}[rng.IntN(3)]
			p := pending{id: id, call: s.calls, tool: tool, dropped: o.DropEvery > 0 && s.calls%o.DropEvery == o.DropEvery-1}
			s.calls++
			body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"query":"%s","limit":%d},"_meta":{"progressToken":%d}}}`, id, tool, filler[off:off+argLen], 1+rng.IntN(50), id)
			emit(s.name, "send", body, p.dropped)
			s.open = append(s.open, p)
		default: // answer an outstanding call, not necessarily the oldest
			k := rng.IntN(len(s.open))
			p := s.open[k]
			s.open = append(s.open[:k], s.open[k+1:]...)
			changed := ""
			if o.ChangeEvery > 0 && p.call%o.ChangeEvery == 0 {
				changed = "changed "
			}
			switch a := rng.IntN(100); {
			case a < 3:
				body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s%s"}]}}`, p.id, changed, filler[a<<10:a<<10+64<<10])
			case a < 5:
				body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":"%sinvalid arguments for %s"}}`, p.id, changed, p.tool)
			case a < 6:
				body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s%s failed"}],"isError":true}}`, p.id, changed, p.tool)
			default:
				off := rng.IntN(len(filler) - 2048)
				body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s%s"}],"isError":false}}`, p.id, changed, filler[off:off+64+rng.IntN(1024)])
			}
			emit(s.name, "recv", body, p.dropped)
		}
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, cw.err
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// BenchMessages is the size of a benchmark's realistic tape: the number in
// $TAPEDECK_BENCH_MESSAGES (1000000 for the 1.9 GB tape), or def.
func BenchMessages(def int) int {
	if v, err := strconv.Atoi(os.Getenv("TAPEDECK_BENCH_MESSAGES")); err == nil && v > 0 {
		return v
	}
	return def
}

// Yardstick is what a bulk benchmark's time is held to, measured on the
// same file in the same process, interleaved with the work (the machine is
// shared: a ratio of times taken minutes apart says little): Stats is what
// `tapedeck stats` does (OpenIndex, ComputeStats, AddContextCosts), Lines is
// counting the file's lines in Go through a 1 MiB buffer (`wc -l`'s work).
// Call Measure once an iteration (timer stopped), then Report.
//
// The machine's other load stretches wall times unevenly, so Report also
// gives the ratio of CPU times (x-stats-cpu: the process's CPU time during
// the work over that of stats), which other load leaves alone.
type Yardstick struct {
	Path         string
	Stats, Lines time.Duration // totals over the Measure calls
	Messages     int

	cpu0, measureCPU, statsCPU time.Duration
}

// Measure times stats and the line count of y.Path once each, adding them
// to the totals.
func (y *Yardstick) Measure() error {
	c0 := processCPU()
	if y.cpu0 == 0 {
		y.cpu0 = c0
	}
	defer func() { y.measureCPU += processCPU() - c0 }()
	start := time.Now()
	x, err := OpenIndex(y.Path)
	if err != nil {
		return err
	}
	st := ComputeStats(x, "")
	AddContextCosts(&st, x)
	y.Stats += time.Since(start)
	y.Messages = st.Messages
	x.Close()
	y.statsCPU += processCPU() - c0
	start = time.Now()
	if _, _, err := countLines(y.Path); err != nil {
		return err
	}
	y.Lines += time.Since(start)
	return nil
}

func countLines(path string) (int, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int
	var size int64
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		size += int64(k)
		if err == io.EOF {
			return n, size, nil
		}
		if err != nil {
			return n, size, err
		}
	}
}

// Report adds the ratios of work (the benchmark's total time, over the
// same iterations as the Measure calls) to the yardstick to a benchmark's
// metrics (b.ReportMetric): x-stats and x-wc-l, and stats' time an
// iteration.
func (y *Yardstick) Report(b interface{ ReportMetric(float64, string) }, work time.Duration, iterations int) {
	b.ReportMetric(float64(work)/float64(y.Stats), "x-stats")
	b.ReportMetric(float64(work)/float64(y.Lines), "x-wc-l")
	b.ReportMetric(float64(y.Stats.Milliseconds())/float64(iterations), "stats-ms")
	if cpu := processCPU() - y.cpu0 - y.measureCPU; y.statsCPU > 0 && y.cpu0 > 0 {
		b.ReportMetric(float64(cpu)/float64(y.statsCPU), "x-stats-cpu")
	}
}

// processCPU is the process's user and system CPU time so far, from
// /proc/self/stat (0 where there is none), in 10 ms ticks.
func processCPU() time.Duration {
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces) in parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// WriteSynth writes a synthetic tape to path (see Synthesize) and returns
// its size.
func WriteSynth(path string, o SynthOptions) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := Synthesize(f, o)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// BenchProfile is one of the tapes every bulk benchmark runs on.
type BenchProfile struct {
	Name string
	Opts SynthOptions
}

// BenchProfiles are the tapes every bulk benchmark runs on: "small", a
// million SynthSmall messages (about 130 MB), and "realistic",
// BenchMessages(100 000) SynthRealistic messages (about 200 MB; 1.9 GB with
// TAPEDECK_BENCH_MESSAGES=1000000).
func BenchProfiles() []BenchProfile {
	return []BenchProfile{
		{"small", SynthOptions{Messages: 1_000_000, Seed: 1, Profile: SynthSmall}},
		{"realistic", SynthOptions{Messages: BenchMessages(100_000), Seed: 1, Profile: SynthRealistic}},
	}
}
