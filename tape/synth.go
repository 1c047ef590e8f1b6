package tape

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"
)

// SynthOptions shapes a synthetic tape made by Synthesize.
type SynthOptions struct {
	Messages int       // how many messages to write (lifecycle records included)
	Seed     uint64    // the same seed gives the same tape
	Servers  []string  // default {"synth"}
	Start    time.Time // ts of the first message; default 2026-01-01
}

// Synthesize writes a realistic synthetic tape for benchmarks and load
// tests: per server a $transport/start, initialize and tools/list, then
// tools/call requests with 1–4 KiB of arguments, their responses (one in a
// hundred carrying a 64 KiB result, one in twenty an error), and about 10%
// notifications (progress and logging). It returns the bytes written.
func Synthesize(w io.Writer, o SynthOptions) (int64, error) {
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
