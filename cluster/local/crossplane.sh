#!/usr/bin/env bash
# Builds real Crossplane binaries when they are missing: core v2.4.0 (the
# controller manager, also used by `composition render` as its engine) and the
# CLI v2.5.0. Each is built from its own small module under cluster/local/crossplane/
# whose go.mod and go.sum pin every dependency (a `tool` directive keeps the
# main package's requirements through `go mod tidy`). Binaries are cached
# outside the work tree, so warm runs cost nothing. Builds are static
# (CGO_ENABLED=0) because the core binary also goes into an image with no
# libc (internal/tooling/xpcluster); core's cache path says "static" so a binary
# cached before that is not reused.
#
# The chart renderer (cluster/local/crossplane/chart) is our own program in
# its own module, so Helm stays out of the provider's go.mod; its cache path
# carries a hash of its source, so an edit rebuilds it. Its cold build
# (Helm v3.22.0 and its k8s.io v0.37 dependencies, none of them in the build
# cache) took 4 min 24 s wall, 2 min 1 s CPU, on the 2 shared cores.
#
#   crossplane.sh core   prints the path of the core binary
#   crossplane.sh cli    prints the path of the CLI binary
#   crossplane.sh chart  prints the path of the chart renderer
#   crossplane.sh        builds core and the CLI, prints the core path then the CLI path
set -euo pipefail

CORE_VERSION=v2.4.0
CLI_VERSION=v2.5.0
CACHE="${PTN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-tencentcloud-network}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { echo "crossplane.sh: $*" >&2; }

# build <module dir> <main package> <output binary> [ldflags]
build() {
  local module="$1" pkg="$2" out="$3" ldflags="${4:-}"
  [ -x "$out" ] && return 0
  mkdir -p "$(dirname "$out")"
  # One build at a time per binary, even when several tests ask at once.
  exec 9>"$out.lock"
  flock 9
  if [ ! -x "$out" ]; then
    log "building $pkg (a few minutes, once)"
    (cd "$module" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "$ldflags" -o "$out.tmp" "$pkg" >&2)
    mv "$out.tmp" "$out"
  fi
  flock -u 9
  exec 9>&-
}

core() {
  local out="$CACHE/crossplane-$CORE_VERSION-static/crossplane"
  build "$HERE/crossplane/core" github.com/crossplane/crossplane/v2/cmd/crossplane "$out" \
    "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$CORE_VERSION"
  echo "$out"
}

cli() {
  local out="$CACHE/crossplane-cli-$CLI_VERSION/crossplane"
  build "$HERE/crossplane/cli" github.com/crossplane/cli/v2/cmd/crossplane "$out" \
    "-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$CLI_VERSION"
  echo "$out"
}

chart() {
  local sum
  sum="$(cd "$HERE/crossplane/chart" && cat go.mod go.sum ./*.go | sha256sum | cut -c1-12)"
  local out="$CACHE/crossplane-chart-render-$sum/render"
  build "$HERE/crossplane/chart" . "$out"
  echo "$out"
}

case "${1:-all}" in
  core) core ;;
  cli) cli ;;
  chart) chart ;;
  all) core; cli ;;
  *) log "usage: crossplane.sh [core|cli|chart]"; exit 2 ;;
esac
