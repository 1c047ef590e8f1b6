package record

// The recording core
//
// The stdio shim (Stdio) and the HTTP proxy (Proxy) record through one
// core, as go-vcr's recorder serves RoundTrip and HTTPMiddleware with one
// executeAndRecord:
//
//   - a recorder owns the tape's destination (one whole-line write at a
//     time), the server's name, the redaction rules, the clock, and the
//     first error met writing the tape (reported once, at the end);
//   - a sink writes the records of one stream of messages (a relay's
//     direction, the proxy's direction, lifecycle records): a plain message
//     with nothing to redact takes the fast path, encoded by a tape.Encoder
//     straight into its lineBatch with no allocation, its extra _meta
//     members (the proxy's HTTP dialect) encoded by a metaExtra; anything
//     else (batches, invalid frames, redaction) goes through a tape.Writer
//     into the same batch, with the same members as a map;
//   - a lineBatch collects the lines of one chunk, so they reach the tape
//     in one write, before the chunk is forwarded.

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// recorder is what the shim and the proxy share about one recording.
type recorder struct {
	dest   *tapeDest
	server string
	redact *tape.Redactor // nil: no rules
	now    func() time.Time

	errMu sync.Mutex
	err   error // the first error writing the tape
}

func newRecorder(w io.Writer, server string, r *tape.Redactor, now func() time.Time) *recorder {
	if now == nil {
		now = time.Now
	}
	if r != nil && r.Empty() {
		r = nil
	}
	rc := &recorder{server: server, redact: r, now: now}
	rc.dest = &tapeDest{w: w, lost: rc.lostRecord}
	return rc
}

// lostRecord is the line that says what a failing tape lost.
func (rc *recorder) lostRecord(bytes, writes int64) []byte {
	var b lineBuffer
	_ = tape.NewWriter(&b).WriteLifecycle(tape.MethodLost, map[string]any{"bytes": bytes, "writes": writes,
		"reason": "writing the tape failed (a full disk?); these records are missing"}, tape.Meta{Server: rc.server, Time: rc.now()})
	return b.b
}

// lineBuffer collects a Writer's line.
type lineBuffer struct{ b []byte }

func (l *lineBuffer) Write(p []byte) (int, error) { l.b = append(l.b, p...); return len(p), nil }

// note keeps the first error writing the tape; the recording goes on.
func (rc *recorder) note(err error) {
	if err == nil {
		return
	}
	rc.errMu.Lock()
	defer rc.errMu.Unlock()
	if rc.err == nil {
		rc.err = fmt.Errorf("record: write tape: %w", err)
	}
}

// Err returns the first error writing the tape, if any.
func (rc *recorder) Err() error {
	rc.errMu.Lock()
	defer rc.errMu.Unlock()
	return rc.err
}

// direct returns a sink that writes each record to the tape at once (for
// lifecycle records, and the slow paths of messages outside a relay).
func (rc *recorder) direct() *sink {
	return &sink{rc: rc, w: tape.NewWriter(rc.dest)}
}

// stream returns a sink for one direction of messages, writing into its
// own batch (flush it to reach the tape), with the fast path.
func (rc *recorder) stream(dir tape.Dir) (*sink, *lineBatch) {
	b := &lineBatch{dest: rc.dest}
	return &sink{rc: rc, w: tape.NewWriter(b), enc: tape.NewEncoder(dir, rc.server), lines: &b.buf}, b
}

// metaExtra are the _meta members a record carries besides dir, server
// and ts: encoded straight into the line on the fast path, or as a map for
// tape.Writer; both give the same members.
type metaExtra interface {
	appendJSON(b []byte) []byte
	fields() map[string]any
}
