// Package xpkgbuild builds Crossplane packages (.xpkg) and their runtime
// images without a Docker daemon: go-containerregistry assembles the OCI
// image, and crossplane-runtime's own xpkg builder, parser and linters
// (the ones `crossplane xpkg build` and core use) write the package layers.
package xpkgbuild

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/spf13/afero"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	pkgmetav1 "github.com/crossplane/crossplane/apis/v2/pkg/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg/parser"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg/parser/examples"
	xpyaml "github.com/crossplane/crossplane-runtime/v2/pkg/xpkg/parser/yaml"
)

// LabelVersion is the OCI label that carries Options.Version.
const LabelVersion = "org.opencontainers.image.version"

// Options says what goes into a package.
type Options struct {
	// Root is the package root: crossplane.yaml plus every other YAML file
	// below it. A directory below Root that has its own crossplane.yaml is
	// another package and is left out.
	Root string
	// MainPackage is the Go main package of the runtime, e.g. "./cmd/provider",
	// built in ModuleDir. Providers and Functions need one; Configurations
	// must not have one.
	MainPackage string
	// ModuleDir is where `go build` runs; "" is the current directory.
	ModuleDir string
	// ExamplesDir, if set, is a directory of example YAML that goes into the
	// package's examples layer.
	ExamplesDir string
	// Version is recorded as the org.opencontainers.image.version label.
	Version string
	// Arch is the runtime's GOARCH; "" is the host's.
	Arch string
	// CABundle overrides the runtime's CA bundle (see RuntimeOptions).
	CABundle string
}

// Package is a built package.
type Package struct {
	// Image is the package, with its layers annotated as `crossplane xpkg
	// push` annotates them, ready for remote.Write.
	Image v1.Image
	// Kind is the meta kind: Provider, Function or Configuration.
	Kind string
	// Name is the meta name.
	Name string
}

// Build builds the package described by o.
func Build(ctx context.Context, o Options) (*Package, error) {
	m, err := readMeta(o.Root)
	if err != nil {
		return nil, err
	}
	mo, _ := meta.Accessor(m)
	kind := m.GetObjectKind().GroupVersionKind().Kind
	p := &Package{Kind: kind, Name: mo.GetName()}

	if err := lint(ctx, o.Root, o.ExamplesDir, kind); err != nil {
		return nil, err
	}

	exBackend, err := examplesBackend(o.ExamplesDir)
	if err != nil {
		return nil, err
	}

	labels := map[string]string{}
	if o.Version != "" {
		labels[LabelVersion] = o.Version
	}
	base := empty.Image
	switch {
	case kind == pkgmetav1.ConfigurationKind && o.MainPackage != "":
		return nil, fmt.Errorf("%s: a Configuration package has no runtime, but a main package (%s) was given", o.Root, o.MainPackage)
	case kind != pkgmetav1.ConfigurationKind && o.MainPackage == "":
		return nil, fmt.Errorf("%s: a %s package needs a runtime: Crossplane v2 runs the package image itself, so give its main package", o.Root, kind)
	case o.MainPackage != "":
		if base, err = RuntimeImage(ctx, RuntimeOptions{MainPackage: o.MainPackage, ModuleDir: o.ModuleDir, Name: p.Name, Arch: o.Arch, CABundle: o.CABundle, Labels: labels}); err != nil {
			return nil, err
		}
	default:
		if base, err = withLabels(base, labels); err != nil {
			return nil, err
		}
	}

	pp, err := xpyaml.New()
	if err != nil {
		return nil, err
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	skip, err := skipNotOurs(root, o.ExamplesDir)
	if err != nil {
		return nil, err
	}
	b := xpkg.New(
		parser.NewFsBackend(afero.NewOsFs(), parser.FsDir(root), parser.FsFilters(append(yamlFilters(), skip)...)),
		exBackend, pp, examples.New())
	img, _, err := b.Build(ctx, xpkg.WithBase(base))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Root, err)
	}
	// The builder records each layer's annotation as a config label (a
	// tarball cannot hold layer annotations); put them on the layers too so
	// the image can be pushed as is and core finds the package.yaml layer.
	if p.Image, err = xpkg.AnnotateLayers(img); err != nil {
		return nil, err
	}
	return p, nil
}

// WriteFile writes img as an OCI image tarball, the file format of
// `crossplane xpkg build`.
func WriteFile(path string, img v1.Image) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.Create(filepath.Clean(path))
	if err != nil {
		return err
	}
	if err := tarball.Write(nil, img, f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Push writes img to a registry reference such as 127.0.0.1:5000/org/pkg:v0.1.0.
// A loopback registry is spoken to over plain HTTP, any other over TLS only
// (Reference, RemoteOptions).
func Push(ctx context.Context, img v1.Image, ref string) error {
	r, err := Reference(ref)
	if err != nil {
		return err
	}
	return remote.Write(r, img, RemoteOptions(ctx)...)
}

// readMeta decodes <root>/crossplane.yaml strictly: a field Crossplane does
// not know (for example spec.controller.permissionRequests, which Crossplane
// v2 dropped) would be silently ignored by core, so it is an error here.
func readMeta(root string) (runtime.Object, error) {
	path := filepath.Join(root, xpkg.MetaFile)
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	tm := metav1.TypeMeta{}
	if err := yaml.Unmarshal(b, &tm); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := xpkg.BuildMetaScheme()
	if err != nil {
		return nil, err
	}
	obj, err := s.New(tm.GroupVersionKind())
	if err != nil {
		return nil, fmt.Errorf("%s: not a package meta type: %w", path, err)
	}
	if err := yaml.UnmarshalStrict(b, obj); err != nil {
		return nil, fmt.Errorf("%s: it has a field Crossplane does not read: %w", path, err)
	}
	return obj, nil
}

// allowed lists, per package kind, what core's linter lets a package hold,
// so that a refused object can be named.
func allowed(kind string) (string, []parser.ObjectLinterFn) {
	switch kind {
	case pkgmetav1.ProviderKind:
		return "CRDs, MRDs and webhook configurations", []parser.ObjectLinterFn{xpkg.IsCRD, xpkg.IsMRD, xpkg.IsValidatingWebhookConfiguration, xpkg.IsMutatingWebhookConfiguration}
	case pkgmetav1.FunctionKind:
		return "CRDs", []parser.ObjectLinterFn{xpkg.IsCRD}
	default:
		return "XRDs, Compositions, ManagedResourceActivationPolicies and Operations", []parser.ObjectLinterFn{xpkg.IsXRD, xpkg.IsComposition, xpkg.IsActivationPolicy, xpkg.IsOperation, xpkg.IsCronOperation, xpkg.IsWatchOperation}
	}
}

// lint parses the package root as core does and names the first object the
// package kind may not hold. crossplane-runtime's builder lints again with
// core's own linter; this pass only makes the error say which object.
func lint(ctx context.Context, root, examplesDir, kind string) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	skip, err := skipNotOurs(abs, examplesDir)
	if err != nil {
		return err
	}
	rc, err := parser.NewFsReadCloser(afero.NewOsFs(), abs, append(yamlFilters(), skip)...)
	if err != nil {
		return err
	}
	pp, err := xpyaml.New()
	if err != nil {
		return err
	}
	pkg, err := pp.Parse(ctx, rc)
	if err != nil {
		return fmt.Errorf("%s: %w", root, err)
	}
	if n := len(pkg.GetMeta()); n != 1 {
		return fmt.Errorf("%s: a package has exactly one meta object (crossplane.yaml), found %d", root, n)
	}
	what, fns := allowed(kind)
	for _, o := range pkg.GetObjects() {
		if parser.Or(fns...)(o) == nil {
			continue
		}
		n := ""
		if a, err := meta.Accessor(o); err == nil {
			n = a.GetName()
		}
		return fmt.Errorf("%s: a %s package may contain only %s; %s %q is not allowed", root, kind, what, o.GetObjectKind().GroupVersionKind().Kind, n)
	}
	return nil
}

func yamlFilters() []parser.FilterFn {
	return []parser.FilterFn{parser.SkipDirs(), parser.SkipNotYAML(), parser.SkipEmpty()}
}

// skipNotOurs leaves out the files below root that are not part of the
// package: those of any directory that holds its own crossplane.yaml (another
// package, e.g. package/function below package/) and the examples directory
// when it lies below root.
func skipNotOurs(root, examplesDir string) (parser.FilterFn, error) {
	var nested []string
	if examplesDir != "" {
		ex, err := filepath.Abs(examplesDir)
		if err != nil {
			return nil, err
		}
		nested = append(nested, ex+string(filepath.Separator))
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root {
			if _, err := os.Stat(filepath.Join(p, xpkg.MetaFile)); err == nil {
				nested = append(nested, p+string(filepath.Separator))
				return filepath.SkipDir
			}
		}
		return nil
	})
	return func(p string, _ os.FileInfo) (bool, error) {
		for _, n := range nested {
			if strings.HasPrefix(p, n) {
				return true, nil
			}
		}
		return false, nil
	}, err
}

// noExamples is the examples source of a package without examples: the
// builder leaves the examples layer out when its source does not exist.
type noExamples struct{}

func (noExamples) Init(context.Context, ...parser.BackendOption) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader("")), fs.ErrNotExist
}

func examplesBackend(dir string) (parser.Backend, error) {
	if dir == "" {
		return noExamples{}, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("examples directory %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("examples directory %s: not a directory", dir)
	}
	return parser.NewFsBackend(afero.NewOsFs(), parser.FsDir(abs), parser.FsFilters(yamlFilters()...)), nil
}

func withLabels(img v1.Image, labels map[string]string) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Config.Labels = labels
	return mutate.ConfigFile(img, cf)
}
