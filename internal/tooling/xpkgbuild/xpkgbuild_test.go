package xpkgbuild

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	admv1 "k8s.io/api/admissionregistration/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg/parser"
	xpyaml "github.com/crossplane/crossplane-runtime/v2/pkg/xpkg/parser/yaml"
	xpv1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1"
	xpv2 "github.com/crossplane/crossplane/apis/v2/apiextensions/v2"
	pkgmetav1 "github.com/crossplane/crossplane/apis/v2/pkg/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/randhostport"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/webhook"
)

const repoRoot = "../../.."

// pushAndPull pushes img to a registry served on loopback and pulls it back,
// as Crossplane's package manager would fetch it.
func pushAndPull(t *testing.T, img v1.Image, repo string) v1.Image {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	ref := strings.TrimPrefix(srv.URL, "http://") + "/" + repo + ":v0.0.1"
	if err := Push(context.Background(), img, ref); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(r)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	return pulled
}

// parsePackage reads package.yaml the way core does (ExtractPackageYAML finds
// the io.crossplane.xpkg: base layer) and parses and lints it with core's
// parser and linter for the kind.
func parsePackage(t *testing.T, img v1.Image, linter parser.Linter) *parser.Package {
	t.Helper()
	rc, err := xpkg.ExtractPackageYAML(img)
	if err != nil {
		t.Fatalf("extract package.yaml: %v", err)
	}
	pp, err := xpyaml.New()
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := pp.Parse(context.Background(), rc)
	if err != nil {
		t.Fatalf("parse package.yaml: %v", err)
	}
	if err := linter.Lint(pkg); err != nil {
		t.Fatalf("core's linter refuses the package: %v", err)
	}
	return pkg
}

// layerAnnotations returns the xpkg annotation of each layer, "" if none.
func layerAnnotations(t *testing.T, img v1.Image) []string {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range m.Layers {
		got = append(got, l.Annotations[xpkg.AnnotationKey])
	}
	return got
}

// files returns the regular files of the image's flattened filesystem.
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.TrimPrefix(h.Name, "/")] = h
	}
}

func fileContent(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in image: %v", path, err)
		}
		if "/"+strings.TrimPrefix(h.Name, "/") == path {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// crdNames returns the metadata.name of every CRD file in dir.
func crdNames(t *testing.T, dir string) []string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(ms) == 0 {
		t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	var names []string
	for _, f := range ms {
		b, err := os.ReadFile(f) //nolint:gosec // test input
		if err != nil {
			t.Fatal(err)
		}
		crd := extv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		names = append(names, crd.GetName())
	}
	sort.Strings(names)
	return names
}

func TestProviderPackage(t *testing.T) {
	ctx := context.Background()
	o := Options{
		Root:        filepath.Join(repoRoot, "package"),
		MainPackage: "./cmd/provider",
		ModuleDir:   repoRoot,
		ExamplesDir: filepath.Join(repoRoot, "examples"),
		Version:     "v0.0.1-test",
	}
	p, err := Build(ctx, o)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if p.Kind != pkgmetav1.ProviderKind || p.Name != "provider-tencentcloud-network" {
		t.Fatalf("meta: got %s %s", p.Kind, p.Name)
	}

	// The .xpkg file, read back and annotated as `crossplane xpkg push`
	// does, is the very image Build returned.
	file := filepath.Join(t.TempDir(), "provider.xpkg")
	if err := WriteFile(file, p.Image); err != nil {
		t.Fatal(err)
	}
	fromFile, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	annotated, err := xpkg.AnnotateLayers(fromFile)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := p.Image.Digest()
	if got, _ := annotated.Digest(); got != want {
		t.Errorf(".xpkg file pushes as %s, Build returned %s", got, want)
	}

	// Rebuilding the same tree gives the same digest.
	again, err := Build(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := again.Image.Digest(); got != want {
		t.Errorf("rebuild gave digest %s, first build %s", got, want)
	}

	img := pushAndPull(t, p.Image, "test/provider-tencentcloud-network")

	// Two runtime layers (base files, binary), then package.yaml, then the
	// examples.
	if got, want := layerAnnotations(t, img), []string{"", "", xpkg.PackageAnnotation, xpkg.ExamplesAnnotation}; !slices.Equal(got, want) {
		t.Fatalf("layer annotations: got %q, want %q", got, want)
	}

	pkg := parsePackage(t, img, xpkg.NewProviderLinter())
	meta, ok := pkg.GetMeta()[0].(*pkgmetav1.Provider)
	if !ok {
		t.Fatalf("meta is %T, want a Provider", pkg.GetMeta()[0])
	}
	if !pkgmetav1.CapabilitiesContainFuzzyMatch(meta.Spec.Capabilities, pkgmetav1.ProviderCapabilitySafeStart) {
		t.Errorf("capabilities %v lack safe-start", meta.Spec.Capabilities)
	}
	var got []string
	hooks := 0
	for _, o := range pkg.GetObjects() {
		switch o := o.(type) {
		case *extv1.CustomResourceDefinition:
			got = append(got, o.GetName())
		case *admv1.MutatingWebhookConfiguration:
			hooks++
			checkPodWebhook(t, o)
		default:
			t.Fatalf("object %T in the Provider package", o)
		}
	}
	if hooks != 1 {
		t.Errorf("%d MutatingWebhookConfigurations in the Provider package, want the one of the Pod webhooks", hooks)
	}
	sort.Strings(got)
	if want := crdNames(t, filepath.Join(repoRoot, "package", "crds")); !slices.Equal(got, want) {
		t.Errorf("CRDs in package.yaml:\n got %q\nwant %q", got, want)
	}

	// The examples layer holds the examples as one YAML stream.
	ex := fileContent(t, img, "/"+xpkg.XpkgExamplesFile)
	if !bytes.Contains(ex, []byte("kind: PortPool")) || !bytes.Contains(ex, []byte("kind: PodAddressPolicy")) {
		t.Errorf("examples layer lacks the examples:\n%.400s", ex)
	}

	// The runtime: the binary at the entrypoint, run as 65532, nothing else
	// but the files a static binary needs.
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	entry := Entrypoint("provider-tencentcloud-network")
	if cf.OS != "linux" || cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{entry}) {
		t.Errorf("config: os %q user %q entrypoint %q", cf.OS, cf.Config.User, cf.Config.Entrypoint)
	}
	if cf.Config.Labels[LabelVersion] != "v0.0.1-test" {
		t.Errorf("version label: %q", cf.Config.Labels[LabelVersion])
	}
	fs := files(t, img)
	bin, ok := fs[entry]
	if !ok || bin.Mode&0o111 == 0 || bin.Size < 1<<20 {
		t.Fatalf("entrypoint %s missing or not executable: %+v", entry, bin)
	}
	checkStaticBinary(t, fileContent(t, img, entry), cf.Architecture)
	if !strings.Contains(string(fileContent(t, img, "/etc/passwd")), "nonroot:x:65532:65532:") {
		t.Error("/etc/passwd has no nonroot user 65532")
	}
	if _, err := os.Stat(HostCABundle); err == nil {
		if _, ok := fs[HostCABundle]; !ok {
			t.Errorf("CA bundle %s missing", HostCABundle)
		}
	}
	for f, h := range fs {
		if h.Typeflag == tar.TypeReg && !slices.Contains([]string{entry, "/etc/passwd", "/etc/group", HostCABundle, "/package.yaml", "/" + xpkg.XpkgExamplesFile}, f) {
			t.Errorf("unexpected file %s in the image", f)
		}
	}
}

func TestConfigurationPackage(t *testing.T) {
	p, err := Build(context.Background(), Options{Root: "testdata/provider/configuration", Version: "v0.0.1"})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	img := pushAndPull(t, p.Image, "test/configuration-test")
	if got := layerAnnotations(t, img); !slices.Equal(got, []string{xpkg.PackageAnnotation}) {
		t.Fatalf("a Configuration is only its package.yaml layer; got annotations %q", got)
	}
	pkg := parsePackage(t, img, xpkg.NewConfigurationLinter())
	meta, ok := pkg.GetMeta()[0].(*pkgmetav1.Configuration)
	if !ok {
		t.Fatalf("meta is %T", pkg.GetMeta()[0])
	}
	if len(meta.Spec.DependsOn) != 2 || meta.Spec.DependsOn[0].Package == nil || *meta.Spec.DependsOn[0].Package != "xpkg.example.org/test/provider-test" {
		t.Errorf("dependsOn: %+v", meta.Spec.DependsOn)
	}
	var kinds []string
	for _, o := range pkg.GetObjects() {
		switch o.(type) {
		case *xpv2.CompositeResourceDefinition:
			kinds = append(kinds, "XRD")
		case *xpv1.Composition:
			kinds = append(kinds, "Composition")
		default:
			t.Errorf("unexpected %T", o)
		}
	}
	sort.Strings(kinds)
	if !slices.Equal(kinds, []string{"Composition", "XRD"}) {
		t.Errorf("objects: %v", kinds)
	}
}

// A Provider root that holds a Configuration in a subdirectory: the
// Configuration's XRD and Composition stay out of the Provider package.
func TestNestedPackageLeftOut(t *testing.T) {
	p, err := Build(context.Background(), Options{Root: "testdata/provider", MainPackage: "./cmd/provider", ModuleDir: repoRoot})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	pkg := parsePackage(t, p.Image, xpkg.NewProviderLinter())
	if n := len(pkg.GetObjects()); n != 1 {
		t.Fatalf("want only the Widget CRD, got %d objects", n)
	}
	if crd, ok := pkg.GetObjects()[0].(*extv1.CustomResourceDefinition); !ok || crd.GetName() != "widgets.test.example.org" {
		t.Errorf("object: %+v", pkg.GetObjects()[0])
	}
}

func TestRefused(t *testing.T) {
	cases := map[string]struct {
		o    Options
		want []string
	}{
		"XRD in a Provider": {
			o:    Options{Root: "testdata/badprovider", MainPackage: "./cmd/provider", ModuleDir: repoRoot},
			want: []string{"Provider package may contain only CRDs, MRDs and webhook configurations", `CompositeResourceDefinition "xwidgetsets.test.example.org" is not allowed`},
		},
		"v1 permissionRequests in the meta": {
			o:    Options{Root: "testdata/oldmeta", MainPackage: "./cmd/provider", ModuleDir: repoRoot},
			want: []string{"crossplane.yaml", `unknown field "controller"`},
		},
		"Configuration with a runtime": {
			o:    Options{Root: "testdata/provider/configuration", MainPackage: "./cmd/provider", ModuleDir: repoRoot},
			want: []string{"a Configuration package has no runtime"},
		},
		"Provider without a runtime": {
			o:    Options{Root: "testdata/provider"},
			want: []string{"a Provider package needs a runtime"},
		},
		"missing examples directory": {
			o:    Options{Root: "testdata/provider/configuration", ExamplesDir: "testdata/nothing-here"},
			want: []string{"examples directory testdata/nothing-here"},
		},
	}
	for n, c := range cases {
		t.Run(n, func(t *testing.T) {
			_, err := Build(context.Background(), c.o)
			if err == nil {
				t.Fatal("Build succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// checkStaticBinary checks that b is a linux ELF executable with no dynamic
// loader (CGO_ENABLED=0) and, when built for this machine, that it runs.
func checkStaticBinary(t *testing.T, b []byte, arch string) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("entrypoint is not an ELF binary: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("entrypoint is dynamically linked")
		}
	}
	if arch != runtime.GOARCH || runtime.GOOS != "linux" {
		return
	}
	path := filepath.Join(t.TempDir(), "provider")
	if err := os.WriteFile(path, b, 0o700); err != nil { //nolint:gosec // a test binary
		t.Fatal(err)
	}
	out, _ := exec.Command(path, "-h").CombinedOutput() //nolint:gosec // the binary just built
	if !strings.Contains(string(out), "-kubeconfig") {
		t.Errorf("the entrypoint binary does not print the provider's flags:\n%s", out)
	}
}

// checkPodWebhook checks what the docs promise of the Pod admission
// webhooks: Pod creations only, no side effects on dry run, served at the
// paths the provider serves them on; per-Pod addresses fail-open for
// opted-in namespaces only, random host ports fail-closed for Pods with
// the annotation only.
func checkPodWebhook(t *testing.T, c *admv1.MutatingWebhookConfiguration) {
	t.Helper()
	if len(c.Webhooks) != 3 {
		t.Fatalf("%d webhooks, want 3 (random host ports, our namespace label, bcs's)", len(c.Webhooks))
	}
	for i, w := range c.Webhooks {
		path, policy := webhook.AdmissionPath, admv1.Ignore
		// Random host ports first, so that the address webhook sees them.
		if i == 0 {
			path, policy = randhostport.WebhookPath, admv1.Fail
		}
		if w.FailurePolicy == nil || *w.FailurePolicy != policy {
			t.Errorf("%s: failurePolicy %v, want %s", w.Name, w.FailurePolicy, policy)
		}
		if w.SideEffects == nil || *w.SideEffects != admv1.SideEffectClassNoneOnDryRun {
			t.Errorf("%s: sideEffects %v, want NoneOnDryRun", w.Name, w.SideEffects)
		}
		if s := w.ClientConfig.Service; s == nil || s.Path == nil || *s.Path != path {
			t.Errorf("%s: clientConfig.service %+v, want path %s", w.Name, s, path)
		}
		if len(w.Rules) != 1 || !slices.Equal(w.Rules[0].Operations, []admv1.OperationType{admv1.Create}) || !slices.Equal(w.Rules[0].Resources, []string{"pods"}) {
			t.Errorf("%s: rules %+v, want Pod CREATE only", w.Name, w.Rules)
		}
		if len(w.MatchConditions) != 1 {
			t.Errorf("%s: %d matchConditions, want 1", w.Name, len(w.MatchConditions))
		}
		if i == 0 {
			if e := w.MatchConditions[0].Expression; !strings.Contains(e, "'"+randhostport.AnnotationEnabled+"'") {
				t.Errorf("%s: matchCondition %q does not ask for %s", w.Name, e, randhostport.AnnotationEnabled)
			}
			continue
		}
		if w.NamespaceSelector == nil || (len(w.NamespaceSelector.MatchLabels) == 0 && len(w.NamespaceSelector.MatchExpressions) == 0) {
			t.Errorf("%s: no namespaceSelector: the webhook must be opt-in", w.Name)
		}
	}
}
