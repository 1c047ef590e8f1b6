package record

import (
	"bytes"
	"errors"
	"io"
)

const (
	initialBuffer = 1 << 20
	// keepBuffer is the largest buffer kept after a long line has gone: a
	// megabyte message grows the buffer, but a long session stays flat.
	keepBuffer = 4 << 20
)

// maxLine is the longest line a relay holds back to record whole before
// forwarding it; the rest of a longer one (a base64 blob without end, a
// server that never writes a newline) is forwarded as it comes and
// recorded by size and prefix only, so a relay's memory stays bounded.
const maxLine = 64 << 20

// oversizePrefix is how much of an over-long line its record keeps.
const oversizePrefix = 4 << 10

// relayLines copies r to w in whole lines, of any length up to maxLine.
// Before a run of complete lines is forwarded (in one Write), record is
// called on each line in order, without its line ending, then commit (if
// not nil) once, so the tape holds a message before the peer sees it. A
// last line without a newline is recorded and forwarded at end of input. A
// line longer than maxLine is forwarded as it comes instead, and oversize
// (if not nil) is called once it ends (or the input does) with its size,
// its first bytes and whether a newline ended it. Forwarding stops at the
// first error from w (the peer is gone), but reading and recording go on
// until r ends, so the other side never blocks on a full pipe; that error
// is returned at the end unless reading failed first.
func relayLines(r io.Reader, w io.Writer, record func(line []byte), commit func(), oversize func(size int64, prefix []byte, ended bool)) error {
	return relayLinesMax(r, w, maxLine, record, commit, oversize)
}

func relayLinesMax(r io.Reader, w io.Writer, limit int, record func(line []byte), commit func(), oversize func(size int64, prefix []byte, ended bool)) error {
	return relayFrames(r, w, limit, false, record, commit, oversize)
}

// relayOwnLines is relayLines for a relay that forwards complete lines
// itself (the rules relay, which may change, drop or hold them): record
// gets each line with its line ending as it came, and commit is called
// once a read's lines are all handed over; only the pieces of an over-long
// line are forwarded to w as they come.
func relayOwnLines(r io.Reader, w io.Writer, record func(raw []byte), commit func(), oversize func(size int64, prefix []byte, ended bool)) error {
	return relayFrames(r, w, maxLine, true, record, commit, oversize)
}

func relayFrames(r io.Reader, w io.Writer, limit int, self bool, record func(line []byte), commit func(), oversize func(size int64, prefix []byte, ended bool)) error {
	buf := make([]byte, min(initialBuffer, limit+1))
	start, end, scanned := 0, 0, 0
	var werr error
	forward := func(b []byte) {
		if commit != nil {
			commit()
		}
		if werr == nil && w != nil {
			_, werr = w.Write(b)
		}
	}
	// An over-long line in progress: its size so far and first bytes.
	long := false
	var longSize int64
	var longPrefix []byte
	endLong := func(ended bool) {
		if oversize != nil {
			oversize(longSize, longPrefix, ended)
		}
		long, longSize, longPrefix = false, 0, nil
	}
	for {
		n, rerr := r.Read(buf[end:])
		end += n
		i := start
		for {
			k := bytes.IndexByte(buf[start+scanned:end], '\n')
			if k < 0 {
				scanned = end - start
				break
			}
			stop := start + scanned + k
			if long {
				// The end of an over-long line: forward its tail now.
				longSize += int64(stop - start)
				if start > i {
					forward(buf[i:start])
				}
				forward(buf[start : stop+1])
				endLong(true)
				start, scanned, i = stop+1, 0, stop+1
				continue
			}
			if self {
				record(buf[start : stop+1])
			} else {
				record(trimCR(buf[start:stop]))
			}
			start, scanned = stop+1, 0
		}
		if self && start > i && commit != nil {
			commit()
		} else if start > i {
			forward(buf[i:start])
		}
		if !long && end-start > limit {
			// Too long to hold back: forward it as it comes.
			long = true
			longPrefix = bytes.Clone(buf[start : start+min(oversizePrefix, end-start)])
		}
		if long && end > start {
			longSize += int64(end - start)
			forward(buf[start:end])
			start, end, scanned = 0, 0, 0
		}
		if rerr != nil {
			switch {
			case long:
				endLong(false)
			case end > start && self:
				record(buf[start:end])
				if commit != nil {
					commit()
				}
			case end > start:
				record(trimCR(buf[start:end]))
				forward(buf[start:end])
			}
			if errors.Is(rerr, io.EOF) || isClosed(rerr) {
				return werr
			}
			return rerr
		}
		switch {
		case start == end:
			start, end = 0, 0
			if len(buf) > keepBuffer {
				buf = make([]byte, initialBuffer)
			}
		case end == len(buf) && start > 0:
			end = copy(buf, buf[start:end])
			start = 0
		case end == len(buf):
			grown := make([]byte, min(2*len(buf), limit+1))
			copy(grown, buf[:end])
			buf = grown
		}
	}
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}
