#!/usr/bin/env bash
# Builds CoreDNS when it is missing and prints the binary's path. The build
# comes from the small module in cluster/local/coredns/, whose go.mod and
# go.sum pin every dependency and whose main.go picks the plugins (no
# forward: the node's cluster DNS never asks a server off the machine).
# Static (CGO_ENABLED=0), so it runs in an image with nothing else in it.
# Cached outside the work tree; warm runs cost nothing.
set -euo pipefail

VERSION=v1.12.1
CACHE="${PTN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-tencentcloud-network}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$CACHE/coredns-$VERSION/coredns"

log() { echo "coredns.sh: $*" >&2; }

# The version the module pins and the cache folder's name must agree.
pinned="$(cd "$HERE/coredns" && go list -m -f '{{.Version}}' github.com/coredns/coredns)"
if [ "$pinned" != "$VERSION" ]; then
  log "cluster/local/coredns/go.mod pins CoreDNS $pinned, this script expects $VERSION"
  exit 1
fi

# The cached binary is reused only if it was built from the same plugin
# list and pins: a changed main.go or go.sum rebuilds it.
inputs="$(cd "$HERE/coredns" && cat main.go go.mod go.sum | sha256sum | cut -c1-16)"
current() { [ -x "$OUT" ] && [ "$(cat "$OUT.inputs" 2>/dev/null)" = "$inputs" ]; }

if ! current; then
  mkdir -p "$(dirname "$OUT")"
  # One build at a time, even when several tests ask at once.
  exec 9>"$OUT.lock"
  flock 9
  if ! current; then
    log "building CoreDNS $VERSION (a few minutes, once)"
    (cd "$HERE/coredns" && CGO_ENABLED=0 go build -mod=readonly -trimpath -buildvcs=false \
      -ldflags "-s -w" -o "$OUT.tmp" . >&2)
    mv "$OUT.tmp" "$OUT"
    echo "$inputs" > "$OUT.inputs"
  fi
  flock -u 9
  exec 9>&-
fi

echo "$OUT"
