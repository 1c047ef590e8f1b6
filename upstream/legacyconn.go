package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/tapedeck/tapedeck/internal/sse"
)

// LegacyConn is a Conn to a server on the legacy HTTP+SSE transport
// (2024-11-05): a GET opens the event stream, whose "endpoint" event names
// where to POST; the server's messages come as "message" events. Like
// HTTPConn it keeps each message's bytes as the server sent them.
type LegacyConn struct {
	client   *http.Client
	endpoint string // where messages are posted
	in       chan connMsg
	stop     context.CancelFunc // ends the stream
	wg       sync.WaitGroup
}

// DialLegacy opens the event stream at sseURL and waits for its endpoint
// event. The stream lasts until Close.
func DialLegacy(ctx context.Context, sseURL string, client *http.Client) (*LegacyConn, error) {
	if client == nil {
		client = http.DefaultClient
	}
	base, err := url.Parse(sseURL)
	if err != nil {
		return nil, fmt.Errorf("legacy SSE: %w", err)
	}
	sctx, stop := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, sseURL, nil)
	if err != nil {
		stop()
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		stop()
		return nil, fmt.Errorf("legacy SSE: GET %s: %w", sseURL, err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		stop()
		return nil, fmt.Errorf("legacy SSE: GET %s: expected 200 with an event stream (the 2024-11-05 HTTP+SSE transport), found %s %q %s", sseURL, resp.Status, resp.Header.Get("Content-Type"), bytes.TrimSpace(body))
	}
	c := &LegacyConn{client: client, in: make(chan connMsg, 256), stop: stop}
	r := sse.NewReader(resp.Body)
	endpoint := make(chan string, 1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer resp.Body.Close()
		named := false
		for {
			ev, err := r.Next()
			if err != nil {
				if !named {
					close(endpoint)
				}
				if sctx.Err() == nil {
					if errors.Is(err, io.EOF) {
						err = errors.New("the server closed its event stream")
					}
					select {
					case c.in <- connMsg{err: err}:
					case <-sctx.Done():
					}
				}
				return
			}
			switch ev.Type() {
			case "endpoint":
				if !named {
					named = true
					endpoint <- string(ev.Data)
				}
			case "message":
				select {
				case c.in <- connMsg{msg: bytes.Clone(ev.Data)}:
				case <-sctx.Done():
					return
				}
			}
		}
	}()
	select {
	case e, ok := <-endpoint:
		if !ok {
			c.Close()
			return nil, fmt.Errorf("legacy SSE: %s closed its stream before naming an endpoint", sseURL)
		}
		u, err := base.Parse(e)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("legacy SSE: endpoint %q: %w", e, err)
		}
		c.endpoint = u.String()
		return c, nil
	case <-ctx.Done():
		c.Close()
		return nil, ctx.Err()
	}
}

// Send posts msg to the endpoint; the answer comes on the stream.
func (c *LegacyConn) Send(ctx context.Context, msg []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(bytes.TrimSpace(msg)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s %s", c.endpoint, resp.Status, bytes.TrimSpace(body))
	}
	return nil
}

// Recv returns the next message the server sent on the stream.
func (c *LegacyConn) Recv(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.in:
		return m.msg, m.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the stream.
func (c *LegacyConn) Close() error {
	c.stop()
	c.wg.Wait()
	return nil
}
