#!/usr/bin/env bash
# Installs redis-server from Debian's package when it is missing: Argo CD's
# application-controller and repo-server cache in Redis (test/gitops runs
# its own on loopback, internal/tooling/argocd). Prints the binary's path.
set -euo pipefail

log() { echo "redis.sh: $*" >&2; }

if ! command -v redis-server >/dev/null 2>&1; then
  CACHE="${PTN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-tencentcloud-network}"
  mkdir -p "$CACHE"
  # One install at a time on a machine; a second caller finds the result.
  exec 9>"$CACHE/.redis.lock"
  flock 9
  if ! command -v redis-server >/dev/null 2>&1; then
    log "installing redis-server from Debian packages"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >&2
    # The package starts a system Redis on :6379; the tests run their own.
    # Stop that service through the init system that started it, and
    # nothing else.
    $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || $SUDO service redis-server stop >/dev/null 2>&1 || true
  fi
fi
command -v redis-server
