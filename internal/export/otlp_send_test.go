package export

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// Spans the endpoint did not take are an error with the counts and what
// the endpoint answered, never a count of spans "sent".
func TestOTLPSendFailures(t *testing.T) {
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	for _, tc := range []struct {
		name, endpoint, want string
	}{
		{"dead port", mcptest.DeadEndpoint(t), "connection refused"},
		{"404", notFound.URL, "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var told atomic.Int32
			n, err := OTLP(context.Background(), nil, source(t, "t.jsonl", otlpTape), OTLPOptions{Endpoint: tc.endpoint, OnError: func(error) { told.Add(1) }})
			var se *SendError
			if !errors.As(err, &se) {
				t.Fatalf("OTLP to %s: %d sent, error %v; want a *SendError", tc.endpoint, n, err)
			}
			if n != 0 || se.Sent != 0 || se.Failed != 3 {
				t.Errorf("%d returned, %d sent, %d failed; want 0, 0, 3", n, se.Sent, se.Failed)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.endpoint) {
				t.Errorf("the error does not say what %s answered (%q): %v", tc.endpoint, tc.want, err)
			}
			if told.Load() != 1 {
				t.Errorf("OnError was told %d times, want once", told.Load())
			}
		})
	}
}

// An endpoint that accepts the spans: all counted as sent, no error.
func TestOTLPSendAccepted(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		posts.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	n, err := OTLP(context.Background(), nil, source(t, "t.jsonl", otlpTape), OTLPOptions{Endpoint: srv.URL})
	if err != nil || n != 3 || posts.Load() == 0 {
		t.Fatalf("%d sent in %d posts, error %v; want 3 sent, no error", n, posts.Load(), err)
	}
}
