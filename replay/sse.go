package replay

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// The Server-Sent Events framing that Streamable HTTP uses, kept to what
// MCP needs: a writer of data-only events and a reader of events' data and
// ids. (The record branch's replay/sse package was not there to share when
// this was written.)

// appendSSE appends one SSE event carrying data to b. Each line of data
// becomes a "data:" field, so a message with newlines survives.
func appendSSE(b, data []byte) []byte {
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		b = append(b, "data: "...)
		b = append(b, bytes.TrimSuffix(line, []byte{'\r'})...)
		b = append(b, '\n')
		if !more {
			break
		}
		data = rest
	}
	return append(b, '\n')
}

// sseEvent is one event read from a stream.
type sseEvent struct {
	Name string
	ID   string
	Data []byte
}

// readSSE calls fn with each event of r that has data, until r ends or fn
// returns false. Lines end with "\n" or "\r\n"; fields other than data,
// event and id are ignored, as are comments. There is no line-length
// limit: MCP messages can be megabytes long.
func readSSE(r io.Reader, fn func(sseEvent) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var ev sseEvent
	var data []byte
	hasData := false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 || err == nil {
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
			if len(line) == 0 {
				if hasData {
					ev.Data = data
					if !fn(ev) {
						return nil
					}
				}
				ev, data, hasData = sseEvent{}, nil, false
			} else if line[0] != ':' {
				field, value, _ := bytes.Cut(line, []byte{':'})
				value = bytes.TrimPrefix(value, []byte{' '})
				switch string(field) {
				case "data":
					if hasData {
						data = append(data, '\n')
					}
					data = append(data, value...)
					hasData = true
				case "event":
					ev.Name = string(value)
				case "id":
					ev.ID = string(value)
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
