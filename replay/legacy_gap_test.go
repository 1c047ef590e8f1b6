package replay

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// At speed 0 the legacy stream has the call's progress and its answer at
// once: the progress must be left progressGap to land before the answer is
// written, as over stdio (the TypeScript SDK drops progress read in one
// chunk with the answer that retires its handler).
func TestLegacyProgressGap(t *testing.T) {
	h, err := NewLegacyHandler(slowCallTape(t), EngineOptions{}, LegacyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type event struct {
		data string
		at   time.Time
	}
	events := make(chan event, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- event{d, time.Now()}
			}
		}
	}()
	endpoint := <-events
	post := func(body string) {
		r, err := http.Post(srv.URL+endpoint.data, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}
	post(init1125)
	<-events // the initialize answer
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`)
	var got []event
	for ev := range events {
		got = append(got, ev)
		if strings.Contains(ev.data, `"result"`) {
			break
		}
	}
	if len(got) != 4 {
		t.Fatalf("got %d events after tools/call, expected 3 progress and the answer: %v", len(got), got)
	}
	if gap := got[3].at.Sub(got[2].at); gap < progressGap {
		t.Errorf("the answer came %v after the last progress notification: expected at least %v", gap, progressGap)
	}
}
