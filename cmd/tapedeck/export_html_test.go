package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium returns the headless browser, installing Debian's package when
// it is missing (as .ci/run does); still missing is a failure, not a skip.
func chromium(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if out, err := exec.Command("sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium").CombinedOutput(); err != nil {
		t.Fatalf("chromium is not installed and apt-get could not install it (%v): the HTML export's test loads the page in a real browser\n%s", err, out)
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not on PATH after apt-get install chromium")
	}
	return p
}

// dumpDOM loads url in headless Chromium and returns the document after
// its scripts ran.
func dumpDOM(t *testing.T, browser, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=5000", "--dump-dom", url)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	return string(out)
}

var rowRE = regexp.MustCompile(`<div class="row( fail)?( sel)?" data-call="(\d+)"[^>]*><span class="st">([^<]*)</span><span class="ms">[^<]*</span><span class="lbl">([^<]*)</span>`)

// export --format html of a real recording, opened in headless Chromium:
// the calls are drawn, the failed ones marked with their error, the search
// (#q=) keeps only the matches, a call (#call=) shows its request and
// answer; a hostile tape's text stays text.
func TestExportHTMLInChromium(t *testing.T) {
	browser := chromium(t)
	page := filepath.Join(t.TempDir(), "session.html")
	if _, errOut, code := runCLI(t, "export", fixture(t, "sdk-everything-2025-06-18.tape.jsonl"), "--format", "html", "-o", page); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	dom := dumpDOM(t, browser, "file://"+page)
	rows := rowRE.FindAllStringSubmatch(dom, -1)
	if len(rows) != 14 {
		t.Fatalf("%d rows drawn, want the tape's 14 calls:\n%.3000s", len(rows), dom)
	}
	var failed []string
	for _, r := range rows {
		if r[1] == " fail" {
			failed = append(failed, r[4]+" "+r[5])
		}
	}
	if len(failed) != 2 || !strings.Contains(strings.Join(failed, "\n"), "tool-error #22 tools/call no-such-tool — MCP error -32602: Tool no-such-tool not found") {
		t.Errorf("failed rows: %q", failed)
	}
	if !strings.Contains(dom, "14 of 14 calls") || !strings.Contains(dom, "<h2>stats</h2>") {
		t.Errorf("no count or stats:\n%.2000s", dom)
	}

	// The stats table fits a 1280 px window (issue 24 item 7: it
	// overflowed its pane): the page in a 1280 px frame of a page that
	// writes the measures into its own DOM.
	frame := filepath.Join(filepath.Dir(page), "frame.html")
	if err := os.WriteFile(frame, []byte(`<!DOCTYPE html><html><body style="margin:0"><iframe id="f" src="session.html" style="width:1280px;height:800px;border:0"></iframe><pre id="out">not measured</pre>
<script>
document.getElementById('f').addEventListener('load',function(){setTimeout(function(){
var d=document.getElementById('f').contentDocument, side=d.getElementById('side'), tb=side.querySelector('table');
document.getElementById('out').textContent='page '+d.documentElement.scrollWidth+' side '+side.scrollWidth+'/'+side.clientWidth+' table right '+(tb?Math.ceil(tb.getBoundingClientRect().right):-1);
},500);});
</script></body></html>`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+t.TempDir(),
		"--allow-file-access-from-files", "--virtual-time-budget=5000", "--dump-dom", "file://"+frame).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", frame, err)
	}
	m := regexp.MustCompile(`page (\d+) side (\d+)/(\d+) table right (-?\d+)`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("the frame did not measure the page:\n%.2000s", out)
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if page, sideScroll, sideW, right := num(m[1]), num(m[2]), num(m[3]), num(m[4]); page > 1280 || sideScroll > sideW || right < 0 || right > 1280 {
		t.Errorf("at 1280 px the stats table does not fit: %s (want the page and the table within 1280 px, the side pane not scrolling sideways)", m[0])
	}

	dom = dumpDOM(t, browser, "file://"+page+"#q=no-such-tool&call=22")
	rows = rowRE.FindAllStringSubmatch(dom, -1)
	if len(rows) != 1 || rows[0][3] != "22" {
		t.Errorf("search no-such-tool: %d rows %v", len(rows), rows)
	}
	for _, want := range []string{"1 of 14 calls", `class="error fail">MCP error -32602: Tool no-such-tool not found`, "request #22", "answer #23", `<span class="k">"isError"</span>`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the selected call lacks %q:\n%.3000s", want, dom)
		}
	}

	// A tape that tries to inject markup.
	hostile := writeFile(t, "hostile.jsonl", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"type":"text","text":"</script><img src=x id=injected onerror=alert(2)>"}]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.002Z"}}
`)
	page2 := filepath.Join(t.TempDir(), "hostile.html")
	if _, errOut, code := runCLI(t, "export", hostile, "--format", "html", "-o", page2); code != 0 {
		t.Fatal(errOut)
	}
	dom = dumpDOM(t, browser, "file://"+page2+"#call=0")
	if strings.Contains(dom, `id="injected"`) || !strings.Contains(dom, "&lt;/script&gt;&lt;img src=x id=injected") {
		t.Errorf("the hostile text did not stay text:\n%.3000s", dom)
	}
	if data, _ := os.ReadFile(page2); len(data) == 0 {
		t.Error("empty page")
	}
}

// BenchmarkExportHTML100k: a 100 000-message tape exported to HTML (ratio
// to the JSON export of the same tape, same run), then opened in headless
// Chromium until its first rows are drawn (the budget: 2 s, browser start
// included).
func BenchmarkExportHTML100k(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "big.jsonl")
	var sb strings.Builder
	for i := 0; i < 50_000; i++ {
		ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond).Format("2006-01-02T15:04:05.000Z")
		text := "ok"
		if i%1000 == 0 {
			sb.WriteString(`{"jsonrpc":"2.0","id":` + itoa(i) + `,"method":"tools/call","params":{"name":"search","arguments":{"q":"item ` + itoa(i) + `"}},"_meta":{"dir":"send","server":"s","ts":"` + ts + `"}}` + "\n")
			sb.WriteString(`{"jsonrpc":"2.0","id":` + itoa(i) + `,"result":{"isError":true,"content":[{"type":"text","text":"boom"}]},"_meta":{"dir":"recv","server":"s","ts":"` + ts + `"}}` + "\n")
			continue
		}
		sb.WriteString(`{"jsonrpc":"2.0","id":` + itoa(i) + `,"method":"tools/call","params":{"name":"search","arguments":{"q":"item ` + itoa(i) + `"}},"_meta":{"dir":"send","server":"s","ts":"` + ts + `"}}` + "\n")
		sb.WriteString(`{"jsonrpc":"2.0","id":` + itoa(i) + `,"result":{"content":[{"type":"text","text":"` + text + `"}]},"_meta":{"dir":"recv","server":"s","ts":"` + ts + `"}}` + "\n")
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	page, js := filepath.Join(dir, "big.html"), filepath.Join(dir, "big.json")
	start := time.Now()
	if _, errOut, code := runCLIb(b, "export", path, "--format", "json", "-o", js); code != 0 {
		b.Fatal(errOut)
	}
	base := time.Since(start)
	b.ResetTimer()
	for b.Loop() {
		if _, errOut, code := runCLIb(b, "export", path, "--format", "html", "-o", page); code != 0 {
			b.Fatal(errOut)
		}
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.StopTimer()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		b.Fatal("chromium is needed to time the first screen")
	}
	open := time.Now()
	out, err := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+b.TempDir(), "--virtual-time-budget=100", "--dump-dom", "file://"+page).Output()
	first := time.Since(open)
	if err != nil || !strings.Contains(string(out), `class="row fail"`) {
		b.Fatalf("chromium: %v, no rows drawn", err)
	}
	m := regexp.MustCompile(`data-first-screen-ms="(\d+)"`).FindStringSubmatch(string(out))
	if m == nil {
		b.Fatal("the page did not say when it drew its first screen")
	}
	pageMs, _ := strconv.Atoi(m[1])
	b.ReportMetric(float64(pageMs), "ms/page-first-screen")
	b.ReportMetric(float64(per)/float64(time.Millisecond), "ms/export")
	b.ReportMetric(float64(per)/float64(base), "x-json-export")
	b.ReportMetric(float64(first)/float64(time.Millisecond), "ms/chromium-whole-run")
	b.ReportMetric(float64(pageMs)/2000, "budget-ratio")
}

func itoa(i int) string { return strconv.Itoa(i) }

// runCLIb is runCLI for a benchmark.
func runCLIb(b *testing.B, args ...string) (string, string, int) {
	var out, errb strings.Builder
	err := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), exitCode(err, &errb)
}
