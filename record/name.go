package record

import (
	"net/url"
	"path/filepath"
	"strings"
)

// launcher describes a program that runs a server named by one of its
// arguments: node dist/index.js, npx -y @scope/pkg, python -m module.
type launcher struct {
	// subcommands are skipped before the server's argument (bun run, uv
	// run, docker run, pnpm dlx).
	subcommands []string
	// valued are the flags whose value is the next argument (node -r X).
	valued []string
	// module is the flag whose value is the server itself (python -m M).
	module string
	// stop are the flags after which no server is named (node -e CODE).
	stop []string
	// needsSub: only with one of subcommands does the launcher run a
	// server (docker run, not docker ps).
	needsSub bool
}

var launchers = map[string]launcher{
	"node":    {valued: []string{"-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file", "-C", "--conditions", "--title"}, stop: []string{"-e", "--eval", "-p", "--print"}},
	"bun":     {subcommands: []string{"run", "x"}, valued: []string{"--cwd", "-r", "--preload", "--env-file", "--config", "-c"}, stop: []string{"-e", "--eval", "-p", "--print"}},
	"deno":    {subcommands: []string{"run"}, valued: []string{"--config", "-c", "--import-map", "--env-file", "--location", "--seed", "--v8-flags", "-L", "--log-level"}, stop: []string{"eval"}},
	"npx":     {valued: []string{"-p", "--package", "--prefix", "--registry", "--cache", "--userconfig"}, stop: []string{"-c", "--call"}},
	"bunx":    {valued: []string{"-p", "--package"}},
	"pnpm":    {subcommands: []string{"dlx", "exec"}, valued: []string{"--package", "-C", "--dir", "--filter", "-F"}, needsSub: true},
	"yarn":    {subcommands: []string{"dlx", "exec"}, valued: []string{"-p", "--package"}, needsSub: true},
	"uvx":     {valued: []string{"--from", "--with", "--with-editable", "--with-requirements", "--python", "-p", "--index", "--index-url", "--extra-index-url", "--directory", "--project", "--env-file"}},
	"uv":      {subcommands: []string{"run", "tool"}, valued: []string{"--from", "--with", "--with-editable", "--with-requirements", "--python", "-p", "--index", "--index-url", "--extra-index-url", "--directory", "--project", "--env-file", "--package"}, module: "-m", needsSub: true},
	"python":  {valued: []string{"-X", "-W", "-Q"}, module: "-m", stop: []string{"-c"}},
	"pipx":    {subcommands: []string{"run"}, valued: []string{"--spec", "--python", "--index-url", "--pip-args"}, needsSub: true},
	"docker":  {subcommands: []string{"run", "container"}, valued: []string{"-e", "--env", "--env-file", "-v", "--volume", "--mount", "--name", "--network", "--net", "-p", "--publish", "-w", "--workdir", "-u", "--user", "--platform", "--entrypoint", "-l", "--label", "--pull", "--add-host", "--cpus", "-m", "--memory", "--hostname", "-h", "--dns", "--cap-add", "--cap-drop", "--security-opt", "--ulimit", "--device", "--tmpfs", "--runtime", "--gpus"}, needsSub: true},
	"podman":  {subcommands: []string{"run", "container"}, valued: []string{"-e", "--env", "--env-file", "-v", "--volume", "--mount", "--name", "--network", "--net", "-p", "--publish", "-w", "--workdir", "-u", "--user", "--platform", "--entrypoint", "-l", "--label", "--pull", "--add-host", "--cpus", "-m", "--memory", "--hostname", "-h", "--dns", "--cap-add", "--cap-drop", "--security-opt", "--ulimit", "--device", "--tmpfs", "--runtime", "--gpus"}, needsSub: true},
	"tsx":     {valued: []string{"--tsconfig", "--env-file", "-r", "--require", "--import"}},
	"ts-node": {valued: []string{"-P", "--project", "-r", "--require", "-C", "--compiler"}},
}

// genericNames say nothing about the server (node dist/index.js): the
// directory above the build directories says more when there is one.
var genericNames = map[string]bool{"index": true, "main": true, "server": true, "cli": true, "app": true, "mod": true, "__main__": true, "run": true, "start": true}

// buildDirs are skipped when looking above a generic script name.
var buildDirs = map[string]bool{"dist": true, "build": true, "out": true, "lib": true, "src": true, "bin": true, "esm": true, "cjs": true, ".": true, "..": true, "/": true}

// DefaultServerName names a stdio server for the tape from its command
// line: the command's base name, except for launchers (node, bun, deno,
// npx, bunx, pnpm/yarn dlx, uvx, uv run, python, pipx run, docker/podman
// run, tsx, ts-node), which are named after the script, module, package or
// image they run:
//
//	node dist/index.js                            index
//	node /srv/weather/build/index.js              weather
//	npx -y @modelcontextprotocol/server-everything server-everything
//	uvx mcp-server-fetch==0.6.2                   mcp-server-fetch
//	python -m mcp_server_time                     mcp_server_time
//	docker run -i --rm ghcr.io/github/github-mcp-server github-mcp-server
//
// When the launcher's arguments name nothing (node -e CODE, a bare
// python), the launcher's name is kept.
func DefaultServerName(command string, args []string) string {
	if k := strings.ToLower(filepath.Base(command)); k == "env" {
		// env [-i] [-u NAME] [NAME=VALUE]... CMD ARGS: the server is CMD.
		for i := 0; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-u" || a == "--unset" || a == "-C" || a == "--chdir" || a == "-S" || a == "--split-string":
				i++
			case strings.HasPrefix(a, "-") || strings.Contains(a, "="):
			default:
				return DefaultServerName(a, args[i+1:])
			}
		}
	}
	base := filepath.Base(command)
	key := strings.TrimSuffix(strings.ToLower(base), ".exe")
	if strings.HasPrefix(key, "python") || key == "py" { // python3, python3.12
		key = "python"
	}
	if key == "nodejs" {
		key = "node"
	}
	l, ok := launchers[key]
	if !ok {
		return base
	}
	if name := launched(l, args); name != "" {
		return name
	}
	return base
}

// launched finds the name of what launcher l runs, or "".
func launched(l launcher, args []string) string {
	subcommandSeen := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return targetName(args[i+1])
			}
			return ""
		case contains(l.stop, a):
			return ""
		case l.module != "" && a == l.module:
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case l.module != "" && strings.HasPrefix(a, l.module) && !strings.HasPrefix(a, "--") && len(a) > len(l.module):
			return a[len(l.module):] // python -mmodule
		case strings.HasPrefix(a, "-"):
			if !strings.Contains(a, "=") && contains(l.valued, a) {
				i++ // the flag's value
			}
		case !subcommandSeen && contains(l.subcommands, a):
			subcommandSeen = true
			if a == "tool" || a == "container" { // uv tool run, docker container run
				if i+1 < len(args) && (args[i+1] == "run") {
					i++
				}
			}
		case l.needsSub && !subcommandSeen:
			return ""
		default:
			return targetName(a)
		}
	}
	return ""
}

// targetName turns a script path, package spec, module or image into a
// name: @scope/pkg@1.2 → pkg, dist/index.js → index (or the project's
// directory), ghcr.io/org/img:tag → img, jsr:@std/x → x.
func targetName(t string) string {
	for _, p := range []string{"npm:", "jsr:", "git+", "file:"} {
		t = strings.TrimPrefix(t, p)
	}
	if i := strings.IndexAny(t, "=<>~!"); i > 0 { // pkg==1.0, pkg>=2
		t = t[:i]
	}
	if i := strings.Index(t, "://"); i >= 0 { // an URL: its path's last element
		t = strings.TrimSuffix(t[i+3:], ".git")
	}
	if strings.HasPrefix(t, "@") { // @scope/pkg@version
		if i := strings.IndexByte(t, '/'); i > 0 {
			t = t[i+1:]
		}
	}
	// pkg@version: an @ in the last path element only (a path through
	// node_modules/@scope/pkg has others, which are no versions).
	if i := strings.LastIndexByte(t, '@'); i > 0 && i > strings.LastIndexByte(t, '/')+1 {
		t = t[:i]
	}
	t = strings.TrimRight(t, "/")
	dir, name := filepath.Split(t)
	if i := strings.LastIndexByte(name, ':'); i > 0 { // image:tag
		name = name[:i]
	}
	for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx", ".py", ".pyz"} {
		if trimmed, ok := strings.CutSuffix(name, ext); ok && trimmed != "" {
			name = trimmed
			break
		}
	}
	if genericNames[strings.ToLower(name)] {
		for d := filepath.Clean(dir); d != "." && d != "/" && d != ""; d = filepath.Dir(d) {
			if b := filepath.Base(d); !buildDirs[strings.ToLower(b)] {
				return b
			}
		}
	}
	if name == "" {
		return ""
	}
	return name
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// genericPathNames are URL path segments that name an endpoint, not a
// server (/mcp, /sse, /v1/messages).
var genericPathNames = map[string]bool{"mcp": true, "sse": true, "message": true, "messages": true, "stream": true, "http": true, "api": true, "rpc": true, "jsonrpc": true}

// DefaultHTTPServerName names an HTTP server for the tape from its URL, the
// one thing known before the first record is written: the last segment of
// the URL's path that is neither generic (mcp, sse, messages, api…) nor a
// version (v1), else the host with its port, so that two local servers on
// two ports have two names:
//
//	http://127.0.0.1:3001/mcp                 127.0.0.1:3001
//	https://example.com/weather/mcp           weather
//	https://mcp.linear.app/sse                mcp.linear.app
//
// The server's own name (serverInfo.name) is on the tape in its initialize
// answer; diff pairs servers by it when their tape names differ.
func DefaultHTTPServerName(u *url.URL) string {
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		s, err := url.PathUnescape(segs[i])
		if err != nil {
			s = segs[i]
		}
		low := strings.ToLower(s)
		if s == "" || genericPathNames[low] || isVersion(low) {
			continue
		}
		return s
	}
	return u.Host
}

// isVersion reports whether s is an API version segment: v1, v2beta.
func isVersion(s string) bool {
	return len(s) >= 2 && s[0] == 'v' && s[1] >= '0' && s[1] <= '9'
}
