package library

// Indexing a grown tape from its old end.
//
// A tape being recorded only grows. Reading it whole again after each
// appended line costs seconds on a big tape, so a tape whose indexed bytes
// are unchanged is read from where its indexing stopped. Unchanged is told
// by a fingerprint (tapes.tail): a hash of the first and the last
// fingerprintBytes of the indexed part, which must still end with a
// newline. A tape rewritten in place with other bytes there is read whole.
//
// What follows the old end may answer, cancel or pair with what came
// before it, so the pairing starts again from a little context
// (tapes.resume): the messages of the indexed part whose meaning a later
// line can change (requests still pending or cancelled, orphan responses,
// lifecycle records, initialize requests, cancellations) and the last
// message, whose time the next one follows. They are re-read from the tape
// and indexed ahead of the new bytes by the same tape.Index a whole read
// uses, so pairing stays one rule in one place; the counts are the
// differences between that index and one of the context alone. A tape with
// more than maxResume such messages, or one in a batch, is read whole.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

const (
	maxResume        = 4096
	fingerprintBytes = 4096
)

// errNoResume says a tape cannot be read from its old end: read it whole.
var errNoResume = errors.New("the tape cannot be read from its old end")

// resumeEntry is one context message: where it is and its status when
// indexed.
type resumeEntry struct {
	seq    int
	off    int64
	n      int
	status string
}

// prior is what the index holds of a tape's indexed part.
type prior struct {
	id     int64
	size   int64
	mtime  int64
	sum    summary
	resume []resumeEntry
}

// needed reports whether a later line can change what r means.
func needed(r *row) bool {
	switch r.kind {
	case tape.KindRequest:
		return r.status == "pending" || r.status == "cancelled" || r.method == "initialize"
	case tape.KindResponse:
		return r.status == "orphan"
	case tape.KindLifecycle:
		return true
	case tape.KindNotification:
		return r.method == "notifications/cancelled"
	}
	return false
}

var statusCodes = []string{"", "ok", "error", "tool-error", "pending", "cancelled", "late", "orphan", "negotiation"}

func appendResume(b []byte, es []resumeEntry) []byte {
	b = append(b, 1) // format
	for _, e := range es {
		code := 0
		for i, s := range statusCodes {
			if s == e.status {
				code = i
			}
		}
		b = binary.AppendUvarint(b, uint64(e.seq))
		b = binary.AppendUvarint(b, uint64(e.off))
		b = binary.AppendUvarint(b, uint64(e.n))
		b = append(b, byte(code))
	}
	return b
}

func parseResume(b []byte) ([]resumeEntry, error) {
	if len(b) == 0 || b[0] != 1 {
		return nil, errNoResume
	}
	b = b[1:]
	var out []resumeEntry
	for len(b) > 0 {
		var v [3]uint64
		for i := range v {
			x, k := binary.Uvarint(b)
			if k <= 0 {
				return nil, errNoResume
			}
			v[i], b = x, b[k:]
		}
		if len(b) == 0 || int(b[0]) >= len(statusCodes) {
			return nil, errNoResume
		}
		out = append(out, resumeEntry{seq: int(v[0]), off: int64(v[1]), n: int(v[2]), status: statusCodes[b[0]]})
		b = b[1:]
	}
	return out, nil
}

// fingerprint hashes the head and the tail of the first indexed bytes of
// r; nil when they do not end with a newline (a torn last line indexed as
// such: the rest of it would be another line to an append), or when the
// tape is shorter now (cut while it was read: the next refresh reads it).
func fingerprint(r io.ReaderAt, indexed int64) ([]byte, error) {
	if indexed == 0 {
		return nil, nil
	}
	head := make([]byte, min(indexed, fingerprintBytes))
	tail := make([]byte, min(indexed, fingerprintBytes))
	for _, rd := range []struct {
		b   []byte
		off int64
	}{{head, 0}, {tail, indexed - int64(len(tail))}} {
		if _, err := r.ReadAt(rd.b, rd.off); errors.Is(err, io.EOF) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
	}
	if tail[len(tail)-1] != '\n' {
		return nil, nil
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\n", indexed)
	h.Write(head)
	h.Write(tail)
	return h.Sum(nil), nil
}

// loadPrior returns what an append to the tape f needs, or nil when f must
// be read whole: it was never indexed as a tape, it shrank, or its indexed
// bytes changed.
func (l *Library) loadPrior(k known, f fileInfo) (*prior, error) {
	if !k.isTape || k.indexed == 0 || f.size < k.indexed {
		return nil, nil
	}
	var resume, tail []byte
	p := &prior{id: k.id, size: k.size, mtime: k.mtime}
	s := &p.sum
	var servers string
	var start, end sql.NullInt64
	err := l.db.QueryRow(`SELECT resume, tail, servers, client, client_version, protocol, start, end,
		messages, calls, rpc_errors, tool_errors, pending, warnings FROM tapes WHERE id = ?`, k.id).Scan(
		&resume, &tail, &servers, &s.client, &s.clientVersion, &s.protocol, &start, &end,
		&s.messages, &s.calls, &s.rpcErrors, &s.toolErrors, &s.pending, &s.warnings)
	if err != nil {
		return nil, err
	}
	if resume == nil || tail == nil {
		return nil, nil
	}
	if p.resume, err = parseResume(resume); err != nil {
		return nil, nil
	}
	fh, err := os.Open(f.path)
	if err != nil {
		return nil, nil // gone: the read says so
	}
	defer fh.Close()
	now, err := fingerprint(fh, k.indexed)
	if err != nil || !bytes.Equal(now, tail) {
		return nil, nil
	}
	s.isTape, s.indexed, s.initSeq = true, k.indexed, -1
	if servers != "" {
		s.servers = strings.Split(servers, "\t")
	}
	s.start, s.end = start.Int64, end.Int64
	return p, nil
}

// joined reads a then b as one source.
type joined struct {
	a []byte
	b io.ReaderAt
}

func (j joined) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if off < int64(len(j.a)) {
		n = copy(p, j.a[off:])
		if n == len(p) {
			return n, nil
		}
	}
	m, err := j.b.ReadAt(p[n:], off+int64(n)-int64(len(j.a)))
	return n + m, err
}

// readAppend indexes the bytes of f from t.prior's old end up to size,
// after the context messages re-read from the indexed part. It returns
// errNoResume, having sent nothing, when the context is not what it was.
// It calls decided once it no longer can.
func readAppend(ctx context.Context, t *tapeRows, f *os.File, size int64, decided func()) error {
	p := t.prior
	var buf []byte
	for _, e := range p.resume {
		start := len(buf)
		buf = append(buf, make([]byte, e.n)...)
		if _, err := f.ReadAt(buf[start:], e.off); err != nil {
			return errNoResume
		}
		if buf[start] != '{' || buf[len(buf)-1] != '}' {
			return errNoResume
		}
		buf = append(buf, '\n')
	}
	ctxLen := int64(len(buf))
	before := tape.NewIndex(bytes.NewReader(buf))
	if err := before.Extend(ctxLen, nil); err != nil || before.Len() != len(p.resume) {
		return errNoResume
	}
	src := joined{a: buf, b: io.NewSectionReader(plainReaderAt{f}, p.sum.indexed, size-p.sum.indexed)}
	x := tape.NewIndex(src)
	settled := time.Since(time.Unix(0, t.file.mtime)) > settle
	decided()
	if err := x.Extend(ctxLen+size-p.sum.indexed, func() bool { return settled }); err != nil {
		return err
	}
	s := &t.sum
	*s = p.sum
	s.initSeq = -1
	// The first initialize request, if it is the client's, is the first
	// context request named initialize.
	if s.client != "" {
		for j := range p.resume {
			if x.Entry(j).Method == "initialize" && x.Entry(j).Kind == tape.KindRequest {
				s.initSeq = p.resume[j].seq
				break
			}
		}
	}
	s.indexed = p.sum.indexed + x.Size() - ctxLen
	s.read = x.Size() - ctxLen
	rpc, tool := x.Failures()
	rpc0, tool0 := before.Failures()
	s.rpcErrors += rpc - rpc0 + x.StartFailures() - before.StartFailures()
	s.toolErrors += tool - tool0
	s.warnings += x.WarningCount() - before.WarningCount()
	for _, sv := range nonEmpty(x.Servers()) {
		if !contains(s.servers, sv) {
			s.servers = append(s.servers, sv)
		}
	}
	v := span{k: len(p.resume), ctx: p.resume, seqBase: p.sum.messages, offBase: p.sum.indexed, ctxLen: ctxLen}
	if err := emit(ctx, t, x, src, v); err != nil {
		return err
	}
	s.messages = p.sum.messages + x.Len() - len(p.resume)
	if t.read != nil {
		t.read.Add(s.read)
	}
	var err error
	t.tail, err = fingerprint(plainReaderAt{f}, s.indexed)
	return err
}
