package xpcluster

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

// Version is the Crossplane core that cluster/local/crossplane.sh builds.
const Version = "v2.4.0"

// Repository is the image's path in a registry, the upstream one's.
const Repository = "crossplane/crossplane"

// Image makes Crossplane's image from the static core binary and the
// module's source (ModuleDir). Like upstream's image it runs as 65532 with
// the binary as entrypoint, since the chart passes only arguments (`core
// init`, `core start`, `rbac init`, `rbac start`), and it carries the
// CRDs and webhook configurations `core init` installs from /crds and
// /webhookconfigurations (its CRDS_PATH and WEBHOOK_CONFIGS_PATH
// defaults). Nothing else is written to the image's filesystem: the chart
// mounts emptyDirs at /cache/xpkg and /cache/xfn and keeps the root
// read-only.
func Image(binary, moduleDir string) (v1.Image, error) {
	arch, err := staticArch(binary)
	if err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(filepath.Clean(binary))
	if err != nil {
		return nil, err
	}
	var files []xpkgbuild.File
	for src, dst := range map[string]string{"crds": "/crds", "webhookconfigurations": "/webhookconfigurations"} {
		fs, err := yamlFiles(filepath.Join(moduleDir, "cluster", src), dst)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	return xpkgbuild.BinaryImage(xpkgbuild.BinaryOptions{
		Binary: bin, Name: "crossplane", Arch: arch, Files: files,
		Labels:    map[string]string{xpkgbuild.LabelVersion: Version},
		CreatedBy: "xpcluster: crossplane " + Version,
	})
}

// yamlFiles reads the YAML files directly in dir (core reads no others) as
// files under dst.
func yamlFiles(dir, dst string) ([]xpkgbuild.File, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no YAML files in %s", dir)
	}
	sort.Strings(names)
	out := make([]xpkgbuild.File, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(n) //nolint:gosec // files of the module cache
		if err != nil {
			return nil, err
		}
		out = append(out, xpkgbuild.File{Path: dst + "/" + filepath.Base(n), Data: b})
	}
	return out, nil
}

// staticArch returns the GOARCH of a linux executable, or an error if it
// needs a dynamic loader, which an image without libc does not have.
func staticArch(binary string) (string, error) {
	f, err := elf.Open(binary)
	if err != nil {
		return "", fmt.Errorf("%s: %w", binary, err)
	}
	defer func() { _ = f.Close() }()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", fmt.Errorf("%s is dynamically linked; build it with CGO_ENABLED=0 (cluster/local/crossplane.sh does)", binary)
		}
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	default:
		return "", fmt.Errorf("%s: unsupported machine %s", binary, f.Machine)
	}
}

// PushImage builds the image from the cached core binary and pushes it to
// registry (host:port) as Repository:Version. It returns the digest
// reference to run, which does not change unless the image does.
func PushImage(ctx context.Context, registry string) (string, error) {
	bin, err := testenv.CrossplaneBinary("core")
	if err != nil {
		return "", err
	}
	mod, err := ModuleDir(ctx)
	if err != nil {
		return "", err
	}
	img, err := Image(bin, mod)
	if err != nil {
		return "", err
	}
	tag := registry + "/" + Repository + ":" + Version
	if err := xpkgbuild.Push(ctx, img, tag); err != nil {
		return "", fmt.Errorf("cannot push %s: %w", tag, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	ref, err := name.NewDigest(registry + "/" + Repository + "@" + d.String())
	if err != nil {
		return "", err
	}
	return ref.String(), nil
}
