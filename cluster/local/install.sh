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

# kube-apiserver: k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces
# the staging modules with local paths), so build it from a scratch module.
if [ ! -x "$ASSETS/kube-apiserver" ]; then
  log "building kube-apiserver v$K8S_VERSION from the Go module proxy (a few minutes, once)"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  rm -f "$ASSETS/kube-apiserver.tmp"
  (
    cd "$work"
    go mod init local/kube-apiserver-build >/dev/null 2>&1
    cat > main.go <<'GO'
package main

import _ "k8s.io/kubernetes/cmd/kube-apiserver/app"

func main() {}
GO
    go mod edit -require="k8s.io/kubernetes@v$K8S_VERSION"
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go \
      cloud-provider cluster-bootstrap code-generator component-base component-helpers \
      controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation \
      endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy \
      kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission \
      sample-apiserver sample-cli-plugin sample-controller; do
      go mod edit -replace="k8s.io/$m=k8s.io/$m@v$STAGING_VERSION"
    done
    GOFLAGS=-mod=mod go mod tidy >&2
    GOFLAGS=-mod=mod go build -o "$ASSETS/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver >&2
    mv "$ASSETS/kube-apiserver.tmp" "$ASSETS/kube-apiserver"
  )
fi

if [ ! -e "$ASSETS/kubectl" ] && command -v kubectl >/dev/null 2>&1; then
  ln -sf "$(command -v kubectl)" "$ASSETS/kubectl"
fi

echo "$ASSETS"
