package xpkgbuild

import (
	"bytes"
	"context"
	"debug/elf"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg"
)

// elfMachine is the ELF machine of each GOARCH a package is built for.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestMultiArchPackage builds a Provider package for linux/amd64 and
// linux/arm64 (a small runtime, cmd/pause, keeps the build short), pushes
// the index and pulls each platform back: both carry package.yaml and the
// binary of their architecture, and the platform Crossplane's package
// manager fetches (go-containerregistry's default) is found.
func TestMultiArchPackage(t *testing.T) {
	ctx := context.Background()
	var imgs []v1.Image
	for _, arch := range []string{"amd64", "arm64"} {
		p, err := Build(ctx, Options{Root: "testdata/provider", MainPackage: "./cmd/pause", ModuleDir: repoRoot, Arch: arch, Version: "v0.0.1"})
		if err != nil {
			t.Fatalf("Build %s: %v", arch, err)
		}
		imgs = append(imgs, p.Image)
	}
	idx, err := Index(imgs...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Index(imgs[0], imgs[0]); err == nil {
		t.Error("Index of two images of one platform: want an error")
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/test/provider-test:v0.0.1"
	if err := PushIndex(ctx, idx, ref); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Index(r)
	if err != nil {
		t.Fatalf("pull index: %v", err)
	}
	im, err := pulled.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		if d.Platform != nil {
			platforms = append(platforms, d.Platform.String())
		}
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Fatalf("index platforms %q, want %q", platforms, want)
	}
	if mt, _ := pulled.MediaType(); !mt.IsIndex() {
		t.Errorf("media type %s is not an index", mt)
	}

	for arch, machine := range elfMachine {
		img, err := remote.Image(r, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
		if err != nil {
			t.Fatalf("pull linux/%s: %v", arch, err)
		}
		if got := layerAnnotations(t, img); !slices.Contains(got, xpkg.PackageAnnotation) {
			t.Errorf("linux/%s: no package.yaml layer (annotations %q)", arch, got)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || !slices.Equal(cf.Config.Entrypoint, []string{Entrypoint("provider-test")}) {
			t.Errorf("linux/%s: config architecture %q entrypoint %q", arch, cf.Architecture, cf.Config.Entrypoint)
		}
		f, err := elf.NewFile(bytes.NewReader(fileContent(t, img, Entrypoint("provider-test"))))
		if err != nil {
			t.Fatalf("linux/%s: entrypoint is not ELF: %v", arch, err)
		}
		if f.Machine != machine {
			t.Errorf("linux/%s: binary is for %s, want %s", arch, f.Machine, machine)
		}
	}

	// What core does: remote.Image with no platform, then package.yaml.
	img, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull as Crossplane does: %v", err)
	}
	if cf, _ := img.ConfigFile(); cf == nil || cf.Architecture != "amd64" {
		t.Errorf("Crossplane's fetch resolves to %+v, want linux/amd64", cf)
	}
	parsePackage(t, img, xpkg.NewProviderLinter())
}

func TestIndexNeedsPlatform(t *testing.T) {
	p, err := Build(context.Background(), Options{Root: "testdata/provider/configuration"})
	if err != nil {
		t.Fatal(err)
	}
	// A Configuration has no platform of its own: it cannot be indexed.
	if _, err := Index(p.Image); err == nil {
		t.Error("Index of an image without a platform: want an error")
	}
}

func TestOnThisHost(t *testing.T) {
	for reg, want := range map[string]bool{
		"127.0.0.1:5000": true, "localhost:5000": true, "localhost": true, "[::1]:5000": true, "127.1.2.3": true,
		"10.0.0.5:5000": false, "registry.local:5000": false, "ghcr.io": false, "localhost.example.com": false,
	} {
		if got := OnThisHost(reg); got != want {
			t.Errorf("OnThisHost(%q) = %v, want %v", reg, got, want)
		}
	}
	// An address of one of this machine's interfaces other than loopback.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			if reg := net.JoinHostPort(n.IP.String(), "5000"); !OnThisHost(reg) {
				t.Errorf("OnThisHost(%q) = false for an address of this machine", reg)
			}
			break
		}
	}
	for ref, scheme := range map[string]string{"127.0.0.1:5000/org/pkg:v1": "http", "ghcr.io/org/pkg:v1": "https"} {
		r, err := Reference(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Context().Scheme(); got != scheme {
			t.Errorf("Reference(%q) scheme %s, want %s", ref, got, scheme)
		}
	}
}

// TestNoPlainHTTPElsewhere: a push to a private address goes over TLS or
// not at all, though go-containerregistry would fall back to plain HTTP.
func TestNoPlainHTTPElsewhere(t *testing.T) {
	var got []string
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		got = append(got, req.URL.String())
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	})
	tr := tlsUnlessLoopback{next}
	for u, ok := range map[string]bool{
		"http://127.0.0.1:5000/v2/": true, "http://localhost:5000/v2/": true, "https://10.0.0.5:5000/v2/": true,
		"http://10.0.0.5:5000/v2/": false, "http://registry.local/v2/": false,
	} {
		pu, _ := url.Parse(u)
		resp, err := tr.RoundTrip(&http.Request{Method: http.MethodGet, URL: pu})
		if err == nil {
			_ = resp.Body.Close()
		}
		if (err == nil) != ok {
			t.Errorf("%s: error %v, want allowed=%v", u, err, ok)
		}
	}
	if len(got) != 3 {
		t.Errorf("requests passed on: %q, want the three allowed", got)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
