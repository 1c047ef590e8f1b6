package importer

import (
	"fmt"
	"io"
	"net/http"
)

// readBody reads resp's body, at most max bytes: into one buffer of its
// Content-Length when it gives one (the answer is held whole, and
// io.ReadAll would grow and copy a buffer of hundreds of megabytes
// several times over), else as io.ReadAll does. An answer over max bytes
// (announced, or read) is an error saying so: cut short, it would read as
// a JSON syntax error in a document that is fine.
func readBody(resp *http.Response, max int64) ([]byte, error) {
	if resp.ContentLength > max {
		return nil, overCap(fmt.Sprintf("%d bytes announced", resp.ContentLength), max)
	}
	lr := io.LimitReader(resp.Body, max+1) // a byte more tells a longer answer
	var b []byte
	if resp.ContentLength <= 0 {
		var err error
		if b, err = io.ReadAll(lr); err != nil {
			return b, err
		}
	} else {
		b = make([]byte, 0, resp.ContentLength+1)
		defer prefault(b[:cap(b)])()
		for {
			n, err := lr.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
			if err == io.EOF {
				break
			}
			if err != nil {
				return b, err
			}
			if len(b) == cap(b) {
				b = append(b, 0)[:len(b)] // longer than it said: grow
			}
		}
	}
	if int64(len(b)) > max {
		return nil, overCap("more than "+sizeName(max)+" read", max)
	}
	return b, nil
}

// overCap is the error of an answer over max bytes.
func overCap(what string, max int64) error {
	return fmt.Errorf("the Jaeger answer is over the %s limit (%s): narrow the query with --since (a shorter window), or import one trace with --trace ID", sizeName(max), what)
}

// sizeName is n bytes as the limit is said: "1 GB" for 1<<30.
func sizeName(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GB", n>>30)
	}
	return fmt.Sprintf("%d bytes", n)
}
