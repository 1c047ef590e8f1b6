#!/usr/bin/env bash
# Builds the Jaeger v2 all-in-one the OTLP export's test pushes to into
# .peers/jaeger/ (git-ignored), once a machine: the module has replace
# directives, so go install refuses it; its directory is copied out of the
# module cache and built there (a few minutes on two cores).
# internal/mcptest.JaegerBinary does the same when a test finds it missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version=v1.76.0
dest="$root/.peers/jaeger"
if [[ -x "$dest/jaeger" && "$(cat "$dest/jaeger.version" 2>/dev/null)" == "$version" ]]; then
  echo "jaeger.sh: jaeger $version already built: $dest/jaeger"
  exit 0
fi
mkdir -p "$dest"
dir=$(cd "$root" && go mod download -json "github.com/jaegertracing/jaeger@$version" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp -r "$dir/." "$src"
chmod -R u+w "$src"
echo "jaeger.sh: building jaeger $version (a few minutes)"
(cd "$src" && GOFLAGS=-mod=mod go build -o "$dest/jaeger" ./cmd/jaeger)
printf '%s' "$version" > "$dest/jaeger.version"
echo "jaeger.sh: $dest/jaeger"
