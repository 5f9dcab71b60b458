// Package argocd runs Argo CD beside the control plane as its own install
// manifests run it: the application-controller, the repo-server and Redis,
// each its own process, with Argo CD's CRDs read from its Go module. The one
// `argocd` binary is built from the module served by the Go module proxy,
// once per version, into the cache (never part of this repository); it acts
// as the component its file name (argv[0]) names, as in Argo CD's images.
package argocd

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/okg"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// The release run, served by the Go module proxy.
const (
	Module  = "github.com/argoproj/argo-cd/v3"
	Version = "v3.2.0"
)

// Build returns the path of the argocd binary, building it once per
// version: it is kept in okg.CacheDir (the cache the other tooling builds
// share), so a second run builds nothing. The Go build's output goes to
// log. The module's own go.mod, replace directives included, decides
// every dependency, so it is built in a writable copy of the module (the
// module cache is read-only, and replace directives hold only in the main
// module).
func Build(ctx context.Context, log io.Writer) (string, error) {
	cache, err := okg.CacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(cache, "argocd-"+Version, "argocd")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	src, err := okg.ModuleDir(ctx, Module, Version)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "argocd-build-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	tree := filepath.Join(tmp, "src")
	if err := testenv.Command(ctx, "", nil, log, "cp", "-r", src, tree); err != nil {
		return "", fmt.Errorf("copy %s@%s: %w", Module, Version, err)
	}
	if err := testenv.Command(ctx, "", nil, log, "chmod", "-R", "u+w", tree); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	out := bin + ".tmp"
	env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=-trimpath"}
	if err := testenv.Command(ctx, tree, env, log, "go", "build", "-ldflags=-w", "-o", out, "./cmd"); err != nil {
		return "", fmt.Errorf("go build %s@%s: %w", Module, Version, err)
	}
	return bin, os.Rename(out, bin)
}

// CRDFiles are the files of Argo CD's CRDs in the module cache (the
// module's manifests/crds), downloading the module if it is not there.
func CRDFiles(ctx context.Context) ([]string, error) {
	dir, err := okg.ModuleDir(ctx, Module, Version)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range []string{"application-crd.yaml", "appproject-crd.yaml"} {
		files = append(files, filepath.Join(dir, "manifests", "crds", f))
	}
	return files, nil
}
