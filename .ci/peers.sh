#!/usr/bin/env bash
# Installs the real MCP peers that tapedeck's tests run against into .peers/
# at the repository root (git-ignored): @modelcontextprotocol/server-everything
# and mcporter, at the versions pinned in .ci/peers/package-lock.json.
#
# Idempotent: when .peers/ already holds exactly that lock file's install, it
# only prints where the binaries are. Needs node and npm (Node 20 works, even
# though mcporter 0.12.3 declares engines.node >=24) and the npm registry.
#
# Usage: bash .ci/peers.sh        (from anywhere inside the checkout)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
spec="$root/.ci/peers"
dest="$root/.peers"
stamp="$dest/.installed"

for tool in node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "peers.sh: $tool not found on PATH; install Node.js 20 or later" >&2
		exit 1
	fi
done

want="$(cat "$spec/package.json" "$spec/package-lock.json" | sha256sum | cut -d' ' -f1)"
bin="$dest/node_modules/.bin"

installed() {
	[[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$bin/mcporter" && -x "$bin/mcp-server-everything" ]]
}

if installed; then
	echo "peers.sh: peers already installed in $dest"
else
	echo "peers.sh: installing peers into $dest (node $(node --version), npm $(npm --version 2>/dev/null))"
	mkdir -p "$dest"
	cp "$spec/package.json" "$spec/package-lock.json" "$dest/"
	# npm ci removes any previous node_modules, so a changed lock file gives a clean tree.
	# mcporter's engines field asks for node >=24; it runs on 20, so do not let npm refuse.
	(cd "$dest" && npm ci --no-audit --no-fund --engine-strict=false --loglevel=error)
	if [[ ! -x "$bin/mcporter" || ! -x "$bin/mcp-server-everything" ]]; then
		echo "peers.sh: npm ci finished but the binaries are missing from $bin" >&2
		exit 1
	fi
	echo "$want" >"$stamp"
fi

version() { node -p "require('$dest/node_modules/$1/package.json').version"; }
echo "peers.sh: server-everything $(version @modelcontextprotocol/server-everything): $bin/mcp-server-everything"
echo "peers.sh: mcporter $(version mcporter): $bin/mcporter"
echo "peers.sh: node $(command -v node) $(node --version)"
