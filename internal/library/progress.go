package library

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// progress reports a long refresh, or text pass, on Options.Progress: nothing for one
// that ends within ProgressAfter, then a line at that point and one every
// few seconds, and a last line when it is done.
type progress struct {
	read  atomic.Int64 // bytes of tapes read so far
	total int64
	tapes int
	text  bool // a text pass (textpass.go), not a refresh
	stop  chan struct{}
	done  chan bool // whether a line was written
}

// Progress is how far a refresh has read the tapes it indexes.
type Progress struct {
	Tapes       int   // tapes being indexed
	Read, Total int64 // bytes of them read, and to read
}

// Indexing reports the progress of a Refresh reading tapes, from any
// goroutine while it runs; false when no refresh is reading tapes (none
// runs, or it is still looking for the tapes that changed).
func (l *Library) Indexing() (Progress, bool) {
	p := l.reading.Load()
	if p == nil {
		return Progress{}, false
	}
	return Progress{Tapes: p.tapes, Read: p.read.Load(), Total: p.total}, true
}

const progressEvery = 3 * time.Second

func (l *Library) startProgress(tapes int, total int64, text bool) *progress {
	p := &progress{total: total, tapes: tapes, text: text, stop: make(chan struct{}), done: make(chan bool, 1)}
	w, after := l.opts.Progress, l.opts.ProgressAfter
	if w == nil {
		p.done <- false
		return p
	}
	if after <= 0 {
		after = time.Second
	}
	go func() {
		wrote := false
		timer := time.NewTimer(after)
		defer timer.Stop()
		for {
			select {
			case <-p.stop:
				p.done <- wrote
				return
			case <-timer.C:
				fmt.Fprintf(w, "tapedeck: indexing %s%d tape(s): %s of %s read\n", p.of(), p.tapes, mb(p.read.Load()), mb(p.total))
				wrote = true
				timer.Reset(progressEvery)
			}
		}
	}()
	return p
}

// end stops the reports; after a report, it says how the refresh ended.
func (p *progress) end(w io.Writer, start time.Time, err error) {
	close(p.stop)
	if !<-p.done {
		return
	}
	if err != nil {
		what := "indexing"
		if p.text {
			what = "indexing the text"
		}
		fmt.Fprintf(w, "tapedeck: %s stopped after %s of %s: %v\n", what, mb(p.read.Load()), mb(p.total), err)
		return
	}
	fmt.Fprintf(w, "tapedeck: indexed %s%d tape(s), %s read, in %s\n", p.of(), p.tapes, mb(p.read.Load()), time.Since(start).Round(100*time.Millisecond))
}

// of names what is indexed before the tapes' number.
func (p *progress) of() string {
	if p.text {
		return "the text of "
	}
	return ""
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
