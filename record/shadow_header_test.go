package record

import (
	"net/http"
	"strings"
	"testing"
)

// TestHeaderValueOKAsNetHTTP holds headerValueOK, which the shadow's own
// connections check B's request headers with, to what net/http's
// Transport refuses: every byte value inside, at the start and at the end
// of a value.
func TestHeaderValueOKAsNetHTTP(t *testing.T) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	for b := range 256 {
		for _, v := range []string{"a" + string(rune(0)) + "b", string(rune(0)) + "ab", "ab" + string(rune(0))} {
			v = strings.Replace(v, "\x00", string([]byte{byte(b)}), 1)
			req, _ := http.NewRequest("POST", "http://127.0.0.1:1/mcp", nil)
			req.Header["Mcp-Name"] = []string{v}
			_, err := tr.RoundTrip(req)
			refused := err != nil && strings.Contains(err.Error(), "invalid header field value")
			if headerValueOK(v) == refused {
				t.Errorf("value %q: headerValueOK %v, net/http refuses it: %v (%v)", v, headerValueOK(v), refused, err)
			}
		}
	}
}
