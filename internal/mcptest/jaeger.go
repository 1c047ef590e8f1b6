package mcptest

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// JaegerVersion is the Jaeger module whose v2 all-in-one (cmd/jaeger) the
// OTLP export's test pushes to.
const JaegerVersion = "v1.76.0"

// JaegerBinary returns the Jaeger v2 all-in-one, building it once into
// .peers/jaeger/ (under a lock shared by test processes): the module has
// replace directives, so go install refuses it; its directory is copied
// out of the module cache and built there (minutes on two cores, once a
// machine).
func JaegerBinary(t testing.TB) string {
	t.Helper()
	root := RepoRoot(t)
	dir := filepath.Join(root, ".peers", "jaeger")
	bin := filepath.Join(dir, "jaeger")
	stamp := bin + ".version"
	if v, err := os.ReadFile(stamp); err == nil && string(v) == JaegerVersion {
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if v, err := os.ReadFile(stamp); err == nil && string(v) == JaegerVersion {
		return bin // another process built it while we waited
	}
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/jaegertracing/jaeger@"+JaegerVersion).Output()
	if err != nil {
		t.Fatalf("mcptest: go mod download jaeger: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("mcptest: go mod download jaeger: no directory in %s", out)
	}
	src, err := os.MkdirTemp("", "mcptest-jaeger-src-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(src)
	if out, err := exec.Command("cp", "-r", mod.Dir+"/.", src).CombinedOutput(); err != nil {
		t.Fatalf("mcptest: copy jaeger's module: %v\n%s", err, out)
	}
	exec.Command("chmod", "-R", "u+w", src).Run()
	build := exec.Command("go", "build", "-o", bin, "./cmd/jaeger")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("mcptest: build jaeger %s: %v\n%s", JaegerVersion, err, out)
	}
	if err := os.WriteFile(stamp, []byte(JaegerVersion), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin
}

const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:0
    grpc:
      endpoint: 127.0.0.1:0
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:0
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

// StartJaeger runs Jaeger with every listener on a port the kernel picks,
// reads the ports back from the process's sockets, and returns its
// OTLP/HTTP endpoint and its query API's base URL. It is stopped at test
// cleanup.
func StartJaeger(t testing.TB) (otlp, query string) {
	t.Helper()
	bin := JaegerBinary(t)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(jaegerConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	p := Start(t, exec.Command(bin, "--config=file:"+cfg))
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if done, err := p.Exited(); done {
			t.Fatalf("mcptest: jaeger exited: %v\n%s", err, p.Output())
		}
		for _, port := range listeningPorts(p.Cmd.Process.Pid) {
			base := "http://127.0.0.1:" + strconv.Itoa(port)
			if body, code := get(base + "/api/services"); code == http.StatusOK && strings.Contains(body, `"data"`) {
				query = base
			} else if code := post(base + "/v1/traces"); code == http.StatusOK {
				otlp = base
			}
		}
		if otlp != "" && query != "" {
			return otlp, query
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("mcptest: jaeger did not listen within 30 s (otlp %q, query %q)\n%s", otlp, query, p.Output())
	return "", ""
}

func get(url string) (string, int) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b), resp.StatusCode
}

func post(url string) int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Post(url, "application/json", strings.NewReader("{}"))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// listeningPorts returns the TCP ports process pid listens on, from
// /proc: the inodes of its sockets, matched in /proc/net/tcp.
func listeningPorts(pid int) []int {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			_, portHex, ok := strings.Cut(f[1], ":")
			if !ok {
				continue
			}
			b, err := hex.DecodeString(portHex)
			if err == nil && len(b) == 2 {
				ports = append(ports, int(b[0])<<8|int(b[1]))
			}
		}
	}
	return ports
}
