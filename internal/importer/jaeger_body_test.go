package importer

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// readBody reads what io.ReadAll of the body bounded at max reads,
// whether the answer gives its length or is chunked.
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
			if err != nil {
				t.Fatal(err)
			}
			want := body[:min(int64(len(body)), max)]
			if !bytes.Equal(got, want) {
				t.Errorf("%s, max %d: read %d bytes, want %d", q, max, len(got), len(want))
			}
		}
	}
}
