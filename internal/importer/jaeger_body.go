package importer

import (
	"io"
	"net/http"
)

// readBody reads resp's body, at most max bytes: into one buffer of its
// Content-Length when it gives one (the answer is held whole, and
// io.ReadAll would grow and copy a buffer of hundreds of megabytes
// several times over), else as io.ReadAll does.
func readBody(resp *http.Response, max int64) ([]byte, error) {
	lr := io.LimitReader(resp.Body, max)
	if resp.ContentLength <= 0 {
		return io.ReadAll(lr)
	}
	b := make([]byte, 0, min(resp.ContentLength, max)+1)
	defer prefault(b[:cap(b)])()
	for {
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than it said: grow
		}
	}
}
