# Sourced by install.sh and install-node.sh: builds commands of the
# Kubernetes module. k8s.io/kubernetes cannot be `go install`ed (its go.mod
# replaces the staging modules with local paths), so a scratch module
# requires it at K8S_VERSION and the staging modules at STAGING_VERSION.
#
# k8s_build OUT CMD...: builds k8s.io/kubernetes/cmd/CMD for each CMD into
# folder OUT (each binary appears there only once it is complete).
k8s_build() {
  local out="$1" work
  shift
  work="$(mktemp -d)"
  (
    trap 'rm -rf "$work"' EXIT
    cd "$work"
    go mod init local/k8s-build >/dev/null 2>&1
    {
      echo 'package main'
      echo
      for c in "$@"; do echo "import _ \"k8s.io/kubernetes/cmd/$c/app\""; done
      echo
      echo 'func main() {}'
    } > main.go
    go mod edit -require="k8s.io/kubernetes@v$K8S_VERSION"
    local m
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go \
      cloud-provider cluster-bootstrap code-generator component-base component-helpers \
      controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation \
      endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy \
      kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission \
      sample-apiserver sample-cli-plugin sample-controller; do
      go mod edit -replace="k8s.io/$m=k8s.io/$m@v$STAGING_VERSION"
    done
    GOFLAGS=-mod=mod go mod tidy >&2
    mkdir bin
    local pkgs=()
    for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
    GOFLAGS=-mod=mod go build -o bin/ "${pkgs[@]}" >&2
    for c in "$@"; do mv "bin/$c" "$out/$c"; done
  )
}
