package tape

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// SynthTaskOptions shapes a synthetic tape of tasks made by SynthesizeTasks.
type SynthTaskOptions struct {
	Tasks int       // how many tasks
	Polls int       // tasks/get polls a task; the last one reports completed
	Seed  uint64    // the same seed gives the same tape
	Start time.Time // ts of the first message; default 2026-01-01
}

// SynthesizeTasks writes a synthetic tape of tasks (2025-11-25) for
// benchmarks: an initialize, then o.Tasks tools/calls sent with
// params.task, each answered at once with a CreateTaskResult (working),
// polled o.Polls times with tasks/get (working, the last completed), and
// fetched with tasks/result, as server-everything's task tools record.
// Up to 16 tasks run at once, their messages interleaved at random, a few
// milliseconds apart. It returns the bytes written.
func SynthesizeTasks(w io.Writer, o SynthTaskOptions) (int64, error) {
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: bw}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	now := o.Start
	var buf []byte
	line := func(dir string, body []byte) {
		buf = append(buf[:0], body[:len(body)-1]...)
		buf = append(buf, `,"_meta":{"dir":"`...)
		buf = append(buf, dir...)
		buf = append(buf, `","server":"synth","ts":"`...)
		buf = now.AppendFormat(buf, TimeFormat)
		buf = append(buf, "\"}}\n"...)
		cw.Write(buf)
	}
	line("send", []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"synth","version":"1.0"}}}`))
	now = now.Add(3 * time.Millisecond)
	line("recv", []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"synth","version":"1.0"}}}`))
	line("send", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	type running struct {
		id      string
		created time.Time
		polls   int // polls answered
	}
	var open []running
	next, started := 1, 0
	var body []byte
	for started < o.Tasks || len(open) > 0 {
		now = now.Add(time.Duration(1+rng.IntN(4000)) * time.Microsecond)
		if started < o.Tasks && (len(open) == 0 || len(open) < 16 && rng.IntN(4) == 0) {
			id := next
			next++
			t := running{id: fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()), created: now}
			started++
			body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"simulate-research-query","arguments":{"topic":"t%d"},"task":{"ttl":60000}}}`, id, started)
			line("send", body)
			now = now.Add(time.Millisecond)
			body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"result":{"task":{"taskId":"%s","status":"working","ttl":60000,"createdAt":"%s","lastUpdatedAt":"%s","pollInterval":300}}}`, id, t.id, t.created.Format(TimeFormat), now.Format(TimeFormat))
			line("recv", body)
			open = append(open, t)
			continue
		}
		k := rng.IntN(len(open))
		t := &open[k]
		id := next
		next++
		if t.polls < o.Polls {
			t.polls++
			status := "working"
			if t.polls == o.Polls {
				status = "completed"
			}
			body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"method":"tasks/get","params":{"taskId":"%s"}}`, id, t.id)
			line("send", body)
			now = now.Add(time.Millisecond)
			body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"result":{"taskId":"%s","status":"%s","ttl":60000,"createdAt":"%s","lastUpdatedAt":"%s","pollInterval":300}}`, id, t.id, status, t.created.Format(TimeFormat), now.Format(TimeFormat))
			line("recv", body)
			continue
		}
		body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"method":"tasks/result","params":{"taskId":"%s"}}`, id, t.id)
		line("send", body)
		now = now.Add(time.Millisecond)
		body = fmt.Appendf(body[:0], `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"report on task %s"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"%s"}}}}`, id, t.id, t.id)
		line("recv", body)
		open = append(open[:k], open[k+1:]...)
	}
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	return cw.n, cw.err
}
