// Command echoserver is a trivial line-based JSON-RPC server for the
// recorder's benchmarks and crash tests: each request
// {"jsonrpc":"2.0","id":ID,"method":M,"params":P} is answered with
// {"jsonrpc":"2.0","id":ID,"result":P}; notifications and other lines get no
// answer. It finds id and params by scanning bytes, not by decoding, so the
// server costs as little as possible next to what it is compared with.
package main

import (
	"bufio"
	"bytes"
	"os"
)

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	var resp []byte
	for {
		line, err := in.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = in.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			resp = answer(resp[:0], bytes.TrimRight(line, "\r\n"))
			if len(resp) > 0 {
				out.Write(resp)
			}
		}
		// Flush when no more input is waiting: replies go out promptly,
		// and pipelined requests are answered in batches.
		if in.Buffered() == 0 || err != nil {
			if out.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// answer appends the response to a request line of the shape the tests
// send: "id" before "params", "params" last.
func answer(b, line []byte) []byte {
	i := bytes.Index(line, []byte(`"id":`))
	p := bytes.Index(line, []byte(`"params":`))
	if i < 0 || p < 0 || p < i || !bytes.HasSuffix(line, []byte("}")) {
		return b
	}
	id := line[i+5:]
	id = id[:bytes.IndexByte(id, ',')]
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, line[p+9:len(line)-1]...)
	return append(b, "}\n"...)
}
