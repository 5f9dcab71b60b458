package xpkgbuild

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The runtime image's user. 65532 is the "nonroot" user of distroless
// images, so security policies written for those fit ours.
const (
	NonRootUID  = 65532
	nonRootName = "nonroot"
	nonRootHome = "/home/nonroot"
	binDir      = "/usr/local/bin"
)

// HostCABundle is where Debian-like systems keep the CA bundle that the
// runtime image copies so the binary can reach Tencent Cloud over HTTPS.
const HostCABundle = "/etc/ssl/certs/ca-certificates.crt"

// epoch is the timestamp of every file and of the image config, so the same
// binary and inputs give the same digest.
func epoch() time.Time { return time.Unix(0, 0).UTC() }

// RuntimeOptions says how to build a runtime image.
type RuntimeOptions struct {
	// MainPackage is the Go main package to build, e.g. "./cmd/provider".
	MainPackage string
	// ModuleDir is the directory `go build` runs in; "" is the current one.
	ModuleDir string
	// Name is the binary's file name in /usr/local/bin.
	Name string
	// Arch is the GOARCH to build for; "" is the architecture of this Go
	// toolchain's host (runtime.GOARCH). The OS is always linux.
	Arch string
	// CABundle is a PEM file copied to /etc/ssl/certs/ca-certificates.crt.
	// "" means HostCABundle when that file exists, else no bundle.
	CABundle string
	// Labels are added to the image config (e.g. the version).
	Labels map[string]string
}

// Entrypoint returns where the runtime image keeps a binary of this name.
func Entrypoint(name string) string { return path.Join(binDir, name) }

// RuntimeImage builds a static Go binary (CGO_ENABLED=0, -trimpath) and
// returns an image made from nothing but that binary, an /etc/passwd and
// /etc/group with the non-root user 65532, and a CA bundle. There is no
// shell and no base image to pull.
func RuntimeImage(ctx context.Context, o RuntimeOptions) (v1.Image, error) {
	if o.MainPackage == "" || o.Name == "" {
		return nil, fmt.Errorf("runtime image: main package and binary name are required")
	}
	arch := o.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	bin, err := goBuild(ctx, o.ModuleDir, o.MainPackage, arch)
	if err != nil {
		return nil, err
	}
	return BinaryImage(BinaryOptions{
		Binary: bin, Name: o.Name, Arch: arch, CABundle: o.CABundle, Labels: o.Labels,
		CreatedBy: "xpkgbuild: go build " + o.MainPackage,
	})
}

// File is a regular file an image carries besides its binary.
type File struct {
	// Path is absolute; missing parent directories are added (0755).
	Path string
	Data []byte
	// Mode is the permission bits; 0 means 0644.
	Mode int64
}

// BinaryOptions say how to make an image from a binary built elsewhere.
type BinaryOptions struct {
	// Binary is a static linux executable; Name is its file name in
	// /usr/local/bin, which is the image's entrypoint.
	Binary []byte
	Name   string
	// Arch is the binary's GOARCH; "" is runtime.GOARCH.
	Arch string
	// CABundle: as in RuntimeOptions.
	CABundle string
	Labels   map[string]string
	// Files go into a layer of their own, after the binary's.
	Files []File
	// CreatedBy is the binary layer's history entry.
	CreatedBy string
}

// BinaryImage returns the image RuntimeImage makes, for a binary that is
// already built, with o.Files added.
func BinaryImage(o BinaryOptions) (v1.Image, error) {
	if len(o.Binary) == 0 || o.Name == "" {
		return nil, fmt.Errorf("binary image: binary and name are required")
	}
	for _, f := range o.Files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("binary image: file path %q is not absolute", f.Path)
		}
	}
	arch := o.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	ca := o.CABundle
	if ca == "" {
		if _, err := os.Stat(HostCABundle); err == nil {
			ca = HostCABundle
		}
	}
	var caPEM []byte
	if ca != "" {
		var err error
		if caPEM, err = os.ReadFile(filepath.Clean(ca)); err != nil {
			return nil, fmt.Errorf("cannot read CA bundle: %w", err)
		}
	}

	base, err := layer(baseFiles(caPEM))
	if err != nil {
		return nil, err
	}
	app, err := layer([]file{
		{name: binDir, dir: true, mode: 0o755},
		{name: Entrypoint(o.Name), mode: 0o755, data: o.Binary},
	})
	if err != nil {
		return nil, err
	}
	adds := []mutate.Addendum{
		{Layer: base, History: v1.History{Created: v1.Time{Time: epoch()}, CreatedBy: "xpkgbuild: passwd, group, CA bundle"}},
		{Layer: app, History: v1.History{Created: v1.Time{Time: epoch()}, CreatedBy: o.CreatedBy}},
	}
	if len(o.Files) > 0 {
		extra, err := layer(withParents(o.Files))
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.Addendum{Layer: extra, History: v1.History{Created: v1.Time{Time: epoch()}, CreatedBy: "xpkgbuild: files"}})
	}
	img, err := mutate.Append(empty.Image, adds...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch()}
	env := []string{"PATH=" + binDir + ":/usr/bin:/bin", "HOME=" + nonRootHome}
	if caPEM != nil {
		env = append(env, "SSL_CERT_FILE="+HostCABundle)
	}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", NonRootUID, NonRootUID),
		Entrypoint: []string{Entrypoint(o.Name)},
		Env:        env,
		WorkingDir: nonRootHome,
		Labels:     o.Labels,
	}
	return mutate.ConfigFile(img, cf)
}

// withParents returns fs sorted by path, each preceded by those of its
// parent directories that no earlier entry made, so the tar is complete
// and its order does not depend on the caller's.
func withParents(fs []File) []file {
	sorted := slices.Clone(fs)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	made := map[string]bool{"/": true}
	var out []file
	var mkdir func(string)
	mkdir = func(d string) {
		if made[d] {
			return
		}
		mkdir(path.Dir(d))
		made[d] = true
		out = append(out, file{name: d, dir: true, mode: 0o755})
	}
	for _, f := range sorted {
		p := path.Clean(f.Path)
		mkdir(path.Dir(p))
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		out = append(out, file{name: p, mode: mode, data: f.Data})
	}
	return out
}

// goBuild compiles a static linux binary and returns its bytes.
func goBuild(ctx context.Context, dir, pkg, arch string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "xpkgbuild-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	out := filepath.Join(tmp, "bin")
	// -trimpath and no VCS stamp: the binary depends only on the source tree
	// and the toolchain, not on where or in which checkout it was built.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, pkg) //nolint:gosec // pkg is the caller's own main package
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s for linux/%s: %w: %s", pkg, arch, err, stderr.String())
	}
	return os.ReadFile(out) //nolint:gosec // our own temp file
}

type file struct {
	name     string
	dir      bool
	mode     int64
	uid, gid int
	data     []byte
}

// baseFiles are what a static binary needs from an OS: who the user is,
// writable /tmp and home directories, and the CA bundle.
func baseFiles(caPEM []byte) []file {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", nonRootName, NonRootUID, NonRootUID, nonRootName, nonRootHome)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", nonRootName, NonRootUID)
	fs := []file{
		{name: "/etc", dir: true, mode: 0o755},
		{name: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "/etc/group", mode: 0o644, data: []byte(group)},
		{name: "/home", dir: true, mode: 0o755},
		{name: nonRootHome, dir: true, mode: 0o700, uid: NonRootUID, gid: NonRootUID},
		{name: "/tmp", dir: true, mode: 0o1777},
	}
	if caPEM != nil {
		fs = append(fs,
			file{name: "/etc/ssl", dir: true, mode: 0o755},
			file{name: "/etc/ssl/certs", dir: true, mode: 0o755},
			file{name: HostCABundle, mode: 0o644, data: caPEM},
		)
	}
	return fs
}

// layer writes files, in the given order and with fixed timestamps, into an
// uncompressed tar and returns it as a layer.
func layer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name[1:], // relative, as image layers are
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: epoch(),
		}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}
