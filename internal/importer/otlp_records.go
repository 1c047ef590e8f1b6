package importer

import (
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// recordLines writes the records a trace carries whole. A record in the
// shape tapedeck writes (an object whose last member, after a comma, is
// its _meta {dir, server, ts} of plain strings; no other _meta or
// _tapedeck at its top) is read in one walk and its tape line formatted
// into a batch written a megabyte at a time: the line plainRecord writes,
// without its second and third walks (RecordMeta, StripMeta, Valid) and
// copies. Any other record is writeRecord's, as before.
type recordLines struct {
	out     *out
	o       Options
	scratch []byte // the record's text
	batch   []byte // tape lines not yet written
}

const recordBatch = 1 << 20

// write writes r's tape line.
func (rl *recordLines) write(r carriedRecord) error {
	rl.scratch = r.text(rl.scratch[:0])
	if rl.plain(rl.scratch) {
		if len(rl.batch) >= recordBatch {
			return rl.flush()
		}
		return nil
	}
	if err := rl.flush(); err != nil {
		return err
	}
	return writeRecord(rl.out, rl.scratch, rl.o)
}

// flush writes the batch.
func (rl *recordLines) flush() error {
	if len(rl.batch) == 0 {
		return nil
	}
	err := rl.out.w.WriteLines(rl.batch)
	rl.batch = rl.batch[:0]
	return err
}

// plain appends line's tape line to the batch when line is in the shape
// above and plainRecord would write it; false, appending nothing, for any
// other (line as it was).
func (rl *recordLines) plain(line []byte) bool {
	n := len(line)
	if n < 2 || line[0] != '{' || line[n-1] != '}' {
		return false
	}
	members, metas, alts := 0, 0, 0
	prevEnd, metaStart, metaEnd, lastEnd := 0, 0, 0, 1
	end := jsonscan.ObjectEnd(line, 0, 1, func(k, v []byte) {
		members++
		vs := cap(line) - cap(v) // v's offset in line
		switch string(k) {
		case "_meta":
			metas++
			prevEnd, metaStart, metaEnd = lastEnd, vs, vs+len(v)
		case tape.AltMetaKey:
			alts++
		}
		lastEnd = vs + len(v)
	})
	// StripMeta cuts from the end of the previous value to the end of
	// _meta's: the message is line[:prevEnd] and its closing brace.
	if end != n || members < 2 || metas != 1 || alts != 0 || metaEnd != n-1 || string(line[prevEnd:metaStart]) != `,"_meta":` {
		return false
	}
	d, srv, t, ok := plainMeta(line[metaStart:metaEnd])
	if !ok {
		return false
	}
	line[prevEnd] = '}'
	msg := line[:prevEnd+1] // valid: line was, less one whole member
	if h := rl.out.peek.Peek(msg); !h.Plain || h.Kind == tape.KindInvalid {
		line[prevEnd] = ',' // writeRecord's as it was
		return false
	}
	if rl.o.Server != "" {
		srv = rl.o.Server
	}
	// out.plain's Encoder and counts, the line into the batch.
	k := encKey{d, srv}
	e := rl.out.encs[k]
	if e == nil {
		if rl.out.encs == nil {
			rl.out.encs = map[encKey]*tape.Encoder{}
		}
		e = tape.NewEncoder(d, srv).KeepMicroseconds()
		rl.out.encs[k] = e
		rl.out.servers[srv] = true
	}
	rl.batch = e.AppendLinePlain(rl.batch, msg, t, nil)
	rl.out.res.Messages++
	return true
}
