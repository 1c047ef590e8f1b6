package export

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// hostileTape has a tool result that tries to close the script element and
// run its own code, and a server name that tries the same in the title.
const hostileTape = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"_meta":{"dir":"send","server":"</title><script>alert(1)</script>","ts":"2026-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"type":"text","text":"</script><img src=x onerror=alert(2)><script>alert(3)</script>"}]},"_meta":{"dir":"recv","server":"</title><script>alert(1)</script>","ts":"2026-01-01T00:00:00.002Z"}}
`

func source(t *testing.T, name, data string) Source {
	t.Helper()
	x := tape.NewIndex(strings.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	return Source{Name: name, Index: x, Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(data)), nil }}
}

// Nothing in a tape can close the page's script elements or add markup:
// the data is JSON with <, > and & escaped, and the name is escaped too.
func TestHTMLEscapesTapeData(t *testing.T) {
	var b bytes.Buffer
	if err := HTML(&b, source(t, `<b>name</b>.jsonl`, hostileTape), "test"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"</script><img", "<img src=x", "<script>alert", "<b>name</b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q from the tape as markup", bad)
		}
	}
	if n := strings.Count(page, "<script"); n != 3 { // one calls chunk, meta, the page's script
		t.Errorf("%d script elements, want 3", n)
	}
	// No network: nothing to load from elsewhere.
	if regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).MatchString(page) {
		t.Error("the page loads something from the network")
	}
	if !strings.Contains(page, "default-src 'none'") {
		t.Error("the page's Content-Security-Policy does not forbid loading")
	}
	// Only the page's own script runs: allowed by its hash, not by
	// 'unsafe-inline'.
	csp := regexp.MustCompile(`script-src ([^;"]*)`).FindStringSubmatch(page)
	script := page[strings.LastIndex(page, "<script>")+len("<script>"):]
	script = script[:strings.Index(script, "</script>")]
	sum := sha256.Sum256([]byte(script))
	if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; csp == nil || csp[1] != want {
		t.Errorf("Content-Security-Policy script-src %q, want only the page script's hash %s", csp, want)
	}
}
