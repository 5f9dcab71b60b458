package publish

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/images"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

const (
	version  = "v0.0.1"
	testdata = "../xpkgbuild/testdata/provider"
)

// writePackage builds xpkgbuild's test Provider (cmd/pause as its small
// runtime) for arch, or its Configuration when arch is "", into dir as
// make xpkg names it, and returns the package name.
func writePackage(t *testing.T, dir, arch string) string {
	t.Helper()
	o := xpkgbuild.Options{Root: testdata, MainPackage: "./cmd/pause", ModuleDir: "../../..", Arch: arch, Version: version}
	if arch == "" {
		o = xpkgbuild.Options{Root: filepath.Join(testdata, "configuration"), Version: version}
	}
	p, err := xpkgbuild.Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := xpkgbuild.WriteFile(filepath.Join(dir, FileName(p.Name, version, arch, ExtPackage)), p.Image); err != nil {
		t.Fatal(err)
	}
	return p.Name
}

func writeImage(t *testing.T, dir, arch string) {
	t.Helper()
	img, err := images.Pause(context.Background(), arch)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(filepath.Join(dir, FileName(images.PauseName, version, arch, ExtImage)), nil, img); err != nil {
		t.Fatal(err)
	}
}

func pull(t *testing.T, ref string, arch string) v1.Image {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	var opts []remote.Option
	if arch != "" {
		opts = append(opts, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
	}
	img, err := remote.Image(r, opts...)
	if err != nil {
		t.Fatalf("pull %s %s: %v", ref, arch, err)
	}
	return img
}

// hasPackageLayer says whether img has its package.yaml layer annotated,
// which is how Crossplane finds it.
func hasPackageLayer(t *testing.T, img v1.Image) bool {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(m.Layers, func(d v1.Descriptor) bool { return d.Annotations[xpkg.AnnotationKey] == xpkg.PackageAnnotation })
}

// TestPublish writes a Provider package per architecture, a Configuration
// and an image per architecture as make xpkg does, publishes them to a
// registry on loopback and pulls each back.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	provider := writePackage(t, dir, "amd64")
	writePackage(t, dir, "arm64")
	configuration := writePackage(t, dir, "")
	writeImage(t, dir, "amd64")
	writeImage(t, dir, "arm64")
	// Another version sharing the prefix is not this one's.
	if err := os.WriteFile(filepath.Join(dir, FileName(provider, version+"-rc.1", "amd64", ExtPackage)), []byte("not a package"), 0o600); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://") + "/org"

	refs := map[string]string{}
	for _, n := range []string{provider, configuration, images.PauseName} {
		ref, d, err := Publish(ctx, dir, reg, n, version)
		if err != nil {
			t.Fatalf("Publish %s: %v", n, err)
		}
		if want := reg + "/" + n + ":" + version; ref != want {
			t.Errorf("%s pushed to %s, want %s", n, ref, want)
		}
		r, _ := name.ParseReference(ref)
		desc, err := remote.Head(r)
		if err != nil || desc.Digest != d {
			t.Errorf("%s: registry has %v (%v), Publish says %s", ref, desc, err, d)
		}
		refs[n] = ref
	}

	for _, arch := range []string{"amd64", "arm64"} {
		img := pull(t, refs[provider], arch)
		if cf, _ := img.ConfigFile(); cf == nil || cf.Architecture != arch {
			t.Errorf("%s linux/%s resolves to %+v", provider, arch, cf)
		}
		if !hasPackageLayer(t, img) {
			t.Errorf("%s linux/%s: package.yaml layer not annotated", provider, arch)
		}
		if cf, _ := pull(t, refs[images.PauseName], arch).ConfigFile(); cf == nil || cf.Architecture != arch {
			t.Errorf("pause linux/%s resolves to %+v", arch, cf)
		}
	}
	// As Crossplane's package manager fetches: no platform asked for.
	if _, err := xpkg.ExtractPackageYAML(pull(t, refs[provider], "")); err != nil {
		t.Errorf("%s as Crossplane fetches it: %v", provider, err)
	}
	cfg := pull(t, refs[configuration], "")
	if !hasPackageLayer(t, cfg) {
		t.Errorf("%s: package.yaml layer not annotated", configuration)
	}
	if mt, _ := cfg.MediaType(); mt.IsIndex() {
		t.Errorf("%s: a single file should be pushed as an image", configuration)
	}
}

func TestPublishRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	provider := writePackage(t, dir, "arm64")
	writePackage(t, dir, "riscv64")
	if _, _, err := Publish(ctx, dir, "127.0.0.1:1/org", provider, version); err == nil || !strings.Contains(err.Error(), "linux/amd64") {
		t.Errorf("packages without amd64: %v, want an error naming linux/amd64", err)
	}

	mislabelled := filepath.Join(dir, FileName(provider, version, "amd64", ExtPackage))
	b, err := os.ReadFile(filepath.Join(dir, FileName(provider, version, "arm64", ExtPackage))) //nolint:gosec // test file
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mislabelled, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Publish(ctx, dir, "127.0.0.1:1/org", provider, version); err == nil || !strings.Contains(err.Error(), "holds an image for arm64") {
		t.Errorf("an arm64 package named amd64: %v, want refused", err)
	}
	if _, _, err := Publish(ctx, dir, "127.0.0.1:1/org", "nothing", version); err == nil || !strings.Contains(err.Error(), "make xpkg") {
		t.Errorf("no files: %v", err)
	}
}
