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

// relayLines copies r to w in whole lines, of any length. Before a run of
// complete lines is forwarded (in one Write), record is called on each line
// in order, without its line ending, then commit (if not nil) once, so the
// tape holds a message before the peer sees it. A last line without a newline is recorded and forwarded at
// end of input. Forwarding stops at the first error from w (the peer is
// gone), but reading and recording go on until r ends, so the other side
// never blocks on a full pipe; that error is returned at the end unless
// reading failed first.
func relayLines(r io.Reader, w io.Writer, record func(line []byte), commit func()) error {
	buf := make([]byte, initialBuffer)
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
			record(trimCR(buf[start:stop]))
			start, scanned = stop+1, 0
		}
		if start > i {
			forward(buf[i:start])
		}
		if rerr != nil {
			if end > start {
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
			grown := make([]byte, 2*len(buf))
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
