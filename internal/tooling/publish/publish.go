// Package publish pushes the files `make xpkg` writes — Crossplane packages
// (.xpkg) and container images (.tar), one file per architecture — to a
// registry, the files of one name and version as one image index.
package publish

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

// The file kinds: a Crossplane package, an image tarball.
const (
	ExtPackage = ".xpkg"
	ExtImage   = ".tar"
)

// FileName is where an image is written and looked for:
// <name>-<version>-<arch><ext>, or <name>-<version><ext> when it has no
// architecture (a Configuration).
func FileName(name, version, arch, ext string) string {
	if arch == "" {
		return name + "-" + version + ext
	}
	return name + "-" + version + "-" + arch + ext
}

// File is one image file found for a name and version.
type File struct {
	Path string
	Arch string // "" for an image without architecture
	Ext  string
}

// Find returns the files of name at version in dir: the one without an
// architecture, or else one per architecture, sorted by it.
func Find(dir, name, version string) ([]File, error) {
	for _, ext := range []string{ExtPackage, ExtImage} {
		p := filepath.Join(dir, FileName(name, version, "", ext))
		if _, err := os.Stat(p); err == nil {
			return []File{{Path: p, Ext: ext}}, nil
		}
	}
	var out []File
	for _, ext := range []string{ExtPackage, ExtImage} {
		prefix := FileName(name, version, "", "") + "-"
		ms, err := filepath.Glob(filepath.Join(dir, prefix+"*"+ext))
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			arch := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), prefix), ext)
			// A longer version with the same prefix (v1.0.0 and v1.0.0-rc.1)
			// leaves a dash in what would be the architecture.
			if arch == "" || strings.ContainsAny(arch, "-.") {
				continue
			}
			out = append(out, File{Path: m, Arch: arch, Ext: ext})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s or %s file of %s %s in %s (run make xpkg VERSION=%s)", ExtPackage, ExtImage, name, version, dir, version)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Arch, b.Arch) })
	return out, nil
}

// load reads an image file. A package's layers get back the annotations
// the tarball format cannot hold (Crossplane finds package.yaml by them),
// as `crossplane xpkg push` does.
func load(f File) (v1.Image, error) {
	img, err := tarball.ImageFromPath(f.Path, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	if f.Ext == ExtPackage {
		if img, err = xpkg.AnnotateLayers(img); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if f.Arch != "" {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		if cf.Architecture != f.Arch {
			return nil, fmt.Errorf("%s is named for %s but holds an image for %s", f.Path, f.Arch, cf.Architecture)
		}
	}
	return img, nil
}

// Publish pushes the files of name at version in dir to
// <registry>/<name>:<version> and returns that reference and the digest
// pushed: a single file as an image, several as an index of them.
// Crossplane's package manager reads a package index's linux/amd64 entry,
// so an index of packages without one is refused.
func Publish(ctx context.Context, dir, registry, name, version string) (string, v1.Hash, error) {
	ref := strings.TrimSuffix(registry, "/") + "/" + name + ":" + version
	files, err := Find(dir, name, version)
	if err != nil {
		return ref, v1.Hash{}, err
	}
	var imgs []v1.Image
	for _, f := range files {
		img, err := load(f)
		if err != nil {
			return ref, v1.Hash{}, err
		}
		imgs = append(imgs, img)
	}
	if len(imgs) == 1 {
		d, err := imgs[0].Digest()
		if err != nil {
			return ref, d, err
		}
		return ref, d, xpkgbuild.Push(ctx, imgs[0], ref)
	}
	if files[0].Ext == ExtPackage && !slices.ContainsFunc(files, func(f File) bool { return f.Arch == "amd64" }) {
		return ref, v1.Hash{}, fmt.Errorf("%s: an index of packages needs linux/amd64, the platform Crossplane reads the package from", name)
	}
	idx, err := xpkgbuild.Index(imgs...)
	if err != nil {
		return ref, v1.Hash{}, fmt.Errorf("%s: %w", name, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return ref, d, err
	}
	return ref, d, xpkgbuild.PushIndex(ctx, idx, ref)
}
