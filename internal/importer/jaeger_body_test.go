package importer

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// readBody reads the body whole when it is at most max bytes, whether the
// answer gives its length or is chunked, and says an answer over max is.
func TestReadBody(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("chunked") == "" {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		w.Write(body[len(body)/2:])
	}))
	defer srv.Close()
	for _, q := range []string{"", "?chunked=1"} {
		for _, max := range []int64{1 << 20, int64(len(body)), 1234} {
			resp, err := http.Get(srv.URL + q)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readBody(resp, max)
			resp.Body.Close()
			if int64(len(body)) > max {
				// Over the cap: an error that says so (announced, or
				// read), not the answer cut short.
				want := "more than 1234 bytes read"
				if q == "" {
					want = "10000 bytes announced"
				}
				if err == nil || !strings.Contains(err.Error(), "over the 1234 bytes limit ("+want+")") || !strings.Contains(err.Error(), "--since") {
					t.Errorf("%s, max %d: read %d bytes (%v), want an error saying the answer is over the limit (%s) and naming --since", q, max, len(got), err, want)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, body) {
				t.Errorf("%s, max %d: read %d bytes, want %d", q, max, len(got), len(body))
			}
		}
	}
}

// An answer large enough for prefault reads as it was sent, and prefault
// leaves what is written into the buffer while it runs as it was written.
func TestReadBodyLarge(t *testing.T) {
	body := make([]byte, 40<<20+12345)
	for i := range body {
		body[i] = byte(i*7 + i>>12)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readBody(resp, 1<<30)
	resp.Body.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("read %d bytes (%v), want the %d sent", len(got), err, len(body))
	}

	b := make([]byte, len(body))
	stop := prefault(b)
	for i := range b { // while it runs
		b[i] = body[i]
	}
	stop()
	if !bytes.Equal(b, body) {
		t.Error("prefault changed bytes written while it ran")
	}
}
