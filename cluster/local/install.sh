#!/usr/bin/env bash
# Installs the binaries of the local control plane when they are missing:
# etcd from Debian's etcd-server package and kube-apiserver built from the
# Kubernetes Go module (no prebuilt downloads are reachable here). Binaries are
# cached outside the work tree so warm runs cost nothing. Prints the folder to
# use as KUBEBUILDER_ASSETS.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.35.3}"
STAGING_VERSION="0.${K8S_VERSION#1.}"
CACHE="${PTN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-tencentcloud-network}"
ASSETS="$CACHE/k8s-$K8S_VERSION"
mkdir -p "$ASSETS"

log() { echo "install.sh: $*" >&2; }

# Test packages run in parallel and each may call this script: one install
# at a time, and the others find the result.
exec 9>"$ASSETS/.install.lock"
flock 9

# etcd: Debian's package (3.4) works with kube-apiserver 1.35.
if [ ! -x "$ASSETS/etcd" ]; then
  if ! command -v etcd >/dev/null 2>&1; then
    log "installing etcd-server from Debian packages"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq etcd-server >&2
    # The package starts a system etcd service on :2379; our tests use their
    # own. Stop that service through the init system that started it, and
    # nothing else: an etcd this script did not start (another project's, a
    # node's) is not ours to kill. Without an init system the package starts
    # no service, and there is nothing to stop.
    $SUDO systemctl disable --now etcd >/dev/null 2>&1 || $SUDO service etcd stop >/dev/null 2>&1 || true
  fi
  ln -sf "$(command -v etcd)" "$ASSETS/etcd"
fi

# kube-apiserver, built from the Kubernetes module (k8s-build.sh).
if [ ! -x "$ASSETS/kube-apiserver" ]; then
  log "building kube-apiserver v$K8S_VERSION from the Go module proxy (a few minutes, once)"
  # shellcheck source=k8s-build.sh
  . "$(dirname "$0")/k8s-build.sh"
  k8s_build "$ASSETS" kube-apiserver
fi

if [ ! -e "$ASSETS/kubectl" ] && command -v kubectl >/dev/null 2>&1; then
  ln -sf "$(command -v kubectl)" "$ASSETS/kubectl"
fi

echo "$ASSETS"
