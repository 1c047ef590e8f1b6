package record_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/record"
)

func TestDefaultServerName(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"/usr/local/bin/my-server --port 3", "my-server"},
		{"node dist/index.js", "index"},
		{"node /work/.peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "server-everything"},
		{"node /srv/weather/build/index.js", "weather"},
		{"node --require ts-node/register src/server.ts", "server"},
		{"node --inspect=9229 ./tools/linear-mcp.mjs --stdio", "linear-mcp"},
		{"node -e console.log(1)", "node"},
		{"node", "node"},
		{"env SDKSERVER_VARIANT=C /tmp/bin/sdkserver --stdio", "sdkserver"},
		{"/usr/bin/env -u HOME NODE_ENV=production node /srv/weather/build/index.js", "weather"},
		{"env", "env"},
		{"/opt/homebrew/bin/nodejs app/main.js", "app"},
		{"npx -y @modelcontextprotocol/server-everything", "server-everything"},
		{"npx --yes @modelcontextprotocol/server-filesystem@2025.1.14 /tmp", "server-filesystem"},
		{"npx -y -p @scope/tools mcp-tools --stdio", "mcp-tools"},
		{"npx mcp-remote https://example.com/mcp", "mcp-remote"},
		{"bunx @acme/mcp@latest", "mcp"},
		{"bun run index.ts", "index"},
		{"bun ./weather/server.ts", "weather"},
		{"deno run -A --allow-net=api.x jsr:@std/http/file-server", "file-server"},
		{"deno run --config deno.json npm:@acme/mcp-server@1.2.3", "mcp-server"},
		{"uvx mcp-server-fetch", "mcp-server-fetch"},
		{"uvx mcp-server-fetch==0.6.2 --ignore-robots-txt", "mcp-server-fetch"},
		{"uvx --from git+https://github.com/acme/git-mcp.git mcp-server-git", "mcp-server-git"},
		{"uv run --with mcp server.py", "server"},
		{"uv tool run mcp-server-time", "mcp-server-time"},
		{"uv pip list", "uv"},
		{"python -m mcp_server_time --local-timezone UTC", "mcp_server_time"},
		{"python3.12 -u weather.py", "weather"},
		{"python3 -c print(1)", "python3"},
		{"pipx run mcp-server-sqlite", "mcp-server-sqlite"},
		{"pnpm dlx @acme/mcp", "mcp"},
		{"docker run -i --rm -e GITHUB_TOKEN ghcr.io/github/github-mcp-server:latest", "github-mcp-server"},
		{"docker run -i --rm -v /data:/data --network host mcp/fetch", "fetch"},
		{"docker ps", "docker"},
		{"tsx src/index.ts", "index"},
	} {
		f := strings.Fields(tc.cmd)
		if got := record.DefaultServerName(f[0], f[1:]); got != tc.want {
			t.Errorf("DefaultServerName(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

func TestDefaultHTTPServerName(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"http://127.0.0.1:3001/mcp", "127.0.0.1:3001"},
		{"http://127.0.0.1:3002/mcp", "127.0.0.1:3002"},
		{"http://localhost:8080/", "localhost:8080"},
		{"https://mcp.linear.app/sse", "mcp.linear.app"},
		{"https://example.com/weather/mcp", "weather"},
		{"https://example.com/api/v1/github/mcp/", "github"},
		{"https://example.com/v2/messages", "example.com"},
		{"http://[::1]:9000/mcp", "[::1]:9000"},
	} {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := record.DefaultHTTPServerName(u); got != tt.want {
			t.Errorf("DefaultHTTPServerName(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
}
