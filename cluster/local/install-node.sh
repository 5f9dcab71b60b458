#!/usr/bin/env bash
# Installs what the real node (internal/tooling/node) needs beside the control plane
# of install.sh: Debian's containerd, runc, CNI plugins, iptables and
# conntrack, and kubelet, kube-controller-manager, kube-scheduler and
# kube-proxy built from the same Kubernetes module as kube-apiserver. Built
# binaries are cached next to the API server's; warm runs cost nothing.
# Prints the folder holding the four binaries. Linux and root only.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.35.3}"
STAGING_VERSION="0.${K8S_VERSION#1.}"
CACHE="${PTN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-tencentcloud-network}"
ASSETS="$CACHE/k8s-$K8S_VERSION"
BINARIES=(kubelet kube-controller-manager kube-scheduler kube-proxy)

log() { echo "install-node.sh: $*" >&2; }

if [ "$(uname -s)" != Linux ]; then
  log "the real node needs Linux (containerd, runc, network namespaces); this is $(uname -s)"
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  log "the real node needs root (it starts containerd, makes a bridge, routes and iptables rules); run as root or use the process-only path"
  exit 1
fi

mkdir -p "$ASSETS"
exec 9>"$ASSETS/.install-node.lock"
flock 9

missing=()
for c in containerd runc ctr iptables conntrack; do
  command -v "$c" >/dev/null 2>&1 || missing+=("$c")
done
[ -x /usr/lib/cni/bridge ] || missing+=(cni)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing containerd, runc, CNI plugins, iptables and conntrack from Debian packages (missing: ${missing[*]})"
  apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd runc containernetworking-plugins iptables conntrack >&2
fi

need=()
for b in "${BINARIES[@]}"; do
  [ -x "$ASSETS/$b" ] || need+=("$b")
done
if [ ${#need[@]} -gt 0 ]; then
  log "building ${need[*]} v$K8S_VERSION from the Go module proxy (a few minutes, once)"
  # shellcheck source=k8s-build.sh
  . "$(dirname "$0")/k8s-build.sh"
  k8s_build "$ASSETS" "${need[@]}"
fi

echo "$ASSETS"
